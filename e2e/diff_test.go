package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/report/diff"
)

// TestDiffDemo traces the demo solver at 2 and at 4 ranks and compares the
// runs with dtpa --diff: each side keeps its processor count, the main
// loop (interval 1) is matched, its call counts are the solver's (200
// steps: 2(n−1) sends per step over n ranks, an Allreduce every 10
// steps), and its MPI_Waitall at solver.c's line is one call site in both
// runs. dtrun's closing summary names the traces of each run.
func TestDiffDemo(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	waitallLine := sourceLine(t, filepath.Join(root, "testdata", "apps", "solver.c"), "MPI_Waitall(")
	base := t.TempDir()
	for _, np := range []int{2, 4} {
		dir := filepath.Join(base, "np"+string(rune('0'+np)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		exe := compile(t, m, dir, "solver")
		out := trace(t, m, dir, nil, np, exe)
		want := "dtrun: " + string(rune('0'+np)) + " traces of solver in " + dir + ", "
		if !strings.Contains(out, want) || !strings.Contains(out, "analyse with: dtpa solver\n") || strings.Contains(out, "dtrun: warning") {
			t.Errorf("dtrun at %d ranks does not end with %q…:\n%s", np, want, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--diff", "--json", "np2/solver", "np4/solver")
	cmd.Dir = base
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dtpa --diff: %v", err)
	}
	var d diff.Diff
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	if d.A.Processors != 2 || d.B.Processors != 4 {
		t.Errorf("processors %d, %d; want 2, 4", d.A.Processors, d.B.Processors)
	}
	var loop *diff.Interval
	for i := range d.Intervals {
		if p := d.Intervals[i].Path; len(p) == 1 && p[0] == 1 {
			loop = &d.Intervals[i]
		}
	}
	if loop == nil || loop.A == nil || loop.B == nil {
		t.Fatalf("interval 1 not in both runs: %+v", d.Intervals)
	}
	// Sends per step: 2 at 2 ranks, 6 at 4; 200 steps.
	if loop.A.SendNumber != 400 || loop.B.SendNumber != 1200 || loop.A.CollectiveNumber != 20 || loop.B.CollectiveNumber != 20 {
		t.Errorf("interval 1: sends %d, %d (want 400, 1200); collectives %d, %d (want 20, 20)",
			loop.A.SendNumber, loop.B.SendNumber, loop.A.CollectiveNumber, loop.B.CollectiveNumber)
	}
	found := false
	for _, s := range loop.SRC {
		if s.Function == "MPI_Waitall" {
			found = true
			if filepath.Base(s.File) != "solver.c" || s.Line != waitallLine || s.IDA == 0 || s.IDB == 0 {
				t.Errorf("MPI_Waitall compared as %+v; want solver.c:%d in both runs", s, waitallLine)
			}
		}
	}
	if !found {
		t.Errorf("MPI_Waitall not among the changed call sites: %+v", loop.SRC)
	}
}
