package records

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// A spill file backs a process's trace buffers with a shared file mapping
// (in a memory file system such as /dev/shm, provided by dtrun), so that
// records not yet written to the trace survive the process being killed:
// dtrun then appends them to the trace with Recover.
//
// Layout: a 4096-byte header (SpillMagic, uint32 length, JSON SpillInfo),
// then Slots slots of SlotHeader + Chunk bytes. A slot header holds uint64
// seq (handover order; 0 = nothing to recover), uint64 commit (bytes of
// complete records), uint32 thread, 4 bytes of padding, and the thread's
// MPI call in progress while the slot is its buffer: uint64 entry (a raw
// clock reading), uint64 return address, uint64 function id + 1 (0: none),
// uint64 when a fatal signal arrived (a raw clock reading; 0: none).
const (
	// SpillMagic's digit is 1 + traceformat.RawLayout, the layout of the
	// records in the slots.
	SpillMagic      = "DTPASPL2"
	SpillHeaderSize = 4096
	SlotHeader      = 64
)

// SpillInfo describes a spill file.
type SpillInfo struct {
	Trace string // absolute path of the trace file
	Rank  uint32 // world rank
	// Pid is the process's id on its node (0: not recorded): dtrun,
	// interrupted, signals its node's ranks itself (their tracers then
	// write their traces' ends) before the launcher kills them.
	Pid   int       `json:",omitempty"`
	Slots int       // number of buffers
	Chunk int       // bytes of records per buffer
	Conv  Converter // clock conversion of the records
	// Boot is the boot id of the process's node (BootID): the clock
	// domain of Conv's CLOCK_MONOTONIC_RAW; "" unknown.
	Boot string `json:",omitempty"`
}

// BootID is this node's boot id (/proc/sys/kernel/random/boot_id), the
// same for every process of the node until it reboots, and so for
// every reading of its CLOCK_MONOTONIC_RAW; "" when it cannot be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// CreateSpill creates and maps a spill file, returning the mapping and the
// file descriptor (kept open: the tracer allocates each slot in the file
// with fallocate before its first use, because a page of a shared mapping
// that the file system cannot back would kill the program with SIGBUS).
// The descriptor holds an exclusive lock on the file (flock) while the
// process lives, by which RemoveAbandoned tells a spill file whose process
// is gone.
func CreateSpill(path string, info SpillInfo) ([]byte, int, error) {
	fd, err := syscall.Open(path, syscall.O_CREAT|syscall.O_TRUNC|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, -1, err
	}
	syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) // best effort: without it, the file is never taken for abandoned
	size := int64(SpillHeaderSize) + int64(info.Slots)*int64(SlotHeader+info.Chunk)
	fail := func(err error) ([]byte, int, error) {
		syscall.Close(fd)
		os.Remove(path)
		return nil, -1, err
	}
	if err := syscall.Ftruncate(fd, size); err != nil {
		return fail(err)
	}
	if err := syscall.Fallocate(fd, 0, 0, SpillHeaderSize); err != nil {
		return fail(fmt.Errorf("allocating %s: %w", path, err))
	}
	hdr, err := json.Marshal(info)
	if err != nil || len(hdr) > SpillHeaderSize-12 {
		return fail(fmt.Errorf("spill header: %v", err))
	}
	mem, err := syscall.Mmap(fd, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	copy(mem, SpillMagic)
	binary.LittleEndian.PutUint32(mem[8:], uint32(len(hdr)))
	copy(mem[12:], hdr)
	return mem, fd, nil
}

// SpillNew is the suffix of a spill file whose trace has no header yet: the
// tracer renames it to <app>.<rank>.spill once the header is written, at
// the end of MPI_Init. Its process has recorded nothing.
const SpillNew = ".spill.new"

// RemoveAbandoned removes the spill files in dir that were never renamed
// from SpillNew (their processes ended inside MPI_Init) and whose
// processes are gone: nobody holds their lock (CreateSpill). Such a file
// has nothing to recover, and would keep the node's spill directory from
// being removed. It returns the paths removed, for the caller to report.
//
// A file being created has no lock for the moment between its creation
// and the lock; every rank of a job creates its file before MPI_Init's
// collective, and the removal is done by a rank that has finished (or by
// dtrun after the job), so none is being created then.
func RemoveAbandoned(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*"+SpillNew))
	var out []string
	for _, f := range files {
		fd, err := syscall.Open(f, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.Remove(f) == nil {
			out = append(out, f)
		}
		syscall.Close(fd)
	}
	return out
}

// slotCall is what a slot's header says of its thread's call in progress.
type slotCall struct {
	seq, t0, pc, fid, end uint64
}

// unfinished lists the calls in progress that the threads' latest slots
// publish, by thread. A function id the definitions lack (a damaged
// header: the program's own stores can reach it) is left out, and so is
// a call entered no later than the thread's last recorded call (latest,
// its entry in local ns): the thread made that call after it, so the
// header is stale or damaged, and naming the call would place the thread
// where it no longer was.
func unfinished(current map[uint32]slotCall, defs *traceformat.Definitions, conv *Converter, latest map[uint32]int64) []*tracepb.UnfinishedCall {
	var out []*tracepb.UnfinishedCall
	for tid, c := range current {
		if c.fid == 0 || c.fid > 1<<16 {
			continue
		}
		if l, ok := latest[tid]; ok && conv.Ns(c.t0) <= l {
			continue
		}
		f := defs.Function(uint32(c.fid - 1))
		if f == nil {
			continue
		}
		out = append(out, &tracepb.UnfinishedCall{Thread: tid, Function: f.Id, Name: f.Name,
			EntryLocalNs: conv.Ns(c.t0), ReturnAddress: c.pc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Thread < out[j].Thread })
	return out
}

type slot struct {
	seq  uint64
	tid  uint32
	recs []byte
}

// Recover appends to the trace named in the spill file the records that
// its process had not written when it died, with the definitions they need
// and a footer, and removes the spill file. A trace that already has a
// footer is left alone. It returns the number of events recovered.
func Recover(spillPath string) (int, error) { return RecoverInterrupted(spillPath, 0) }

// ReadSpillInfo reads the header of the spill file at path.
func ReadSpillInfo(path string) (SpillInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return SpillInfo{}, err
	}
	defer f.Close()
	data := make([]byte, SpillHeaderSize)
	if _, err := io.ReadFull(f, data); err != nil || string(data[:8]) != SpillMagic {
		return SpillInfo{}, fmt.Errorf("%s: not a spill file", path)
	}
	info, err := spillHeader(data)
	if err != nil {
		return SpillInfo{}, fmt.Errorf("%s: %v", path, err)
	}
	return info, nil
}

// spillHeader is the SpillInfo of a spill file whose first bytes are data
// (at least SpillHeaderSize, the magic checked).
func spillHeader(data []byte) (SpillInfo, error) {
	var info SpillInfo
	n := binary.LittleEndian.Uint32(data[8:])
	if int(n) > SpillHeaderSize-12 || json.Unmarshal(data[12:12+n], &info) != nil || info.Chunk <= 0 {
		return SpillInfo{}, errors.New("bad spill header")
	}
	return info, nil
}

// RecoverInterrupted is Recover for a job that was interrupted (Ctrl-C, a
// batch system's SIGTERM) at interrupted, a CLOCK_MONOTONIC_RAW reading
// of this node in ns (0: it was not): a process killed before it stamped
// its own end was alive then, so its calls in progress ran at least until
// that time (Footer.interrupted_local_ns). The reading is applied only
// to a process of this node's current boot (SpillInfo.Boot), whose clock
// it is.
func RecoverInterrupted(spillPath string, interrupted int64) (int, error) {
	data, err := os.ReadFile(spillPath)
	if err != nil {
		return 0, err
	}
	if len(data) >= SpillHeaderSize && string(data[:7]) == SpillMagic[:7] && data[7] != SpillMagic[7] {
		return 0, fmt.Errorf("%s: a spill file of another tracer version (its records' layout is not this one's): recover it with the dtrun of the installation that traced it", spillPath)
	}
	if len(data) < SpillHeaderSize || string(data[:8]) != SpillMagic {
		return 0, fmt.Errorf("%s: not a spill file", spillPath)
	}
	info, err := spillHeader(data)
	if err != nil || info.Chunk > len(data) {
		return 0, fmt.Errorf("%s: bad spill header", spillPath)
	}
	// A deferred trace is compacted first, up to where the process left
	// it: the reader below reads only encoded batches.
	if _, err := Compact(info.Trace); err != nil && IsDeferred(info.Trace) {
		return 0, err
	}
	f, err := os.OpenFile(info.Trace, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: info.Trace})
	if err != nil {
		return 0, err
	}
	existing := 0
	last := map[uint32]int64{} // per thread, the entry time of its last event in the trace
	for {
		var e traceformat.Event
		if e, err = r.ReadEvent(); err != nil {
			break
		}
		existing++
		if l, ok := last[e.Thread]; !ok || e.Entry > l {
			last[e.Thread] = e.Entry
		}
	}
	if errors.Is(err, io.EOF) && r.Footer() != nil {
		return 0, os.Remove(spillPath) // complete: the process wrote everything
	}
	good := r.Offset() // end of the last intact frame …
	var ce *traceformat.CorruptError
	if errors.As(err, &ce) {
		good = ce.Offset // … which is where the damaged one starts
	}

	var slots []slot
	current := map[uint32]slotCall{} // per thread, the call its latest slot says is in progress
	for i := 0; i < info.Slots; i++ {
		off := SpillHeaderSize + i*(SlotHeader+info.Chunk)
		if off+SlotHeader+info.Chunk > len(data) {
			break
		}
		seq, commit := binary.LittleEndian.Uint64(data[off:]), binary.LittleEndian.Uint64(data[off+8:])
		if tid := binary.LittleEndian.Uint32(data[off+16:]); seq != 0 && seq > current[tid].seq {
			current[tid] = slotCall{seq: seq, t0: binary.LittleEndian.Uint64(data[off+24:]),
				pc: binary.LittleEndian.Uint64(data[off+32:]), fid: binary.LittleEndian.Uint64(data[off+40:]),
				end: binary.LittleEndian.Uint64(data[off+48:])}
		}
		if seq == 0 || commit == 0 || commit > uint64(info.Chunk) {
			continue
		}
		slots = append(slots, slot{seq: seq, tid: binary.LittleEndian.Uint32(data[off+16:]),
			recs: data[off+SlotHeader : off+SlotHeader+int(commit)]})
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].seq < slots[j].seq })

	var out bytes.Buffer
	w, err := traceformat.NewWriter(&out, r.Header(), traceformat.WriterOptions{})
	if err != nil {
		return 0, err
	}
	prefix := out.Len() // preamble and header: already in the file
	defs := r.Definitions()
	missing := &tracepb.Definitions{}
	// The ids of each kind the trace defines, and those the recovered
	// records use beyond them.
	funcs := idSet{defined: countDefined(defs.Functions, func(f *tracepb.Function) bool { return f != nil })}
	sites := idSet{defined: countDefined(defs.CallSites, func(pcs []uint64) bool { return pcs != nil })}
	comms := idSet{defined: countDefined(defs.Comms, func(c *tracepb.Communicator) bool { return c != nil })}
	// define adds the placeholder definitions e needs; false when one of
	// its ids is one no reader would take (ids are dense): a damaged
	// record, since the program's own stores can reach the slots, which
	// live in its address space.
	define := func(e *traceformat.Event) bool {
		if id := e.Func; defs.Function(id) == nil {
			added, ok := funcs.add(id)
			if !ok {
				return false
			}
			if added {
				missing.Functions = append(missing.Functions, &tracepb.Function{Id: id, Name: fmt.Sprintf("MPI_unknown_%d", id),
					Class: tracepb.Function_SYSTEM})
			}
		}
		if id := e.Site; int(id) >= len(defs.CallSites) || defs.CallSites[id] == nil {
			added, ok := sites.add(id)
			if !ok {
				return false
			}
			if added {
				missing.CallSites = append(missing.CallSites, &tracepb.CallSite{Id: id})
			}
		}
		// CommNull stands for MPI_COMM_NULL as a call's new communicator
		// only; as the communicator of a call it is damage.
		for _, c := range [...]struct {
			used, null bool
			c          uint32
		}{{e.Attr&traceformat.AttrComm != 0, false, e.Comm}, {e.Attr&traceformat.AttrNewComm != 0, true, e.NewComm}} {
			if c.used && !(c.null && c.c == traceformat.CommNull) && defs.Comm(c.c) == nil {
				added, ok := comms.add(c.c)
				if !ok {
					return false
				}
				if added {
					missing.Communicators = append(missing.Communicators, &tracepb.Communicator{Local: c.c, Id: 1<<62 | uint64(c.c)})
				}
			}
		}
		return true
	}
	var batches []*traceformat.Builder
	recovered, damaged := 0, 0
	latest := maps.Clone(last) // per thread, the entry of its last event, recovered ones too
	for _, s := range slots {
		recs := s.recs
		if l, ok := last[s.tid]; ok {
			recs = After(recs, &info.Conv, l) // a slot written but not yet freed: skip what the trace has
		}
		b := &traceformat.Builder{}
		Decode(b, recs, s.tid, &info.Conv) // keeps the complete records
		if b.Len() == 0 {
			continue
		}
		// Definitions made just before the death may not be in the file:
		// call sites become empty stacks, communicators placeholders. A
		// damaged record ends its slot's recovery.
		var c traceformat.Cursor
		var e traceformat.Event
		kept := 0
		for bt := b.Batch(); c.Next(bt, &e); kept++ {
			if !define(&e) {
				break
			}
			if l, ok := latest[s.tid]; !ok || e.Entry > l {
				latest[s.tid] = e.Entry
			}
		}
		if kept < b.Len() {
			damaged += b.Len() - kept
			b = firstEvents(b, kept)
			if kept == 0 {
				continue
			}
		}
		batches = append(batches, b)
		recovered += b.Len()
	}
	if len(missing.Functions)+len(missing.CallSites)+len(missing.Communicators) > 0 {
		if err := w.WriteDefinitions(missing); err != nil {
			return 0, err
		}
	}
	for _, b := range batches {
		if err := w.WriteBatch(b); err != nil {
			return 0, err
		}
	}
	msg := fmt.Sprintf("the process died without writing a footer; dtrun recovered %d events from its trace buffers", recovered)
	if damaged > 0 {
		msg += fmt.Sprintf(" (and left out %d more after a damaged record)", damaged)
	}
	foot := &tracepb.Footer{EventCount: uint64(existing + recovered), StopReason: tracepb.Footer_SIGNAL, Message: msg}
	foot.Unfinished = unfinished(current, defs, &info.Conv, latest)
	// The fatal signal's arrival, when the process stamped it before it
	// was killed: its end.
	var end uint64
	for _, c := range current {
		end = max(end, c.end)
	}
	if end != 0 {
		foot.EndLocalNs = info.Conv.Ns(end)
	} else if interrupted > 0 && info.Boot != "" && info.Boot == BootID() {
		foot.InterruptedLocalNs = info.Conv.FromMonotonicRaw(interrupted)
	}
	if err := w.Close(foot); err != nil {
		return 0, err
	}
	if err := f.Truncate(good); err != nil {
		return 0, err
	}
	if _, err := f.WriteAt(out.Bytes()[prefix:], good); err != nil {
		return 0, err
	}
	return recovered, os.Remove(spillPath)
}

// countDefined is how many entries of a definitions table (indexed by id)
// are defined.
func countDefined[T any](table []T, defined func(T) bool) int {
	n := 0
	for _, v := range table {
		if defined(v) {
			n++
		}
	}
	return n
}

// idSet is the ids of one kind of definition that recovered records use
// and the trace does not define.
type idSet struct {
	seen    map[uint32]bool
	defined int // the kind's definitions, the trace's and those added
}

// add takes id, undefined in the trace: added says it is new (its
// placeholder is to be written), ok that a reader would take it.
func (s *idSet) add(id uint32) (added, ok bool) {
	if s.seen[id] {
		return false, true
	}
	if !traceformat.Dense(id, s.defined+1) {
		return false, false
	}
	if s.seen == nil {
		s.seen = map[uint32]bool{}
	}
	s.seen[id] = true
	s.defined++
	return true, true
}

// firstEvents is a builder holding b's first n events.
func firstEvents(b *traceformat.Builder, n int) *traceformat.Builder {
	out := &traceformat.Builder{}
	var c traceformat.Cursor
	var e traceformat.Event
	for bt, i := b.Batch(), 0; i < n && c.Next(bt, &e); i++ {
		out.Append(&e)
	}
	return out
}
