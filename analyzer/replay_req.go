package analyzer

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/dtpa/dtpa/traceformat"
)

type reqKind uint8

const (
	reqSend reqKind = iota
	reqRecv
	reqColl    // a nonblocking collective: ticket indexes replayer.icolls
	reqMatched // MPI_Imrecv: its message was matched by a matched probe
)

// request is a nonblocking or persistent request of one rank (88 bytes,
// a little more than a cache line: it is written at every start and read
// at every completion). create writes every field of it, in a slot of the
// table that may hold a request completed before (reqTable.slot).
type request struct {
	id         uint64 // the program's handle (reqTable)
	kind       reqKind
	persistent bool
	active     bool
	hasTicket  bool
	peer, tag  int32  // as passed by the program (ranks in comm)
	site       uint32 // the starting call's site (a late receiver's late call, waits.go)
	// Receives without wildcards get their ticket when posted (p2p.go):
	// the queue q, the sender's world rank src and the ticket. A
	// synchronous send (MPI_Issend, MPI_Ssend_init) has hasTicket set
	// and its ticket is its serial number for a late receiver's charge
	// (issendSerial).
	src    int32
	comm   *commInfo
	start  int64  // global ns of the call that started it
	seq    uint64 // order of (re)starts on the rank
	q      *fifo
	ticket uint64
	bytes  uint64 // a send's recorded bytes (profile.go)
	// msg is an MPI_Isend's message in queue q, withdrawn if the send is
	// cancelled (exchange.withdraw); droppedMsg, with q nil, for a message
	// to a rank whose replay had finished (undrop).
	msg uint64
}

// undrop takes the message of MPI_Isend p, dropped because its
// destination's replay had finished, back off the messages never received:
// p was cancelled.
func (rp *replayer) undrop(p *request) {
	if p.comm == nil {
		return
	}
	if w, ok := p.comm.peerWorld(p.peer); ok {
		rp.x.undropSend(p2pKey{comm: p.comm.id, src: rp.rank, dst: w, tag: p.tag})
	}
}

// doneRecv is a receive a Wait/Test call completed: its request, which
// stays where it is in the request table until the call's completions
// are done (reqTable.compact), and its status source and tag (or the
// posted ones).
type doneRecv struct {
	p        *request
	src, tag int32
}

// create registers the request(s) of a nonblocking start or persistent
// init. It writes every field of the request, once (the table's slot is
// not cleared: TestCreateWritesEveryField).
func (rp *replayer) create(e *traceformat.Event, o op, entry int64, a *acc) {
	if e.Attr&traceformat.AttrReqs == 0 || len(e.Reqs) == 0 {
		return
	}
	c := rp.eventComm(e)
	rp.reqSeq++
	// reqTable.slot written out (it is not inlined).
	var rq *request
	if t, n := &rp.reqs, len(rp.reqs.vals); n < cap(t.vals) && n < smallReqs {
		t.vals = t.vals[:n+1]
		rq = &t.vals[n]
		rq.id = e.Reqs[0]
	} else {
		rq = t.addSlow(e.Reqs[0])
	}
	rq.comm, rq.start, rq.seq, rq.site = c, entry, rp.reqSeq, e.Site
	// postTo and postRecv written out (rq is new: no ticket yet): these
	// two calls were a third of all calls on a ring exchange. The key
	// depends only on fields the shape fixes: it is resolved once per
	// shape (shapeKey).
	sc := rp.sc
	switch o {
	case opIsend:
		rq.kind, rq.persistent, rq.active, rq.peer, rq.tag, rq.bytes = reqSend, false, true, e.SendPeer, e.SendTag, e.SendBytes
		rq.src, rq.ticket, rq.hasTicket = 0, 0, false
		if !sc.keySet {
			rp.shapeKey(sc, c, o, rq.peer, rq.tag)
		}
		if !sc.keyOK {
			rq.q, rq.msg = nil, 0
			if sc.other {
				rp.sentOther(a)
			}
			return
		}
		var li lateInfo
		if sc.fi.mayBlock {
			li = rp.issendSerial(rq)
		}
		// (replayer.send written out.)
		if rp.batchCancels && rp.cancelledAhead(rq.id) {
			rq.q, rq.msg = nil, 0
		} else {
			m := msgSlot{t: entry, s: rp.callSite(e.Site, entry), b: rq.bytes}
			// (&sc.fc.key: the shape's cache is keyed by it, exchange.send.)
			rq.q, rq.msg = rp.x.send(&sc.fc.key, &m, li, rp.shapeCache(&rp.sendCaches))
		}
		a.sends++
		if !a.sentLast(sc.key.comm, sc.key.dst, rq.bytes) {
			rp.sent(a, sc.key.comm, sc.key.dst, rq.bytes)
		}
	case opIrecv:
		rq.kind, rq.persistent, rq.active, rq.peer, rq.tag, rq.bytes, rq.msg = reqRecv, false, true, e.RecvPeer, e.RecvTag, 0, 0
		rq.q, rq.ticket, rq.src, rq.hasTicket = nil, 0, 0, false
		if rq.peer == traceformat.ProcNull {
			return
		}
		a.recvs++
		if !sc.keySet {
			rp.shapeKey(sc, c, o, rq.peer, rq.tag)
		}
		if sc.keyOK {
			if len(rp.wildPend) > 0 {
				rp.resolveWild(e, &sc.key)
			}
			// exchange.ticket, its queue cached by the shape.
			// (The shape's own cache holds sc.key: shapeKey.)
			c := rp.shapeCache(&rp.recvCaches)
			f := c.f
			if f == nil || (c != &sc.fc && c.key != sc.key) || f.dead.Load() {
				f = rp.x.recvQueue(rp.rs, sc.key, c)
			}
			rq.q, rq.ticket = f, f.tickets
			f.tickets++
			rq.src, rq.hasTicket = sc.key.src, true
		} else if rq.peer == traceformat.AnySource || rq.tag == traceformat.AnyTag {
			rp.postWild(rq)
		}
	default:
		rp.createRest(e, o, rq, a)
	}
}

// wildReq is a wildcard receive request (MPI_ANY_SOURCE or MPI_ANY_TAG)
// posted without a ticket: its id and its posting's seq.
type wildReq struct{ id, seq uint64 }

// pendingWild is w's request while it is still a wildcard receive without
// a ticket, nil once it was completed, freed or resolved.
func (rp *replayer) pendingWild(w wildReq) *request {
	rq := rp.reqs.get(w.id)
	if rq == nil || rq.seq != w.seq || rq.kind != reqRecv || rq.hasTicket || !rq.active {
		return nil
	}
	return rq
}

// wildMatches says whether wildcard receive rq could match messages of
// key k: MPI orders it only against the receives of the keys it can take.
func wildMatches(rq *request, k *p2pKey) bool {
	if rq.comm == nil || rq.comm.id != k.comm || (rq.tag != traceformat.AnyTag && rq.tag != k.tag) {
		return false
	}
	if rq.peer == traceformat.AnySource {
		return true
	}
	src, ok := rq.comm.peerWorld(rq.peer)
	return !ok || src == k.src
}

// resolveWild gives pending wildcard receives (rp.wildPend, in posting
// order) their tickets before a receive of the rank takes one: with k, a
// receive of key k posted or probed by event e; without, the receives e
// completes. MPI matches a wildcard receive among the receives of the
// key it matches in posting order, so a receive posted after it must not
// take its message. Those resolved are the pending ones up to the last
// that could match k (wildMatches), or up to the last that e completes:
// one posted later, or that cannot take k's messages, keeps its place
// until a receive of a key it can match comes. Its key is its status: in
// e, if e completes it, else at the call that completes it further on in
// the trace (farStatus, farStatusThreads). A request whose status is not
// found (never completed, freed, or beyond farStatus's bound) is left to
// take its ticket when it completes.
func (rp *replayer) resolveWild(e *traceformat.Event, k *p2pKey) {
	last := -1
	for i, w := range rp.wildPend {
		rq := rp.pendingWild(w)
		switch {
		case rq == nil:
		case k != nil:
			if wildMatches(rq, k) {
				last = i
			}
		default:
			if _, ok := statusIn(e, w.id); ok {
				last = i
			}
		}
	}
	if last < 0 {
		return
	}
	for _, w := range rp.wildPend[:last+1] {
		rq := rp.pendingWild(w)
		if rq == nil {
			continue
		}
		st, ok := statusIn(e, w.id)
		if !ok {
			if rp.threads {
				// (Events come from the merge's per-thread queues:
				// rp.batch is not where e is.)
				st, ok = rp.farStatusThreads(w.id)
			} else if rp.batch != nil {
				st, ok = rp.farStatus(w.id)
			}
		}
		if !ok {
			continue
		}
		if k, ks := rp.recvKey(rq.comm, st.Source, st.Tag); ks == keyOK {
			rq.q, rq.ticket = rp.x.ticket(k, p2pCache(&rp.recvCaches, k))
			rq.src, rq.hasTicket = k.src, true
		}
	}
	rp.wildPend = rp.wildPend[:copy(rp.wildPend, rp.wildPend[last+1:])]
}

// postWild adds wildcard receive rq to the pending ones, first dropping
// those completed or freed meanwhile when there are many (a program that
// completes its wildcard receives without ever receiving by key in
// between never resolves them).
func (rp *replayer) postWild(rq *request) {
	if len(rp.wildPend) >= 64 {
		rp.wildPend = slices.DeleteFunc(rp.wildPend, func(w wildReq) bool { return rp.pendingWild(w) == nil })
	}
	rp.wildPend = append(rp.wildPend, wildReq{rq.id, rq.seq})
}

// farBase and farPer bound farStatus's reading ahead for a rank: in all,
// farBase events (limits.readAhead) plus farPer times the events replayed
// so far. Each
// wildcard request is looked for once, but a program that leaves such
// requests uncompleted (an error MPI does not report) would otherwise
// have every one of them read to the end of the trace.
const (
	farBase = 1 << 24
	farPer  = 4
)

// farStatus is the status of the call that completes request id, past
// the current event: in the rest of the batch (LazyBatch.FindStatus),
// else in the batches that follow (farFile). MPI_Cancel is passed over
// (as StatusAhead does). ok is false when no call completes it with a
// status, when the trace ends or is damaged first (the replay reports the
// damage when it gets there), or past the bound on reading ahead
// (farBase, farPer: a warning says so, once).
func (rp *replayer) farStatus(id uint64) (st traceformat.Status, ok bool) {
	st, a := rp.batch.FindStatus(id, rp.passFn())
	if a != traceformat.AheadNotFound {
		return st, a == traceformat.AheadFound
	}
	return rp.farFile(id, false)
}

// farStatusThreads is farStatus for a rank with several threads: the
// call that completes request id may be any thread's (MPI requests are
// the process's). It is looked for in the calls the merge holds and has
// not handed out yet (threadMerge.findStatus: the first in the merge's
// order that names id), else in the batches the merge has not read, of
// any thread, in file order (farFile). With the same bound and warning.
func (rp *replayer) farStatusThreads(id uint64) (st traceformat.Status, ok bool) {
	m := rp.merge
	if m == nil {
		return st, false
	}
	st, a := m.findStatus(id, rp.passFn(), math.MaxInt)
	if a != traceformat.AheadNotFound {
		return st, a == traceformat.AheadFound
	}
	if m.eof {
		return st, false
	}
	return rp.farFile(id, true)
}

// farFile is the status of the call that completes request id in the
// batches that follow the last one the replay read, read by a second
// reader of the file (Reader.Fork) so that the replay's own reading is not
// moved: the first batch that names id (of thread 0 only, unless
// anyThread) gives it; see farStatus for ok.
func (rp *replayer) farFile(id uint64, anyThread bool) (st traceformat.Status, ok bool) {
	budget := rp.x.lim.readAhead + farPer*rp.events - rp.farRead
	if budget <= 0 {
		return st, false
	}
	f, err := rp.x.files.openAt(rp.path, rp.rd.Offset())
	if err != nil {
		return st, false
	}
	defer f.Close()
	fr := rp.rd.Fork(f, rp.x.files.buf)
	for {
		b, err := fr.ReadLazyBatch()
		if err != nil {
			return st, false
		}
		rp.farRead += int64(b.Len())
		if b.Thread != 0 && !anyThread {
			continue
		}
		pass := rp.passFn()
		for s := range b.NumShapes() {
			if f := b.ShapeFunc(s); classify(fr.Definitions().Function(f)).cancel {
				pass = f
			}
		}
		if st, a := b.FindStatus(id, pass); a != traceformat.AheadNotFound {
			return st, a == traceformat.AheadFound
		}
		if budget -= int64(b.Len()); budget <= 0 {
			if !rp.farWarned {
				rp.farWarned = true
				rp.warn(fmt.Sprintf("Rank %d: reading ahead for the completions of wildcard receives stopped after %d calls; a wildcard receive completed further on than that is matched when it completes, after receives posted later than it, where MPI would match it first.", rp.rank, rp.farRead))
			}
			return st, false
		}
	}
}

// cancelledAhead says whether send request id, just started, is
// completed cancelled a little further on in the batch (StatusAhead):
// such a send posts no message. A message posted and withdrawn only when
// the completion is replayed could be taken by a receive replayed before
// that (the replays of the ranks do not run in the order of time).
//
// With several threads (rp.batchCancels: the merge has read an
// MPI_Cancel) the completion may be any thread's: it is looked for in the
// calls the merge holds, at most cancelAhead of each thread's
// (threadMerge.findStatus), as StatusAhead walks at most 1024 events.
func (rp *replayer) cancelledAhead(id uint64) bool {
	if rp.threads {
		if rp.merge == nil {
			return false
		}
		st, a := rp.merge.findStatus(id, rp.passFn(), cancelAhead)
		return a == traceformat.AheadFound && st.Tag == traceformat.Cancelled
	}
	if rp.batch == nil {
		return false
	}
	st, ok := rp.batch.StatusAhead(id, rp.passFn())
	return ok && st.Tag == traceformat.Cancelled
}

// cancelAhead bounds cancelledAhead's walk through each thread's calls
// held by the merge: StatusAhead's bound.
const cancelAhead = 1024

// passFn is the function StatusAhead passes over: MPI_Cancel, once a
// batch of the rank held it (threads: once the merge read it), else none
// (^0).
func (rp *replayer) passFn() uint32 {
	return rp.cancelFn - 1
}

// statusIn is the status e records for request id, if e completes it
// with one.
func statusIn(e *traceformat.Event, id uint64) (traceformat.Status, bool) {
	if e == nil || e.Attr&traceformat.AttrReqs == 0 || e.Attr&traceformat.AttrStatus == 0 {
		return traceformat.Status{}, false
	}
	for k, r := range e.Reqs {
		if r == id && k < len(e.Status) {
			return e.Status[k], true
		}
	}
	return traceformat.Status{}, false
}

// createRest is create for the operations other than MPI_Isend and
// MPI_Irecv: the persistent inits, MPI_Isendrecv and MPI_Imrecv.
func (rp *replayer) createRest(e *traceformat.Event, o op, rq *request, a *acc) {
	rq.q, rq.ticket, rq.src, rq.hasTicket, rq.msg = nil, 0, 0, false, 0
	rq.persistent, rq.active = false, true
	switch o {
	case opSendInit:
		rq.kind, rq.peer, rq.tag, rq.bytes = reqSend, e.SendPeer, e.SendTag, e.SendBytes
	case opRecvInit, opIsendrecv:
		rq.kind, rq.peer, rq.tag, rq.bytes = reqRecv, e.RecvPeer, e.RecvTag, 0
	default: // opImrecv
		rq.kind, rq.peer, rq.tag, rq.bytes = reqMatched, 0, 0, 0
	}
	if o == opSendInit || o == opRecvInit {
		rq.persistent, rq.active = true, false
		rq.hasTicket = o == opSendInit && rp.sc.fi != nil && rp.sc.fi.mayBlock
	}
	if o == opIsendrecv {
		// Its send is posted now; its receive is an MPI_Irecv's (the
		// shape's key, shapeKey, is not used: one shape, two keys).
		if e.Attr&traceformat.AttrSend != 0 {
			rp.postTo(a, rq.comm, e.SendPeer, e.SendTag, rq.start, lateInfo{}, e.SendBytes, true)
		}
		if rq.peer != traceformat.ProcNull {
			a.recvs++
			rp.postRecv(rq)
		}
	}
}

// complete handles a Wait/Test call: n requests completed; the latest send
// entry of the receives among them (for Real Sync and the repair), and
// their overlap terms appended to pendOv (clc.go), so that the caller
// computes Overlap with the call's final entry. On the worker's stack
// (replayer.step) it stops where a receive's message has not arrived and
// returns the queue to wait on (wait); completeRecvs goes on from there.
func (rp *replayer) complete(e *traceformat.Event, entry, exit *int64) (n int, latest int64, has bool, wait *fifo) {
	if e.Attr&traceformat.AttrReqs == 0 {
		return 0, 0, false, nil
	}
	if len(rp.wildPend) > 0 {
		rp.resolveWild(e, nil)
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
	t := &rp.reqs
	for i, id := range reqs {
		var p *request
		var at int
		if at = t.pre; t.first(at, id) {
			// reqTable.find's common case, inlined.
			p = &t.vals[at]
		} else {
			p, at = t.findSlow(id)
		}
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
			if p.kind == reqSend && i < len(status) && status[i].Tag == traceformat.Cancelled {
				// Cancelled: its message was never sent. (A persistent
				// send's message is its last start's; an inactive one
				// sent nothing.)
				if !p.active {
					break
				}
				if p.q != nil {
					rp.x.withdraw(p.q, p.msg)
				} else if p.msg == droppedMsg {
					rp.undrop(p)
				}
				break
			}
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
			d.p, d.src, d.tag = p, p.peer, p.tag
			if i < len(status) {
				d.src, d.tag = status[i].Source, status[i].Tag
			}
		}
		if p.persistent {
			p.active = false
		} else if at >= 0 && t.big == nil {
			// reqTable.kill's common case, inlined: the first live
			// request, none marked after it.
			if at == t.pre && t.dead == 0 {
				t.pre++
			} else {
				t.kill(id, at)
			}
		} else {
			t.kill(id, at)
		}
	}
	if nd == 0 {
		// (Most MPI_Test calls: completeRecvs' end, without its
		// progress.)
		rp.reqs.compact()
		return n, 0, false, nil
	}
	c := &rp.cpl
	c.n, c.nd, c.j, c.first = n, nd, 0, first
	if nd > 1 {
		c.has, c.from = false, lateCall{}
		if !doneSorted(rp.done) {
			// Wildcard receives take their tickets now: in posting
			// order (mostly the order of the call's requests already).
			slices.SortFunc(rp.done, func(a, b doneRecv) int { return cmp.Compare(a.p.seq, b.p.seq) })
		}
	}
	return rp.completeRecvs(entry, exit)
}

// completion is complete's progress through a Wait/Test call: the requests
// it completed (n), the receives among them (nd: first alone, or
// rp.done), how many of those it received (j), and what their messages
// gave so far.
type completion struct {
	n, nd, j int
	first    doneRecv
	latest   int64
	has      bool
	from     lateCall
}

// completeRecvs receives the messages of the receives complete found, from
// the first not received yet; its results are complete's.
func (rp *replayer) completeRecvs(entry, exit *int64) (n int, latest int64, has bool, wait *fifo) {
	c := &rp.cpl
	onStack := rp.rs.onStack
	switch {
	case c.nd == 1 && c.first.arrived():
		latest, has = rp.receivedArrived(c.first.p)
	case c.nd == 1 && c.first.p.hasTicket && c.first.src != traceformat.NoStatus:
		// received's case with a ticket written out.
		var ok bool
		var site sendSite
		var bytes uint64
		p := c.first.p
		if onStack {
			if q := p.q; len(q.revoked) == 0 && q.passed == 0 && q.ncanc.Load() == 0 {
				// Not arrived (arrived's other conditions hold):
				// it waits unless its sender has finished.
				if !rp.x.ranks[p.src].done.Load() {
					return 0, 0, false, q
				}
			} else if !rp.x.ready(q, q.message(p.ticket), p.src) {
				return 0, 0, false, q
			}
		}
		if latest, site, bytes, ok = rp.x.recv(p.q, p.q.message(p.ticket), p.src, rp.rank, p.start, p.site); ok {
			rp.from = sentBy(p.src, site)
			rp.got(latest, bytes)
			if rp.wo.n > 0 && latest < rp.wo.max {
				rp.wrongOrder(latest)
			}
			rp.obs.recv(p.src, latest, true)
			rp.pendOv = append(rp.pendOv, ovTerm{start: p.start, t: latest})
			has = true
		} else {
			rp.unmatchedRecvs++
		}
	case c.nd == 1:
		if onStack && !c.first.arrived() {
			if q := rp.receivable(&c.first); q != nil {
				return 0, 0, false, q
			}
		}
		latest, has = rp.received(&c.first)
	case c.nd > 1:
		// (In locals while it goes: c holds them when it stops.)
		from := c.from
		latest, has = c.latest, c.has
		for j := c.j; j < len(rp.done); j++ {
			d := &rp.done[j]
			var t int64
			var ok bool
			if d.arrived() {
				t, ok = rp.receivedArrived(d.p)
			} else {
				if onStack {
					// receivable's common case first: a ticket that
					// stands for its message (arrived's other
					// conditions), not arrived, its sender not done.
					if p, q := d.p, d.p.q; p.hasTicket && d.src != traceformat.NoStatus && len(q.revoked) == 0 && q.passed == 0 && q.ncanc.Load() == 0 && !rp.x.ranks[p.src].done.Load() {
						c.j, c.latest, c.has, c.from = j, latest, has, from
						return 0, 0, false, q
					}
					if q := rp.receivable(d); q != nil {
						c.j, c.latest, c.has, c.from = j, latest, has, from
						return 0, 0, false, q
					}
				}
				t, ok = rp.received(d)
			}
			if ok && (!has || t > latest) {
				latest, has, from = t, true, rp.from
			}
		}
		rp.from = from
	}
	// (The requests completed stay in place until here: rp.done points
	// at them.)
	rp.reqs.compact()
	if has {
		rp.repairRecv(entry, exit, latest)
	}
	return c.n, latest, has, nil
}

// arrived is receivable's common case: a receive with a ticket whose
// message has arrived (and stands for the ticket: nothing revoked or
// withdrawn).
func (d *doneRecv) arrived() bool {
	p := d.p
	if !p.hasTicket || d.src == traceformat.NoStatus {
		return false
	}
	q := p.q
	return len(q.revoked) == 0 && q.passed == 0 && q.ncanc.Load() == 0 && q.arrived(p.ticket)
}

// receivable is nil when the message of receive d, completed by a
// Wait/Test call, has arrived or never will (received then waits for
// nothing), else the queue it would wait on.
func (rp *replayer) receivable(d *doneRecv) *fifo {
	if d.src == traceformat.NoStatus {
		return nil // cancelled: revoked
	}
	p := d.p
	if p.hasTicket {
		if rp.x.ready(p.q, p.q.message(p.ticket), p.src) {
			return nil
		}
		return p.q
	}
	// matchOn's: the key's next ticket.
	k, st := rp.recvKey(p.comm, d.src, d.tag)
	if st != keyOK {
		return nil
	}
	f := rp.x.recvQueue(rp.rs, k, p2pCache(&rp.recvCaches, k))
	if rp.x.ready(f, f.message(f.tickets), k.src) {
		return nil
	}
	return f
}

// doneSorted says whether d is in posting order.
func doneSorted(d []doneRecv) bool {
	for i := 1; i < len(d); i++ {
		if d[i].p.seq < d[i-1].p.seq {
			return false
		}
	}
	return true
}

// start replays MPI_Start/MPI_Startall: each persistent request becomes
// active and its send is posted, or its receive gets its ticket. fixed is
// true when a send was posted or a persistent collective started (the call
// handed its entry to other ranks); coll is true when a persistent
// collective started (its time is then Collective time, as a nonblocking
// collective's start).
func (rp *replayer) start(e *traceformat.Event, entry int64, a *acc, node *rnode) (fixed, coll bool) {
	for _, id := range e.Reqs {
		rq := rp.reqs.get(id)
		if rq == nil {
			rp.unknownReqs++
			continue
		}
		rq.active, rq.start, rq.site = true, entry, e.Site
		rp.reqSeq++
		rq.seq = rp.reqSeq
		if rq.kind == reqSend {
			fixed = true
			var li lateInfo
			if rq.hasTicket {
				li = rp.issendSerial(rq)
			}
			post := !rp.batchCancels || !rp.cancelledAhead(rq.id)
			rq.q, rq.msg = rp.postTo(a, rq.comm, rq.peer, rq.tag, entry, li, rq.bytes, post)
		} else if rq.kind == reqRecv && rq.peer != traceformat.ProcNull {
			a.recvs++
			rp.postRecv(rq)
		} else if rq.kind == reqPColl {
			fixed, coll = true, true
			rp.pcollStart(rq, entry, node)
		}
	}
	return fixed, coll
}

// free replays MPI_Request_free.
func (rp *replayer) free(e *traceformat.Event) {
	for _, id := range e.Reqs {
		if q := rp.reqs.get(id); q != nil && (q.kind == reqColl || q.kind == reqPColl) && q.ticket < uint64(len(rp.icolls)) {
			rp.icolls[q.ticket] = icollRef{}
			rp.icFree = append(rp.icFree, q.ticket)
		}
		// A freed active request still completes, but no wait will
		// say when: its overlap is unknown and it is dropped.
		rp.reqs.del(id)
	}
}
