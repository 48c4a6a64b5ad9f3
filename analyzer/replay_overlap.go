package analyzer

// ovSeg is a stretch of time [lo, hi) already counted as Overlap.
type ovSeg struct{ lo, hi int64 }

// maxOvSegs bounds the segments overlapCover remembers; the oldest is
// merged into ovFloor, so that time between it and the floor is never
// counted again (Overlap may then be a little low, never too high). A
// power of two: the ring's slots are taken with a mask.
const maxOvSegs = 8

// ovMask takes a slot of the ring (ovSegs.at).
const ovMask = maxOvSegs - 1

// (A compile-time check that maxOvSegs is a power of two.)
var _ [0]struct{} = [maxOvSegs & ovMask]struct{}{}

// ovSegs are the counted segments in time order, in a ring (a loop of
// nonblocking calls adds one per wait: no copying).
type ovSegs struct {
	head, n int // first (the count at every call)
	s       [maxOvSegs]ovSeg
}

func (o *ovSegs) at(i int) *ovSeg { return &o.s[(o.head+i)&ovMask] }

// overlapCover is the Overlap of a Wait/Test call entered at entry in
// interval node completing requests with the given terms: the time of the
// windows max(start, t) … entry of its requests (characteristics.md §3.6) that is
// not yet counted on this processor, clipped to the interval's current
// entry. Overlap is thus the time covered by overlap windows (their union),
// which never exceeds the processor's execution time in the interval
// (analyzer package doc).
func (rp *replayer) overlapCover(node *rnode, entry int64, terms []ovTerm) int64 {
	lo := entry
	for _, o := range terms {
		lo = min(lo, max(o.start, o.t))
	}
	lo = max(lo, node.Value.since, rp.ovFloor)
	if lo >= entry {
		return 0
	}
	o := &rp.ovSeg
	if o.n == 0 || lo > o.at(o.n-1).hi {
		// After everything counted so far: the common case.
		if o.n == maxOvSegs {
			rp.ovFloor = o.s[o.head].hi
			o.head = (o.head + 1) & ovMask
			o.n--
		}
		*o.at(o.n) = ovSeg{lo, entry}
		o.n++
		return entry - lo
	}
	return rp.cover(lo, entry)
}

// cover adds [lo, hi) to the counted segments, lo at or before the end of
// the last, and returns how much of it was new. When that time is not in
// one piece, so that it does not lie after the last fixed point as far as
// it can (backward amortization, clc.go, would stretch it by the wrong
// amount), rp.ovOdd is set and rp.ovPost says how much of it does.
func (rp *replayer) cover(lo, hi int64) int64 {
	o := &rp.ovSeg
	var seg [maxOvSegs + 1]ovSeg
	n := 0
	added := hi - lo
	plo := max(lo, min(rp.fixedAt, hi))
	post := hi - plo
	mlo, mhi := lo, hi
	placed := false
	for i := 0; i < o.n; i++ {
		g := *o.at(i)
		switch {
		case g.hi < lo:
			seg[n] = g
			n++
		case g.lo > hi:
			if !placed {
				seg[n] = ovSeg{mlo, mhi}
				n++
				placed = true
			}
			seg[n] = g
			n++
		default:
			added -= max(0, min(g.hi, hi)-max(g.lo, lo))
			post -= max(0, min(g.hi, hi)-max(g.lo, plo))
			mlo, mhi = min(mlo, g.lo), max(mhi, g.hi)
		}
	}
	if post != min(added, hi-plo) {
		rp.ovOdd, rp.ovPost = true, post
	}
	if !placed {
		seg[n] = ovSeg{mlo, mhi}
		n++
	}
	k := 0
	if n > maxOvSegs {
		rp.ovFloor = seg[0].hi
		k = 1
	}
	o.head, o.n = 0, n-k
	copy(o.s[:], seg[k:n])
	return added
}
