package analyzer

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"sync"
)

// sched runs the per-rank replays on a few worker goroutines. Each replay
// is a coroutine (iter.Pull): it runs on a worker until it has to wait for
// another rank (a receive whose send has not been replayed yet, a
// collective whose members have not all entered, flow control), then parks
// (yields back to its worker), and the rank that satisfies the wait puts it
// back on the run queue. A coroutine switch costs tens of nanoseconds,
// against microseconds for waking a goroutine blocked on a condition
// variable from another thread, and only Workers threads ever compete for
// the locks of the exchange. (A single worker runs most of a replay on
// its own stack instead, where waiting for a message or a collective's
// entries needs no switch at all, and the coroutine only for the events
// that may wait otherwise: step.go.)
//
// Because the scheduler knows every replay's state, it also detects the
// stalls that a missing, cut or inconsistent trace can cause: when no
// replay runs and none is queued while some are parked, nothing can ever
// satisfy their waits. It then releases the replays held back by flow
// control if there are any (flow control never causes a stall), and
// otherwise makes the parked replay of the lowest rank give up its wait
// (its operation is reported unmatched); the others go on waiting, since
// what the released one does next may satisfy them. Every replay parks
// where its own trace cannot go on, so the replays parked at a stall, and
// so the one released, do not depend on the order the workers ran them
// in (nor on how a distributed replay splits the ranks: its lowest
// process with a parked replay releases its lowest, distX.act).
//
// Each worker owns a contiguous block of ranks and its own FIFO run queue;
// a woken replay goes to its owner's queue, and a worker whose queue is
// empty takes from another's. Neighbouring ranks exchange most messages,
// so a worker mostly resumes replays whose partners it has just run. In
// FIFO order, after a collective completes its members resume in the order
// they arrived, which for a ring exchange is the direction the messages
// flow: a replay usually finds its messages already posted and runs many
// iterations before it parks again. (With several workers, in the order of
// the ranks the waits for messages point to, exchange.sortWake.) (With one shared queue, two workers
// running neighbouring ranks side by side made each other park: on the
// ring benchmark 3.1 times as often as one worker; with blocks 1.7 times.)
type sched struct {
	mu      sync.Mutex
	idle    sync.Cond // on mu: workers with nothing to run
	nIdle   int
	x       *exchange
	ctx     context.Context
	coros   []coro
	reps    []*replayer // by rank: its replay when it can step (sched.solo)
	state   []rstate
	queues  []runQueue // by worker
	runnext []int32    // by worker: the replay it runs next, -1 if none (wake)
	runOn   []int32    // by rank: the worker running it (while running)
	workers int
	noStep  bool  // Options.noStep
	running int   // replays on a worker now
	live    int   // replays not finished
	err     error // a panic that escaped a replay (a bug)
	// dist: the other processes of a distributed replay (dist.go),
	// which decide together when it has ended or stalled; nil when one
	// process replays every rank. Its replays run on one worker (solo).
	dist *distX
	// distOver: the distributed replay ended, or failed (distX.idle).
	distOver bool
}

// runQueue is a FIFO ring of ranks; a rank is queued at most once, so
// len(state) slots suffice.
type runQueue struct {
	q          []int32
	head, size int
}

func (q *runQueue) push(r int32) {
	q.q[(q.head+q.size)%len(q.q)] = r
	q.size++
}

func (q *runQueue) pop() int32 {
	r := q.q[q.head]
	q.head = (q.head + 1) % len(q.q)
	q.size--
	return r
}

type coro struct {
	next func() (struct{}, bool)
	stop func()
}

type rstate uint8

const (
	stDone     rstate = iota // finished, or no trace
	stQueued                 // on the run queue
	stRunning                // on a worker
	stNotified               // on a worker, and woken since it started to run
	stParked                 // waiting to be woken
)

// newSched makes the scheduler of x's replays; the caller gives it to x
// (x.s) before any replay runs, so that the exchange can wake them.
func newSched(ctx context.Context, x *exchange) *sched {
	n := len(x.ranks)
	s := &sched{x: x, ctx: ctx, coros: make([]coro, n), reps: make([]*replayer, n), state: make([]rstate, n)}
	s.idle.L = &s.mu
	return s
}

// setWorkers sizes the run queues; it is called before the first push.
func (s *sched) setWorkers(w int) {
	s.workers = w
	s.queues = make([]runQueue, w)
	s.runnext = make([]int32, w)
	for i := range s.queues {
		s.queues[i].q = make([]int32, len(s.state))
		s.runnext[i] = -1
	}
	s.runOn = make([]int32, len(s.state))
}

// owner is the worker whose queue rank r goes to.
func (s *sched) owner(r int32) int {
	if s.workers == 1 {
		return 0
	}
	return int(int64(r) * int64(s.workers) / int64(len(s.state)))
}

// add makes rank r's replay runnable: body runs in a coroutine whose
// yield parks it.
func (s *sched) add(r int32, body func()) {
	rs := s.x.ranks[r]
	next, stop := iter.Pull(func(yield func(struct{}) bool) {
		// Recovered here, once per replay, rather than around every
		// resume (a deferred closure per park and resume): the replay
		// then ends, and resume sees it finished.
		defer func() {
			if p := recover(); p != nil {
				// replayer.run recovers its own panics; this is the
				// exchange's or the scheduler's.
				s.x.lock(&s.mu)
				if s.err == nil {
					s.err = fmt.Errorf("internal error replaying rank %d: %v", r, p)
				}
				s.x.unlock(&s.mu)
			}
		}()
		rs.yield = yield
		body()
	})
	s.coros[r] = coro{next, stop}
	s.state[r] = stQueued
	s.live++
}

// addReplay makes replay rp runnable: in its coroutine, and with one
// worker mostly on the worker's stack (replayer.step).
func (s *sched) addReplay(rp *replayer) {
	s.add(rp.rank, rp.run)
	s.reps[rp.rank] = rp
}

// push queues rank r on its owner's queue, waking an idle worker. s.mu
// is held.
func (s *sched) push(r int32) {
	s.queues[s.owner(r)].push(r)
	if s.nIdle > 0 {
		s.idle.Signal()
	}
}

// run replays every added rank on workers goroutines (one in a process of
// a distributed replay) and returns when all have finished.
func (s *sched) run(workers int) error {
	workers = max(1, min(workers, s.live))
	if s.dist != nil {
		workers = 1
	}
	s.x.solo = workers == 1
	s.x.stepping = workers == 1 && !s.noStep
	s.setWorkers(workers)
	for r, st := range s.state {
		if st == stQueued {
			s.push(int32(r))
		}
	}
	if workers == 1 {
		s.solo()
		return s.err
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); s.worker(w) }()
	}
	wg.Wait()
	return s.err
}

func (s *sched) worker(w int) {
	s.x.lock(&s.mu)
	for {
		r, ok := s.nextLocked(w)
		if !ok {
			s.x.unlock(&s.mu)
			return
		}
		s.x.unlock(&s.mu)
		more := s.resume(r)
		s.x.lock(&s.mu)
		s.running--
		switch {
		case !more:
			s.state[r] = stDone
			s.live--
			if s.live == 0 {
				s.idle.Broadcast()
			}
		case s.state[r] == stNotified:
			// Woken while it was still running: its wait may be over.
			s.state[r] = stQueued
			s.push(r)
		default:
			s.state[r] = stParked
		}
	}
}

// solo is worker for a single worker of a replay, which takes no lock
// (exchange.solo), never waits for another worker and never steals: the
// replays run in the same order as worker would run them, without its
// checks for those cases (a replay of a halo exchange parks once per step,
// so that the scheduler's part of a park is paid every few calls).
// Replays run on its stack where they can (replayer.step). A process of a
// distributed replay serves the others between its replays' turns and
// when none can run, until all of them have finished (distX.busy, idle).
func (s *sched) solo() {
	for s.live > 0 && !s.distOver {
		s.soloRun()
	}
	for s.dist != nil && !s.distOver {
		s.distOver = s.dist.idle()
	}
}

// soloRun runs solo's loop until every replay has finished, or a step
// panicked (a bug: that replay then ends in its coroutine). Recovering
// here rather than in each step keeps a deferred call out of every resume.
func (s *sched) soloRun() {
	q := &s.queues[0]
	r := int32(-1)
	defer func() {
		if r < 0 {
			return
		}
		p := recover()
		if p == nil {
			return
		}
		s.reps[r].stepFailed(p)
		s.running--
		s.state[r] = stQueued
		q.push(r)
	}()
	for s.live > 0 {
		r = s.runnext[0]
		if r >= 0 {
			s.runnext[0] = -1
		} else if q.size > 0 {
			r = q.pop()
		} else if s.dist != nil {
			// Every replay left is parked: the other processes may
			// wake them, or decide a stall.
			if s.distOver = s.dist.idle(); s.distOver {
				return
			}
			continue
		} else {
			// Every replay left is parked.
			s.stall()
			continue
		}
		s.state[r] = stRunning
		s.running++
		more := s.soloResume(r)
		s.running--
		if s.dist != nil {
			s.dist.busy()
		}
		switch {
		case !more:
			s.state[r] = stDone
			s.live--
		case s.state[r] == stNotified:
			s.state[r] = stQueued
			q.push(r)
		default:
			s.state[r] = stParked
		}
		r = -1
	}
}

// soloResume runs rank r until it parks (true) or finishes (false): on
// the worker's stack while it can, in its coroutine for the events that
// need it.
func (s *sched) soloResume(r int32) (more bool) {
	rp := s.reps[r]
	if !s.x.stepping {
		rp = nil
	}
	for {
		if rp != nil && rp.step() {
			return true
		}
		_, more = s.coros[r].next()
		if !more {
			s.coros[r].stop()
			return false
		}
		if rp == nil || rp.inCoro {
			return true // parked in the coroutine
		}
		// Handed back (handOff): the worker's stack goes on.
	}
}

// resume runs rank r until it parks (true) or finishes (false).
func (s *sched) resume(r int32) (more bool) {
	_, more = s.coros[r].next()
	if !more {
		s.coros[r].stop()
	}
	return more
}

// nextLocked takes the next replay to run, waiting for one; false when
// all have finished. s.mu is held.
func (s *sched) nextLocked(w int) (int32, bool) {
	spins := 0
	for {
		if s.live == 0 {
			return 0, false
		}
		r := s.runnext[w]
		if r >= 0 {
			s.runnext[w] = -1
		} else {
			for i := range s.queues {
				// Its own queue first, then the others'.
				q := &s.queues[(w+i)%len(s.queues)]
				if q.size > 0 {
					r = q.pop()
					break
				}
			}
		}
		if r < 0 && (spins >= stealNextAfter || s.running == 0) {
			// Another worker's next replay, when that worker seems
			// not to get to it.
			for i := range s.runnext {
				if s.runnext[i] >= 0 {
					r, s.runnext[i] = s.runnext[i], -1
					break
				}
			}
		}
		if r >= 0 {
			s.state[r] = stRunning
			s.runOn[r] = int32(w)
			s.running++
			return r, true
		}
		if s.running == 0 {
			// Every queue is empty and no replay runs: those left
			// are all parked.
			s.stall()
			continue
		}
		if spins < maxSpins {
			// Other workers are running replays that will likely wake
			// one soon: sleeping on the condition variable and being
			// woken costs system calls and, on a busy machine,
			// milliseconds before the thread runs again.
			spins++
			s.x.unlock(&s.mu)
			runtime.Gosched()
			s.x.lock(&s.mu)
			continue
		}
		// (Not reached with one worker, which runs without locks: it
		// is the only one that could be running a replay, so
		// s.running is 0 here and the stall branch above is taken.)
		spins = 0
		s.nIdle++
		s.idle.Wait()
		s.nIdle--
	}
}

// maxSpins bounds how often an idle worker yields and looks for work again
// before it sleeps (tens of microseconds).
const maxSpins = 200

// stealNextAfter is how often an idle worker looks for work before it takes
// another worker's next replay (sched.wake).
const stealNextAfter = 20

// wake puts rank r back on the run queue if it is parked, or notes that it
// must check its wait again if it is running. by is the rank whose replay
// wakes it (-1: none in particular): when by runs on r's owner, r becomes
// that worker's next replay (runnext) if none is set yet, so that a chain
// of replays waking each other runs in order on one worker instead of
// being stolen link by link by another (each stolen link would find its
// predecessor still running and park at once). Any lock may be held.
func (s *sched) wake(r, by int32) {
	s.x.lock(&s.mu)
	s.wakeLocked(r, by)
	s.x.unlock(&s.mu)
}

// wakeAll is wake for several ranks under one hold of s.mu (a collective
// instance wakes up to all the other members at once).
func (s *sched) wakeAll(rs []int32, by int32) {
	s.x.lock(&s.mu)
	for _, r := range rs {
		s.wakeLocked(r, by)
	}
	s.x.unlock(&s.mu)
}

// wakeOthers is wake of every rank but me, under one hold of s.mu (a
// rank that finishes wakes all the others: taking the lock per rank made
// the finishes of a run cost the square of its ranks in lock round trips).
func (s *sched) wakeOthers(me int32) {
	s.x.lock(&s.mu)
	for r, st := range s.state {
		if int32(r) != me && (st == stParked || st == stRunning) {
			s.wakeLocked(int32(r), -1)
		}
	}
	s.x.unlock(&s.mu)
}

// wakeLocked is wake with s.mu held.
func (s *sched) wakeLocked(r, by int32) {
	switch s.state[r] {
	case stParked:
		s.state[r] = stQueued
		w := s.owner(r)
		if by >= 0 && (s.state[by] == stRunning || s.state[by] == stNotified) && s.runOn[by] == int32(w) && s.runnext[w] < 0 {
			s.runnext[w] = r // the owner is running: no worker to wake
		} else {
			s.push(r)
		}
	case stRunning:
		s.state[r] = stNotified
	}
}

// stall handles the moment when every live replay is parked. s.mu is held.
func (s *sched) stall() {
	if s.releaseThrottled() > 0 {
		// Flow control gives way.
		return
	}
	s.x.stalls++
	if s.cancelled() {
		return
	}
	s.abortLowest()
}

// releaseThrottled queues the parked replays that flow control holds
// back and returns how many. s.mu is held.
func (s *sched) releaseThrottled() int {
	x := s.x
	if x.throttled.Load() == 0 {
		return 0
	}
	x.throttleGen.Add(1)
	n := 0
	for r, rs := range x.ranks {
		if s.state[r] == stParked && rs.throttled.Load() {
			s.state[r] = stQueued
			s.push(int32(r))
			n++
		}
	}
	return n
}

// cancelled makes every parked replay give up when the analysis was
// cancelled, so that the replays end soon, and says whether it was.
// s.mu is held.
func (s *sched) cancelled() bool {
	if s.ctx == nil || s.ctx.Err() == nil {
		return false
	}
	for r := range s.x.ranks {
		if s.state[r] == stParked {
			s.abort(int32(r))
		}
	}
	return true
}

// abortLowest makes the parked replay of the lowest rank give up its
// wait. s.mu is held.
func (s *sched) abortLowest() {
	r := int32(-1)
	for i := range s.state {
		if s.state[i] == stParked {
			r = int32(i)
			break
		}
	}
	if r < 0 {
		// Cannot happen: live replays are queued, running or parked.
		s.err = fmt.Errorf("internal error: %d replays neither runnable nor parked", s.live)
		s.live = 0
		s.idle.Broadcast()
		return
	}
	s.abort(r)
}

// abort makes parked rank r give up its wait. s.mu is held.
func (s *sched) abort(r int32) {
	s.x.ranks[r].abort.Store(true)
	s.state[r] = stQueued
	s.push(r)
}

// park suspends rank r's replay until it is woken; it runs on r's
// coroutine and must hold no lock. It returns true when the replay must
// give up its wait (a stall).
func (x *exchange) park(r int32) (aborted bool) {
	rs := x.ranks[r]
	if rs.abort.Load() && rs.abort.Swap(false) {
		// Given while the replay was stopped in its event on the
		// worker's stack (replayer.step), which its coroutine now
		// finishes: this is the wait it stopped at, the one given up.
		return true
	}
	if rs.onStack {
		panic("a replay on the worker's stack must wait")
	}
	rs.parks++
	rs.yield(struct{}{})
	// The scheduler sets abort only while the replay is parked, before
	// it queues it: a load sees it, and the exchange that clears it is
	// needed only then.
	return rs.abort.Load() && rs.abort.Swap(false)
}
