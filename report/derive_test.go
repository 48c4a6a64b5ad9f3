package report

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

// measured is a 3-processor interval as the analyzer measures it.
//
//	rank  exec  sendrecv  coll  sys   insuf
//	0     1.0   0.2       0.1   0     0.1
//	1     0.8   0         0.3   0.05  0
//	2     0.9   0.1       0     0     0.2
//
// max Execution 1.0, so Idle 0, 0.2, 0.1; Communications 0.3, 0.35, 0.1;
// Lost 0.4, 0.55, 0.4; Productive = 1.0 − Lost = 0.6, 0.45, 0.6 (equal to
// Execution − Communications − Insufficient Parallelism: 1.0−0.3−0.1,
// 0.8−0.35−0, 0.9−0.1−0.2); Load Imbalance 0, 0.15, 0. Main: Total 3.0,
// Productive 1.65, Lost 1.35 (sum 3.0), efficiency 0.55.
func measured() Interval {
	return Interval{Path: []int{1}, Level: 1, Number: 1, Main: Main{CollectiveNumber: 2}, Ranks: []Rank{
		{Rank: 2, ExeCount: 1, ExecutionTime: 0.9, SendRecvTime: 0.1, InsufficientParallelism: 0.2, SendNumber: 1},
		{Rank: 0, ExeCount: 2, ExecutionTime: 1.0, SendRecvTime: 0.2, CollectiveTime: 0.1, InsufficientParallelism: 0.1, CollectiveNumber: 2, ReceiveNumber: 1},
		{Rank: 1, ExeCount: 1, ExecutionTime: 0.8, CollectiveTime: 0.3, SystemTime: 0.05, CollectiveNumber: 2, SystemNumber: 3},
	}}
}

func TestDerive(t *testing.T) {
	iv := measured()
	if w := Derive(&iv); len(w) > 0 {
		t.Fatalf("warnings %q", w)
	}
	want := []struct{ comm, idle, lost, prod, li float64 }{
		{0.3, 0, 0.4, 0.6, 0}, {0.35, 0.2, 0.55, 0.45, 0.15}, {0.1, 0.1, 0.4, 0.6, 0},
	}
	for i, w := range want {
		r := iv.Ranks[i]
		if r.Rank != i || !near(r.Communications, w.comm) || !near(r.IdleTime, w.idle) || !near(r.LostTime, w.lost) ||
			!near(r.ProductiveTime, w.prod) || !near(r.LoadImbalance, w.li) {
			t.Errorf("rank %d: %+v, want %+v", i, r, w)
		}
	}
	m := iv.Main
	if !near(m.ExecutionTime, 1) || m.Processors != 3 || !near(m.TotalTime, 3) || !near(m.ProductiveTime, 1.65) ||
		!near(m.LostTime, 1.35) || !near(m.Efficiency, 0.55) || m.CollectiveNumber != 2 || iv.ExeCount != 2 ||
		m.SystemNumber != 3 || m.SendNumber != 1 || m.ReceiveNumber != 1 || !near(m.IdleTime, 0.3) || !near(m.LoadImbalance, 0.15) {
		t.Errorf("main %+v", m)
	}
	if s := iv.Comparative.LoadImbalance; !near(s.Max, 0.15) || s.MaxProc != 1 || s.MinProc != 0 || !near(s.Mean, 0.05) {
		t.Errorf("comparative load imbalance %+v", s)
	}
	withSite(&iv)
	if errs := Check(&Report{Schema: Schema, Processors: 3, Intervals: []Interval{{Main: iv.Main, Ranks: iv.Ranks, Comparative: iv.Comparative, ExeCount: 2, SRC: iv.SRC}}}); errs != nil {
		t.Errorf("Check: %v", errs)
	}
}

// TestDeriveNegativeProductive: figures that would give a negative
// Productive Time (an inconsistency, never a result) are shown as 0 with a
// warning, and the report still passes Check.
func TestDeriveNegativeProductive(t *testing.T) {
	iv := Interval{Ranks: []Rank{
		{Rank: 0, ExeCount: 1, ExecutionTime: 1.0, CollectiveTime: 0.5, InsufficientParallelism: 0.7},
		{Rank: 1, ExeCount: 1, ExecutionTime: 1.0, CollectiveTime: 0.5},
	}}
	w := Derive(&iv)
	if len(w) != 1 || !strings.Contains(w[0], "Internal inconsistency") || !strings.Contains(w[0], "rank 0") {
		t.Errorf("warnings %q", w)
	}
	if iv.Ranks[0].ProductiveTime != 0 || !near(iv.Ranks[1].ProductiveTime, 0.5) || !near(iv.Ranks[0].LoadImbalance, 0.5) {
		t.Errorf("ranks %+v", iv.Ranks)
	}
	withSite(&iv)
	if errs := Check(&Report{Schema: Schema, Processors: 2, Intervals: []Interval{iv}}); errs != nil {
		t.Errorf("Check: %v", errs)
	}
}

// TestDeriveTiesExactly: two processors whose Productive Time is the same
// number of ns by different sums (198 − 38 µs; 198 − (28 + 10) µs) tie
// exactly: the first holds the maximum (§4), and neither has a Load
// Imbalance (float rounding made them 2.7e-20 s apart).
func TestDeriveTiesExactly(t *testing.T) {
	iv := Interval{Ranks: []Rank{
		{Rank: 0, ExeCount: 1, ExecutionTime: 198e-6, SendRecvTime: 38e-6},
		{Rank: 1, ExeCount: 1, ExecutionTime: 170e-6, SendRecvTime: 10e-6},
		{Rank: 2, ExeCount: 1, ExecutionTime: 198e-6, SendRecvTime: 100e-6},
	}}
	if w := Derive(&iv); w != nil {
		t.Errorf("warnings %q", w)
	}
	p := iv.Comparative.ProductiveTime
	if p.MaxProc != 0 || iv.Ranks[0].ProductiveTime != iv.Ranks[1].ProductiveTime {
		t.Errorf("Productive Time %.20f and %.20f, maximum on processor %d; want a tie held by 0",
			iv.Ranks[0].ProductiveTime, iv.Ranks[1].ProductiveTime, p.MaxProc)
	}
	if iv.Ranks[0].LoadImbalance != 0 || iv.Ranks[1].LoadImbalance != 0 || iv.Comparative.LoadImbalance.MinProc != 0 {
		t.Errorf("Load Imbalance %g and %g, minimum on processor %d; want 0, 0 and 0",
			iv.Ranks[0].LoadImbalance, iv.Ranks[1].LoadImbalance, iv.Comparative.LoadImbalance.MinProc)
	}
}

// TestCheckFinds: each kind of broken identity is reported.
func TestCheckFinds(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(r *Report)
		want   string
	}{
		{"productive", func(r *Report) { r.Intervals[1].Ranks[0].ProductiveTime += 0.01 }, "productive"},
		{"sum", func(r *Report) { r.Intervals[1].Main.LostTime = 0 }, "main lost time"},
		{"idle", func(r *Report) { r.Intervals[1].Ranks[1].IdleTime = 0 }, "idle"},
		{"negative", func(r *Report) { r.Intervals[1].Ranks[2].Overlap = -1 }, "overlap -1 s < 0"},
		{"comparative", func(r *Report) { r.Intervals[1].Comparative.RealSync.Max = 9 }, "comparative real sync"},
		{"efficiency", func(r *Report) { r.Intervals[1].Main.Efficiency = 0.9 }, "efficiency"},
		{"src", func(r *Report) { r.Intervals[1].SRC[0].Comm = 5 }, "SRC 1"},
		{"nesting", func(r *Report) { r.Intervals[0].Ranks = r.Intervals[0].Ranks[:1] }, "executes it but not its parent"},
		{"cause", func(r *Report) {
			r.Intervals[1].Causes = []Cause{{LateRank: 1, FromSRC: 1, ToSRC: 1, Count: 1, Waits: 0.1, Delay: 0.2}}
		}, "cause of rank 1"},
		{"incomplete", func(r *Report) {
			r.Intervals[1].Ranks[1].Incomplete, r.Intervals[1].Ranks[1].IncompleteReason = true, "cut"
		}, "interval is not"},
	} {
		r := twoLevels()
		if errs := Check(r); errs != nil {
			t.Fatalf("unbroken: %v", errs)
		}
		c.break_(r)
		errs := Check(r)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), c.want)
		}
		if !found {
			t.Errorf("%s: errors %v, want one with %q", c.name, errs, c.want)
		}
	}
}

// twoLevels is a whole program holding measured() as interval 1, with one
// call site per processor carrying its time in MPI.
func twoLevels() *Report {
	in := measured()
	Derive(&in)
	whole := measured()
	whole.Path, whole.Level, whole.Number = []int{}, 0, 0
	for i := range whole.Ranks {
		whole.Ranks[i].ExecutionTime += 1
	}
	Derive(&whole)
	withSite(&whole)
	withSite(&in)
	return &Report{Schema: Schema, Processors: 3, Intervals: []Interval{whole, in}}
}

// withSite gives iv one call site holding each processor's time in MPI.
func withSite(iv *Interval) {
	s := SRC{ID: 1, Function: "MPI_Allreduce"}
	for _, r := range iv.Ranks {
		s.Ranks = append(s.Ranks, SRCRank{Rank: r.Rank, ExeCount: 1, ExeTime: r.Communications})
	}
	DeriveSRC(&s)
	iv.SRC = []SRC{s}
}
