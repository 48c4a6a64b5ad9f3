package analyzer

import (
	"math"

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
// another rank (a send's entry, a collective's entry and exit) or that
// delimits an interval or a sequential section (MPI_Pcontrol, the start of
// the program), or a repaired call. Scalasca lets the amortization move
// sends too, as far as their receives allow, which takes a backward replay;
// a streaming replay has already given the send times away, so here the
// stretch ends at the last of them: never a new violation, and no second
// pass. Only violations at calls that publish nothing are amortized
// (MPI_Recv, MPI_Mprobe/MPI_Improbe, the Wait and Test family); a violation
// at a collective or at MPI_Sendrecv, whose entry was published before the
// violation could be seen, is repaired forward only. At most maxPend
// events (and 16·maxPend completed requests) wait for a possible
// amortization; past that, the stretch so far is fixed (memory stays
// bounded on a rank that only receives).

// maxPend bounds the events kept for backward amortization (the default
// of limits.pend).
const maxPend = 4096

// pendEv is an event since the last fixed point: what its contributions to
// the accumulators depend on, to redo them if its times move.
type pendEv struct {
	a           *acc
	site        uint32
	class       tracepb.Function_Class
	entry, exit int64
	syncT       int64 // Real Sync is max(0, syncT − entry) when hasSync
	hasSync     bool
	calls       uint32  // e.Calls (profile.go, amortizeProfile)
	ov          int64   // its Overlap: the time before entry it newly covered
	from        msgFrom // the late sender of its Real Sync (waits.go)
	wo          bool    // its Real Sync is a wrong-order wait (waits.go)
	// prevMin: its site's shortest call before it (profile.go,
	// amortizeProfile).
	prevMin int64
}

// ovTerm is one completed request's part of a Wait/Test call's Overlap:
// max(0, entry − max(start, t)); t is noT for sends (no message time).
type ovTerm struct {
	start, t int64
}

const noT = math.MinInt64

// fix makes the event that ended at exit a fixed point.
func (rp *replayer) fix(exit int64) {
	rp.pend, rp.pendOv = rp.pend[:0], rp.pendOv[:0]
	rp.pr.pendMsgs = rp.pr.pendMsgs[:0]
	rp.pendGen++
	rp.fixedAt = exit
}

// keep records an event after the last fixed point; ov is its Overlap. It
// returns the event's entry, the last of pend.
func (rp *replayer) keep(a *acc, site uint32, class tracepb.Function_Class, entry, exit, syncT int64, hasSync bool, ov int64) *pendEv {
	if len(rp.pend) >= rp.maxPend {
		// The older events stay as they are: the last of them becomes
		// the fixed point.
		rp.fixedAt = rp.pend[len(rp.pend)-1].exit
		rp.pend = rp.pend[:0]
		rp.pr.pendMsgs = rp.pr.pendMsgs[:0]
		rp.pendGen++
	}
	// Written in place: a composite literal is built on the stack and
	// copied, which showed in the replay's profile.
	n := len(rp.pend)
	if n < cap(rp.pend) {
		rp.pend = rp.pend[:n+1]
	} else {
		rp.pend = append(rp.pend, pendEv{})
	}
	p := &rp.pend[n]
	p.a, p.site, p.class, p.entry, p.exit = a, site, class, entry, exit
	p.syncT, p.hasSync, p.ov, p.from, p.wo = syncT, hasSync, ov, rp.from.msgFrom, false
	return p
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
	if rp.amortize(*entry, d) {
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
	for i := range rp.pend {
		p := &rp.pend[i]
		ne, nx := move(p.entry), move(p.exit)
		s := p.a.site(p.site)
		if dd := (nx - ne) - (p.exit - p.entry); dd != 0 {
			switch p.class {
			case tracepb.Function_POINT_TO_POINT:
				p.a.p2p += dd
			case tracepb.Function_COLLECTIVE:
				p.a.coll += dd
			default:
				p.a.sys += dd
			}
			s.time += dd
			rp.mpiNs += dd
		}
		if p.hasSync {
			old := max(0, p.syncT-p.entry)
			dd := max(0, p.syncT-ne) - old
			p.a.realSync += dd
			s.realSync += dd
			if dd != 0 {
				p.resync(old, old+dd)
			}
		}
		if p.ov > 0 {
			// The time it covered ends at its entry and is, but for
			// gaps in what was covered before, the ov ns before it.
			nov := ne - move(p.entry-p.ov)
			p.a.overlap += nov - p.ov
			s.overlap += nov - p.ov
			p.ov = nov
		}
		rp.amortizeProfile(i, p, s, ne, nx, &cur)
		p.entry, p.exit = ne, nx
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
	rp.wo.amortized(rp)
	rp.amortized++
	return true
}
