package analyzer

import (
	"fmt"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// Imbalance inside an interval: rank 0 computes 300 ms, rank 1 100 ms;
// they synchronize only after leaving the interval.
func TestImbalanceInInterval(t *testing.T) {
	run := tracetest.NewRun(2)
	for i, work := range []int64{300 * ms, 100 * ms} {
		r := run.Rank(i)
		r.Init(1 * us)
		r.Pcontrol(100, 1)
		r.Compute(work)
		r.Pcontrol(101, 1)
		r.Barrier(300*ms + 1*us - r.Now() + 10*us) // everybody leaves at 300.011 ms
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	iv := find(t, rep, 1)
	if iv.Level != 1 || iv.Number != 1 || iv.ExeCount != 1 || iv.SourceFile != "app" {
		t.Errorf("interval header %+v", iv)
	}
	r0, r1 := rank(t, iv, 0), rank(t, iv, 1)
	expect(t, "rank 0 Execution", r0.ExecutionTime, 0.3)
	expect(t, "rank 1 Execution", r1.ExecutionTime, 0.1)
	expect(t, "rank 1 Idle", r1.IdleTime, 0.2)
	expect(t, "rank 1 Productive", r1.ProductiveTime, 0.1)
	expect(t, "rank 1 Load Imbalance", r1.LoadImbalance, 0.2)
	expect(t, "rank 0 Load Imbalance", r0.LoadImbalance, 0)
	expect(t, "Main Idle", iv.Main.IdleTime, 0.2)
	expect(t, "Main Efficiency", iv.Main.Efficiency, 0.4/0.6)
	// Level 0 holds the interval and the barrier.
	top := find(t, rep)
	expect(t, "level 0 rank 1 Potential Sync", rank(t, top, 1).PotentialSync, 0.2)
	expect(t, "level 0 rank 1 Productive", rank(t, top, 1).ProductiveTime, 0.1)
	expect(t, "level 0 Load Imbalance", top.Main.LoadImbalance, 0.2)
}

// Nested intervals entered many times.
func TestNestedExeCount(t *testing.T) {
	run, ranks := start(2)
	for i, r := range ranks {
		for it := 0; it < 3; it++ {
			r.Pcontrol(100, 1)
			r.Compute(1 * ms)
			for j := 0; j < 2+i; j++ { // rank 1 enters 1/2 once more per outer entry
				r.Pcontrol(100, 2)
				r.Compute(10 * ms)
				r.Barrier(0, tracetest.On(r.Self()))
				r.Pcontrol(101, 2)
			}
			r.Pcontrol(101, 1)
		}
		if i == 0 {
			r.Pcontrol(100, 7) // only rank 0 enters 7 … and never leaves it
		}
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	outer, inner := find(t, rep, 1), find(t, rep, 1, 2)
	if outer.ExeCount != 3 || inner.ExeCount != 9 || rank(t, inner, 0).ExeCount != 6 || rank(t, inner, 1).ExeCount != 9 {
		t.Errorf("ExeCount outer %d inner %d (ranks %d, %d)", outer.ExeCount, inner.ExeCount,
			rank(t, inner, 0).ExeCount, rank(t, inner, 1).ExeCount)
	}
	expect(t, "inner Execution rank 0", rank(t, inner, 0).ExecutionTime, 0.060)
	expect(t, "inner Execution rank 1", rank(t, inner, 1).ExecutionTime, 0.090)
	expect(t, "outer Execution rank 1", rank(t, outer, 1).ExecutionTime, 0.093)
	// Collective calls inside 1/2 count in 1 and in level 0 too.
	if rank(t, outer, 1).CollectiveNumber != 9 || rank(t, find(t, rep), 1).CollectiveNumber != 9 {
		t.Errorf("collective numbers do not include nested intervals")
	}
	seven := find(t, rep, 7)
	if len(seven.Ranks) != 1 || seven.Ranks[0].Rank != 0 || seven.Main.Processors != 1 {
		t.Errorf("interval 7 ranks %+v", seven.Ranks)
	}
	if !hasWarning(rep, "not left") {
		t.Errorf("no warning about the open interval: %q", rep.Warnings)
	}
	// Level option: 0 = whole program only; 1 = no 1/2.
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	if rep := analyzeDir(t, dir, 0); len(rep.Intervals) != 1 || len(rep.Intervals[0].Path) != 0 {
		t.Errorf("MaxLevel 0 gives %d intervals", len(rep.Intervals))
	}
	if rep := analyzeDir(t, dir, 1); len(rep.Intervals) != 3 {
		t.Errorf("MaxLevel 1 gives %d intervals, want 3 (0, 1, 7)", len(rep.Intervals))
	}
}

// Crossing and unbalanced Pcontrol pairs are reported, never fatal.
func TestUnbalancedPcontrol(t *testing.T) {
	run := tracetest.NewRun(1)
	r := run.Rank(0)
	r.Init(1 * us)
	r.Pcontrol(101, 4) // not open
	r.Pcontrol(100, 1)
	r.Pcontrol(100, 2)
	r.Compute(5 * ms)
	r.Pcontrol(101, 1) // crosses 2
	r.Compute(5 * ms)
	r.Finalize(1 * us)
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "not open") || !hasWarning(rep, "crosses") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	expect(t, "interval 1/2", rank(t, find(t, rep, 1, 2), 0).ExecutionTime, 0.005)
	expect(t, "interval 1", rank(t, find(t, rep, 1), 0).ExecutionTime, 0.005)
	expect(t, "level 0", rank(t, find(t, rep), 0).ExecutionTime, 0.010)
}

// Sequential sections: Insufficient Parallelism = Tseq·(K−1)/K per processor.
func TestInsufficientParallelism(t *testing.T) {
	checkInsufficientParallelism(t, false)
}

// Past limits.sectionRuns executions (here one) K is counted per section number, which
// gives the same figures when the same processors run every instance.
func TestInsufficientParallelismBounded(t *testing.T) {
	checkInsufficientParallelism(t, true)
}

func checkInsufficientParallelism(t *testing.T, overflow bool) {
	run := tracetest.NewRun(3)
	seq := []int64{100 * ms, 60 * ms, 0}
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
		if i < 2 { // section 1 executed by ranks 0 and 1: K = 2
			r.Pcontrol(102, 1)
			r.Compute(seq[i] - 10*ms)
			r.Send(int32(1-i), 0, 8, 0) // MPI time inside is not counted twice
			r.Recv(int32(1-i), 0, 8, 10*ms)
			r.Pcontrol(103, 1)
		}
		if i == 0 { // section 2 executed by rank 0 alone: K = 1, no loss
			r.Pcontrol(102, 2)
			r.Compute(20 * ms)
			r.Pcontrol(103, 2)
		}
		r.Barrier(200*ms - r.Now())
		r.Finalize(1 * us)
	}
	rep := analyzeRunLimits(t, run, func(l *limits) {
		if overflow {
			l.sectionRuns = 1
		}
	})
	iv := find(t, rep)
	// Tseq excludes the MPI time: rank 0: 100 - 10 ms (Recv), rank 1: 60 - 10 ms.
	expect(t, "rank 0 Insufficient Parallelism", rank(t, iv, 0).InsufficientParallelism, 0.090/2)
	expect(t, "rank 1 Insufficient Parallelism", rank(t, iv, 1).InsufficientParallelism, 0.050/2)
	expect(t, "rank 2 Insufficient Parallelism", rank(t, iv, 2).InsufficientParallelism, 0)
	expect(t, "Main Insufficient Parallelism", iv.Main.InsufficientParallelism, 0.070)
	if hasWarning(rep, "sequential sections were executed") != overflow {
		t.Errorf("warnings %q", rep.Warnings)
	}
}

// Sequential sections crossing interval boundaries: each interval, and
// each level, gets the part of a section inside it.
func TestSectionsAcrossIntervals(t *testing.T) {
	checkSectionsAcrossIntervals(t, false)
}

// The same figures when the replay stops remembering executions one by
// one (K per section number: the same processors run every instance).
func TestSectionsAcrossIntervalsBounded(t *testing.T) {
	checkSectionsAcrossIntervals(t, true)
}

func checkSectionsAcrossIntervals(t *testing.T, overflow bool) {
	run, ranks := start(4)
	for i, r := range ranks {
		// Interval 1: section 1 starts 0.5 s before it and ends 0.1 s
		// into it (the example), on every rank (K = 4).
		r.Pcontrol(102, 1).Compute(500 * ms)
		r.Pcontrol(100, 1).Compute(100 * ms)
		r.Pcontrol(103, 1).Compute(50 * ms)
		r.Pcontrol(101, 1)
		// Interval 5: section 4 starts 0.05 s into it and ends 0.5 s
		// after it (the reverse case), K = 4.
		r.Pcontrol(100, 5).Compute(50 * ms)
		r.Pcontrol(102, 4).Compute(100 * ms)
		r.Pcontrol(101, 5).Compute(500 * ms)
		r.Pcontrol(103, 4)
		// Interval 2 holding 2/3: section 2, executed by ranks 0–2 only
		// (K = 3), starts in 2 and ends in 2/3 after a 20 ms MPI call.
		r.Pcontrol(100, 2).Compute(50 * ms)
		if i < 3 {
			r.Pcontrol(102, 2)
		}
		r.Compute(40 * ms)
		r.Pcontrol(100, 3).Compute(60 * ms)
		r.Call("MPI_Comm_rank", 20*ms, traceformat.Event{})
		if i < 3 {
			r.Pcontrol(103, 2)
		}
		r.Compute(30 * ms)
		r.Pcontrol(101, 3).Pcontrol(101, 2)
		r.Finalize(1 * us)
	}
	rep := analyzeRunLimits(t, run, func(l *limits) {
		if overflow {
			l.sectionRuns = 1
		}
	})
	for _, path := range [][]int{{1}, {5}} {
		// Execution 0.15 s per rank; the section's 0.1 s inside the
		// interval gives 0.1·3/4 = 0.075 s per rank (0.3 s in all), and
		// Productive = 0.15 − 0.075 = 0.075 s per rank (0.3 s in all).
		iv := find(t, rep, path...)
		for r := 0; r < 4; r++ {
			expect(t, fmt.Sprintf("interval %v rank %d Insufficient Parallelism", path, r), rank(t, iv, r).InsufficientParallelism, 0.075)
			expect(t, fmt.Sprintf("interval %v rank %d Productive", path, r), rank(t, iv, r).ProductiveTime, 0.075)
		}
		expect(t, fmt.Sprintf("interval %v Insufficient Parallelism", path), iv.Main.InsufficientParallelism, 0.3)
		expect(t, fmt.Sprintf("interval %v Productive", path), iv.Main.ProductiveTime, 0.3)
		expect(t, fmt.Sprintf("interval %v efficiency", path), iv.Main.Efficiency, 0.5)
	}
	// 2/3: 0.08 s of section 2 inside, 0.02 s of it in MPI: Tseq 0.06 s,
	// 0.06·2/3 = 0.04 s on ranks 0–2, none on rank 3. Execution 0.11 s.
	// Productive: 0.11 − 0.02 − 0.04 = 0.05 (ranks 0–2), 0.09 (rank 3).
	in := find(t, rep, 2, 3)
	// 2: the whole section, 0.04 + 0.06 = 0.1 s: 0.1·2/3 per rank 0–2.
	out := find(t, rep, 2)
	for r := 0; r < 4; r++ {
		ip, prod, ipOut := 0.04, 0.05, 0.1*2/3
		if r == 3 {
			ip, prod, ipOut = 0, 0.09, 0
		}
		expect(t, fmt.Sprintf("interval 2/3 rank %d Insufficient Parallelism", r), rank(t, in, r).InsufficientParallelism, ip)
		expect(t, fmt.Sprintf("interval 2/3 rank %d Productive", r), rank(t, in, r).ProductiveTime, prod)
		expect(t, fmt.Sprintf("interval 2 rank %d Insufficient Parallelism", r), rank(t, out, r).InsufficientParallelism, ipOut)
	}
	// Whole program: sections 1 and 4 whole (0.6 s each, K = 4: 0.45 s
	// each per rank) and section 2 (0.1·2/3 on ranks 0–2).
	w := find(t, rep)
	expect(t, "whole program Insufficient Parallelism", w.Main.InsufficientParallelism, 4*0.9+3*0.1*2/3)
	expect(t, "whole program rank 3 Insufficient Parallelism", rank(t, w, 3).InsufficientParallelism, 0.9)
	if hasWarning(rep, "sequential sections were executed") != overflow {
		t.Errorf("warnings %q", rep.Warnings)
	}
}
