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
// findings, naming the loss the README describes: Real Sync in
// MPI_Waitall at solver.c:waitallLine, and rank 3 (which owns 50 % more
// cells) as the one with the most productive work.
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
		"mostly Real Sync in MPI_Waitall at solver.c:" + strconv.Itoa(waitallLine) + ";",
		"rank 3 has the most productive work",
	} {
		if !strings.Contains(head, s) {
			t.Errorf("the report does not open with %q:\n%s", s, head)
		}
	}
}
