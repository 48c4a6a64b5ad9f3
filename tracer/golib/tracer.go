//go:build dtpa_openmpi || dtpa_mpich

package main

/*
#include "dt_wrap.h"
#include "dt_rt.h"
#include <stdlib.h>
void dt_finish_state(void);
extern const unsigned char dt_functab[];
extern const unsigned long dt_functab_len;
static const unsigned char *dt_functab_at(void) { return dt_functab; }
int64_t dt_ns(uint64_t raw);
size_t dt_buf_chunk(void);
int dt_buf_slots(void);
void dt_spill_setup(char *base, int n, int fd, long off);
int dt_q_pop(void **buf, size_t *n, uint32_t *tid, int *fin, int *kind);
void dt_q_fin(int reason);
void dt_q_kick(void);
void dt_aux_start(int64_t epoch_ns);
void dt_aux_stop(void);
void dt_enc_register(int nice);
int dt_enc_idle(void);
void dt_buf_done(void *b);
void dt_spill_prepare(int k);
extern uint64_t dt_q_waits, dt_q_idle;
extern int64_t dt_aux_cpu_ns;
extern uint64_t dt_aux_wakeups;
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/params"
	"github.com/dtpa/dtpa/tracer/records"
)

// Version is the tracer version written in trace headers.
const Version = "0.1.0"

// epochPeriod is how often threads hand over partly filled buffers, so that a
// process killed without warning (SIGKILL) still leaves its events up to
// about this long before on disk.
const epochPeriod = 200 * time.Millisecond

type initInfo struct {
	rank, size, level uint32
	impl, version     string
	conv              records.Converter
	clk               *C.dt_clock
	params            params.Params
	// spawned: the process belongs to a world started by MPI_Comm_spawn,
	// whose run id is spawn (taskName).
	spawned bool
	spawn   []byte
}

// taskName is <app> of the rank's <app>.<rank>.trc: the program's name,
// and for a world started by MPI_Comm_spawn, whose ranks are numbered
// from 0 again beside its parents' traces, ".spawn-" and the first bytes
// of its run id (one name per spawned world: dtpa analyses each world as
// a task of its own).
func (in initInfo) taskName(args []string) string {
	name := programName(args)
	if in.spawned && len(in.spawn) >= 4 {
		name += fmt.Sprintf(".spawn-%x", in.spawn[:4])
	}
	return name
}

// job is one unit of work for the writer goroutine, in submission order.
type job struct {
	buf   unsafe.Pointer // records of one thread (owned by Go until dt_buf_put)
	n     int
	copy  bool // buf is a malloc'd copy (C.free), not a buffer
	tid   uint32
	clock *tracepb.ClockSync
	fin   tracepb.Footer_StopReason
	ack   chan struct{}
}

type tracer struct {
	conv    records.Converter
	f       *os.File
	w       *traceformat.Writer
	hdr     *tracepb.Header // written by start, which closes started
	started chan struct{}
	jobs    chan job // jobs from Go (clock sync), announced by dt_q_kick

	limit int64 // bytes for this process's file; 0 = none

	noFallocate bool
	reserved    int64  // file offset up to which disk space is allocated (reserve)
	spill       string // spill file, removed once the trace is complete

	mu       sync.Mutex // guards the fields below
	defs     tracepb.Definitions
	ndefs    int
	modules  map[string]bool
	stop     tracepb.Footer_StopReason
	stopMsg  string
	dropped  uint64
	finished bool
	finOnce  sync.Once
	done     chan struct{}
	finAck   chan struct{} // closed when the footer is written

	batch traceformat.Builder
	cpu0  int64 // the encoder thread's CPU time when the encoder started (threadCPU)

	// Deferred encoding (deferBudget): buffers are written as raw records
	// while deferLeft > 0; the rank compacts its trace once it is complete
	// (compactSelf), else dtrun does after the job.
	deferred  bool
	path      string        // the trace, absolute: the program may change directory
	compacted chan struct{} // closed when the rank's own compaction ends; nil while none runs (guarded by mu)
	deferLeft int64
	rawBytes  int64 // bytes of raw records frames written, which MaxTraceSize does not count
	prefix    records.Prefix
	pbuf      []byte
}

// programName is <app> of <app>.<rank>.trc: argv[0] without directory or
// extension.
func programName(args []string) string {
	name := "trace"
	if len(args) > 0 && args[0] != "" {
		name = filepath.Base(args[0])
	}
	if ext := filepath.Ext(name); ext != "" && ext != name {
		name = strings.TrimSuffix(name, ext)
	}
	return name
}

func cmdline() []string {
	b, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		return os.Args
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// newTracer creates the trace and everything it needs but its header, which
// carries the run id that MPI_Init's collective tells (start writes it):
// MPI_Init does this work before the collective, while ranks that arrive
// early wait there asleep, rather than after it, when they have returned to
// the program (where MPICH's ranks poll without yielding the core).
func newTracer(in initInfo) (*tracer, error) {
	args := cmdline()
	task := in.taskName(args)
	name := fmt.Sprintf("%s.%d.trc", task, in.rank)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating trace: %w", err)
	}
	records.LockTrace(int(f.Fd()))   // held until the footer: the rank still writes it
	host := os.Getenv("DT_HOSTNAME") // as the clock groups see it (dt_clock.c)
	if host == "" {
		host, _ = os.Hostname()
	}
	exe, _ := os.Readlink("/proc/self/exe")
	clk := &tracepb.Clock{Source: tracepb.Clock_MONOTONIC_RAW, InjectedOffsetNs: in.conv.SkewOff, InjectedDriftPpm: in.conv.SkewPPM}
	if in.conv.TSC {
		clk.Source = tracepb.Clock_TSC
		clk.TscHz = 1e9 / in.conv.NsPerTick
		clk.Calibration = []*tracepb.CalibrationPoint{
			{Tsc: uint64(in.clk.raw0), MonotonicRawNs: int64(in.clk.ns0)},
			{Tsc: uint64(in.clk.raw1), MonotonicRawNs: int64(in.clk.ns1)},
		}
	}
	p := in.params
	hdr := &tracepb.Header{
		Rank: in.rank, WorldSize: in.size, Hostname: host, Pid: uint32(os.Getpid()),
		Program: exe, Args: args, StartUnixNs: time.Now().UnixNano(), StartLocalNs: int64(C.dt_ns(C.uint64_t(nowRaw()))),
		Clock: clk, TracerVersion: Version,
		Params: &tracepb.TracerParams{
			UserStackSize: uint32(p.UserStackSize), MaxTraceSizeMb: p.MaxTraceSize, TraceBufSize: p.TraceBufSize, Other: p.Other,
		},
		MpiImplementation: in.impl, MpiLibraryVersion: strings.TrimSpace(in.version), ThreadLevel: in.level,
	}
	opts := writerOptions()
	budget := deferBudget()
	opts.Deferred = budget > 0
	w, err := traceformat.NewWriterAhead(records.VecFile{File: f}, opts)
	if err != nil {
		f.Close()
		os.Remove(name) // an empty trace is that of a process killed inside MPI_Init (traceformat.ErrEmpty)
		return nil, err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		abs = name
	}
	t := &tracer{conv: in.conv, f: f, w: w, hdr: hdr, started: make(chan struct{}), jobs: make(chan job, 64),
		modules: map[string]bool{}, done: make(chan struct{}), finAck: make(chan struct{}), deferred: opts.Deferred, path: abs}
	if dir := os.Getenv("DT_SPILL_DIR"); dir != "" {
		// Buffers in a shared file mapping survive SIGKILL (see records.Recover);
		// without one (no space, no directory) they are plain memory.
		path := filepath.Join(dir, fmt.Sprintf("%s.%d.spill", task, in.rank))
		info := records.SpillInfo{Trace: abs, Rank: in.rank, Slots: int(C.dt_buf_slots()), Chunk: int(C.dt_buf_chunk()), Conv: in.conv}
		// Named for dtrun to recover (start) once the trace has its header.
		if mem, fd, err := createSpill(path+spillNew, info); err == nil {
			C.dt_spill_setup((*C.char)(unsafe.Pointer(&mem[records.SpillHeaderSize])), C.int(info.Slots), C.int(fd), records.SpillHeaderSize)
			C.dt_spill_prepare(spillAhead)
			t.spill = path + spillNew
		}
	}
	if p.MaxTraceSize > 0 && in.size > 0 {
		t.limit = p.MaxTraceSize << 20 / int64(in.size)
	}
	t.deferLeft = budget
	t.prefix = records.Prefix{Conv: in.conv, Limit: t.limit, MaxMB: p.MaxTraceSize}
	if err := t.reserve(0); err != nil {
		f.Close()
		os.Remove(name)
		if t.spill != "" {
			os.Remove(t.spill) // its mapping stays, unused: the rank runs untraced
		}
		return nil, err
	}
	// The function table and the empty call stack, encoded by tracer/gen
	// (mpifunc.Table; ids are the generated wrapper indexes), on disk with
	// the header (start): a process killed before its first batch still
	// leaves a trace that dtrun can complete from its buffers.
	t.check(t.w.WriteDefinitionsMessage(unsafe.Slice((*byte)(unsafe.Pointer(C.dt_functab_at())), int(C.dt_functab_len))))
	// GOMAXPROCS is left as the runtime found it (1 under core binding).
	// Raising it to 3 let the encoder run while a pump goroutine (since
	// removed) waited in C for buffers, which cut the tight loop's longest
	// wait for a free buffer from ~20 ms to 2–8 ms,
	// but with idle Ps sysmon polls every 20 µs and switches the rank out:
	// a traced MPI_Allreduce cost ~300 ns more per call (2 ranks bound to a
	// core each, alternated runs, session 3), and programs of MPI calls
	// matter more than a tight loop of a 4 ns call. 2 Ps did the same.
	// So the encoder is the only goroutine that runs while tracing (it pops
	// the C queue itself), and the periodic work is a C thread (dt_aux_start):
	// no goroutine ever waits for the encoder's P. It waits for start.
	go t.loop()
	C.dt_aux_start(C.int64_t(epochPeriod))
	return t, nil
}

// spillNew marks a spill file whose trace has no header yet
// (records.SpillNew), which dtrun does not recover (it recovers *.spill): a
// process killed inside MPI_Init has recorded nothing. Once that process
// is gone, records.RemoveAbandoned removes the file.
const spillNew = ".new"

// start writes the header with the run id, then the definitions encoded
// before, and lets the encoder run. A write error stops tracing (check).
func (t *tracer) start(runID []byte) {
	t.hdr.RunId = runID
	t.check(t.w.Start(t.hdr))
	if p, ok := strings.CutSuffix(t.spill, spillNew); ok && os.Rename(t.spill, p) == nil {
		t.spill = p
	}
	close(t.started)
}

// createSpill creates the spill file, and its directory when missing: dtrun
// made it on its own node only, and on the other nodes of the job the
// ranks make it in theirs (where `dtrun --recover` finds the records of a
// rank killed there). The last rank of a node to finish removes it once
// empty (os.Remove fails while other spill files remain): a rank that
// removes it just as another is about to create its file makes that one
// try again.
func createSpill(path string, info records.SpillInfo) ([]byte, int, error) {
	var err error
	for try := 0; try < 3; try++ {
		os.MkdirAll(filepath.Dir(path), 0o700)
		var mem []byte
		var fd int
		if mem, fd, err = records.CreateSpill(path, info); err == nil || !os.IsNotExist(err) {
			return mem, fd, err
		}
	}
	return nil, -1, err
}

func nowRaw() uint64 { return uint64(C.dt_now()) }

// addDefs adds definitions, which the encoder writes before the next batch
// or as soon as its queue is empty (a process killed later still has them).
func (t *tracer) addDefs(f func(d *tracepb.Definitions)) {
	t.mu.Lock()
	f(&t.defs)
	t.ndefs++
	t.mu.Unlock()
}

// submit queues a job from Go (the program's thread, in a callback) behind
// the buffers handed over so far, and wakes the encoder.
func (t *tracer) submit(j job) {
	t.jobs <- j
	C.dt_q_kick()
}

func (t *tracer) addModule(m *tracepb.Module) {
	key := fmt.Sprintf("%s@%x", m.Path, m.LoadBias)
	t.mu.Lock()
	if !t.modules[key] {
		t.modules[key] = true
		t.defs.Modules = append(t.defs.Modules, m)
		t.ndefs++
	}
	t.mu.Unlock()
}

func (t *tracer) setStop(r tracepb.Footer_StopReason, msg string) {
	t.mu.Lock()
	if t.stop == 0 {
		t.stop, t.stopMsg = r, msg
	}
	t.mu.Unlock()
}

// writeDefs writes the definitions added since the last call, before any
// event that may refer to them.
func (t *tracer) writeDefs() {
	t.mu.Lock()
	if t.ndefs == 0 {
		t.mu.Unlock()
		return
	}
	d := &tracepb.Definitions{Functions: t.defs.Functions, CallSites: t.defs.CallSites, Modules: t.defs.Modules,
		Communicators: t.defs.Communicators}
	t.defs = tracepb.Definitions{}
	t.ndefs = 0
	t.mu.Unlock()
	t.check(t.w.WriteDefinitions(d))
}

// check stops tracing on a write error; the footer (if it can still be
// written) says why.
func (t *tracer) check(err error) {
	if err != nil {
		t.setStop(tracepb.Footer_WRITE_ERROR, err.Error())
		C.dt_stop(C.DT_STOP_WRITE_ERROR)
	}
}

// spillAhead is the most free buffers the aux thread keeps prepared (4 MB
// of 128 KB buffers): it keeps as many as the program's pace of hand-overs
// needs (dt_spill.c), and a tight loop of cheap calls fills 32 in a few ms.
const spillAhead = 32

// footerRoom is disk space kept allocated beyond the end of the file, so
// that the footer saying why tracing stopped can still be written when the
// disk fills up.
const footerRoom = 64 << 10

// reserve allocates disk space for a frame of at most n bytes (a batch never
// encodes larger than its raw records, plus slack) and the footer after it,
// before writing: a full disk is found here, while the space reserved by
// the previous call still holds the footer. Filesystems without fallocate
// skip the check (a write error then ends the trace without a footer).
//
// Space is reserved reserveAhead beyond the need, so that fallocate runs
// once per few MB written rather than before every batch (its extent work
// showed in the encoder's kernel time in the tight loop, ~3000 batches/s);
// near a full disk, only what is needed. The footer's close gives back what
// was reserved beyond the end (finishFile).
func (t *tracer) reserve(n int64) error {
	if t.noFallocate {
		return nil
	}
	off := t.w.Offset()
	need := off + n + n/8 + footerRoom + 4096
	if need <= t.reserved {
		return nil
	}
	fd := int(t.f.Fd())
	err := syscall.Fallocate(fd, 1 /* FALLOC_FL_KEEP_SIZE */, off, need-off+reserveAhead)
	if err == nil {
		t.reserved = need + reserveAhead
		return nil
	}
	if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
		t.noFallocate = true
		return nil
	}
	if err = syscall.Fallocate(fd, 1, off, need-off); err == nil {
		t.reserved = need
		return nil
	}
	return fmt.Errorf("reserving %d bytes in %s: %w", n, t.f.Name(), err)
}

// reserveAhead is how far beyond the next batch's need reserve allocates.
const reserveAhead = 4 << 20

// finishFile closes the trace file, first giving back the space reserved
// beyond its end (a truncation to its own size frees the blocks that
// fallocate kept beyond it, on ext4 and XFS).
func (t *tracer) finishFile() {
	if t.reserved > 0 {
		if st, err := t.f.Stat(); err == nil {
			t.f.Truncate(st.Size())
		}
	}
	t.f.Close()
}

func (t *tracer) stopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stop != 0
}

// writerOptions is how the encoder compresses: zstd's fastest level, and
// with DT_COMPRESS=fast without entropy coding (a third less of the
// encoder's CPU per event for a quarter more bytes: README, "Where the
// per-call cost goes").
func writerOptions() traceformat.WriterOptions {
	return records.WriterOptions(os.Getenv("DT_COMPRESS") == "fast")
}

// deferBudget is how many bytes of raw records a rank writes before it
// encodes as it goes (DT_DEFER_MB, default 128 MB; 0: never defer).
// Deferring needs dtrun (which names its spill directory: DT_SPILL_DIR):
// a rank compacts its own trace as it ends (compactSelf), but the trace of
// a rank killed or cut short is left deferred, and dtrun compacts it after
// the job, as dtpa cannot read it. Encoding a buffer (decode,
// columns, zstd) costs ~45-60 ns of CPU per event, writing it raw a
// few: on a node whose cores all run ranks, the encoder's CPU is taken
// from them (README, "Deferred encoding").
func deferBudget() int64 {
	if os.Getenv("DT_SPILL_DIR") == "" {
		return 0
	}
	mb := int64(128)
	if v := os.Getenv("DT_DEFER_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "dtpa tracer: DT_DEFER_MB=%q: want MB >= 0; using %d\n", v, mb)
		} else {
			mb = n
		}
	}
	return mb << 20
}

// loop is the encoder: it pops the C queue itself (dt_q_pop waits in C) and
// writes what it finds, in order, until the end of tracing.
func (t *tracer) loop() {
	defer recovered("writer")
	lowPriority() // the encoder on its own thread
	<-t.started
	// The thread may have run the Go runtime's start before: the footer
	// counts the encoder's CPU from here.
	t.cpu0 = threadCPU()

	for {
		var buf unsafe.Pointer
		var n C.size_t
		var tid C.uint32_t
		var fin, kind C.int
		more := C.dt_q_pop(&buf, &n, &tid, &fin, &kind) != 0
		var j job
		switch {
		case kind == C.DT_Q_SITE:
			s := &tracepb.CallSite{Id: uint32(tid)}
			if n > 0 {
				s.Pcs = append([]uint64(nil), unsafe.Slice((*uint64)(buf), int(n))...)
			}
			C.free(buf)
			t.addDefs(func(d *tracepb.Definitions) { d.CallSites = append(d.CallSites, s) })
		case kind == C.DT_Q_COMM:
			t.addDefs(func(d *tracepb.Definitions) { d.Communicators = append(d.Communicators, commDef(buf)) })
			C.free(buf)
		case kind == C.DT_Q_GO:
			for drained := false; !drained; {
				select {
				case gj := <-t.jobs:
					t.do(gj)
				default:
					drained = true
				}
			}
		case fin != 0:
			j = job{fin: tracepb.Footer_StopReason(fin), ack: t.finAck}
		default:
			j = job{buf: buf, n: int(n), tid: uint32(tid), copy: kind == C.DT_Q_COPY}
		}
		if j.buf == nil && j.fin == 0 {
			if !more {
				t.writeDefs() // definitions reach the disk even if no batch follows
			}
			continue
		}
		if t.do(j) {
			t.compactSelf()
			return
		}
	}
}

// compactSelf compacts the rank's deferred trace once its footer is
// written, after MPI_Finalize has returned (or at exit), while the program
// ends: each rank on its own node, so that no node compacts another's
// traces (which it may not even see) and a job of many nodes compacts in
// parallel. The process's exit waits for it (awaitCompaction). Compact
// writes a new file and renames it over the trace, so that a rank killed
// meanwhile leaves its deferred trace whole, which dtrun then compacts.
// A trace ended by a signal or MPI_Abort is left to dtrun: the process is
// about to die.
func (t *tracer) compactSelf() {
	c := t.compaction()
	if c == nil {
		return
	}
	defer close(c)
	if _, err := records.Compact(t.path); err != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: compacting %s: %v (dtrun --compact %s compacts it)\n", t.path, err, t.path)
	}
}

// awaitCompaction waits until the rank's own compaction ends, at most d:
// a process that exits before leaves its trace deferred, as dtrun
// compacts it after the job.
func (t *tracer) awaitCompaction(d time.Duration) {
	c := t.compaction()
	if c == nil {
		return
	}
	select {
	case <-c:
	case <-time.After(d):
		fmt.Fprintf(os.Stderr, "dtpa tracer: %s not compacted after %v; exiting (dtrun --compact %s compacts it)\n", t.path, d, t.path)
	}
}

// compaction is the rank's own compaction's end (closed when it ends),
// nil while none runs.
func (t *tracer) compaction() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.compacted
}

// compactAtEnd tells whether the rank compacts its own deferred trace
// (DT_COMPACT_AT_END, default 1; 0: dtrun compacts it after the job).
func compactAtEnd() bool { return os.Getenv("DT_COMPACT_AT_END") != "0" }

// do runs one job and tells whether it was the last (the footer).
func (t *tracer) do(j job) bool {
	switch {
	case j.buf != nil && discard:
		t.release(j)
	case j.buf != nil && t.deferLeft > 0:
		t.writeRecords(j)
		t.release(j)
	case j.buf != nil:
		t.batch.Reset()
		if err := records.Decode(&t.batch, unsafe.Slice((*byte)(j.buf), j.n), j.tid, &t.conv); err != nil {
			fmt.Fprintf(os.Stderr, "dtpa tracer: internal error: thread %d buffer: %v\n", j.tid, err)
		}
		t.writeBatch()
		// Only now that its records are on disk (or deliberately dropped)
		// may the buffer be reused: until then a spill slot keeps them
		// recoverable.
		t.release(j)
	case j.clock != nil:
		t.writeDefs()
		t.check(t.w.WriteClockSync(j.clock))
	case j.fin != 0:
		t.writeDefs()
		t.setStop(j.fin, "")
		t.mu.Lock()
		f := &tracepb.Footer{DroppedEvents: t.dropped + uint64(C.dt_dropped()), StopReason: t.stop,
			EndLocalNs: int64(C.dt_ns(C.uint64_t(nowRaw())))}
		// Hand-over cost as the program saw it (wall time: it includes
		// any descheduling of the thread during the hand-over).
		stall := int64(float64(C.dt_max_stall_ticks) * t.conv.NsPerTick)
		mean := int64(0)
		if C.dt_flushes > 0 {
			mean = int64(float64(C.dt_stall_ticks) * t.conv.NsPerTick / float64(C.dt_flushes))
		}
		f.Message = strings.TrimSpace(fmt.Sprintf("%s; max flush stall %d ns, mean %d ns over %d flushes; encoder CPU %d ns",
			t.stopMsg, stall, mean, uint64(C.dt_flushes), threadCPU()-t.cpu0))
		// What else the tracer's threads cost the ranks' cores: the
		// encoder's sleeps (each a wake-up later) and the aux thread's CPU
		// (spill slots made ahead of need, the epoch), for BenchmarkOverhead.
		f.Message += fmt.Sprintf("; encoder sleeps %d (%d idle); aux CPU %d ns, %d wake-ups, %d spill slots made (%d in hand-overs)",
			uint64(C.dt_q_waits), uint64(C.dt_q_idle), int64(C.dt_aux_cpu_ns), uint64(C.dt_aux_wakeups), int(C.dt_spill_made()), int(C.dt_spill_made_by_threads()))
		if g := uint64(C.dt_drop_gaps); g > 0 {
			f.Message += fmt.Sprintf("; calls dropped in %d gaps: no free buffer (events came faster than the encoder absorbed them)", g)
		}
		f.Message = strings.TrimPrefix(f.Message, "; ")
		t.mu.Unlock()
		t.w.Close(f)
		t.finishFile()
		if t.spill != "" {
			os.Remove(t.spill)
			// The node's last rank removes the directory (see createSpill),
			// unless a rank killed inside MPI_Init left its file there.
			records.RemoveAbandoned(filepath.Dir(t.spill))
			os.Remove(filepath.Dir(t.spill))
		}
		if t.deferred && (j.fin == tracepb.Footer_FINALIZE || j.fin == tracepb.Footer_EXIT) && compactAtEnd() {
			t.mu.Lock()
			t.compacted = make(chan struct{})
			t.mu.Unlock()
		}
		close(j.ack)
		return true
	}
	return false
}

// threadCPU is the CPU time of the calling thread in ns (-1: unknown). On
// the encoder's thread, to which its goroutine is locked, its growth from
// the encoder's start to the footer is what encoding the trace cost: the
// footer's message carries it for BenchmarkOverhead (ns per event,
// measured in the traced process itself).
func threadCPU() int64 {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}

// lowPriority locks the calling goroutine to its thread and lowers that
// thread's priority (DT_WRITER_NICE, default 10): the tracer's background
// work then takes about a tenth of a core it shares with the program when
// both want it, and catches up whenever the program waits. (Under EEVDF a
// nice value does not shorten the encoder's turns on the core: it yields
// after each buffer for that, dt_buf.c, dt_buf_done.)
func lowPriority() {
	runtime.LockOSThread()
	nice := 0
	if n := os.Getenv("DT_WRITER_NICE"); n != "0" {
		nice = 10
		if v, err := strconv.Atoi(n); err == nil {
			nice = v
		}
		if syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice) != nil {
			nice = 0
		}
	}
	// A thread waiting for a free buffer lends the encoder its priority
	// (dt_buf.c, enc_boost).
	C.dt_enc_register(C.int(nice))
	if os.Getenv("DT_WRITER_SCHED") == "idle" {
		C.dt_enc_idle()
	}
}

// release gives a written job's memory back: a buffer to the C free list,
// a copy to the C heap.
func (t *tracer) release(j job) {
	if j.copy {
		C.free(j.buf)
	} else {
		C.dt_buf_done(j.buf)
	}
}

// commDef reads a communicator definition queued by dt_q_def_comm.
func commDef(p unsafe.Pointer) *tracepb.Communicator {
	h := unsafe.Slice((*uint32)(p), 8)
	nm, nr := int(h[1]), int(h[2])
	all := unsafe.Slice((*uint32)(p), 8+nm+nr)
	c := &tracepb.Communicator{Local: h[0], Inter: h[3] != 0, Parent: h[4], CreatedBy: h[5],
		Id: uint64(h[6]) | uint64(h[7])<<32}
	if nm > 0 {
		c.Members = append([]uint32(nil), all[8:8+nm]...)
	}
	if nr > 0 {
		c.RemoteMembers = append([]uint32(nil), all[8+nm:]...)
	}
	return c
}

func (t *tracer) writeBatch() {
	// Past the deferral's budget (or without one) frames are compressed.
	t.w.Compress()
	if t.stopped() {
		t.drop(t.batch.Len())
		return
	}
	if err := t.reserve(int64(t.batch.Len()) * 64); err != nil {
		t.setStop(tracepb.Footer_WRITE_ERROR, err.Error())
		C.dt_stop(C.DT_STOP_WRITE_ERROR)
		t.drop(t.batch.Len())
		return
	}
	t.writeDefs()
	t.check(t.w.WriteBatch(&t.batch))
	// Raw records count when compacted (records.Compact cuts the trace
	// where this check would have).
	if t.limit > 0 && t.w.Offset()-t.rawBytes >= t.limit {
		t.setStop(tracepb.Footer_SIZE_LIMIT, fmt.Sprintf("trace reached %d bytes (MaxTraceSize %d MB over all ranks)", t.w.Offset(), loadedParams.MaxTraceSize))
		C.dt_stop(C.DT_STOP_SIZE_LIMIT)
	}
}

// writeRecords writes a buffer's records as they are, for records.Compact
// to encode after the run.
func (t *tracer) writeRecords(j job) {
	recs := unsafe.Slice((*byte)(j.buf), j.n)
	n := int64(traceformat.FrameHeaderSize + records.PrefixSize + j.n)
	if t.stopped() {
		t.dropRecords(recs, j.tid)
		return
	}
	if err := t.reserve(n); err != nil {
		t.setStop(tracepb.Footer_WRITE_ERROR, err.Error())
		C.dt_stop(C.DT_STOP_WRITE_ERROR)
		t.dropRecords(recs, j.tid)
		return
	}
	t.writeDefs()
	t.prefix.Thread = j.tid
	t.pbuf = t.prefix.Append(t.pbuf[:0])
	t.check(t.w.WriteRecords(t.pbuf, recs))
	t.rawBytes += n
	t.deferLeft -= n
}

// dropRecords counts the events of records that are not written.
func (t *tracer) dropRecords(recs []byte, tid uint32) {
	t.batch.Reset()
	records.Decode(&t.batch, recs, tid, &t.conv)
	t.drop(t.batch.Len())
}

func (t *tracer) drop(n int) {
	t.mu.Lock()
	t.dropped += uint64(n)
	t.mu.Unlock()
}

// signalFlush runs on the C signal-watcher thread (dt_signal.c) when a fatal
// signal arrived: it writes everything recorded so far while the handler
// waits.
func (t *tracer) signalFlush() {
	C.dt_finish_state()
	C.dt_collect()
	t.finish(tracepb.Footer_SIGNAL)
}

// finish writes what is queued and the footer, once; later calls wait for
// the first to complete (bounded, so that a stuck writer cannot hang exit).
func (t *tracer) finish(r tracepb.Footer_StopReason) {
	t.finOnce.Do(func() {
		C.dt_enc_hurry()
		C.dt_aux_stop()
		C.dt_q_fin(C.int(r))
		select {
		case <-t.finAck:
		case <-time.After(10 * time.Second):
		}
		close(t.done)
	})
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
	}
}
