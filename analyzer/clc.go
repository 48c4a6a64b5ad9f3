package analyzer

import (
	"math"
	"slices"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// The controlled logical clock (Becker, Rabenseifner, Wolf, "Scalable
// timestamp synchronization for event traces of message-passing
// applications", Parallel Computing 35(12), 2009) repairs clock-condition
// violations in two steps; the replay does both while it streams.
//
// Forward: a call that ends before the time it depends on (a receive
// before its send started, a collective exit before the entries its shape
// depends on) is moved to end at that bound, and every later event of the
// rank is shifted by the same jump (replayer.delta), which keeps the local
// intervals after it.
//
// Backward amortization: a jump alone would put the whole error into the
// repaired call (a receive that seems to wait for the full jump) while the
// events just before it stay where the skewed clock put them. Instead, the
// events of the rank between the last fixed point t_a and the entry t_r of
// the repaired receive are moved forward by a correction rising linearly
// from 0 at t_a to the jump d at t_r,
//
//	t ↦ t + d·(t − t_a)/(t_r − t_a),
//
// so the jump is spread over that stretch and the receive keeps its
// recorded duration (its entry moves by d, like its exit). Durations inside
// the stretch grow by the factor 1 + d/(t_r − t_a), and the Real Sync and
// Overlap of the calls there are recomputed with the moved times.
//
// A fixed point is an event whose times the replay has already handed to
// another rank (a send's entry, a collective's entry and exit, the
// posting time of a receive that a blocking or synchronous send's Late
// receiver depends on, characteristics.md §8.6: the call completing that
// receive, exchange.taken; the entry and exit of a Wait or Test completing
// a synchronous nonblocking send, from which its Late receiver is
// charged) or that delimits an interval or a sequential
// section (MPI_Pcontrol, the start of the program), or a repaired call.
// Scalasca lets the amortization move sends too, as far as their receives
// allow, which takes a backward replay; a streaming replay has already
// given the send times away, so here the stretch ends at the last of
// them: never a new violation, and no second pass. Only violations at
// calls that publish nothing are amortized (MPI_Recv,
// MPI_Mprobe/MPI_Improbe, the Wait and Test family); a violation at a
// collective or at MPI_Sendrecv, whose entry was published before the
// violation could be seen, or at a call that handed the posting time of
// a message sent before the bound, is repaired forward only. At most maxPend events (and 16·maxPend completed
// requests) wait for a possible amortization; past that, the stretch so
// far is fixed (memory stays bounded on a rank that only receives).

// maxPend bounds the events kept for backward amortization (the default
// of limits.pend).
const maxPend = 4096

// pendEv is an event since the last fixed point: its times and what its
// contributions to the accumulators depend on, to redo them if its times
// move. Its interval is the current one (a change of interval is a fixed
// point). The Real Sync of an event that waited is in its record of
// recent late-sender waits (waits.go, woRec) and, once that record left
// the ring, in a pendFig record; an event that lowered its site's shortest
// call has a pendFig record too.
type pendEv struct {
	entry, exit int64
	ov          int64 // its Overlap: the time before entry it newly covered
	site        uint32
	calls       uint32 // e.Calls (profile.go, amortizeProfile)
	class       uint8  // the tracepb.Function_Class its time went to
}

// pendFig is a figure of pending event ev that amortization redoes. The
// figMin records are in the order of their events; a figSync record is
// made when the woRec of its event leaves the ring, in no particular order.
type pendFig struct {
	ev   int32
	kind figKind
	wo   bool    // figSync: its Real Sync is a wrong-order wait (waits.go)
	from msgFrom // figSync: the late sender of its Real Sync (waits.go)
	// v is, for figSync, the send entry its Real Sync waited for (Real
	// Sync is max(0, v − entry)); for figMin, its site's shortest call
	// before it (profile.go, amortizeProfile).
	v int64
}

type figKind uint8

const (
	// figSync: a Real Sync > 0 with its bound. (A Real Sync of 0 stays
	// 0: amortization moves entries later, never earlier.)
	figSync figKind = iota
	// figMin: the event lowered its site's shortest call (or was its
	// first). Durations only grow under amortization, so that the
	// minimum of a site whose pending calls lowered nothing stays.
	figMin
	// figOv: the event's Overlap is not in one piece ending at its entry
	// (replayer.cover): v ns of it lie after the last fixed point, the
	// part amortization stretches.
	figOv
)

// ovTerm is one completed request's part of a Wait/Test call's Overlap:
// max(0, entry − max(start, t)); t is noT for sends (no message time).
type ovTerm struct {
	start, t int64
}

const noT = math.MinInt64

// fix makes the event that ended at exit a fixed point.
func (rp *replayer) fix(exit int64) {
	rp.pend, rp.pendOv, rp.pendFig = rp.pend[:0], rp.pendOv[:0], rp.pendFig[:0]
	rp.pr.pendMsgs = rp.pr.pendMsgs[:0]
	rp.pendGen++
	rp.fixedAt = exit
}

// keep records an event after the last fixed point, or makes it a fixed
// point when no event may wait (limits.pend 0); it returns whether the
// event was kept, as the last of pend. charge does its common case.
func (rp *replayer) keep(entry, exit, ov int64, site, calls uint32, class tracepb.Function_Class) bool {
	if rp.maxPend <= 0 {
		rp.fix(exit)
		return false
	}
	if n := len(rp.pend); n >= rp.maxPend {
		// The older events stay as they are: the last of them becomes
		// the fixed point. (The event's own figOv and figMin records, if
		// any, are the last of pendFig: keepOv and lowerMin made them.)
		rp.fixedAt = rp.pend[n-1].exit
		m, k := len(rp.pendFig), 0
		for m > k && int(rp.pendFig[m-1-k].ev) == n {
			k++
		}
		copy(rp.pendFig, rp.pendFig[m-k:])
		for j := range k {
			rp.pendFig[j].ev = 0
			if rp.pendFig[j].kind == figOv {
				// Its Overlap before the new fixed point stays.
				rp.pendFig[j].v = min(rp.pendFig[j].v, max(0, entry-rp.fixedAt))
			}
		}
		rp.pend, rp.pendFig = rp.pend[:0], rp.pendFig[:k]
		rp.pr.pendMsgs = rp.pr.pendMsgs[:0]
		rp.pendGen++
	}
	rp.pend = append(rp.pend, pendEv{entry: entry, exit: exit, ov: ov, site: site, calls: calls, class: uint8(class)})
	return true
}

// handed notes that the call being replayed handed the posting time of
// a receive whose message was sent at t (exchange.taken).
func (rs *rankSync) handed(t int64) {
	if !rs.postHanded || t < rs.handedT {
		rs.handedT = t
	}
	rs.postHanded = true
}

// keepOv records the Overlap the current call counted after the last
// fixed point (rp.ovPost), for amortize: the call will be the next of
// pend if kept.
func (rp *replayer) keepOv() {
	g := rp.newFig()
	g.ev, g.kind, g.wo, g.v = int32(len(rp.pend)), figOv, false, rp.ovPost
}

// newFig is a new record at the end of pendFig, to be written field by
// field (an append of a composite literal builds it on the stack and
// copies it).
func (rp *replayer) newFig() *pendFig {
	n := len(rp.pendFig)
	if n == cap(rp.pendFig) {
		rp.pendFig = slices.Grow(rp.pendFig, 1)
	}
	rp.pendFig = rp.pendFig[:n+1]
	return &rp.pendFig[n]
}

// repairRecv is repair for a call that published nothing (a receive, a
// probe, a Wait or Test): the jump is also amortized backward when there is
// room, which moves the call's entry by the jump too.
func (rp *replayer) repairRecv(entry, exit *int64, bound int64) {
	if *exit < bound+minLatencyNs {
		// Inlined: a consistent trace needs no repair.
		rp.repairRecvSlow(entry, exit, bound)
	}
}

func (rp *replayer) repairRecvSlow(entry, exit *int64, bound int64) {
	before := *exit
	rp.repair(exit, bound)
	d := *exit - before
	if d == 0 {
		return
	}
	rp.repaired = true
	// A posting time handed to a sender (rankSync.handed) must not move,
	// but for a message sent at the bound: the posting moves to the bound
	// at most, and stays before that send's entry, where it is charged
	// nothing either way.
	if (!rp.rs.postHanded || rp.rs.handedT >= bound) && rp.amortize(*entry, d) {
		*entry += d
	}
}

// amortize moves the events since the last fixed point for a jump of d ns
// found at a call entered at tr, and redoes their contributions. The
// current call's overlap terms (already in pendOv past the pending events'
// ranges) and the live requests' start times move with them.
func (rp *replayer) amortize(tr, d int64) bool {
	ta := rp.fixedAt
	if tr <= ta || d <= 0 {
		return false
	}
	k := float64(d) / float64(tr-ta)
	rp.pr.gen++
	cur := 0
	move := func(t int64) int64 {
		switch {
		case t <= ta:
			return t
		case t >= tr:
			return t + d
		}
		return t + int64(math.Round(float64(t-ta)*k))
	}
	// The pending events are all in the current interval: a change of
	// interval is a fixed point.
	a := rp.cur.Value
	// First what depends on the events' entries before they move: their
	// Real Sync, and the minimum of the sites whose pending calls lowered
	// it, restored to what it was before the first of them
	// (amortizeProfile applies the moved durations).
	for x := range rp.pendFig {
		g := &rp.pendFig[x]
		p := &rp.pend[g.ev]
		switch g.kind {
		case figSync:
			rp.resync(a, p, g.v, g.from, g.wo, move(p.entry))
		case figMin:
			if s := a.site(p.site); s.amGen != rp.pr.gen {
				s.amGen = rp.pr.gen
				s.minCall = g.v
			}
		case figOv:
			// The time it covered after t_a (up to its entry) is
			// stretched with it; what it covered before stays. (Its
			// Overlap is kept aside while pend is moved below.)
			nov := p.ov - g.v + move(p.entry) - move(p.entry-g.v)
			s := a.site(p.site)
			a.overlap += nov - p.ov
			s.overlap += nov - p.ov
			p.ov, g.v = 0, nov
		}
	}
	rp.wo.amortize(rp, a, move)
	for i := range rp.pend {
		p := &rp.pend[i]
		ne, nx := move(p.entry), move(p.exit)
		s := a.site(p.site)
		if dd := (nx - ne) - (p.exit - p.entry); dd != 0 {
			switch tracepb.Function_Class(p.class) {
			case tracepb.Function_POINT_TO_POINT:
				a.p2p += dd
			case tracepb.Function_COLLECTIVE:
				a.coll += dd
			default:
				a.sys += dd
			}
			s.time += dd
			rp.mpiNs += dd
		}
		if p.ov > 0 {
			// The time it covered is in one piece ending at its entry
			// (else a figOv record redid it above).
			nov := ne - move(p.entry-p.ov)
			a.overlap += nov - p.ov
			s.overlap += nov - p.ov
			p.ov = nov
		}
		rp.amortizeProfile(a, i, p, s, ne, nx, &cur)
		p.entry, p.exit = ne, nx
	}
	for x := range rp.pendFig {
		if g := &rp.pendFig[x]; g.kind == figOv {
			rp.pend[g.ev].ov = g.v
		}
	}
	// The current call's terms (the only ones in pendOv) and the time
	// counted as Overlap move with the events.
	for j := range rp.pendOv {
		rp.pendOv[j].start = move(rp.pendOv[j].start)
	}
	for j := 0; j < rp.ovSeg.n; j++ {
		g := rp.ovSeg.at(j)
		g.lo, g.hi = move(g.lo), move(g.hi)
	}
	rp.ovFloor = move(rp.ovFloor)
	rp.reqs.each(func(r *request) { r.start = move(r.start) })
	rp.obs.amortize(move)
	rp.amortized++
	return true
}
