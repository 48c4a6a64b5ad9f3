package analyzer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// mpmdRun is an MPMD job (mpirun -np 2 ./ocean : -np 2 ./atmos): ocean's
// ranks 0 and 1 compute 200 ms, then send to atmos's ranks 2 and 3, which
// wait for them from the start (Real Sync 0.2 s each); then a barrier.
func mpmdRun(runID string) *tracetest.Run {
	run, ranks := start(4)
	run.Program, run.RunID = "/tmp/ocean", []byte(runID)
	for _, r := range ranks[2:] {
		r.Program("/tmp/atmos")
	}
	for i, r := range ranks[:2] {
		r.Compute(200*ms).Send(int32(i+2), 0, 4, 10*us)
	}
	for i, r := range ranks[2:] {
		r.Recv(int32(i), 0, 4, 200*ms+20*us)
	}
	for _, r := range ranks {
		r.At(300 * ms).Barrier(10 * us).Finalize(us)
	}
	return run
}

// TestMPMD: naming any program of an MPMD job analyses the whole job, its
// programs listed in the run facts; traces of another run's programs are
// not taken for the missing ranks.
func TestMPMD(t *testing.T) {
	dir := t.TempDir()
	if _, err := mpmdRun("run A").WriteDir(dir, "ocean"); err != nil {
		t.Fatal(err)
	}
	var reps []*report.Report
	for _, app := range []string{"ocean", "atmos"} {
		rep := analyzeOpts(t, Options{Dir: dir, App: app, MaxLevel: -1})
		if len(rep.Warnings) != 0 {
			t.Errorf("%s: warnings %q", app, rep.Warnings)
		}
		iv := find(t, rep)
		if len(iv.Ranks) != 4 {
			t.Fatalf("%s: %d processors, want 4", app, len(iv.Ranks))
		}
		for _, r := range []int{2, 3} {
			expect(t, app+": Real Sync of rank "+string(rune('0'+r)), rank(t, iv, r).RealSync, 0.2)
		}
		want := []report.Program{{Program: "/tmp/ocean", Ranks: []int{0, 1}}, {Program: "/tmp/atmos", Ranks: []int{2, 3}}}
		if !slices.EqualFunc(rep.Programs, want, func(a, b report.Program) bool {
			return a.Program == b.Program && slices.Equal(a.Ranks, b.Ranks)
		}) {
			t.Errorf("%s: programs %+v, want %+v", app, rep.Programs, want)
		}
		reps = append(reps, rep)
	}
	reps[1].Task = reps[0].Task // the name it was asked by
	if err := sameReport(reps[0], reps[1]); err != nil {
		t.Errorf("dtpa ocean and dtpa atmos differ: %v", err)
	}
	if d, app, err := FindTraces("", dir); err != nil || d != dir || app != "ocean" {
		t.Errorf("FindTraces(%s) = %q, %q, %v; want the task of rank 0", dir, d, app, err)
	}
	sets := RunTraces(dir, nil)
	if len(sets) != 1 || sets[0].Files != 4 || !slices.Equal(sets[0].Tasks, []string{"atmos", "ocean"}) || sets[0].World != 4 || sets[0].Missing != nil {
		t.Errorf("dtrun's summary sets %+v, want one set of both programs", sets)
	}

	// Another run's atmos beside this run's ocean: ranks 2-3 are missing.
	mixed := t.TempDir()
	for _, run := range []string{"run A", "run B"} {
		sub := t.TempDir()
		if _, err := mpmdRun(run).WriteDir(sub, "ocean"); err != nil {
			t.Fatal(err)
		}
		pick := "ocean"
		if run == "run B" {
			pick = "atmos"
		}
		files, _ := filepath.Glob(filepath.Join(sub, pick+".*.trc"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mixed, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep := analyzeOpts(t, Options{Dir: mixed, App: "ocean", MaxLevel: -1})
	if !hasWarning(rep, "traces of rank(s) 2-3 are missing") || rep.Programs != nil {
		t.Errorf("another run's atmos: warnings %q, programs %+v", rep.Warnings, rep.Programs)
	}
	if _, _, err := FindTraces("", mixed); err == nil || !strings.Contains(err.Error(), "several tasks") {
		t.Errorf("FindTraces of two runs' programs: %v", err)
	}
}
