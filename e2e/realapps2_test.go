package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
)

// cavity is the lid-driven cavity of OpenFOAM's tutorials (Debian's
// openfoam-examples): icoFoam, a 20 × 20 mesh, 100 time steps.
const cavity = "/usr/share/doc/openfoam-examples/examples/incompressible/icoFoam/cavity/cavity"

// TestOpenFOAM runs OpenFOAM's icoFoam (Debian's openfoam, built with Open
// MPI) on the cavity tutorial decomposed into 2 × 2 subdomains, untraced
// and then under dtrun at 4 ranks, aligned and with injected skew. icoFoam
// reaches MPI only through OpenFOAM's libPstream.so: dtrun must take it for
// an Open MPI program and find the launcher itself (it refused it as "not
// an MPI program"). The fields every rank writes at the last time step
// must be the untraced run's, byte for byte; the analysis clean, each
// message sent received; the point-to-point traffic (processor-boundary
// exchanges, MPI_Isend/MPI_Irecv/MPI_Waitall, and OpenFOAM's gathers) runs
// between subdomains that share a face, 0–1, 0–2, 1–3 and 2–3: a diagonal
// pair exchanges at most a message or two. Call stacks name OpenFOAM's
// functions demangled (Foam::UPstream::waitRequests+0xc0).
func TestOpenFOAM(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	testenv.NeedCommands(t, "icoFoam", "blockMesh", "decomposePar")
	if _, err := os.Stat(cavity); err != nil {
		testenv.Missing(t, "OpenFOAM's tutorials missing (apt-get install openfoam-examples)")
	}
	// Debian's OpenFOAM finds its etc/ through WM_PROJECT_DIR, which
	// /usr/share/openfoam/etc/bashrc sets.
	env := []string{"WM_PROJECT_DIR=/usr/share/openfoam"}
	if d := os.Getenv("WM_PROJECT_DIR"); d != "" {
		env = []string{"WM_PROJECT_DIR=" + d}
	}
	prepare := func(t *testing.T) string {
		dir := t.TempDir()
		copyTree(t, cavity, dir)
		dict := "FoamFile { version 2.0; format ascii; class dictionary; object decomposeParDict; }\n" +
			"numberOfSubdomains 4;\nmethod simple;\ncoeffs { n (2 2 1); }\n"
		if err := os.WriteFile(filepath.Join(dir, "system", "decomposeParDict"), []byte(dict), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, env, time.Minute, "blockMesh")
		run(t, dir, env, time.Minute, "decomposePar")
		return dir
	}
	untraced := prepare(t)
	run(t, untraced, env, 2*time.Minute, m.mpirun, append(append([]string{"-np", "4"}, m.args...), "icoFoam", "-parallel")...)
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			dir := prepare(t)
			e := skewEnv(env, skew)
			a := append(append([]string{"-np", "4"}, m.args...), "icoFoam", "-parallel")
			if out := run(t, dir, e, 2*time.Minute, filepath.Join(root, "bin", "dtrun"), a...); !strings.Contains(out, "\nEnd\n") {
				t.Fatalf("icoFoam did not reach its end:\n%s", out)
			}
			for r := 0; r < 4; r++ {
				for _, f := range []string{"U", "p", "phi"} {
					p := filepath.Join("processor"+strconv.Itoa(r), "0.5", f)
					want, err := os.ReadFile(filepath.Join(untraced, p))
					if err != nil {
						t.Fatal(err)
					}
					if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, want) {
						t.Errorf("%s differs from the untraced run's (%v)", p, err)
					}
				}
			}
			if skew {
				checkSkew(t, dir, "icoFoam", 4, injected)
			}
			r, stderr := analyse(t, dir, "icoFoam")
			checkClean(t, r, stderr, skew, 1)
			w := r.Intervals[0]
			if w.Main.SendNumber == 0 || w.Main.SendNumber != w.Main.ReceiveNumber || w.Main.WaitNumber == 0 {
				t.Errorf("%d sends, %d receives, %d waits", w.Main.SendNumber, w.Main.ReceiveNumber, w.Main.WaitNumber)
			}
			for _, fn := range []string{"MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Allreduce", "MPI_Probe"} {
				if f := function(&w, fn); f == nil || f.Calls == 0 {
					t.Errorf("no %s in the trace", fn)
				}
			}
			// OpenFOAM has no debug information: its frames are
			// named by its symbol tables, demangled.
			var waits int
			for _, p := range w.SRC {
				for _, f := range p.Stack {
					if strings.HasPrefix(f.Function, "_Z") {
						t.Errorf("SRC %d: frame %s not demangled", p.ID, f.Function)
					}
					if strings.HasPrefix(f.Function, "Foam::UPstream::waitRequests+0x") {
						waits++
					}
				}
			}
			if waits == 0 {
				t.Error("no call site in Foam::UPstream::waitRequests")
			}
			if w.CommMatrix == nil {
				t.Fatal("no communication matrix")
			}
			msgs := w.CommMatrix.Messages
			for _, p := range [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}} {
				for _, d := range [][2]int{p, {p[1], p[0]}} {
					if msgs[d[0]][d[1]] < 1000 {
						t.Errorf("%d → %d: %d messages between neighbouring subdomains", d[0], d[1], msgs[d[0]][d[1]])
					}
				}
			}
			for _, d := range [][2]int{{0, 3}, {3, 0}, {1, 2}, {2, 1}} {
				if msgs[d[0]][d[1]] > 2 {
					t.Errorf("%d → %d: %d messages between subdomains that share no face", d[0], d[1], msgs[d[0]][d[1]])
				}
			}
		})
	}
}

// copyTree copies the directory tree src into dst (an existing directory).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFFTWMPI traces testdata/apps/fftwmpi.c, a 32 × 32 × 16 complex FFT
// forward and back with FFTW's MPI interface (Debian's libfftw3-mpi-dev,
// built with Open MPI), aligned and with injected skew. Each transform is
// one interval holding one global transpose of the whole array (8 KiB ×
// 32 planes), which FFTW's planner makes pairwise: each rank
// MPI_Sendrecv's its block of 8 × 8 × 16 complex numbers (16 KiB) with
// each other rank. So in each interval: 12 MPI_Sendrecv, each sending and
// receiving 16 KiB; one message each way between every two ranks; no
// collective (the plans' MPI_Allreduce and communicator duplicates come
// before). Each rank's execution time of each interval must lie within the
// program's own brackets of it (checkSelfTimed).
func TestFFTWMPI(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	if _, err := os.Stat("/usr/include/fftw3-mpi.h"); err != nil {
		testenv.Missing(t, "FFTW's MPI interface missing (apt-get install libfftw3-mpi-dev)")
	}
	exe := compile(t, m, t.TempDir(), "fftwmpi", "-lfftw3_mpi", "-lfftw3", "-lm")
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			r, out := libRunOutput(t, m, exe, skew, "fftwmpi: ok", 3)
			checkSelfTimed(t, r, parseSelfTiming(t, out), repairShift(r))
			const block = 8 * 8 * 16 * 16
			for _, iv := range r.Intervals[1:] {
				checkBytes(t, iv, map[string][2]int64{"MPI_Sendrecv": {12, 12 * 2 * block}})
				if len(iv.Functions) != 1 || iv.Main.CollectiveNumber != 0 || iv.Main.SendNumber != 12 || iv.Main.ReceiveNumber != 12 {
					t.Errorf("interval %v: functions %+v, %d collectives, %d sends, %d receives; want MPI_Sendrecv only, 12 sends and receives",
						iv.Path, iv.Functions, iv.Main.CollectiveNumber, iv.Main.SendNumber, iv.Main.ReceiveNumber)
				}
				checkAllPairs(t, iv, block)
			}
		})
	}
}

// checkAllPairs checks that iv's communication matrix holds one message of
// size bytes from each rank to each other rank.
func checkAllPairs(t *testing.T, iv report.Interval, size int64) {
	t.Helper()
	if iv.CommMatrix == nil {
		t.Errorf("interval %v: no communication matrix", iv.Path)
		return
	}
	for s, row := range iv.CommMatrix.Messages {
		for d, n := range row {
			want, wantB := int64(1), size
			if s == d {
				want, wantB = 0, 0
			}
			if n != want || iv.CommMatrix.Bytes[s][d] != wantB {
				t.Errorf("interval %v: %d → %d: %d messages, %d bytes; want %d, %d", iv.Path, s, d, n, iv.CommMatrix.Bytes[s][d], want, wantB)
			}
		}
	}
}

// TestPnetCDF traces testdata/apps/pnetcdf.c, a 2-D variable of 128 × 128
// ints written and read back with PnetCDF (Debian's libpnetcdf-dev, built
// with Open MPI) over MPI-IO, aligned and with injected skew. The
// nonblocking requests of each rank (two ncmpi_iput_vara_int of 16 rows,
// then two ncmpi_iget_vara_int) are flushed by ncmpi_wait_all as one
// collective access of the rank's 16 KiB: one MPI_File_write_at_all per
// rank in interval 1 and one MPI_File_read_at_all in interval 2, 64 KiB in
// all each time, the data written. Rank 0 alone writes the header
// (MPI_File_write_at) and, in interval 2, reads the header then the whole
// variable independently (MPI_File_read_at: at least the 64 KiB of data).
// The MPI_File_ calls and the rest that is neither point-to-point nor
// collective are System Time: the System Number is every call but the
// collectives (MPI_Bcast, MPI_Allreduce). Each rank's execution time of
// each interval must lie within the program's own brackets of it.
func TestPnetCDF(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	flags := pkgConfig(t, "pnetcdf", "libpnetcdf-dev")
	exe := compile(t, m, t.TempDir(), "pnetcdf", flags...)
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			r, out := libRunOutput(t, m, exe, skew, "pnetcdf: ok", 3)
			checkSelfTimed(t, r, parseSelfTiming(t, out), repairShift(r))
			const data = 4 * 32 * 128 * 4
			write, read := r.Intervals[1], r.Intervals[2]
			checkBytes(t, write, map[string][2]int64{"MPI_File_write_at_all": {4, data}})
			checkBytes(t, read, map[string][2]int64{"MPI_File_read_at_all": {4, data}})
			if f := function(&write, "MPI_File_write_at"); f == nil || f.Calls != 1 || f.Ranks[0].Rank != 0 || f.Bytes <= 0 {
				t.Errorf("interval 1: MPI_File_write_at %+v, want one call on rank 0 (the header)", f)
			}
			if f := function(&read, "MPI_File_read_at"); f == nil || len(f.Ranks) != 1 || f.Ranks[0].Rank != 0 || f.Bytes < data {
				t.Errorf("interval 2: MPI_File_read_at %+v, want calls on rank 0 only, at least %d bytes (the whole variable)", f, data)
			}
			for _, iv := range r.Intervals[1:] {
				for _, rk := range iv.Ranks {
					var calls, coll int64
					for _, c := range rk.CallMix {
						calls += c.Calls
						if c.Function == "MPI_Bcast" || c.Function == "MPI_Allreduce" {
							coll += c.Calls
						}
					}
					if rk.SystemNumber != calls-coll || rk.CollectiveNumber != coll || rk.SendNumber+rk.ReceiveNumber+rk.WaitNumber != 0 || rk.SystemTime <= 0 {
						t.Errorf("interval %v, rank %d: system number %d (want %d), collective number %d (want %d), send/receive/wait %d/%d/%d, system time %v",
							iv.Path, rk.Rank, rk.SystemNumber, calls-coll, rk.CollectiveNumber, coll, rk.SendNumber, rk.ReceiveNumber, rk.WaitNumber, rk.SystemTime)
					}
				}
			}
		})
	}
}

// TestMPI4PyFFT traces testdata/apps/pfft.py, a 16 × 16 × 16 complex FFT
// forward and back with mpi4py-fft (Debian's python3-mpi4py-fft) over a
// 2 × 2 process grid (MPI_Cart_create, MPI_Cart_sub), aligned and with
// injected skew. Its redistributions are MPI_Alltoallw of subarray
// datatypes within a row or column of the grid: each transform is one
// interval of two MPI_Alltoallw per rank, each sending the rank's whole
// pencil of 16³ / 4 complex numbers (16 KiB: the subarrays' sizes, its own
// share included) and receiving as much: 8 calls, 256 KiB, 4 collective
// instances per interval.
func TestMPI4PyFFT(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needMPI4Py(t)
	if err := exec.Command(python, "-c", "import mpi4py_fft").Run(); err != nil {
		testenv.Missing(t, "python3-mpi4py-fft not installed")
	}
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			dir := t.TempDir()
			env := skewEnv(nil, skew)
			if out := tracePython(t, m, dir, env, 4, "pfft.py"); !strings.Contains(out, "pfft: ok") {
				t.Fatalf("the program's results are wrong (no \"pfft: ok\"):\n%s", out)
			}
			if skew {
				checkSkew(t, dir, "python3", 4, injected)
			}
			r, stderr := analyse(t, dir, "python3")
			checkClean(t, r, stderr, skew, 3)
			const pencil = 16 * 16 * 16 / 4 * 16
			for _, iv := range r.Intervals[1:] {
				checkBytes(t, iv, map[string][2]int64{"MPI_Alltoallw": {8, 8 * 2 * pencil}})
				// Instances count once: two redistributions, each
				// made by the two rows (or columns) of the grid.
				if iv.Main.CollectiveNumber != 4 || iv.Main.SendNumber != 0 {
					t.Errorf("interval %v: %d collective instances, %d sends; want 4, 0", iv.Path, iv.Main.CollectiveNumber, iv.Main.SendNumber)
				}
			}
			for _, fn := range []string{"MPI_Cart_create", "MPI_Cart_sub", "MPI_Type_create_subarray"} {
				if f := function(&r.Intervals[0], fn); f == nil || f.Calls == 0 {
					t.Errorf("no %s in the trace", fn)
				}
			}
		})
	}
}

// repairShift is how much the repairs of the clock-condition violations r
// reports may have moved events (count × worst): checkWarnings' allowance,
// for checkSelfTimed.
func repairShift(r *report.Report) float64 {
	var shift float64
	for _, w := range r.Warnings {
		if m := violationRE.FindStringSubmatch(w); m != nil {
			n, _ := strconv.Atoi(m[1])
			v, _ := strconv.ParseFloat(m[2], 64)
			shift += float64(n) * v
		}
	}
	return shift
}
