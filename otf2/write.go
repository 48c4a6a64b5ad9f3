package otf2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// ExportOptions say which run to write as an OTF2 archive, and where.
type ExportOptions struct {
	Dir, App string // the traces <App>.<rank>.trc in Dir
	// Out is the directory of the archive, created by Export: it holds
	// traces.otf2 (the anchor file readers open), traces.def and
	// traces/. It must not exist yet, or be empty.
	Out string
	// Symbolizer, when set, gives each call site the source position it
	// is written with (the innermost frame with a file, as the report's
	// stacks show it).
	Symbolizer analyzer.Symbolizer
	// Warn receives each warning (unreadable ranks, clock samples, damage).
	Warn func(string)
	// Into, when set, is the fresh directory the archive is written into
	// and renamed to Out once complete: one PrepareOut gave, for Out, to a
	// process that writes the archive for another. "" makes one.
	Into string
}

// ExportStats count what Export wrote.
type ExportStats struct {
	Ranks   int   // ranks written (location groups; a location per thread)
	Calls   int64 // MPI calls (events of the traces) written as Enter/Leave pairs
	Records int64 // OTF2 event records, all kinds
	// MPI records by kind: Sends counts MpiSend and MpiIsend, Recvs
	// MpiRecv and MpiIrecv, Colls MpiCollectiveEnd and
	// NonBlockingCollectiveComplete.
	Sends, Recvs, Colls int64
	// Unfinished counts the calls in progress when their processes ended
	// (Report.Unfinished), written as Enter and Leave marked
	// dtpa::unfinished: not among Calls.
	Unfinished int64
}

// ArchiveName is the anchor file of an archive Export writes, in Out.
const ArchiveName = "traces.otf2"

// resolution is the timer resolution written: the traces' nanoseconds
// are the ticks.
const resolution = 1_000_000_000

// Export writes the run of opts.App as an OTF2 archive (docs/user-guide.md,
// section 5c, says what goes where). Each rank is read once, forward, and written as
// it is read: memory holds one rank's batch, its requests in flight and
// the definitions, whatever the length of the traces.
//
// Times are global: each rank's local times mapped through the clock
// alignment the analysis computes (analyzer.FindRun), before the
// controlled logical clock's repairs, which the analysis of the archive
// makes again alike. A report of the archive therefore shows the figures
// of the report of the traces.
func Export(ctx context.Context, opts ExportOptions) (ExportStats, error) {
	rt, warn, err := findRun(opts)
	if err != nil {
		return ExportStats{}, err
	}
	defer rt.Close()
	for _, w := range rt.Warnings {
		warn(w)
	}
	return writeArchive(rt, opts, warn, func(x *exporter, ca *cArchive) error { return x.run(ctx, ca) })
}

// findRun checks opts and finds the run to export, with the function its
// warnings go to (opts.Warn, or none).
func findRun(opts ExportOptions) (*analyzer.RunClocks, func(string), error) {
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if opts.Out == "" {
		return nil, nil, errors.New("otf2 export: no output directory (-o DIR)")
	}
	rt, err := analyzer.FindRun(opts.Dir, opts.App)
	if err != nil {
		return nil, nil, err
	}
	return rt, warn, nil
}

// writeArchive writes the archive of run into opts.Out: into a fresh
// directory beside it, renamed once complete (PrepareOut), with run
// converting the ranks' events through x.
func writeArchive(rt *analyzer.RunClocks, opts ExportOptions, warn func(string), run func(x *exporter, ca *cArchive) error) (ExportStats, error) {
	tmp := opts.Into
	if tmp == "" {
		var err error
		if tmp, err = PrepareOut(opts.Out); err != nil {
			return ExportStats{}, err
		}
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	ca, err := createArchive(tmp, strings.TrimSuffix(ArchiveName, ".otf2"))
	if err != nil {
		return ExportStats{}, err
	}
	x := newExporter(rt, opts.Symbolizer, warn)
	x.open = func(r int, t uint32) (evtSink, error) { return ca.evtWriter(locationID(r, t)) }
	if err := run(x, ca); err != nil {
		ca.abort()
		return ExportStats{}, ca.explain(err)
	}
	if err := ca.close(); err != nil {
		return ExportStats{}, ca.explain(err)
	}
	if err := os.Rename(tmp, opts.Out); err != nil {
		// An empty directory given as -o: replace it.
		if os.Remove(opts.Out) != nil || os.Rename(tmp, opts.Out) != nil {
			return ExportStats{}, fmt.Errorf("otf2 export: %w", err)
		}
	}
	done = true
	return x.stats, nil
}

// PrepareOut checks that out is new (or an empty directory) and returns
// a fresh directory beside it to write the archive into, renamed to out
// once complete, so that a failure leaves no half archive. The directory
// does not exist yet: libotf2 creates it.
func PrepareOut(out string) (string, error) {
	if ents, err := os.ReadDir(out); err == nil {
		if len(ents) > 0 {
			return "", fmt.Errorf("otf2 export: %s exists and is not empty; give a new directory", out)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("otf2 export: %w", err)
	}
	parent := filepath.Dir(filepath.Clean(out))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("otf2 export: %w", err)
	}
	// libotf2 creates the archive directory itself and refuses an
	// existing one.
	if err := os.Remove(tmp); err != nil {
		return "", fmt.Errorf("otf2 export: %w", err)
	}
	return tmp, nil
}

// batchRecords is how many records go to libotf2 per cgo call.
const batchRecords = 4096

// exporter holds the definitions gathered over all ranks and the state of
// the rank being written.
type exporter struct {
	rt    *analyzer.RunClocks
	sym   analyzer.Symbolizer
	warn  func(string)
	defs  *globalDefs
	stats ExportStats

	first, last   uint64 // earliest and latest time written
	started       bool
	locs          [][]locCount // per rank: its threads' locations, the master thread's first
	written       []bool
	realtimeStart uint64 // rank 0's calendar time at its first time written, 0 unknown
	// marks are the ranks' crashes, in rank order (crashMarks).
	marks []crashMark

	// open gives the writer of the events of rank r's thread t.
	open func(r int, t uint32) (evtSink, error)
}

// crashMark is a rank's crash as an OTF2 marker: when, on which location
// (onLoc; else on the rank's location group: a thread that never called
// MPI, or one not written), and the report's lines of it. end: not a
// crash, how the rank's process otherwise ended (analyzer.EndOf).
type crashMark struct {
	time  uint64
	rank  int
	loc   uint64
	onLoc bool
	text  string
	end   bool
}

// locCount is one location of a rank: its thread and the records
// written to it.
type locCount struct {
	thread uint32
	events uint64
}

// locationID is the OTF2 location of rank r's thread t: the rank itself
// for the thread that called MPI_Init (as in an archive of a
// single-threaded run), t<<32 | r for another thread.
func locationID(r int, t uint32) uint64 { return uint64(t)<<32 | uint64(r) }

// threadLevelSerialized is MPI_THREAD_SERIALIZED in the trace header's
// thread level: below it the analysis replays only the thread that called
// MPI_Init, and the archive holds what the analysis replays.
const threadLevelSerialized = 2

// evtSink takes the records of one location: libotf2's event writer
// (cEvtWriter), or a part of a distributed export (write_dist.go).
type evtSink interface {
	write(evs []wev) error
	close() error
}

func newExporter(rt *analyzer.RunClocks, sym analyzer.Symbolizer, warn func(string)) *exporter {
	return &exporter{rt: rt, sym: sym, warn: warn, defs: newGlobalDefs(),
		locs: make([][]locCount, rt.Size), written: make([]bool, rt.Size)}
}

func (x *exporter) run(ctx context.Context, ca *cArchive) error {
	if n, ok := x.sym.(analyzer.ModuleNoter); ok {
		n.NoteModules(x.modules())
	}
	var locs []uint64
	for r, rk := range x.rt.Ranks {
		if rk.Path == "" {
			continue
		}
		if err := x.rank(ctx, r, rk); err != nil {
			return err
		}
		locs = x.wrote(r, locs)
	}
	return x.finish(ca, locs)
}

// wrote notes rank r's events written, adding its locations to locs.
func (x *exporter) wrote(r int, locs []uint64) []uint64 {
	x.written[r] = true
	x.stats.Ranks++
	if len(x.locs[r]) == 0 {
		x.locs[r] = []locCount{{}}
	}
	slices.SortFunc(x.locs[r], func(a, b locCount) int { return cmp.Compare(a.thread, b.thread) })
	for _, l := range x.locs[r] {
		locs = append(locs, locationID(r, l.thread))
	}
	return locs
}

// counted adds n records to the location of rank r's thread t.
func (x *exporter) counted(r int, t uint32, n uint64) {
	for i := range x.locs[r] {
		if x.locs[r][i].thread == t {
			x.locs[r][i].events += n
			return
		}
	}
	x.locs[r] = append(x.locs[r], locCount{thread: t, events: n})
}

// finish closes the event files of locs and writes the definitions.
func (x *exporter) finish(ca *cArchive, locs []uint64) error {
	if err := ca.closeEvents(locs); err != nil {
		return err
	}
	if err := x.defs.write(ca, x); err != nil {
		return err
	}
	if len(x.marks) == 0 {
		return nil
	}
	return ca.crashMarks(x.marks)
}

// modules are the modules the traces recorded, for a symbolizer that
// checks build ids: read from each rank's definitions would mean a pass
// over the events, so the first rank's suffice (every rank runs the same
// program).
func (x *exporter) modules() []analyzer.Module {
	for _, rk := range x.rt.Ranks {
		if rk.Path == "" {
			continue
		}
		f, err := os.Open(rk.Path)
		if err != nil {
			return nil
		}
		defer f.Close()
		rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: rk.Path, SkipEvents: true})
		if err != nil {
			return nil
		}
		for {
			if _, err := rd.ReadBatch(); err != nil {
				break
			}
		}
		var out []analyzer.Module
		for i, m := range rd.Definitions().Modules {
			exe := m.Path == rk.Header.GetProgram() || (i == 0 && rk.Header.GetProgram() == "")
			out = append(out, analyzer.Module{Path: m.Path, BuildID: m.BuildId, Executable: exe})
		}
		return out
	}
	return nil
}

// rankWriter writes one rank's events: each thread's to a location of
// its own (locWriter); the definitions and requests are the process's.
type rankWriter struct {
	x          *exporter
	rank       int
	defs       *traceformat.Definitions
	loc        *locWriter   // the location of the batch being written
	locs       []*locWriter // by first record, the master thread's first
	fns        []*fnMap     // by trace function id
	comms      []uint32     // OTF2 comm by local index, +1 (0 = not mapped yet)
	sites      []uint32     // OTF2 source code location by call site id, +1
	reqs       map[uint64][]*pendReq
	nextReq    uint64
	backwards  int64
	interColl  bool
	unknownReq int64
	// otherThreadReq counts requests completed on another thread than
	// the one that started them (completeReq).
	otherThreadReq int64
}

// locWriter is the location of one thread of a rank: its records, in
// the thread's call order, and what its calls carry to the next.
type locWriter struct {
	thread uint32
	w      evtSink
	buf    []wev
	events uint64
	last   uint64 // last time written (times never go back)
	// The message the thread's last successful MPI_Mprobe or
	// MPI_Improbe took (MPI_Mrecv and MPI_Imrecv receive it by its
	// handle).
	probe struct {
		ok       bool
		comm     uint32
		src, tag int32
	}
	// The latest exit (or entry) of the thread's calls written, on the
	// rank's clock, once hasPrev: no folded run's first call entered
	// before it (innerGaps).
	prevExit int64
	hasPrev  bool
}

// fnMap is how one traced function is written.
type fnMap struct {
	region uint32
	op     wop
	collOp uint32 // OTF2 collective op, undefinedU32 when it has none
	shape  tracepb.Function_Collective
	probe  bool // MPI_Probe: its status goes into attributes
}

// wop is what the writer does with a call besides Enter and Leave.
type wop uint8

const (
	wNone wop = iota
	wSend
	wRecv
	wSendrecv
	wIsend
	wIrecv
	wSendInit
	wRecvInit
	wStart
	wComplete
	wFree
	wCancel
	wColl
	wICollStart
	wPCollInit
	wMrecv
	wMprobe
)

// pendReq is a request the rank has in flight (or a persistent one).
type pendReq struct {
	kind       wop // wIsend, wIrecv, wICollStart, wNone (nothing to write)
	comm       uint32
	peer, tag  int32
	bytes      uint64
	sent, recv uint64 // collective sizes
	root       uint32
	collOp     uint32
	persistent bool
	active     bool
	cancelled  bool
	id         uint64     // OTF2 request id while active
	loc        *locWriter // where it was started, while active
}

func classifyWrite(f *tracepb.Function) wop {
	b := mpifunc.Base(f.Name)
	switch f.Class {
	case tracepb.Function_COLLECTIVE:
		switch {
		case !f.Nonblocking:
			return wColl
		case strings.HasSuffix(b, "_init"):
			return wPCollInit
		}
		return wICollStart
	case tracepb.Function_POINT_TO_POINT:
	default:
		return wNone
	}
	switch b {
	case "Send", "Bsend", "Ssend", "Rsend":
		return wSend
	case "Recv":
		return wRecv
	case "Mrecv":
		return wMrecv
	case "Mprobe", "Improbe":
		return wMprobe
	case "Sendrecv", "Sendrecv_replace":
		return wSendrecv
	case "Isend", "Ibsend", "Issend", "Irsend":
		return wIsend
	case "Irecv", "Imrecv":
		return wIrecv
	case "Send_init", "Bsend_init", "Ssend_init", "Rsend_init":
		return wSendInit
	case "Recv_init":
		return wRecvInit
	case "Start", "Startall":
		return wStart
	case "Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome":
		return wComplete
	case "Request_free":
		return wFree
	case "Cancel":
		return wCancel
	}
	return wNone
}

// regionRole is the role Score-P gives the region of an MPI function.
func regionRole(f *tracepb.Function) int {
	switch f.Class {
	case tracepb.Function_POINT_TO_POINT:
		return rolePoint2Point
	case tracepb.Function_COLLECTIVE:
		if mpifunc.Base(f.Name) == "Barrier" || mpifunc.Base(f.Name) == "Ibarrier" {
			return roleBarrier
		}
		switch f.Collective {
		case tracepb.Function_ONE_TO_ALL:
			return roleOne2All
		case tracepb.Function_ALL_TO_ONE:
			return roleAll2One
		case tracepb.Function_ALL_TO_ALL:
			return roleAll2All
		}
		return roleCollOther
	}
	return roleFunction
}

// procNullBytes is the byte count of a blocking send or receive
// addressed to MPI_PROC_NULL.
func procNullBytes(e *traceformat.Event, op wop) (uint64, bool) {
	switch {
	case op == wSend && e.Attr&traceformat.AttrSend != 0 && e.SendPeer == traceformat.ProcNull && e.Attr&traceformat.AttrSendBytes != 0:
		return e.SendBytes, true
	case op == wRecv && e.Attr&traceformat.AttrRecv != 0 && e.RecvPeer == traceformat.ProcNull && e.Attr&traceformat.AttrRecvBytes != 0:
		return e.RecvBytes, true
	}
	return 0, false
}

// collOpOf is the OTF2 collective operation of a collective function, by
// its name without the I prefix of a nonblocking one or the _init suffix
// of a persistent one; undefinedU32 for those OTF2 has none for (the
// neighbourhood collectives).
func collOpOf(f *tracepb.Function) uint32 {
	b := strings.TrimSuffix(mpifunc.Base(f.Name), "_init")
	if op, ok := collOps[b]; ok {
		return op
	}
	if f.Nonblocking && len(b) > 1 && b[0] == 'I' {
		// "Ibarrier" → "Barrier".
		if op, ok := collOps[strings.ToUpper(b[1:2])+b[2:]]; ok {
			return op
		}
	}
	return undefinedU32
}

func (x *exporter) rank(ctx context.Context, r int, rk analyzer.RankTrace) error {
	f, err := os.Open(rk.Path)
	if err != nil {
		x.warn(fmt.Sprintf("%s cannot be read and is left out: %v.", rk.Path, err))
		return nil
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: rk.Path})
	if err != nil {
		x.warn(fmt.Sprintf("%s cannot be read and is left out: %v.", rk.Path, err))
		return nil
	}
	rw := &rankWriter{x: x, rank: r, defs: rd.Definitions(), reqs: map[uint64][]*pendReq{}}
	if err := rw.thread(0); err != nil {
		return err
	}
	threads := rk.Header.GetThreadLevel() >= threadLevelSerialized
	clk := rk.Clock.Clone()
	var cur traceformat.Cursor
	var e traceformat.Event
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := rd.ReadBatch()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The intact prefix is written; the analysis reports the same
			// damage.
			x.warn(fmt.Sprintf("Rank %d: %v; the events after it are not exported.", r, err))
			break
		}
		if t := b.Thread(); t != rw.loc.thread {
			if !threads {
				continue
			}
			if err := rw.thread(t); err != nil {
				return err
			}
		}
		cur = traceformat.Cursor{}
		for cur.Next(b, &e) {
			inner := rw.innerGaps(&e, clk)
			if err := rw.event(&e, clk.At(e.Entry), clk.At(e.Exit), inner); err != nil {
				return fmt.Errorf("rank %d (%s): %w", r, rk.Path, err)
			}
		}
	}
	if err := rw.unfinished(rd.Footer(), rk.Header.GetStartLocalNs(), clk, threads); err != nil {
		return fmt.Errorf("rank %d (%s): %w", r, rk.Path, err)
	}
	rw.crashed(rk, rd.Footer(), clk)
	for _, l := range rw.locs {
		if err := l.flush(); err != nil {
			return err
		}
		if err := l.w.close(); err != nil {
			return err
		}
		x.counted(r, l.thread, l.events)
	}
	if rw.backwards > 0 {
		x.warn(fmt.Sprintf("Rank %d: %d times went back on the global clock and were written as the time before them.", r, rw.backwards))
	}
	if rw.interColl {
		x.warn(fmt.Sprintf("Rank %d: collectives on intercommunicators are written as their calls only (no collective records).", r))
	}
	if rw.unknownReq > 0 {
		x.warn(fmt.Sprintf("Rank %d: %d completed requests were never seen started; they are written as their calls only.", r, rw.unknownReq))
	}
	if rw.otherThreadReq > 0 {
		x.warn(fmt.Sprintf("Rank %d: %d requests were completed by another thread than the one that started them; OTF2 pairs a request's records within one location, so a receive is written as MpiRecv where it completed, and the completion of a send or collective is left out.", r, rw.otherThreadReq))
	}
	if r == 0 && rk.Header != nil && rk.Header.StartUnixNs > 0 {
		// Calendar time of global time 0 … of the archive's first tick is
		// set once the first time is known (globalDefs.write).
		x.realtimeStart = uint64(rk.Header.StartUnixNs - clk.At(rk.Header.StartLocalNs))
	}
	return nil
}

// How the Leave of a call in progress when its process ended was placed
// (the value of attribute dtpa::unfinished on its Enter).
const (
	unfAtEnd      = 1 // at the process's end
	unfAtLeast    = 2 // when the job was interrupted, which the process outlived
	unfEndUnknown = 3 // at its Enter: nothing says when the process ended
)

// unfinished writes the MPI calls that had not returned when the process
// ended, which its footer f lists (the report's Unfinished): each an
// Enter at its entry and a Leave at the process's end, the Enter marked
// dtpa::unfinished, on its thread's location, as the Chrome export and
// the page draw them (analyzer.OpenCalls). start is the local time
// tracing started; those of threads not written (below
// MPI_THREAD_SERIALIZED) and those a damaged footer places before their
// thread's last call are left out, as the analysis leaves them out.
func (rw *rankWriter) unfinished(f *tracepb.Footer, start int64, clk *clocks.Map, threads bool) error {
	for _, u := range analyzer.OpenCalls(f, start) {
		if u.Thread != 0 && !threads {
			continue
		}
		entry := clk.At(u.Entry)
		if entry < 0 {
			continue
		}
		if err := rw.thread(u.Thread); err != nil {
			return err
		}
		if uint64(entry) < rw.loc.last {
			continue // before its thread's last call returned: damage
		}
		leave, h := entry, uint32(unfEndUnknown)
		if u.End > 0 {
			leave, h = max(entry, clk.At(u.End)), unfAtEnd
			if u.AtLeast {
				h = unfAtLeast
			}
		}
		fn := rw.defs.Function(u.Function)
		if fn == nil || fn.Name != u.Name {
			fn = &tracepb.Function{Name: u.Name}
		}
		region := rw.x.defs.region(fn)
		tin, err := rw.tick(entry)
		if err != nil {
			return err
		}
		enter := wev{kind: wevEnter, time: c64(tin), a: c32(region), c: c32(h)}
		flags := uint64(enterUnf)
		if rw.x.sym != nil && u.ReturnAddress != 0 {
			// Its return address, then, for a call that C code below
			// Python made, the thread's Python frames.
			if s := rw.x.defs.site(append([]uint64{u.ReturnAddress}, u.PythonStack...), rw.defs.Modules, rw.x.sym); s != undefinedU32 {
				flags |= enterSCL
				enter.b = c32(s)
			}
		}
		enter.u1 = c64(flags)
		tout, err := rw.tick(leave)
		if err == nil {
			err = rw.put(enter)
		}
		if err == nil {
			err = rw.put(wev{kind: wevLeave, time: c64(tout), a: c32(region)})
		}
		if err != nil {
			return err
		}
		rw.x.stats.Unfinished++
	}
	return nil
}

// crashed notes where the rank crashed, when its footer f (or the file
// beside its trace, after its end) says it did, as a marker of the
// archive (crashMarks): at the moment on the global clock, on the crashed
// thread's location, with the report's lines of it; else how its process
// ended when the footer says so (an exit without MPI_Finalize, where a
// signal found it in no MPI call), likewise. One with no time, or a time
// before the clock's origin, is left out.
func (rw *rankWriter) crashed(rk analyzer.RankTrace, f *tracepb.Footer, clk *clocks.Map) {
	x := rw.x
	m := crashMark{rank: rw.rank}
	var thread *int
	var at int64
	if c, t := analyzer.CrashOf(rw.rank, rk.Path, rk.Header, f, rw.defs.Modules, x.sym); c != nil {
		m.text, thread, at = strings.Join(c.Lines(), "\n"), c.Thread, t
	} else {
		// Not a crash: how else the process ended, an exit without
		// MPI_Finalize or a signal in no MPI call, where the trace says.
		m.text, thread, at = analyzer.EndOf(rw.rank, rk.Header, f, rw.defs.Modules, x.sym)
		m.end = true
	}
	if m.text == "" || at <= 0 {
		return
	}
	t := clk.At(at)
	if t < 0 {
		return
	}
	m.time = uint64(t)
	if thread != nil {
		for _, l := range rw.locs {
			if l.thread == uint32(*thread) {
				m.loc, m.onLoc = locationID(rw.rank, l.thread), true
			}
		}
	}
	x.marks = append(x.marks, m)
	if !x.started || m.time < x.first {
		x.first = m.time
	}
	x.started = true
	x.last = max(x.last, m.time)
}

// thread makes thread t's location the one records go to, opening it at
// its first record.
func (rw *rankWriter) thread(t uint32) error {
	for _, l := range rw.locs {
		if l.thread == t {
			rw.loc = l
			return nil
		}
	}
	w, err := rw.x.open(rw.rank, t)
	if err != nil {
		return err
	}
	rw.loc = &locWriter{thread: t, w: w, buf: make([]wev, 0, batchRecords)}
	rw.locs = append(rw.locs, rw.loc)
	return nil
}

func (rw *rankWriter) put(v wev) error {
	l := rw.loc
	l.buf = append(l.buf, v)
	l.events++
	rw.x.stats.Records++
	if len(l.buf) == cap(l.buf) {
		return l.flush()
	}
	return nil
}

func (l *locWriter) flush() error {
	err := l.w.write(l.buf)
	l.buf = l.buf[:0]
	return err
}

// tick turns a global time into an OTF2 timestamp, never before the last
// one written.
func (rw *rankWriter) tick(t int64) (uint64, error) {
	if t < 0 {
		return 0, fmt.Errorf("global time %d ns is before the clock's origin, which OTF2 cannot represent", t)
	}
	u := uint64(t)
	if l := rw.loc; u < l.last {
		rw.backwards++
		u = l.last
	} else {
		l.last = u
	}
	x := rw.x
	if !x.started || u < x.first {
		x.first = u
	}
	x.started = true
	x.last = max(x.last, u)
	return u, nil
}

func (rw *rankWriter) fn(id uint32) *fnMap {
	if int(id) < len(rw.fns) && rw.fns[id] != nil {
		return rw.fns[id]
	}
	f := rw.defs.Function(id)
	if f == nil {
		f = &tracepb.Function{Id: id, Name: fmt.Sprintf("function %d", id)}
	}
	m := &fnMap{region: rw.x.defs.region(f), op: classifyWrite(f), collOp: undefinedU32, shape: f.Collective,
		probe: mpifunc.Base(f.Name) == "Probe"}
	if f.Class == tracepb.Function_COLLECTIVE {
		m.collOp = collOpOf(f)
	}
	for int(id) >= len(rw.fns) {
		rw.fns = append(rw.fns, nil)
	}
	rw.fns[id] = m
	return m
}

// comm is the OTF2 communicator of the event's communicator, ok false
// when it has none: undefined ones, and those shared with another MPI
// world (traceformat.OtherWorld members), whose ranks OTF2 could not name
// (their calls are written without message or collective records).
func (rw *rankWriter) comm(local uint32) (uint32, bool) {
	if int(local) < len(rw.comms) && rw.comms[local] != 0 {
		c := rw.comms[local] - 1
		return c, c != undefinedComm
	}
	c := undefinedComm
	if d := rw.defs.Comm(local); d != nil && !slices.Contains(d.Members, traceformat.OtherWorld) &&
		!slices.Contains(d.RemoteMembers, traceformat.OtherWorld) {
		c = rw.x.defs.comm(d, rw.defs)
	}
	for int(local) >= len(rw.comms) {
		rw.comms = append(rw.comms, 0)
	}
	rw.comms[local] = c + 1
	return c, c != undefinedComm
}

// site is the OTF2 source code location of call site id, ok false when
// it has none.
func (rw *rankWriter) site(id uint32) (uint32, bool) {
	if rw.x.sym == nil {
		return 0, false
	}
	if int(id) < len(rw.sites) && rw.sites[id] != 0 {
		s := rw.sites[id] - 1
		return s, s != undefinedU32
	}
	s := undefinedU32
	if int(id) < len(rw.defs.CallSites) {
		s = rw.x.defs.site(rw.defs.CallSites[id], rw.defs.Modules, rw.x.sym)
	}
	for int(id) >= len(rw.sites) {
		rw.sites = append(rw.sites, 0)
	}
	rw.sites[id] = s + 1
	return s, s != undefinedU32
}

// newReq registers a request the call created under the trace's id.
func (rw *rankWriter) newReq(id uint64, p *pendReq) {
	rw.reqs[id] = append(rw.reqs[id], p)
}

// findReq returns the oldest request with the trace's id.
func (rw *rankWriter) findReq(id uint64) *pendReq {
	if q := rw.reqs[id]; len(q) > 0 {
		return q[0]
	}
	return nil
}

func (rw *rankWriter) dropReq(id uint64) {
	q := rw.reqs[id]
	if len(q) <= 1 {
		delete(rw.reqs, id)
		return
	}
	rw.reqs[id] = q[1:]
}

func u32(v int32) uint32 { return uint32(v) }

// innerGaps returns the inner gaps of e, a folded run
// (traceformat.AttrInnerGaps), on the global clock as the archive's other
// times: from its first call's entry, InnerGaps before e's entry on the
// rank's clock, to e's entry, both mapped through clk; −1 when e carries
// none. The first call is taken to have entered no earlier than the
// previous call's exit, as the analysis takes it (its gap before the run
// cannot be negative), which also keeps a value no tracer writes within
// the times the archive can hold.
func (rw *rankWriter) innerGaps(e *traceformat.Event, clk *clocks.Map) int64 {
	l := rw.loc
	inner := int64(-1)
	if e.Attr&traceformat.AttrInnerGaps != 0 && e.Attr&traceformat.AttrCalls != 0 && e.Calls > 1 {
		g := max(0, e.InnerGaps)
		if l.hasPrev {
			g = min(g, max(0, e.Entry-l.prevExit))
		} else {
			g = min(g, max(0, e.Entry))
		}
		inner = 0
		if g > 0 {
			inner = max(0, clk.At(e.Entry)-clk.At(e.Entry-g))
		}
	}
	if l.hasPrev {
		l.prevExit = max(l.prevExit, e.Entry, e.Exit)
	} else {
		l.prevExit, l.hasPrev = max(e.Entry, e.Exit), true
	}
	return inner
}

// event writes one traced call: Enter at its entry, the MPI records, Leave
// at its exit. inner ≥ 0 is a folded run's inner gaps on the global clock
// (innerGaps), −1 none.
func (rw *rankWriter) event(e *traceformat.Event, entry, exit, inner int64) error {
	fm := rw.fn(e.Func)
	tin, err := rw.tick(entry)
	if err != nil {
		return err
	}
	rw.x.stats.Calls++
	enter := wev{kind: wevEnter, time: c64(tin), a: c32(fm.region)}
	var flags uint64
	if s, ok := rw.site(e.Site); ok {
		flags |= enterSCL
		enter.b = c32(s)
	}
	if e.Attr&traceformat.AttrCalls != 0 && e.Calls > 1 {
		flags |= enterCalls
		enter.c = c32(e.Calls)
	}
	if e.Attr&traceformat.AttrPcontrol != 0 {
		flags |= enterPcontrol
		enter.d = c32(u32(e.PcLevel))
		enter.s1 = cs64(e.PcArg)
	}
	if e.Attr&traceformat.AttrFlag != 0 {
		flags |= enterFlag
		if e.Flag {
			enter.u2 = 1
		}
	}
	if b, ok := procNullBytes(e, fm.op); ok {
		// Score-P writes no message for MPI_PROC_NULL, nor its size.
		flags |= enterBytes
		enter.s1 = cs64(int64(b))
	}
	if fm.probe && e.Attr&traceformat.AttrComm != 0 && e.Attr&traceformat.AttrStatus != 0 && len(e.Status) > 0 && e.Status[0].Source >= 0 {
		// The message MPI_Probe waited for, which Score-P does not record.
		if comm, ok := rw.comm(e.Comm); ok {
			flags |= enterStatus
			enter.d = c32(comm)
			enter.u3 = c64(uint64(u32(e.Status[0].Source)) | uint64(u32(e.Status[0].Tag))<<32)
		}
	}
	if inner >= 0 && flags&enterCalls != 0 && flags&enterStatus == 0 {
		// Written when zero too: a run with its inner gaps ends one gap
		// per call, one without them a single gap. (u3 holds MPI_Probe's
		// status otherwise, which no folded run has.)
		flags |= enterInner
		enter.u3 = c64(uint64(inner))
	}
	enter.u1 = c64(flags)
	if err := rw.put(enter); err != nil {
		return err
	}
	comm, hasComm := uint32(0), false
	if e.Attr&traceformat.AttrComm != 0 {
		comm, hasComm = rw.comm(e.Comm)
	}
	if hasComm && rw.x.defs.commList[comm].inter && (fm.op == wColl || fm.op == wICollStart || fm.op == wPCollInit) {
		// OTF2's collective records have no intercommunicator roots
		// (MPI_ROOT, MPI_PROC_NULL): the calls alone are written.
		hasComm, rw.interColl = false, true
	}
	if fm.op == wMrecv || (fm.op == wIrecv && e.Attr&traceformat.AttrRecv == 0) {
		// MPI_Mrecv, MPI_Imrecv: the message of the last matched probe.
		if !hasComm && rw.loc.probe.ok {
			comm, hasComm = rw.loc.probe.comm, true
			e.Attr |= traceformat.AttrRecv
			e.RecvPeer, e.RecvTag = rw.loc.probe.src, rw.loc.probe.tag
		}
		rw.loc.probe.ok = false
	}
	// Records at the entry.
	sends := e.Attr&traceformat.AttrSend != 0 && e.SendPeer >= 0
	switch fm.op {
	case wSend, wSendrecv:
		if hasComm && sends {
			rw.x.stats.Sends++
			err = rw.put(wev{kind: wevSend, time: c64(tin), a: c32(u32(e.SendPeer)), b: c32(comm), c: c32(u32(e.SendTag)),
				u1: c64(e.SendBytes)})
		}
	case wIsend, wIrecv, wSendInit, wRecvInit:
		if e.Attr&traceformat.AttrReqs == 0 || len(e.Reqs) == 0 {
			break
		}
		p := &pendReq{kind: wNone, comm: comm, persistent: fm.op == wSendInit || fm.op == wRecvInit}
		p.active = !p.persistent
		if hasComm {
			if fm.op == wIsend || fm.op == wSendInit {
				if sends {
					p.kind, p.peer, p.tag, p.bytes = wIsend, e.SendPeer, e.SendTag, e.SendBytes
				}
			} else if e.Attr&traceformat.AttrRecv != 0 && e.RecvPeer != traceformat.ProcNull {
				p.kind, p.peer, p.tag, p.bytes = wIrecv, e.RecvPeer, e.RecvTag, e.RecvBytes
			}
		}
		rw.newReq(e.Reqs[0], p)
		if p.active {
			err = rw.startReq(p, tin)
		}
	case wStart:
		if e.Attr&traceformat.AttrReqs == 0 {
			break
		}
		for _, id := range e.Reqs {
			if p := rw.findReq(id); p != nil && p.persistent {
				p.active, p.cancelled = true, false
				if err = rw.startReq(p, tin); err != nil {
					break
				}
			}
		}
	case wColl:
		if hasComm && fm.collOp != undefinedU32 {
			err = rw.put(wev{kind: wevCollBegin, time: c64(tin)})
		}
	case wICollStart, wPCollInit:
		if e.Attr&traceformat.AttrReqs == 0 || len(e.Reqs) == 0 {
			break
		}
		p := &pendReq{kind: wNone, comm: comm, persistent: fm.op == wPCollInit}
		p.active = !p.persistent
		if hasComm && fm.collOp != undefinedU32 {
			p.kind, p.collOp = wICollStart, fm.collOp
			p.root, p.sent, p.recv = rw.collArgs(e, fm)
		}
		rw.newReq(e.Reqs[0], p)
		if p.active {
			err = rw.startReq(p, tin)
		}
	case wCancel:
		if e.Attr&traceformat.AttrReqs != 0 {
			for _, id := range e.Reqs {
				if p := rw.findReq(id); p != nil {
					p.cancelled = true
				}
			}
		}
	}
	if err != nil {
		return err
	}
	tout, err := rw.tick(exit)
	if err != nil {
		return err
	}
	// Records at the exit.
	switch fm.op {
	case wRecv, wSendrecv, wMrecv:
		src, tag := int32(-1), int32(-1)
		if e.Attr&traceformat.AttrRecv != 0 {
			src, tag = e.RecvPeer, e.RecvTag
		}
		if e.Attr&traceformat.AttrStatus != 0 && len(e.Status) > 0 && e.Status[0].Source >= 0 {
			src, tag = e.Status[0].Source, e.Status[0].Tag
		}
		if hasComm && src >= 0 {
			rw.x.stats.Recvs++
			err = rw.put(wev{kind: wevRecv, time: c64(tout), a: c32(u32(src)), b: c32(comm), c: c32(u32(tag)),
				u1: c64(e.RecvBytes)})
		}
	case wComplete:
		if e.Attr&traceformat.AttrReqs == 0 {
			break
		}
		for i, id := range e.Reqs {
			p := rw.findReq(id)
			if p == nil {
				rw.unknownReq++
				continue
			}
			var st *traceformat.Status
			if e.Attr&traceformat.AttrStatus != 0 && i < len(e.Status) {
				st = &e.Status[i]
			}
			if err = rw.completeReq(p, st, tout); err != nil {
				break
			}
			if p.persistent {
				p.active = false
			} else {
				rw.dropReq(id)
			}
		}
	case wFree:
		if e.Attr&traceformat.AttrReqs != 0 {
			for _, id := range e.Reqs {
				if p := rw.findReq(id); p != nil && (p.persistent || !p.active) {
					rw.dropReq(id)
				}
			}
		}
	case wMprobe:
		if hasComm && e.Attr&traceformat.AttrStatus != 0 && len(e.Status) > 0 && e.Status[0].Source >= 0 &&
			(e.Attr&traceformat.AttrFlag == 0 || e.Flag) {
			rw.loc.probe.ok, rw.loc.probe.comm = true, comm
			rw.loc.probe.src, rw.loc.probe.tag = e.Status[0].Source, e.Status[0].Tag
		}
	case wColl:
		if hasComm && fm.collOp != undefinedU32 {
			root, sent, recv := rw.collArgs(e, fm)
			rw.x.stats.Colls++
			err = rw.put(wev{kind: wevCollEnd, time: c64(tout), d: c32(fm.collOp), b: c32(comm), a: c32(root),
				u1: c64(sent), u3: c64(recv)})
		}
	}
	if err != nil {
		return err
	}
	if e.Attr&traceformat.AttrNewComm != 0 {
		if c, ok := rw.comm(e.NewComm); ok {
			rw.x.defs.commList[c].created = true
			if err := rw.put(wev{kind: wevCommCreate, time: c64(tout), b: c32(c)}); err != nil {
				return err
			}
		}
	}
	return rw.put(wev{kind: wevLeave, time: c64(tout), a: c32(fm.region)})
}

// collArgs are a collective call's root (undefinedU32 when it has none)
// and sizes sent and received.
func (rw *rankWriter) collArgs(e *traceformat.Event, fm *fnMap) (root uint32, sent, recv uint64) {
	root = undefinedU32
	if e.Attr&traceformat.AttrRoot != 0 && e.Root >= 0 &&
		(fm.shape == tracepb.Function_ONE_TO_ALL || fm.shape == tracepb.Function_ALL_TO_ONE) {
		root = uint32(e.Root)
	}
	if e.Attr&traceformat.AttrSendBytes != 0 {
		sent = e.SendBytes
	}
	if e.Attr&traceformat.AttrRecvBytes != 0 {
		recv = e.RecvBytes
	}
	return root, sent, recv
}

// startReq writes the start of request p at time t: MpiIsend,
// MpiIrecvRequest or NonBlockingCollectiveRequest under a new OTF2
// request id.
func (rw *rankWriter) startReq(p *pendReq, t uint64) error {
	rw.nextReq++
	p.id, p.loc = rw.nextReq, rw.loc
	switch p.kind {
	case wIsend:
		rw.x.stats.Sends++
		return rw.put(wev{kind: wevIsend, time: c64(t), a: c32(u32(p.peer)), b: c32(p.comm), c: c32(u32(p.tag)),
			u1: c64(p.bytes), u2: c64(p.id)})
	case wIrecv:
		return rw.put(wev{kind: wevIrecvReq, time: c64(t), u2: c64(p.id)})
	case wICollStart:
		return rw.put(wev{kind: wevNBCReq, time: c64(t), u2: c64(p.id)})
	}
	return nil
}

// completeReq writes the completion of request p at time t with status
// st (nil: none recorded).
func (rw *rankWriter) completeReq(p *pendReq, st *traceformat.Status, t uint64) error {
	if !p.active {
		return nil
	}
	if p.loc != rw.loc && p.kind != wNone {
		// OTF2 pairs a request's start and completion within one
		// location, and the start is written already: a receive that
		// another thread completed is written there as a receive (its
		// message stays matched); a send's or a collective's completion
		// is left out.
		rw.otherThreadReq++
		if p.kind != wIrecv || p.cancelled {
			return nil
		}
		src, tag := p.peer, p.tag
		if st != nil && st.Source >= 0 {
			src, tag = st.Source, st.Tag
		}
		if src < 0 {
			return nil
		}
		rw.x.stats.Recvs++
		return rw.put(wev{kind: wevRecv, time: c64(t), a: c32(u32(src)), b: c32(p.comm), c: c32(u32(tag)), u1: c64(p.bytes)})
	}
	switch p.kind {
	case wIsend:
		if p.cancelled {
			return rw.put(wev{kind: wevCancelled, time: c64(t), u2: c64(p.id)})
		}
		return rw.put(wev{kind: wevIsendDone, time: c64(t), u2: c64(p.id)})
	case wIrecv:
		src, tag := p.peer, p.tag
		if st != nil && st.Source >= 0 {
			src, tag = st.Source, st.Tag
		}
		if p.cancelled || src < 0 {
			return rw.put(wev{kind: wevCancelled, time: c64(t), u2: c64(p.id)})
		}
		rw.x.stats.Recvs++
		return rw.put(wev{kind: wevIrecv, time: c64(t), a: c32(u32(src)), b: c32(p.comm), c: c32(u32(tag)),
			u1: c64(p.bytes), u2: c64(p.id)})
	case wICollStart:
		rw.x.stats.Colls++
		return rw.put(wev{kind: wevNBCDone, time: c64(t), d: c32(p.collOp), b: c32(p.comm), a: c32(p.root),
			u1: c64(p.sent), u3: c64(p.recv), u2: c64(p.id)})
	}
	return nil
}
