package analyzer

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

const (
	us = tracetest.US
	ms = tracetest.MS
	s  = tracetest.S
)

// tol is the tolerance of time comparisons in seconds: fixtures are exact
// to the nanosecond, skewed ones to a few ns of rounding.
const tol = 1e-8

// analyzeRun writes run into a fresh directory and analyzes it.
func analyzeRun(t *testing.T, run *tracetest.Run, maxLevel ...int) *report.Report {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	return analyzeDir(t, dir, maxLevel...)
}

func analyzeDir(t *testing.T, dir string, maxLevel ...int) *report.Report {
	t.Helper()
	ml := -1
	if len(maxLevel) > 0 {
		ml = maxLevel[0]
	}
	var warned []string
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: ml,
		Warn: func(s string) { warned = append(warned, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(warned, "\n") != strings.Join(rep.Warnings, "\n") {
		t.Errorf("Warn received %q, report lists %q", warned, rep.Warnings)
	}
	checkInvariants(t, rep)
	return rep
}

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

func expect(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %.9f s, want %.9f s", what, got, want)
	}
}

func find(t *testing.T, rep *report.Report, path ...int) *report.Interval {
	t.Helper()
	for i := range rep.Intervals {
		if intsEqual(rep.Intervals[i].Path, path) {
			return &rep.Intervals[i]
		}
	}
	t.Fatalf("no interval %v in the report", path)
	return nil
}

func intsEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func rank(t *testing.T, iv *report.Interval, r int) *report.Rank {
	t.Helper()
	for i := range iv.Ranks {
		if iv.Ranks[i].Rank == r {
			return &iv.Ranks[i]
		}
	}
	t.Fatalf("interval %v: no rank %d", iv.Path, r)
	return nil
}

func hasWarning(rep *report.Report, sub string) bool {
	for _, w := range rep.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// checkInvariants verifies the identities of SPEC §3–§5 (as the analyzer
// reads them, see the package doc) on every interval of a report.
func checkInvariants(t *testing.T, rep *report.Report) {
	t.Helper()
	const eps = 1e-9
	for _, iv := range rep.Intervals {
		m := iv.Main
		var maxExec float64
		for _, r := range iv.Ranks {
			maxExec = math.Max(maxExec, r.ExecutionTime)
		}
		var sum report.Main
		var maxProd float64
		for i, r := range iv.Ranks {
			if i == 0 || r.ProductiveTime > maxProd {
				maxProd = r.ProductiveTime
			}
		}
		for _, r := range iv.Ranks {
			where := func(f string) string { return "interval " + pathString(iv.Path) + " rank " + itoa(r.Rank) + ": " + f }
			if math.Abs(r.Communications-(r.SendRecvTime+r.CollectiveTime+r.SystemTime)) > eps {
				t.Errorf("%s Communications %g != SendRecv+Collective+System", where(""), r.Communications)
			}
			if math.Abs(r.LostTime-(r.Communications+r.IdleTime+r.InsufficientParallelism)) > eps {
				t.Errorf("%s Lost %g != Comm+Idle+InsufPar", where(""), r.LostTime)
			}
			if math.Abs(r.ProductiveTime-(maxExec-r.LostTime)) > eps {
				t.Errorf("%s Productive %g != Execution(interval) - Lost", where(""), r.ProductiveTime)
			}
			if math.Abs(r.IdleTime-(maxExec-r.ExecutionTime)) > eps {
				t.Errorf("%s Idle %g != max Exec - Exec", where(""), r.IdleTime)
			}
			if math.Abs(r.LoadImbalance-(maxProd-r.ProductiveTime)) > eps {
				t.Errorf("%s LoadImbalance %g != max Productive - Productive", where(""), r.LoadImbalance)
			}
			if r.RealSync > r.SendRecvTime+eps || r.RealSync < 0 || r.PotentialSync < 0 || r.TimeVariation < 0 || r.Overlap < 0 {
				t.Errorf("%s Real Sync %g (SendRecv %g), Potential %g, TV %g, Overlap %g out of range", where(""),
					r.RealSync, r.SendRecvTime, r.PotentialSync, r.TimeVariation, r.Overlap)
			}
			if r.Communications > r.ExecutionTime+eps {
				t.Errorf("%s Communications %g > Execution %g", where(""), r.Communications, r.ExecutionTime)
			}
			sum.ProductiveTime += r.ProductiveTime
			sum.LostTime += r.LostTime
			sum.Communications += r.Communications
			sum.IdleTime += r.IdleTime
			sum.RealSync += r.RealSync
			sum.SendNumber += r.SendNumber
			sum.PotentialSync += r.PotentialSync
			sum.Overlap += r.Overlap
		}
		if math.Abs(m.ExecutionTime-maxExec) > eps || m.Processors != len(iv.Ranks) ||
			math.Abs(m.TotalTime-maxExec*float64(len(iv.Ranks))) > eps {
			t.Errorf("interval %v: Main execution %g processors %d total %g", iv.Path, m.ExecutionTime, m.Processors, m.TotalTime)
		}
		if math.Abs(m.ProductiveTime-sum.ProductiveTime) > eps || math.Abs(m.LostTime-sum.LostTime) > eps ||
			math.Abs(m.Communications-sum.Communications) > eps || math.Abs(m.IdleTime-sum.IdleTime) > eps ||
			math.Abs(m.RealSync-sum.RealSync) > eps || m.SendNumber != sum.SendNumber ||
			math.Abs(m.PotentialSync-sum.PotentialSync) > eps || math.Abs(m.Overlap-sum.Overlap) > eps {
			t.Errorf("interval %v: Main %+v is not the sum of the ranks %+v", iv.Path, m, sum)
		}
		if math.Abs(m.ProductiveTime+m.LostTime-m.TotalTime) > 1e-6 {
			t.Errorf("interval %v: Productive %g + Lost %g != Total %g", iv.Path, m.ProductiveTime, m.LostTime, m.TotalTime)
		}
		if m.Efficiency < 0 || m.Efficiency > 1 {
			t.Errorf("interval %v: efficiency %g", iv.Path, m.Efficiency)
		}
		if m.TotalTime > 0 && math.Abs(m.Efficiency-m.ProductiveTime/m.TotalTime) > eps {
			t.Errorf("interval %v: efficiency %g != Productive/Total", iv.Path, m.Efficiency)
		}
		checkStat(t, iv, "ExecutionTime", iv.Comparative.ExecutionTime, func(r report.Rank) float64 { return r.ExecutionTime })
		checkStat(t, iv, "LostTime", iv.Comparative.LostTime, func(r report.Rank) float64 { return r.LostTime })
		checkStat(t, iv, "RealSync", iv.Comparative.RealSync, func(r report.Rank) float64 { return r.RealSync })
		checkStat(t, iv, "LoadImbalance", iv.Comparative.LoadImbalance, func(r report.Rank) float64 { return r.LoadImbalance })
		checkStat(t, iv, "Overlap", iv.Comparative.Overlap, func(r report.Rank) float64 { return r.Overlap })
		// SRC figures add up to the interval's.
		var comm, rs float64
		for _, p := range iv.SRC {
			comm += p.Comm
			rs += p.RealSync
		}
		if math.Abs(comm-m.Communications) > 1e-6 || math.Abs(rs-m.RealSync) > 1e-6 {
			t.Errorf("interval %v: SRC Comm %g Real Sync %g, Main %g %g", iv.Path, comm, rs, m.Communications, m.RealSync)
		}
	}
}

func checkStat(t *testing.T, iv report.Interval, name string, s report.Stat, f func(report.Rank) float64) {
	t.Helper()
	if len(iv.Ranks) == 0 {
		return
	}
	var mean float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range iv.Ranks {
		v := f(r)
		mean += v
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	mean /= float64(len(iv.Ranks))
	okProc := func(p int, v float64) bool {
		for _, r := range iv.Ranks {
			if r.Rank == p {
				return math.Abs(f(r)-v) < 1e-12
			}
		}
		return false
	}
	if math.Abs(s.Min-lo) > 1e-12 || math.Abs(s.Max-hi) > 1e-12 || math.Abs(s.Mean-mean) > 1e-9 ||
		!okProc(s.MinProc, s.Min) || !okProc(s.MaxProc, s.Max) {
		t.Errorf("interval %v: comparative %s %+v inconsistent with ranks (min %g max %g mean %g)", iv.Path, name, s, lo, hi, mean)
	}
}

func pathString(p []int) string {
	if len(p) == 0 {
		return "0"
	}
	var parts []string
	for _, x := range p {
		parts = append(parts, itoa(x))
	}
	return strings.Join(parts, "/")
}

func itoa(i int) string { return strconv.Itoa(i) }
