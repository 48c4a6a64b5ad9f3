package e2e

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// TestMPI4Py traces a Python MPI program (testdata/apps/late_sender.py,
// Debian's python3-mpi4py, which links Open MPI) under dtrun at 4 ranks.
// mpi4py loads MPI after the tracer's stub and calls MPI_Initialized
// before MPI_Init_thread (the stub crashed on that once), and receives
// pickled objects with MPI_Mprobe + MPI_Mrecv (the analyzer matched
// nothing there once). Rank 0 sleeps 0.2 s before sending to rank 1, which
// waits in MPI_Mprobe: Real Sync on rank 1 is 0.2 s; 0.03 s of tolerance
// covers a late wake-up of the sleeping rank on this oversubscribed
// machine (the same bound as the C ground truth).
func TestMPI4Py(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needMPI4Py(t)
	dir := t.TempDir()
	tracePython(t, m, dir, nil, 4, "late_sender.py")
	r, stderr := analyse(t, dir, "python3")
	if len(r.Warnings) != 0 || stderr != "" {
		t.Errorf("warnings %q, stderr %q", r.Warnings, stderr)
	}
	checkInvariants(t, r, 4)
	whole := r.Intervals[0]
	if len(whole.Ranks) != 4 {
		t.Fatalf("%d ranks in the report", len(whole.Ranks))
	}
	if rs := whole.Ranks[1].RealSync; math.Abs(rs-0.2) > 0.03 {
		t.Errorf("Real Sync on rank 1 = %.6f s, want 0.2 ± 0.03", rs)
	}
	if n := whole.Ranks[1].ReceiveNumber; n < 1 {
		t.Errorf("rank 1 received %d messages", n)
	}
	// Interval 1 (MPI.Pcontrol(100001) … MPI.Pcontrol(101001)) holds the
	// late sender, entered once by every rank.
	if len(r.Intervals) != 2 {
		t.Fatalf("%d intervals, want the program and interval 1", len(r.Intervals))
	}
	in := r.Intervals[1]
	if len(in.Path) != 1 || in.Path[0] != 1 || in.ExeCount != 1 || len(in.Ranks) != 4 {
		t.Fatalf("interval %v: exe count %d, %d ranks", in.Path, in.ExeCount, len(in.Ranks))
	}
	if rs := in.Ranks[1].RealSync; math.Abs(rs-0.2) > 0.03 {
		t.Errorf("Real Sync on rank 1 in interval 1 = %.6f s, want 0.2 ± 0.03", rs)
	}
	// mpi4py's allreduce of a Python object is point-to-point: MPI_Send
	// at its line too.
	checkPythonLines(t, whole.SRC, "late_sender.py", map[string][]string{
		"MPI_Barrier": {"barrier-before", "barrier-after"}, "MPI_Send": {"send", "allreduce"},
		"MPI_Mprobe": {"recv"}, "MPI_Mrecv": {"recv"}})
}

// checkPythonLines checks that the SRC points of each function of want
// are one per marked line of testdata/apps/script ("# @name"), with the
// line as their innermost frame: mpi4py's calls have the script's Python
// frames as call stack, not the interpreter's C frames.
func checkPythonLines(t *testing.T, src []report.SRC, script string, want map[string][]string) {
	t.Helper()
	mark := pyMarkers(t, script)
	for fn, names := range want {
		var wl, gl []int
		for _, n := range names {
			if mark[n] == 0 {
				t.Fatalf("%s: no marker @%s", script, n)
			}
			wl = append(wl, mark[n])
		}
		for _, p := range src {
			if p.Function != fn {
				continue
			}
			if len(p.Stack) == 0 || filepath.Base(p.Stack[0].File) != script {
				t.Errorf("SRC %d %s: stack %+v, want %s:line first", p.ID, fn, p.Stack, script)
				continue
			}
			gl = append(gl, p.Stack[0].Line)
		}
		slices.Sort(wl)
		slices.Sort(gl)
		if !slices.Equal(gl, wl) {
			t.Errorf("%s: SRC points at lines %v of %s, want %v", fn, gl, script, wl)
		}
	}
}

// pyMarkers maps each "# @name" marker of testdata/apps/script to its line.
func pyMarkers(t *testing.T, script string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "testdata", "apps", script))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for i, l := range strings.Split(string(b), "\n") {
		if _, tag, ok := strings.Cut(l, "# @"); ok {
			m[strings.TrimSpace(tag)] = i + 1
		}
	}
	return m
}

// TestCtypesOneSite traces testdata/apps/ctypes_site.py, which calls
// MPI_Barrier 3 times and MPI_Comm_rank 5 times through ctypes from one
// line: both functions have one call stack, libffi's and _ctypes' C
// frames, then the script's line (a call from C code below Python has its
// C frames up to the interpreter, then the Python frames). They are two
// SRC points with that stack, each with its own calls (they were one
// point, named after the last function, holding all 8).
func TestCtypesOneSite(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needMPI4Py(t)
	dir := t.TempDir()
	tracePython(t, m, dir, nil, 2, "ctypes_site.py")
	r, _ := analyse(t, dir, "python3")
	checkInvariants(t, r, 2)
	var barrier, rank *report.SRC
	for i := range r.Intervals[0].SRC {
		p := &r.Intervals[0].SRC[i]
		if len(p.Ranks) != 2 {
			continue
		}
		n0, n1 := p.Ranks[0].ExeCount, p.Ranks[1].ExeCount
		switch {
		case p.Function == "MPI_Barrier" && n0 == 3 && n1 == 3:
			barrier = p
		case p.Function == "MPI_Comm_rank" && n0 == 5 && n1 == 5:
			rank = p
		}
	}
	if barrier == nil || rank == nil {
		for _, p := range r.Intervals[0].SRC {
			t.Logf("SRC %d %s: %+v stack %+v", p.ID, p.Function, p.Ranks, p.Stack)
		}
		t.Fatalf("no MPI_Barrier point with 3 calls per rank and MPI_Comm_rank point with 5 (ctypes): %v, %v", barrier, rank)
	}
	if !slices.Equal(barrier.Stack, rank.Stack) {
		t.Errorf("the two points' stacks differ: %+v and %+v (the test's premise: one line)", barrier.Stack, rank.Stack)
	}
	st := barrier.Stack
	line := markers(t, filepath.Join(root, "testdata", "apps", "ctypes_site.py"))["@call"]
	if n := len(st); n < 2 || st[n-1].Function != "<module>" || filepath.Base(st[n-1].File) != "ctypes_site.py" || st[n-1].Line != line ||
		slices.ContainsFunc(st[:n-1], func(f report.Frame) bool { return f.File != "" || strings.HasPrefix(f.Function, "python3") }) {
		t.Errorf("stack %+v: want C frames of libffi and _ctypes, then <module> at ctypes_site.py:%d", st, line)
	}
}
