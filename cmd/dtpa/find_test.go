package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// TestEndToEndFindTraces: the traces are found however a user names them
// (the program as run, with or without a directory, one trace file, the
// directory), and a name that matches nothing lists the tasks dtpa sees.
func TestEndToEndFindTraces(t *testing.T) {
	dir := lateSender(t)
	for _, args := range [][]string{
		{"--dir", dir, "app"},
		{"--dir", dir, "./app"},
		{"--dir", dir, "app.1.trc"},
		{filepath.Join(dir, "app")},
		{filepath.Join(dir, "app.0.trc")},
		{dir},
		{"--dir", filepath.Dir(dir), filepath.Join(filepath.Base(dir), "app")},
	} {
		out, errOut, code := dtpa(t, append([]string{"--json"}, args...)...)
		if code != 0 {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
			continue
		}
		if r := decode(t, out); r.Task != "app" || r.Processors != 2 || !near(r.Intervals[0].Main.RealSync, 0.2) {
			t.Errorf("%q: task %q processors %d", args, r.Task, r.Processors)
		}
	}
	_, errOut, code := dtpa(t, "--dir", dir, "ap")
	if want := `(looked for ap.<rank>.trc); the traces there are of: app (2 traces)`; code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("no match: exit %d, stderr %q; want …%s", code, errOut, want)
	}
}

// TestEndToEndFindings: the text report of the late-sender run opens
// with its findings: interval 1 loses half its time, nearly all of it rank
// 1 waiting in MPI_Recv for rank 0, which has all the productive work.
func TestEndToEndFindings(t *testing.T) {
	dir := lateSender(t)
	out, errOut, code := dtpa(t, "--dir", dir, "app")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	head, _, _ := strings.Cut(out, "\n====")
	for _, s := range []string{
		// (Its call sites have no symbols: the caller is the program.)
		"Findings:\n  Lost time is 50.0 % of total in interval 1, mostly Real Sync in MPI_Recv from app; rank 0 has the most productive work",
		"rank 1  Real sync in MPI_Recv from app, waiting for rank 0\n",
	} {
		if !strings.Contains(head, s) {
			t.Errorf("report head lacks %q:\n%s", s, head)
		}
	}
	if i, j := strings.Index(out, "Findings:"), strings.Index(out, "INTERVAL"); i < 0 || i > j {
		t.Errorf("findings not before the intervals")
	}
}

// TestEndToEndWarningsGrouped: a problem of several ranks is one warning
// line naming them, on stderr and in the report, without the tracer's
// internal figures (the tracetest footer has none; e2e's
// TestDtrunSummaryCut checks a real one).
func TestEndToEndWarningsGrouped(t *testing.T) {
	run := tracetest.NewRun(3)
	for r := 0; r < 3; r++ {
		run.Rank(r).Init(us).Compute(ms).Barrier(10 * us).StopReason(tracepb.Footer_SIZE_LIMIT)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "cut"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := dtpa(t, "--dir", dir, "cut")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "Ranks 0-2: tracing stopped early (SIZE_LIMIT); later events are missing."
	if !strings.HasPrefix(errOut, "dtpa: warning: "+want+"\n") || strings.Count(errOut, "SIZE_LIMIT") != 1 {
		t.Errorf("stderr %q, want one line %q", errOut, want)
	}
	// The symbolizer's warnings, which the report does not list, follow.
	if !strings.Contains(errOut, "\ndtpa: warning: Executable /tmp/app not found") {
		t.Errorf("stderr %q lacks the symbolizer's warning", errOut)
	}
	if !strings.Contains(out, "):\n  - "+want+"\n") {
		t.Errorf("report warnings:\n%s", out)
	}
}
