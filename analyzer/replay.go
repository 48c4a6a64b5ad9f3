package analyzer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// minLatencyNs is the minimum message latency the controlled logical clock
// enforces when it repairs a clock-condition violation (a receive then ends
// at least this long after its send started). Detection itself is strict
// (a receive ending before its send started is a violation).
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
	// culprits are the waits of the interval by kind, waiting site and
	// late partner (waits.go).
	culprits waitTable
	// causes are the causes of those waits (causes.go).
	causes causeTable
	// prof: the messages sent and received, the gaps between calls
	// (profile.go); nil until the first.
	prof *profAcc
}

// siteAcc is one call site's figures on one processor in one interval.
type siteAcc struct {
	used                             bool
	fn                               uint32
	count                            int64
	time, realSync, pot, tv, overlap int64
	lateRecv                         int64
	minCall, maxCall, bytes          int64  // profile.go
	amGen                            uint32 // profile.go: amortizeProfile
}

// site is call site id's figures; the common case is inlined.
func (a *acc) site(id uint32) *siteAcc {
	if i := int(id); i < len(a.sites) {
		return &a.sites[i]
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
	both      []int32
	bothIdx   int
	bothSplit int32 // len of both's first group (collKey.split)
	// peers is the group the ranks of point-to-point calls name (members,
	// or remote for an intercommunicator). other: some member is a process
	// of another MPI world (traceformat.OtherWorld); members and remote
	// then hold this world's members only, and peers keeps every member of
	// its group in its place, another world's as -1.
	other bool
	peers []int32
}

// peerWorld translates a peer rank of a point-to-point call.
func (c *commInfo) peerWorld(p int32) (int32, bool) {
	g := c.peers
	if p < 0 || int(p) >= len(g) {
		return 0, false
	}
	return g[p], g[p] >= 0
}

// otherPeer says whether peer p (a rank in c) is a process of another
// MPI world: its calls have no partner in this run's traces.
func (c *commInfo) otherPeer(p int32) bool {
	return c != nil && c.other && p >= 0 && int(p) < len(c.peers) && c.peers[p] < 0
}

// inWorld is members without another world's (the -1 of OtherWorld).
func inWorld(members []int32) []int32 {
	out := make([]int32, 0, len(members))
	for _, m := range members {
		if m >= 0 {
			out = append(out, m)
		}
	}
	return out
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
	other         bool // the peer is another MPI world's (keyOK false)
	key           p2pKey
	// fc is the queue of key (shapeCache): a rank alternating between
	// a few partners (a halo exchange's two or four) missed a cache of
	// the last key used at nearly every call, and hashing the key into
	// the inbox map was the largest single cost of the replay. Its key
	// is key once keySet (shapeKey), before it holds a queue.
	fc fifoCache
}

// replayer replays one rank's trace forward.
type replayer struct {
	// The fields the replay of a call touches come first, on as few
	// cache lines as they fit (replayerHot): with many ranks, a rank's
	// lines leave the L1 between two visits of its replay, so that each
	// costs a miss per visit.
	x      *exchange
	rs     *rankSync // the rank's in the exchange
	rank   int32
	nranks int32 // len(x.ranks)
	clk    *clocks.Map
	delta  int64 // shift added by the controlled logical clock so far
	// clkOffsetOnly: clk is a constant offset; clkOffset is that offset
	// plus delta. clkAffine: clk is one line (clocks.Map.Line: two
	// anchors, as for a rank sharing its reference's clock through the
	// TSC), t ↦ t + clkOffset + (t − clkX0)·clkEps, computed as At does:
	// no segment to look up, no rounding call.
	clkOffset     int64
	clkX0         int64
	clkEps        float64
	clkOffsetOnly bool
	clkAffine     bool
	running       bool // tr started and not ended: the calls to replay
	repaired      bool // the current event was repaired (clc.go)
	// held: rp.ev was read by a step and is handed to the coroutine.
	// inCoro: the replay goes on in its coroutine (step hands it over,
	// handOff back).
	held, inCoro bool
	ovOdd        bool   // see cover
	evSite       uint32 // the current event's call site
	evFn         uint32 // and its function
	cur          *rnode // tr.Current() once started, updated when it may change
	// shapes holds, by shape index of the current batch
	// (traceformat.LazyBatch.Shape), what the replay resolves from the
	// fields a shape fixes; sc is the current event's entry (noShape for
	// an event without a shape, reset at every such event).
	sc     *shapeInfo
	batch  *traceformat.LazyBatch
	events int64
	last   int64    // latest exit seen (global ns), the end of a cut trace
	mpiNs  int64    // time in MPI calls counted so far (for sections)
	fns    []fnInfo // by id, classified when first seen (ok)
	comms  []*commInfo
	shapes []shapeInfo
	// Backward amortization of clock-condition repairs (clc.go): the
	// events since the last fixed point, their overlap terms, and when
	// that point ended.
	pend    []pendEv
	pendOv  []ovTerm
	maxPend int // x.lim.pend, at hand where an event is kept
	fixedAt int64
	// The time already counted as Overlap (overlapCover): disjoint
	// segments in time order, and everything before ovFloor. ovOdd and
	// ovPost: see cover.
	ovFloor int64
	ovPost  int64
	reqs    reqTable
	// from is the sender and send site of the latest message the current
	// call received (waits.go).
	from lateCall
	span spanState // the rank's current span (causes.go)
	pr   profRank  // profile.go
	// cpl is complete's progress through the current Wait/Test call.
	cpl   completion
	ev    traceformat.Event
	ovSeg ovSegs
	// susp is the event a step stopped in (step.go).
	susp suspended
	// (The end of the fields the replay of a call touches.)
	ctx  context.Context
	path string

	tr      *intervals.Tracker[*acc]
	secs    *intervals.Sections[*rnode]
	secRuns []sectionRun
	secAgg  map[secAggKey]int64 // Tseq per interval and section number

	defs *traceformat.Definitions
	// unf are the calls the trace's footer says were in progress when the
	// process ended (at unfEnd on the local clock, 0 unknown, or, with
	// unfAtLeast, later than unfEnd, when the job was interrupted; tracing
	// started at unfStart): their return addresses go to rankResult.unf,
	// their times to the observers.
	unf   []*tracepb.UnfinishedCall
	crash *tracepb.Crash    // the footer's, nil when the process did not crash
	exit  *tracepb.ExitCall // the footer's, nil when the process did not exit without MPI_Finalize
	where *tracepb.Crash    // the footer's interrupted: where a fatal signal found a process that did not crash
	// endState, endAt and endThread are how (endMoment: "exited",
	// "outside", "" neither), when (local; 0 unknown) and on which thread
	// (-1 unknown) a process that neither crashed nor finalized ended.
	endState         string
	endAt, endThread int64
	// abortSite is the call site of the rank's last MPI_Abort, once
	// aborted.
	abortSite        uint32
	aborted          bool
	unfStart, unfEnd int64
	unfAtLeast       bool
	bigFns           map[uint32]*fnInfo
	bigComms         map[uint32]*commInfo
	// reqSeq numbers request starts; done holds the receives a wait
	// completes, sorted into posting order before matching.
	reqSeq uint64
	done   []doneRecv
	// collSeq counts collective calls per communicator.
	collSeq map[collSeqKey]*uint64

	// sendCaches and recvCaches are the queues of the keys the rank's
	// sends and receives used last, by a hash of the key (p2pCache): the
	// keys of blocking receives, wildcard receives and persistent starts
	// are resolved at every call, and a single cache of the last key
	// would miss at nearly every call of a rank that takes turns among a
	// few partners (hashing the key into the inbox map instead).
	sendCaches, recvCaches [16]fifoCache

	// noShape is sc for an event without a shape.
	noShape shapeInfo

	// sites counts each further function called at a call site under a
	// site id of its own (sitefns.go); resolveShape renames e.Site.
	sites siteFns

	// Of backward amortization (pend above): the rarer figures of pend's
	// events, and the repairs amortized.
	pendFig   []pendFig
	amortized int64 // repairs amortized backward
	// pendGen counts the times pend was emptied: an index into pend
	// taken under another generation is stale (woRing).
	pendGen uint64

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

	finalized bool // the trace holds MPI_Finalize (else it was cut)
	contrib   []collContrib

	warns                          []string
	pcw                            pcontrolWarnings // which warns a misplaced MPI_Pcontrol caused (pcwarn.go)
	violations, worstViolation     int64
	unmatchedRecvs, unmatchedColls int64
	// otherWorld: point-to-point and collective calls with processes of
	// another MPI world (commInfo.other), analysed without their partners.
	otherWorld   int64
	unknownReqs  int64
	noIcollReq   int64 // nonblocking collectives started without a request (replay_coll.go)
	readErr      error
	otherThreads int64 // events of threads other than 0, not replayed
	// thr: the rank's threads' time in MPI, on a multi-threaded rank
	// (threads.go); nil otherwise.
	thr *threadCover
	// thrColls are the blocking collectives a thread has entered and
	// not yet left, on a multi-threaded rank (threads.go).
	thrColls map[uint32]thrColl

	obs *rankObs // the timeline recorder (observe.go), nil when off

	// The replay's place in its trace, shared by its coroutine (run) and
	// the steps on the worker's stack (step.go): the trace once opened
	// (begun; threads: several threads, replayed in the coroutine only),
	// the batch being read (batch, above), and its current event (ev,
	// held, above).
	begun, eof, threads bool
	file                io.Closer
	rd                  *traceformat.Reader
	wildPend            []wildReq // wildcard receive requests posted without a ticket (resolveWild)
	batchCancels        bool      // rp.batch holds an MPI_Cancel (threads: the merge read one; cancelledAhead)
	cancelFn            uint32    // MPI_Cancel's function id + 1, once met (passFn)
	farRead             int64     // events read ahead past the batch (farStatus)
	farWarned           bool      // farStatus's bound was met and said
	// merge, with several threads, holds the calls read ahead
	// (farStatusThreads, cancelledAhead).
	merge *threadMerge

	// wo are the recent late-sender waits that a message sent earlier
	// may still make wrong-order waits (waits.go). Last: its records
	// are 6.4 KB, its count of them first.
	wo woRing
}

// replayerHot fails to compile unless the fields the replay of a call
// touches, those before susp in a replayer, fit in 14 cache lines (a
// replayer, of a size class that is a multiple of 64 bytes, starts on a
// line).
const replayerHot = unsafe.Offsetof(replayer{}.susp) / (14 * 64)

var _ = [1]struct{}{}[replayerHot]

func newReplayer(rank int32, path string, x *exchange, clk *clocks.Map) *replayer {
	rp := &replayer{rank: rank, path: path, x: x, rs: x.ranks[rank], nranks: int32(len(x.ranks)), clk: clk, collSeq: map[collSeqKey]*uint64{}, maxPend: x.lim.pend}
	if len(clk.Local) <= 1 {
		// Offset only (one clock-sync phase, or none): no need to look
		// up the segment for every time.
		rp.clkOffsetOnly = true
		if len(clk.Local) == 1 {
			rp.clkOffset = clk.Global[0] - clk.Local[0]
		}
	} else {
		rp.clkX0, rp.clkOffset, rp.clkEps, rp.clkAffine = clk.Line()
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

// run replays the file in the rank's coroutine; it always finishes the
// rank in the exchange, so that nobody waits for it forever. With one
// worker (exchange.stepping) the worker replays most events on its own
// stack (step) and the coroutine one event at a time, those that may wait
// otherwise than for a message, handing the replay back after each.
func (rp *replayer) run() {
	defer func() {
		if p := recover(); p != nil {
			rp.readErr = fmt.Errorf("internal error replaying %s: %v", rp.path, p)
		}
		if rp.file != nil {
			rp.file.Close()
		}
		rp.end(rp.last)
		rp.pr.flushGaps()
		rp.contrib = rp.x.finish(rp.rank, rp.contrib)
		rp.applyContrib()
	}()
	if !rp.begin() {
		return
	}
	if rp.threads {
		rp.runThreads(rp.rd)
		return
	}
	rs := rp.rs
	for {
		if rs.dueF != nil {
			// Held back by flow control after a step's event.
			f := rs.dueF
			rs.dueF = nil
			rp.x.throttle(rs.dueK, f)
		}
		if rp.susp.on {
			// An event a step stopped in, released by the scheduler
			// (sched.stall): finished here, where the wait it stopped
			// at gives up (park).
			rp.resume()
		} else {
			if !rp.held && !rp.nextEvent() {
				return
			}
			rp.held = false
			rp.event(&rp.ev)
		}
		if rp.x.stepping {
			rp.handOff()
		}
	}
}

// begin opens the trace, once: false when it cannot be read (readErr).
func (rp *replayer) begin() bool {
	if rp.begun {
		return rp.rd != nil
	}
	rp.begun = true
	f, rd, err := openTrace(rp.x.files, rp.path)
	if err != nil {
		rp.readErr = err
		return false
	}
	rp.file = f
	rp.defs = rd.Definitions()
	mt, err := multiThreaded(rp.x.files, rp.path, rd.Header())
	if err != nil {
		rp.readErr = err
		return false
	}
	rp.threads = mt
	rp.rd = rd
	return true
}

// nextEvent reads the next event of thread 0 into rp.ev, and points rp.sc
// at its shape's entry; false at the end of the trace, at a read error
// (readErr) or when the analysis was cancelled.
func (rp *replayer) nextEvent() bool {
	for {
		if b := rp.batch; b != nil && b.Next(&rp.ev) {
			rp.setShape(b)
			return true
		}
		if !rp.nextBatch() {
			return false
		}
	}
}

// setShape points rp.sc at the shape entry of b's current event.
func (rp *replayer) setShape(b *traceformat.LazyBatch) {
	if s := b.Shape(); uint(s) < uint(len(rp.shapes)) {
		rp.sc = &rp.shapes[s]
	} else {
		rp.noShape = shapeInfo{}
		rp.sc = &rp.noShape
	}
}

// nextBatch reads the next batch of thread 0 into rp.batch; false at the
// end of the trace, at a read error (readErr) or when the analysis was
// cancelled.
func (rp *replayer) nextBatch() bool {
	rp.batch = nil
	for {
		if rp.eof {
			return false
		}
		if rp.ctx != nil && rp.ctx.Err() != nil {
			rp.eof = true
			return false // cancelled: Analyze returns the context's error
		}
		// Lazily decoded: the replay switches rank every few dozen
		// calls, and a batch decoded up front into columns would be cold
		// by the time its events are replayed.
		b, err := rp.rd.ReadLazyBatch()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rp.readErr = err
			}
			rp.eof = true
			return false
		}
		rp.x.progress.read(b.Len())
		if b.Thread != 0 {
			// Calls from other threads than the MPI_Init thread, which
			// the thread level (below MPI_THREAD_SERIALIZED) forbids.
			rp.otherThreads += int64(b.Len())
			continue
		}
		rp.shapes = append(rp.shapes[:0], make([]shapeInfo, b.NumShapes())...)
		rp.batchCancels = false
		for s := range b.NumShapes() {
			if f := b.ShapeFunc(s); rp.fn(f).cancel {
				rp.batchCancels, rp.cancelFn = true, f+1
				break
			}
		}
		rp.batch = b
		return true
	}
}

// openTrace opens the trace file at path for reading, through pool p.
func openTrace(p *filePool, path string) (io.Closer, *traceformat.Reader, error) {
	f, err := p.open(path)
	if err != nil {
		return nil, nil, err
	}
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path, BufferSize: p.buf, Members: &p.members})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rd, nil
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
			in.derive()
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
	rp.fns[id].derive()
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
	return rp.commOf(local, rp.defs.Comm(local))
}

// commOf is the communicator of local index local defined by d.
func (rp *replayer) commOf(local uint32, d *tracepb.Communicator) *commInfo {
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
	var otherL, otherR bool
	if len(d.Members) > 0 {
		c.members, otherL = rp.x.files.convMembers(d.Members)
	}
	if len(d.RemoteMembers) > 0 {
		c.remote, otherR = rp.x.files.convMembers(d.RemoteMembers)
	}
	c.peers = c.members
	if c.inter {
		c.peers = c.remote
	}
	if otherL || otherR {
		c.other = true
		c.members, c.remote = inWorld(c.members), inWorld(c.remote)
	}
	for i, m := range c.members {
		if m == rp.rank {
			c.myIdx = i
		}
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

// callFigures are one call's times and what matching found for it, which
// charge adds to the accumulators.
type callFigures struct {
	entry, exit       int64 // global ns, repaired
	realSync, overlap int64
	// syncT is the latest send entry the call waited for (hasSync): Real
	// Sync is max(0, syncT − entry), redone by backward amortization
	// (clc.go). MPI_Sendrecv sets realSync alone: it is not amortized.
	syncT int64
	// class: the call's time goes to fi.class, except for a Wait/Test
	// that completes nonblocking collectives only (Collective time).
	// (With the two flags in the last word: 48 bytes, zeroed at every
	// call.)
	class   tracepb.Function_Class
	hasSync bool
	// fixed: the call handed its times to other ranks (clc.go).
	fixed bool
}

// event replays one call: its times on the global clock, its matching
// with other ranks' calls (the replay_*.go files), then charge.
func (rp *replayer) event(e *traceformat.Event) {
	rp.eventFn(e, rp.shapeFn(e))
}

// shapeFn is the function of event e, whose shape entry is rp.sc.
func (rp *replayer) shapeFn(e *traceformat.Event) *fnInfo {
	sc := rp.sc
	fi := sc.fi
	if fi == nil {
		fi = rp.resolveShape(sc, e)
	}
	return fi
}

// resolveShape resolves what the events of e's shape share, once per
// shape of a batch (for every event without a shape): the function, and
// the id their call site is counted under (sitefns.go), which the rest of
// the batch's events of the shape then carry from the decoder.
func (rp *replayer) resolveShape(sc *shapeInfo, e *traceformat.Event) *fnInfo {
	fi := rp.fn(e.Func)
	sc.fi = fi
	if v := rp.sites.of(e.Site, e.Func); v != e.Site {
		e.Site = v
		if b := rp.batch; sc != &rp.noShape && b != nil {
			b.SetShapeSite(b.Shape(), v)
		}
	}
	return fi
}

// onLine is local time t on the global clock when the rank's map is one
// line (clkAffine): clocks.Map.At's formula for two anchors, with the
// controlled logical clock's shift in clkOffset.
func (rp *replayer) onLine(t int64) int64 {
	return t + rp.clkOffset + int64(float64(t-rp.clkX0)*rp.clkEps)
}

// eventFn is event with the event's function fi. The clock's line is
// tested first: every rank but the reference of a clock-sync phase has one
// (two anchors), the reference an offset.
func (rp *replayer) eventFn(e *traceformat.Event, fi *fnInfo) {
	rp.events++
	rp.evSite, rp.evFn = e.Site, e.Func
	var entry, exit int64
	if rp.clkAffine {
		entry, exit = rp.onLine(e.Entry), rp.onLine(e.Exit)
	} else if rp.clkOffsetOnly {
		entry, exit = e.Entry+rp.clkOffset, e.Exit+rp.clkOffset
	} else {
		entry, exit = rp.clk.At(e.Entry)+rp.delta, rp.clk.At(e.Exit)+rp.delta
	}
	exit = max(exit, entry)
	if !rp.running || fi.prelude {
		if rp.prelude(e, fi, entry, exit) {
			rp.pr.skipGap(e)
			return
		}
	}
	node := rp.cur
	a := node.Value
	rp.repaired = false
	ovLo := len(rp.pendOv)
	f := callFigures{entry: entry, exit: exit, class: fi.class}
	switch fi.op {
	case opSend:
		var li lateInfo
		if fi.mayBlock && f.exit > f.entry {
			li = lateInfo{exit: f.exit, att: rp.lateAtt(node, e.Site)}
			if fi.sync {
				li.att |= lateSync
			}
		}
		rp.post(a, e, f.entry, li)
		f.fixed = true
	case opProbe:
		// MPI_Probe waits for a late sender like a receive, without
		// taking the message (the receive that follows gets it: its
		// entry is after the probe's exit, so the wait is not counted
		// twice).
		if t, ok := rp.peek(e); ok {
			rp.repairRecv(&f.entry, &f.exit, t)
			f.syncT, f.hasSync = t, true
		}
	case opRecv, opMprobe, opImprobe:
		// A matched probe is where the message is matched and, for
		// MPI_Mprobe, where a late sender is waited for: Real Sync as for
		// MPI_Recv. A MPI_Improbe that found nothing records no status.
		if fi.op == opImprobe && (e.Attr&traceformat.AttrStatus == 0 || (e.Attr&traceformat.AttrFlag != 0 && !e.Flag)) {
			break
		}
		if fi.op == opRecv && rp.rs.onStack {
			if rp.stepRecv(e, fi, &f, node, ovLo) {
				return // suspended
			}
			break
		}
		rp.matchRecv(e, a, &f)
	case opSendrecv:
		if rp.thr == nil { // (else posted at its entry: threads.go)
			rp.post(a, e, f.entry, lateInfo{})
		}
		f.fixed = true
		if rs := rp.rs; rs.onStack {
			if rs.stop {
				// The send is held back by flow control, which the
				// coroutine applies before the receive (resume).
				rp.suspend(fi, &f, node, ovLo, nil)
				rp.susp.coro = true
				return
			}
			if rp.stepRecv(e, fi, &f, node, ovLo) {
				return // stopped on the worker's stack
			}
			break
		}
		rp.matchSendrecv(e, a, &f)
	case opMrecv:
		// Matched by the probe already.
	case opSystem, opOther:
		rp.createOther(e, fi, f.entry)
	case opPCollInit:
		rp.pcollInit(e, fi, f.entry)
	case opIsend, opIrecv, opSendInit, opRecvInit, opImrecv, opIsendrecv:
		rp.create(e, fi.op, f.entry, a)
		f.fixed = fi.posts
	case opStart:
		var coll bool
		f.fixed, coll = rp.start(e, f.entry, a, node)
		if coll {
			f.class = tracepb.Function_COLLECTIVE // as MPI_Ibarrier's start
		}
	case opComplete:
		n, syncT, hasSync, q := rp.complete(e, &f.entry, &f.exit)
		if q != nil {
			rp.suspend(fi, &f, node, ovLo, q)
			return
		}
		f.syncT, f.hasSync = syncT, hasSync
		if ovLo < len(rp.pendOv) || len(rp.icDone) > 0 || len(rp.issDone) > 0 {
			rp.completed(e, fi, &f, node, n, ovLo)
		} else if fi.wait || n > 0 {
			a.waits++ // (completed's common case)
		}
	case opFree:
		rp.free(e)
	case opColl, opICollStart:
		f.fixed = true
		if rp.collective(e, fi, &f, node, ovLo) {
			return // stopped on the worker's stack
		}
	}
	if f.hasSync {
		f.realSync = max(0, f.syncT-f.entry)
	}
	rp.charge(a, e, fi, &f)
}

// matchSendrecv matches the receive of MPI_Sendrecv e (event), whose
// figures so far are f, counted in interval a.
func (rp *replayer) matchSendrecv(e *traceformat.Event, a *acc, f *callFigures) {
	if t, ok, counted := rp.match(e, f.entry); counted {
		a.recvs++
		if ok {
			rp.sendrecvMatched(f, t)
		}
	}
}

// sendrecvMatched repairs MPI_Sendrecv's figures f for the message whose
// send entered at t: its entry was published with the send, so it is
// repaired forward only, with no backward amortization (clc.go).
func (rp *replayer) sendrecvMatched(f *callFigures, t int64) {
	f.realSync = max(0, t-f.entry)
	rp.repair(&f.exit, t)
}

// matchRecv matches a blocking receive or matched probe e (event), whose
// figures so far are f, counted in interval a.
func (rp *replayer) matchRecv(e *traceformat.Event, a *acc, f *callFigures) {
	if t, ok, counted := rp.match(e, f.entry); counted {
		a.recvs++
		if ok {
			rp.repairRecv(&f.entry, &f.exit, t)
			f.syncT, f.hasSync = t, true
		}
	}
}

// completed is what follows complete for Wait/Test call e (event): its
// Overlap from the terms complete appended to pendOv from ovLo, its count,
// and the nonblocking collectives and synchronous sends it completed. n
// is complete's.
func (rp *replayer) completed(e *traceformat.Event, fi *fnInfo, f *callFigures, node *rnode, n, ovLo int) {
	a := node.Value
	if ovLo < len(rp.pendOv) {
		f.overlap = rp.overlapCover(node, f.entry, rp.pendOv[ovLo:])
		if rp.ovOdd {
			rp.ovOdd = false
			rp.keepOv() // (clc.go)
		}
		// The terms are needed no more: amortize moves the
		// overlap counted, not the terms (clc.go).
		rp.pendOv = rp.pendOv[:ovLo]
	}
	if fi.wait || n > 0 {
		a.waits++
	}
	if len(rp.icDone) > 0 {
		rp.icollsDone(n, f.entry, f.exit, node, e.Site, &f.class)
		f.fixed = true
	}
	if len(rp.issDone) > 0 {
		// Synchronous sends completed: a late receiver may charge
		// this call (not when it also completed receives, whose Real
		// Sync may cover the same time).
		rp.x.issendWaited(rp.rank, rp.issDone, f.entry, f.exit, rp.lateAtt(node, e.Site), f.hasSync)
		rp.issDone = rp.issDone[:0]
		// Its entry and exit are handed to whichever side computes the
		// charge: a fixed point (clc.go), or a backward amortization
		// would move them after the charge was made from them.
		f.fixed = true
	}
}

// charge adds a replayed call's figures to its interval's accumulators a
// (per class and per call site), hands them to the timeline, and keeps
// the call for backward amortization or makes it a fixed point (clc.go).
// Every replayed call's figures go through it.
func (rp *replayer) charge(a *acc, e *traceformat.Event, fi *fnInfo, f *callFigures) {
	entry, exit := f.entry, f.exit
	dur := exit - entry
	raw := dur
	if rp.thr != nil {
		// Several threads: the part of the call no other thread's call
		// covers, and of its wait the part no other wait covers.
		dur, f.realSync = rp.thr.charge(entry, exit, entry+f.realSync, coverOwner{a: a, site: e.Site, class: f.class})
	}
	rp.mpiNs += dur
	if exit > rp.last {
		rp.last = exit
	}
	// A folded run of unsuccessful polls (AttrCalls) is that many calls;
	// its Dur is already their summed time in MPI.
	calls := int64(e.NumCalls())
	switch f.class {
	case tracepb.Function_POINT_TO_POINT:
		a.p2p += dur
	case tracepb.Function_COLLECTIVE:
		a.coll += dur
		if fi.class == tracepb.Function_COLLECTIVE {
			a.collCalls++
		}
	default:
		a.sys += dur
		a.sysCalls += calls
	}
	s := a.site(e.Site)
	// Its profile (profile.go, lowerMin, which also marks the site used
	// with its function at its first call).
	d := raw
	if calls > 1 {
		d /= calls
	}
	if s.count == 0 || d < s.minCall {
		rp.lowerMin(s, d, e.Func)
	}
	if d > s.maxCall {
		s.maxCall = d
	}
	s.bytes += int64(e.SendBytes + e.RecvBytes)
	s.count += calls
	s.time += dur
	// (Most calls neither wait nor overlap: their adds of 0 are skipped,
	// both after one test, since an add of 0 costs less than a second
	// test of its own. The waits of a call that waited are recorded
	// below.)
	if f.realSync|f.overlap != 0 {
		a.realSync += f.realSync
		s.realSync += f.realSync
		a.overlap += f.overlap
		s.overlap += f.overlap
	}
	if rp.obs != nil {
		// Tested here, not only in call: the call with its six arguments
		// and its frame cost as much as the test at every call without
		// an observer (dtpa --json, the text report).
		rp.obs.call(e, fi, entry, exit, f.realSync)
	}
	// The gap before the call (profile.go, gapTo), its common case written
	// out here (too large for the compiler to inline): not a folded run
	// with inner gaps, in the interval of the rank's previous gap (so that
	// it has a previous call), after that call's exit, in a bin the
	// histogram holds already.
	// (gapHist.tryAdd's test written out too: inlined, its result was
	// tested again after the adds.)
	pr := &rp.pr
	if g := e.Entry - pr.gapFrom; a == pr.gapAcc && g >= 0 && e.Attr&traceformat.AttrInnerGaps == 0 {
		if c, i := pr.gaps.c, gapBin(g)-pr.gaps.lo; uint(i) < uint(len(c)) {
			c[i]++
			pr.gaps.sum += g
			pr.gapFrom = max(e.Entry, e.Exit)
		} else {
			pr.gapTo(a, e)
		}
	} else {
		pr.gapTo(a, e)
	}
	kept := false
	if f.fixed || rp.repaired || rp.thr != nil || rp.rs.postHanded {
		rp.rs.postHanded = false
		// (Backward amortization moves a thread's calls, not the
		// cover's segments: none with several threads.)
		rp.fix(exit)
	} else {
		if n := len(rp.pend); n < cap(rp.pend) && n < rp.maxPend {
			// keep's common case, inlined: most calls are kept on the
			// stencil.
			rp.pend = rp.pend[:n+1]
			p := &rp.pend[n]
			p.entry, p.exit, p.ov, p.site, p.calls, p.class = entry, exit, f.overlap, e.Site, e.Calls, uint8(f.class)
			kept = true
		} else {
			kept = rp.keep(entry, exit, f.overlap, e.Site, e.Calls, f.class)
		}
	}
	if len(rp.pr.rcvd) > 0 {
		rp.profileRecvd(a, exit, kept)
	}
	if f.realSync > 0 {
		rp.lateSender(a, e.Site, f.realSync)
		a.addCause(rp.from, f.realSync, rp.comp(entry))
		rp.noteLateSender(a, e.Site, f, kept)
	}
	rp.spanAfter(fi, e.Site, entry, exit)
}

// prelude handles what comes before the program's start and after its
// end, and the calls that delimit it, its intervals and its sections (a
// few per run): done is true when nothing more is to be done with the
// event.
func (rp *replayer) prelude(e *traceformat.Event, fi *fnInfo, entry, exit int64) (done bool) {
	if fi.abort {
		// Where the program gave up (report.Crash); the call is
		// replayed as any other.
		rp.abortSite, rp.aborted = e.Site, true
	}
	if !rp.tr.Started() {
		if fi.op == opInit {
			rp.tr.Start(exit)
			rp.running = true
			rp.cur = rp.tr.Current()
			rp.cur.Value.since = exit
			rp.last = exit
			rp.fix(exit)
			rp.span = spanState{start: exit, ok: true}
			return true
		}
		rp.tr.Start(entry)
		rp.running = true
		rp.cur = rp.tr.Current()
		rp.cur.Value.since = entry
		rp.fix(entry)
		rp.span = spanState{start: entry, ok: true}
	}
	if rp.tr.Ended() {
		return true
	}
	switch fi.op {
	case opFinalize:
		rp.finalized = true
		end := entry
		if rp.thr != nil && rp.last > entry {
			// Another thread's call returned after MPI_Finalize began,
			// which MPI forbids (every other thread's calls complete
			// before it): a damaged trace. The program is taken to end
			// with that call, so that its time stays within the rank's.
			end = rp.last
			rp.warn(fmt.Sprintf("Rank %d: a call of another thread returned %.6f s after MPI_Finalize was entered, which MPI forbids: the trace is damaged; the rank's program is taken to end with that call.", rp.rank, float64(rp.last-entry)/1e9))
		}
		rp.end(end)
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
