package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// The tests in this file run the real analyzer on traces written by
// tracetest.

const us, ms = tracetest.US, tracetest.MS

// lateSender writes the canonical late-sender run into a temporary
// directory: rank 0 computes 0.2 s, then sends; rank 1 waits in MPI_Recv.
// With interval 1 around the exchange on both ranks.
func lateSender(t *testing.T) string {
	t.Helper()
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	r0.Pcontrol(100, 1)
	r1.Pcontrol(100, 1)
	r0.Compute(200*ms).Send(1, 7, 8, 10*us)
	r1.Recv(0, 7, 8, 200*ms+20*us)
	r0.Pcontrol(101, 1)
	r1.Pcontrol(101, 1)
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func decode(t *testing.T, out string) *report.Report {
	t.Helper()
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding JSON report: %v", err)
	}
	return &r
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestEndToEndLateSender: the JSON report of the late-sender run has the
// whole program and interval 1, and Real Sync is the 0.2 s rank 1 waited.
func TestEndToEndLateSender(t *testing.T) {
	dir := lateSender(t)
	out, errOut, code := dtpa(t, "--json", "--dir", dir, "app")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := decode(t, out)
	if r.Schema != report.Schema || r.Task != "app" || r.Processors != 2 {
		t.Errorf("schema %q task %q processors %d", r.Schema, r.Task, r.Processors)
	}
	if len(r.Intervals) != 2 || r.Intervals[0].Level != 0 || r.Intervals[1].Level != 1 || r.Intervals[1].Number != 1 {
		t.Fatalf("intervals: %+v", r.Intervals)
	}
	for _, iv := range r.Intervals {
		if !near(iv.Main.RealSync, 0.2) {
			t.Errorf("interval %v: Real sync %v, want 0.2", iv.Path, iv.Main.RealSync)
		}
		if iv.Main.Processors != 2 || iv.ExeCount != 1 {
			t.Errorf("interval %v: processors %d exe count %d", iv.Path, iv.Main.Processors, iv.ExeCount)
		}
	}
}

// TestEndToEndText: the text report of the same run, full and minimal.
func TestEndToEndText(t *testing.T) {
	dir := lateSender(t)
	out, errOut, code := dtpa(t, "--dir", dir, "app")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"INTERVAL (whole program)", "INTERVAL 1  LEVEL=1", "--- The execution characteristics ---", "MPI_Recv"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	out, errOut, code = dtpa(t, "-wp", "-src", "100", "-srct", "100", "--dir", dir, "app", "0")
	if code != 0 {
		t.Fatalf("minimal report: exit %d: %s", code, errOut)
	}
	if strings.Count(out, "\nINTERVAL ") != 1 || strings.Contains(out, "--- The execution characteristics ---") {
		t.Errorf("minimal report: want the whole program only, without per-processor output:\n%s", out)
	}
}

// TestEndToEndNoTraces: a directory without traces is a clear error.
func TestEndToEndNoTraces(t *testing.T) {
	out, errOut, code := dtpa(t, "--dir", t.TempDir(), "app")
	if code != exitError || out != "" || !strings.HasPrefix(errOut, "dtpa: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestEndToEndHTML: --html writes one page holding the report and the
// timeline of the late-sender run (2 ranks, 1 message); --json and --html
// together are a usage error.
func TestEndToEndHTML(t *testing.T) {
	dir := lateSender(t)
	page := filepath.Join(t.TempDir(), "app.html")
	out, errOut, code := dtpa(t, "--html", "--dir", dir, "-o", page, "app")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<!DOCTYPE html>", `id="dtpa-report">{"schema":"dtpa-report/1","task":"app"`, `"message_count":1,`, `id="timeline"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	if _, errOut, code := dtpa(t, "--html", "--json", "--dir", dir, "app"); code != exitUsage || !strings.Contains(errOut, "exclude each other") {
		t.Errorf("--html --json: exit %d, stderr %q", code, errOut)
	}
}

// TestEndToEndChrome: --export chrome writes the late-sender run as trace
// events: its two MPI calls, one flow for its message, interval 1 on both
// ranks; nothing else is left beside the file. Other formats, and
// --export with --json or --html, are usage errors.
func TestEndToEndChrome(t *testing.T) {
	dir := lateSender(t)
	outDir := t.TempDir()
	file := filepath.Join(outDir, "app.json")
	out, errOut, code := dtpa(t, "--export", "chrome", "--dir", dir, "-o", file, "app")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := chrometest.Read(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var calls, spans []string
	for _, s := range tr.Slices {
		if s.Cat == "mpi" {
			calls = append(calls, s.Name)
		} else {
			spans = append(spans, s.Name)
		}
	}
	if strings.Join(calls, " ") != "MPI_Send MPI_Recv" || strings.Join(spans, " ") != "interval 1 interval 1" || len(tr.Flows) != 1 {
		t.Errorf("calls %v spans %v flows %v", calls, spans, tr.Flows)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("beside the export: %v", ents)
	}
	// To standard output without -o.
	out, errOut, code = dtpa(t, "--export", "chrome", "--dir", dir, "app")
	if code != 0 || !strings.HasPrefix(out, `{"displayTimeUnit"`) {
		t.Errorf("to stdout: exit %d, %.40q: %s", code, out, errOut)
	}
	for _, args := range [][]string{{"--export", "perfetto", "app"}, {"--export", "chrome", "--json", "app"}, {"--export", "chrome", "--html", "app"}} {
		if _, errOut, code := dtpa(t, append([]string{"--dir", dir}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// A failed analysis leaves no file.
	if _, _, code := dtpa(t, "--export", "chrome", "--dir", t.TempDir(), "-o", file+"2", "app"); code != exitError {
		t.Errorf("no traces: exit %d", code)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("after a failure, beside the export: %v", ents)
	}
}
