package analyzer

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Waits with their culprit (docs/characteristics.md §9): every Real Sync
// and Potential Sync the replay charges is also recorded, per interval and
// processor, under its kind, the waiting call site, and the partner whose
// late arrival caused it (its rank and the call site of its late call, in
// that rank's file-local id space; build maps both sites to SRC ids). The
// map is touched only for a wait > 0.

// waitKind is the kind of a wait; the names are waitKindNames. Four
// bytes, as the other fields of waitKey: a key without padding is hashed
// as one block of memory instead of field by field.
type waitKind uint32

const (
	wkLateSender waitKind = iota
	wkLateReceiver
	wkBarrier
	wkNxN
	wkScan
	wkLateBroadcast
	wkEarlyReduce
	wkLateScatter
	wkEarlyGather
	wkNonblockingColl
	wkWrongOrder
	wkCollRest
	numWaitKinds
)

// waitKindNames are the kinds as the report names them (report.Wait).
var waitKindNames = [numWaitKinds]string{
	wkLateSender:      "late_sender",
	wkLateReceiver:    "late_receiver",
	wkBarrier:         "wait_at_barrier",
	wkNxN:             "wait_at_nxn",
	wkScan:            "wait_at_scan",
	wkLateBroadcast:   "late_broadcast",
	wkEarlyReduce:     "early_reduce",
	wkLateScatter:     "late_scatter",
	wkEarlyGather:     "early_gather",
	wkNonblockingColl: "wait_at_nonblocking_collective",
	wkWrongOrder:      "wrong_order",
	wkCollRest:        "wait_at_collective",
}

// msgFrom names a late partner: its world rank and the call site of its
// late call (file-local to that rank).
type msgFrom struct {
	rank int32
	site uint32
}

// waitKey is one aggregate of waits on one processor in one interval.
type waitKey struct {
	kind waitKind
	site uint32 // the waiting call's site
	late msgFrom
}

// waitVal is the waiting time (ns) and the number of waits > 0.
type waitVal struct {
	ns, n int64
}

// addWait records ns of waiting (n instances) in a.
func (a *acc) addWait(k waitKey, ns, n int64) {
	v := a.wait(k)
	v.ns += ns
	v.n += n
}

// wait is a's aggregate of the waits of key k, made if there is none.
func (a *acc) wait(k waitKey) *waitVal { return a.culprits.get(k, noWait, k.hash(), waitKey.hash) }

// waitTable is an interval's waits (acc.culprits).
type waitTable = aggTable[waitKey, waitVal]

// noWait is waitTable's free key: no wait has that kind.
var noWait = waitKey{kind: ^waitKind(0)}

func (k waitKey) hash() uint32 {
	return hash64(uint64(k.kind)<<32|uint64(k.site), uint64(uint32(k.late.rank))<<32|uint64(k.late.site))
}

// lateSender records the Real Sync rs > 0 of a receiving call at site,
// caused by the message of rp.from.
func (rp *replayer) lateSender(a *acc, site uint32, rs int64) {
	a.addWait(waitKey{kind: wkLateSender, site: site, late: rp.from.msgFrom}, rs, 1)
}

// resync redoes the Real Sync of pending event p (in interval a), which
// waited for a message sent at t by from, for its entry moved to ne
// (backward amortization, clc.go): its sums and its late-sender or, if wo,
// wrong-order record.
func (rp *replayer) resync(a *acc, p *pendEv, t int64, from msgFrom, wo bool, ne int64) {
	old := max(0, t-p.entry)
	nw := max(0, t-ne)
	if nw == old {
		return
	}
	a.realSync += nw - old
	a.site(p.site).realSync += nw - old
	n := int64(0)
	if nw > 0 && old <= 0 {
		n = 1
	} else if nw <= 0 && old > 0 {
		n = -1
	}
	k := wkLateSender
	if wo {
		k = wkWrongOrder
	}
	a.addWait(waitKey{kind: k, site: p.site, late: from}, nw-old, n)
}

// Messages in wrong order (Scalasca's "Late Sender, Wrong Order"): a
// late-sender wait for a message sent at s is a wrong_order wait when the
// rank receives, in a later call, a message whose send was entered before
// s: that message was there to be received while the rank waited for the
// other one. Each late-sender wait is remembered until a message sent
// earlier turns it into a wrong-order wait, or until maxWrongOrder later
// late-sender waits have pushed it out. This is Scalasca's rule, with
// its window.

// maxWrongOrder is how many recent late-sender waits a rank keeps.
const maxWrongOrder = 100

// woRec is one recent late-sender wait: where it was charged (a, site,
// from), the send entry it waited for (s), its Real Sync (ns), and the
// call's place in pend while it may still be amortized (idx ≥ 0 under
// generation gen). For such a call the record is what amortization
// needs of its Real Sync, as long as it is in the ring; a record that
// leaves it (pushed out, or turned wrong-order) while its call may still
// be amortized leaves a figSync record in pendFig (keepSync).
type woRec struct {
	a    *acc
	site uint32
	from msgFrom
	s    int64
	// pm bounds the send entries of this record and the older ones from
	// above (their maximum, or more once older records were pushed out):
	// nondecreasing from the oldest record, so that wrongOrder finds the
	// first record it may change by binary search.
	pm  int64
	ns  int64
	idx int
	gen uint64
}

// woRing holds the recent late-sender waits, the oldest overwritten; max
// bounds their send entries from above (a receive of a message sent
// later cannot reorder any of them: the common case costs a comparison).
type woRing struct {
	n    int // records in use: recs[next-n … next-1] mod maxWrongOrder
	next int
	max  int64
	recs [maxWrongOrder]woRec // after the count, read at every call
}

// noteLateSender remembers the call just charged, which waited f.realSync
// > 0 for a message sent at f.syncT (MPI_Sendrecv: at its entry plus its
// Real Sync); kept tells whether the call was kept for backward
// amortization.
func (rp *replayer) noteLateSender(a *acc, site uint32, f *callFigures, kept bool) {
	w := &rp.wo
	s := f.syncT
	if !f.hasSync {
		s = f.entry + f.realSync
	}
	// w.max is the newest record's bound pm (wrongOrder keeps it so).
	pm := s
	if w.n > 0 {
		pm = max(pm, w.max)
	}
	// (Field by field: a composite literal is built on the stack and
	// copied.)
	r := &w.recs[w.next]
	if w.n == maxWrongOrder && r.idx >= 0 && r.gen == rp.pendGen {
		// The oldest record is pushed out, its call still pending.
		rp.keepSync(r, false)
	}
	r.a, r.site, r.from, r.s, r.pm, r.ns, r.idx, r.gen = a, site, rp.from.msgFrom, s, pm, f.realSync, -1, rp.pendGen
	if kept && f.hasSync {
		// (A kept call's Real Sync has its bound: MPI_Sendrecv's, which
		// has none, is a fixed point.)
		r.idx = len(rp.pend) - 1
	}
	w.next = w.succ(w.next)
	if w.n < maxWrongOrder {
		w.n++
	}
	w.max = pm
}

// succ and prev are the slots after and before slot i of the ring (a
// compare instead of a division by its size).
func (w *woRing) succ(i int) int {
	if i++; i == maxWrongOrder {
		return 0
	}
	return i
}

func (w *woRing) prev(i int) int {
	if i == 0 {
		return maxWrongOrder - 1
	}
	return i - 1
}

// firstAfter is the place (from the oldest) of the first record whose
// bound pm exceeds t, w.n if none, and the bound of the record before it
// (math.MinInt64 if none). Send entries mostly grow with the records, so
// that the first is found from the newest backwards, past the few records
// wrongOrder looks at after it anyway (a binary search over the window
// cost more than that).
func (w *woRing) firstAfter(t int64) (j0 int, hi int64) {
	j0, i := w.n, w.next
	for j0 > 0 {
		if i == 0 {
			i = maxWrongOrder
		}
		i--
		if pm := w.recs[i].pm; pm <= t {
			return j0, pm
		}
		j0--
	}
	return 0, math.MinInt64
}

// wrongOrder turns every remembered late-sender wait for a message sent
// after t into a wrong-order wait: a message sent at t is received now.
func (rp *replayer) wrongOrder(t int64) {
	w := &rp.wo
	start := w.next - w.n
	if start < 0 {
		start += maxWrongOrder
	}
	// The records before the first whose bound pm exceeds t were all sent
	// at or before t: they stay as they are.
	j0, hi := w.firstAfter(t)
	// The records kept are compacted in place towards the oldest slot,
	// in order: a kept record moves to a slot at or before its own, one
	// already read. (A copy through a buffer of the whole window zeroed
	// and copied several kilobytes per call: 15 % of the replay of a
	// halo exchange, whose Waitall calls get messages out of send order.)
	// i is the slot of record j, k the slot of the next one kept.
	i := start + j0
	if i >= maxWrongOrder {
		i -= maxWrongOrder
	}
	kept, k := j0, i
	for j := j0; j < w.n; j, i = j+1, w.succ(i) {
		r := &w.recs[i]
		if r.s <= t {
			hi = max(hi, r.s)
			r.pm = hi
			if k != i {
				w.recs[k] = *r
			}
			kept, k = kept+1, w.succ(k)
			continue
		}
		// (r.ns is the call's Real Sync even after an amortization:
		// woRing.amortize.)
		ns := r.ns
		if r.idx >= 0 && r.gen == rp.pendGen {
			rp.keepSync(r, true)
		}
		if ns > 0 {
			r.a.addWait(waitKey{kind: wkLateSender, site: r.site, late: r.from}, -ns, -1)
			r.a.addWait(waitKey{kind: wkWrongOrder, site: r.site, late: r.from}, ns, 1)
		}
	}
	w.n, w.next, w.max = kept, k, hi
}

// amortize redoes the Real Sync of the pending calls whose late-sender
// records are in the ring (before amortize moves their entries: move
// gives the new ones) and refreshes the records' Real Sync.
func (w *woRing) amortize(rp *replayer, a *acc, move func(int64) int64) {
	for j := 0; j < w.n; j++ {
		r := &w.recs[(w.next-w.n+j+maxWrongOrder)%maxWrongOrder]
		if r.idx >= 0 && r.gen == rp.pendGen {
			p := &rp.pend[r.idx]
			ne := move(p.entry)
			rp.resync(a, p, r.s, r.from, false, ne)
			r.ns = max(0, r.s-ne)
		}
	}
}

// keepSync keeps what amortization needs of the Real Sync of pending call
// r.idx, whose record r leaves the ring; wo: it is a wrong-order wait.
func (rp *replayer) keepSync(r *woRec, wo bool) {
	g := rp.newFig()
	g.ev, g.kind, g.wo, g.from, g.v = int32(r.idx), figSync, wo, r.from, r.s
}

// lateKey is where a late receiver's charge goes: the sending call
// (replayer.lateAtt) and the receive that was posted late.
type lateKey struct {
	att  uint64
	from msgFrom
}

// addLate adds d ns of a late receiver. rs.mu is held.
func (rs *rankSync) addLate(k lateKey, d int64) {
	v := rs.late.get(k, noLate, k.hash(), lateKey.hash)
	v.ns += d
	v.n++
}

// lateTable is a rank's late receivers' charges (rankSync.late).
type lateTable = aggTable[lateKey, waitVal]

// noLate is lateTable's free key: no rank is negative.
var noLate = lateKey{from: msgFrom{rank: -1}}

func (k lateKey) hash() uint32 {
	return hash64(uint64(uint32(k.from.rank))<<32|uint64(k.from.site), k.att)
}

// collLate is the latest participant of a collective instance and the
// kind of the waits it caused.
type collLate struct {
	from lateCall
	kind waitKind
	ok   bool
}

// latest is the late partner of instance in: participant i's rank and the
// site of the call it entered with.
func (in *collInst) latest(i int) collLate {
	if i < 0 {
		return collLate{}
	}
	k := in.kind
	if in.nonblocking {
		k = wkNonblockingColl
	}
	return collLate{from: in.partner(i), kind: k, ok: true}
}

// partner is participant i of in as a late partner.
func (in *collInst) partner(i int) lateCall {
	sl := &in.slots[i]
	return lateCall{msgFrom: msgFrom{rank: in.members[i], site: sl.esite}, span: sl.espan, comp: sl.ecomp}
}

// collWaitKind is the kind of the Potential Sync of a blocking collective
// fn of the given shape.
// (Called for every new instance: the names are compared without
// building their lower-case copies.)
func collWaitKind(fn string, shape tracepb.Function_Collective) waitKind {
	switch shape {
	case tracepb.Function_ONE_TO_ALL:
		if containsLower(fn, "scatter") {
			return wkLateScatter
		}
		return wkLateBroadcast
	case tracepb.Function_ALL_TO_ONE:
		if containsLower(fn, "gather") {
			return wkEarlyGather
		}
		return wkEarlyReduce
	case tracepb.Function_PREFIX:
		return wkScan
	}
	if containsLower(fn, "barrier") {
		return wkBarrier
	}
	return wkNxN
}

// containsLower says whether strings.ToLower(s) contains sub, a lower-case
// ASCII word.
func containsLower(s, sub string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), sub)
		}
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lowerASCII(s[i+j]) == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// collWait records a participant's Potential Sync k.pot > 0 in a: the
// part its collective's pattern explains under the pattern's kind, the
// rest as a wait for the latest participant.
func collWait(a *acc, k *collContrib) {
	if k.pot <= 0 {
		return
	}
	if k.shape > 0 && k.late.ok {
		a.addWait(waitKey{kind: k.late.kind, site: k.att.site, late: k.late.from.msgFrom}, k.shape, 1)
		a.addCause(k.late.from, k.shape, k.att.comp)
	}
	if rest := k.pot - k.shape; rest > 0 && k.rest.ok {
		a.addWait(waitKey{kind: wkCollRest, site: k.att.site, late: k.rest.from.msgFrom}, rest, 1)
		a.addCause(k.rest.from, rest, k.att.comp)
	}
}

// shapeWaits is what a completed instance's participants wait for by its
// shape (docs/characteristics.md §9, Scalasca's patterns): the root, the
// latest non-root, or the latest lower rank.
type shapeWaits struct {
	root    int   // slot index, -1 when none
	prefMax int64 // latest entry of the slots before the current one (PREFIX)
	prefIdx int
}

// newShapeWaits prepares split for the blocking instance in.
func (in *collInst) newShapeWaits() shapeWaits {
	sh := shapeWaits{root: -1, prefIdx: -1}
	if in.nonblocking || in.mismatch {
		return sh
	}
	if r := int(in.root); r >= 0 && r < len(in.slots) && in.slots[r].hasExit {
		sh.root = r
	}
	return sh
}

// split divides participant i's Potential Sync c.pot into the part the
// instance's pattern explains (c.shape, waiting for c.late) and the rest
// (waiting for the latest participant, c.rest); called for the slots in
// order (PREFIX keeps the latest entry before i).
func (sh *shapeWaits) split(in *collInst, i int, c *collContrib) {
	latest := c.late
	c.rest = collLate{from: latest.from, kind: wkCollRest, ok: latest.ok}
	e := in.slots[i].entry
	wait := func(j int) {
		if j < 0 {
			c.shape, c.late = 0, collLate{}
			return
		}
		c.shape = min(c.pot, max(0, in.slots[j].entry-e))
		c.late = collLate{from: in.partner(j), kind: in.kind, ok: true}
	}
	switch {
	case in.nonblocking || in.mismatch:
		c.shape = c.pot
	case in.shape == tracepb.Function_ONE_TO_ALL:
		if i == sh.root {
			wait(-1)
		} else {
			wait(sh.root)
		}
	case in.shape == tracepb.Function_ALL_TO_ONE:
		if i == sh.root {
			// The root waits for the latest non-root: its whole
			// Potential Sync (Scalasca's Early Reduce is the last
			// sender's entry minus the root's).
			c.shape = c.pot
		} else {
			wait(-1)
		}
	case in.shape == tracepb.Function_PREFIX:
		wait(sh.prefIdx)
		if sh.prefIdx < 0 || e > sh.prefMax {
			sh.prefMax, sh.prefIdx = e, i
		}
	default:
		c.shape = c.pot
	}
}

// addWaits adds waits m (one node's or a nested interval's) to t.
func (t *rankTot) addWaits(m *waitTable) {
	if m.len() == 0 {
		return
	}
	if t.waits == nil {
		t.waits = make(map[waitKey]waitVal, m.len())
	}
	for k, v := range m.all() {
		w := t.waits[k]
		w.ns += v.ns
		w.n += v.n
		t.waits[k] = w
	}
}

// reportWaits lists an interval's waits for the report: merged by kind,
// ranks and SRC ids (different file-local sites may be one SRC), the
// longest first.
func reportWaits(g *gnode, tb *siteTable) []report.Wait {
	srcOf := tb.srcOf
	type key struct {
		kind                  waitKind
		rank, late, src, lsrc int
	}
	n := 0
	for _, t := range g.ranks {
		n += len(t.waits)
	}
	agg := make(map[key]waitVal, n)
	for r, t := range g.ranks {
		for k, v := range t.waits {
			if v.ns <= 0 || v.n <= 0 {
				continue
			}
			rk := key{k.kind, r, int(k.late.rank), srcOf(int32(r), k.site), srcOf(k.late.rank, k.late.site)}
			w := agg[rk]
			w.ns += v.ns
			w.n += v.n
			agg[rk] = w
		}
	}
	out := make([]report.Wait, 0, len(agg))
	for k, v := range agg {
		out = append(out, report.Wait{Kind: waitKindNames[k.kind], WaitingRank: k.rank, LateRank: k.late,
			Seconds: sec(v.ns), Count: v.n, WaitingSRC: k.src, LateSRC: k.lsrc})
	}
	return sortedBy(out, func(a, b *report.Wait) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		if c := cmp.Compare(a.WaitingRank, b.WaitingRank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.LateRank, b.LateRank); c != 0 {
			return c
		}
		if c := cmp.Compare(a.WaitingSRC, b.WaitingSRC); c != 0 {
			return c
		}
		return cmp.Compare(a.LateSRC, b.LateSRC)
	})
}

// sortedBy is s sorted by cmp, in a new slice: the elements' indexes
// are sorted, not the elements, which the report's waits and causes
// are too large to be copied at every comparison (SortFunc passes them by
// value).
func sortedBy[T any](s []T, cmp func(a, b *T) int) []T {
	idx := make([]int32, len(s))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int { return cmp(&s[a], &s[b]) })
	out := make([]T, len(s))
	for i, j := range idx {
		out[i] = s[j]
	}
	return out
}

// addWaitVals adds a nested interval's waits m to t.
func (t *rankTot) addWaitVals(m map[waitKey]waitVal) {
	for k, v := range m {
		if t.waits == nil {
			t.waits = map[waitKey]waitVal{}
		}
		w := t.waits[k]
		w.ns += v.ns
		w.n += v.n
		t.waits[k] = w
	}
}
