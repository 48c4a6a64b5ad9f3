package clocks

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// sample makes one phase of samples of a clock local(t) = off + t·(1+d)
// against a reference clock ref(t), around true time t.
func sample(phase tracepb.ClockSync_Phase, refRank uint32, t int64, local, ref func(int64) int64) *tracepb.ClockSync {
	c := &tracepb.ClockSync{Phase: phase, Reference: refRank}
	for j, rtt := range []int64{5000, 2000, 9000} { // the second has the smallest round trip
		s := t + int64(j)*100000
		c.LocalSendNs = append(c.LocalSendNs, local(s))
		c.RemoteNs = append(c.RemoteNs, ref(s+rtt/2))
		c.LocalRecvNs = append(c.LocalRecvNs, local(s+rtt))
	}
	return c
}

// Offsets compose along the reference tree (2 → 1 → 0), drift is
// interpolated between INIT and FINALIZE and extrapolated beyond, and a
// same-clock rank takes its reference's map.
func TestTreeAndDrift(t *testing.T) {
	id := func(t int64) int64 { return t }
	c1 := func(t int64) int64 { return 5_000_000_000 + t + t/10000 }  // +5 s, +100 ppm
	c2 := func(t int64) int64 { return -2_000_000_000 + t - t/20000 } // -2 s, -50 ppm
	end := int64(600_000_000_000)                                     // 10 minutes
	syncs := [][]*tracepb.ClockSync{
		nil,
		{sample(tracepb.ClockSync_INIT, 0, 0, c1, id), sample(tracepb.ClockSync_FINALIZE, 0, end, c1, id)},
		{sample(tracepb.ClockSync_INIT, 1, 0, c2, c1), sample(tracepb.ClockSync_FINALIZE, 1, end, c2, c1)},
		{{Phase: tracepb.ClockSync_INIT, Reference: 2, SameClock: true}},
	}
	m := Build(syncs, []bool{true, true, true, true})
	if len(m.Warnings) != 0 {
		t.Fatalf("warnings %q", m.Warnings)
	}
	for _, tt := range []int64{0, 1_000_000, end / 3, end, end + end/2} {
		for r, clk := range []func(int64) int64{id, c1, c2, c2} {
			got := m.Maps[r].At(clk(tt))
			if d := got - tt; d > 5 || d < -5 {
				t.Errorf("rank %d at true %d: global %d (error %d ns)", r, tt, got, d)
			}
		}
	}
	if m.MaxErrorNs != 1000 {
		t.Errorf("MaxErrorNs %d, want 1000 (half the smallest round trip)", m.MaxErrorNs)
	}
}

func TestMissingSamples(t *testing.T) {
	m := Build([][]*tracepb.ClockSync{nil, nil, {{Reference: 1}}}, []bool{true, true, true})
	if len(m.Warnings) != 2 || !m.Maps[1].Identity() || m.Maps[2].At(42) != 42 {
		t.Errorf("warnings %q", m.Warnings)
	}
}
