package analyzer

import (
	"context"
	"math"
	"runtime"
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

// start starts the run of n ranks most tests build on: every rank's
// MPI_Init lasts 1 µs from 0.
func start(n int) (*tracetest.Run, []*tracetest.Rank) {
	run := tracetest.NewRun(n)
	ranks := make([]*tracetest.Rank, n)
	for i := range ranks {
		ranks[i] = run.Rank(i)
		ranks[i].Init(us)
	}
	return run, ranks
}

// pair is start(2).
func pair() (run *tracetest.Run, r0, r1 *tracetest.Rank) {
	run, ranks := start(2)
	return run, ranks[0], ranks[1]
}

// finish ends every rank of run with an MPI_Finalize of 1 µs.
func finish(run *tracetest.Run) {
	for i := 0; i < run.Size(); i++ {
		run.Rank(i).Finalize(us)
	}
}

// analyzeClean is analyzeRun of a well-formed run: any warning fails t.
func analyzeClean(t *testing.T, run *tracetest.Run) *report.Report {
	t.Helper()
	rep := analyzeRun(t, run)
	noWarnings(t, rep)
	return rep
}

// noWarnings fails t if rep has warnings.
func noWarnings(t *testing.T, rep *report.Report) {
	t.Helper()
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// analyzeRunLimits is analyzeRun with the replay's bounds changed by set.
func analyzeRunLimits(t *testing.T, run *tracetest.Run, set func(*limits)) *report.Report {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	lim := defaultLimits()
	set(&lim)
	return analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, limits: &lim})
}

func analyzeDir(t *testing.T, dir string, maxLevel ...int) *report.Report {
	t.Helper()
	ml := -1
	if len(maxLevel) > 0 {
		ml = maxLevel[0]
	}
	return analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: ml})
}

// analyzeSink analyzes with opts, every call and interval execution going
// to sink (the random tests' models compare them), and returns the report
// and the warnings passed to Warn.
func analyzeSink(t *testing.T, opts Options, sink TimelineSink) (*report.Report, []string) {
	t.Helper()
	var warned []string
	opts.Timeline = &TimelineRecorder{Sink: sink}
	opts.Warn = func(s string) { warned = append(warned, s) }
	rep, err := Analyze(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep, warned
}

// analyzeOpts analyzes with opts, checking the warnings passed to Warn and
// the report's invariants.
func analyzeOpts(t *testing.T, opts Options) *report.Report {
	t.Helper()
	var warned []string
	opts.Warn = func(s string) { warned = append(warned, s) }
	if opts.Workers == 0 {
		// The exchange's concurrent paths, which the default of a few
		// ranks (replayWorkers: one) would leave out.
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	// Every report is built from the replay's results split by rank,
	// marshalled, unmarshalled and merged, as in a distributed replay,
	// and compared with the report built from them directly.
	opts.roundTrip = true
	rep, err := Analyze(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(warned, "\n") != strings.Join(rep.Warnings, "\n") {
		t.Errorf("Warn received %q, report lists %q", warned, rep.Warnings)
	}
	checkInvariants(t, rep)
	checkDist(t, opts)
	checkStep(t, opts, rep)
	return rep
}

// checkStep compares rep, analyzed with opts, with the report of the same
// run replayed by one worker in the coroutines alone (without
// replayer.step), when opts has one worker.
func checkStep(t *testing.T, opts Options, rep *report.Report) {
	t.Helper()
	if opts.Workers != 1 {
		return
	}
	opts.Warn, opts.Timeline, opts.Chrome, opts.Progress = nil, nil, nil, nil
	opts.noStep = true
	co, err := Analyze(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameReport(rep, co); err != nil {
		t.Errorf("replayed on the worker's stack and in coroutines: %v", err)
	}
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

// checkInvariants runs report.Check, the invariant check every report
// passes, on rep.
func checkInvariants(t *testing.T, rep *report.Report) {
	t.Helper()
	for _, err := range report.Check(rep) {
		t.Error(err)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "Internal inconsistency") {
			t.Error(w)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
