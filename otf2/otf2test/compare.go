package otf2test

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dtpa/dtpa/report"
)

// Tick is the tolerance of a time compared by CompareReports: one tick of
// the archives dtpa writes (1 ns), in seconds.
const Tick = 1e-9

// CompareReports lists the differences between the report of a run (want)
// and the report of the same run after a round trip through OTF2 (got):
// every figure of every interval within one Tick (counts exactly), the
// clock violations and unmatched operations. Left out is what the
// round trip does not carry by design: warnings, run facts (command,
// clock, trace sizes, hosts) and source positions; call sites are
// compared per MPI function (an archive's call sites are source
// positions, not the traces' return addresses, so SRC numbering may
// differ), with the figures of each function's call sites summed.
func CompareReports(want, got *report.Report) []string {
	var diffs []string
	w, g := generic(want), generic(got)
	walk("", w, g, &diffs)
	gi := map[string]*report.Interval{}
	for i := range got.Intervals {
		gi[fmt.Sprint(got.Intervals[i].Path)] = &got.Intervals[i]
	}
	for i := range want.Intervals {
		wi := &want.Intervals[i]
		if g, ok := gi[fmt.Sprint(wi.Path)]; ok {
			compareSRC(fmt.Sprintf("interval %v", wi.Path), wi.SRC, g.SRC, &diffs)
		}
	}
	return diffs
}

// skipped are the JSON members left out of the comparison.
var skipped = map[string]bool{
	"warnings": true, "run": true, "hosts": true, "src": true, "source_file": true, "line": true,
	"waiting_src": true, "late_src": true, "from_src": true, "to_src": true,
}

func generic(r *report.Report) any {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic(err)
	}
	return v
}

func walk(path string, w, g any, diffs *[]string) {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, round trip %v", path, w, g))
			return
		}
		keys := map[string]bool{}
		for k := range wv {
			keys[k] = true
		}
		for k := range gv {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			if !skipped[k] {
				walk(path+"."+k, wv[k], gv[k], diffs)
			}
		}
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %d elements, round trip %v", path, len(wv), short(g)))
			return
		}
		for i := range wv {
			walk(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i], diffs)
		}
	case float64:
		gv, ok := g.(float64)
		if !ok || math.Abs(wv-gv) > Tick {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, round trip %v", path, wv, g))
		}
	default:
		if fmt.Sprint(w) != fmt.Sprint(g) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, round trip %v", path, short(w), short(g)))
		}
	}
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fnRank sums a function's call sites on one rank.
type fnRank struct {
	count                            int64
	time, rs, late, pot, tv, overlap float64
}

func bySRCFunction(srcs []report.SRC) map[string]map[int]*fnRank {
	out := map[string]map[int]*fnRank{}
	for _, s := range srcs {
		m := out[s.Function]
		if m == nil {
			m = map[int]*fnRank{}
			out[s.Function] = m
		}
		for _, r := range s.Ranks {
			f := m[r.Rank]
			if f == nil {
				f = &fnRank{}
				m[r.Rank] = f
			}
			f.count += int64(r.ExeCount)
			f.time += r.ExeTime
			f.rs += r.RealSync
			f.late += r.LateReceiver
			f.pot += r.PotentialSync
			f.tv += r.TimeVariation
			f.overlap += r.Overlap
		}
	}
	return out
}

func compareSRC(where string, want, got []report.SRC, diffs *[]string) {
	w, g := bySRCFunction(want), bySRCFunction(got)
	var names []string
	for n := range w {
		names = append(names, n)
	}
	for n := range g {
		if _, ok := w[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		for r, wf := range w[n] {
			gf := g[n][r]
			if gf == nil {
				*diffs = append(*diffs, fmt.Sprintf("%s: %s on rank %d missing after the round trip", where, n, r))
				continue
			}
			a := []float64{float64(wf.count), wf.time, wf.rs, wf.late, wf.pot, wf.tv, wf.overlap}
			b := []float64{float64(gf.count), gf.time, gf.rs, gf.late, gf.pot, gf.tv, gf.overlap}
			names := strings.Fields("exe_count exe_time real_sync late_receiver potential_sync time_variation overlap")
			for i := range a {
				// Summed over call sites: one tick per site at most.
				if math.Abs(a[i]-b[i]) > Tick*float64(len(want)+1) {
					*diffs = append(*diffs, fmt.Sprintf("%s: SRC %s rank %d %s %v, round trip %v", where, n, r, names[i], a[i], b[i]))
				}
			}
		}
		for r := range g[n] {
			if w[n][r] == nil {
				*diffs = append(*diffs, fmt.Sprintf("%s: %s on rank %d appears after the round trip", where, n, r))
			}
		}
	}
}
