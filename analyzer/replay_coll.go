package analyzer

import (
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

type collSeqKey struct {
	id    uint64
	group int32
}

// collective replays one collective call, whose figures so far are f (in
// interval node; pendOv's length before it ovLo). On the worker's stack
// (replayer.step) a blocking one stops (true) where it would park: after
// posting its entry, to wait for the entries it depends on, or before it,
// when flow control holds its entry back (then replayed in the
// coroutine); resume goes on with it.
func (rp *replayer) collective(e *traceformat.Event, fi *fnInfo, f *callFigures, node *rnode, ovLo int) bool {
	entry, exit := f.entry, &f.exit
	if rp.thr != nil && fi.op == opColl {
		rp.collExitThreaded(e, *exit, node)
		return false
	}
	c := rp.eventComm(e)
	if c == nil || c.myIdx < 0 {
		rp.icollAlone(e, fi, c, entry)
		return false
	}
	root := int32(-1)
	if fi.shape == tracepb.Function_ONE_TO_ALL || fi.shape == tracepb.Function_ALL_TO_ONE {
		if e.Attr&traceformat.AttrRoot != 0 {
			root = e.Root
		}
	}
	key, members, idx, root, joins := rp.collPlace(c, root)
	if idx == 0 {
		node.Value.collInst++
	}
	if !joins {
		rp.icollAlone(e, fi, c, entry)
		return false
	}
	if fi.op == opICollStart {
		rp.icollStart(e, fi, key, root, c, members, idx, entry, node)
		return false
	}
	// The call's arguments in the replayer's suspension state (where a
	// call handed to the coroutine keeps them), passed by pointer; set
	// field by field, which a composite literal would build and copy.
	s, a := &rp.susp, &rp.susp.join
	a.key, a.fn, a.shape, a.root, a.members, a.idx, a.me = key, fi.name, fi.shape, root, members, idx, rp.rank
	a.entry, a.exit, a.moves, a.nonblocking = entry, *exit, dependsOnEntries(e, fi), false
	a.att = collAtt{node: node, site: e.Site, span: rp.span.site, comp: rp.comp(entry), quiet: sendsNothing(e, fi)}
	if rp.rs.onStack {
		s.coll.in = nil
		latest, has, ok, mismatch, throttled, contrib := rp.x.collStep(&s.coll, a, rp.contrib)
		rp.contrib = contrib
		switch {
		case throttled:
			rp.suspend(fi, f, node, ovLo, nil)
			s.coro = true
			return true
		case s.coll.in != nil:
			rp.suspend(fi, f, node, ovLo, nil)
			return true
		}
		rp.collJoined(exit, latest, has, ok, mismatch, a.moves)
		return false
	}
	latest, has, ok, mismatch, contrib := rp.x.collJoin(a, rp.contrib)
	rp.contrib = contrib
	rp.collJoined(exit, latest, has, ok, mismatch, a.moves)
	return false
}

// collJoined is the end of a blocking collective call that left at exit,
// once collJoin's results are in (its contributions in rp.contrib).
func (rp *replayer) collJoined(exit *int64, latest int64, has, ok, mismatch, moves bool) {
	rp.obs.coll(rp.rs.placed, latest, has)
	if mismatch {
		rp.unmatchedColls++
	} else if has {
		if moves {
			// The exit collJoin posted (exchange.collExit).
			b, bounded := latest, true
			if rs := rp.rs; rs.collData {
				b, bounded, rs.collData = rs.collBound, rs.collBounded, false
			}
			if bounded {
				rp.repair(exit, b)
			}
		}
		if !ok {
			rp.unmatchedColls++
		}
	} else if !ok {
		rp.unmatchedColls++
	}
	rp.applyContrib()
}

// resumeColl goes on with a collective call a step stopped in (collective),
// whose figures so far are f: false while it must still wait, on the
// worker's stack.
func (rp *replayer) resumeColl(fi *fnInfo, f *callFigures) bool {
	s := &rp.susp
	var latest int64
	var has, ok, mismatch bool
	switch {
	case s.coro:
		j := &s.join
		j.entry, j.exit = f.entry, f.exit
		latest, has, ok, mismatch, rp.contrib = rp.x.collJoin(j, rp.contrib)
		s.coro = false
		s.coll.moves = j.moves
	case rp.rs.onStack:
		var done bool
		latest, has, ok, done, rp.contrib = rp.x.collResume(&s.coll, rp.rank, rp.contrib)
		if !done {
			return false
		}
	default:
		latest, has, ok, rp.contrib = rp.x.collFinish(&s.coll, rp.rank, rp.contrib)
	}
	moves := s.coll.moves
	s.coll = collStop{}
	rp.collJoined(&f.exit, latest, has, ok, mismatch, moves)
	return true
}

// dependsOnEntries tells whether a collective call's exit may depend on
// its partners' entries (the clock condition), those its shape names
// (collDeps). A call that moves no data on this rank (every byte count it
// records is 0: MPI_Bcast or MPI_Reduce of count 0, …) returns at once in
// both Open MPI and MPICH, before the partners arrive, so its exit bounds
// nothing; MPI_Barrier moves no data but synchronizes. Without recorded
// byte counts, assume it does. A pairwise call (fnInfo.pairwise: an
// MPI_Alltoallv whose recorded receive count is 0 …) that receives data
// from nobody depends on no member's entry either: the MPI libraries skip
// the empty receives (Open MPI's and MPICH's MPI_Alltoallv post no
// receive of count 0, and the sends to the member complete without it). A
// member that receives from some members only still waits for all of
// them: the trace records its total, not its counts per source.
func dependsOnEntries(e *traceformat.Event, fi *fnInfo) bool {
	const bytes = traceformat.AttrSendBytes | traceformat.AttrRecvBytes
	if e.Attr&bytes == 0 || fi.barrier {
		return true
	}
	recv := e.Attr&traceformat.AttrRecvBytes != 0
	if recv && e.RecvBytes > 0 {
		return true
	}
	if recv && fi.pairwise {
		return false // receives nothing
	}
	return e.Attr&traceformat.AttrSendBytes != 0 && e.SendBytes > 0
}

// startAtt is the attribution of the entry of collective call e of
// function fi made from site (with its span): whether it sends data
// (quiet) and whether its exit depends on entries (loose), of the shape
// it has (dep), for the count of the exits left before their bound
// (collInst.unbound).
func startAtt(e *traceformat.Event, fi *fnInfo, site sendSite) collAtt {
	return collAtt{site: site.site, span: site.span, comp: site.comp, quiet: sendsNothing(e, fi),
		loose: !dependsOnEntries(e, fi), dep: uint8(fi.shape)}
}

// sendsNothing tells whether a collective call contributes no data: its
// recorded send count is 0 (an MPI_Allgatherv or MPI_Gatherv of no
// elements from this rank …). No other member's exit then depends on its
// entry (exchange.collExit). MPI_Barrier sends nothing but synchronizes;
// a call without a recorded send count (MPI_IN_PLACE) is assumed to send.
func sendsNothing(e *traceformat.Event, fi *fnInfo) bool {
	return !fi.barrier && e.Attr&traceformat.AttrSendBytes != 0 && e.SendBytes == 0
}

// icollAlone registers the request of a nonblocking collective start that
// joins no instance (a rank passing MPI_PROC_NULL as the root of an
// intercommunicator's rooted collective takes no part in it): the call
// that completes it completes nothing else and waits for nobody, but the
// request exists, so that call does not count it "never created".
func (rp *replayer) icollAlone(e *traceformat.Event, fi *fnInfo, c *commInfo, entry int64) {
	if fi.op != opICollStart || e.Attr&traceformat.AttrReqs == 0 {
		return
	}
	for _, id := range e.Reqs {
		rp.reqs.put(id, request{kind: reqColl, comm: c, start: entry, active: true, ticket: noSlot})
	}
}

// icollRef is a nonblocking collective in progress on this rank: its
// instance and this rank's index in it.
type icollRef struct {
	in  *collInst
	idx int
}

// icollStart replays the start of a nonblocking collective: it posts its
// entry (the start waits for nobody) and keeps the instance in its
// request, for the call that completes it (icollsDone). node is the
// interval node of the starting call.
func (rp *replayer) icollStart(e *traceformat.Event, fi *fnInfo, key collKey, root int32, c *commInfo, members []int32, idx int, entry int64, node *rnode) {
	in, contrib := rp.x.icollStart(key, fi.name, tracepb.Function_NONE, true, root, members, idx, rp.rank, entry, startAtt(e, fi, rp.callSite(e.Site, entry)), rp.contrib)
	rp.contrib = contrib
	if in == nil {
		rp.unmatchedColls++
	} else if e.Attr&traceformat.AttrReqs != 0 {
		rp.obs.collStart(key)
	} else {
		rp.obs.coll(key, 0, false) // completed at once, below
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
		// No request recorded (a converted trace may lack it): nothing
		// will say when it completes, so it completes at its start, with
		// no time to lose (dur 0); its partners' figures still go to
		// their own calls. att names the starting call, as every
		// contribution must name a call.
		rp.noIcollReq++
		att := collAtt{node: node, site: e.Site, span: rp.span.site, comp: rp.comp(entry)}
		rp.contrib = rp.x.icollDone(in, idx, rp.rank, entry, 0, att, rp.contrib)
	}
	rp.applyContrib()
}

// icollsDone posts the completion of the nonblocking collectives the
// current Wait/Test call (n requests, entered at entry, left at exit, in
// interval node at site) completed (rp.icDone). The call's time is
// Collective time when it completed nothing else, and then bounds the
// Potential Sync they give it (exchange.maybeComplete); a call that also
// completed point-to-point requests stays SendRecv time and gets no
// Potential Sync (analyzer package doc, collAtt.shared). Its exit is
// checked against the starts it depends on (collInst.unbound).
func (rp *replayer) icollsDone(n int, entry, exit int64, node *rnode, site uint32, class *tracepb.Function_Class) {
	dur := exit - entry
	shared := n != len(rp.icDone)
	if !shared {
		*class = tracepb.Function_COLLECTIVE
	}
	att := collAtt{node: node, site: site, comp: rp.comp(entry), shared: shared, check: true}
	for _, r := range rp.icDone {
		rp.obs.collDone(r.in.key)
		rp.contrib = rp.x.icollDone(r.in, r.idx, rp.rank, entry, dur, att, rp.contrib)
		rp.applyContrib()
	}
	rp.icDone = rp.icDone[:0]
}

func (rp *replayer) applyContrib() {
	for i := range rp.contrib {
		k := &rp.contrib[i]
		a := k.att.node.Value
		a.potSync += k.pot
		a.timeVar += k.tv
		s := a.site(k.att.site)
		s.pot += k.pot
		s.tv += k.tv
		collWait(a, k)
	}
	rp.contrib = rp.contrib[:0]
}
