// Package tracetest builds consistent multi-rank trace files event by event
// with exact timestamps, so that analyzer tests can compute the expected
// characteristics by hand.
//
//	run := tracetest.NewRun(2)
//	r0, r1 := run.Rank(0), run.Rank(1)
//	r0.Init(1 * us)
//	r1.Init(1 * us)
//	r0.Compute(200 * ms)          // rank 0 computes 0.2 s …
//	r0.Send(1, 7, 8, 10*us)       // … then sends to rank 1
//	r1.Recv(0, 7, 8, 200*ms+20*us) // rank 1 waited 0.2 s in MPI_Recv
//	r0.Finalize(1 * us)
//	r1.Finalize(1 * us)
//	paths, err := run.WriteDir(dir, "app") // app.0.trc, app.1.trc
//
// Each rank has a time cursor (ns on the rank's true clock, starting at 0).
// Every call is entered at the cursor and lasts the given duration; the
// cursor moves to its exit. Clock skew can be applied per rank
// (Rank.Skew), in which case recorded times are offset + (1+drift)·true and
// clock-sync samples are generated that let alignment undo it exactly.
package tracetest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// Durations in nanoseconds, for readable fixtures.
const (
	NS = int64(1)
	US = 1000 * NS
	MS = 1000 * US
	S  = 1000 * MS
)

// Run is a multi-rank run under construction.
type Run struct {
	Program string
	RunID   []byte
	// ThreadLevel is the thread support the header records
	// (MPI_THREAD_SINGLE = 0 … MPI_THREAD_MULTIPLE = 3).
	ThreadLevel uint32
	// BatchJob is the batch system's job the headers name ("" none).
	BatchJob string
	// Start is when the run started on the calendar (the headers'
	// StartUnixNs); zero: 2026-01-01 00:00 UTC.
	Start time.Time
	ranks []*Rank
	comms []*Comm
	funcs map[string]uint32
	order []string
}

// Comm is a communicator of the run: a global id and its members (world
// ranks in communicator-rank order).
type Comm struct {
	ID      uint64
	Members []int
}

// Rank is one process's event stream under construction.
type Rank struct {
	n           int
	r           *Run
	now         int64
	events      []traceformat.Event
	sites       map[string]uint32 // key: site name
	siteDef     []*tracepb.CallSite
	comms       map[*Comm]uint32 // local index of each communicator known here
	commDef     []*tracepb.Communicator
	nextReq     uint64
	reqs        map[uint64]reqInfo
	offset      int64   // injected clock offset, ns
	drift       float64 // injected drift, ppm
	noFoot      bool
	noEnd       bool  // the footer has no end_local_ns (NoEndTime)
	interrupted int64 // true time of the job's interrupt (InterruptedAt), 0 none
	// FooterTimes: the footer's end and interrupt as given.
	rawTimes               bool
	rawEnd, rawInterrupted int64
	bias                   uint64            // load bias of the program (address-space randomization)
	mods                   []*tracepb.Module // after the program's (Modules)
	stop                   tracepb.Footer_StopReason
	unf                    []unfinished
	crash                  *tracepb.Crash    // the footer's (CrashedWith)
	exit                   *tracepb.ExitCall // the footer's (Exited)
	where                  *tracepb.Crash    // the footer's interrupted (Signalled)
	whereAt                int64             // true time of the signal (SignalledAt), 0 as where says
	crashAt                int64             // true time of the crash (CrashedAt), 0 as c says
	syncs                  bool
	host                   string // "" is testhost
	program                string // "" is the run's Program
	// thread is the thread making the calls (Thread); cursors holds the
	// other threads' time cursors.
	thread  uint32
	cursors map[uint32]int64
}

// unfinished is a call in progress for the footer, entered at true time
// at (-1: u's local entry time is taken as it is).
type unfinished struct {
	u  *tracepb.UnfinishedCall
	at int64
}

type reqInfo struct {
	recv       bool
	persistent bool
	cancelled  bool // MPI_Cancel succeeded (Cancel)
	// status to report at completion (receives)
	st traceformat.Status
}

// Req is a request id returned by nonblocking calls.
type Req uint64

// NewRun starts a run of size ranks. The world communicator exists already.
func NewRun(size int) *Run {
	r := &Run{Program: "/tmp/app", funcs: map[string]uint32{}}
	sum := sha256.Sum256([]byte(fmt.Sprintf("tracetest-run-%d", size)))
	r.RunID = sum[:16]
	world := &Comm{ID: 0}
	for i := 0; i < size; i++ {
		world.Members = append(world.Members, i)
	}
	r.comms = append(r.comms, world)
	for i := 0; i < size; i++ {
		rk := &Rank{n: i, r: r, sites: map[string]uint32{}, comms: map[*Comm]uint32{}, nextReq: 1,
			reqs: map[uint64]reqInfo{}, stop: tracepb.Footer_FINALIZE, syncs: true}
		rk.comms[world] = traceformat.CommWorld
		rk.commDef = append(rk.commDef,
			&tracepb.Communicator{Local: traceformat.CommWorld, Id: 0, Members: u32s(world.Members)},
			&tracepb.Communicator{Local: traceformat.CommSelf, Id: traceformat.SelfCommID(uint32(i)), Members: []uint32{uint32(i)}})
		r.ranks = append(r.ranks, rk)
	}
	return r
}

// Size is the number of ranks.
func (r *Run) Size() int { return len(r.ranks) }

// Rank returns rank i.
func (r *Run) Rank(i int) *Rank { return r.ranks[i] }

// World is MPI_COMM_WORLD.
func (r *Run) World() *Comm { return r.comms[0] }

// NewComm declares a communicator with the given members (world ranks, in
// communicator-rank order). Each member must create it with CommCreate (or
// another creating call) before using it.
func (r *Run) NewComm(members ...int) *Comm {
	c := &Comm{ID: uint64(len(r.comms)) * 1000, Members: members}
	r.comms = append(r.comms, c)
	return c
}

func (r *Run) fn(name string) uint32 {
	id, ok := r.funcs[name]
	if !ok {
		id = uint32(len(r.order))
		r.funcs[name] = id
		r.order = append(r.order, name)
	}
	return id
}

func u32s(v []int) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}

// Skew makes the rank's recorded clock read offset + (1 + driftPPM·1e-6)·t
// at true time t, as DT_CLOCK_SKEW does in the tracer.
func (k *Rank) Skew(offset int64, driftPPM float64) *Rank {
	k.offset, k.drift = offset, driftPPM
	return k
}

// NoSync leaves the rank without clock-sync samples.
func (k *Rank) NoSync() *Rank { k.syncs = false; return k }

// Host sets the host name the rank's header records (testhost when not
// set): the node map of a run spread over hosts.
func (k *Rank) Host(name string) *Rank { k.host = name; return k }

// Program makes the rank run another program than the run's (an MPMD
// job): its header and executable module name path, and WriteDir names
// its file after it.
func (k *Rank) Program(path string) *Rank { k.program = path; return k }

// Crash leaves the rank's file without a footer, as a killed process would.
func (k *Rank) Crash() *Rank { k.noFoot = true; return k }

// NoEndTime leaves the footer's end of the process unset, as in the
// footer dtrun recovers for a process killed before any handler ran.
func (k *Rank) NoEndTime() *Rank { k.noEnd = true; return k }

// FooterTimes sets the footer's end and interrupt to the local clock
// readings end and interrupted as they are (0: unset): a damaged or
// hostile footer.
func (k *Rank) FooterTimes(end, interrupted int64) *Rank {
	k.rawTimes, k.rawEnd, k.rawInterrupted = true, end, interrupted
	return k
}

// InterruptedAt leaves the footer's end unset and gives instead the
// moment, true time t, at which the job was interrupted while the process
// lived (Footer.interrupted_local_ns), as dtrun recovers it.
func (k *Rank) InterruptedAt(t int64) *Rank { k.noEnd, k.interrupted = true, t; return k }

// CrashedWith gives the footer crash c (Footer.crash, as the tracer's
// handler of a fault signal writes it) and the stop reason SIGNAL.
func (k *Rank) CrashedWith(c *tracepb.Crash) *Rank {
	k.crash, k.stop = c, tracepb.Footer_SIGNAL
	return k
}

// Exited gives the footer exit call x (Footer.exit, as the tracer's exit
// handler writes it for a process that exits without MPI_Finalize) and
// stop reason EXIT.
func (k *Rank) Exited(x *tracepb.ExitCall) *Rank {
	k.exit, k.stop = x, tracepb.Footer_EXIT
	return k
}

// Signalled gives the footer where the fatal signal that ended the
// process found its thread (Footer.interrupted, c: the signal, the
// stack) and stop reason SIGNAL.
func (k *Rank) Signalled(c *tracepb.Crash) *Rank {
	k.where, k.stop = c, tracepb.Footer_SIGNAL
	return k
}

// SignalledAt is Signalled, the signal's time (Crash.local_ns) the rank's
// clock reading at true time t.
func (k *Rank) SignalledAt(t int64, c *tracepb.Crash) *Rank {
	k.whereAt = t
	return k.Signalled(c)
}

// CrashedAt is CrashedWith, the crash's time (Crash.local_ns) the rank's
// clock reading at true time t.
func (k *Rank) CrashedAt(t int64, c *tracepb.Crash) *Rank {
	k.crashAt = t
	return k.CrashedWith(c)
}

// StopReason sets the footer's stop reason (default FINALIZE).
func (k *Rank) StopReason(s tracepb.Footer_StopReason) *Rank { k.stop = s; return k }

// Unfinished adds a call of fn to the footer's calls in progress
// (Footer.unfinished, as a fatal signal's handler lists them): made by
// thread, entered at true time entered, returning to pc. The footer's
// end is the rank's cursor when the run is written.
func (k *Rank) Unfinished(thread uint32, fn string, entered int64, pc uint64) *Rank {
	k.unf = append(k.unf, unfinished{&tracepb.UnfinishedCall{Thread: thread, Function: k.r.fn(fn), Name: fn, ReturnAddress: pc}, entered})
	return k
}

// UnfinishedPython gives the footer's last call in progress the thread's
// Python frames (UnfinishedCall.python_stack: a call that C code below
// Python made).
func (k *Rank) UnfinishedPython(py ...uint64) *Rank {
	if n := len(k.unf); n > 0 {
		k.unf[n-1].u.PythonStack = py
	}
	return k
}

// UnfinishedRaw adds u to the footer's calls in progress as it is (times
// on the rank's local clock): a damaged or hostile footer.
func (k *Rank) UnfinishedRaw(u *tracepb.UnfinishedCall) *Rank {
	k.unf = append(k.unf, unfinished{u, -1})
	return k
}

// Now is the rank's time cursor (true time, ns).
func (k *Rank) Now() int64 { return k.now }

// At moves the cursor to t, which must not be before the cursor.
func (k *Rank) At(t int64) *Rank {
	if t < k.now {
		panic(fmt.Sprintf("tracetest: rank %d: At(%d) before the cursor %d", k.n, t, k.now))
	}
	k.now = t
	return k
}

// Thread makes the calls that follow thread t's (0 is the thread that
// called MPI_Init, the default). Each thread has its own time cursor,
// starting at the cursor of the thread that was current when it is first
// named. The trace holds the calls in the order they are recorded, in one
// batch per run of consecutive calls of a thread: recording a thread's
// calls after later calls of another thread models a thread whose buffer
// was handed over late.
func (k *Rank) Thread(t uint32) *Rank {
	if k.cursors == nil {
		k.cursors = map[uint32]int64{}
	}
	k.cursors[k.thread] = k.now
	if c, ok := k.cursors[t]; ok {
		k.now = c
	}
	k.thread = t
	return k
}

// Compute advances the cursor by d (time outside MPI).
func (k *Rank) Compute(d int64) *Rank { k.now += d; return k }

// Opt modifies an event before it is recorded.
type Opt func(k *Rank, e *traceformat.Event)

// Site names the call site of the event; events with the same site name on
// a rank share a call-site id. The default site is the function name.
// pcs are the recorded return addresses (default: a made-up address per
// site name).
func Site(name string, pcs ...uint64) Opt {
	return func(k *Rank, e *traceformat.Event) { e.Site = k.site(name, pcs) }
}

// Status overrides the status recorded for a receive (the actual source and
// tag, e.g. for ANY_SOURCE receives).
func Status(source, tag int32) Opt {
	return func(k *Rank, e *traceformat.Event) {
		e.Attr |= traceformat.AttrStatus
		e.Status = []traceformat.Status{{Source: source, Tag: tag}}
	}
}

// Folded makes the event stand for a run of n consecutive unsuccessful
// polls (a test or probe that found nothing) of one call site, as the
// tracer folds them (traceformat.AttrCalls): the event's duration is then
// their summed time inside MPI.
func Folded(n uint32) Opt {
	return func(k *Rank, e *traceformat.Event) {
		e.Attr |= traceformat.AttrCalls
		e.Calls = n
	}
}

// FoldedGaps is Folded with the run's inner gaps (format 2.1,
// traceformat.AttrInnerGaps): the n calls had inner ns between them in
// all, outside MPI. The run's first call entered inner before the event's
// entry, so the computation before the event must include inner. On a
// skewed rank (Skew) the file records them on the rank's clock.
func FoldedGaps(n uint32, inner int64) Opt {
	return func(k *Rank, e *traceformat.Event) {
		e.Attr |= traceformat.AttrCalls | traceformat.AttrInnerGaps
		e.Calls, e.InnerGaps = n, inner
	}
}

// On sets the communicator of the event.
func On(c *Comm) Opt {
	return func(k *Rank, e *traceformat.Event) {
		local, ok := k.comms[c]
		if !ok {
			panic(fmt.Sprintf("tracetest: rank %d uses a communicator it has not created", k.n))
		}
		e.Attr |= traceformat.AttrComm
		e.Comm = local
	}
}

func (k *Rank) site(name string, pcs []uint64) uint32 {
	if id, ok := k.sites[name]; ok {
		return id
	}
	id := uint32(len(k.siteDef))
	if len(pcs) == 0 {
		h := sha256.Sum256([]byte(name))
		pcs = []uint64{0x400000 + uint64(h[0])<<8 + uint64(h[1])}
	}
	k.sites[name] = id
	k.siteDef = append(k.siteDef, &tracepb.CallSite{Id: id, Pcs: pcs})
	return id
}

// Call records an arbitrary MPI call entered at the cursor and lasting dur.
// Attributes come from e and the options.
func (k *Rank) Call(name string, dur int64, e traceformat.Event, opts ...Opt) *Rank {
	e.Func = k.r.fn(name)
	if e.Thread == 0 {
		e.Thread = k.thread
	}
	e.Entry = k.now
	e.Exit = k.now + dur
	e.Site = k.site(name, nil)
	e.Reqs = append([]uint64(nil), e.Reqs...)
	e.Status = append([]traceformat.Status(nil), e.Status...)
	if e.Attr&traceformat.AttrComm == 0 && needsComm(name) {
		e.Attr |= traceformat.AttrComm
		e.Comm = traceformat.CommWorld
	}
	for _, o := range opts {
		o(k, &e)
	}
	k.events = append(k.events, e)
	k.now = e.Exit
	return k
}

func needsComm(name string) bool {
	in := mpifunc.Classify(name)
	switch name {
	case "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall",
		"MPI_Testany", "MPI_Testsome", "MPI_Start", "MPI_Startall", "MPI_Request_free", "MPI_Cancel":
		return false
	}
	return in.Class != tracepb.Function_SYSTEM
}

// Init records MPI_Init.
func (k *Rank) Init(dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Init", dur, traceformat.Event{}, opts...)
}

// Finalize records MPI_Finalize.
func (k *Rank) Finalize(dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Finalize", dur, traceformat.Event{}, opts...)
}

// Pcontrol records MPI_Pcontrol(level, arg): 100/101 enter/leave interval
// arg, 102/103 start/end sequential section arg.
func (k *Rank) Pcontrol(level int32, arg int64, opts ...Opt) *Rank {
	return k.Call("MPI_Pcontrol", 0, traceformat.Event{Attr: traceformat.AttrPcontrol, PcLevel: level, PcArg: arg}, opts...)
}

// Send records a blocking MPI_Send.
func (k *Rank) Send(dest, tag int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.sendLike("MPI_Send", dest, tag, bytes, dur, opts)
}

// Ssend records a blocking MPI_Ssend.
func (k *Rank) Ssend(dest, tag int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.sendLike("MPI_Ssend", dest, tag, bytes, dur, opts)
}

func (k *Rank) sendLike(name string, dest, tag int32, bytes uint64, dur int64, opts []Opt) *Rank {
	return k.Call(name, dur, traceformat.Event{
		Attr:     traceformat.AttrSend | traceformat.AttrSendBytes,
		SendPeer: dest, SendTag: tag, SendBytes: bytes}, opts...)
}

// Recv records a blocking MPI_Recv. Its status is (src, tag) unless a
// Status option says otherwise (required for AnySource/AnyTag).
func (k *Rank) Recv(src, tag int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Recv", dur, traceformat.Event{
		Attr:     traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrStatus,
		RecvPeer: src, RecvTag: tag, RecvBytes: bytes,
		Status: []traceformat.Status{{Source: src, Tag: tag}}}, opts...)
}

// Sendrecv records MPI_Sendrecv.
func (k *Rank) Sendrecv(dest, stag int32, sbytes uint64, src, rtag int32, rbytes uint64, dur int64, opts ...Opt) *Rank {
	return k.sendrecvLike("MPI_Sendrecv", dest, stag, sbytes, src, rtag, rbytes, dur, opts)
}

// SendrecvReplace records MPI_Sendrecv_replace (one buffer of bytes).
func (k *Rank) SendrecvReplace(dest, stag int32, src, rtag int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.sendrecvLike("MPI_Sendrecv_replace", dest, stag, bytes, src, rtag, bytes, dur, opts)
}

func (k *Rank) sendrecvLike(name string, dest, stag int32, sbytes uint64, src, rtag int32, rbytes uint64, dur int64, opts []Opt) *Rank {
	return k.Call(name, dur, traceformat.Event{
		Attr: traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrRecv |
			traceformat.AttrRecvBytes | traceformat.AttrStatus,
		SendPeer: dest, SendTag: stag, SendBytes: sbytes, RecvPeer: src, RecvTag: rtag, RecvBytes: rbytes,
		Status: []traceformat.Status{{Source: src, Tag: rtag}}}, opts...)
}

// Isend records MPI_Isend and returns its request.
func (k *Rank) Isend(dest, tag int32, bytes uint64, dur int64, opts ...Opt) Req {
	return k.isendLike("MPI_Isend", dest, tag, bytes, dur, opts)
}

// Issend records MPI_Issend (synchronous) and returns its request.
func (k *Rank) Issend(dest, tag int32, bytes uint64, dur int64, opts ...Opt) Req {
	return k.isendLike("MPI_Issend", dest, tag, bytes, dur, opts)
}

func (k *Rank) isendLike(name string, dest, tag int32, bytes uint64, dur int64, opts []Opt) Req {
	id := k.newReq(reqInfo{})
	k.Call(name, dur, traceformat.Event{
		Attr:     traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrReqs,
		SendPeer: dest, SendTag: tag, SendBytes: bytes, Reqs: []uint64{id}}, opts...)
	return Req(id)
}

// Irecv records MPI_Irecv and returns its request. The status reported at
// completion is (src, tag), or (actualSrc, actualTag) when given.
func (k *Rank) Irecv(src, tag int32, bytes uint64, dur int64, actual ...int32) Req {
	st := traceformat.Status{Source: src, Tag: tag}
	if len(actual) == 2 {
		st = traceformat.Status{Source: actual[0], Tag: actual[1]}
	}
	id := k.newReq(reqInfo{recv: true, st: st})
	k.Call("MPI_Irecv", dur, traceformat.Event{
		Attr:     traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrReqs,
		RecvPeer: src, RecvTag: tag, RecvBytes: bytes, Reqs: []uint64{id}})
	return Req(id)
}

// IrecvOn is Irecv on a communicator other than WORLD; actual as Irecv's.
func (k *Rank) IrecvOn(c *Comm, src, tag int32, bytes uint64, dur int64, actual ...int32) Req {
	st := traceformat.Status{Source: src, Tag: tag}
	if len(actual) == 2 {
		st = traceformat.Status{Source: actual[0], Tag: actual[1]}
	}
	id := k.newReq(reqInfo{recv: true, st: st})
	k.Call("MPI_Irecv", dur, traceformat.Event{
		Attr:     traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrReqs,
		RecvPeer: src, RecvTag: tag, RecvBytes: bytes, Reqs: []uint64{id}}, On(c))
	return Req(id)
}

// Isendrecv records MPI_Isendrecv (MPI 4): a send to dest with stag and a
// receive from src with rtag, completed together by one request.
func (k *Rank) Isendrecv(dest, stag int32, sbytes uint64, src, rtag int32, rbytes uint64, dur int64) Req {
	id := k.newReq(reqInfo{recv: true, st: traceformat.Status{Source: src, Tag: rtag}})
	k.Call("MPI_Isendrecv", dur, traceformat.Event{
		Attr: traceformat.AttrSend | traceformat.AttrRecv | traceformat.AttrSendBytes | traceformat.AttrRecvBytes |
			traceformat.AttrReqs,
		SendPeer: dest, SendTag: stag, RecvPeer: src, RecvTag: rtag, SendBytes: sbytes, RecvBytes: rbytes,
		Reqs: []uint64{id}})
	return Req(id)
}

func (k *Rank) newReq(in reqInfo) uint64 {
	id := k.nextReq
	k.nextReq++
	k.reqs[id] = in
	return id
}

// Wait records MPI_Wait completing req.
func (k *Rank) Wait(req Req, dur int64, opts ...Opt) *Rank {
	return k.complete("MPI_Wait", []Req{req}, dur, opts)
}

// Waitall records MPI_Waitall completing reqs.
func (k *Rank) Waitall(reqs []Req, dur int64, opts ...Opt) *Rank {
	return k.complete("MPI_Waitall", reqs, dur, opts)
}

// Waitany records MPI_Waitany completing req.
func (k *Rank) Waitany(req Req, dur int64, opts ...Opt) *Rank {
	return k.complete("MPI_Waitany", []Req{req}, dur, opts)
}

// Test records MPI_Test; done says whether it completed req.
func (k *Rank) Test(req Req, done bool, dur int64, opts ...Opt) *Rank {
	var reqs []Req
	if done {
		reqs = []Req{req}
	}
	opts = append(opts, func(k *Rank, e *traceformat.Event) { e.Attr |= traceformat.AttrFlag; e.Flag = done })
	return k.complete("MPI_Test", reqs, dur, opts)
}

func (k *Rank) complete(name string, reqs []Req, dur int64, opts []Opt) *Rank {
	e := traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrStatus}
	for _, r := range reqs {
		in, ok := k.reqs[uint64(r)]
		if !ok {
			panic(fmt.Sprintf("tracetest: rank %d completes unknown request %d", k.n, r))
		}
		if !in.persistent {
			delete(k.reqs, uint64(r))
		}
		e.Reqs = append(e.Reqs, uint64(r))
		st := traceformat.Status{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}
		switch {
		case in.cancelled && !in.recv:
			st.Tag = traceformat.Cancelled
		case in.recv && !in.cancelled:
			st = in.st
		}
		e.Status = append(e.Status, st)
	}
	return k.Call(name, dur, e, opts...)
}

// Barrier records MPI_Barrier on WORLD (or the communicator given with On).
func (k *Rank) Barrier(dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Barrier", dur, traceformat.Event{}, opts...)
}

// Allreduce records MPI_Allreduce of bytes.
func (k *Rank) Allreduce(bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Allreduce", dur, traceformat.Event{
		Attr: traceformat.AttrSendBytes | traceformat.AttrRecvBytes, SendBytes: bytes, RecvBytes: bytes}, opts...)
}

// Bcast records MPI_Bcast from root.
func (k *Rank) Bcast(root int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Bcast", dur, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrSendBytes, Root: root, SendBytes: bytes}, opts...)
}

// Reduce records MPI_Reduce to root.
func (k *Rank) Reduce(root int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Reduce", dur, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrSendBytes, Root: root, SendBytes: bytes}, opts...)
}

// CommSplit records MPI_Comm_split of parent (nil = WORLD) creating c, of
// which this rank must be a member.
func (k *Rank) CommSplit(parent, c *Comm, dur int64) *Rank {
	if parent == nil {
		parent = k.r.World()
	}
	me := -1
	for i, m := range c.Members {
		if m == k.n {
			me = i
		}
	}
	if me < 0 {
		panic(fmt.Sprintf("tracetest: rank %d is not a member of the communicator it creates", k.n))
	}
	local := uint32(len(k.commDef))
	k.comms[c] = local
	k.commDef = append(k.commDef, &tracepb.Communicator{Local: local, Id: c.ID, Members: u32s(c.Members),
		Parent: k.comms[parent], CreatedBy: k.r.fn("MPI_Comm_split")})
	return k.Call("MPI_Comm_split", dur, traceformat.Event{Attr: traceformat.AttrNewComm, NewComm: local}, On(parent))
}

// Events is the number of events recorded so far on the rank.
func (k *Rank) Events() int { return len(k.events) }

// local converts a true time to the rank's (skewed) recorded clock.
func (k *Rank) local(t int64) int64 {
	return k.offset + t + int64(float64(t)*k.drift*1e-6)
}

func (r *Run) start() time.Time {
	if r.Start.IsZero() {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return r.Start
}

// Bytes encodes rank i's trace file.
func (r *Run) Bytes(i int) ([]byte, error) {
	k := r.ranks[i]
	prog := cmp.Or(k.program, r.Program)
	var buf bytes.Buffer
	hdr := &tracepb.Header{
		Rank: uint32(i), WorldSize: uint32(len(r.ranks)), Hostname: cmp.Or(k.host, "testhost"), Pid: uint32(1000 + i),
		RunId: r.RunID, Program: prog, Args: []string{prog},
		StartUnixNs: r.start().UnixNano(), StartLocalNs: k.local(0),
		Clock:         &tracepb.Clock{Source: tracepb.Clock_SYNTHETIC, InjectedOffsetNs: k.offset, InjectedDriftPpm: k.drift},
		TracerVersion: "tracetest", Params: &tracepb.TracerParams{UserStackSize: 1, MaxTraceSizeMb: 500},
		MpiImplementation: "synthetic", ThreadLevel: r.ThreadLevel, BatchJob: r.BatchJob,
	}
	w, err := traceformat.NewWriter(&buf, hdr, traceformat.WriterOptions{})
	if err != nil {
		return nil, err
	}
	sites := k.siteDef
	if k.bias != 0 {
		sites = nil
		for _, s := range k.siteDef {
			c := &tracepb.CallSite{Id: s.Id}
			for _, pc := range s.Pcs {
				c.Pcs = append(c.Pcs, pc+k.bias)
			}
			sites = append(sites, c)
		}
	}
	defs := &tracepb.Definitions{Communicators: k.commDef, CallSites: sites,
		Modules: []*tracepb.Module{{Id: 0, Path: prog, Start: 0x400000 + k.bias, End: 0x500000 + k.bias, LoadBias: k.bias}}}
	for j, m := range k.mods {
		m := proto.Clone(m).(*tracepb.Module)
		m.Id = uint32(j + 1)
		defs.Modules = append(defs.Modules, m)
	}
	for id, name := range r.order {
		defs.Functions = append(defs.Functions, mpifunc.Function(uint32(id), name))
	}
	if err := w.WriteDefinitions(defs); err != nil {
		return nil, err
	}
	end := k.now
	if k.syncs && i != 0 {
		if err := w.WriteClockSync(k.syncSamples(r.ranks[0], tracepb.ClockSync_INIT, 0)); err != nil {
			return nil, err
		}
	}
	var b traceformat.Builder
	for _, e := range k.events {
		if e.Attr&traceformat.AttrInnerGaps != 0 {
			// Measured on the rank's clock, as its times are.
			e.InnerGaps = k.local(e.Entry) - k.local(e.Entry-e.InnerGaps)
		}
		e.Entry, e.Exit = k.local(e.Entry), k.local(e.Exit)
		if b.Len() > 0 && e.Thread != b.Thread {
			// A batch holds the events of one thread.
			if err := w.WriteBatch(&b); err != nil {
				return nil, err
			}
			b.Reset()
		}
		b.Append(&e)
		if b.Len() == 4096 {
			if err := w.WriteBatch(&b); err != nil {
				return nil, err
			}
			b.Reset()
		}
	}
	if err := w.WriteBatch(&b); err != nil {
		return nil, err
	}
	if k.noFoot {
		return buf.Bytes(), nil
	}
	if k.syncs && i != 0 {
		if err := w.WriteClockSync(k.syncSamples(r.ranks[0], tracepb.ClockSync_FINALIZE, end)); err != nil {
			return nil, err
		}
	}
	var unf []*tracepb.UnfinishedCall
	for _, c := range k.unf {
		if c.at >= 0 {
			c.u.EntryLocalNs = k.local(c.at)
		}
		unf = append(unf, c.u)
	}
	if k.where != nil && k.whereAt > 0 {
		k.where.LocalNs = k.local(k.whereAt)
	}
	if k.crash != nil && k.crashAt > 0 {
		k.crash.LocalNs = k.local(k.crashAt)
	}
	ft := &tracepb.Footer{EventCount: uint64(len(k.events)), StopReason: k.stop, EndLocalNs: k.local(end), Unfinished: unf, Crash: k.crash, Exit: k.exit, Interrupted: k.where}
	if k.noEnd {
		ft.EndLocalNs = 0
	}
	if k.interrupted > 0 {
		ft.InterruptedLocalNs = k.local(k.interrupted)
	}
	if k.rawTimes {
		ft.EndLocalNs, ft.InterruptedLocalNs = k.rawEnd, k.rawInterrupted
	}
	if err := w.Close(ft); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// syncSamples makes ping-pong samples against ref around true time t: five
// symmetric round trips of 2 µs, whose minimum-RTT offset estimate is exact.
func (k *Rank) syncSamples(ref *Rank, phase tracepb.ClockSync_Phase, t int64) *tracepb.ClockSync {
	c := &tracepb.ClockSync{Phase: phase, Reference: 0}
	for j := int64(0); j < 5; j++ {
		send := t + j*10*US
		rtt := 2*US + j*500 // the first sample has the smallest round trip
		c.LocalSendNs = append(c.LocalSendNs, k.local(send))
		c.RemoteNs = append(c.RemoteNs, ref.local(send+rtt/2))
		c.LocalRecvNs = append(c.LocalRecvNs, k.local(send+rtt))
	}
	return c
}

// WriteDir writes <app>.<rank>.trc for every rank into dir (a rank given
// its own Program: that program's name for <app>) and returns the paths in
// rank order.
func (r *Run) WriteDir(dir, app string) ([]string, error) {
	var paths []string
	for i := range r.ranks {
		data, err := r.Bytes(i)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", i, err)
		}
		name := app
		if k := r.ranks[i]; k.program != "" {
			name = filepath.Base(k.program)
		}
		p := filepath.Join(dir, fmt.Sprintf("%s.%d.trc", name, i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Functions lists the function names used so far, sorted (for tests).
func (r *Run) Functions() []string {
	out := append([]string(nil), r.order...)
	sort.Strings(out)
	return out
}
