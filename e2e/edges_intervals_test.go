package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// edgeFigure is one figure of testdata/apps/edges_intervals.c expected by
// construction, with its tolerance in a quiet run (slack) and how much a
// noisy run may move it: wide times the allowance widen gives for the noise
// of its interval (path nil: the whole program, whose noise is the run's).
// A figure of one rank made of an interval's sleeps has wide 1, a sum over
// ranks of such figures 4.
type edgeFigure struct {
	path        []int
	rank        int // -1: Main
	name        string
	want, slack float64
	wide        float64
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
				edgeFigure{[]int{n}, r, "execution_time", 0.15, tol, 1},
				edgeFigure{[]int{n}, r, "insufficient_parallelism", 0.075, tol, 1},
				edgeFigure{[]int{n}, r, "productive_time", 0.075, tol, 1})
		}
		f = append(f,
			edgeFigure{[]int{n}, -1, "insufficient_parallelism", 0.3, 2 * tol, 4},
			edgeFigure{[]int{n}, -1, "productive_time", 0.3, 2 * tol, 4},
			// Productive / (max Execution · 4): a late wake-up of x
			// moves it by about x / 0.15 (as in checkInterval).
			edgeFigure{[]int{n}, -1, "efficiency", 0.5, 0.1, 1 / 0.15})
	}
	// Interval 3 (0.3 s): section 3 on ranks 0 and 1 only (K = 2) covers
	// its first 0.2 s: 0.2·1/2 = 0.1 on ranks 0 and 1, 0 on 2 and 3
	// (K = 4 would give 0.15, K = 3 0.133). Productive 0.2, 0.2, 0.3,
	// 0.3; Load Imbalance 0.1, 0.1, 0, 0. Main: 0.2 and 1.0.
	for r, ip := range []float64{0.1, 0.1, 0, 0} {
		f = append(f,
			edgeFigure{[]int{3}, r, "execution_time", 0.3, tol, 1},
			edgeFigure{[]int{3}, r, "insufficient_parallelism", ip, tol, 1},
			edgeFigure{[]int{3}, r, "productive_time", 0.3 - ip, tol, 1},
			edgeFigure{[]int{3}, r, "load_imbalance", ip, tol, 1})
	}
	f = append(f,
		edgeFigure{[]int{3}, -1, "insufficient_parallelism", 0.2, 2 * tol, 4},
		edgeFigure{[]int{3}, -1, "productive_time", 1.0, 2 * tol, 4})
	// The whole program holds every section whole: sections 1 and 2
	// (0.6 s each, K = 4) give 0.45 each per rank, section 3 (0.4 s,
	// K = 2) 0.2 on ranks 0 and 1: 1.1, 1.1, 0.9, 0.9; 4.0 in all. Each
	// section is two sleeps: oversleeping each by the noise adds up to
	// 2·0.75 + 2·0.75 + 2·0.5 = 4 times the noise per rank, twice widen's
	// allowance.
	for r, ip := range []float64{1.1, 1.1, 0.9, 0.9} {
		f = append(f, edgeFigure{nil, r, "insufficient_parallelism", ip, tolMany, 2})
	}
	f = append(f, edgeFigure{nil, -1, "insufficient_parallelism", 4.0, 4 * tolMany, 8})
	return f
}

// edgeScenarios are the scenarios figs cover, for selfTiming.noise: an
// interval's ranks are those with an expected execution_time.
func edgeScenarios(figs []edgeFigure) []expect {
	var es []expect
	at := map[string]int{}
	for _, f := range figs {
		if f.name != "execution_time" || f.rank < 0 || f.path == nil {
			continue
		}
		k := pathKey(f.path)
		i, ok := at[k]
		if !ok {
			i = len(es)
			at[k] = i
			es = append(es, expect{path: f.path, times: map[string][]float64{}})
		}
		es[i].ranks = append(es[i].ranks, f.rank)
		es[i].times["execution_time"] = append(es[i].times["execution_time"], f.want)
	}
	return es
}

// checkFigures compares r with figures, within tolerances widened by the
// noise of each figure's interval in st (the whole program: the run's). A
// figure whose interval strayed beyond maxNoise is not compared (logged);
// a figure missing from the report always fails. Every comparison is
// logged. It skips t when no figure could be compared.
func checkFigures(t *testing.T, r *report.Report, figures []edgeFigure, st selfTiming) {
	t.Helper()
	scen := edgeScenarios(figures)
	noiseOf := map[string]float64{"": st.runNoise(scen)}
	for _, e := range scen {
		noiseOf[pathKey(e.path)] = st.noise(e)
	}
	logged := map[string]bool{}
	checked := 0
	for _, f := range figures {
		what := fmt.Sprintf("interval %s rank %d %s", report.PathString(f.path), f.rank, f.name)
		if f.rank < 0 {
			what = fmt.Sprintf("interval %s main %s", report.PathString(f.path), f.name)
		}
		iv := findInterval(r, f.path)
		if iv == nil {
			t.Errorf("no interval %v", f.path)
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
		if !found {
			t.Errorf("%s: missing", what)
			continue
		}
		k := pathKey(f.path)
		noise, ok := noiseOf[k]
		if !ok {
			t.Fatalf("interval %v: no scenario times it", f.path)
		}
		extra, ok := widen(noise)
		if !logged[k] {
			logged[k] = true
			if !ok {
				t.Logf("interval %s: times not checked, the run strayed %.3f s from the construction there", report.PathString(f.path), noise)
			} else if extra > 0 {
				t.Logf("interval %s: noise %.4f s, tolerances widened by %.4f s per rank", report.PathString(f.path), noise, extra)
			}
		}
		if !ok {
			continue
		}
		checked++
		tl := f.slack + f.wide*extra
		t.Logf("%s: %.4f (expected %.4f ± %.3f)", what, got, f.want, tl)
		if math.Abs(got-f.want) > tl {
			t.Errorf("%s = %.4f, want %.4f ± %.3f", what, got, f.want, tl)
		}
	}
	if checked == 0 {
		t.Skipf("machine too busy: every interval strayed more than %.3f s from the construction; hand-derived figures not checked", maxNoise)
	}
}

func findInterval(r *report.Report, path []int) *report.Interval {
	for i := range r.Intervals {
		if report.PathString(r.Intervals[i].Path) == report.PathString(path) {
			return &r.Intervals[i]
		}
	}
	return nil
}

// TestEdgesSections traces the sequential sections crossing interval
// boundaries under both MPIs, with and without injected clock skew, and
// checks each figure against its construction.
func TestEdgesSections(t *testing.T) {
	eachEdgeRun(t, "sections", nil, nil, sectionFigures(), func(t *testing.T, r *report.Report, stderr string, skewed bool) float64 {
		return checkBugs(t, "", r, stderr, skewed)
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
	// Ranks 0–2 sleep 0.1 s in interval 4, outside MPI: their Execution
	// and Productive time are 0.1 s each.
	var figs []edgeFigure
	for rk := 0; rk < 3; rk++ {
		figs = append(figs, edgeFigure{[]int{4}, rk, "execution_time", 0.1, tol, 1})
	}
	eachEdgeRun(t, "cut", env, []string{"cut", "3000000"}, figs, func(t *testing.T, r *report.Report, stderr string, skewed bool) float64 {
		if !hasWarningE2E(r, "Rank 3: tracing stopped early (SIZE_LIMIT") {
			t.Errorf("warnings %q", r.Warnings)
		}
		// The MPI_Barrier after interval 4 is in rank 3's program but not
		// in its trace: the instance is counted over ranks 0–2, and a
		// warning names the collective and the missing rank
		// (docs/characteristics.md §8.1).
		if !hasWarningE2E(r, "Collective MPI_Barrier (call ") || !hasWarningE2E(r, "on MPI_COMM_WORLD) lacks rank(s) 3 ") {
			t.Errorf("no warning names the MPI_Barrier that lacks rank 3: %q", r.Warnings)
		}
		if r.Unmatched == nil || r.Unmatched.Collectives == 0 {
			t.Errorf("unmatched %+v: the barrier after the cut lacks rank 3", r.Unmatched)
		}
		shift := 0.0
		for _, w := range r.Warnings {
			if strings.Contains(w, "Rank 0") || strings.Contains(w, "Rank 1") || strings.Contains(w, "Rank 2") {
				t.Errorf("warning about a complete rank: %s", w)
			}
			// Clock repairs, as checkWarnings allows them.
			if m := violationRE.FindStringSubmatch(w); m != nil && skewed {
				n, _ := strconv.Atoi(m[1])
				v, _ := strconv.ParseFloat(m[2], 64)
				shift += float64(n) * v
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
		return shift
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

// eachEdgeRun traces edges_intervals with args through quietRuns, with
// check (warnings, marks, identities: bugs whatever the noise; it returns
// checkWarnings' allowance for clock repairs) on every run, and compares
// figs with the quietest (checkFigures). name names the scenario in
// failures.
func eachEdgeRun(t *testing.T, name string, env, args []string, figs []edgeFigure,
	check func(t *testing.T, r *report.Report, stderr string, skewed bool) float64) {
	quietRuns(t, "edges_intervals", env, args, edgeScenarios(figs),
		func(t *testing.T, out string, r *report.Report, stderr string, skewed bool) float64 {
			if !strings.Contains(out, "edges_intervals done") {
				t.Fatalf("%s: the program did not finish:\n%s", name, out)
			}
			return check(t, r, stderr, skewed)
		},
		func(t *testing.T, r *report.Report, st selfTiming, _ float64) { checkFigures(t, r, figs, st) })
}
