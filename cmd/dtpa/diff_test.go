package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report/diff"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// ring writes a run of n ranks into a temporary directory: in interval 1
// each rank computes (rank+1) ms and then sends 8 bytes to the next rank
// and receives from the previous one with MPI_Sendrecv.
func ring(t *testing.T, n int) string {
	t.Helper()
	run := tracetest.NewRun(n)
	for r := 0; r < n; r++ {
		k := run.Rank(r)
		k.Init(us).Pcontrol(100, 1).Compute(int64(r+1) * ms)
		k.Sendrecv(int32((r+1)%n), 0, 8, int32((r+n-1)%n), 0, 8, 10*us)
		k.Pcontrol(101, 1).Finalize(us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "ring"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEndToEndDiff compares the late-sender run (2 ranks) with a ring of
// 4: the intervals are matched by path, each side keeps its own processor
// count, and the call sites of one run only are listed with Comm 0 in the
// other.
func TestEndToEndDiff(t *testing.T) {
	a, b := lateSender(t), ring(t, 4)
	out, errOut, code := dtpa(t, "--diff", "--json", a+"/app", b+"/ring")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d diff.Diff
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.A.Task != "app" || d.A.Processors != 2 || d.B.Task != "ring" || d.B.Processors != 4 {
		t.Errorf("runs %+v %+v", d.A, d.B)
	}
	if len(d.Intervals) != 2 || len(d.Intervals[1].Path) != 1 || d.Intervals[1].Path[0] != 1 {
		t.Fatalf("intervals %+v", d.Intervals)
	}
	iv := d.Intervals[1]
	if iv.A.Processors != 2 || iv.B.Processors != 4 || !near(iv.A.RealSync, 0.2) {
		t.Errorf("interval 1: processors %d, %d; A's Real sync %v (want 0.2)", iv.A.Processors, iv.B.Processors, iv.A.RealSync)
	}
	// Interval 1 has A's MPI_Send and MPI_Recv and B's MPI_Sendrecv; none
	// is in both, and the 0.2 s wait in MPI_Recv changed most.
	if len(iv.SRC) != 3 || iv.SRC[0].Function != "MPI_Recv" || iv.SRC[0].CommB != 0 || iv.SRC[0].IDB != 0 {
		t.Errorf("call sites %+v", iv.SRC)
	}

	out, errOut, code = dtpa(t, "--diff", "--dir", a, "app", "app", "1")
	if code != 0 {
		t.Fatalf("text, same run twice, level 1: exit %d: %s", code, errOut)
	}
	for _, s := range []string{"A: app, 2 processors\nB: app, 2 processors\n", "INTERVAL (whole program)", "INTERVAL 1", "Real sync"} {
		if !strings.Contains(out, s) {
			t.Errorf("text comparison lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "Call sites whose Comm changed") {
		t.Errorf("a run compared with itself lists changed call sites:\n%s", out)
	}
}

func TestDiffUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--diff", "a"},
		{"--diff", "a", "b", "c"},
		{"--diff", "a", "b", "1", "2"},
		{"--diff", "--html", "a", "b"},
	} {
		out, errOut, code := dtpa(t, args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "dtpa: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	_, errOut, code := dtpa(t, "--diff", "--dir", t.TempDir(), "a", "b")
	if code != exitError || !strings.Contains(errOut, `dtpa: a: no traces of "a"`) {
		t.Errorf("missing run: exit %d, stderr %q", code, errOut)
	}
}
