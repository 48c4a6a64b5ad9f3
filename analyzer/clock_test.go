package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// mixed is a fixture with every kind of wait, for comparing analyses with
// and without injected clock skew.
func mixed() *tracetest.Run {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(1 * us)
	}
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	r0.Compute(200*ms).Send(1, 7, 8, 10*us)
	r1.Recv(0, 7, 8, 200*ms+20*us)
	q := r2.Irecv(1, 3, 8, 1*us)
	r1.Compute(5*ms).Send(2, 3, 8, 5*us)
	r2.Compute(300*ms).Wait(q, 5*us)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Pcontrol(100, 1)
		r.Compute(int64(i+1) * 30 * ms)
		r.Allreduce(8, 400*ms-r.Now()+int64(i)*10*us)
		r.Pcontrol(101, 1)
		r.Finalize(1 * us)
	}
	return run
}

// Injected offsets and drifts are undone by the alignment: the same
// figures as without skew.
func TestSkewIsUndone(t *testing.T) {
	want := analyzeRun(t, mixed())
	skewed := mixed()
	skewed.Rank(1).Skew(3*s, 80)
	skewed.Rank(2).Skew(-7*s, -50)
	got := analyzeRun(t, skewed)
	if len(got.Warnings) != 0 {
		t.Errorf("warnings: %q", got.Warnings)
	}
	compareReports(t, got, want)
}

func compareReports(t *testing.T, got, want *report.Report) {
	t.Helper()
	if len(got.Intervals) != len(want.Intervals) {
		t.Fatalf("%d intervals, want %d", len(got.Intervals), len(want.Intervals))
	}
	for i := range want.Intervals {
		g, w := got.Intervals[i], want.Intervals[i]
		for j := range w.Ranks {
			gr, wr := g.Ranks[j], w.Ranks[j]
			for _, f := range []struct {
				name string
				g, w float64
			}{
				{"Execution", gr.ExecutionTime, wr.ExecutionTime},
				{"Real Sync", gr.RealSync, wr.RealSync},
				{"Potential Sync", gr.PotentialSync, wr.PotentialSync},
				{"Time Variation", gr.TimeVariation, wr.TimeVariation},
				{"Overlap", gr.Overlap, wr.Overlap},
				{"Communications", gr.Communications, wr.Communications},
				{"Idle", gr.IdleTime, wr.IdleTime},
			} {
				// Drift rounding: a few ns.
				if d := f.g - f.w; d > 20e-9 || d < -20e-9 {
					t.Errorf("interval %v rank %d %s = %.9f, want %.9f", w.Path, wr.Rank, f.name, f.g, f.w)
				}
			}
		}
	}
}

// A receive that ends before its send started (after alignment) is
// detected, repaired before the waits are computed, and reported.
func TestClockConditionViolation(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	r0.Compute(100*ms).Send(1, 1, 8, 10*us) // entered at 100.001 ms
	r1.Recv(0, 1, 8, 50*ms)                 // 0.001 … 50.001 ms: ends 50 ms before the send started
	r1.Compute(10 * ms)
	r1.Barrier(1 * us)  // recorded 60.001 … 60.002; shifted by 50 ms
	r0.Barrier(20 * ms) // 100.011 … 120.011
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "1 clock-condition violation") || !hasWarning(rep, "0.050000000 s") {
		t.Fatalf("violation not reported: %q", rep.Warnings)
	}
	iv := find(t, rep)
	r1r := rank(t, iv, 1)
	// After repair the receive ends at the send's entry (100.001 ms): Real
	// Sync 100 ms, the receive lasts 100 ms.
	expect(t, "Real Sync after repair", r1r.RealSync, 0.1)
	expect(t, "SendRecv after repair", r1r.SendRecvTime, 0.1)
	// Local intervals after the receive are kept: barrier entered at
	// 110.001 ms, so rank 0 waits there.
	expect(t, "rank 0 Potential Sync", rank(t, iv, 0).PotentialSync, 0.110001-0.100011)
}

// Collective clock conditions: a non-root leaving MPI_Bcast before the root
// entered it, and the root of MPI_Reduce leaving before the last entered.
func TestCollectiveClockCondition(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	r0.Compute(10*ms).Bcast(0, 8, 1*us)  // root enters at 10.001 ms
	r1.Bcast(0, 8, 1*us)                 // non-root leaves at 0.002 ms: violation of 9.999 ms
	r1.Compute(20*ms).Reduce(1, 8, 1*us) // root 1: recorded 20.002 … 20.003, shifted by 9.999 ms
	r0.Compute(40*ms).Reduce(1, 8, 1*us) // enters at 10.002 + 40 = 50.002 ms: the root left too early
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "2 clock-condition violation") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	iv := find(t, rep)
	// Bcast: rank 1 entered at 0.001 ms, the root at 10.001 ms. After the
	// repair rank 1 enters the Reduce at 20.002 + 9.999 = 30.001 ms; rank 0
	// at 50.002 ms.
	expect(t, "rank 1 Potential Sync", rank(t, iv, 1).PotentialSync, 0.010000+0.020001)
}
