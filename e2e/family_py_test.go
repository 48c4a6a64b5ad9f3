package e2e

import (
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// family is one MPI API family of issue 22 as a test case: its name (the
// program's argument), the MPI functions ranks 0 and 1 must have called
// (so that a family the tracer missed does not pass as matched), how many
// threads at least rank 1 called MPI from, and what its report must show
// beyond nothing unmatched, no stall and no warning.
type family struct {
	name    string
	calls   []string
	threads int
	check   func(t *testing.T, out string, r *report.Report)
}

// families are the families every language's program runs.
var families = []family{
	{name: "requests", calls: []string{
		"MPI_File_iwrite_at", "MPI_File_iread_at", "MPI_File_iwrite_at_all", "MPI_File_iread_at_all",
		"MPI_File_iwrite", "MPI_File_iread", "MPI_File_iwrite_all", "MPI_File_iread_all",
		"MPI_Grequest_start", "MPI_Grequest_complete", "MPI_Cancel", "MPI_Comm_idup",
		"MPI_Ibarrier", "MPI_Iallreduce", "MPI_Ibcast", "MPI_Iallgather", "MPI_Ialltoall", "MPI_Igather", "MPI_Iscan",
		"MPI_Send_init", "MPI_Recv_init", "MPI_Startall", "MPI_Rput", "MPI_Rget", "MPI_Raccumulate",
		"MPI_Wait", "MPI_Waitall", "MPI_Test"}},
	{name: "intercomm", calls: []string{
		"MPI_Intercomm_create", "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Sendrecv",
		"MPI_Bcast", "MPI_Gather", "MPI_Scatter", "MPI_Reduce", "MPI_Allreduce", "MPI_Allgather",
		"MPI_Alltoall", "MPI_Barrier", "MPI_Intercomm_merge"}},
	{name: "threads", threads: 3, check: checkThreadedLateSender, calls: []string{
		"MPI_Send", "MPI_Irecv", "MPI_Wait", "MPI_Allreduce"}},
	{name: "pickle5", calls: []string{
		"MPI_Issend", "MPI_Mprobe", "MPI_Mrecv", "MPI_Improbe", "MPI_Probe", "MPI_Recv"}},
}

// TestFamiliesPython traces testdata/apps/families.py, the families
// written with Debian's python3-mpi4py (request-creating calls of every
// kind, intercommunicators, threads, mpi4py's pickle-5 utilities), one
// run per family at 4 ranks: each is analysed with nothing unmatched, no
// stall and no warning. Open MPI only: Debian builds python3-mpi4py
// against Open MPI and ships no MPICH binding of it.
func TestFamiliesPython(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needMPI4Py(t)
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			out := tracePython(t, m, dir, []string{"TMPDIR=" + dir}, 4, "families.py", f.name)
			checkFamily(t, f, dir, "python3", out)
		})
	}
}

// checkFamily analyses the traces of app in dir, the run of family f
// whose output is out.
func checkFamily(t *testing.T, f family, dir, app, out string) {
	t.Helper()
	calls := map[string]bool{}
	for rk := 0; rk < 2; rk++ {
		byThread := traceCallsByThread(t, filepath.Join(dir, app+"."+strconv.Itoa(rk)+".trc"))
		for _, n := range byThread {
			for f := range n {
				calls[f] = true
			}
		}
		if threads := len(byThread); rk == 1 && threads < f.threads {
			t.Errorf("%s: rank 1 called MPI from %d threads, want %d", f.name, threads, f.threads)
		}
	}
	for _, c := range f.calls {
		if !calls[c] {
			t.Errorf("%s: ranks 0 and 1 never called %s", f.name, c)
		}
	}
	r, stderr := analyse(t, dir, app)
	checkClean(t, r, stderr, false, -1)
	if f.check != nil {
		f.check(t, out, r)
	}
}

// checkThreadedLateSender checks the threads family (the same exchange in
// every language as testdata/apps/threads.c, see TestThreads): Real Sync
// on the even ranks is thread A's wait for its message, which the program
// measured and printed (rank 0: rank 1's 0.2 s sleep; rank 2: ≈ 0).
func checkThreadedLateSender(t *testing.T, out string, r *report.Report) {
	t.Helper()
	waited := map[int]float64{}
	for _, m := range waitedRE.FindAllStringSubmatch(out, -1) {
		rk, _ := strconv.Atoi(m[1])
		waited[rk], _ = strconv.ParseFloat(m[2], 64)
	}
	if len(waited) != 2 {
		t.Fatalf("threads: the program reported the waits of %d ranks, want 2:\n%s", len(waited), out)
	}
	if waited[0] < 0.15 {
		t.Errorf("threads: rank 0 waited %.6f s, far less than rank 1's 0.2 s sleep", waited[0])
	}
	whole := r.Intervals[0]
	for _, rk := range []int{0, 2} {
		got := rankOf(t, &whole, rk).RealSync
		t.Logf("rank %d: Real Sync %.6f s, waited %.6f s", rk, got, waited[rk])
		if math.Abs(got-waited[rk]) > tol {
			t.Errorf("threads: rank %d: Real Sync %.6f s, want %.6f ± %.2f (the wait the program measured)", rk, got, waited[rk], tol)
		}
	}
}
