package analyzer

import (
	"fmt"

	"github.com/dtpa/dtpa/traceformat"
)

// A replay run by a single worker (sched.solo) replays most of its events
// on the worker's own stack, without coroutine switches: a halo exchange
// parks about once per rank and step (docs/performance.md), and a park in
// the rank's coroutine costs two switches, most of a park's cost.
//
// step reads and replays events until one must wait for another rank: a
// Wait/Test call (complete), a blocking receive or MPI_Sendrecv's receive
// stops where the coroutine would park, before the receive whose message
// has not arrived (the same test as await's), and a blocking collective
// after posting its entry, when the entries it depends on are not all in
// (exchange.collStep); it keeps what the event has done so far (suspend)
// and, once woken, goes on from there (resume). The events that may wait
// otherwise — nonblocking and persistent collective starts, probes — are
// handed to the rank's coroutine, which replays them, parking in it as
// needed, and hands the replay back (handOff). Flow control holds a
// sender back after its event, in the coroutine (exchange.throttle); an
// MPI_Sendrecv whose send it holds back, and a collective whose entry it
// holds back (collThrottles), are finished there too.
//
// A replay thus waits for the same message or entries at the same point
// either way, so that the replays parked at a stall, and the one released,
// are the same: a replay released while stopped on the worker's stack
// finishes its event in its coroutine, whose first wait is then given up
// (park).

// step replays the rank's events on the worker's stack until one must wait
// for a message or for a collective's entries (true: parked; waitOn set
// for a message) or needs the rank's coroutine
// (false: the coroutine goes on; also at the end of the trace).
func (rp *replayer) step() bool {
	if rp.inCoro {
		return false
	}
	rs := rp.rs
	if rs.waitOn.load() != nil {
		// (Mostly cleared by the sender that woke it, as in await.)
		rs.waitOn.set(nil, rp.x.solo)
	}
	if rs.abort.Load() || (rp.rd == nil && !rp.begin()) || rp.threads {
		return rp.toCoro(rs)
	}
	rs.onStack = true
	if rp.susp.on {
		if !rp.resume() {
			return rp.park(rs)
		}
		if rs.stop {
			rs.stop = false
			return rp.toCoro(rs) // held back by flow control
		}
	}
	e := &rp.ev
	b := rp.batch
	for {
		if b == nil {
			if !rp.nextBatch() {
				return rp.toCoro(rs)
			}
			b = rp.batch
		}
		for b.Next(e) {
			sc := &rp.noShape
			if s := b.Shape(); uint(s) < uint(len(rp.shapes)) { // (has a shape, and in bounds: one test)
				sc = &rp.shapes[s]
			} else {
				rp.noShape = shapeInfo{}
			}
			rp.sc = sc
			fi := sc.fi
			if fi == nil {
				fi = rp.resolveShape(sc, e)
			}
			if fi.how != stepAtOnce && (fi.how == stepCoro || rp.startsColl(e)) {
				rp.held = true
				return rp.toCoro(rs)
			}
			rp.eventFn(e, fi)
			if rs.stop {
				rs.stop = false
				if rp.susp.on && !rp.susp.coro {
					return rp.park(rs)
				}
				return rp.toCoro(rs) // held back by flow control
			}
		}
		b = nil
	}
}

// How a step replays a function's calls (fnInfo.how).
const (
	// stepAtOnce: on the worker's stack; they never wait, but for flow
	// control (sends, exchange.throttle; a collective's entry), or only
	// for messages or a collective's entries (suspend).
	stepAtOnce = iota
	// stepStart: MPI_Start(all), in the coroutine when it starts a
	// persistent collective (startsColl).
	stepStart
	// stepCoro: in the coroutine (nonblocking and persistent collective
	// starts, probes).
	stepCoro
)

// stepHow is how a step replays fi's calls.
func stepHow(fi *fnInfo) uint8 {
	switch fi.op {
	case opICollStart, opPCollInit, opProbe, opMprobe, opImprobe:
		return stepCoro
	case opStart:
		return stepStart
	}
	return stepAtOnce
}

// park stops the step to wait for the message the suspended event waits
// for; it returns true, step's result then.
func (rp *replayer) park(rs *rankSync) bool {
	if d := rp.x.dist; d != nil {
		if w := rp.susp.wait; w != nil && w.remote {
			// The process replaying the sender may wait for what this
			// one has to send before it gets there (as await). A
			// collective's wait does not send (collAwait).
			d.flush()
		}
	}
	rs.stop = false
	rs.waitOn.set(rp.susp.wait, rp.x.solo)
	rs.parks++
	rs.onStack = false
	return true
}

// toCoro hands the replay over to its coroutine; it returns false, step's
// result then.
func (rp *replayer) toCoro(rs *rankSync) bool {
	rs.onStack = false
	rp.inCoro = true
	return false
}

// startsColl says whether MPI_Start(all) e starts a persistent collective
// (pcollStart may wait for room for its instance).
func (rp *replayer) startsColl(e *traceformat.Event) bool {
	for _, id := range e.Reqs {
		if q := rp.reqs.get(id); q != nil && q.kind == reqPColl {
			return true
		}
	}
	return false
}

// handOff gives the replay back to the worker's stack after its coroutine
// replayed an event that a step could not, and waits there until a step
// hands it the next one (replayer.step).
func (rp *replayer) handOff() {
	rs := rp.rs
	if rs.abort.Load() {
		// Given to a step's wait that the event did not make after all
		// (cancelled analysis: other released replays ran first).
		rs.abort.Store(false)
	}
	rp.inCoro = false
	rs.yield(struct{}{})
}

// stepFailed ends a replay whose step panicked (a bug), as run ends one
// that panics in its coroutine: the coroutine finishes the rank.
func (rp *replayer) stepFailed(p any) {
	rp.readErr = fmt.Errorf("internal error replaying %s: %v", rp.path, p)
	rp.rs.onStack, rp.rs.stop = false, false
	rp.eof, rp.batch, rp.held, rp.inCoro, rp.susp.on = true, nil, false, true, false
}

// suspended is an event a step stopped in before a receive whose message
// has not arrived (event's figures so far, its interval node, and
// pendOv's length before it), with the queue it waits on.
type suspended struct {
	on   bool
	fi   *fnInfo
	f    callFigures
	node *rnode
	ovLo int
	wait *fifo
	key  p2pKey // a blocking receive's (stepRecv)
	// coro: the event is finished in the coroutine, flow control holding
	// it back: a collective's entry (the call's arguments in join), or
	// MPI_Sendrecv's send, before its receive.
	coro bool
	join collCall
	coll collStop // a blocking collective's wait (collective)
}

// suspend stops the event being replayed on the worker's stack to wait
// for a message of queue q (event, with its state).
func (rp *replayer) suspend(fi *fnInfo, f *callFigures, node *rnode, ovLo int, q *fifo) {
	s := &rp.susp
	s.on, s.fi, s.f, s.node, s.ovLo, s.wait, s.coro = true, fi, *f, node, ovLo, q, false
	rp.rs.stop = true
}

// resume goes on with the suspended event, rp.ev, to its end (true), or
// to the next receive whose message has not arrived (false, on the
// worker's stack only: susp.wait is its queue).
func (rp *replayer) resume() bool {
	s := &rp.susp
	e, fi, f, node := &rp.ev, s.fi, &s.f, s.node
	a := node.Value
	switch fi.op {
	case opSendrecv:
		if s.coro {
			s.coro = false
			rp.matchSendrecv(e, a, f)
			break
		}
		fallthrough
	case opRecv:
		// (Its queue looked up again through the cache, as the receive
		// would.)
		q := rp.x.recvQueue(rp.rs, s.key, p2pCache(&rp.recvCaches, s.key))
		m := q.message(q.tickets)
		if rp.rs.onStack && !rp.x.ready(q, m, s.key.src) {
			s.wait = q
			return false
		}
		rp.recvKeyed(q, m, s.key, a, fi, f)
	case opColl:
		if !rp.resumeColl(fi, f) {
			return false
		}
	case opComplete:
		n, syncT, hasSync, q := rp.completeRecvs(&f.entry, &f.exit)
		if q != nil {
			s.wait = q
			return false
		}
		f.syncT, f.hasSync = syncT, hasSync
		rp.completed(e, fi, f, node, n, s.ovLo)
	}
	s.on = false
	// (event's end)
	if f.hasSync {
		f.realSync = max(0, f.syncT-f.entry)
	}
	rp.charge(a, e, fi, f)
	return true
}

// stepRecv replays blocking receive e, or MPI_Sendrecv's receive (event's,
// with its figures f so far), on the worker's stack, resolving its key
// once: false when done, true when suspended to wait for its message.
func (rp *replayer) stepRecv(e *traceformat.Event, fi *fnInfo, f *callFigures, node *rnode, ovLo int) bool {
	peer, tag, ok := recvFrom(e)
	if !ok {
		return false
	}
	k, st := rp.recvKey(rp.eventComm(e), peer, tag)
	switch st {
	case keyNone:
		return false
	case keyBad:
		// (matchOn's)
		node.Value.recvs++
		rp.unmatchedRecvs++
		return false
	case keyOther:
		node.Value.recvs++
		rp.otherWorld++
		return false
	}
	if len(rp.wildPend) > 0 {
		rp.resolveWild(e, &k)
	}
	q := rp.x.recvQueue(rp.rs, k, p2pCache(&rp.recvCaches, k))
	// (The message of the key's next ticket, as recvNext takes it.)
	m := q.message(q.tickets)
	if !rp.x.ready(q, m, k.src) {
		rp.suspend(fi, f, node, ovLo, q)
		rp.susp.key = k
		return true
	}
	rp.recvKeyed(q, m, k, node.Value, fi, f)
	return false
}

// recvKeyed is matchRecv's (matchSendrecv's for MPI_Sendrecv) end for a
// receive of usable key k, whose queue is q and message m, that of the
// queue's next ticket.
func (rp *replayer) recvKeyed(q *fifo, m uint64, k p2pKey, a *acc, fi *fnInfo, f *callFigures) {
	a.recvs++
	q.tickets++
	if t, ok := rp.matchMsg(q, m, k, f.entry); ok {
		if fi.op == opSendrecv {
			rp.sendrecvMatched(f, t)
			return
		}
		rp.repairRecv(&f.entry, &f.exit, t)
		f.syncT, f.hasSync = t, true
	}
}
