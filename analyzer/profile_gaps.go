package analyzer

import "math/bits"

// gapHist holds the gaps between a processor's MPI calls (ns) in bounded
// memory: their number and exact sum (for the mean) and a histogram with
// bins of known relative width (for the median). Gaps below 32 ns have a
// bin each; above, each power of two [2^e, 2^(e+1)) is split into 16
// bins of width 2^(e−4). A bin's values lie within (w−1)/2 of its middle
// and are at least 16·w, so the middle is within 1/32 of any value in it:
// the median's estimate is within gapMedianRelErr of the true median. At
// most gapBins bins (7.7 KB) per processor and interval, whatever the
// trace's length; a run whose gaps are alike uses a few dozen.
type gapHist struct {
	sum int64
	lo  int     // bin of c[0]
	c   []int64 // counts by bin lo+i
}

// gapMedianRelErr bounds the relative error of gapHist.median.
const gapMedianRelErr = 1.0 / 32

// gapBins is the number of bins: 32 exact ones, then 16 per power of two
// from 2^5 to 2^62 (gaps are int64 ns).
const gapBins = 32 + 58*16

// gapBin is the bin of a gap of g ≥ 0 ns: with s = max(0, ⌊log2 g⌋ − 4),
// 16·s + ⌊g / 2^s⌋ (for g < 32, g itself; above, 16 bins per power of
// two).
func gapBin(g int64) int {
	// (len(g|16) is max(len(g), 5); s&63 tells the compiler that the
	// shift is below 64.)
	s := bits.Len64(uint64(g)|16) - 5
	return s<<4 + int(uint64(g)>>(s&63))
}

// gapBinRange is the smallest value of bin b and its width.
func gapBinRange(b int) (lo, w int64) {
	if b < 32 {
		return int64(b), 1
	}
	e := 5 + (b-32)/16
	sub := int64((b - 32) % 16)
	return (16 + sub) << (e - 4), 1 << (e - 4)
}

// tryAdd counts a gap of g ns if its bin is in range already (the common
// case, inlined; replayer.charge writes it out); else it returns false and
// add must count it.
func (h *gapHist) tryAdd(g int64) bool {
	if i := gapBin(g) - h.lo; uint(i) < uint(len(h.c)) {
		h.sum += g
		h.c[i]++
		return true
	}
	return false
}

// count is the number of gaps.
func (h *gapHist) count() int64 {
	var n int64
	for _, c := range h.c {
		n += c
	}
	return n
}

// add counts n gaps of g ns.
func (h *gapHist) add(g, n int64) {
	h.sum += g * n
	b := gapBin(g)
	switch {
	case len(h.c) == 0:
		h.lo = b
		h.c = append(h.c, 0)
	case b < h.lo:
		h.c = append(make([]int64, h.lo-b), h.c...)
		h.lo = b
	case b >= h.lo+len(h.c):
		h.c = append(h.c, make([]int64, b-h.lo-len(h.c)+1)...)
	}
	h.c[b-h.lo] += n
}

// addRun counts n > 0 gaps of total ns whose sizes are unknown (the inner
// gaps of a folded run: gapTo): the sum, hence the mean, stays exact,
// and the histogram has them all at their mean, so the median takes them
// for n gaps of that size.
func (h *gapHist) addRun(total, n int64) {
	m := total / n
	h.add(m, n)
	h.sum += total - m*n
}

// merge adds o's gaps.
func (h *gapHist) merge(o *gapHist) {
	for i, c := range o.c {
		if c == 0 {
			continue
		}
		lo, _ := gapBinRange(o.lo + i)
		// add with the bin's smallest value puts it in the same bin;
		// the exact sum is added separately.
		h.add(lo, c)
		h.sum -= lo * c
	}
	h.sum += o.sum
}

// mean is the mean gap in ns (0 without gaps).
func (h *gapHist) mean() float64 {
	n := h.count()
	if n == 0 {
		return 0
	}
	return float64(h.sum) / float64(n)
}

// median estimates the median gap in ns: the middle of the bin of the
// middle gap (of the two middle ones, averaged, for an even number).
func (h *gapHist) median() float64 {
	n := h.count()
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return h.kth(n / 2)
	}
	return (h.kth(n/2-1) + h.kth(n/2)) / 2
}

// kth is the middle of the bin of the k-th smallest gap (from 0).
func (h *gapHist) kth(k int64) float64 {
	for i, c := range h.c {
		if k < c {
			lo, w := gapBinRange(h.lo + i)
			return float64(lo) + float64(w-1)/2
		}
		k -= c
	}
	return 0
}
