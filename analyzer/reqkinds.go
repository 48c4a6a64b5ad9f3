package analyzer

import (
	"math"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Requests of other kinds than point-to-point messages and nonblocking
// collectives (docs/characteristics.md §8.9).
const (
	// reqOther is a request the analyzer matches nothing with: nonblocking
	// file I/O, MPI_Grequest_start, MPI_Comm_idup and the other
	// nonblocking communicator constructors, MPI_Rget/Rput/Raccumulate,
	// partitioned communication. Completing it completes nothing else;
	// the time of the call that completes it stays in that call's class.
	reqOther reqKind = reqMatched + 1 + iota
	// reqPColl is a persistent collective (MPI_Barrier_init …): each
	// MPI_Start joins the communicator's next collective instance
	// (pcollStart), which its completion completes like a nonblocking
	// collective's. tag holds the function id, peer the recorded root,
	// ticket the slot in replayer.icolls while active (noSlot otherwise).
	reqPColl
)

// noSlot is the ticket of a collective request that holds no instance.
const noSlot = uint64(math.MaxUint64)

// createOther registers the requests a call of no other request-creating
// kind recorded as created (tracer: the generic REQC of every function
// whose last parameter is an MPI_Request *). MPI_Cancel records the
// request it cancels, which it does not create: a cancelled receive is
// known by the status of the call that completes it (received). A
// function named *_init creates a persistent request (MPI_Psend_init).
func (rp *replayer) createOther(e *traceformat.Event, fi *fnInfo, entry int64) {
	if e.Attr&traceformat.AttrReqs == 0 || len(e.Reqs) == 0 {
		return
	}
	if fi.cancel {
		return
	}
	persistent := fi.persistentInit
	c := rp.eventComm(e)
	for _, id := range e.Reqs {
		rp.reqSeq++
		rq := rp.reqs.add(id)
		rq.kind, rq.comm, rq.start, rq.seq = reqOther, c, entry, rp.reqSeq
		rq.persistent, rq.active = persistent, !persistent
	}
}

// pcollInit registers the persistent collective request a call such as
// MPI_Allreduce_init created: no instance yet (pcollStart).
func (rp *replayer) pcollInit(e *traceformat.Event, fi *fnInfo, entry int64) {
	if e.Attr&traceformat.AttrReqs == 0 || len(e.Reqs) == 0 {
		return
	}
	root := int32(-1)
	if (fi.shape == tracepb.Function_ONE_TO_ALL || fi.shape == tracepb.Function_ALL_TO_ONE) && e.Attr&traceformat.AttrRoot != 0 {
		root = e.Root
	}
	rp.reqSeq++
	rq := rp.reqs.add(e.Reqs[0])
	rq.kind, rq.comm, rq.start, rq.seq = reqPColl, rp.eventComm(e), entry, rp.reqSeq
	rq.persistent, rq.peer, rq.tag, rq.ticket = true, root, int32(e.Func), noSlot
}

// pcollStart starts persistent collective rq (MPI_Start, entered at
// entry, in interval node): it joins the next instance on its
// communicator, as a nonblocking collective start does (icollStart).
func (rp *replayer) pcollStart(rq *request, entry int64, node *rnode) {
	rq.ticket = noSlot
	c := rq.comm
	if c == nil || c.myIdx < 0 {
		return
	}
	fi := rp.fn(uint32(rq.tag))
	key, members, idx, root, joins := rp.collPlace(c, rq.peer)
	if idx == 0 {
		node.Value.collInst++
	}
	if !joins {
		return
	}
	// The byte counts are the creating call's, not kept: the start is
	// taken to send and receive data (collAtt.quiet, loose).
	s := rp.callSite(rp.evSite, entry)
	att := collAtt{site: s.site, span: s.span, comp: s.comp, dep: uint8(fi.shape)}
	in, contrib := rp.x.icollStart(key, fi.name, tracepb.Function_NONE, true, root, members, idx, rp.rank, entry, att, rp.contrib)
	rp.contrib = contrib
	if in == nil {
		rp.unmatchedColls++
	} else {
		rq.ticket = rp.icollSlot(icollRef{in: in, idx: idx})
		rp.obs.collStart(key)
	}
	rp.applyContrib()
}

// icollSlot keeps a nonblocking collective in progress in replayer.icolls
// and returns its slot.
func (rp *replayer) icollSlot(r icollRef) uint64 {
	var slot uint64
	if n := len(rp.icFree); n > 0 {
		slot = rp.icFree[n-1]
		rp.icFree = rp.icFree[:n-1]
	} else {
		slot = uint64(len(rp.icolls))
		rp.icolls = append(rp.icolls, icollRef{})
	}
	rp.icolls[slot] = r
	return slot
}

// collPlace numbers a collective call on c with recorded root (-1 when the
// call has none) by the rank's calls there (the exchange adds the
// instances the rank skipped, resync.go) and places this rank in its
// instance: the instance key,
// its members (world ranks), this rank's index among them, the root's
// index (-1: none) and whether this rank takes part at all. On an
// intracommunicator the instance is the communicator's group. On an
// intercommunicator (docs/characteristics.md §8.8) every call spans both
// groups: a rooted call's instance is the root followed by the other
// group (the root's own group, which passes MPI_PROC_NULL, does not take
// part); any other call's instance is both groups, the one with the lower
// first world rank first.
func (rp *replayer) collPlace(c *commInfo, root int32) (key collKey, members []int32, idx int, r int32, joins bool) {
	if c.collSeq == nil {
		// Shared by every local index naming the communicator.
		sk := collSeqKey{id: c.id, group: c.group}
		c.collSeq = rp.collSeq[sk]
		if c.collSeq == nil {
			c.collSeq = new(uint64)
			rp.collSeq[sk] = c.collSeq
		}
	}
	key = collKey{comm: c.id, group: c.group, seq: *c.collSeq, n: int64(len(c.members))}
	*c.collSeq++
	if c.other {
		// Some members' entries and exits are in another task's traces:
		// no instance to join; idx still says which member counts it.
		rp.otherWorld++
		return key, nil, c.myIdx, -1, false
	}
	if !c.inter {
		return key, c.members, c.myIdx, root, true
	}
	// (key.n is set below to the number of the instance's members.)
	switch {
	case root == traceformat.ProcNull:
		return key, nil, -1, -1, false
	case root == traceformat.RootInter:
		m := make([]int32, 0, 1+len(c.remote))
		m = append(append(m, rp.rank), c.remote...)
		key.n = int64(len(m))
		return key, m, 0, 0, true
	case root >= 0:
		if int(root) >= len(c.remote) {
			return key, nil, -1, -1, false
		}
		m := make([]int32, 0, 1+len(c.members))
		m = append(append(m, c.remote[root]), c.members...)
		key.n = int64(len(m))
		return key, m, 1 + c.myIdx, 0, true
	}
	if c.both == nil {
		a, b := c.members, c.remote
		off := 0
		if len(b) > 0 && len(a) > 0 && b[0] < a[0] {
			a, b, off = b, a, len(c.remote)
		}
		c.both = append(append(make([]int32, 0, len(a)+len(b)), a...), b...)
		c.bothIdx = off + c.myIdx
		c.bothSplit = int32(len(a))
	}
	key.split, key.n = c.bothSplit, int64(len(c.both))
	return key, c.both, c.bothIdx, -1, true
}

// interGroup is the group an intercommunicator's collective instances
// are keyed by, the same in both groups: the lower of their first world
// ranks.
func interGroup(c *commInfo) int32 {
	if len(c.remote) > 0 && (len(c.members) == 0 || c.remote[0] < c.group) {
		return c.remote[0]
	}
	return c.group
}
