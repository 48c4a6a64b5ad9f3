package analyzer

import "testing"

// overlapCover counts each instant once, and past maxOvSegs segments
// treats the time before the oldest remembered one as counted.
func TestOverlapCoverSegments(t *testing.T) {
	rp := &replayer{}
	node := &rnode{Value: &acc{}}
	win := func(lo, hi int64) int64 { return rp.overlapCover(node, hi, []ovTerm{{start: lo, t: noT}}) }
	// Ten disjoint windows [10i, 10i+5): 5 each; the ring keeps the last 8,
	// the floor moves to the end of the second (15).
	for i := int64(0); i < 10; i++ {
		if got := win(10*i, 10*i+5); got != 5 {
			t.Fatalf("window %d: %d, want 5", i, got)
		}
	}
	if rp.ovFloor != 15 || rp.ovSeg.n != maxOvSegs {
		t.Fatalf("floor %d, %d segments; want 15, %d", rp.ovFloor, rp.ovSeg.n, maxOvSegs)
	}
	// [0, 100): below the floor nothing; above it, the gaps [15, 20),
	// [25, 30) … [85, 90) (8 × 5) and [95, 100): 45.
	if got := win(0, 100); got != 45 {
		t.Errorf("covering window: %d, want 45", got)
	}
	if rp.ovSeg.n != 1 || *rp.ovSeg.at(0) != (ovSeg{15, 100}) {
		t.Errorf("segments after merging: %d, first %+v", rp.ovSeg.n, *rp.ovSeg.at(0))
	}
	// A window inside what is counted adds nothing; one ending later adds
	// its new part; the interval's entry clips a window.
	if got := win(50, 100); got != 0 {
		t.Errorf("counted again: %d", got)
	}
	node.Value.since = 150
	if got := win(90, 200); got != 50 {
		t.Errorf("clipped window: %d, want 50 (150 … 200)", got)
	}
}
