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
	m := Build(syncs, nil, []bool{true, true, true, true})
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
	m := Build([][]*tracepb.ClockSync{nil, nil, {{Reference: 1}}}, nil, []bool{true, true, true})
	if len(m.Warnings) != 2 || !m.Maps[1].Identity() || m.Maps[2].At(42) != 42 {
		t.Errorf("warnings %q", m.Warnings)
	}
}

// tscRank is one rank's view of a host's time-stamp counter: its
// calibration at true time t0 with a rate off by errPPM, as the header
// records it, and its local clock as the tracer converts the counter
// (dt_ns).
type tscRank struct {
	clk   *tracepb.Clock
	local func(t int64) int64
}

// newTSCRank calibrates a counter of 2.5 GHz (tsc(t) = (t+boot+ctr)·2.5)
// whose host's CLOCK_MONOTONIC_RAW reads t+boot.
func newTSCRank(boot, ctr, t0 int64, errPPM float64) tscRank {
	tsc := func(t int64) uint64 { return uint64(t+boot+ctr) * 5 / 2 }
	t1 := t0 + 5_000_000
	raw0, raw1 := tsc(t0), tsc(t1)
	ns0 := t0 + boot
	ns1 := ns0 + int64(float64(raw1-raw0)*0.4*(1+errPPM*1e-6))
	npt := float64(ns1-ns0) / float64(raw1-raw0)
	return tscRank{
		clk: &tracepb.Clock{Source: tracepb.Clock_TSC, TscHz: 1e9 / npt, Calibration: []*tracepb.CalibrationPoint{
			{Tsc: raw0, MonotonicRawNs: ns0}, {Tsc: raw1, MonotonicRawNs: ns1}}},
		local: func(t int64) int64 { return ns0 + int64(float64(int64(tsc(t)-raw0))*npt) },
	}
}

// Ranks that share their reference's clock read one counter but calibrated
// it each on its own: their times are mapped through the counter onto the
// reference's, so that an hour into the run they agree to the nanosecond
// where their own conversions ran milliseconds apart. Host A: ranks 0
// (reference of the run) and 1; host B: rank 2 (synchronized with rank 0
// by ping-pong) and rank 3, its follower; rank 4 shares rank 0's clock but
// with an injected skew, rank 5 under the same host name on another
// machine (its counter and CLOCK_MONOTONIC_RAW disagree with rank 0's): both keep their reference's map as it is.
func TestSameClockThroughCounter(t *testing.T) {
	hourNs := int64(3_600_000_000_000)
	r0 := newTSCRank(1_000_000_000, 0, 100_000_000, 0)
	r1 := newTSCRank(1_000_000_000, 0, 130_000_000, 3)
	r2 := newTSCRank(9_000_000_000, 0, 90_000_000, -2)
	r3 := newTSCRank(9_000_000_000, 0, 150_000_000, 1.5)
	r4 := newTSCRank(1_000_000_000, 0, 120_000_000, 2)
	r4.clk.InjectedOffsetNs = 1
	r5 := newTSCRank(1_000_000_000, 7_000_000_000, 120_000_000, 2)
	same := func(ref uint32) []*tracepb.ClockSync {
		return []*tracepb.ClockSync{{Phase: tracepb.ClockSync_INIT, Reference: ref, SameClock: true},
			{Phase: tracepb.ClockSync_FINALIZE, Reference: ref, SameClock: true}}
	}
	syncs := [][]*tracepb.ClockSync{
		nil,
		same(0),
		{sample(tracepb.ClockSync_INIT, 0, 200_000_000, r2.local, r0.local), sample(tracepb.ClockSync_FINALIZE, 0, hourNs, r2.local, r0.local)},
		same(2),
		same(0),
		same(0),
	}
	clks := []*tracepb.Clock{r0.clk, r1.clk, r2.clk, r3.clk, r4.clk, r5.clk}
	m := Build(syncs, clks, []bool{true, true, true, true, true, true})
	if len(m.Warnings) != 0 {
		t.Fatalf("warnings %q", m.Warnings)
	}
	for _, tt := range []int64{200_000_000, hourNs / 3, hourNs, hourNs + hourNs/4} {
		want := m.Maps[0].At(r0.local(tt))
		for r, x := range []tscRank{r1, r2, r3} {
			if d := m.Maps[r+1].At(x.local(tt)) - want; d > 3 || d < -3 {
				t.Errorf("rank %d at %d ns: %d ns from rank 0", r+1, tt, d)
			}
		}
		// Unchanged where the counter cannot be trusted: the reference's
		// map (identity) applied to the rank's own times.
		for r, x := range map[int]tscRank{4: r4, 5: r5} {
			if got := m.Maps[r].At(x.local(tt)); got != x.local(tt) {
				t.Errorf("rank %d at %d ns: mapped to %d, want its own %d", r, tt, got, x.local(tt))
			}
		}
	}
	// The rates really differ: without the counter the hour's end is
	// milliseconds apart.
	if d := r1.local(hourNs) - r0.local(hourNs); d < 5_000_000 {
		t.Errorf("test clocks too close: %d ns apart after an hour", d)
	}
}
