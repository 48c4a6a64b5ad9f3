package analyzer

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// exchange is what the per-rank replays share: the messages in flight
// (send entry times, matched as MPI does, see p2p.go), the collective
// instances in progress, and the bookkeeping that keeps a missing,
// truncated or inconsistent trace from hanging the replay.
//
// A replay waits only where the traced program itself could not have
// proceeded: a receive waits for the matching send's entry, a collective
// waits for the entries its shape depends on. (Sends wait only for flow
// control, which gives way whenever waiting would stall the replay.) Since
// the real run respected these dependencies, the replay of a complete,
// consistent run cannot deadlock; when it could (a rank is missing or ends
// early, or the traces disagree), a waiter gives up as soon as the rank it
// waits for has finished, and if every replay waits (a stall, which the
// scheduler detects, sched.go), the one of the lowest rank gives up and
// reports its operation as unmatched.
//
// Waiting means parking the replay's coroutine (sched.go) after saying
// who must wake it: a receiver waiting on its inbox says so in its
// rankSync (waiting) and the sender wakes it (the messages of a key are a
// queue without a lock, p2p.go); x.mu guards the collectives, whose
// waiters are listed in their instance. No lock is held while a replay is
// parked. Lock order: x.mu, then a rank's lock (its inbox's map), then the
// scheduler's.
type exchange struct {
	// Read by every message and wake: kept off the cache line of mu,
	// which the collectives take from every worker (in a profile at two
	// workers, the replay's reads of len(ranks) had become cache misses).
	ranks []*rankSync
	s     *sched
	// solo: a single worker runs every replay (sched.run), one coroutine
	// at a time, each switch a synchronization: the locks below are then
	// not taken. A lock round trip is two atomic instructions, and the
	// replay of a ring exchange took three per iteration in the exchange.
	solo bool
	// stepping: the single worker of a replay (of each process of a
	// distributed one) replays on its own stack what does not wait, and
	// waits before an event rather than in it (step.go).
	stepping bool
	lim      limits
	files    *filePool // the replays' trace files
	// dist connects the exchange to the other processes of a
	// distributed replay (dist.go); nil when one process replays every
	// rank.
	dist *distX
	_    [64]byte

	mu     sync.Mutex
	stalls int // under s.mu
	// Flow control (p2p.go): senders held back, and a generation that
	// releases them all.
	throttled   atomic.Int32
	throttleGen atomic.Uint64
	// colls: the collective instances in progress, by key.
	colls *collTable
	// lastKind is collWaitKind of lastKindFn and lastKindShape: a program
	// calls the same collective instance after instance (under mu).
	lastKindFn    string
	lastKindShape tracepb.Function_Collective
	lastKind      waitKind
	collFree      []*collInst // completed instances to reuse (newCollInst)
	// pendingColls counts the instances in progress per communicator
	// (pending, addPending), but for pendKey's, which pendN holds while
	// pendSet: a program's collectives are mostly on one communicator,
	// and the map's lookups and updates at every instance cost more than
	// the rest of making and completing it.
	pendingColls map[commKey]int
	pendKey      commKey
	pendN        int
	pendSet      bool
	sections     map[sectionKey]int // processors that completed each section instance
	unmatched    unmatchedColls     // instances completed without some members (unmatched.go)

	lastUp, lastDown int64        // waitUp and waitDown at the last sortWake
	sectionOverflow  atomic.Bool  // some replay saw more than maxSectionRuns sections
	droppedSends     atomic.Int64 // sends to a rank whose replay had already finished
	// dropped are those sends by sender, receiver and tag, and the
	// call site of the first (dropSend), so that they are named with the
	// unreceived messages whichever replay finished first.
	dropMu   sync.Mutex
	dropped  map[p2pKey]*unreceived
	progress *Progress // Options.Progress: events replayed (progress.go)
	_        [64]byte
	// Replays that parked waiting for a message from a lower rank (up)
	// or a higher one (down), with several workers (sortWake): off the
	// line of mu.
	waitUp, waitDown atomic.Int64
}

// rankSync is one rank's part of the exchange.
type rankSync struct {
	mu      sync.Mutex // guards the inbox map (not its queues, p2p.go)
	present bool
	// remote: replayed by another process of a distributed replay
	// (dist.go); its done is set when that process says so.
	remote bool
	done   atomic.Bool // the replay finished (set under x.mu and mu)
	// waitOn is the queue of its inbox whose next message the replay
	// is parked for (nil: none): only a message into that queue wakes
	// it. (Woken by any message, a replay of a ring waiting for one
	// neighbour would be woken by the other's messages, and park again.)
	waitOn    waitPtr
	throttled atomic.Bool // held back by flow control
	abort     atomic.Bool // set by the scheduler: give up the current wait
	inbox     map[p2pKey]*fifo
	sweepAt   int           // inbox size that triggers the next sweep (p2p.go)
	deferred  []collContrib // under x.mu
	pendExit  pendingExit   // by its own replay, posted under x.mu
	wakeBuf   []int32       // by its own replay: members to wake (collJoin)
	// collData: collExit found that the exit of the replay's last
	// blocking collective call preceded the latest entry it depends on,
	// and that it must not precede collBound instead (when collBounded):
	// the latest of the members that send data. The replay repairs the
	// call's exit against it (collJoined).
	collBound             int64
	collBounded, collData bool
	yield                 func(struct{}) bool
	parks                 int64 // times the replay parked (by its own replay only)
	// onStack: its replay runs on the worker's stack (replayer.step),
	// where it cannot park; flow control then holds it back after the
	// event, in its coroutine, as dueK and dueF say (throttle). stop:
	// the step must stop after the event (held back, or waiting).
	onStack, stop bool
	dueK          p2pKey
	dueF          *fifo
	// postHanded: by its own replay, the call being replayed handed a
	// receive's posting time to a sender for its late-receiver charge
	// (exchange.taken): the call is a fixed point (clc.go). handedT is
	// the earliest send entry of the messages whose postings it handed.
	postHanded bool
	handedT    int64
	// late holds the Real Sync its receivers charged to the rank's
	// blocking sends for posting late, by lateAtt (under mu; applied once
	// every replay has finished).
	late lateTable
	// iss pairs the synchronous nonblocking sends of the rank with their
	// receives' posting times and the calls that completed them, by
	// serial, whichever comes first (under mu; issendPosted).
	iss map[uint64]*issState
	// The clock-condition violations the controlled logical clock does
	// not repair (report.ClockViolations.Unrepaired), each counted on
	// one rank's rankSync (the rank of the violating call is in the
	// count): unrSsend, the MPI_Ssend calls that returned before the
	// rank's receives of their messages were posted (by its own replay,
	// exchange.taken); unrIss, the rank's Wait/Test calls that completed
	// an MPI_Issend before its receive was posted (under mu, issNote);
	// unrNB and unrThr, the rank's exits of collectives before the
	// entries they depend on: calls completing nonblocking ones, and
	// blocking ones of a multi-threaded process (under x.mu,
	// maybeComplete).
	unrSsend, unrIss unrepaired
	unrNB, unrThr    unrepaired
	// shifts counts, by communicator, the collective instances the rank
	// skipped (resync.go): its calls there go that many instances
	// further than its replay numbers them (collEnterLocked, and
	// distX.enterRemote for a remote rank). Under x.mu.
	shifts map[commKey]uint64
	// open: of a remote rank, the instances its entries were posted to
	// that its exits have not left yet, with the numbers its replay gave
	// them (distX.enterRemote), under x.mu. Its exits name those numbers,
	// which resynchronizing never changes, not instance keys, which it
	// may change on either process at any time.
	open []openColl
	// placed is the instance key the rank's last collective call was
	// posted to, by its own replay (the timeline's, rankObs.coll).
	placed collKey
	// recent are the inbox's entries used last, by key hash (under mu;
	// queueLocked). Last: amid the fields above, it moved those the
	// replay touches on every call onto other cache lines.
	recent [8]inboxEntry
}

// openColl is an instance a remote rank's entry was posted to, by the
// number its replay gave the call.
type openColl struct {
	in   *collInst
	wire collKey
}

// issState is half of a synchronous nonblocking send's pairing: its
// receive's posting time (posted), or the call that completed it.
type issState struct {
	post   int64
	posted bool
	call   *issCall
	from   msgFrom // the receive's rank and call site, with post
}

// issCall is a Wait/Test call that completed synchronous sends, waiting
// for their receives' posting times: it is charged the latest of them
// within the call, minus its entry (a late receiver), unless it also
// completed receives (skip).
type issCall struct {
	entry, exit, best int64
	att               uint64
	pending           int
	skip              bool
	from              msgFrom // the receive that posted at best
}

type p2pKey struct {
	comm     uint64
	src, dst int32 // world ranks
	tag      int32
}

// limits are the bounds that keep the replay's memory from growing with
// the trace; past each, the replay degrades as the constant that gives
// its default says. Tests lower them (Options.limits) to reach those paths
// with small traces.
type limits struct {
	pend         int   // events kept for backward amortization (maxPend)
	pending      int   // messages of one key in flight (maxPending)
	pendingColls int   // collective instances in progress per communicator (maxPendingColls)
	sectionRuns  int   // section execution pieces remembered per processor (maxSectionRuns)
	openFiles    int   // trace files held open at once (defaultOpenFiles, filePool)
	readAhead    int64 // events a replay reads ahead for wildcard completions besides farPer per event (farBase)
}

func defaultLimits() limits {
	return limits{pend: maxPend, pending: maxPending, pendingColls: maxPendingColls, sectionRuns: maxSectionRuns, openFiles: defaultOpenFiles,
		readAhead: farBase}
}

type sectionKey struct {
	num  int64
	inst int
}

// maxPendingColls bounds the collective instances in progress on one
// communicator: a replay that would open a new one past it waits for the
// others to catch up (never when that would stall the replay), so that a
// root running ahead through many MPI_Bcast calls does not hold an
// instance per call in memory. It is the default of limits.pendingColls.
const maxPendingColls = 1024

// commKey names one group of a communicator (by global id; group, its
// first world rank, tells the two groups of an intercommunicator apart).
type commKey struct {
	comm  uint64
	group int32
}

// collKey names a collective instance: the seq-th collective call on a
// communicator (by global id; group tells the two groups of an
// intercommunicator apart).
//
// (The fields are laid out without padding, so that the map of instances
// hashes the key as one block of memory instead of field by field.)
type collKey struct {
	comm  uint64
	seq   uint64
	group int32
	// split: of an intercommunicator's non-rooted collective, whose
	// members are both groups, the index of the second group's first
	// member; 0 otherwise. Each member depends on the other group's
	// entries only (collWaitLocked, maybeComplete).
	split int32
	// n: the number of members. Traces that define one communicator id
	// with different members (mixed or damaged runs; the tracer's ids
	// hash the members) then make instances of their own, whatever the
	// order the ranks are replayed in, instead of meeting in one whose
	// members are those of the rank that came first.
	n int64
}

// collInst is one collective instance while its participants replay it.
type collInst struct {
	key       collKey
	fn        string
	shape     tracepb.Function_Collective
	root      int32      // rank in the communicator, -1 when none
	members   []int32    // world ranks, by communicator rank
	slots     []collSlot // by communicator rank
	nEntry    int
	nExit     int
	maxEntry  int64 // latest entry posted so far
	entryGone int   // members that finished without entering
	exitGone  int   // members that finished without leaving
	waiters   []int32
	mismatch  bool
	// nonblocking: the instance of a nonblocking collective, whose
	// members' exits are the entries of the calls that complete it
	// (icollStart, icollDone).
	nonblocking bool
	// allIn: every member entered or is gone (set under x.mu after the
	// last entry; entries do not change after).
	allIn atomic.Bool
	// checks: a member's exit is to be checked at completion
	// (collAtt.check).
	checks bool
	kind   waitKind // of its participants' Potential Sync (waits.go)
}

// collSlot is one participant's part of a collective instance: its times
// in one place, so that joining an instance touches one cache line of it
// (separate arrays of entries, exits, flags and attributions cost one
// each, missed in cache at 256 ranks since other ranks wrote them).
type collSlot struct {
	entry, exit int64
	// dur: of a nonblocking instance, the duration of the call that
	// completed it (its entry is exit), which bounds its Potential Sync.
	dur               int64
	att               collAtt
	esite             uint32 // the entering call's site (the late site, waits.go)
	espan             uint32 // and its span (causes.go)
	ecomp             int64
	hasEntry, hasExit bool
	gone              bool // the participant lacks this call (resync.go)
	quiet             bool // its call sends no data (collAtt.quiet)
	// wire is the seq its replay numbered the entry with, before
	// resynchronizing: a distributed replay's exit names it (rankSync.open).
	wire uint64
}

// collAtt says where a participant's Potential Sync and Time Variation go.
type collAtt struct {
	node *rnode
	site uint32
	// The call's span (causes.go): the site that began it and its
	// computation up to the call.
	span uint32
	comp int64
	// quiet: the call sends no data (its recorded send count is 0, an
	// MPI_Allgatherv of no elements from this rank …): no member's exit
	// depends on its entry (collExit).
	quiet bool
	// Of the entry of a call whose exit is checked (check), not
	// repaired: loose, its exit depends on no entry (dependsOnEntries);
	// dep, its shape (tracepb.Function_Collective; a nonblocking
	// instance's is NONE, for its waits' kind). Kept in the slot's att
	// when its completion replaces it (icollExitLocked).
	loose bool
	dep   uint8
	// Of a completion posted by icollDone: shared, the call that
	// completed a nonblocking collective also completed point-to-point
	// requests (no Potential Sync); check, its exit is counted when it
	// precedes the entries it depends on (collInst.unbound): the
	// controlled logical clock does not repair it.
	shared, check bool
}

// waitPtr is rankSync.waitOn, read and written atomically unless a
// single worker runs every replay (solo: exchange.solo, the replay on the
// worker's stack, step.go), where a coroutine switch orders everything and
// the replay of a halo exchange parks every few calls: an atomic store is
// an exchange on amd64 and a compare-and-swap a locked instruction, ~20
// cycles each, against a move.
type waitPtr struct{ p unsafe.Pointer }

func (w *waitPtr) load() *fifo { return (*fifo)(atomic.LoadPointer(&w.p)) }

// set makes f the queue waited on.
func (w *waitPtr) set(f *fifo, solo bool) {
	if solo {
		w.p = unsafe.Pointer(f)
	} else {
		atomic.StorePointer(&w.p, unsafe.Pointer(f))
	}
}

// take clears the queue waited on if it is f, and says whether it did.
func (w *waitPtr) take(f *fifo, solo bool) bool {
	if solo {
		if w.p != unsafe.Pointer(f) {
			return false
		}
		w.p = nil
		return true
	}
	return atomic.CompareAndSwapPointer(&w.p, unsafe.Pointer(f), nil)
}

// collCall is a collective call's part in its instance, as collJoin,
// collStep and collEnterLocked take it: its instance's key as its replay
// numbered it, function, shape and root, the communicator's members (world
// ranks) and its index among them, world rank me, entry and exit, whether
// its exit depends on entries (moves, collJoin), whether it is a
// nonblocking start, and its attribution. Passed by pointer: its fifteen
// words would go through the stack at each call.
type collCall struct {
	key                collKey
	fn                 string
	shape              tracepb.Function_Collective
	root               int32
	members            []int32
	idx                int
	me                 int32
	entry, exit        int64
	moves, nonblocking bool
	att                collAtt
}

// collContrib is a participant's share of a completed instance, handed to
// its replay (which owns the accumulators) through rankSync.deferred.
type collContrib struct {
	att     collAtt
	pot, tv int64
	// The participant whose entry the shape's pattern waits for and the
	// pattern's kind (late), and the part of pot that pattern explains
	// (shape); the rest of pot is a wait for the latest participant
	// (rest, kind wait_at_collective). waits.go.
	late, rest collLate
	shape      int64
}

func newExchange(size int, present []bool, lim limits) *exchange {
	x := &exchange{lim: lim, files: newFilePool(lim.openFiles, size), colls: &collTable{}, pendingColls: map[commKey]int{}, sections: map[sectionKey]int{}}
	for r := 0; r < size; r++ {
		rs := &rankSync{present: present[r], inbox: map[p2pKey]*fifo{}, sweepAt: minSweep}
		rs.done.Store(!present[r])
		x.ranks = append(x.ranks, rs)
	}
	return x
}

// lock takes m unless a single worker runs every replay (solo).
func (x *exchange) lock(m *sync.Mutex) {
	if !x.solo {
		m.Lock()
	}
}

// unlock releases m taken by lock.
func (x *exchange) unlock(m *sync.Mutex) {
	if !x.solo {
		m.Unlock()
	}
}

// wake makes rank r check its wait again; by is the rank whose replay
// wakes it, or -1 (sched.wake).
func (x *exchange) wake(r, by int32) {
	if x.s != nil {
		x.s.wake(r, by)
	}
}

// releaseThrottled lets every sender held back by flow control go on.
func (x *exchange) releaseThrottled() {
	x.throttleGen.Add(1)
	for r, rs := range x.ranks {
		if rs.throttled.Load() {
			x.wake(int32(r), -1)
		}
	}
}

// collJoin replays participant idx's (world rank me) call of instance k:
// it posts the entry, waits for the entries it depends on
// (collWaitLocked), and posts the exit, moved to the latest of those
// entries when the call's exit depends on them (moves: dependsOnEntries)
// and left before it — the
// controlled logical clock's forward repair, which the caller applies to
// its own clock too (replayer.repair gives the same time). It returns that
// latest entry (has is false when the participant depends on nobody) and
// the contributions deferred to rank me so far, in buf. mismatch is true
// when the calls of the members disagree (the instance is then not waited
// for).
//
// x.mu is taken once per call: a participant that waited and was woken
// by the entry that completed the instance's entries (collInst.allIn) reads
// what it needs without the lock, and its exit is posted at its next hold
// (its next collective call, or finish). Nobody waits for exits, so that
// only delays the instance's completion, whose contributions are sums; at
// two workers the second hold was most of the lock traffic of the
// collectives (both workers take x.mu, so each hold is a contended cache
// line). Members to wake are woken after x.mu is released.
func (x *exchange) collJoin(c *collCall, buf []collContrib) (latest int64, has, ok, mismatch bool, out []collContrib) {
	idx, me, exit, moves := c.idx, c.me, c.exit, c.moves
	rs := x.ranks[me]
	x.lock(&x.mu)
	x.postExitLocked(rs)
	// Taken at every call, also by a waiter that will not hold x.mu
	// again: a rank that always waits would otherwise pile up a
	// contribution per instance until it finishes.
	out = x.takeDeferred(me, buf[:0])
	in, wake := x.collEnterLocked(c)
	locked := true
	if in.mismatch {
		mismatch = true
	} else {
		latest, has, ok, locked, wake = x.collWaitLocked(in, idx, me, wake)
		exit = collExit(rs, in, idx, exit, latest, has, moves)
	}
	out = x.collLeave(in, idx, me, exit, locked, wake, out)
	return latest, has, ok, mismatch, out
}

// collExit is the exit of participant idx of in, of rank rs, that left
// at exit and depended on entries up to latest: moved to the bound when
// the call's exit depends on entries (moves, collJoin). The bound is latest unless the exit
// precedes it: then only the members that send data count
// (collDataLatest), since an MPI library completes a call without the
// members whose contribution is empty (Open MPI's MPI_Allgatherv returned
// on three ranks 0.6 ms before the fourth, which sent 0 elements, entered
// it). rs keeps that bound for its replay's repair (collJoined).
func collExit(rs *rankSync, in *collInst, idx int, exit, latest int64, has, moves bool) int64 {
	if !has || !moves || exit >= latest+minLatencyNs {
		return exit // inlined: a consistent trace needs no more
	}
	return collExitData(rs, in, idx, exit)
}

// collExitData is collExit when the exit precedes the latest entry.
func collExitData(rs *rankSync, in *collInst, idx int, exit int64) int64 {
	latest, has := collDataLatest(in, idx)
	rs.collBound, rs.collBounded, rs.collData = latest, has, true
	if has && exit < latest+minLatencyNs {
		return latest + minLatencyNs
	}
	return exit
}

// collDataLatest is the latest entry among the participants of in that
// participant idx depends on (collDeps) and that send data (not quiet);
// has is false when none of them entered. Their entries are posted.
func collDataLatest(in *collInst, idx int) (latest int64, has bool) {
	lo, hi := collDeps(in, idx)
	return collDataLatestIn(in, lo, hi)
}

// collDataLatestIn is collDataLatest over participants lo to hi.
func collDataLatestIn(in *collInst, lo, hi int) (latest int64, has bool) {
	for i := lo; i <= hi; i++ {
		if sl := &in.slots[i]; sl.hasEntry && !sl.quiet && (!has || sl.entry > latest) {
			latest, has = sl.entry, true
		}
	}
	return latest, has
}

// collLeave is collJoin's end: it posts participant idx's exit, pending
// when x.mu is no longer held (locked false), and wakes the members in
// wake; it returns the contributions deferred to rank me, appended to out.
func (x *exchange) collLeave(in *collInst, idx int, me int32, exit int64, locked bool, wake []int32, out []collContrib) []collContrib {
	if !locked {
		x.ranks[me].pendExit = pendingExit{in: in, idx: idx, exit: exit}
		return out
	}
	x.collExitLocked(in, idx, exit)
	out = x.takeDeferred(me, out)
	x.unlock(&x.mu)
	x.wakeAll(wake, me)
	return out
}

// collStep is collJoin on the worker's stack (replayer.step), where a
// replay cannot park. When the participant would wait for the first
// time, it is listed among the instance's waiters, the members to wake
// are woken, and collStep returns with w.in set; collResume goes on once
// woken. When its entry would wait for room (flow control of collectives,
// collEnterLocked) it returns throttled before doing anything: collJoin
// replays the call in the coroutine.
func (x *exchange) collStep(w *collStop, c *collCall, buf []collContrib) (latest int64, has, ok, mismatch, throttled bool, out []collContrib) {
	idx, me, exit, moves := c.idx, c.me, c.exit, c.moves
	rs := x.ranks[me]
	if x.collThrottles(rs, c.key) {
		return 0, false, false, false, true, buf
	}
	x.lock(&x.mu)
	x.postExitLocked(rs)
	out = x.takeDeferred(me, buf[:0])
	in, wake := x.collEnterLocked(c)
	if in.mismatch {
		mismatch = true
	} else {
		lo, hi := collDeps(in, idx)
		ok = true
		if hi >= lo {
			if !x.collReady(in, lo, hi) {
				in.waiters = append(in.waiters, me)
				x.unlock(&x.mu)
				x.wakeAll(wake, me)
				*w = collStop{in: in, idx: idx, lo: lo, hi: hi, exit: exit, moves: moves}
				return 0, false, false, false, false, out
			}
			latest, has, ok = x.collLatest(in, lo, hi, ok)
			exit = collExit(rs, in, idx, exit, latest, has, moves)
		}
	}
	out = x.collLeave(in, idx, me, exit, true, wake, out)
	return latest, has, ok, mismatch, false, out
}

// collStop is a participant's wait in a collective instance on the
// worker's stack (collStep): its index, the range of participants whose
// entries it waits for (collDeps), and its exit and whether it depends
// on them (moves, collJoin).
type collStop struct {
	in     *collInst
	idx    int
	lo, hi int
	exit   int64
	moves  bool
}

// collResume goes on with wait w of rank me after a wake, as
// collWaitLocked does after a park: done is false when the entries it
// waits for are still not all posted (it stays among the waiters). Its
// results, when done, are collJoin's; out is buf with the contributions
// deferred to me appended.
func (x *exchange) collResume(w *collStop, me int32, buf []collContrib) (latest int64, has, ok, done bool, out []collContrib) {
	in := w.in
	locked := false
	if in.allIn.Load() {
		// (collWaitLocked's read without the lock.)
		latest, has, ok = x.collLatest(in, w.lo, w.hi, true)
	} else {
		x.lock(&x.mu)
		if !x.collReady(in, w.lo, w.hi) {
			x.unlock(&x.mu)
			return 0, false, false, false, buf
		}
		in.dropWaiter(me)
		latest, has, ok = x.collLatest(in, w.lo, w.hi, true)
		locked = true
	}
	exit := collExit(x.ranks[me], in, w.idx, w.exit, latest, has, w.moves)
	return latest, has, ok, true, x.collLeave(in, w.idx, me, exit, locked, nil, buf)
}

// collFinish finishes wait w of rank me in its coroutine, where it parks
// as collJoin does (a replay released at a stall while stopped on the
// worker's stack gives its wait up there: exchange.park).
func (x *exchange) collFinish(w *collStop, me int32, buf []collContrib) (latest int64, has, ok bool, out []collContrib) {
	latest, has, ok, locked := x.collAwait(w.in, w.lo, w.hi, me)
	exit := collExit(x.ranks[me], w.in, w.idx, w.exit, latest, has, w.moves)
	return latest, has, ok, x.collLeave(w.in, w.idx, me, exit, locked, nil, buf)
}

// collThrottles says whether rank rs's entry to its collective instance k
// would wait for room (collEnterLocked's flow control). x.mu is not held:
// only with one worker (exchange.solo).
func (x *exchange) collThrottles(rs *rankSync, k collKey) bool {
	ck := commKey{k.comm, k.group}
	if rs.shifts != nil {
		k.seq += rs.shifts[ck]
	}
	return x.pending(ck) >= x.lim.pendingColls && x.coll(k) == nil
}

// pending is the number of instances in progress on ck. x.mu is held.
func (x *exchange) pending(ck commKey) int {
	if x.pendSet && x.pendKey == ck {
		return x.pendN
	}
	return x.pendingColls[ck]
}

// addPending adds d to the instances in progress on ck, whose count then
// moves out of the map into pendN (a count of 0 leaves the map, so that
// it holds the communicators with instances in progress). x.mu is held.
func (x *exchange) addPending(ck commKey, d int) {
	if !x.pendSet || x.pendKey != ck {
		if x.pendSet && x.pendN != 0 {
			x.pendingColls[x.pendKey] = x.pendN
		}
		n, ok := x.pendingColls[ck]
		if ok {
			delete(x.pendingColls, ck)
		}
		x.pendKey, x.pendN, x.pendSet = ck, n, true
	}
	x.pendN += d
}

// pendingExit is the exit of rank's last collective call when it was left
// without the lock (collJoin); posted at the rank's next hold of x.mu.
type pendingExit struct {
	in   *collInst
	idx  int
	exit int64
}

// postExitLocked posts rank rs's pending exit, if any. x.mu is held.
func (x *exchange) postExitLocked(rs *rankSync) {
	if rs.pendExit.in != nil {
		x.collExitLocked(rs.pendExit.in, rs.pendExit.idx, rs.pendExit.exit)
		rs.pendExit = pendingExit{}
	}
}

// wakeAll wakes the ranks in rs, woken by rank by's replay; no lock of the
// exchange is held. (Waking after the lock that guards the wait was
// released is safe: a waiter woken before it parks is put back on the run
// queue when it does, sched.wakeLocked.)
func (x *exchange) wakeAll(rs []int32, by int32) {
	if len(rs) > 0 && x.s != nil {
		x.s.wakeAll(rs, by)
	}
}

// collEnterLocked posts the entry of call c (participant c.idx, world
// rank c.me) to the instance of its call numbered c.key by its replay, and
// returns the instance and the members to wake once x.mu is released (in
// a buffer of rank c.me's). x.mu is held. What nearly every call skips
// (flow control, a resynchronization, the distributed replay) is in
// functions of its own, not inlined, apart from the lines the common path
// runs: an all-to-all program's iteration (its collective's path and its
// point-to-point calls) runs more code than the L1 instruction cache
// holds.
func (x *exchange) collEnterLocked(c *collCall) (*collInst, []int32) {
	k := c.key
	ck := commKey{k.comm, k.group}
	rs := x.ranks[c.me]
	if rs.shifts != nil {
		// (Tested first: nearly always nil, and a lookup in a nil map
		// is a call of the runtime all the same.)
		k.seq += rs.shifts[ck]
	}
	in := x.coll(k)
	if in == nil && x.pending(ck) >= x.lim.pendingColls {
		in = x.collThrottleLocked(&k, c, rs)
	}
	var woken []int32
	if in == nil || misfit(in, c.fn, c.root, c.members, c.idx) {
		in, woken = x.collPlaceLocked(&k, in, c)
	}
	rs.placed = in.key
	idx := c.idx
	if !sameFn(in.fn, c.fn) || in.root != c.root || len(in.members) != len(c.members) || idx >= len(in.members) || in.slots[idx].hasEntry {
		in.mismatch = true
		return in, woken
	}
	sl := &in.slots[idx]
	sl.att, sl.wire = c.att, c.key.seq
	if c.nonblocking && !in.mismatch {
		in.nonblocking = true
	}
	if x.dist != nil {
		x.distEntered(in, c)
	}
	wake := x.postEntryLocked(in, idx, c.entry, c.att.site, c.att.span, c.att.comp, c.att.quiet, rs.wakeBuf[:0])
	if wake != nil {
		rs.wakeBuf = wake[:0] // kept for the next call
	}
	if len(woken) > 0 {
		wake = appendWoken(wake, woken)
	}
	return in, wake
}

// collThrottleLocked is collEnterLocked's flow control: rank rs, the
// first at instance k of call c and already far ahead of the others on
// its communicator, waits for them to catch up. It returns the instance
// at k (k renumbered when a resynchronization shifted it), nil when
// nobody made it meanwhile. x.mu is held, and released while parked.
//
//go:noinline
func (x *exchange) collThrottleLocked(k *collKey, c *collCall, rs *rankSync) *collInst {
	ck := commKey{k.comm, k.group}
	gen := x.throttleGen.Load()
	rs.throttled.Store(true)
	x.throttled.Add(1)
	for x.throttleGen.Load() == gen && x.pending(ck) >= x.lim.pendingColls/2 {
		x.unlock(&x.mu)
		x.park(c.me) // a stall releases throttled replays, never aborts them
		x.lock(&x.mu)
	}
	rs.throttled.Store(false)
	x.throttled.Add(-1)
	// Somebody may have made it meanwhile, or resynchronized the
	// instances this rank is in.
	k.seq = c.key.seq + rs.shifts[ck]
	return x.coll(*k)
}

// collPlaceLocked is the instance call c joins at key k when in, the
// instance there, is nil (a new one is made) or disagrees with the call
// (misfit: a member's trace lacks a call, resynchronize); woken are the
// members to wake. x.mu is held.
//
//go:noinline
func (x *exchange) collPlaceLocked(k *collKey, in *collInst, c *collCall) (_ *collInst, woken []int32) {
	var left []int
	if in != nil {
		in, left, woken = x.resyncLocked(k, in, c.fn, c.root, c.members, c.idx, c.me, c.entry)
	}
	if in == nil {
		in = x.newCollLocked(*k, c.fn, c.shape, c.root, c.members)
		for _, i := range left {
			woken = x.leaveLocked(in, i, woken)
		}
	}
	return in, woken
}

// distEntered hands the entry of call c to instance in to the
// distributed replay (distX.entered), with its key as its replay
// numbered it. x.mu is held.
//
//go:noinline
func (x *exchange) distEntered(in *collInst, c *collCall) {
	x.dist.entered(in, c.key, c.shape, c.idx, c.me, c.entry, c.att, c.nonblocking)
}

// appendWoken is append(wake, woken...), out of collEnterLocked's line.
//
//go:noinline
func appendWoken(wake, woken []int32) []int32 {
	return append(wake, woken...)
}

// sameFn says whether function names a and b are equal: nearly always
// the same bytes (fnInfo.nameH), compared without a call.
func sameFn(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// coll is the instance in progress of key k, or nil. x.mu is held.
func (x *exchange) coll(k collKey) *collInst {
	return x.colls.get(k)
}

// newCollInst is a new instance k of collective fn; x.mu is held. It
// reuses an instance that completed (collFree): a program calling
// collectives in a loop would otherwise allocate an instance and its
// slots per call.
func (x *exchange) newCollInst(k collKey, fn string, shape tracepb.Function_Collective, root int32, members []int32) *collInst {
	n := len(members)
	var slots []collSlot
	var waiters []int32
	var in *collInst
	if m := len(x.collFree); m > 0 && cap(x.collFree[m-1].slots) >= n {
		in = x.collFree[m-1]
		x.collFree = x.collFree[:m-1]
		slots, waiters = in.slots[:n], in.waiters[:0]
		clear(slots)
	} else {
		in = &collInst{}
		slots = make([]collSlot, n)
	}
	kind := x.lastKind
	if !sameFn(fn, x.lastKindFn) || shape != x.lastKindShape {
		kind = collWaitKind(fn, shape)
		x.lastKindFn, x.lastKindShape, x.lastKind = fn, shape, kind
	}
	*in = collInst{key: k, fn: fn, shape: shape, root: root, members: members,
		slots: slots, waiters: waiters, kind: kind}
	return in
}

// recycle keeps completed instance in for newCollInst when nothing refers
// to it any more: every member left it itself (none finished or skipped
// it: a replay still waiting in an instance completed without it reads
// it when it resumes), and no other process shares it. x.mu is held.
func (x *exchange) recycle(in *collInst) {
	if x.dist == nil && in.nExit == len(in.members) && !in.mismatch && len(x.collFree) < maxCollFree {
		x.collFree = append(x.collFree, in)
	}
}

// maxCollFree bounds the completed instances kept for reuse.
const maxCollFree = 64

// postEntryLocked posts the entry of participant idx of in (entered at
// entry from call site site, with its span and computation) and returns
// the members to wake, appended to buf. x.mu is held.
func (x *exchange) postEntryLocked(in *collInst, idx int, entry int64, site, span uint32, comp int64, quiet bool, buf []int32) []int32 {
	sl := &in.slots[idx]
	sl.entry, sl.hasEntry, sl.esite, sl.quiet = entry, true, site, quiet
	sl.espan, sl.ecomp = span, comp
	if in.nEntry == 0 || entry > in.maxEntry {
		in.maxEntry = entry
	}
	in.nEntry++
	all := in.nEntry+in.entryGone == len(in.members)
	if all {
		// Every entry is final now: woken waiters may read them without
		// x.mu (collWaitLocked).
		in.allIn.Store(true)
	}
	var wake []int32
	if len(in.waiters) > 0 && (all || idx == int(in.root) || in.shape == tracepb.Function_PREFIX) {
		wake = append(buf, in.waiters...)
		if all && !x.solo {
			x.sortWake(wake)
		}
		if all {
			// Every waiter is ready now, whatever the shape: none waits
			// again, so none needs to find and remove itself (which was
			// quadratic in the communicator size, under the global lock).
			in.waiters = in.waiters[:0]
		}
	}
	return wake
}

// collWaitLocked waits until the entries that participant idx depends on
// (by the collective's shape) are posted, and returns the latest of them;
// has is false when the participant depends on nobody (or nobody came).
// x.mu is held and released while parked; locked is false when it was not
// taken again (the waiter was woken with every entry in, collJoin). The
// members in wake are woken before it parks; those it returns are still
// to wake.
func (x *exchange) collWaitLocked(in *collInst, idx int, me int32, wake []int32) (latest int64, has, ok, locked bool, _ []int32) {
	lo, hi := collDeps(in, idx)
	if hi < lo || in.mismatch {
		return 0, false, true, true, wake
	}
	// A participant waits for every member it depends on that is still
	// to come, also when another will never come (its trace is missing
	// or ends, or it lacks the call): the latest entry, and so the
	// clock-condition repair and the figures, are then those of every
	// member present, whichever replay got there first.
	if !x.collReady(in, lo, hi) {
		in.waiters = append(in.waiters, me)
		x.unlock(&x.mu)
		x.wakeAll(wake, me)
		latest, has, ok, locked = x.collAwait(in, lo, hi, me)
		return latest, has, ok, locked, nil
	}
	latest, has, ok = x.collLatest(in, lo, hi, true)
	return latest, has, ok, true, wake
}

// collDeps is the range [lo, hi] of the participants (communicator ranks)
// whose entries participant idx of in depends on, by the collective's
// shape; empty (hi < lo) when none.
func collDeps(in *collInst, idx int) (lo, hi int) {
	return collDepsOf(in, idx, in.shape)
}

// collDepsOf is collDeps for a call of shape shape.
func collDepsOf(in *collInst, idx int, shape tracepb.Function_Collective) (lo, hi int) {
	n := len(in.members)
	lo, hi = 0, -1
	switch shape {
	case tracepb.Function_ALL_TO_ALL:
		lo, hi = 0, n-1
		if s := int(in.key.split); s > 0 && s < n {
			// An intercommunicator's: the other group.
			if idx < s {
				lo = s
			} else {
				hi = s - 1
			}
		}
	case tracepb.Function_ONE_TO_ALL:
		if in.root >= 0 && int(in.root) < n && idx != int(in.root) {
			lo, hi = int(in.root), int(in.root)
		}
	case tracepb.Function_ALL_TO_ONE:
		if idx == int(in.root) {
			lo, hi = 0, n-1
		}
	case tracepb.Function_PREFIX:
		lo, hi = 0, idx
	}
	return lo, hi
}

// collReady says whether participants lo to hi of in have all entered,
// left it or finished. x.mu is held.
func (x *exchange) collReady(in *collInst, lo, hi int) bool {
	if lo == 0 && hi == len(in.members)-1 {
		return in.nEntry+in.entryGone >= len(in.members)
	}
	for i := lo; i <= hi; i++ {
		if !in.slots[i].hasEntry && !in.slots[i].gone && !x.ranks[in.members[i]].done.Load() {
			return false
		}
	}
	return true
}

// collAwait parks rank me, listed among in's waiters, until participants
// lo to hi have entered (collReady), or a stall makes it give up (ok
// false), and returns the latest of their entries. x.mu is not held; it
// is held on return when locked (the waiter was not woken with every
// entry in, collJoin).
//
// In a distributed replay the entries of this process's members go out
// with the records that follow (distX.busy, idle), not at each wait: an
// instance is complete only once every member has entered, and the other
// members a process replays mostly enter in the turns that follow, so
// sending at each wait sent one MPI message per member and instance (64
// per Allreduce of a 128-rank stencil at two processes) and made the
// processes wait on each other more, not less.
func (x *exchange) collAwait(in *collInst, lo, hi int, me int32) (latest int64, has, ok, locked bool) {
	ok = true
	for {
		aborted := x.park(me)
		if !aborted && in.allIn.Load() {
			// Woken by the last entry (which also emptied
			// in.waiters): every entry is final and was written
			// before allIn, so they are read without the lock.
			latest, has, ok = x.collLatest(in, lo, hi, true)
			return latest, has, ok, false
		}
		x.lock(&x.mu)
		if aborted {
			ok = false
			break
		}
		if x.collReady(in, lo, hi) {
			break
		}
		x.unlock(&x.mu)
	}
	in.dropWaiter(me)
	latest, has, ok = x.collLatest(in, lo, hi, ok)
	return latest, has, ok, true
}

// dropWaiter takes rank me off in's waiters. x.mu is held.
func (in *collInst) dropWaiter(me int32) {
	for i, w := range in.waiters {
		if w == me {
			in.waiters = append(in.waiters[:i], in.waiters[i+1:]...)
			return
		}
	}
}

// collLatest returns the latest entry posted among participants lo to hi
// of instance in, and whether all of them entered (and ok). Either x.mu is
// held or in.allIn is set.
func (x *exchange) collLatest(in *collInst, lo, hi int, ok bool) (latest int64, has, _ bool) {
	n := len(in.members)
	if lo == 0 && hi == n-1 {
		// The common all-to-all case in O(1).
		return in.maxEntry, in.nEntry > 0, ok && in.nEntry == n
	}
	complete := true
	for i := lo; i <= hi; i++ {
		if !in.slots[i].hasEntry {
			complete = false
		} else if !has || in.slots[i].entry > latest {
			latest, has = in.slots[i].entry, true
		}
	}
	return latest, has, ok && complete
}

// collExitLocked posts a participant's exit; the participant that
// completes the instance computes everybody's Potential Sync and Time
// Variation. x.mu is held.
func (x *exchange) collExitLocked(in *collInst, idx int, exit int64) {
	if idx >= len(in.members) {
		return
	}
	if sl := &in.slots[idx]; sl.hasEntry && !sl.hasExit {
		sl.exit, sl.hasExit = exit, true
		in.nExit++
		if x.dist != nil && !x.ranks[in.members[idx]].remote {
			x.dist.left(in, idx, exit, 0, false)
		}
		x.maybeComplete(in)
	}
}

// takeDeferred appends the contributions deferred to rank me to buf.
// When buf is empty, the two slices trade places instead: the replay
// gets the deferred ones without a copy (a contribution holds a pointer,
// so appending copies them with the write barrier's bookkeeping), and
// its buffer's array takes the rank's next ones. The two arrays never
// meet: the caller keeps only what is returned. x.mu is held.
func (x *exchange) takeDeferred(me int32, buf []collContrib) []collContrib {
	rs := x.ranks[me]
	if len(buf) == 0 {
		out := rs.deferred
		rs.deferred = buf
		return out
	}
	buf = append(buf, rs.deferred...)
	rs.deferred = rs.deferred[:0]
	return buf
}

// maybeComplete finishes an instance once every participant has left it or
// is gone. x.mu is held.
func (x *exchange) maybeComplete(in *collInst) {
	if in.nExit+in.exitGone < len(in.members) {
		return
	}
	x.colls.del(in)
	ck := commKey{in.key.comm, in.key.group}
	x.addPending(ck, -1)
	if x.throttled.Load() > 0 && x.pending(ck) < x.lim.pendingColls/2 {
		x.releaseThrottled()
	}
	if in.nExit < len(in.members) || in.mismatch {
		x.noteUnmatched(in)
	}
	// By group: an intercommunicator's non-rooted instance (key.split)
	// has its members depend on the other group's entries; any other
	// instance is one group.
	split := int(in.key.split)
	if split <= 0 || split >= len(in.slots) {
		split = len(in.slots)
	}
	var maxEntry [2]int64
	var maxExit int64
	firstExit := true
	lateIdx := [2]int{-1, -1}
	for i := range in.slots {
		sl := &in.slots[i]
		if !sl.hasExit {
			continue
		}
		g := 0
		if i >= split {
			g = 1
		}
		if lateIdx[g] < 0 || sl.entry > maxEntry[g] {
			maxEntry[g] = sl.entry
			lateIdx[g] = i
		}
		if firstExit || sl.exit > maxExit {
			maxExit = sl.exit
		}
		firstExit = false
	}
	// dep is the group whose entries group g depends on.
	dep := func(g int) int {
		if split == len(in.slots) {
			return 0
		}
		return 1 - g
	}
	late := [2]collLate{in.latest(lateIdx[0]), in.latest(lateIdx[1])}
	sh := in.newShapeWaits()
	for i, m := range in.members {
		sl := &in.slots[i]
		if !sl.hasExit {
			continue
		}
		g := 0
		if i >= split {
			g = 1
		}
		d := dep(g)
		if lateIdx[d] < 0 {
			continue // nobody of the other group came
		}
		rs := x.ranks[m]
		// (Built in its place in the rank's deferred contributions: a
		// contribution is 120 bytes, built and then copied by append
		// otherwise.)
		n := len(rs.deferred)
		rs.deferred = append(rs.deferred, collContrib{})
		c := &rs.deferred[n]
		c.att, c.pot, c.tv, c.late = sl.att, max(0, maxEntry[d]-sl.entry), maxExit-sl.exit, late[d]
		if in.nonblocking {
			me := maxEntry[d]
			if split == len(in.slots) {
				me = in.maxEntry // every entry, completed or not
			}
			nonblockingContrib(c, sl, me)
		}
		sh.split(in, i, c)
		if rs.remote {
			rs.deferred = rs.deferred[:n] // its own process adds it
		}
	}
	if in.checks {
		x.countUnbound(in)
	}
	x.recycle(in)
}

// noteUnmatched counts completed instance in among the unmatched
// collectives (a member never left it, or the members' calls disagree),
// unless another process of the distributed replay counts it. x.mu is
// held. (Out of maybeComplete's line, as nonblockingContrib: see
// collEnterLocked.)
//
//go:noinline
func (x *exchange) noteUnmatched(in *collInst) {
	if x.dist == nil || x.dist.notes(in) {
		x.unmatched.note(in, len(x.ranks))
	}
}

// nonblockingContrib sets the Potential Sync of contribution c of slot sl
// of a nonblocking instance whose latest start is latest: the loss is
// suffered in the completing call (entered at sl.exit), the latest start
// minus its entry, within its own time; no Time Variation (analyzer
// package doc).
//
//go:noinline
func nonblockingContrib(c *collContrib, sl *collSlot, latest int64) {
	c.pot, c.tv = min(sl.dur, max(0, latest-sl.exit)), 0
	if sl.att.shared {
		c.pot = 0
	}
}

// countUnbound counts, on their ranks, the exits of the members of
// completed instance in that precede their bound and are not repaired
// (collAtt.check, collInst.unbound). x.mu is held.
func (x *exchange) countUnbound(in *collInst) {
	if in.nonblocking && in.key.split > 0 {
		// An intercommunicator's: Open MPI's MPI_Ibarrier there (libnbc)
		// completes a member once the other group's first member has
		// heard from its whole group, not the other members of that
		// group; so a member leaves before some others start without any
		// clock error (e2e TestFamiliesFortran, intercomm).
		return
	}
	for i, m := range in.members {
		sl := &in.slots[i]
		rs := x.ranks[m]
		if !sl.hasExit || !sl.att.check || rs.remote {
			continue
		}
		if v := in.unbound(i); v > 0 {
			u := &rs.unrThr
			if in.nonblocking {
				u = &rs.unrNB
			}
			u.note(v, m)
		}
	}
}

// unbound is how long before the latest entry it depends on participant
// i's exit was, which the controlled logical clock does not repair
// (collAtt.check): the exit of the call completing a nonblocking
// collective (slot.exit is that call's entry, slot.dur its duration), or
// of a blocking one of a multi-threaded process (characteristics.md §8.5,
// §8.10). Its bound follows the rule
// of a blocking call's repair (collExit): the entries its shape depends
// on, of the members that send data, unless its own call waits for
// nobody (collAtt.loose). 0 when none. x.mu is held.
func (in *collInst) unbound(i int) int64 {
	sl := &in.slots[i]
	end := sl.exit + sl.dur
	if sl.att.loose || end >= in.maxEntry+minLatencyNs {
		return 0 // (no entry is later)
	}
	shape := in.shape
	if in.nonblocking {
		shape = tracepb.Function_Collective(sl.att.dep)
	}
	lo, hi := collDepsOf(in, i, shape)
	latest, has := collDataLatestIn(in, lo, hi)
	if !has || end >= latest+minLatencyNs {
		return 0
	}
	return latest + minLatencyNs - end
}

// unrepaired counts clock-condition violations that the controlled
// logical clock does not repair: how many, the largest (ns) and the rank
// of the call that ended too early there (the lowest of those with the
// largest, whatever the order they were found in).
type unrepaired struct {
	n, worst int64
	rank     int32
}

// note counts a violation of d ns at rank r.
func (u *unrepaired) note(d int64, r int32) {
	u.n++
	if u.n == 1 || d > u.worst || (d == u.worst && r < u.rank) {
		u.worst, u.rank = d, r
	}
}

// add adds the counts of v.
func (u *unrepaired) add(v unrepaired) {
	if v.n == 0 {
		return
	}
	if u.n == 0 || v.worst > u.worst || (v.worst == u.worst && v.rank < u.rank) {
		u.worst, u.rank = v.worst, v.rank
	}
	u.n += v.n
}

// icollStart posts the start of participant idx (world rank me) of a
// nonblocking collective instance k: its entry only, since the start waits
// for nobody; the instance's exits are posted by the calls that complete it
// (icollDone). It returns the instance (nil when the members' calls
// disagree) and the contributions deferred to rank me so far, in buf.
// shape is the collective's shape and nonblocking true for a nonblocking
// collective; a blocking one of a multi-threaded process is posted in the
// same two steps (threads.go): entry, then exit with icollDone. att is
// the starting call's site with its span (causes.go) and what its data
// tells (startAtt).
func (x *exchange) icollStart(k collKey, fn string, shape tracepb.Function_Collective, nonblocking bool, root int32, members []int32, idx int, me int32, entry int64, att collAtt, buf []collContrib) (*collInst, []collContrib) {
	rs := x.ranks[me]
	x.lock(&x.mu)
	x.postExitLocked(rs)
	out := x.takeDeferred(me, buf[:0])
	c := collCall{key: k, fn: fn, shape: shape, root: root, members: members, idx: idx, me: me, entry: entry, nonblocking: nonblocking, att: att}
	in, wake := x.collEnterLocked(&c)
	x.unlock(&x.mu)
	x.wakeAll(wake, me)
	if in.mismatch {
		return nil, out
	}
	return in, out
}

// icollDone posts the completion of participant idx (world rank me) of
// nonblocking instance in by a call entered at entry lasting dur, whose
// Potential Sync goes to att (of a blocking instance: the call's exit,
// and dur 0); it returns the contributions deferred to
// rank me so far, in buf.
func (x *exchange) icollDone(in *collInst, idx int, me int32, entry, dur int64, att collAtt, buf []collContrib) []collContrib {
	rs := x.ranks[me]
	x.lock(&x.mu)
	x.postExitLocked(rs)
	x.icollExitLocked(in, idx, entry, dur, att)
	out := x.takeDeferred(me, buf[:0])
	x.unlock(&x.mu)
	return out
}

// icollExitLocked posts the completion of participant idx of nonblocking
// instance in by a call entered at entry lasting dur (icollDone). x.mu is
// held.
func (x *exchange) icollExitLocked(in *collInst, idx int, entry, dur int64, att collAtt) {
	if sl := &in.slots[idx]; sl.hasEntry && !sl.hasExit && !in.mismatch {
		att.loose, att.dep = sl.att.loose, sl.att.dep
		in.checks = in.checks || att.check
		sl.exit, sl.dur, sl.att, sl.hasExit = entry, dur, att, true
		in.nExit++
		if x.dist != nil && !x.ranks[in.members[idx]].remote {
			x.dist.left(in, idx, entry, dur, true)
		}
		x.maybeComplete(in)
	}
}

// finish marks rank me's replay as ended: whoever waits for it gives up,
// and instances it will never join are completed without it. It returns the
// last deferred contributions. (Messages left in its inbox are counted
// once every replay has finished, exchange.unreceived: a sender may be
// posting one as it finishes.)
func (x *exchange) finish(me int32, buf []collContrib) (out []collContrib) {
	x.lock(&x.mu)
	defer x.unlock(&x.mu)
	rs := x.ranks[me]
	x.postExitLocked(rs)
	if x.dist != nil {
		x.dist.finished(me)
	}
	x.doneLocked(me)
	return x.takeDeferred(me, buf[:0])
}

// doneLocked marks rank me's replay as ended: waits for it give up, and
// the instances it will never join complete without it. x.mu is held.
func (x *exchange) doneLocked(me int32) {
	rs := x.ranks[me]
	x.lock(&rs.mu)
	rs.done.Store(true)
	x.unlock(&rs.mu)
	rs.open = nil // no exit follows its end
	for _, in := range x.colls.all() {
		for i, m := range in.members {
			if m != me {
				continue
			}
			if in.slots[i].gone {
				continue
			}
			if !in.slots[i].hasEntry {
				in.entryGone++
			}
			if !in.slots[i].hasExit {
				in.exitGone++
			}
		}
	}
	for _, in := range x.colls.all() {
		x.maybeComplete(in)
	}
	if x.s != nil {
		x.s.wakeOthers(me)
	}
}

// lateReceiver charges d ns of waiting for a late receiver to the blocking
// send of rank src that att names (replayer.lateAtt); by the receiver's
// replay, which has just matched the message. Rare: only sends that
// waited for their receive.
func (x *exchange) lateReceiver(src int32, att uint64, d int64, dst int32, rsite uint32) {
	rs := x.ranks[src]
	if rs.remote {
		x.dist.lateReceiver(src, att, d, dst, rsite)
		return
	}
	x.lock(&rs.mu)
	rs.addLate(lateKey{att: att, from: msgFrom{rank: dst, site: rsite}}, d)
	x.unlock(&rs.mu)
}

// issendPosted reports the posting time of the receive of rank src's
// synchronous send serial; by the receiver's replay.
func (x *exchange) issendPosted(src int32, serial uint64, post int64, dst int32, rsite uint32) {
	rs := x.ranks[src]
	if rs.remote {
		x.dist.issendPosted(src, serial, post, dst, rsite)
		return
	}
	from := msgFrom{rank: dst, site: rsite}
	x.lock(&rs.mu)
	if st := rs.iss[serial]; st != nil {
		delete(rs.iss, serial)
		rs.issNote(st.call, post, from, true, src)
	} else {
		if rs.iss == nil {
			rs.iss = map[uint64]*issState{}
		}
		rs.iss[serial] = &issState{post: post, posted: true, from: from}
	}
	x.unlock(&rs.mu)
}

// issendWaited reports that rank me's Wait/Test call entered at entry and
// left at exit, charged at att, completed the synchronous sends serials;
// skip when it also completed receives. By the sender's replay.
func (x *exchange) issendWaited(me int32, serials []uint64, entry, exit int64, att uint64, skip bool) {
	rs := x.ranks[me]
	c := &issCall{entry: entry, exit: exit, best: entry, att: att, pending: 1, skip: skip}
	x.lock(&rs.mu)
	for _, s := range serials {
		if st := rs.iss[s]; st != nil && st.posted {
			delete(rs.iss, s)
			rs.issNote(c, st.post, st.from, true, me)
			continue
		}
		if rs.iss == nil {
			rs.iss = map[uint64]*issState{}
		}
		rs.iss[s] = &issState{call: c}
		c.pending++
	}
	rs.issNote(c, 0, msgFrom{}, false, me)
	x.unlock(&rs.mu)
}

// issNote adds a posting time (when has) to c, a call of rank me, and,
// once c has them all, charges it. rs.mu is held. A posting after c's
// exit breaks the clock condition (the send cannot complete before its
// receive is posted): the clocks' alignment erred by that much, which is
// counted (unrIss), and the call waited for the receiver until its exit.
func (rs *rankSync) issNote(c *issCall, post int64, from msgFrom, has bool, me int32) {
	if has && post > c.exit {
		rs.unrIss.note(post-c.exit, me)
	}
	if post = min(post, c.exit); has && post > c.best {
		c.best, c.from = post, from
	}
	if c.pending--; c.pending == 0 && !c.skip && c.best > c.entry {
		rs.addLate(lateKey{att: c.att, from: c.from}, c.best-c.entry)
	}
}

// sectionDone counts one more processor that completed a section instance.
func (x *exchange) sectionDone(k sectionKey) {
	x.lock(&x.mu)
	x.sections[k]++
	x.unlock(&x.mu)
}

// sortWake orders the members a completed collective instance wakes
// (in.waiters: in arrival order) by rank, ascending when most of the
// replays that parked on a message since the last time waited for a lower
// rank, descending when most waited for a higher one; otherwise it leaves
// them in arrival order. Only with several workers. x.mu is held.
//
// One worker resumes them in arrival order, which for a ring exchange is
// the direction the messages flow, and keeps it: each replay finds the
// messages of its neighbour posted, and one chain of replays parks per
// collective (those after the neighbour that arrived last). With several
// workers the arrivals interleave the workers' blocks, and every replay
// that parked in a chain arrives late: the order breaks into many short
// chains, each of whose replays parks once. On the ring benchmark (a
// collective every 16 iterations) two workers parked 1.5 times as often as
// one. The direction of the messages the replays had to wait for is the
// order in which they find them posted.
func (x *exchange) sortWake(rs []int32) {
	up, down := x.waitUp.Load(), x.waitDown.Load()
	dUp, dDown := up-x.lastUp, down-x.lastDown
	x.lastUp, x.lastDown = up, down
	switch {
	case dUp > 2*dDown:
		slices.Sort(rs)
	case dDown > 2*dUp:
		slices.SortFunc(rs, func(a, b int32) int { return cmp.Compare(b, a) })
	}
}
