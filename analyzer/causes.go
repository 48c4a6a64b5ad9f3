package analyzer

import (
	"cmp"

	"github.com/dtpa/dtpa/report"
)

// The causes of waits (docs/characteristics.md §9, "Causes"): a late
// partner is late because of what it did before its late call. Each rank
// keeps its current span: the time since the exit of its last call that
// can wait for another rank (a blocking send or receive, a probe, a
// Wait/Test call, a blocking collective), at that call's site; the calls
// inside a span that start something and return (MPI_Isend, MPI_Irecv,
// MPI_Start, a nonblocking collective's start, MPI_Comm_rank …) do not end
// it, and their time is not computation. A late call carries its span's
// start site and computation (time outside MPI); the waiting call's own
// span is compared with it when the wait is charged, with the times of
// the forward replay (before any backward amortization).

// sendSite is a late partner's call as its messages carry it: its call
// site, the site of the call that began its span, and the computation in
// the span (ns).
type sendSite struct {
	site, span uint32
	comp       int64
}

// lateCall is a late partner as the waiting call sees it: its rank and
// call site (the waits' key), and its span (span site, computation).
type lateCall struct {
	msgFrom
	span uint32
	comp int64
}

// sentBy is the late partner of a message from world rank rank.
func sentBy(rank int32, s sendSite) lateCall {
	return lateCall{msgFrom: msgFrom{rank: rank, site: s.site}, span: s.span, comp: s.comp}
}

// spanState is a rank's current span: since start, the exit of the last
// call that could wait (at site), with mpi ns spent in calls since.
type spanState struct {
	start, mpi int64
	site       uint32
	ok         bool
}

// comp is the computation of the current span up to entry.
func (rp *replayer) comp(entry int64) int64 {
	if !rp.span.ok {
		return 0
	}
	return max(0, entry-rp.span.start-rp.span.mpi)
}

// callSite is the current call (at site, entered at entry) as a late
// partner.
func (rp *replayer) callSite(site uint32, entry int64) sendSite {
	return sendSite{site: site, span: rp.span.site, comp: rp.comp(entry)}
}

// spanAfter moves the span past a call of function fi: a call that can
// wait begins a new one.
func (rp *replayer) spanAfter(fi *fnInfo, site uint32, entry, exit int64) {
	if fi.endsSpan {
		rp.span = spanState{start: exit, site: site, ok: true}
	} else {
		rp.span.mpi += exit - entry
	}
}

// endsSpan says whether a call of operation o can wait for another rank,
// and so begins a new span (fnInfo.endsSpan).
func endsSpan(o op) bool {
	switch o {
	case opSend, opProbe, opRecv, opMprobe, opSendrecv, opMrecv, opComplete, opColl:
		return true
	}
	return false
}

// causeKey is one aggregate of causes: the late partner's call and the
// site that began its span.
type causeKey struct {
	late msgFrom
	span uint32
}

// causeVal sums the waits a cause made: their time (wait), the part of it
// the partner's longer computation explains (delay: per wait, the
// partner's computation minus the waiting rank's, within 0 … the wait),
// both computations, and the number of waits.
type causeVal struct {
	wait, delay, lateComp, ownComp, n int64
}

// addCause records a wait of wait ns > 0 for late, whose waiting call's
// own span computed own ns.
func (a *acc) addCause(late lateCall, wait, own int64) {
	v := a.cause(causeKey{late: late.msgFrom, span: late.span})
	v.wait += wait
	v.delay += min(wait, max(0, late.comp-own))
	v.lateComp += late.comp
	v.ownComp += own
	v.n++
}

// cause is a's aggregate of the causes of key k, made if there is none.
func (a *acc) cause(k causeKey) *causeVal { return a.causes.get(k, noCause, k.hash(), causeKey.hash) }

// causeTable is an interval's causes (acc.causes).
type causeTable = aggTable[causeKey, causeVal]

// noCause is causeTable's free key: no rank is negative.
var noCause = causeKey{late: msgFrom{rank: -1}}

func (k causeKey) hash() uint32 {
	return hash64(uint64(uint32(k.late.rank))<<32|uint64(k.late.site), uint64(k.span))
}

// addCauses adds causes m (a node's) to t.
func (t *rankTot) addCauses(m *causeTable) {
	if t.causes == nil && m.len() > 0 {
		t.causes = make(map[causeKey]causeVal, m.len())
	}
	for k, v := range m.all() {
		t.addCause(k, *v)
	}
}

// addCauseVals adds a nested interval's causes m to t.
func (t *rankTot) addCauseVals(m map[causeKey]causeVal) {
	for k, v := range m {
		t.addCause(k, v)
	}
}

func (t *rankTot) addCause(k causeKey, v causeVal) {
	if t.causes == nil {
		t.causes = map[causeKey]causeVal{}
	}
	c := t.causes[k]
	c.wait += v.wait
	c.delay += v.delay
	c.lateComp += v.lateComp
	c.ownComp += v.ownComp
	c.n += v.n
	t.causes[k] = c
}

// reportCauses lists an interval's causes for the report: merged over
// the waiting ranks by late rank and SRC ids, the longest delay first.
func reportCauses(g *gnode, tb *siteTable) []report.Cause {
	srcOf := tb.srcOf
	type key struct{ late, from, to int }
	n := 0
	for _, t := range g.ranks {
		n += len(t.causes)
	}
	agg := make(map[key]causeVal, n)
	for _, t := range g.ranks {
		for k, v := range t.causes {
			if v.n <= 0 {
				continue
			}
			rk := key{int(k.late.rank), srcOf(k.late.rank, k.span), srcOf(k.late.rank, k.late.site)}
			c := agg[rk]
			c.wait += v.wait
			c.delay += v.delay
			c.lateComp += v.lateComp
			c.ownComp += v.ownComp
			c.n += v.n
			agg[rk] = c
		}
	}
	out := make([]report.Cause, 0, len(agg))
	for k, v := range agg {
		out = append(out, report.Cause{LateRank: k.late, FromSRC: k.from, ToSRC: k.to, Count: v.n,
			Waits: sec(v.wait), Delay: sec(v.delay), LateComputation: sec(v.lateComp), WaitingComputation: sec(v.ownComp)})
	}
	return sortedBy(out, func(a, b *report.Cause) int {
		// Not cmp.Or, which compares every field first.
		if c := cmp.Compare(b.Delay, a.Delay); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Waits, a.Waits); c != 0 {
			return c
		}
		if c := cmp.Compare(a.LateRank, b.LateRank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.FromSRC, b.FromSRC); c != 0 {
			return c
		}
		return cmp.Compare(a.ToSRC, b.ToSRC)
	})
}
