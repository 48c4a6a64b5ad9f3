package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/report"
)

// TestDemoSolver traces the demo program (testdata/apps/solver.c, what
// `make demo` shows) under both MPIs, once through dtrun and once linked
// with dtcc and started by the plain launcher, and checks what does not
// depend on timing: no warning, the identities, the exact call counts of
// the main loop (interval 1), the source line of its MPI_Waitall point;
// and what the solver's imbalance makes hold in every run, on a loaded
// machine too: rank 3 computes longest and is the late rank
// (checkDemoCulprit), and the text report opens with findings naming that
// point and rank 3 (checkDemoFindings).
//
// solver.c's edge ranks exchange with MPI_PROC_NULL: under MPICH the
// status of such a receive is unset, and requests completed at once share
// one handle under both MPIs — this test caught the analyzer matching a
// PROC_NULL receive by its status.
func TestDemoSolver(t *testing.T) {
	waitallLine := sourceLine(t, filepath.Join(root, "testdata", "apps", "solver.c"), "MPI_Waitall(")
	for _, m := range impls {
		for _, how := range []string{"dtrun", "dtcc"} {
			t.Run(m.name+"/"+how, func(t *testing.T) {
				needMPI(t, m)
				// One run, checked strictly: rank 3 owns four times the
				// cells of each other rank and a step's relaxation takes
				// milliseconds (solver.c, built with -O2 as make demo
				// builds it), a margin that a rank descheduled for long
				// on a loaded machine does not make up, so rank 3
				// computes longest (below) and is the late rank
				// (checkDemoCulprit) in every run.
				dir := t.TempDir()
				src := filepath.Join(root, "testdata", "apps", "solver.c")
				if how == "dtrun" {
					exe := compile(t, m, dir, "solver")
					trace(t, m, dir, nil, 4, exe)
				} else {
					run(t, dir, []string{"DT_MPICC=" + m.cc}, time.Minute,
						filepath.Join(root, "bin", "dtcc"), "-g", "-O2", "-o", "solver", src)
					args := append([]string{"-np", "4"}, m.args...)
					run(t, dir, nil, 2*time.Minute, m.mpirun, append(args, "./solver")...)
				}
				r, stderr := analyse(t, dir, "solver")
				if len(r.Warnings) != 0 || stderr != "" {
					t.Errorf("warnings %q, stderr %q", r.Warnings, stderr)
				}
				checkInvariants(t, r, 4)
				var loop *report.Interval
				for i := range r.Intervals {
					if len(r.Intervals[i].Path) == 1 && r.Intervals[i].Path[0] == 1 {
						loop = &r.Intervals[i]
					}
				}
				if loop == nil {
					t.Fatal("no interval 1 (the main loop)")
				}
				heavy, prod := -1, map[int]float64{}
				for _, k := range loop.Ranks {
					prod[k.Rank] = k.ProductiveTime
					if heavy < 0 || k.ProductiveTime > prod[heavy] {
						heavy = k.Rank
					}
				}
				t.Logf("productive time in the main loop, by rank: %v", prod)
				if heavy != 3 {
					t.Errorf("rank %d computed longest in the main loop, want rank 3 (four times the cells)", heavy)
				}
				// 200 steps; ranks 1 and 2 exchange with two neighbours,
				// ranks 0 and 3 with one (the other is MPI_PROC_NULL,
				// not counted); an Allreduce every 10 steps.
				mn := loop.Main
				if mn.SendNumber != 1200 || mn.ReceiveNumber != 1200 || mn.WaitNumber != 800 || mn.CollectiveNumber != 20 {
					t.Errorf("counts: send %d receive %d wait %d collective %d; want 1200 1200 800 20",
						mn.SendNumber, mn.ReceiveNumber, mn.WaitNumber, mn.CollectiveNumber)
				}
				checkSolverProfile(t, r, loop, m.name)
				checkDemoCulprit(t, r, loop)
				found := false
				for _, p := range loop.SRC {
					if p.Function == "MPI_Waitall" && len(p.Stack) > 0 {
						found = true
						if f := p.Stack[0]; filepath.Base(f.File) != "solver.c" || f.Line != waitallLine {
							t.Errorf("MPI_Waitall point at %s:%d, want solver.c:%d", f.File, f.Line, waitallLine)
						}
					}
				}
				if !found {
					t.Error("no MPI_Waitall point with a stack")
				}
				checkDemoFindings(t, dir, waitallLine)
			})
		}
	}
}

// sourceLine is the first line of file containing s.
func sourceLine(t *testing.T, file, s string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), s) {
			return n
		}
	}
	t.Fatalf("%s not found in %s", s, file)
	return 0
}

// checkSolverProfile checks the profile views of the solver's run: one
// host, and in the main loop 200 messages of one double (8 bytes) from
// each rank to each neighbour, all of them intra-node, and the calls per
// function (4 ranks × 200 steps: two MPI_Isend and two MPI_Irecv a step,
// MPI_PROC_NULL ones included, one MPI_Waitall; MPI_Allreduce every 10
// steps).
func checkSolverProfile(t *testing.T, r *report.Report, loop *report.Interval, impl string) {
	t.Helper()
	if len(r.Hosts) != 1 || len(r.Hosts[0].Ranks) != 4 {
		t.Errorf("hosts %+v, want one holding ranks 0-3", r.Hosts)
	}
	lib := map[string]string{"openmpi": "Open MPI", "mpich": "MPICH"}[impl]
	if ru := r.Run; ru == nil || !strings.Contains(ru.MPI, lib) || len(ru.Command) == 0 ||
		filepath.Base(ru.Command[0]) != "solver" || ru.Start == "" || len(ru.Ranks) != 4 || ru.Events <= 0 {
		t.Errorf("run facts %+v", ru)
	}
	m := loop.CommMatrix
	if m == nil || len(m.Messages) != 4 {
		t.Fatalf("comm matrix %+v, want 4×4", m)
	}
	for s := range 4 {
		for d := range 4 {
			var want int64
			if d == s-1 || d == s+1 {
				want = 200
			}
			if m.Messages[s][d] != want || m.Bytes[s][d] != 8*want {
				t.Errorf("matrix [%d][%d]: %d messages, %d bytes; want %d, %d", s, d, m.Messages[s][d], m.Bytes[s][d], want, 8*want)
			}
		}
	}
	if tr := loop.Traffic; tr == nil || tr.IntraNode.Messages != 1200 || tr.IntraNode.Bytes != 9600 || tr.InterNode.Messages != 0 {
		t.Errorf("traffic %+v, want 1200 messages 9600 bytes intra-node, none inter-node", tr)
	}
	calls := map[string]int64{}
	for _, f := range loop.Functions {
		calls[f.Function] = f.Calls
	}
	for fn, want := range map[string]int64{"MPI_Isend": 1600, "MPI_Irecv": 1600, "MPI_Waitall": 800, "MPI_Allreduce": 80} {
		if calls[fn] != want {
			t.Errorf("%s: %d calls, want %d", fn, calls[fn], want)
		}
	}
}
