package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkDemoFindings checks that the demo's text report opens with its
// findings, naming the loss the README describes: time lost in
// MPI_Waitall at solver.c:waitallLine, and rank 3 (which owns four times
// the cells of each other rank) as the one with the most productive work.
func checkDemoFindings(t *testing.T, dir string, waitallLine int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--dir", dir, "solver").Output()
	if err != nil {
		t.Fatalf("dtpa solver: %v", err)
	}
	head, _, _ := strings.Cut(string(out), "\nRun:")
	for _, s := range []string{
		"Findings:\n  Lost time is ",
		" of total in interval 1 (solver.c:",
		// Real Sync, or on a loaded machine SendRecv time (ranks
		// descheduled inside MPI_Waitall): both lost there.
		" in MPI_Waitall at solver.c:" + strconv.Itoa(waitallLine) + ";",
		"rank 3 has the most productive work",
	} {
		if !strings.Contains(head, s) {
			t.Errorf("the report does not open with %q:\n%s", s, head)
		}
	}
}

// TestDtrunSummaryCut traces the cut run of edges_intervals.c (rank 3's
// tracing stops at MaxTraceSize): dtrun ends by naming the 4 traces and
// warning of rank 3 alone, and dtpa's warning about it gives the footer's
// reason without the tracer's internal figures.
func TestDtrunSummaryCut(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	dir := t.TempDir()
	exe := compile(t, m, dir, "edges_intervals")
	out := trace(t, m, dir, []string{"MaxTraceSize=1"}, 4, exe, "cut", "3000000")
	for _, s := range []string{
		"dtrun: 4 traces of edges_intervals in " + dir + ", ",
		"dtrun: warning: Rank 3: tracing stopped at MaxTraceSize; ",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("dtrun output lacks %q:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "dtrun: warning"); n != 1 {
		t.Errorf("%d dtrun warnings, want 1 (rank 3):\n%s", n, out)
	}
	r, stderr := analyse(t, dir, "edges_intervals")
	found := false
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "Rank 3: tracing stopped early (SIZE_LIMIT") {
			found = true
			if strings.Contains(w, "flush") || strings.Contains(w, " ns") {
				t.Errorf("warning with the tracer's internal figures: %s", w)
			}
		}
	}
	if !found || strings.Contains(stderr, "flush stall") {
		t.Errorf("warnings %q, stderr %q", r.Warnings, stderr)
	}
}

// TestRerunFewerRanks traces the solver at 4 ranks, then at once (within
// the second that dtrun allows for coarse file times) at 2 in the same
// directory, under each MPI: the second job's summary counts its own two
// traces and names the other two as the first run's, and dtpa analyses
// the 2-rank run, leaving out the first run's files with a warning.
func TestRerunFewerRanks(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "solver")
			trace(t, m, dir, nil, 4, exe)
			out := trace(t, m, dir, nil, 2, exe)
			for _, s := range []string{
				"dtrun: 2 traces of solver in " + dir + ", ",
				"dtrun: solver.2.trc, solver.3.trc in " + dir + " are an earlier run's, which dtpa leaves out\n",
			} {
				if !strings.Contains(out, s) {
					t.Errorf("dtrun output lacks %q:\n%s", s, out)
				}
			}
			r, _ := analyse(t, dir, "solver")
			if r.Processors != 2 || len(r.Warnings) != 1 ||
				!strings.HasPrefix(r.Warnings[0], "solver.2.trc, solver.3.trc are left from an earlier run (run ") ||
				!strings.Contains(r.Warnings[0], ", 4 processes, started ") {
				t.Errorf("processors %d, warnings %q; want the 2-rank run and one warning of the other files", r.Processors, r.Warnings)
			}
		})
	}
}
