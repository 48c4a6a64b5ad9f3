// Package e2e runs real MPI programs under the tracer (bin/dtrun), analyses
// their traces with bin/dtpa --json and checks the reports:
//
//   - TestGroundTruth: testdata/apps/groundtruth.c, 18 scenarios in as
//     many intervals whose characteristics are known by construction,
//     traced at 4 ranks with Open MPI and MPICH, with and without injected
//     clock skew; every figure of every interval is compared with the
//     value derived by hand in groundtruth_test.go (~45–80 s here, most of
//     it MPICH runs repeated when the machine is noisy).
//   - TestHPCC, TestLAMMPS, TestNWChem: real programs from Debian
//     packages on small inputs; the analysis must be sane and
//     warning-free (skip when the package is not installed).
//   - TestHDF5, TestScaLAPACK, TestPETSc, TestBoostMPI: programs that call
//     MPI through libraries (parallel HDF5 over MPI-IO, ScaLAPACK with
//     BLACS, PETSc with hypre and MUMPS, Boost.MPI); their results must be
//     right, the analysis clean, and the I/O bytes and classes known by
//     construction.
//   - TestOpenFOAM, TestFFTWMPI, TestMPI4PyFFT, TestPnetCDF
//     (realapps2_test.go): OpenFOAM's icoFoam, FFTW's MPI transforms,
//     mpi4py-fft and PnetCDF; results as untraced, the analysis clean,
//     the transposes' and I/O bytes known by construction.
//   - TestGROMACS, TestMeep, TestExaML (realapps3_test.go): GROMACS's
//     mdrun (separate PME ranks, a Cartesian grid, OpenMP, replica
//     exchange), a Meep FDTD run and ExaML; results as untraced, the
//     analysis clean, the communication times of GROMACS's and Meep's
//     own accounting.
//   - TestSrun, TestNodes (slurm_test.go, nodes_test.go): jobs that
//     Slurm's srun launches on a one-node cluster of the test's own, and
//     jobs on two nodes emulated with Linux namespaces (Open MPI's
//     mpirun, MPICH's hydra and srun across them): waits known by
//     construction, ranks killed and recovered on the other node, hung
//     jobs interrupted.
//
// Every report passes checkReport (report.Check: the identities of docs/characteristics.md
// §3–§6, Productive Time ≥ 0), those of complete runs checkInvariants.
// bin/ and lib/ must have been built (`make test` builds them first).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
)

// root is the repository root (bin/ and lib/ come from there).
var root = testenv.Root()

// mpiImpl is one MPI implementation the programs are built and run with.
type mpiImpl struct {
	name   string // short name for subtests
	cc     string // compiler wrapper
	mpirun string // launcher dtrun is told to use
	args   []string
	np     string // the launcher's option for the number of ranks: "-np" when ""
	// on is the command prefix that runs dtrun, in dir, where the job is
	// launched (another node: TestNodes); nil: here.
	on func(dir string) []string
}

// impls are the two implementations installed by `make deps`. Four ranks on
// two cores need --oversubscribe with Open MPI (MPICH's hydra allows it).
var impls = []mpiImpl{
	{name: "openmpi", cc: "mpicc.openmpi", mpirun: "mpirun.openmpi", args: []string{"--oversubscribe"}},
	{name: "mpich", cc: "mpicc.mpich", mpirun: "mpiexec.mpich"},
}

var mpiEnv = testenv.MPIEnv

// needMPI skips the test (fails it under CI) when m is not installed, and
// fails it when the tracer and commands have not been built.
func needMPI(t *testing.T, m mpiImpl) {
	t.Helper()
	testenv.NeedCommands(t, m.cc, m.mpirun)
	for _, p := range []string{"bin/dtrun", "bin/dtpa", "lib/libdtpa_preload.so"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Fatalf("%s missing: run make build", p)
		}
	}
}

// compile builds testdata/apps/<name>.c with m's compiler into dir; flags
// (libraries to link) follow the source.
func compile(t *testing.T, m mpiImpl, dir, name string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	src := filepath.Join(root, "testdata", "apps", name+".c")
	// -O0 -g: the programs are about timing, not speed, and call sites
	// should symbolize. The demo solver is built as make demo builds it,
	// with -O2: its imbalance is sized for that.
	opt := "-O0"
	if name == "solver" || name == "segv" {
		// (segv: a crash's stack of optimised code, which keeps no frame
		// pointers.)
		opt = "-O2"
	}
	args := append([]string{"-g", opt, "-o", out, src}, flags...)
	if b, err := exec.Command(m.cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s with %s: %v\n%s", name, m.cc, err, b)
	}
	return out
}

// run runs name args in dir with the MPI environment plus env and returns
// its combined output; a non-zero exit or a timeout fails the test.
func run(t *testing.T, dir string, env []string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), mpiEnv...), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	// A job that hangs is killed whole (launcher and ranks: its own
	// process group), and Run returns even if some child kept the
	// output pipe open, so that one hang fails one test, not the suite.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out after %v\n%s", name, strings.Join(args, " "), timeout, buf.String())
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, buf.String())
	}
	return buf.String()
}

// trace runs the program exe (in dir) at np ranks under bin/dtrun with m's
// launcher; the traces land in dir. It returns the job's output.
func trace(t *testing.T, m mpiImpl, dir string, env []string, np int, exe string, args ...string) string {
	t.Helper()
	npOpt := m.np
	if npOpt == "" {
		npOpt = "-np"
	}
	a := []string{"--mpirun", m.mpirun, npOpt, strconv.Itoa(np)}
	a = append(a, m.args...)
	a = append(a, "./"+filepath.Base(exe))
	a = append(a, args...)
	name := filepath.Join(root, "bin", "dtrun")
	if m.on != nil {
		pre := m.on(dir)
		name, a = pre[0], append(append(pre[1:], name), a...)
	}
	return run(t, dir, env, 2*time.Minute, name, a...)
}

// checkSkew checks that each rank's trace of app in dir records the clock
// skew the tracer injected (DT_CLOCK_SKEW): want maps rank to offset in
// seconds and drift in ppm; other ranks must record none. Without it a
// "skewed" run would test nothing.
func checkSkew(t *testing.T, dir, app string, np int, want map[int][2]float64) {
	t.Helper()
	for r := 0; r < np; r++ {
		f, err := os.Open(filepath.Join(dir, app+"."+strconv.Itoa(r)+".trc"))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{SkipEvents: true})
		if err != nil {
			f.Close()
			t.Fatal(err)
		}
		c := rd.Header().GetClock()
		f.Close()
		got := [2]float64{float64(c.GetInjectedOffsetNs()) / 1e9, c.GetInjectedDriftPpm()}
		if got != want[r] {
			t.Errorf("rank %d: trace records injected skew %v s, %v ppm; want %v", r, got[0], got[1], want[r])
		}
	}
}

// analyse runs bin/dtpa --json on the traces of app in dir and decodes the
// report, which must pass checkReport; warnings printed on stderr are
// returned too (they must also be in the report).
func analyse(t *testing.T, dir, app string) (*report.Report, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--json", "--dir", dir, app)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dtpa --json %s: %v\n%s", app, err, stderr.String())
	}
	var r report.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("decoding the JSON report: %v", err)
	}
	checkReport(t, &r)
	return &r, stderr.String()
}
