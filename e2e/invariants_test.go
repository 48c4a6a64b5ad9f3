package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// checkClean checks what every report of a whole run of a 4-rank program
// must show: nothing unmatched, no warning (in a skewed run, tolerated
// clock violations only), the invariants, and n intervals (any number
// when n < 0).
func checkClean(t *testing.T, r *report.Report, stderr string, skew bool, n int) {
	t.Helper()
	if r.Unmatched != nil {
		t.Errorf("unmatched operations: %+v", *r.Unmatched)
	}
	checkWarnings(t, r, stderr, skew)
	checkInvariants(t, r, 4)
	if n >= 0 && len(r.Intervals) != n {
		t.Fatalf("%d intervals, want %d", len(r.Intervals), n)
	}
}

// checkInvariants checks what must hold in any report of a complete run of
// np processors, whatever the program: report.Check (the identities of
// characteristics.md §3–§5, comparative and call-site sums, no negative time — Productive
// Time included —, efficiency in [0, 1], nesting), plus what a complete
// run adds: every rank present in the whole program, no interval or rank
// marked incomplete, and no internal-inconsistency warning.
func checkInvariants(t *testing.T, r *report.Report, np int) {
	t.Helper()
	checkReport(t, r)
	if r.Processors != np {
		t.Errorf("processors %d; want %d", r.Processors, np)
	}
	if w := r.Intervals[0]; len(w.Ranks) != np || w.Main.Processors != np {
		t.Errorf("whole program: %d ranks, %d processors; want %d", len(w.Ranks), w.Main.Processors, np)
	}
	for _, iv := range r.Intervals {
		if iv.Incomplete {
			t.Errorf("interval %s of a complete run marked incomplete: %s", report.PathString(iv.Path), iv.IncompleteReason)
		}
	}
}

// checkReport checks what holds in any report, complete or not:
// report.Check, a whole-program interval, and no internal-inconsistency
// warning (a negative Productive Time clamped). analyse runs it on every
// report the tests produce.
func checkReport(t *testing.T, r *report.Report) {
	t.Helper()
	for _, err := range report.Check(r) {
		t.Error(err)
	}
	if len(r.Intervals) == 0 || len(r.Intervals[0].Path) != 0 {
		t.Fatalf("no whole-program interval first")
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "Internal inconsistency") {
			t.Error(w)
		}
	}
}

// timeFields are the per-processor times of report.Rank, by JSON name.
var timeFields = []string{
	"execution_time", "productive_time", "lost_time", "insufficient_parallelism", "idle_time",
	"communications", "sendrecv_time", "collective_time", "system_time", "real_sync", "late_receiver",
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
