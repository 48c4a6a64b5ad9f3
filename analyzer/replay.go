package analyzer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// minLatencyNs is the minimum message latency the controlled logical clock
// enforces when it repairs a clock-condition violation (a receive then ends
// at least this long after its send started). Detection itself is strict
// (SPEC: a receive ending before its send started).
const minLatencyNs = 0

// rnode is one processor's interval with its accumulators.
type rnode = intervals.Node[*acc]

// acc holds one processor's additive characteristics of an interval
// itself, nested intervals excluded (they are summed when the report is
// built, so that an event costs one update whatever the nesting depth).
// Times are nanoseconds.
type acc struct {
	p2p, coll, sys                      int64
	realSync, potSync, timeVar, overlap int64
	lateRecv                            int64 // the part of realSync charged to sends by late receivers
	insuf                               float64
	sends, recvs, waits, sysCalls       int64
	collCalls, collInst                 int64
	sites                               []siteAcc // by file-local call-site id
	bigSites                            map[uint32]*siteAcc
	// since is when the processor last entered the interval: overlap
	// windows are clipped to it (overlapCover).
	since int64
	// lrIdx is 1 + the interval's index in replayer.lrNodes, once a send
	// in it may be charged by a late receiver (lateAtt).
	lrIdx int32
}

// siteAcc is one call site's figures on one processor in one interval.
type siteAcc struct {
	used                             bool
	fn                               uint32
	count                            int64
	time, realSync, pot, tv, overlap int64
	lateRecv                         int64
}

// site is call site id's figures; the common case is inlined.
func (a *acc) site(id uint32) *siteAcc {
	if id < uint32(len(a.sites)) {
		return &a.sites[id]
	}
	return a.siteSlow(id)
}

func (a *acc) siteSlow(id uint32) *siteAcc {
	if id >= denseSites {
		// Sparse, large ids (legal in the format) must not make every
		// interval of every rank allocate a table that large.
		if a.bigSites == nil {
			a.bigSites = map[uint32]*siteAcc{}
		}
		p := a.bigSites[id]
		if p == nil {
			p = &siteAcc{}
			a.bigSites[id] = p
		}
		return p
	}
	if int(id) >= len(a.sites) {
		n := int(id) + 1
		if n < 2*len(a.sites) {
			n = 2 * len(a.sites)
		}
		s := make([]siteAcc, min(n, denseSites))
		copy(s, a.sites)
		a.sites = s
	}
	return &a.sites[id]
}

// denseSites is the call-site id below which sites are kept in a slice.
const denseSites = 1 << 16

// commInfo is a communicator as the replay of one rank uses it.
type commInfo struct {
	def     *tracepb.Communicator
	id      uint64
	members []int32 // world ranks, local group
	remote  []int32 // world ranks, remote group (intercommunicators)
	inter   bool
	myIdx   int     // this rank's rank in it, -1 if not a member
	group   int32   // first world rank of the local group
	collSeq *uint64 // collective calls on it so far (replayer.collSeq)
	// both, bothIdx: an intercommunicator's two groups as one instance's
	// members and this rank's index among them (collPlace).
	both    []int32
	bothIdx int
}

// peerWorld translates a peer rank of a point-to-point call.
func (c *commInfo) peerWorld(p int32) (int32, bool) {
	g := c.members
	if c.inter {
		g = c.remote
	}
	if p < 0 || int(p) >= len(g) {
		return 0, false
	}
	return g[p], true
}

type reqKind uint8

const (
	reqSend reqKind = iota
	reqRecv
	reqColl    // a nonblocking collective: ticket indexes replayer.icolls
	reqMatched // MPI_Imrecv: its message was matched by a matched probe
)

// request is a nonblocking or persistent request of one rank (64 bytes:
// it is written at every start and read at every completion).
type request struct {
	kind       reqKind
	persistent bool
	active     bool
	hasTicket  bool
	peer, tag  int32 // as passed by the program (ranks in comm)
	comm       *commInfo
	start      int64  // global ns of the call that started it
	seq        uint64 // order of (re)starts on the rank
	// Receives without wildcards get their ticket when posted (p2p.go):
	// the queue, the sender's world rank and the ticket. A synchronous
	// send (MPI_Issend, MPI_Ssend_init) has hasTicket set and its ticket
	// is its serial number for a late receiver's charge (issendSerial).
	q      *fifo
	ticket uint64
	src    int32
}

// doneRecv is a receive a Wait/Test call completed: what matching it
// needs, copied out of the request table.
type doneRecv struct {
	seq       uint64
	start     int64
	comm      *commInfo
	q         *fifo
	ticket    uint64
	qsrc      int32 // the sender's world rank, with q
	src, tag  int32 // status source and tag (or the posted ones)
	hasTicket bool
}

// shapeInfo is what the replay resolves once per shape of a batch instead
// of at every call: the function's classification, the event's
// communicator, and the matching key of a nonblocking send or receive
// (create) or of a blocking send (post). Each lookup it replaces was a load or two from the rank's
// tables, which the replay, switching rank every few dozen calls, mostly
// finds out of the cache; a batch has a few shapes (six on the
// benchmark), so their entries stay in one or two lines. It is valid for
// one batch: the definitions change only between batches.
type shapeInfo struct {
	fi     *fnInfo   // an entry of replayer.fns (fixed once classified)
	comm   *commInfo // with commOK: eventComm's result (nil possible)
	commOK bool
	// keySet: key and keyOK are shapeKey's resolution of the send's
	// destination or the receive's source (keyOK false: nothing to post).
	keySet, keyOK bool
	key           p2pKey
}

type collSeqKey struct {
	id    uint64
	group int32
}

// sectionRun is the part of a completed sequential section execution that
// lies in one interval (intervals.Sections splits executions at interval
// boundaries).
type sectionRun struct {
	node  *rnode
	num   int64
	inst  int
	seqNs int64
}

// replayer replays one rank's trace forward.
type replayer struct {
	ctx    context.Context
	rank   int32
	path   string
	x      *exchange
	nranks int32 // len(x.ranks)
	clk    *clocks.Map
	delta  int64 // shift added by the controlled logical clock so far
	// clkOffsetOnly: clk is a constant offset; clkOffset is that offset
	// plus delta.
	clkOffsetOnly bool
	clkOffset     int64

	tr      *intervals.Tracker[*acc]
	cur     *rnode // tr.Current() once started, updated when it may change
	running bool   // tr started and not ended: the calls to replay
	secs    *intervals.Sections[*rnode]
	secRuns []sectionRun
	secAgg  map[secAggKey]int64 // Tseq per interval and section number

	defs     *traceformat.Definitions
	fns      []fnInfo // by id, classified when first seen (ok)
	bigFns   map[uint32]*fnInfo
	comms    []*commInfo
	bigComms map[uint32]*commInfo
	reqs     reqTable
	// reqSeq numbers request starts; done holds the receives a wait
	// completes, sorted into posting order before matching.
	reqSeq uint64
	done   []doneRecv
	// collSeq counts collective calls per communicator.
	collSeq map[collSeqKey]*uint64

	sendCache, recvCache fifoCache

	// shapes holds, by shape index of the current batch
	// (traceformat.LazyBatch.Shape), what the replay resolves from the
	// fields a shape fixes; sc is the current event's entry (noShape for
	// an event without a shape, reset at every such event).
	shapes  []shapeInfo
	sc      *shapeInfo
	noShape shapeInfo

	// Backward amortization of clock-condition repairs (clc.go): the
	// events since the last fixed point, their overlap terms, when that
	// point ended, and whether the current event was repaired.
	pend      []pendEv
	pendOv    []ovTerm
	fixedAt   int64
	repaired  bool
	amortized int64 // repairs amortized backward

	// Nonblocking collectives in progress (a request's ticket indexes
	// icolls; free slots are listed in icFree), and those the current
	// Wait/Test call completed.
	icolls []icollRef
	icFree []uint64
	icDone []icollRef
	// Synchronous sends: the next serial (issendSerial), and those the
	// current Wait/Test call completed.
	issSeq  uint64
	issDone []uint64

	// lrNodes are the intervals a late receiver may charge (lateAtt).
	lrNodes []*rnode

	// The time already counted as Overlap (overlapCover): disjoint
	// segments in time order, and everything before ovFloor.
	ovSeg   ovSegs
	ovFloor int64

	mpiNs     int64 // time in MPI calls counted so far (for sections)
	finalized bool  // the trace holds MPI_Finalize (else it was cut)
	last      int64 // latest exit seen (global ns), the end of a cut trace
	events    int64
	contrib   []collContrib

	warns                          []string
	violations, worstViolation     int64
	unmatchedRecvs, unmatchedColls int64
	unknownReqs                    int64
	readErr                        error
	otherThreads                   int64 // events of threads other than 0, not replayed

	obs *rankObs // the timeline recorder (observe.go), nil when off
}

func newReplayer(rank int32, path string, x *exchange, clk *clocks.Map) *replayer {
	rp := &replayer{rank: rank, path: path, x: x, nranks: int32(len(x.ranks)), clk: clk, collSeq: map[collSeqKey]*uint64{}}
	if len(clk.Local) <= 1 {
		// Offset only (one clock-sync phase, or none): no need to look
		// up the segment for every time.
		rp.clkOffsetOnly = true
		if len(clk.Local) == 1 {
			rp.clkOffset = clk.Global[0] - clk.Local[0]
		}
	}
	who := fmt.Sprintf("Rank %d", rank)
	rp.tr = intervals.NewTracker(who, func() *acc { return &acc{} }, rp.warn)
	rp.secs = intervals.NewSections(who, rp.tr.Current(), rp.warn)
	return rp
}

const maxWarningsPerRank = 20

func (rp *replayer) warn(s string) {
	if len(rp.warns) < maxWarningsPerRank {
		rp.warns = append(rp.warns, s)
	} else if len(rp.warns) == maxWarningsPerRank {
		rp.warns = append(rp.warns, fmt.Sprintf("Rank %d: further warnings about this rank are left out.", rp.rank))
	}
}

// run replays the file; it always finishes the rank in the exchange, so
// that nobody waits for it forever.
func (rp *replayer) run() {
	defer func() {
		if p := recover(); p != nil {
			rp.readErr = fmt.Errorf("internal error replaying %s: %v", rp.path, p)
		}
		rp.end(rp.last)
		rp.contrib = rp.x.finish(rp.rank, rp.contrib)
		rp.applyContrib()
	}()
	f, err := os.Open(rp.path)
	if err != nil {
		rp.readErr = err
		return
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: rp.path})
	if err != nil {
		rp.readErr = err
		return
	}
	rp.defs = rd.Definitions()
	var e traceformat.Event
	for {
		if rp.ctx != nil && rp.ctx.Err() != nil {
			return // cancelled: Analyze returns the context's error
		}
		// Lazily decoded: the replay switches rank every few dozen
		// calls, and a batch decoded up front into columns would be cold
		// by the time its events are replayed.
		b, err := rd.ReadLazyBatch()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rp.readErr = err
			}
			return
		}
		if b.Thread != 0 {
			// Other threads' calls are outside the rank's program order;
			// only thread 0 (the MPI_Init thread) is replayed.
			rp.otherThreads += int64(b.Len())
			continue
		}
		rp.shapes = append(rp.shapes[:0], make([]shapeInfo, b.NumShapes())...)
		for b.Next(&e) {
			if s := b.Shape(); s >= 0 {
				rp.sc = &rp.shapes[s]
			} else {
				rp.noShape = shapeInfo{}
				rp.sc = &rp.noShape
			}
			rp.event(&e)
		}
	}
}

// fn is the replay's view of function id; the common case is inlined.
func (rp *replayer) fn(id uint32) *fnInfo {
	if id < uint32(len(rp.fns)) && rp.fns[id].ok {
		return &rp.fns[id]
	}
	return rp.fnSlow(id)
}

func (rp *replayer) fnSlow(id uint32) *fnInfo {
	if id >= denseSites {
		// Large ids are legal but rare: no table that large per rank.
		if rp.bigFns == nil {
			rp.bigFns = map[uint32]*fnInfo{}
		}
		f := rp.bigFns[id]
		if f == nil {
			in := classify(rp.defs.Function(id))
			f = &in
			rp.bigFns[id] = f
		}
		return f
	}
	if int(id) >= len(rp.fns) {
		n := int(id) + 1
		rp.fns = append(rp.fns, make([]fnInfo, n-len(rp.fns))...)
	}
	rp.fns[id] = classify(rp.defs.Function(id))
	rp.fns[id].ok = true
	return &rp.fns[id]
}

// comm is the communicator of local index local; the common case is
// inlined.
func (rp *replayer) comm(local uint32) *commInfo {
	if local < uint32(len(rp.comms)) {
		if c := rp.comms[local]; c != nil && c.def == rp.defs.Comm(local) {
			return c
		}
	}
	return rp.commSlow(local)
}

func (rp *replayer) commSlow(local uint32) *commInfo {
	d := rp.defs.Comm(local)
	if local >= denseSites {
		if c := rp.bigComms[local]; c != nil && c.def == d {
			return c
		}
	} else if int(local) < len(rp.comms) && rp.comms[local] != nil && rp.comms[local].def == d {
		return rp.comms[local]
	}
	if d == nil {
		return nil
	}
	// New, or the local index was redefined for another communicator.
	c := &commInfo{def: d, id: d.Id, inter: d.Inter, myIdx: -1}
	for i, m := range d.Members {
		c.members = append(c.members, int32(m))
		if int32(m) == rp.rank {
			c.myIdx = i
		}
	}
	for _, m := range d.RemoteMembers {
		c.remote = append(c.remote, int32(m))
	}
	if len(c.members) > 0 {
		c.group = c.members[0]
	}
	if c.inter {
		c.group = interGroup(c)
	}
	if local >= denseSites {
		if rp.bigComms == nil {
			rp.bigComms = map[uint32]*commInfo{}
		}
		rp.bigComms[local] = c
		return c
	}
	if int(local) >= len(rp.comms) {
		rp.comms = append(rp.comms, make([]*commInfo, int(local)+1-len(rp.comms))...)
	}
	rp.comms[local] = c
	return c
}

// repair applies the controlled logical clock's forward pass to a call
// whose exit must not precede bound: the call is stretched and everything
// after it shifted, so that local intervals are preserved.
func (rp *replayer) repair(exit *int64, bound int64) {
	bound += minLatencyNs
	if *exit >= bound {
		return
	}
	d := bound - *exit
	rp.violations++
	if d > rp.worstViolation {
		rp.worstViolation = d
	}
	rp.delta += d
	rp.clkOffset += d
	*exit = bound
}

func (rp *replayer) event(e *traceformat.Event) {
	rp.events++
	sc := rp.sc
	fi := sc.fi
	if fi == nil {
		fi = rp.fn(e.Func)
		sc.fi = fi
	}
	var entry, exit int64
	if rp.clkOffsetOnly {
		entry, exit = e.Entry+rp.clkOffset, e.Exit+rp.clkOffset
	} else {
		entry, exit = rp.clk.At(e.Entry)+rp.delta, rp.clk.At(e.Exit)+rp.delta
	}
	if exit < entry {
		exit = entry
	}
	if !rp.running || (fi.op >= opInit && fi.op <= opPcontrol) {
		if rp.prelude(e, fi, entry, exit) {
			return
		}
	}
	node := rp.cur
	a := node.Value
	var realSync, overlap, syncT int64
	var hasSync bool
	// fixed: the call handed its times to other ranks (clc.go).
	fixed := false
	rp.repaired = false
	ovLo := len(rp.pendOv)
	// class: the call's time goes to fi.class, except for a Wait/Test
	// that completes nonblocking collectives only (Collective time).
	class := fi.class
	switch fi.op {
	case opSend:
		var li lateInfo
		if fi.mayBlock && exit > entry {
			li = lateInfo{exit: exit, att: rp.lateAtt(node, e.Site)}
		}
		if rp.post(e, entry, li) {
			a.sends++
		}
		fixed = true
	case opProbe:
		// MPI_Probe waits for a late sender like a receive, without
		// taking the message (the receive that follows gets it: its
		// entry is after the probe's exit, so the wait is not counted
		// twice).
		if t, ok := rp.peek(e); ok {
			rp.repairRecv(&entry, &exit, t)
			realSync = max(0, t-entry)
			syncT, hasSync = t, true
		}
	case opRecv:
		if t, ok, counted := rp.match(e, e.RecvPeer, e.RecvTag, 0, entry); counted {
			a.recvs++
			if ok {
				rp.repairRecv(&entry, &exit, t)
				realSync = max(0, t-entry)
				syncT, hasSync = t, true
			}
		}
	case opSendrecv:
		if rp.post(e, entry, lateInfo{}) {
			a.sends++
		}
		fixed = true
		if t, ok, counted := rp.match(e, e.RecvPeer, e.RecvTag, 0, entry); counted {
			a.recvs++
			if ok {
				realSync = max(0, t-entry)
				rp.repair(&exit, t)
			}
		}
	case opMprobe, opImprobe:
		// The probe is where the message is matched and, for MPI_Mprobe,
		// where a late sender is waited for: Real Sync as for MPI_Recv.
		// A MPI_Improbe that found nothing records no status.
		if fi.op == opImprobe && (e.Attr&traceformat.AttrStatus == 0 || (e.Attr&traceformat.AttrFlag != 0 && !e.Flag)) {
			break
		}
		if t, ok, counted := rp.match(e, e.RecvPeer, e.RecvTag, 0, entry); counted {
			a.recvs++
			if ok {
				rp.repairRecv(&entry, &exit, t)
				realSync = max(0, t-entry)
				syncT, hasSync = t, true
			}
		}
	case opMrecv:
		// Matched by the probe already.
	case opSystem, opOther:
		rp.createOther(e, fi, entry)
	case opPCollInit:
		rp.pcollInit(e, fi, entry)
	case opIsend, opIrecv, opSendInit, opRecvInit, opImrecv:
		rp.create(e, fi.op, entry, a)
		fixed = fi.op == opIsend
	case opStart:
		for _, id := range e.Reqs {
			rq := rp.reqs.get(id)
			if rq == nil {
				rp.unknownReqs++
				continue
			}
			rq.active, rq.start = true, entry
			rp.reqSeq++
			rq.seq = rp.reqSeq
			if rq.kind == reqSend {
				fixed = true
				var li lateInfo
				if rq.hasTicket {
					li = rp.issendSerial(rq)
				}
				if rp.postTo(rq.comm, rq.peer, rq.tag, entry, li) {
					a.sends++
				}
			} else if rq.kind == reqRecv && rq.peer != traceformat.ProcNull {
				a.recvs++
				rp.postRecv(rq)
			} else if rq.kind == reqPColl {
				fixed = true
				rp.pcollStart(rq, entry, node)
				class = tracepb.Function_COLLECTIVE // as MPI_Ibarrier's start
			}
		}
	case opComplete:
		var n int
		n, syncT, hasSync = rp.complete(e, &entry, &exit)
		if hasSync {
			realSync = max(0, syncT-entry)
		}
		if ovLo < len(rp.pendOv) {
			overlap = rp.overlapCover(node, entry, rp.pendOv[ovLo:])
			// The terms are needed no more: amortize moves the
			// overlap counted, not the terms (clc.go).
			rp.pendOv = rp.pendOv[:ovLo]
		}
		if fi.wait || n > 0 {
			a.waits++
		}
		if len(rp.icDone) > 0 {
			rp.icollsDone(n, entry, exit, node, e.Site, &class)
			fixed = true
		}
		if len(rp.issDone) > 0 {
			// Synchronous sends completed: a late receiver may charge
			// this call (not when it also completed receives, whose Real
			// Sync may cover the same time).
			rp.x.issendWaited(rp.rank, rp.issDone, entry, exit, rp.lateAtt(node, e.Site), hasSync)
			rp.issDone = rp.issDone[:0]
		}
	case opFree:
		for _, id := range e.Reqs {
			if q := rp.reqs.get(id); q != nil && (q.kind == reqColl || q.kind == reqPColl) && q.ticket < uint64(len(rp.icolls)) {
				rp.icolls[q.ticket] = icollRef{}
				rp.icFree = append(rp.icFree, q.ticket)
			}
			// A freed active request still completes, but no wait will
			// say when: its overlap is unknown and it is dropped.
			rp.reqs.del(id)
		}
	case opColl, opICollStart:
		rp.collective(e, fi, entry, &exit, node)
		fixed = true
	}
	dur := exit - entry
	rp.mpiNs += dur
	if exit > rp.last {
		rp.last = exit
	}
	switch class {
	case tracepb.Function_POINT_TO_POINT:
		a.p2p += dur
	case tracepb.Function_COLLECTIVE:
		a.coll += dur
		if fi.class == tracepb.Function_COLLECTIVE {
			a.collCalls++
		}
	default:
		a.sys += dur
		a.sysCalls += int64(e.NumCalls())
	}
	a.realSync += realSync
	a.overlap += overlap
	s := a.site(e.Site)
	s.used, s.fn = true, e.Func
	// A folded run of unsuccessful polls (AttrCalls) is that many calls;
	// its Dur is already their summed time in MPI.
	s.count += int64(e.NumCalls())
	s.time += dur
	s.realSync += realSync
	s.overlap += overlap
	rp.obs.call(e, fi, entry, exit, realSync)
	if fixed || rp.repaired {
		rp.fix(exit)
	} else if n := len(rp.pend); n < cap(rp.pend) && n < maxPend {
		// keep's common case, inlined: two calls in three are kept on the
		// benchmark.
		rp.pend = rp.pend[:n+1]
		p := &rp.pend[n]
		p.a, p.site, p.class, p.entry, p.exit = a, e.Site, class, entry, exit
		p.syncT, p.hasSync, p.ov = syncT, hasSync, overlap
	} else {
		rp.keep(a, e.Site, class, entry, exit, syncT, hasSync, overlap)
	}
}

// prelude handles what comes before the program's start and after its
// end, and the calls that delimit it, its intervals and its sections (a
// few per run): done is true when nothing more is to be done with the
// event.
func (rp *replayer) prelude(e *traceformat.Event, fi *fnInfo, entry, exit int64) (done bool) {
	if !rp.tr.Started() {
		if fi.op == opInit {
			rp.tr.Start(exit)
			rp.running = true
			rp.cur = rp.tr.Current()
			rp.cur.Value.since = exit
			rp.last = exit
			rp.fix(exit)
			return true
		}
		rp.tr.Start(entry)
		rp.running = true
		rp.cur = rp.tr.Current()
		rp.cur.Value.since = entry
		rp.fix(entry)
	}
	if rp.tr.Ended() {
		return true
	}
	switch fi.op {
	case opFinalize:
		rp.finalized = true
		rp.end(entry)
		return true
	case opPcontrol:
		rp.pcontrol(e, entry, exit)
		if n := rp.tr.Current(); n != rp.cur && n.Parent == rp.cur {
			n.Value.since = exit // entered (overlapCover)
		}
		rp.cur = rp.tr.Current()
		rp.fix(exit)
		return true
	}
	return false
}

// end closes the rank's program at global time at.
func (rp *replayer) end(at int64) {
	rp.running = false
	if rp.tr.Ended() {
		return
	}
	for _, r := range rp.secs.Finish(at, rp.mpiNs) {
		rp.sectionEnded(r)
	}
	rp.tr.Finish(at)
}

func (rp *replayer) pcontrol(e *traceformat.Event, entry, exit int64) {
	if e.Attr&traceformat.AttrPcontrol == 0 {
		return
	}
	// Each interval gets the part of an open section that lies inside it:
	// the sections move with the interval boundaries (an interval starts
	// at the exit of MPI_Pcontrol(100) and ends at the entry of
	// MPI_Pcontrol(101)).
	switch e.PcLevel {
	case intervals.EnterInterval:
		rp.tr.Enter(e.PcArg, exit, e.Site)
		rp.secs.Move(exit, rp.mpiNs, rp.tr.Current())
	case intervals.LeaveInterval:
		rp.tr.Leave(e.PcArg, entry)
		rp.secs.Move(entry, rp.mpiNs, rp.tr.Current())
	case intervals.StartSection:
		rp.secs.Start(e.PcArg, exit, rp.mpiNs)
	case intervals.EndSection:
		if r, ok := rp.secs.End(e.PcArg, entry, rp.mpiNs); ok {
			rp.sectionEnded(r)
		}
	}
}

// maxSectionRuns bounds the section executions (their pieces, one per
// interval each lies in) a replay remembers one by one (for K per
// instance); past it, figures fall back to K per section number, so that
// memory does not grow with the trace.
var maxSectionRuns = 1 << 14

type secAggKey struct {
	node *rnode
	num  int64
}

// sectionEnded records a completed section execution, piece by piece:
// its Insufficient Parallelism goes to the intervals it lay in once K is
// known (build.go).
func (rp *replayer) sectionEnded(r intervals.SectionRun[*rnode]) {
	if rp.secAgg == nil {
		rp.secAgg = map[secAggKey]int64{}
	}
	for _, p := range r.Pieces {
		rp.secAgg[secAggKey{p.Where, r.Number}] += p.SeqNs
	}
	if len(r.Pieces) == 0 {
		// Executed (K counts it) though all its time was in MPI.
		rp.secAgg[secAggKey{rp.tr.Current(), r.Number}] += 0
	}
	if len(rp.secRuns)+len(r.Pieces) <= maxSectionRuns && !rp.x.sectionOverflow.Load() {
		for _, p := range r.Pieces {
			rp.secRuns = append(rp.secRuns, sectionRun{node: p.Where, num: r.Number, inst: r.Instance, seqNs: p.SeqNs})
		}
		rp.x.sectionDone(sectionKey{num: r.Number, inst: r.Instance})
	} else {
		rp.x.sectionOverflow.Store(true)
	}
}

// eventComm is the event's communicator (WORLD when the event has none).
func (rp *replayer) eventComm(e *traceformat.Event) *commInfo {
	if sc := rp.sc; sc.commOK {
		return sc.comm
	}
	return rp.eventCommSlow(e)
}

func (rp *replayer) eventCommSlow(e *traceformat.Event) *commInfo {
	c := rp.comm(eventLocalComm(e))
	rp.sc.comm, rp.sc.commOK = c, true
	return c
}

// eventLocalComm is the local index of the event's communicator.
func eventLocalComm(e *traceformat.Event) uint32 {
	local := traceformat.CommWorld
	if e.Attr&traceformat.AttrComm != 0 {
		local = e.Comm
	}
	return local
}

// post sends the event's message; false for PROC_NULL or an unusable peer.
func (rp *replayer) post(e *traceformat.Event, entry int64, li lateInfo) bool {
	if e.Attr&traceformat.AttrSend == 0 {
		return false
	}
	// postTo with the key resolved once per shape.
	sc := rp.sc
	if !sc.keySet {
		rp.shapeKey(sc, rp.eventComm(e), opIsend, e.SendPeer, e.SendTag)
	}
	if !sc.keyOK {
		return false
	}
	rp.x.send(sc.key, entry, li, &rp.sendCache)
	return true
}

func (rp *replayer) postTo(c *commInfo, peer, tag int32, entry int64, li lateInfo) bool {
	if c == nil || peer == traceformat.ProcNull {
		return false
	}
	dst, ok := c.peerWorld(peer)
	if !ok || dst >= rp.nranks {
		return false
	}
	rp.x.send(p2pKey{comm: c.id, src: rp.rank, dst: dst, tag: tag}, entry, li, &rp.sendCache)
	return true
}

// match receives the message of a blocking receive (status index si)
// posted at post: t is its send's entry; counted is false for PROC_NULL
// receives.
func (rp *replayer) match(e *traceformat.Event, peer, tag int32, si int, post int64) (t int64, ok, counted bool) {
	if e.Attr&traceformat.AttrRecv == 0 || e.RecvPeer == traceformat.ProcNull {
		// A receive from MPI_PROC_NULL matches nothing, whatever its
		// status says (MPICH leaves it unset for PROC_NULL requests).
		return 0, false, false
	}
	if e.Attr&traceformat.AttrStatus != 0 && si < len(e.Status) {
		peer, tag = e.Status[si].Source, e.Status[si].Tag
	}
	return rp.matchOn(rp.eventComm(e), peer, tag, post)
}

// peek is the send entry of the message a blocking MPI_Probe found,
// waiting for it (exchange.peek); ok is false when there is none (no
// status, PROC_NULL, or the message never comes).
func (rp *replayer) peek(e *traceformat.Event) (t int64, ok bool) {
	if e.Attr&traceformat.AttrRecv == 0 || e.RecvPeer == traceformat.ProcNull {
		return 0, false
	}
	peer, tag := e.RecvPeer, e.RecvTag
	if e.Attr&traceformat.AttrStatus != 0 && len(e.Status) > 0 {
		// ANY_SOURCE and ANY_TAG resolved by the status.
		peer, tag = e.Status[0].Source, e.Status[0].Tag
	}
	k, st := rp.recvKey(rp.eventComm(e), peer, tag)
	if st != keyOK {
		return 0, false
	}
	return rp.x.peek(k, &rp.recvCache)
}

func (rp *replayer) matchOn(c *commInfo, peer, tag int32, post int64) (t int64, ok, counted bool) {
	k, st := rp.recvKey(c, peer, tag)
	switch st {
	case keyNone:
		return 0, false, false
	case keyBad:
		rp.unmatchedRecvs++
		return 0, false, true
	}
	t, ok = rp.x.recvNext(k, &rp.recvCache, post)
	rp.obs.recv(k.src, t, ok)
	if !ok {
		rp.unmatchedRecvs++
	}
	return t, ok, true
}

// take receives the message of a ticket of queue q, sent by world rank
// src, for a receive posted at post.
func (rp *replayer) take(q *fifo, src int32, tk uint64, post int64) (t int64, ok bool) {
	t, ok = rp.x.recv(q, src, rp.rank, tk, post)
	rp.obs.recv(src, t, ok)
	if !ok {
		rp.unmatchedRecvs++
	}
	return t, ok
}

type keyState uint8

const (
	keyOK   keyState = iota
	keyNone          // PROC_NULL or no status: nothing to receive
	keyBad           // unusable (wildcard without status, bad rank)
)

// recvKey is the matching key of a receive from peer (rank in c) with tag.
func (rp *replayer) recvKey(c *commInfo, peer, tag int32) (p2pKey, keyState) {
	if peer == traceformat.ProcNull || peer == traceformat.NoStatus {
		return p2pKey{}, keyNone
	}
	if c == nil || peer < 0 || tag < 0 {
		return p2pKey{}, keyBad
	}
	src, ok := c.peerWorld(peer)
	if !ok || src >= rp.nranks {
		return p2pKey{}, keyBad
	}
	return p2pKey{comm: c.id, src: src, dst: rp.rank, tag: tag}, keyOK
}

// post gives a nonblocking or started persistent receive its ticket now,
// when its source and tag are known (see p2p.go).
func (rp *replayer) postRecv(rq *request) {
	rq.hasTicket = false
	if rq.peer < 0 || rq.tag < 0 {
		return
	}
	if k, st := rp.recvKey(rq.comm, rq.peer, rq.tag); st == keyOK {
		rq.q, rq.ticket = rp.x.ticket(k, &rp.recvCache)
		rq.src, rq.hasTicket = k.src, true
	}
}

// create registers the request(s) of a nonblocking start or persistent init.
func (rp *replayer) create(e *traceformat.Event, o op, entry int64, a *acc) {
	if e.Attr&traceformat.AttrReqs == 0 || len(e.Reqs) == 0 {
		return
	}
	c := rp.eventComm(e)
	rp.reqSeq++
	// Filled in place in the table (nothing below touches the table).
	rq := rp.reqs.add(e.Reqs[0])
	rq.comm, rq.start, rq.active, rq.seq = c, entry, true, rp.reqSeq
	switch o {
	case opIsend, opSendInit:
		rq.kind, rq.peer, rq.tag = reqSend, e.SendPeer, e.SendTag
	case opIrecv, opRecvInit:
		rq.kind, rq.peer, rq.tag = reqRecv, e.RecvPeer, e.RecvTag
	case opImrecv:
		rq.kind = reqMatched
	}
	if o == opSendInit || o == opRecvInit {
		rq.persistent, rq.active = true, false
		rq.hasTicket = o == opSendInit && rp.sc.fi != nil && rp.sc.fi.mayBlock
	}
	// postTo and postRecv written out (rq is new: no ticket yet): these
	// two calls were a third of all calls on a ring exchange. The key
	// depends only on fields the shape fixes: it is resolved once per
	// shape (shapeKey).
	sc := rp.sc
	switch o {
	case opIsend:
		if !sc.keySet {
			rp.shapeKey(sc, c, o, rq.peer, rq.tag)
		}
		if sc.keyOK {
			var li lateInfo
			if sc.fi.mayBlock {
				li = rp.issendSerial(rq)
			}
			rp.x.send(sc.key, entry, li, &rp.sendCache)
			a.sends++
		}
	case opIrecv:
		if rq.peer == traceformat.ProcNull {
			return
		}
		a.recvs++
		if !sc.keySet {
			rp.shapeKey(sc, c, o, rq.peer, rq.tag)
		}
		if sc.keyOK {
			rq.q, rq.ticket = rp.x.ticket(sc.key, &rp.recvCache)
			rq.src, rq.hasTicket = sc.key.src, true
		}
	}
}

// shapeKey resolves into sc the matching key of a send (o is opIsend:
// MPI_Isend, or the send of MPI_Send and MPI_Sendrecv, post) to peer or of
// an MPI_Irecv (opIrecv) from peer, with tag, on c: keyOK is false when
// there is nothing to post (PROC_NULL, an unusable peer, a wildcard
// receive, which is matched at completion). A shape has one function, so
// that one key per shape suffices.
func (rp *replayer) shapeKey(sc *shapeInfo, c *commInfo, o op, peer, tag int32) {
	sc.keySet, sc.keyOK = true, false
	if c == nil || peer == traceformat.ProcNull {
		return
	}
	if o == opIrecv && (peer < 0 || tag < 0 || peer == traceformat.NoStatus) {
		return
	}
	w, ok := c.peerWorld(peer)
	if !ok || w >= rp.nranks {
		return
	}
	if o == opIsend {
		sc.key = p2pKey{comm: c.id, src: rp.rank, dst: w, tag: tag}
	} else {
		sc.key = p2pKey{comm: c.id, src: w, dst: rp.rank, tag: tag}
	}
	sc.keyOK = true
}

// complete handles a Wait/Test call: n requests completed; the latest send
// entry of the receives among them (for Real Sync and the repair), and
// their overlap terms appended to pendOv (clc.go), so that the caller
// computes Overlap with the call's final entry.
func (rp *replayer) complete(e *traceformat.Event, entry, exit *int64) (n int, latest int64, has bool) {
	if e.Attr&traceformat.AttrReqs == 0 {
		return 0, 0, false
	}
	// The receives completed, in posting order: one (the common case)
	// stays in first, more go to rp.done to be sorted.
	var first doneRecv
	nd := 0
	// Local copies: the compiler reloads fields of *e after every store
	// through a pointer.
	reqs, status := e.Reqs, e.Status
	if e.Attr&traceformat.AttrStatus == 0 {
		status = nil
	}
	for i, id := range reqs {
		p, at := rp.reqs.find(id)
		if p == nil {
			rp.unknownReqs++
			continue
		}
		n++
		switch p.kind {
		case reqColl, reqPColl:
			if p.ticket < uint64(len(rp.icolls)) && rp.icolls[p.ticket].in != nil {
				rp.icDone = append(rp.icDone, rp.icolls[p.ticket])
				rp.icolls[p.ticket] = icollRef{}
				rp.icFree = append(rp.icFree, p.ticket)
			}
			p.ticket = noSlot
		case reqSend, reqMatched:
			// (An MPI_Imrecv's message was there when it started: it
			// was matched by the probe before.)
			rp.pendOv = append(rp.pendOv, ovTerm{start: p.start, t: noT})
			if p.kind == reqSend && p.hasTicket && p.active {
				rp.issDone = append(rp.issDone, p.ticket)
			}
		case reqRecv:
			if p.peer == traceformat.ProcNull {
				break // matches nothing, whatever its status says
			}
			d := &first
			if nd > 0 {
				if nd == 1 {
					rp.done = append(rp.done[:0], first)
				}
				rp.done = append(rp.done, doneRecv{})
				d = &rp.done[len(rp.done)-1]
			}
			nd++
			d.seq, d.start, d.comm, d.q, d.ticket, d.qsrc = p.seq, p.start, p.comm, p.q, p.ticket, p.src
			d.src, d.tag, d.hasTicket = p.peer, p.tag, p.hasTicket
			if i < len(status) {
				d.src, d.tag = status[i].Source, status[i].Tag
			}
		}
		if p.persistent {
			p.active = false
		} else {
			rp.reqs.delAt(id, at)
		}
	}
	switch {
	case nd == 1 && first.hasTicket && first.src != traceformat.NoStatus:
		// received's common case written out.
		var ok bool
		if latest, ok = rp.x.recv(first.q, first.qsrc, rp.rank, first.ticket, first.start); ok {
			rp.obs.recv(first.qsrc, latest, true)
			rp.pendOv = append(rp.pendOv, ovTerm{start: first.start, t: latest})
			has = true
		} else {
			rp.unmatchedRecvs++
		}
	case nd == 1:
		latest, has = rp.received(&first)
	case nd > 1:
		// Wildcard receives take their tickets now: in posting order.
		slices.SortFunc(rp.done, func(a, b doneRecv) int { return cmp.Compare(a.seq, b.seq) })
		for i := range rp.done {
			if t, ok := rp.received(&rp.done[i]); ok && (!has || t > latest) {
				latest, has = t, true
			}
		}
	}
	if has {
		rp.repairRecv(entry, exit, latest)
	}
	return n, latest, has
}

// received matches a receive a Wait/Test call completed: t is its send's
// entry, and its overlap term is appended to pendOv.
func (rp *replayer) received(d *doneRecv) (t int64, ok bool) {
	switch {
	case d.src == traceformat.NoStatus:
		// Cancelled: it received nothing.
		if d.hasTicket {
			rp.x.revoke(d.q, rp.rank, d.ticket)
		}
		return 0, false
	case d.hasTicket:
		t, ok = rp.take(d.q, d.qsrc, d.ticket, d.start)
	default:
		t, ok, _ = rp.matchOn(d.comm, d.src, d.tag, d.start)
	}
	if ok {
		rp.pendOv = append(rp.pendOv, ovTerm{start: d.start, t: t})
	}
	return t, ok
}

// collective replays one collective call.
func (rp *replayer) collective(e *traceformat.Event, fi *fnInfo, entry int64, exit *int64, node *rnode) {
	c := rp.eventComm(e)
	if c == nil || c.myIdx < 0 {
		return
	}
	root := int32(-1)
	if fi.shape == tracepb.Function_ONE_TO_ALL || fi.shape == tracepb.Function_ALL_TO_ONE {
		if e.Attr&traceformat.AttrRoot != 0 {
			root = e.Root
		}
	}
	key, members, idx, root, joins := rp.collPlace(c, root)
	if !joins {
		return
	}
	if idx == 0 {
		node.Value.collInst++
	}
	if fi.op == opICollStart {
		rp.icollStart(e, fi, key, root, c, members, idx, entry)
		return
	}
	shape := fi.shape
	att := collAtt{node: node, site: e.Site}
	moves := movesData(e, fi)
	latest, has, ok, mismatch, contrib := rp.x.collJoin(key, fi.name, shape, root, members, idx, rp.rank, entry, *exit, moves, att, rp.contrib)
	rp.contrib = contrib
	rp.obs.coll(key, latest, has)
	if mismatch {
		rp.unmatchedColls++
	} else if has {
		if moves {
			// The exit collJoin posted.
			rp.repair(exit, latest)
		}
		if !ok {
			rp.unmatchedColls++
		}
	} else if !ok {
		rp.unmatchedColls++
	}
	rp.applyContrib()
}

// movesData tells whether a collective call's exit may depend on its
// partners' entries (the clock condition). A call that moves no data on
// this rank (every byte count it records is 0: MPI_Bcast or MPI_Reduce of
// count 0, …) returns at once in both Open MPI and MPICH, before the
// partners arrive, so its exit bounds nothing; MPI_Barrier moves no data
// but synchronizes. Without recorded byte counts, assume it does.
func movesData(e *traceformat.Event, fi *fnInfo) bool {
	const bytes = traceformat.AttrSendBytes | traceformat.AttrRecvBytes
	if e.Attr&bytes == 0 || fi.barrier {
		return true
	}
	return (e.Attr&traceformat.AttrSendBytes != 0 && e.SendBytes > 0) ||
		(e.Attr&traceformat.AttrRecvBytes != 0 && e.RecvBytes > 0)
}

// icollRef is a nonblocking collective in progress on this rank: its
// instance and this rank's index in it.
type icollRef struct {
	in  *collInst
	idx int
}

// icollStart replays the start of a nonblocking collective: it posts its
// entry (the start waits for nobody) and keeps the instance in its
// request, for the call that completes it (icollsDone).
func (rp *replayer) icollStart(e *traceformat.Event, fi *fnInfo, key collKey, root int32, c *commInfo, members []int32, idx int, entry int64) {
	in, contrib := rp.x.icollStart(key, fi.name, root, members, idx, rp.rank, entry, rp.contrib)
	rp.contrib = contrib
	if in == nil {
		rp.unmatchedColls++
	}
	if e.Attr&traceformat.AttrReqs != 0 {
		for i, id := range e.Reqs {
			slot := noSlot
			if i == 0 && in != nil {
				slot = rp.icollSlot(icollRef{in: in, idx: idx})
			}
			rp.reqs.put(id, request{kind: reqColl, comm: c, start: entry, active: true, ticket: slot})
		}
	} else if in != nil {
		// No request recorded: nothing will say when it completes.
		rp.contrib = rp.x.icollDone(in, idx, rp.rank, entry, 0, collAtt{}, rp.contrib)
	}
	rp.applyContrib()
}

// icollsDone posts the completion of the nonblocking collectives the
// current Wait/Test call (n requests, entered at entry, left at exit, in
// interval node at site) completed (rp.icDone). The call's time is
// Collective time when it completed nothing else, and then bounds the
// Potential Sync they give it (exchange.maybeComplete); a call that also
// completed point-to-point requests stays SendRecv time and gets no
// Potential Sync (analyzer package doc).
func (rp *replayer) icollsDone(n int, entry, exit int64, node *rnode, site uint32, class *tracepb.Function_Class) {
	dur := exit - entry
	if n == len(rp.icDone) {
		*class = tracepb.Function_COLLECTIVE
	} else {
		dur = 0
	}
	att := collAtt{node: node, site: site}
	for _, r := range rp.icDone {
		rp.contrib = rp.x.icollDone(r.in, r.idx, rp.rank, entry, dur, att, rp.contrib)
		rp.applyContrib()
	}
	rp.icDone = rp.icDone[:0]
}

// issendSerial numbers a synchronous nonblocking send (or start of a
// persistent one) rq, for the charge a late receiver may make to the call
// that completes it (exchange.issendPosted, issendWaited).
func (rp *replayer) issendSerial(rq *request) lateInfo {
	rp.issSeq++
	rq.ticket, rq.hasTicket = rp.issSeq, true
	return lateInfo{exit: issendMark, att: rp.issSeq}
}

// lateAtt names a blocking send's interval and call site for the charge a
// late receiver may make (exchange.lateReceiver, applyLate).
func (rp *replayer) lateAtt(node *rnode, site uint32) uint64 {
	a := node.Value
	if a.lrIdx == 0 {
		rp.lrNodes = append(rp.lrNodes, node)
		a.lrIdx = int32(len(rp.lrNodes))
	}
	return uint64(a.lrIdx-1)<<32 | uint64(site)
}

// applyLate adds the Real Sync late receivers charged to this rank's
// blocking sends (by lateAtt); once every replay has finished.
func (rp *replayer) applyLate(late map[uint64]int64) {
	for att, d := range late {
		i := int(att >> 32)
		if i >= len(rp.lrNodes) {
			continue
		}
		a := rp.lrNodes[i].Value
		a.realSync += d
		a.lateRecv += d
		s := a.site(uint32(att))
		s.realSync += d
		s.lateRecv += d
	}
}

// ovSeg is a stretch of time [lo, hi) already counted as Overlap.
type ovSeg struct{ lo, hi int64 }

// maxOvSegs bounds the segments overlapCover remembers; the oldest is
// merged into ovFloor, so that time between it and the floor is never
// counted again (Overlap may then be a little low, never too high).
const maxOvSegs = 8

// ovSegs are the counted segments in time order, in a ring (a loop of
// nonblocking calls adds one per wait: no copying).
type ovSegs struct {
	s       [maxOvSegs]ovSeg
	head, n int
}

func (o *ovSegs) at(i int) *ovSeg { return &o.s[(o.head+i)%maxOvSegs] }

// overlapCover is the Overlap of a Wait/Test call entered at entry in
// interval node completing requests with the given terms: the time of the
// windows max(start, t) … entry of its requests (SPEC's terms) that is
// not yet counted on this processor, clipped to the interval's current
// entry. Overlap is thus the time covered by overlap windows (their union),
// which never exceeds the processor's execution time in the interval
// (analyzer package doc).
func (rp *replayer) overlapCover(node *rnode, entry int64, terms []ovTerm) int64 {
	lo := entry
	for _, o := range terms {
		lo = min(lo, max(o.start, o.t))
	}
	lo = max(lo, node.Value.since, rp.ovFloor)
	if lo >= entry {
		return 0
	}
	o := &rp.ovSeg
	if o.n == 0 || lo > o.at(o.n-1).hi {
		// After everything counted so far: the common case.
		if o.n == maxOvSegs {
			rp.ovFloor = o.s[o.head].hi
			o.head = (o.head + 1) % maxOvSegs
			o.n--
		}
		*o.at(o.n) = ovSeg{lo, entry}
		o.n++
		return entry - lo
	}
	return rp.cover(lo, entry)
}

// cover adds [lo, hi) to the counted segments, lo at or before the end of
// the last, and returns how much of it was new.
func (rp *replayer) cover(lo, hi int64) int64 {
	o := &rp.ovSeg
	var seg [maxOvSegs + 1]ovSeg
	n := 0
	added := hi - lo
	mlo, mhi := lo, hi
	placed := false
	for i := 0; i < o.n; i++ {
		g := *o.at(i)
		switch {
		case g.hi < lo:
			seg[n] = g
			n++
		case g.lo > hi:
			if !placed {
				seg[n] = ovSeg{mlo, mhi}
				n++
				placed = true
			}
			seg[n] = g
			n++
		default:
			added -= max(0, min(g.hi, hi)-max(g.lo, lo))
			mlo, mhi = min(mlo, g.lo), max(mhi, g.hi)
		}
	}
	if !placed {
		seg[n] = ovSeg{mlo, mhi}
		n++
	}
	k := 0
	if n > maxOvSegs {
		rp.ovFloor = seg[0].hi
		k = 1
	}
	o.head, o.n = 0, n-k
	copy(o.s[:], seg[k:n])
	return added
}

func (rp *replayer) applyContrib() {
	for _, k := range rp.contrib {
		a := k.att.node.Value
		a.potSync += k.pot
		a.timeVar += k.tv
		s := a.site(k.att.site)
		s.pot += k.pot
		s.tv += k.tv
	}
	rp.contrib = rp.contrib[:0]
}
