package e2e

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
)

// TestHPCC traces the HPC Challenge benchmark (Debian package hpcc, built
// with Open MPI) at 4 ranks on a small problem (testdata/apps/hpccinf.txt:
// HPL N=200 on a 2×2 grid; the whole suite runs ~2 s here), with and
// without clock skew, and checks that the analysis is sane: hpcc itself
// passed, every rank is present, no warning (no lost events, no damaged
// trace, no unmatched message or collective), and the identities of every
// interval hold. hpcc makes 65 000+ MPI calls per rank of every kind
// (Testany polling, Sendrecv, persistent-free nonblocking exchanges,
// cancelled receives, collectives of count 0, derived datatypes, split
// communicators): what hand-written programs do not think of.
//
// hpcc is installed by `make test` (scripts/deps.sh --test); elsewhere the
// test skips without it, under CI it fails.
func TestHPCC(t *testing.T) {
	eachRealRun(t, "hpcc", "hpcc", "hpccinf.txt", func(t *testing.T, dir string, skew bool, trace func(args ...string) string) {
		start := time.Now()
		trace()
		t.Logf("traced run: %v", time.Since(start).Round(time.Millisecond))
		if skew {
			checkSkew(t, dir, "hpcc", 4, injected)
		}
		out, err := os.ReadFile(filepath.Join(dir, "hpccoutf.txt"))
		if err != nil {
			t.Fatalf("hpcc wrote no hpccoutf.txt: %v", err)
		}
		for _, s := range []string{"End of HPC Challenge tests.", "0 tests completed and failed residual checks."} {
			if !strings.Contains(string(out), s) {
				t.Errorf("hpccoutf.txt lacks %q", s)
			}
		}
		r, stderr := analyse(t, dir, "hpcc")
		checkWarnings(t, r, stderr, skew)
		checkInvariants(t, r, 4)
		checkDtpaMPI(t, dir, "hpcc")
		w := r.Intervals[0].Main
		t.Logf("whole program: %.3f s × 4, efficiency %.4f, %d sends, %d receives, %d waits, %d collectives, Real Sync %.3f s, Potential Sync %.3f s",
			w.ExecutionTime, w.Efficiency, w.SendNumber, w.ReceiveNumber, w.WaitNumber, w.CollectiveNumber, w.RealSync, w.PotentialSync)
		if w.SendNumber == 0 || w.ReceiveNumber == 0 || w.CollectiveNumber == 0 || w.WaitNumber == 0 {
			t.Errorf("whole program: sends %d, receives %d, waits %d, collectives %d: all must be > 0",
				w.SendNumber, w.ReceiveNumber, w.WaitNumber, w.CollectiveNumber)
		}
		// Every receive of hpcc matches a send but the cancelled
		// ones (4 MPI_Cancel per rank, of receives): the counts
		// differ by at most those.
		if d := w.ReceiveNumber - w.SendNumber; d < 0 || d > 16 {
			t.Errorf("whole program: %d receives for %d sends", w.ReceiveNumber, w.SendNumber)
		}
	})
}

// TestLAMMPS traces LAMMPS (Debian package lammps, built with Open MPI) at 4
// ranks on the classic Lennard-Jones melt, small and short
// (testdata/apps/in.melt: 4000 atoms, 200 steps, under a second), with and
// without clock skew. Besides the sanity of TestHPCC, dtpa must agree with
// LAMMPS's own timing: the loop LAMMPS times lies inside the whole program,
// and the force and neighbour-list computations it reports (Pair, Neigh:
// no MPI calls in them) are part of what dtpa calls productive.
//
// lammps (~70 MB) is installed by `make test` like hpcc.
func TestLAMMPS(t *testing.T) {
	eachRealRun(t, "lmp", "lammps", "in.melt", func(t *testing.T, dir string, skew bool, trace func(args ...string) string) {
		out := trace("-in", "in.melt", "-log", "none", "-echo", "none")
		own := parseLAMMPSTiming(t, out)
		if skew {
			checkSkew(t, dir, "lmp", 4, injected)
		}
		r, stderr := analyse(t, dir, "lmp")
		checkWarnings(t, r, stderr, skew)
		checkInvariants(t, r, 4)
		checkDtpaMPI(t, dir, "lmp")
		w := r.Intervals[0]
		var prod float64
		for _, rk := range w.Ranks {
			prod += rk.ProductiveTime
		}
		prod /= float64(len(w.Ranks))
		t.Logf("LAMMPS: loop %.4f s, Pair %.4f s, Neigh %.4f s, Comm %.4f s (averages); dtpa: execution %.4f s, productive %.4f s, communications %.4f s (averages)",
			own["Loop"], own["Pair"], own["Neigh"], own["Comm"], w.Main.ExecutionTime, prod, w.Main.Communications/4)
		// A millisecond of slack: the two read different clocks at
		// slightly different moments.
		if own["Loop"] > w.Main.ExecutionTime+1e-3 {
			t.Errorf("LAMMPS's loop (%.4f s) outlasts the whole program (%.4f s)", own["Loop"], w.Main.ExecutionTime)
		}
		if pn := own["Pair"] + own["Neigh"]; prod < pn-1e-3 {
			t.Errorf("productive time %.4f s per rank < LAMMPS's Pair + Neigh %.4f s (computation without MPI calls)", prod, pn)
		}
		if w.Main.InsufficientParallelism != 0 || len(r.Intervals) != 1 {
			t.Errorf("%d intervals, insufficient parallelism %v, in a program without MPI_Pcontrol", len(r.Intervals), w.Main.InsufficientParallelism)
		}
	})
}

// TestNWChem traces NWChem (Debian's nwchem-openmpi, Fortran), the SCF
// energy of water in a 6-31G* basis (testdata/apps/h2o.nw), at 4 ranks,
// aligned and with injected skew. NWChem's Global Arrays run on ARMCI over
// MPI-3 one-sided communication (MPI_Win_allocate, MPI_Win_lock_all,
// MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op and the flushes:
// tens of thousands of calls per rank) besides its collectives and
// communicators made from groups. The energy must be the one NWChem
// computes untraced, −76.010577878 hartree to 1e-8, the analysis clean,
// and the one-sided calls in the trace. nwchem-openmpi (~65 MB) is
// installed by `make test` like hpcc.
func TestNWChem(t *testing.T) {
	eachRealRun(t, "nwchem.openmpi", "nwchem-openmpi", "h2o.nw", func(t *testing.T, dir string, skew bool, trace func(args ...string) string) {
		checkEnergy(t, trace("h2o.nw"), nwchemEnergyRE, -76.010577878, 1e-8)
		checkRealReport(t, dir, skew, "nwchem", "nwchem",
			"MPI_Win_allocate", "MPI_Win_lock_all", "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op", "MPI_Win_flush_all")
	})
}

// TestQuantumESPRESSO traces pw.x (Fortran; FFTW's and its own
// all-to-all transposes, ScaLAPACK) on a silicon SCF. The aligned run splits
// the k-points over two pools (MPI_Comm_split, MPI_Gatherv); the skewed run
// distributes the plane waves over all four ranks and diagonalizes with
// ScaLAPACK on a 2×2 grid (MPI_Sendrecv_replace, MPI_Rsend, MPI_Testall,
// derived datatypes by the ten thousand). The energy is the untraced one;
// the report is clean, and named by the program's own name, pw.x (its traces
// are pw.<rank>.trc).
func TestQuantumESPRESSO(t *testing.T) {
	eachRealRun(t, "pw.x", "quantum-espresso quantum-espresso-data", "si.in", func(t *testing.T, dir string, skew bool, trace func(args ...string) string) {
		args, want := []string{"-nk", "2"}, []string{"MPI_Alltoall", "MPI_Alltoallv", "MPI_Comm_split", "MPI_Gatherv"}
		if skew {
			args, want = []string{"-nk", "1", "-nd", "4"}, []string{"MPI_Alltoall", "MPI_Sendrecv_replace", "MPI_Rsend", "MPI_Testall", "MPI_Type_vector"}
		}
		checkEnergy(t, trace(append(args, "-in", "si.in")...), qeEnergyRE, -15.85081793, 2e-8)
		checkRealReport(t, dir, skew, "pw.x", "pw", want...)
	})
}

var qeEnergyRE = regexp.MustCompile(`(?m)^!\s+total energy\s+=\s+(-?[0-9.]+) Ry`)

// TestABINIT traces ABINIT (Fortran through mpif.h; k-points spread over
// the ranks) on a silicon ground state: ten k-points on four ranks, so the
// load is uneven by construction. It waits on a null request after each
// MPI_Allreduce that stands in for a nonblocking one. The energy is the
// untraced one and the report is clean.
func TestABINIT(t *testing.T) {
	eachRealRun(t, "abinit", "abinit abinit-data", "si.abi", func(t *testing.T, dir string, skew bool, trace func(args ...string) string) {
		trace("si.abi")
		out, err := os.ReadFile(filepath.Join(dir, "si.abo"))
		if err != nil {
			t.Fatal(err)
		}
		checkEnergy(t, string(out), abinitEnergyRE, -10.898171661, 2e-9)
		r := checkRealReport(t, dir, skew, "abinit", "abinit", "MPI_Allreduce", "MPI_Send", "MPI_Recv", "MPI_Wait", "MPI_Attr_get")
		iv := r.Intervals[0]
		if iv.Main.WaitNumber == 0 {
			t.Errorf("Wait number 0: the waits on null requests are wait calls")
		}
	})
}

var abinitEnergyRE = regexp.MustCompile(`(?m)^\s+etotal\s+(-?[0-9.]+E[-+][0-9]+)`)

// checkEnergy checks the energy re captures in a program's output out
// against the untraced run's, want, to tol.
func checkEnergy(t *testing.T, out string, re *regexp.Regexp, want, tol float64) {
	t.Helper()
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no energy in the program's output:\n%s", out)
	}
	if e, _ := strconv.ParseFloat(m[1], 64); math.Abs(e-want) > tol {
		t.Errorf("energy %v, want %v", e, want)
	}
}

// checkRealReport checks a 4-rank run of a real program in dir: the
// injected skew its traces record when skewed, the report of app (as the
// user names it; the traces are traces.<rank>.trc) clean with one
// interval, and calls of each of fns in it. It returns the report.
func checkRealReport(t *testing.T, dir string, skew bool, app, traces string, fns ...string) *report.Report {
	t.Helper()
	if skew {
		checkSkew(t, dir, traces, 4, injected)
	}
	r, stderr := analyse(t, dir, app)
	checkClean(t, r, stderr, skew, 1)
	for _, fn := range fns {
		if f := function(&r.Intervals[0], fn); f == nil || f.Calls == 0 {
			t.Errorf("no %s in the trace", fn)
		}
	}
	return r
}

// TestDOLFINx traces a FEniCSx program (testdata/apps/poisson_dolfinx.py)
// at 4 ranks: its nodal error must be the solver's tolerance (a wrong
// message would show), the report clean, and its MPI usage there: the
// nonblocking consensus of the mesh's distribution (MPI_Issend,
// MPI_Iprobe, MPI_Ibarrier), neighbourhood collectives on distributed
// graphs, persistent requests (PETSc); the call sites of calls from
// PETSc and dolfinx's C++ end in the script's lines.
func TestDOLFINx(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	if err := exec.Command(python, "-c", "import dolfinx").Run(); err != nil {
		testenv.Missing(t, "DOLFINx not installed (apt-get install --no-install-recommends python3-dolfinx-real)")
	}
	dir := t.TempDir()
	// FFCx compiles the forms with the C compiler on first use: each run
	// gets a cache of its own, so that the ranks' JIT is part of the run.
	out := tracePython(t, m, dir, []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}, 4, "poisson_dolfinx.py")
	mm := dolfinxErrorRE.FindStringSubmatch(out)
	if mm == nil {
		t.Fatalf("no nodal error in the program's output:\n%s", out)
	}
	if e, _ := strconv.ParseFloat(mm[1], 64); e > 1e-8 {
		t.Errorf("max nodal error %v, want the solver's tolerance", e)
	}
	r := checkRealReport(t, dir, false, "python3", "python3",
		"MPI_Issend", "MPI_Ibarrier", "MPI_Iprobe", "MPI_Dist_graph_create_adjacent", "MPI_Neighbor_alltoallv", "MPI_Startall", "MPI_Waitsome")
	// A call PETSc or dolfinx's C++ makes has their C frames, then the
	// Python frames, down to the script's own line.
	mixed := 0
	for _, p := range r.Intervals[0].SRC {
		if len(p.Stack) > 1 && p.Stack[0].File == "" &&
			slices.ContainsFunc(p.Stack[1:], func(f report.Frame) bool { return filepath.Base(f.File) == "poisson_dolfinx.py" }) {
			mixed++
		}
	}
	if mixed == 0 {
		t.Error("no SRC point has C frames, then the script's line")
	}
}

var dolfinxErrorRE = regexp.MustCompile(`poisson: max nodal error ([0-9.e+-]+)`)

var nwchemEnergyRE = regexp.MustCompile(`Total SCF energy =\s+(-?[0-9.]+)`)

// eachRealRun runs body for a third-party program (Debian's builds link
// Open MPI) twice, with aligned clocks and with clockSkew injected, each in
// a fresh directory holding the program's input file from testdata/apps;
// trace runs the program there under dtrun at 4 ranks with the given
// arguments and returns its output. A missing package skips the test (fails
// it under CI).
func eachRealRun(t *testing.T, prog, pkg, input string,
	body func(t *testing.T, dir string, skew bool, trace func(args ...string) string)) {
	m := impls[0]
	needMPI(t, m)
	exe, err := exec.LookPath(prog)
	if err != nil {
		testenv.Missing(t, prog+" not installed (apt-get install --no-install-recommends "+pkg+")")
	}
	in, err := os.ReadFile(filepath.Join(root, "testdata", "apps", input))
	if err != nil {
		t.Fatal(err)
	}
	for _, skew := range []bool{false, true} {
		name := "aligned"
		var env []string
		if skew {
			name = "skewed"
			env = []string{"DT_CLOCK_SKEW=" + clockSkew}
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, input), in, 0o644); err != nil {
				t.Fatal(err)
			}
			trace := func(args ...string) string {
				a := append([]string{"--mpirun", m.mpirun, "-np", "4"}, m.args...)
				return run(t, dir, env, 3*time.Minute, filepath.Join(root, "bin", "dtrun"), append(append(a, exe), args...)...)
			}
			body(t, dir, skew, trace)
		})
	}
}

var (
	lammpsSectionRE = regexp.MustCompile(`(?m)^(Pair|Neigh|Comm|Output|Modify)\s*\|\s*[0-9.e+-]+\s*\|\s*([0-9.e+-]+)`)
	lammpsLoopRE    = regexp.MustCompile(`Loop time of ([0-9.e+-]+) on 4 procs`)
)

// parseLAMMPSTiming reads LAMMPS's "MPI task timing breakdown" (average
// seconds per section) and its loop time from its output.
func parseLAMMPSTiming(t *testing.T, out string) map[string]float64 {
	t.Helper()
	own := map[string]float64{}
	for _, m := range lammpsSectionRE.FindAllStringSubmatch(out, -1) {
		own[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	m := lammpsLoopRE.FindStringSubmatch(out)
	if m == nil || len(own) < 3 {
		t.Fatalf("no LAMMPS timing in its output:\n%s", out)
	}
	own["Loop"], _ = strconv.ParseFloat(m[1], 64)
	return own
}
