package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
)

// TestHDF5 traces testdata/apps/h5io.c, parallel HDF5 over MPI-IO (Debian's
// libhdf5-openmpi-dev, libhdf5-mpich-dev), at 4 ranks under both MPIs,
// with aligned clocks and with injected skew; the skewed run also leaves
// the HDF5 file open, so that HDF5 closes it from inside MPI_Finalize (an
// attribute callback on MPI_COMM_SELF). The program must read back what it
// wrote, the analysis must be clean, and the I/O figures known by
// construction must hold: every MPI_File_ call is System Time (§3: the
// System Number of interval 1, the MPI-IO phase, is every call but its one
// MPI_Barrier), and the bytes each data access moved (count × type size):
// 64 × 256 ints per rank written with MPI_File_write_all and read back with
// MPI_File_read_at_all in interval 1; 64 × 256 doubles per rank written by
// HDF5 collectively (MPI_File_write_at_all) and, independently,
// MPI_File_write_at (with HDF5's metadata: at least as much), and both
// datasets read back collectively in interval 2.
func TestHDF5(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			flags := pkgConfig(t, "hdf5-"+m.name, "libhdf5-"+m.name+"-dev")
			exe := compile(t, m, t.TempDir(), "h5io", flags...)
			for _, skew := range []bool{false, true} {
				var args []string
				if skew {
					args = []string{"leak"}
				}
				t.Run(skewName(skew), func(t *testing.T) {
					r := libRun(t, m, exe, skew, "h5io: ok", 3, args...)
					io := r.Intervals[1]
					for _, rk := range io.Ranks {
						var calls int64
						for _, c := range rk.CallMix {
							if c.Function != "MPI_Barrier" {
								calls += c.Calls
							}
						}
						if rk.SystemNumber != calls || rk.CollectiveNumber != 1 || rk.SendNumber+rk.ReceiveNumber+rk.WaitNumber != 0 || rk.SystemTime <= 0 {
							t.Errorf("interval 1, rank %d: system number %d (want %d, every call but the barrier), collective number %d (want 1), send/receive/wait %d/%d/%d, system time %v",
								rk.Rank, rk.SystemNumber, calls, rk.CollectiveNumber, rk.SendNumber, rk.ReceiveNumber, rk.WaitNumber, rk.SystemTime)
						}
					}
					const ints, doubles = 4 * 64 * 256 * 4, 4 * 64 * 256 * 8
					checkBytes(t, io, map[string][2]int64{"MPI_File_write_all": {4, ints}, "MPI_File_read_at_all": {4, ints}})
					h5 := r.Intervals[2]
					checkBytes(t, h5, map[string][2]int64{"MPI_File_write_at_all": {4, doubles}, "MPI_File_read_at_all": {8, 2 * doubles}})
					if f := function(&h5, "MPI_File_write_at"); f == nil || f.Bytes < doubles {
						t.Errorf("interval 2: MPI_File_write_at %+v, want at least %d bytes (the independent dataset)", f, doubles)
					}
					// HDF5 closes the file of the "leak" run inside
					// MPI_Finalize: those MPI_File_close calls are
					// part of MPI_Finalize, not recorded apart.
					closes := int64(12)
					if skew {
						closes = 8
					}
					if f := function(&r.Intervals[0], "MPI_File_close"); f == nil || f.Calls != closes {
						t.Errorf("MPI_File_close %+v, want %d calls", f, closes)
					}
				})
			}
		})
	}
}

// TestScaLAPACK traces testdata/apps/scalapack.c, a dense solve with
// ScaLAPACK's pdgesv over a 2 × 2 BLACS grid (Debian's
// libscalapack-openmpi-dev, libscalapack-mpich-dev), at 4 ranks under both
// MPIs, aligned and with injected skew. BLACS calls MPI as libraries do:
// communicators from groups and splits, a derived datatype per block,
// user-defined reduction operations, broadcasts along rows and columns,
// point-to-point trees. The solution must be right, the analysis clean,
// and the trace must hold those calls.
func TestScaLAPACK(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			lib := "/usr/lib/x86_64-linux-gnu/libscalapack-" + m.name + ".so"
			if _, err := os.Stat(lib); err != nil {
				testenv.Missing(t, lib+" missing (apt-get install libscalapack-"+m.name+"-dev)")
			}
			exe := compile(t, m, t.TempDir(), "scalapack", "-lscalapack-"+m.name, "-lm")
			for _, skew := range []bool{false, true} {
				t.Run(skewName(skew), func(t *testing.T) {
					r := libRun(t, m, exe, skew, "scalapack: ok", 2)
					// The grid's communicators are made by
					// Cblacs_gridinit, before interval 1.
					solve := r.Intervals[1]
					for _, fn := range []string{"MPI_Comm_split", "MPI_Comm_create", "MPI_Type_vector", "MPI_Op_create", "MPI_Bcast", "MPI_Isend", "MPI_Recv", "MPI_Send"} {
						iv := &solve
						if strings.HasPrefix(fn, "MPI_Comm_") {
							iv = &r.Intervals[0]
						}
						if f := function(iv, fn); f == nil || f.Calls == 0 {
							t.Errorf("interval %v has no %s: the library's calls were not all traced", iv.Path, fn)
						}
					}
					if solve.Main.SendNumber == 0 || solve.Main.SendNumber != solve.Main.ReceiveNumber {
						t.Errorf("interval 1: %d sends, %d receives", solve.Main.SendNumber, solve.Main.ReceiveNumber)
					}
				})
			}
		})
	}
}

// TestPETSc traces testdata/apps/petsc.c, a Poisson solve with PETSc (DMDA
// grid, conjugate gradients; Debian's petsc-dev, built with Open MPI) at 4
// ranks. PETSc's ghost exchanges are persistent point-to-point requests
// (MPI_Send_init, MPI_Recv_init) started with MPI_Startall and completed
// with MPI_Waitall, its dot products MPI_Allreduce with its own operations.
// PETSc handles SIGURG, which the Go runtime inside the tracer used to send
// to its own threads: the program then died in 7 runs of 8 (tracer
// TestProgramHandlesSIGURG). The same program with PETSc's other
// preconditioners brings in the libraries it calls: algebraic multigrid
// (GAMG: collectives on which some ranks contribute nothing, whose exits
// were taken for clock-condition violations, analyzer
// TestQuietMemberBoundsNoExit), hypre's BoomerAMG, and MUMPS's direct solve
// (its messages received with MPI_Iprobe and MPI_Probe of MPI_ANY_SOURCE);
// and with PETSc's other ghost exchanges: neighbourhood collectives
// (MPI_Ineighbor_alltoallv) and one-sided (MPI_Win_fence, MPI_Get).
// Each solution must be right and the analysis clean: no warning in an
// aligned run, so no clock-condition violation either; every start
// completed and each rank's sends received.
func TestPETSc(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	flags := pkgConfig(t, "PETSc", "petsc-dev")
	exe := compile(t, m, t.TempDir(), "petsc", flags...)
	for _, c := range []struct {
		name string
		skew bool
		args []string
	}{
		{"cg/aligned", false, nil},
		{"cg/skewed", true, nil},
		{"gamg/aligned", false, []string{"-pc_type", "gamg"}},
		{"hypre/skewed", true, []string{"-pc_type", "hypre", "-pc_hypre_type", "boomeramg"}},
		{"mumps/aligned", false, []string{"-ksp_type", "preonly", "-pc_type", "lu", "-pc_factor_mat_solver_type", "mumps"}},
		{"neighbor/aligned", false, []string{"-sf_type", "neighbor"}},
		{"window/skewed", true, []string{"-sf_type", "window"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := libRun(t, m, exe, c.skew, "petsc: ok", 2, c.args...)
			if c.args != nil {
				return
			}
			solve := r.Intervals[1]
			st, wa := function(&solve, "MPI_Startall"), function(&solve, "MPI_Waitall")
			if st == nil || wa == nil || st.Calls == 0 || st.Calls != wa.Calls || function(&solve, "MPI_Allreduce") == nil {
				t.Errorf("interval 1: MPI_Startall %+v, MPI_Waitall %+v: want as many of each, and MPI_Allreduce", st, wa)
			}
			if solve.Main.SendNumber == 0 || solve.Main.SendNumber != solve.Main.ReceiveNumber {
				t.Errorf("interval 1: %d sends, %d receives", solve.Main.SendNumber, solve.Main.ReceiveNumber)
			}
		})
	}
}

// TestBoostMPI traces testdata/apps/boostmpi.cc, C++ objects over
// Boost.MPI (Debian's libboost-mpi-dev, built with Open MPI), aligned and
// with injected skew: serialized messages found by matched probes
// (MPI_Improbe, MPI_Mprobe, MPI_Mrecv, with MPI_ANY_SOURCE), collectives of
// objects. Everything received must be right, the analysis clean.
func TestBoostMPI(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	lib := "/usr/lib/x86_64-linux-gnu/libboost_mpi.so"
	if _, err := os.Stat(lib); err != nil {
		testenv.Missing(t, lib+" missing (apt-get install libboost-mpi-dev)")
	}
	testenv.NeedCommands(t, "mpicxx.openmpi")
	exe := filepath.Join(t.TempDir(), "boostmpi")
	src := filepath.Join(root, "testdata", "apps", "boostmpi.cc")
	if b, err := exec.Command("mpicxx.openmpi", "-g", "-O0", "-o", exe, src, "-lboost_mpi", "-lboost_serialization").CombinedOutput(); err != nil {
		t.Fatalf("compiling boostmpi.cc: %v\n%s", err, b)
	}
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			r := libRun(t, m, exe, skew, "boost: ok", 1)
			for _, fn := range []string{"MPI_Improbe", "MPI_Mprobe", "MPI_Mrecv", "MPI_Isend", "MPI_Allgatherv", "MPI_Alloc_mem"} {
				if f := function(&r.Intervals[0], fn); f == nil || f.Calls == 0 {
					t.Errorf("no %s: Boost.MPI's calls were not all traced", fn)
				}
			}
			if mn := r.Intervals[0].Main; mn.SendNumber == 0 || mn.SendNumber != mn.ReceiveNumber {
				t.Errorf("%d sends, %d receives", mn.SendNumber, mn.ReceiveNumber)
			}
		})
	}
}

// pkgConfig is pkg-config's compiler and linker flags for pkg (Debian
// package deb), which the test needs.
func pkgConfig(t *testing.T, pkg, deb string) []string {
	t.Helper()
	testenv.NeedCommands(t, "pkg-config")
	out, err := exec.Command("pkg-config", "--cflags", "--libs", pkg).Output()
	if err != nil {
		testenv.Missing(t, pkg+" missing (apt-get install "+deb+")")
	}
	return strings.Fields(string(out))
}

// libRun runs the program exe (built for m) at 4 ranks under dtrun in a
// fresh directory (its TMPDIR too), with clockSkew injected when skew, and
// with args; its output must hold ok, and its analysis pass checkClean
// with n intervals. It returns the report.
func libRun(t *testing.T, m mpiImpl, exe string, skew bool, ok string, n int, args ...string) *report.Report {
	t.Helper()
	r, _ := libRunOutput(t, m, exe, skew, ok, n, args...)
	return r
}

// libRunOutput is libRun, also returning the job's output.
func libRunOutput(t *testing.T, m mpiImpl, exe string, skew bool, ok string, n int, args ...string) (*report.Report, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, filepath.Base(exe))
	if err := os.WriteFile(app, b, 0o755); err != nil {
		t.Fatal(err)
	}
	env := skewEnv([]string{"TMPDIR=" + dir}, skew)
	out := trace(t, m, dir, env, 4, app, args...)
	if !strings.Contains(out, ok) {
		t.Fatalf("the program's results are wrong (no %q):\n%s", ok, out)
	}
	if skew {
		checkSkew(t, dir, filepath.Base(exe), 4, injected)
	}
	r, stderr := analyse(t, dir, filepath.Base(exe))
	checkClean(t, r, stderr, skew, n)
	return r, out
}

// skewName names a subtest by its clocks.
func skewName(skew bool) string {
	if skew {
		return "skewed"
	}
	return "aligned"
}

// skewEnv is env, and with skew the tracer's test setting that skews
// the ranks' clocks (clockSkew).
func skewEnv(env []string, skew bool) []string {
	if skew {
		return append(slices.Clip(env), "DT_CLOCK_SKEW="+clockSkew)
	}
	return env
}

// function is iv's figures of MPI function fn, nil when not called.
func function(iv *report.Interval, fn string) *report.Function {
	for i := range iv.Functions {
		if iv.Functions[i].Function == fn {
			return &iv.Functions[i]
		}
	}
	return nil
}

// checkBytes checks the calls and bytes of functions of iv: want maps a
// function to {calls, bytes}.
func checkBytes(t *testing.T, iv report.Interval, want map[string][2]int64) {
	t.Helper()
	for fn, w := range want {
		if f := function(&iv, fn); f == nil || f.Calls != w[0] || f.Bytes != w[1] {
			t.Errorf("interval %v: %s %+v, want %d calls, %d bytes", iv.Path, fn, f, w[0], w[1])
		}
	}
}
