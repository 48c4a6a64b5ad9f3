package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// eps absorbs float rounding in the identities below (sums of a few dozen
// numbers of seconds printed at full precision): they hold exactly by
// definition, so anything larger is a bug, not noise.
const eps = 1e-6

// timeFields are the per-processor times of report.Rank, by JSON name.
var timeFields = []string{
	"execution_time", "productive_time", "lost_time", "insufficient_parallelism", "idle_time",
	"communications", "sendrecv_time", "collective_time", "system_time", "real_sync",
	"load_imbalance", "potential_sync", "time_variation", "overlap",
}

// countFields are the per-processor counts of report.Rank, by JSON name.
var countFields = []string{"send_number", "receive_number", "wait_number", "collective_number", "system_number", "exe_count"}

// fields returns v's JSON fields as numbers, so that checks can name
// characteristics the way the report format does.
func fields(v any) map[string]float64 {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	out := map[string]float64{}
	for k, x := range m {
		if f, ok := x.(float64); ok {
			out[k] = f
		}
	}
	return out
}

// checkInvariants checks what must hold in any report of a complete run of
// np processors, whatever the program: every rank present, the identities
// of SPEC §3–§5 (as the analyzer package doc reads them), the comparative
// characteristics agreeing with the per-processor ones, the call sites
// adding up to the interval, efficiency in [0, 1], no negative time,
// nested intervals inside their parents.
func checkInvariants(t *testing.T, r *report.Report, np int) {
	t.Helper()
	errorf := func(iv *report.Interval, format string, a ...any) {
		t.Helper()
		t.Errorf("interval %v: %s", iv.Path, fmt.Sprintf(format, a...))
	}
	if r.Schema != report.Schema || r.Processors != np {
		t.Errorf("schema %q, processors %d; want %q, %d", r.Schema, r.Processors, report.Schema, np)
	}
	if len(r.Intervals) == 0 || len(r.Intervals[0].Path) != 0 {
		t.Fatalf("no whole-program interval first")
	}
	if w := r.Intervals[0]; len(w.Ranks) != np || w.Main.Processors != np {
		t.Errorf("whole program: %d ranks, %d processors; want %d", len(w.Ranks), w.Main.Processors, np)
	}
	byPath := map[string]*report.Interval{}
	children := map[childKey]float64{}
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		byPath[fmt.Sprint(iv.Path)] = iv
		if iv.Level != len(iv.Path) {
			errorf(iv, "level %d", iv.Level)
		}
		m := iv.Main
		if m.Processors != len(iv.Ranks) || m.Processors == 0 {
			errorf(iv, "main processors %d, %d ranks listed", m.Processors, len(iv.Ranks))
			continue
		}
		if m.Efficiency < -eps || m.Efficiency > 1+eps {
			errorf(iv, "efficiency %v outside [0, 1]", m.Efficiency)
		}
		if math.Abs(m.TotalTime-m.ExecutionTime*float64(m.Processors)) > eps {
			errorf(iv, "total time %v ≠ %v × %d", m.TotalTime, m.ExecutionTime, m.Processors)
		}
		if m.TotalTime > 0 && math.Abs(m.Efficiency-m.ProductiveTime/m.TotalTime) > eps {
			errorf(iv, "efficiency %v ≠ productive / total", m.Efficiency)
		}
		maxExe, maxProd := math.Inf(-1), math.Inf(-1)
		maxCount := 0
		for _, rk := range iv.Ranks {
			maxExe = math.Max(maxExe, rk.ExecutionTime)
			maxProd = math.Max(maxProd, rk.ProductiveTime)
			maxCount = max(maxCount, rk.ExeCount)
		}
		if math.Abs(maxExe-m.ExecutionTime) > eps || iv.ExeCount != maxCount {
			errorf(iv, "main execution %v / exe count %d; max over ranks %v / %d", m.ExecutionTime, iv.ExeCount, maxExe, maxCount)
		}
		mf := fields(m)
		sums := map[string]float64{}
		prev := -1
		for _, rk := range iv.Ranks {
			if rk.Rank <= prev || rk.Rank >= np {
				errorf(iv, "ranks out of order or out of range: %d after %d", rk.Rank, prev)
			}
			prev = rk.Rank
			f := fields(rk)
			for _, k := range timeFields {
				if f[k] < -eps {
					errorf(iv, "rank %d: %s = %v < 0", rk.Rank, k, f[k])
				}
				sums[k] += f[k]
			}
			for _, k := range countFields {
				sums[k] += f[k]
			}
			if d := rk.Communications - rk.SendRecvTime - rk.CollectiveTime - rk.SystemTime; math.Abs(d) > eps {
				errorf(iv, "rank %d: communications ≠ sendrecv + collective + system (by %v)", rk.Rank, d)
			}
			if d := rk.LostTime - rk.InsufficientParallelism - rk.Communications - rk.IdleTime; math.Abs(d) > eps {
				errorf(iv, "rank %d: lost ≠ insufficient parallelism + communications + idle (by %v)", rk.Rank, d)
			}
			if d := rk.ProductiveTime + rk.LostTime - maxExe; math.Abs(d) > eps {
				errorf(iv, "rank %d: productive + lost ≠ interval execution time (by %v)", rk.Rank, d)
			}
			if d := rk.IdleTime - (maxExe - rk.ExecutionTime); math.Abs(d) > eps {
				errorf(iv, "rank %d: idle ≠ max execution − own (by %v)", rk.Rank, d)
			}
			if d := rk.LoadImbalance - (maxProd - rk.ProductiveTime); math.Abs(d) > eps {
				errorf(iv, "rank %d: load imbalance ≠ max productive − own (by %v)", rk.Rank, d)
			}
			if rk.RealSync > rk.SendRecvTime+eps {
				errorf(iv, "rank %d: real sync %v > sendrecv time %v", rk.Rank, rk.RealSync, rk.SendRecvTime)
			}
		}
		// Main sums the processors, except execution time (max), exe count
		// (max) and collective number (instances).
		for k, s := range sums {
			switch k {
			case "execution_time", "exe_count", "collective_number":
				continue
			}
			if math.Abs(mf[k]-s) > eps*float64(len(iv.Ranks)) {
				errorf(iv, "main %s = %v, sum over ranks %v", k, mf[k], s)
			}
		}
		if float64(m.CollectiveNumber) > sums["collective_number"] {
			errorf(iv, "main collective number %d > calls %v", m.CollectiveNumber, sums["collective_number"])
		}
		checkComparative(t, iv)
		checkSRC(t, iv)
		if len(iv.Path) > 0 {
			parent := byPath[fmt.Sprint(iv.Path[:len(iv.Path)-1])]
			if parent == nil {
				errorf(iv, "listed before its parent")
				continue
			}
			inParent := map[int]bool{}
			for _, rk := range parent.Ranks {
				inParent[rk.Rank] = true
			}
			for _, rk := range iv.Ranks {
				if !inParent[rk.Rank] {
					errorf(iv, "rank %d executes it but not its parent", rk.Rank)
				}
				children[childKey{fmt.Sprint(parent.Path), rk.Rank}] += rk.ExecutionTime
			}
		}
	}
	// Nested intervals are disjoint parts of their parent: per processor,
	// their execution times add up to at most the parent's.
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		for _, rk := range iv.Ranks {
			if c := children[childKey{fmt.Sprint(iv.Path), rk.Rank}]; c > rk.ExecutionTime+eps {
				errorf(iv, "rank %d: nested intervals last %v, more than the interval's %v", rk.Rank, c, rk.ExecutionTime)
			}
		}
	}
}

// childKey names a processor's share of an interval (by printed path).
type childKey struct {
	path string
	rank int
}

// checkComparative checks that each comparative characteristic is the
// minimum, maximum and mean of the per-processor values, with processors
// where they occur.
func checkComparative(t *testing.T, iv *report.Interval) {
	t.Helper()
	var stats map[string]report.Stat
	b, _ := json.Marshal(iv.Comparative)
	if err := json.Unmarshal(b, &stats); err != nil {
		t.Fatal(err)
	}
	per := make([]map[string]float64, len(iv.Ranks))
	for i, rk := range iv.Ranks {
		per[i] = fields(rk)
	}
	for k, s := range stats {
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		at := map[int]float64{}
		for i, rk := range iv.Ranks {
			v := per[i][k]
			lo, hi, sum = math.Min(lo, v), math.Max(hi, v), sum+v
			at[rk.Rank] = v
		}
		mean := sum / float64(len(iv.Ranks))
		if math.Abs(s.Min-lo) > eps || math.Abs(s.Max-hi) > eps || math.Abs(s.Mean-mean) > eps {
			t.Errorf("interval %v: comparative %s = %+v; ranks give min %v max %v mean %v", iv.Path, k, s, lo, hi, mean)
		}
		if v, ok := at[s.MinProc]; !ok || math.Abs(v-s.Min) > eps {
			t.Errorf("interval %v: comparative %s: min_proc %d does not hold the minimum", iv.Path, k, s.MinProc)
		}
		if v, ok := at[s.MaxProc]; !ok || math.Abs(v-s.Max) > eps {
			t.Errorf("interval %v: comparative %s: max_proc %d does not hold the maximum", iv.Path, k, s.MaxProc)
		}
	}
}

// checkSRC checks that the call sites account for the interval: summed
// over sites, their times are the interval's, and each site's figures are
// the sums of its per-processor ones.
func checkSRC(t *testing.T, iv *report.Interval) {
	t.Helper()
	var comm, rs, ps, tv, ov float64
	perRank := map[int]float64{}
	for _, p := range iv.SRC {
		comm, rs, ps, tv, ov = comm+p.Comm, rs+p.RealSync, ps+p.PotentialSync, tv+p.TimeVariation, ov+p.Overlap
		var c, r, pt, v, o float64
		for _, x := range p.Ranks {
			c, r, pt, v, o = c+x.ExeTime, r+x.RealSync, pt+x.PotentialSync, v+x.TimeVariation, o+x.Overlap
			perRank[x.Rank] += x.ExeTime
		}
		for _, d := range []struct {
			name      string
			site, sum float64
		}{{"comm", p.Comm, c}, {"real_sync", p.RealSync, r}, {"potential_sync", p.PotentialSync, pt}, {"time_variation", p.TimeVariation, v}, {"overlap", p.Overlap, o}} {
			if math.Abs(d.site-d.sum) > eps {
				t.Errorf("interval %v SRC %d (%s): %s %v, its processors sum to %v", iv.Path, p.ID, p.Function, d.name, d.site, d.sum)
			}
		}
	}
	m := iv.Main
	for _, d := range []struct {
		name      string
		main, sum float64
	}{{"communications", m.Communications, comm}, {"real_sync", m.RealSync, rs}, {"potential_sync", m.PotentialSync, ps}, {"time_variation", m.TimeVariation, tv}, {"overlap", m.Overlap, ov}} {
		if math.Abs(d.main-d.sum) > eps*float64(len(iv.SRC)+1) {
			t.Errorf("interval %v: main %s %v, its call sites sum to %v", iv.Path, d.name, d.main, d.sum)
		}
	}
	for _, rk := range iv.Ranks {
		if math.Abs(perRank[rk.Rank]-rk.Communications) > eps*float64(len(iv.SRC)+1) {
			t.Errorf("interval %v rank %d: communications %v, its call sites sum to %v", iv.Path, rk.Rank, rk.Communications, perRank[rk.Rank])
		}
	}
}
