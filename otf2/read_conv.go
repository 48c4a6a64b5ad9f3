package otf2

import (
	"fmt"
	"math"
	"strings"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// converter turns the events of one location (an MPI rank's master
// thread) into the MPI calls of our trace format: the outermost MPI
// region entered and left is one call, and the MPI records between its
// enter and leave give the call's attributes. Calls are held in a queue
// until every nonblocking receive among them has completed, because OTF2
// records a receive's source, tag, communicator and size only at its
// completion (MPI_IRECV), not at MPI_Irecv (MPI_IRECV_REQUEST).
type converter struct {
	*rankDefs
	d      *defs
	rank   int
	thread uint32 // the thread of the location: 0 its rank's master thread
	rc     *rankComms
	w      *traceformat.Writer
	b      traceformat.Builder

	stack   []uint32 // open regions
	inCall  bool
	callAt  int // depth of the call's region in stack
	cur     traceformat.Event
	curFn   *fnInfo
	sawColl bool // a collective end record in the current call
	// The bytes of the current call if it is addressed to MPI_PROC_NULL
	// (attribute dtpa::bytes).
	procNullBytes    uint64
	hasProcNullBytes bool

	pend     []traceformat.Event // calls not yet written
	pendBase int                 // absolute index of pend[0]
	irecvAt  map[uint64]int      // OTF2 request id of an uncompleted Irecv → absolute index of its call
	collAt   map[uint64]int      // the same of an uncompleted nonblocking collective
	// Persistent requests (read_persist.go): all of the rank's, by id,
	// and the calls creating those not yet started (our id → index).
	pers      []*persReq
	persByID  map[uint64]*persReq
	persistAt map[uint64]int
	reqs      map[uint64]uint64 // OTF2 request id → our request id, while live

	// Time: OTF2 ticks since the global offset, converted to ns.
	offset     uint64
	resolution uint64

	// unf are the calls in progress when the process ended (attribute
	// dtpa::unfinished), for the rank's footer: how the Leave of the
	// first was placed (unfAtEnd …) and when. curUnf is the current
	// call's dtpa::unfinished, 0 for a call that returned.
	unf      []*tracepb.UnfinishedCall
	unfHow   uint8
	unfLeave int64
	curUnf   uint8

	finalized  bool
	programEnd bool
	lastTime   int64
	// length is the trace's length the clock properties give (ns), end
	// the latest time an event may have, with its margin; 0 when they
	// give none.
	length, end   int64
	flushes       int
	flushNs       int64
	flushIn       int64 // entry time of an open flush region, -1 none
	measOff       int
	nested        uint64
	outside       uint64
	unknownComm   uint64
	lostReq       uint64
	noColl        uint64
	ccEvents      uint64
	forcedIrecv   uint64
	forcedColl    uint64
	unboundStarts uint64
	pcontrol      uint64
}

// rankDefs are the definitions of a rank's trace, which the converters of
// its threads' locations share.
type rankDefs struct {
	funcs    map[string]*fnInfo // by name
	newFuncs []*tracepb.Function
	newSites []*tracepb.CallSite
	newMods  []*tracepb.Module
	nextSite uint32
	// Call sites by function and source code location, and the modules
	// standing for source files (sourceSite).
	sclSites map[[2]uint32]uint32
	fileMods map[string]uint64  // file → its module's base address
	byRegion map[uint32]*fnInfo // by region id; nil: not an MPI function
	fns      []*fnInfo          // by our function id
	// nextReq is the next request id: the process's requests are one
	// set, whichever thread made them.
	nextReq uint64
}

func newRankDefs() *rankDefs {
	return &rankDefs{nextReq: 1, funcs: map[string]*fnInfo{}, byRegion: map[uint32]*fnInfo{}, sclSites: map[[2]uint32]uint32{}, fileMods: map[string]uint64{}}
}

// maxPending bounds the calls held back for an uncompleted nonblocking
// receive; beyond it that receive is written with a wildcard source and
// tag on MPI_COMM_WORLD (its completion still carries the actual ones).
// A variable for tests.
var maxPending = 1 << 20

// flushEvery is the batch size written to our trace file.
const flushEvery = 4096

// newThreadConverter converts the events of the location of rank's
// thread into w, with the definitions rd its other threads share. pend is
// scratch space for the queue of calls (its contents are overwritten),
// reused from rank to rank so that a queue held back by a long-pending
// receive grows once.
func newThreadConverter(rd *rankDefs, d *defs, l *layout, rank int, thread uint32, w *traceformat.Writer, pend []traceformat.Event) *converter {
	c := &converter{rankDefs: rd, d: d, rank: rank, thread: thread, rc: l.commsOf(rank), w: w, pend: pend[:0],
		irecvAt: map[uint64]int{}, collAt: map[uint64]int{}, persByID: map[uint64]*persReq{}, persistAt: map[uint64]int{}, reqs: map[uint64]uint64{},
		offset: d.globalOffset, resolution: d.resolution, flushIn: -1}
	if c.resolution == 0 {
		c.resolution = 1e9
	}
	if l := d.traceLength; l > 0 && l < 1<<62 && d.globalOffset <= math.MaxUint64-2*l {
		c.length = c.ns(d.globalOffset + l)
		c.end = 2*c.length + 1e9
	}
	return c
}

// ns converts an OTF2 timestamp to nanoseconds since the global offset.
func (c *converter) ns(t uint64) int64 {
	d := int64(t - c.offset)
	if c.resolution == 1e9 {
		return d
	}
	res := int64(c.resolution)
	q, r := d/res, d%res
	return q*1e9 + int64(math.Round(float64(r)*1e9/float64(res)))
}

// span converts ticks, a duration ending at timestamp at (t ns), to ns:
// the difference of the converted timestamps, as the times themselves are
// converted. It is at most t: a span cannot start before the global
// offset.
func (c *converter) span(at, ticks uint64, t int64) int64 {
	if t <= 0 {
		return 0
	}
	// t > 0: at − offset is in (0, 2^63), and ticks is taken at most that.
	return t - c.ns(at-min(ticks, at-c.offset))
}

// fnInfo is what the converter needs of an MPI function, found once.
type fnInfo struct {
	id    uint32 // our function id
	site  uint32 // its call site when the archive names no source location
	name  string
	info  mpifunc.Info
	calls uint64
	// initFin: MPI_Init, MPI_Init_thread, MPI_Finalize; blockingSend,
	// blockingRecv: MPI_Send and co., MPI_Recv; completes: the wait and
	// test families; test: the test family.
	initFin, finalize, pcontrol, blockingSend, blockingRecv, completes, test bool
	starts                                                                   bool // MPI_Start, MPI_Startall
}

func (c *converter) function(name string) *fnInfo {
	if f, ok := c.funcs[name]; ok {
		return f
	}
	id := uint32(len(c.fns))
	f := &fnInfo{id: id, name: name, info: mpifunc.Classify(name)}
	switch name {
	case "MPI_Init", "MPI_Init_thread":
		f.initFin = true
	case "MPI_Finalize":
		f.initFin, f.finalize = true, true
	case "MPI_Pcontrol":
		f.pcontrol = true
	case "MPI_Start", "MPI_Startall":
		f.starts = true
	case "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend":
		f.blockingSend = true
	case "MPI_Recv":
		f.blockingRecv = true
	}
	f.test = strings.HasPrefix(name, "MPI_Test") && name != "MPI_Test_cancelled"
	f.completes = f.test || strings.HasPrefix(name, "MPI_Wait")
	c.funcs[name] = f
	c.fns = append(c.fns, f)
	c.newFuncs = append(c.newFuncs, mpifunc.Function(id, name))
	// One call site per function where the archive names no source code
	// location (sourceSite): such sites have no return addresses, so SRC
	// points are keyed by function alone.
	f.site = c.nextSite
	c.nextSite++
	c.newSites = append(c.newSites, &tracepb.CallSite{Id: f.site})
	return f
}

// sourceSite is the call site of f at source code location scl: one per
// distinct function and location. Its one return address lies in a module
// standing for the location's file (traceformat.SourceModulePrefix) at
// the line's offset, so that the report's SRC points read file:line.
// An unknown location gives f's own site.
func (c *converter) sourceSite(f *fnInfo, scl uint32) uint32 {
	k := [2]uint32{f.id, scl}
	if s, ok := c.sclSites[k]; ok {
		return s
	}
	loc, ok := c.d.scls[scl]
	file := c.d.strings[loc.file]
	if !ok || file == "" {
		c.sclSites[k] = f.site
		return f.site
	}
	base, ok := c.fileMods[file]
	if !ok {
		base = uint64(len(c.fileMods)+1) << 32
		c.fileMods[file] = base
		c.newMods = append(c.newMods, &tracepb.Module{Id: uint32(len(c.fileMods) - 1),
			Path: traceformat.SourceModulePrefix + file, Start: base, End: base + 1<<32, LoadBias: base})
	}
	s := c.nextSite
	c.nextSite++
	c.sclSites[k] = s
	c.newSites = append(c.newSites, &tracepb.CallSite{Id: s, Pcs: []uint64{base + uint64(loc.line)}})
	return s
}

// regionFn is the MPI function of a region, nil for other regions.
func (c *converter) regionFn(region uint32) *fnInfo {
	if f, ok := c.byRegion[region]; ok {
		return f
	}
	var f *fnInfo
	if name := c.d.mpiFunction(region); name != "" {
		f = c.function(name)
	}
	c.byRegion[region] = f
	return f
}

// calls counts the MPI calls converted, by function: of every thread of
// the rank, whose functions are one set (rankDefs).
func (c *converter) calls() map[string]uint64 {
	out := map[string]uint64{}
	for _, f := range c.fns {
		if f.calls > 0 {
			out[f.name] = f.calls
		}
	}
	return out
}

func (c *converter) comm(otf2 uint32) (uint32, bool) {
	l, ok := c.rc.local[otf2]
	if !ok {
		c.unknownComm++
	}
	return l, ok
}

// damaged is an event whose time cannot be: the rank's events are
// converted up to it. At is its index in the chunk fed.
type damaged struct {
	at  int
	msg string
}

func (e *damaged) Error() string { return e.msg }

// timeOK converts timestamp ts to ns since the global offset, and says
// why that cannot be the time of a location's next event ("" if it can).
// OTF2 orders a location's events by time and puts every event within the
// clock properties' range; a damaged timestamp (one changed high byte is
// years) would otherwise become a call of that length. Past the end, only
// a time beyond twice the trace's length and a second more counts as
// damage: writers that set the length carelessly (too short by a flush,
// or the first rank's) are not taken for damaged archives.
func (c *converter) timeOK(ts uint64) (int64, string) {
	if ts < c.offset {
		return 0, fmt.Sprintf("an event's time is %.6f s before the archive's global offset", float64(c.offset-ts)/float64(c.resolution))
	}
	if ts-c.offset >= 1<<62 {
		return 0, fmt.Sprintf("an event's time is %.3g s after the archive's global offset", float64(ts-c.offset)/float64(c.resolution))
	}
	t := c.ns(ts)
	switch {
	case t < c.lastTime:
		return t, fmt.Sprintf("an event's time (%.6f s) is earlier than the event's before it (%.6f s)", float64(t)/1e9, float64(c.lastTime)/1e9)
	case c.end > 0 && t > c.end:
		return t, fmt.Sprintf("an event's time (%.6f s) lies past the end of the trace its clock properties give (%.6f s)", float64(t)/1e9, float64(c.length)/1e9)
	}
	return t, ""
}

// feed converts a chunk of records.
func (c *converter) feed(recs []rec) error {
	for i := range recs {
		r := &recs[i]
		t, msg := c.timeOK(uint64(r.time))
		if msg != "" {
			return &damaged{at: i, msg: msg}
		}
		c.lastTime = t
		switch r.kind {
		case kEnter:
			c.enter(r, t)
		case kLeave:
			if err := c.leave(uint32(r.ref), t); err != nil {
				return err
			}
		case kCallingContext:
			c.ccEvents++
		case kFlush:
			end, msg := c.timeOK(uint64(r.req))
			if msg != "" {
				return &damaged{at: i, msg: "a buffer flush's end: " + msg}
			}
			c.flushes++
			c.flushNs += end - t
		case kOnOff:
			if uint32(r.ref) != measurementOn {
				c.measOff++
			}
		case kProgramEnd:
			c.programEnd = true
		default:
			if !c.inCall {
				if r.kind != kCommCreate {
					c.outside++
				}
				continue
			}
			c.mpiRecord(r)
		}
	}
	return nil
}

func (c *converter) enter(r *rec, t int64) {
	region := uint32(r.ref)
	c.stack = append(c.stack, region)
	if c.d.isFlushRegion(region) {
		c.flushes++
		c.flushIn = t
		return
	}
	f := c.regionFn(region)
	if f == nil {
		return
	}
	if c.inCall {
		c.nested++
		return
	}
	c.inCall, c.callAt, c.curFn, c.sawColl, c.curUnf = true, len(c.stack)-1, f, false, 0
	c.cur = traceformat.Event{Func: f.id, Site: f.site, Entry: t, Thread: c.thread}
	c.hasProcNullBytes = false
	c.enterAttrs(r, t)
}

// enterAttrs gives the call entered at t (ns) the attributes dtpa's
// writer put on its ENTER record (write.go): MPI_Pcontrol's arguments,
// the number of calls folded into it and their inner gaps, and the flag a
// test or probe returned.
func (c *converter) enterAttrs(r *rec, t int64) {
	bits := uint32(r.tag)
	if bits == 0 {
		return
	}
	e := &c.cur
	if bits&attrBitSCL != 0 {
		e.Site = c.sourceSite(c.curFn, uint32(r.comm))
	}
	if bits&attrBitPcLevel != 0 && bits&attrBitPcArg != 0 {
		e.Attr |= traceformat.AttrPcontrol
		e.PcLevel, e.PcArg = int32(uint32(r.len2)), int64(r.len)
	}
	if n := uint32(uint64(r.len2) >> 32); bits&attrBitCalls != 0 && n > 1 {
		e.Attr |= traceformat.AttrCalls
		e.Calls = n
		if bits&attrBitInner != 0 {
			// Without it (archives of Score-P, of dtpa before format
			// 2.1), the run ends one gap, as in a trace of that format.
			e.Attr |= traceformat.AttrInnerGaps
			e.InnerGaps = c.span(uint64(r.time), uint64(r.req), t)
		}
	}
	if bits&attrBitFlag != 0 {
		e.Attr |= traceformat.AttrFlag
		e.Flag = (bits>>8)&0xff != 0
	}
	if bits&attrBitBytes != 0 {
		c.procNullBytes, c.hasProcNullBytes = uint64(r.len), true
	}
	if bits&attrBitUnf != 0 {
		c.curUnf = max(1, uint8(bits>>16))
	}
	if bits&attrBitStatus != 0 {
		// MPI_Probe's status: the message it waited for.
		if lc, ok := c.comm(uint32(r.len2)); ok {
			src, tag := int32(uint32(r.req)), int32(uint32(uint64(r.req)>>32))
			e.Attr |= traceformat.AttrRecv | traceformat.AttrComm | traceformat.AttrStatus
			e.Comm, e.RecvPeer, e.RecvTag = lc, src, tag
			e.Status = append(e.Status[:0], traceformat.Status{Source: src, Tag: tag})
		}
	}
}

func (c *converter) leave(region uint32, t int64) error {
	if len(c.stack) == 0 || c.stack[len(c.stack)-1] != region {
		return fmt.Errorf("leave of region %d at %d ns does not match the innermost open region", region, t)
	}
	c.stack = c.stack[:len(c.stack)-1]
	if c.flushIn >= 0 && c.d.isFlushRegion(region) {
		c.flushNs += t - c.flushIn
		c.flushIn = -1
	}
	if !c.inCall || len(c.stack) != c.callAt {
		return nil
	}
	c.inCall = false
	if c.curUnf != 0 {
		// A call in progress when the process ended, as dtpa's export
		// writes it: back into the footer, where the tracer put it.
		if len(c.unf) == 0 {
			c.unfHow, c.unfLeave = c.curUnf, t
		}
		c.unf = append(c.unf, &tracepb.UnfinishedCall{Thread: c.thread, Function: c.curFn.id, Name: c.curFn.name, EntryLocalNs: c.cur.Entry})
		return nil
	}
	c.cur.Exit = t
	c.finishCall()
	return c.push(c.cur)
}

// finishCall fills in what a call lacks after its records: the defaults
// our tracer would have recorded.
func (c *converter) finishCall() {
	e := &c.cur
	f := c.curFn
	f.calls++
	switch {
	case f.finalize:
		c.finalized = true
	case isPersistentInit(f):
		c.persistentInit(e, f)
	case f.pcontrol:
		if e.Attr&traceformat.AttrPcontrol == 0 {
			c.pcontrol++
		}
	case f.info.Class == tracepb.Function_COLLECTIVE && !c.sawColl:
		c.noColl++
		e.Attr |= traceformat.AttrComm
	case f.blockingSend && e.Attr&traceformat.AttrSend == 0:
		// A blocking send or receive with no message record addressed
		// MPI_PROC_NULL (Score-P records no message for it).
		e.Attr |= traceformat.AttrSend | traceformat.AttrComm
		e.SendPeer = traceformat.ProcNull
		if c.hasProcNullBytes {
			e.Attr |= traceformat.AttrSendBytes
			e.SendBytes = c.procNullBytes
		}
	case f.blockingRecv && e.Attr&traceformat.AttrRecv == 0:
		e.Attr |= traceformat.AttrRecv | traceformat.AttrComm | traceformat.AttrStatus
		e.RecvPeer, e.RecvTag = traceformat.ProcNull, traceformat.AnyTag
		e.Status = []traceformat.Status{{Source: traceformat.ProcNull, Tag: traceformat.AnyTag}}
		if c.hasProcNullBytes {
			e.Attr |= traceformat.AttrRecvBytes
			e.RecvBytes = c.procNullBytes
		}
	case f.completes:
		e.Attr |= traceformat.AttrReqs | traceformat.AttrStatus
		if f.test && e.Attr&traceformat.AttrFlag == 0 {
			e.Attr |= traceformat.AttrFlag
			e.Flag = len(e.Reqs) > 0
		}
	}
}

func (c *converter) newReq(otf2 uint64) uint64 {
	id := c.nextReq
	c.nextReq++
	c.reqs[otf2] = id
	return id
}

// mpiRecord adds an MPI record to the current call.
func (c *converter) mpiRecord(r *rec) {
	e := &c.cur
	if c.curFn.starts && (r.kind == kIsend || r.kind == kIrecvRequest || r.kind == kNBCRequest) && c.startPersistent(r) {
		return
	}
	switch r.kind {
	case kSend, kIsend:
		lc, ok := c.comm(uint32(r.comm))
		if !ok {
			return
		}
		e.Attr |= traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrComm
		e.Comm, e.SendPeer, e.SendTag, e.SendBytes = lc, int32(r.ref), int32(r.tag), uint64(r.len)
		if r.kind == kIsend {
			e.Attr |= traceformat.AttrReqs
			e.Reqs = append(e.Reqs, c.newReq(uint64(r.req)))
		}
	case kRecv:
		lc, ok := c.comm(uint32(r.comm))
		if !ok {
			return
		}
		e.Attr |= traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrStatus | traceformat.AttrComm
		e.Comm, e.RecvPeer, e.RecvTag, e.RecvBytes = lc, int32(r.ref), int32(r.tag), uint64(r.len)
		e.Status = append(e.Status[:0], traceformat.Status{Source: int32(r.ref), Tag: int32(r.tag)})
	case kIrecvRequest:
		e.Attr |= traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrReqs | traceformat.AttrComm
		e.RecvPeer, e.RecvTag = traceformat.AnySource, traceformat.AnyTag
		e.Reqs = append(e.Reqs, c.newReq(uint64(r.req)))
		c.irecvAt[uint64(r.req)] = c.pendBase + len(c.pend) // the call's index once pushed
	case kIsendComplete, kRequestCancel, kIrecv:
		id, ok := c.reqs[uint64(r.req)]
		if !ok {
			c.lostReq++
			return
		}
		delete(c.reqs, uint64(r.req))
		c.persistentDone(id)
		st := traceformat.Status{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}
		if r.kind == kIrecv {
			st = traceformat.Status{Source: int32(r.ref), Tag: int32(r.tag)}
			c.completeIrecv(uint64(r.req), r)
		} else if r.kind == kRequestCancel {
			delete(c.irecvAt, uint64(r.req))
		}
		e.Attr |= traceformat.AttrReqs | traceformat.AttrStatus
		e.Reqs = append(e.Reqs, id)
		e.Status = append(e.Status, st)
	case kNBCRequest:
		// The start of a nonblocking collective: its communicator, root
		// and sizes come with its completion (completeColl); until then
		// the call is held back like an MPI_Irecv.
		c.sawColl = true
		e.Attr |= traceformat.AttrReqs | traceformat.AttrComm
		e.Comm = traceformat.CommWorld
		e.Reqs = append(e.Reqs, c.newReq(uint64(r.req)))
		c.collAt[uint64(r.req)] = c.pendBase + len(c.pend)
	case kNBCComplete:
		id, ok := c.reqs[uint64(r.req)]
		if !ok {
			c.lostReq++
			return
		}
		delete(c.reqs, uint64(r.req))
		c.persistentDone(id)
		c.completeColl(uint64(r.req), r)
		e.Attr |= traceformat.AttrReqs | traceformat.AttrStatus
		e.Reqs = append(e.Reqs, id)
		e.Status = append(e.Status, traceformat.Status{Source: traceformat.NoStatus, Tag: traceformat.NoStatus})
	case kRequestTest:
		// An unsuccessful test of a live request: nothing to record.
	case kCollEnd:
		op := uint32(r.ref)
		if op == collCreateHandle || op == collDestroyHandle {
			// Score-P 8 writes MPI_Init, MPI_Finalize and communicator
			// creation and release as collectives of these types; our
			// tracer records the communicator of the creating call only.
			if !c.curFn.initFin {
				if lc, ok := c.comm(uint32(r.comm)); ok {
					e.Attr |= traceformat.AttrComm
					e.Comm = lc
				}
			}
			return
		}
		c.sawColl = true
		lc, ok := c.comm(uint32(r.comm))
		if !ok {
			return
		}
		c.collArgs(e, c.curFn, lc, r)
	case kCommCreate:
		if lc, ok := c.rc.local[uint32(r.comm)]; ok && lc != traceformat.CommWorld && lc != traceformat.CommSelf {
			e.Attr |= traceformat.AttrNewComm
			e.NewComm = lc
		}
	}
}

// completeIrecv gives the Irecv call of request req the source, tag,
// communicator and size its completion reveals.
func (c *converter) completeIrecv(req uint64, r *rec) {
	at, ok := c.irecvAt[req]
	if !ok {
		return
	}
	delete(c.irecvAt, req)
	lc, ok := c.rc.local[uint32(r.comm)]
	if !ok {
		c.unknownComm++
		return
	}
	var e *traceformat.Event
	if at == c.pendBase+len(c.pend) {
		e = &c.cur // MPI_Irecv and its completion in one call (not MPI, but harmless)
	} else if at >= c.pendBase {
		e = &c.pend[at-c.pendBase]
	} else {
		return // already written with a wildcard (maxPending)
	}
	e.Comm, e.RecvPeer, e.RecvTag, e.RecvBytes = lc, int32(r.ref), int32(r.tag), uint64(r.len)
}

// completeColl gives the call that started nonblocking collective req
// the communicator, root and sizes its completion reveals.
func (c *converter) completeColl(req uint64, r *rec) {
	at, ok := c.collAt[req]
	if !ok {
		return
	}
	delete(c.collAt, req)
	var e *traceformat.Event
	var f *fnInfo
	if at == c.pendBase+len(c.pend) {
		e, f = &c.cur, c.curFn
	} else if at >= c.pendBase {
		e = &c.pend[at-c.pendBase]
		f = c.fns[e.Func]
	} else {
		return // already written (maxPending)
	}
	lc, ok := c.comm(uint32(r.comm))
	if !ok {
		return
	}
	c.collArgs(e, f, lc, r)
}

// collArgs records a collective record's communicator, sizes and root
// (of a rooted collective, when defined) in e, a call of f.
func (c *converter) collArgs(e *traceformat.Event, f *fnInfo, lc uint32, r *rec) {
	e.Attr |= traceformat.AttrComm | traceformat.AttrSendBytes | traceformat.AttrRecvBytes
	e.Comm, e.SendBytes, e.RecvBytes = lc, uint64(r.len), uint64(r.len2)
	if in := f.info; (in.Collective == tracepb.Function_ONE_TO_ALL || in.Collective == tracepb.Function_ALL_TO_ONE) && uint32(r.tag) != undefined32 {
		e.Attr |= traceformat.AttrRoot
		e.Root = int32(r.tag)
	}
}

// push queues a finished call and writes what no longer waits for a
// receive's completion.
func (c *converter) push(e traceformat.Event) error {
	c.pend = append(c.pend, e)
	if len(c.pend)%flushEvery != 0 {
		return nil
	}
	return c.flush(false)
}

// flush writes the queued calls before the oldest uncompleted Irecv (all
// of them at the end, or when the queue exceeds maxPending).
func (c *converter) flush(final bool) error {
	n := len(c.pend)
	if !final {
		oldest := c.pendBase + n
		for _, at := range c.irecvAt {
			oldest = min(oldest, at)
		}
		for _, at := range c.collAt {
			oldest = min(oldest, at)
		}
		for _, at := range c.persistAt {
			oldest = min(oldest, at)
		}
		if n > maxPending {
			oldest = c.pendBase + n - maxPending/2
			for req, at := range c.irecvAt {
				if at < oldest {
					delete(c.irecvAt, req)
					c.forcedIrecv++
				}
			}
			for req, at := range c.collAt {
				if at < oldest {
					delete(c.collAt, req)
					c.forcedColl++
				}
			}
			for id, at := range c.persistAt {
				if at < oldest {
					delete(c.persistAt, id)
				}
			}
		}
		n = oldest - c.pendBase
		if n < flushEvery && !(len(c.pend) > maxPending) {
			return nil
		}
	} else {
		c.forcedIrecv += uint64(len(c.irecvAt))
		clear(c.irecvAt)
		c.forcedColl += uint64(len(c.collAt))
		clear(c.collAt)
		clear(c.persistAt)
	}
	if len(c.newFuncs) > 0 || len(c.newSites) > 0 {
		if err := c.w.WriteDefinitions(&tracepb.Definitions{Functions: c.newFuncs, CallSites: c.newSites, Modules: c.newMods}); err != nil {
			return err
		}
		c.newFuncs, c.newSites, c.newMods = nil, nil, nil
	}
	for start := 0; start < n; start += flushEvery {
		c.b.Reset()
		for i := start; i < min(n, start+flushEvery); i++ {
			c.b.Append(&c.pend[i])
		}
		if err := c.w.WriteBatch(&c.b); err != nil {
			return err
		}
	}
	rest := copy(c.pend, c.pend[n:])
	clear(c.pend[rest:])
	c.pend = c.pend[:rest]
	c.pendBase += n
	return nil
}

// warnings describes what the import could not carry over, one sentence
// each.
func (c *converter) warnings(file string) []string {
	var w []string
	add := func(format string, a ...any) {
		w = append(w, fmt.Sprintf("%s (rank %d): ", file, c.rank)+fmt.Sprintf(format, a...))
	}
	if c.flushes > 0 {
		add("Score-P flushed its trace buffer %d times (%.3f ms); that time is counted as the program's (inside an MPI call, as the call's)", c.flushes, float64(c.flushNs)/1e6)
	}
	if c.measOff > 0 {
		add("measurement was switched off %d times; MPI calls in those spans are missing", c.measOff)
	}
	if c.nested > 0 {
		add("%d MPI regions nested in another MPI call are counted as part of the outer call", c.nested)
	}
	if c.outside > 0 {
		add("%d MPI message or collective records lie outside any MPI function region (MPI functions filtered out?) and are ignored", c.outside)
	}
	if c.unknownComm > 0 {
		add("%d records name a communicator that is not an MPI communicator of this rank; they are ignored", c.unknownComm)
	}
	if c.lostReq > 0 {
		add("%d request completions name a request whose creation was not recorded (filtered?); they are ignored", c.lostReq)
	}
	if c.noColl > 0 {
		add("%d collective calls carry no collective record; they are taken as on MPI_COMM_WORLD", c.noColl)
	}
	if c.forcedIrecv > 0 {
		add("%d nonblocking receives were not completed in the trace (or too long after); their source and tag are unknown (taken as any)", c.forcedIrecv)
	}
	if c.unboundStarts > 0 {
		add("%d starts of persistent requests found no persistent request created before them; they are taken as nonblocking calls of their own", c.unboundStarts)
	}
	if c.forcedColl > 0 {
		add("%d nonblocking collectives were not completed in the trace (or too long after); they are taken as on MPI_COMM_WORLD", c.forcedColl)
	}
	if c.pcontrol > 0 {
		add("%d MPI_Pcontrol calls were recorded without their arguments (OTF2 keeps none); they mark no intervals", c.pcontrol)
	}
	if c.ccEvents > 0 {
		add("the archive has calling contexts (%d events), which dtpa does not import yet; SRC points are per MPI function", c.ccEvents)
	}
	return w
}
