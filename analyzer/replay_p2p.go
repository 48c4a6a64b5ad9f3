package analyzer

import (
	"github.com/dtpa/dtpa/traceformat"
)

// post sends the event's message, counted in interval a; false for
// PROC_NULL or an unusable peer.
func (rp *replayer) post(a *acc, e *traceformat.Event, entry int64, li lateInfo) bool {
	if e.Attr&traceformat.AttrSend == 0 {
		return false
	}
	// postTo with the key resolved once per shape.
	sc := rp.sc
	if !sc.keySet {
		rp.shapeKey(sc, rp.eventComm(e), opIsend, e.SendPeer, e.SendTag)
	}
	if !sc.keyOK {
		if sc.other {
			rp.sentOther(a)
		}
		return false
	}
	rp.send(a, sc.key, entry, e.Site, li, e.SendBytes, rp.shapeCache(&rp.sendCaches))
	return true
}

// sentOther counts a send to a process of another MPI world in interval a:
// a send, whose message no trace of this run receives.
func (rp *replayer) sentOther(a *acc) {
	a.sends++
	rp.otherWorld++
}

// p2pCache is the entry of cs that caches key k's queue.
func p2pCache(cs *[16]fifoCache, k p2pKey) *fifoCache {
	return &cs[(uint32(k.src)^uint32(k.dst)^uint32(k.tag)*3)&15]
}

// shapeCache is the queue cache of the current event's key (sc.key) when
// the shape resolved it (shapeInfo.fc), else its entry of cs (an event
// without a shape; hashed only then).
func (rp *replayer) shapeCache(cs *[16]fifoCache) *fifoCache {
	if sc := rp.sc; sc != &rp.noShape {
		return &sc.fc
	}
	return p2pCache(cs, rp.sc.key)
}

// send is every message a send posts: to the exchange, with its entry,
// call site and late-receiver information li, and counted in interval a
// (Send Number, the communication matrix); create writes it out for
// MPI_Isend. The queue is looked up through cache c.
func (rp *replayer) send(a *acc, k p2pKey, entry int64, site uint32, li lateInfo, bytes uint64, c *fifoCache) (*fifo, uint64) {
	m := msgSlot{t: entry, s: rp.callSite(site, entry), b: bytes}
	q, msg := rp.x.send(&k, &m, li, c)
	// (countSend written out: it is not inlined, and blocking sends
	// come here.)
	a.sends++
	if !a.sentLast(k.comm, k.dst, bytes) {
		rp.sent(a, k.comm, k.dst, bytes)
	}
	return q, msg
}

// countSend counts a send of bytes to world rank dst on communicator comm
// in interval a: Send Number and the communication matrix.
func (rp *replayer) countSend(a *acc, comm uint64, dst int32, bytes uint64) {
	a.sends++
	if !a.sentLast(comm, dst, bytes) {
		rp.sent(a, comm, dst, bytes)
	}
}

// postTo sends a started persistent send's message to peer (rank in c),
// counted in interval a, and returns its queue and message number, as
// exchange.send does (for a withdrawal if the send is cancelled); nil and
// 0 for PROC_NULL or an unusable peer, and for a send counted but not
// posted (post false: cancelled, cancelledAhead).
func (rp *replayer) postTo(a *acc, c *commInfo, peer, tag int32, entry int64, li lateInfo, bytes uint64, post bool) (*fifo, uint64) {
	if c == nil || peer == traceformat.ProcNull {
		return nil, 0
	}
	dst, ok := c.peerWorld(peer)
	if !ok || dst >= rp.nranks {
		if c.otherPeer(peer) {
			rp.sentOther(a)
		}
		return nil, 0
	}
	if !post {
		rp.countSend(a, c.id, dst, bytes)
		return nil, 0
	}
	k := p2pKey{comm: c.id, src: rp.rank, dst: dst, tag: tag}
	return rp.send(a, k, entry, rp.evSite, li, bytes, p2pCache(&rp.sendCaches, k))
}

// match receives the message of a blocking receive or matched probe
// posted at post: t is its send's entry; counted is false for PROC_NULL
// receives.
func (rp *replayer) match(e *traceformat.Event, post int64) (t int64, ok, counted bool) {
	peer, tag, ok := recvFrom(e)
	if !ok {
		return 0, false, false
	}
	return rp.matchOn(rp.eventComm(e), peer, tag, post)
}

// recvFrom is the source and tag of the event's receive, wildcards
// resolved by its status; ok is false when it receives nothing: a receive
// from MPI_PROC_NULL matches nothing, whatever its status says (MPICH
// leaves it unset for PROC_NULL requests).
func recvFrom(e *traceformat.Event) (peer, tag int32, ok bool) {
	if e.Attr&traceformat.AttrRecv == 0 || e.RecvPeer == traceformat.ProcNull {
		return 0, 0, false
	}
	peer, tag = e.RecvPeer, e.RecvTag
	if e.Attr&traceformat.AttrStatus != 0 && len(e.Status) > 0 {
		peer, tag = e.Status[0].Source, e.Status[0].Tag
	}
	return peer, tag, true
}

// peek is the send entry of the message a blocking MPI_Probe found,
// waiting for it (exchange.peek); ok is false when there is none (no
// status, PROC_NULL, or the message never comes).
func (rp *replayer) peek(e *traceformat.Event) (t int64, ok bool) {
	peer, tag, ok := recvFrom(e)
	if !ok {
		return 0, false
	}
	k, st := rp.recvKey(rp.eventComm(e), peer, tag)
	if st != keyOK {
		return 0, false
	}
	if len(rp.wildPend) > 0 {
		rp.resolveWild(e, &k)
	}
	t, site, ok := rp.x.peek(k, p2pCache(&rp.recvCaches, k))
	rp.from = sentBy(k.src, site)
	return t, ok
}

// matchOn receives the next message from peer (rank in c) with tag for a
// receive posted at post, as match does.
func (rp *replayer) matchOn(c *commInfo, peer, tag int32, post int64) (t int64, ok, counted bool) {
	k, st := rp.recvKey(c, peer, tag)
	switch st {
	case keyNone:
		return 0, false, false
	case keyBad:
		rp.unmatchedRecvs++
		return 0, false, true
	case keyOther:
		rp.otherWorld++
		return 0, false, true
	}
	t, ok = rp.matchKey(k, post)
	return t, ok, true
}

// matchKey receives the next message of key k (matchOn's, usable) for a
// receive posted at post.
func (rp *replayer) matchKey(k p2pKey, post int64) (t int64, ok bool) {
	if len(rp.wildPend) > 0 {
		rp.resolveWild(&rp.ev, &k)
	}
	f, tk := rp.x.ticket(k, p2pCache(&rp.recvCaches, k))
	return rp.matchMsg(f, f.message(tk), k, post)
}

// matchMsg is matchKey with the key's queue f and the receive's ticket
// taken, whose message is m (fifo.message).
func (rp *replayer) matchMsg(f *fifo, m uint64, k p2pKey, post int64) (t int64, ok bool) {
	var site sendSite
	var bytes uint64
	t, site, bytes, ok = rp.x.recv(f, m, k.src, k.dst, post, rp.evSite)
	rp.from = sentBy(k.src, site)
	if ok && rp.wo.n > 0 && t < rp.wo.max {
		rp.wrongOrder(t)
	}
	rp.obs.recv(k.src, t, ok)
	if ok {
		rp.got(t, bytes)
	} else {
		rp.unmatchedRecvs++
	}
	return t, ok
}

// take receives the message of a ticket of queue q, sent by world rank
// src, for a receive posted at post.
func (rp *replayer) take(q *fifo, src int32, tk uint64, post int64) (t int64, ok bool) {
	var site sendSite
	var bytes uint64
	t, site, bytes, ok = rp.x.recv(q, q.message(tk), src, rp.rank, post, rp.evSite)
	rp.from = sentBy(src, site)
	if ok && rp.wo.n > 0 && t < rp.wo.max {
		rp.wrongOrder(t)
	}
	rp.obs.recv(src, t, ok)
	if ok {
		rp.got(t, bytes)
	} else {
		rp.unmatchedRecvs++
	}
	return t, ok
}

type keyState uint8

const (
	keyOK    keyState = iota
	keyNone           // PROC_NULL or no status: nothing to receive
	keyBad            // unusable (wildcard without status, bad rank)
	keyOther          // from a process of another MPI world (commInfo.otherPeer)
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
		if c.otherPeer(peer) {
			return p2pKey{}, keyOther
		}
		return p2pKey{}, keyBad
	}
	return p2pKey{comm: c.id, src: src, dst: rp.rank, tag: tag}, keyOK
}

// postRecv gives a nonblocking or started persistent receive its ticket
// now, when its source and tag are known (see p2p.go).
func (rp *replayer) postRecv(rq *request) {
	rq.hasTicket = false
	if rq.peer < 0 || rq.tag < 0 {
		if rq.peer == traceformat.AnySource || rq.tag == traceformat.AnyTag {
			rp.postWild(rq)
		}
		return
	}
	if k, st := rp.recvKey(rq.comm, rq.peer, rq.tag); st == keyOK {
		if len(rp.wildPend) > 0 {
			rp.resolveWild(&rp.ev, &k)
		}
		rq.q, rq.ticket = rp.x.ticket(k, p2pCache(&rp.recvCaches, k))
		rq.src, rq.hasTicket = k.src, true
	}
}

// shapeKey resolves into sc the matching key of a send (o is opIsend:
// MPI_Isend, or the send of MPI_Send and MPI_Sendrecv, post) to peer or of
// an MPI_Irecv (opIrecv) from peer, with tag, on c: keyOK is false when
// there is nothing to post (PROC_NULL, an unusable peer, a wildcard
// receive, which is matched at completion). A shape has one function, so
// that one key per shape suffices.
func (rp *replayer) shapeKey(sc *shapeInfo, c *commInfo, o op, peer, tag int32) {
	sc.keySet, sc.keyOK, sc.other = true, false, false
	if c == nil || peer == traceformat.ProcNull {
		return
	}
	if o == opIrecv && (peer < 0 || tag < 0 || peer == traceformat.NoStatus) {
		return
	}
	w, ok := c.peerWorld(peer)
	if !ok || w >= rp.nranks {
		sc.other = c.otherPeer(peer)
		return
	}
	if o == opIsend {
		sc.key = p2pKey{comm: c.id, src: rp.rank, dst: w, tag: tag}
	} else {
		sc.key = p2pKey{comm: c.id, src: w, dst: rp.rank, tag: tag}
	}
	// The shape's cache holds its key before it holds a queue: a lookup
	// through it needs no comparison of the key (keyed).
	sc.fc.key = sc.key
	sc.keyOK = true
}

// received matches a receive a Wait/Test call completed: t is its send's
// entry, and its overlap term is appended to pendOv.
func (rp *replayer) received(d *doneRecv) (t int64, ok bool) {
	p := d.p
	if d.src == traceformat.NoStatus {
		// Cancelled: it received nothing.
		if p.hasTicket {
			rp.x.revoke(p.q, rp.rank, p.ticket)
		}
		return 0, false
	}
	// A late receiver's late call is the one that posted the receive.
	site := rp.evSite
	rp.evSite = p.site
	if p.hasTicket {
		t, ok = rp.take(p.q, p.src, p.ticket, p.start)
	} else {
		t, ok, _ = rp.matchOn(p.comm, d.src, d.tag, p.start)
	}
	rp.evSite = site
	if ok {
		rp.pendOv = append(rp.pendOv, ovTerm{start: p.start, t: t})
	}
	return t, ok
}

// receivedArrived is received for a receive with a ticket whose message
// has arrived and stands for the ticket (doneRecv.arrived): the common
// case of a Wait/Test call, without received's and take's calls. The
// request's ticket is its message then (nothing revoked or withdrawn).
func (rp *replayer) receivedArrived(p *request) (t int64, ok bool) {
	f := p.q
	var sl msgSlot
	var li lateInfo
	if m := p.ticket; m == f.base && len(f.ooo) == 0 {
		// fifo.take's common case written out: the next message, in
		// order (arrived says nothing is revoked or withdrawn).
		r := f.ring.Load()
		// Read before base passes it: the slot is reused after.
		sl = r.m[m&r.mask]
		if r.lr != nil {
			li = r.lr[m&r.mask]
		}
		f.store(&f.base, m+1)
		if f.ncanc.Load() != 0 {
			f.advance() // (withdrawn since, by another worker)
		}
		ok = true
	} else {
		li, ok = f.take(m, &sl)
	}
	t = sl.t
	if li.exit != 0 || f.full.Load() {
		// (A late receiver's late call is the one that posted the
		// receive.)
		rp.x.taken(f, t, li, ok, p.src, rp.rank, p.start, p.site)
	}
	rp.from = sentBy(p.src, sl.s)
	if !ok {
		rp.obs.recv(p.src, t, ok)
		rp.unmatchedRecvs++
		return t, false
	}
	if rp.wo.n > 0 && t < rp.wo.max {
		rp.wrongOrder(t)
	}
	rp.obs.recv(p.src, t, ok)
	rp.got(t, sl.b)
	rp.pendOv = append(rp.pendOv, ovTerm{start: p.start, t: t})
	return t, true
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
// blocking sends (by lateAtt), with the receives that were late; once
// every replay has finished.
func (rp *replayer) applyLate(late *lateTable) {
	if rp.thr != nil {
		// A send's wait for its receiver is known only now, after the
		// threads' cover was built: not charged with several threads.
		return
	}
	for k, v := range late.all() {
		i := int(k.att >> 32)
		if i >= len(rp.lrNodes) {
			continue
		}
		a := rp.lrNodes[i].Value
		d := v.ns
		a.realSync += d
		a.lateRecv += d
		s := a.site(uint32(k.att))
		s.realSync += d
		s.lateRecv += d
		a.addWait(waitKey{kind: wkLateReceiver, site: uint32(k.att), late: k.from}, d, v.n)
	}
}
