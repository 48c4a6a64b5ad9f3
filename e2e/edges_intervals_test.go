package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// edgeFigure is one figure of testdata/apps/edges_intervals.c expected by
// construction, with its tolerance.
type edgeFigure struct {
	path        []int
	rank        int // -1: Main
	name        string
	want, slack float64
}

// sectionFigures are the expected figures of the sections scenarios, by
// hand from the program. Identities (analyzer package doc): a processor
// loses Tseq_inside·(K−1)/K in each interval a section crosses, where
// Tseq_inside is the section's time inside the interval (no MPI call lies
// inside any section here); Productive = own Execution − Communications −
// Insufficient Parallelism (no MPI call inside the intervals either, so
// Communications = 0); Load Imbalance = max Productive − own.
func sectionFigures() []edgeFigure {
	var f []edgeFigure
	// Interval 1: section 1 covers its first 0.1 s of 0.15 (K = 4):
	// Insufficient Parallelism 0.1·3/4 = 0.075 per rank, 0.3 in all;
	// Productive 0.15 − 0.075 = 0.075 per rank, 0.3 in all; efficiency
	// 0.3 / (0.15·4) = 0.5. (Charging the whole 0.6 s section to the
	// interval gave 0.45 per rank, 1.8 in all, Productive −1.2.)
	// Interval 2: the reverse: section 2 covers its last 0.1 s of 0.15,
	// the same figures. (Charging the section to the interval where it
	// ends gave 0.)
	for _, n := range []int{1, 2} {
		for r := 0; r < 4; r++ {
			f = append(f,
				edgeFigure{[]int{n}, r, "execution_time", 0.15, tol},
				edgeFigure{[]int{n}, r, "insufficient_parallelism", 0.075, tol},
				edgeFigure{[]int{n}, r, "productive_time", 0.075, tol})
		}
		f = append(f,
			edgeFigure{[]int{n}, -1, "insufficient_parallelism", 0.3, 2 * tol},
			edgeFigure{[]int{n}, -1, "productive_time", 0.3, 2 * tol},
			edgeFigure{[]int{n}, -1, "efficiency", 0.5, 0.1})
	}
	// Interval 3 (0.3 s): section 3 on ranks 0 and 1 only (K = 2) covers
	// its first 0.2 s: 0.2·1/2 = 0.1 on ranks 0 and 1, 0 on 2 and 3
	// (K = 4 would give 0.15, K = 3 0.133). Productive 0.2, 0.2, 0.3,
	// 0.3; Load Imbalance 0.1, 0.1, 0, 0. Main: 0.2 and 1.0.
	for r, ip := range []float64{0.1, 0.1, 0, 0} {
		f = append(f,
			edgeFigure{[]int{3}, r, "execution_time", 0.3, tol},
			edgeFigure{[]int{3}, r, "insufficient_parallelism", ip, tol},
			edgeFigure{[]int{3}, r, "productive_time", 0.3 - ip, tol},
			edgeFigure{[]int{3}, r, "load_imbalance", ip, tol})
	}
	f = append(f,
		edgeFigure{[]int{3}, -1, "insufficient_parallelism", 0.2, 2 * tol},
		edgeFigure{[]int{3}, -1, "productive_time", 1.0, 2 * tol})
	// The whole program holds every section whole: sections 1 and 2
	// (0.6 s each, K = 4) give 0.45 each per rank, section 3 (0.4 s,
	// K = 2) 0.2 on ranks 0 and 1: 1.1, 1.1, 0.9, 0.9; 4.0 in all.
	for r, ip := range []float64{1.1, 1.1, 0.9, 0.9} {
		f = append(f, edgeFigure{nil, r, "insufficient_parallelism", ip, tolMany})
	}
	f = append(f, edgeFigure{nil, -1, "insufficient_parallelism", 4.0, 4 * tolMany})
	return f
}

// checkFigures compares r with figures and returns the mismatches, logging
// every comparison.
func checkFigures(t *testing.T, r *report.Report, figures []edgeFigure) []string {
	t.Helper()
	var bad []string
	for _, f := range figures {
		iv := findInterval(r, f.path)
		if iv == nil {
			bad = append(bad, fmt.Sprintf("no interval %v", f.path))
			continue
		}
		var got float64
		var found bool
		if f.rank < 0 {
			got, found = fields(iv.Main)[f.name]
		} else {
			for _, rk := range iv.Ranks {
				if rk.Rank == f.rank {
					got, found = fields(rk)[f.name]
				}
			}
		}
		what := fmt.Sprintf("interval %s rank %d %s", report.PathString(f.path), f.rank, f.name)
		if f.rank < 0 {
			what = fmt.Sprintf("interval %s main %s", report.PathString(f.path), f.name)
		}
		t.Logf("%s: %.4f (expected %.4f ± %.3f)", what, got, f.want, f.slack)
		if !found || math.Abs(got-f.want) > f.slack {
			bad = append(bad, fmt.Sprintf("%s = %.4f, want %.4f ± %.3f", what, got, f.want, f.slack))
		}
	}
	return bad
}

func findInterval(r *report.Report, path []int) *report.Interval {
	for i := range r.Intervals {
		if report.PathString(r.Intervals[i].Path) == report.PathString(path) {
			return &r.Intervals[i]
		}
	}
	return nil
}

// edgeAttempts is how many times a scenario is traced when the machine's
// load pushes a figure outside its tolerance (a wake-up late by tens of
// milliseconds); broken identities and wrong marks fail at once.
const edgeAttempts = 3

// TestEdgesSections traces the sequential sections crossing interval
// boundaries under both MPIs, with and without injected clock skew, and
// checks each figure against its construction.
func TestEdgesSections(t *testing.T) {
	eachEdgeRun(t, "sections", nil, nil, func(t *testing.T, r *report.Report, stderr string, skewed bool) []string {
		checkWarnings(t, r, stderr, skewed)
		checkInvariants(t, r, 4)
		return checkFigures(t, r, sectionFigures())
	})
}

// TestEdgesCutTrace traces a run in which rank 3's tracing stops at
// MaxTraceSize inside interval 4 (SIZE_LIMIT): interval 4 and the whole
// program are marked incomplete with rank 3 named, ranks 0–2 are not, and
// every figure still passes the invariant check (checkReport, run by
// analyse), Productive ≥ 0 included.
func TestEdgesCutTrace(t *testing.T) {
	// 1 MB for 4 processes: 256 KB each. Rank 3's 3 million calls need
	// far more; the other ranks make a dozen.
	env := []string{"MaxTraceSize=1"}
	eachEdgeRun(t, "cut", env, []string{"cut", "3000000"}, func(t *testing.T, r *report.Report, stderr string, skewed bool) []string {
		if !hasWarningE2E(r, "Rank 3: tracing stopped early (SIZE_LIMIT") {
			t.Errorf("warnings %q", r.Warnings)
		}
		for _, w := range r.Warnings {
			if strings.Contains(w, "Rank 0") || strings.Contains(w, "Rank 1") || strings.Contains(w, "Rank 2") {
				t.Errorf("warning about a complete rank: %s", w)
			}
		}
		for _, path := range [][]int{nil, {4}} {
			iv := findInterval(r, path)
			if iv == nil {
				t.Fatalf("no interval %v", path)
			}
			if !iv.Incomplete || !strings.Contains(iv.IncompleteReason, "rank(s) 3: its trace ends inside this interval (SIZE_LIMIT") {
				t.Errorf("interval %v: incomplete %v %q", path, iv.Incomplete, iv.IncompleteReason)
			}
			for _, rk := range iv.Ranks {
				if rk.Incomplete != (rk.Rank == 3) {
					t.Errorf("interval %v rank %d: incomplete %v %q", path, rk.Rank, rk.Incomplete, rk.IncompleteReason)
				}
			}
			if len(iv.Ranks) != 4 {
				t.Errorf("interval %v: %d ranks", path, len(iv.Ranks))
			}
		}
		// Ranks 0–2 sleep 0.1 s in interval 4, outside MPI: their
		// Execution and Productive time are 0.1 s each.
		var figs []edgeFigure
		for rk := 0; rk < 3; rk++ {
			figs = append(figs, edgeFigure{[]int{4}, rk, "execution_time", 0.1, tol})
		}
		return checkFigures(t, r, figs)
	})
}

func hasWarningE2E(r *report.Report, sub string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// eachEdgeRun traces edges_intervals with args under both MPIs, aligned
// and with injected clock skew, analyses it and runs check, which returns
// the figures outside their tolerance: those are retried up to
// edgeAttempts times (the machine's load), anything check reports through
// t fails at once.
func eachEdgeRun(t *testing.T, name string, env, args []string,
	check func(t *testing.T, r *report.Report, stderr string, skewed bool) []string) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			exe := compile(t, m, t.TempDir(), "edges_intervals")
			for _, skew := range []bool{false, true} {
				sub := "aligned"
				runEnv := append([]string{}, env...)
				if skew {
					sub = "skewed"
					runEnv = append(runEnv, "DT_CLOCK_SKEW="+clockSkew)
				}
				t.Run(sub, func(t *testing.T) {
					var bad []string
					for i := 1; i <= edgeAttempts; i++ {
						dir := t.TempDir()
						if err := os.Link(exe, filepath.Join(dir, "edges_intervals")); err != nil {
							t.Fatal(err)
						}
						out := trace(t, m, dir, runEnv, 4, "edges_intervals", args...)
						if !strings.Contains(out, "edges_intervals done") {
							t.Fatalf("%s: the program did not finish:\n%s", name, out)
						}
						if skew {
							checkSkew(t, dir, "edges_intervals", 4, injected)
						}
						r, stderr := analyse(t, dir, "edges_intervals")
						if bad = check(t, r, stderr, skew); len(bad) == 0 || t.Failed() {
							break
						}
						t.Logf("attempt %d: %d figure(s) outside their tolerance, tracing again", i, len(bad))
					}
					for _, b := range bad {
						t.Error(b)
					}
				})
			}
		})
	}
}
