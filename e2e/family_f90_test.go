package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// f90s are the Fortran compilers of impls, by impl name, and whether the
// MPI has MPI 4's persistent collectives in mpi_f08 (MPICH 4; Open MPI
// 4.1 only as MPIX_ extensions).
var f90s = map[string]struct {
	fc   string
	mpi4 bool
}{
	"openmpi": {"mpif90.openmpi", false},
	"mpich":   {"mpif90.mpich", true},
}

// TestFamiliesFortran builds testdata/apps/families.f90 (use mpi_f08; the
// families of TestFamiliesPython: request-creating calls, an
// intercommunicator, OpenMP threads under MPI_THREAD_MULTIPLE with a late
// sender, what mpi4py's pickle-5 utilities call) with bin/dtf90, the
// tracer linked in, and traces it with dtrun under Open MPI and MPICH, one
// run per family at 4 ranks: each is analysed with nothing unmatched, no
// stall and no warning.
func TestFamiliesFortran(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			f := f90s[m.name]
			if _, err := exec.LookPath(f.fc); err != nil {
				t.Skipf("%s not installed", f.fc)
			}
			bdir := t.TempDir()
			args := []string{"-cpp", "-fopenmp", "-g", "-O0", "-o", "families", filepath.Join(root, "testdata", "apps", "families.f90")}
			if f.mpi4 {
				args = append([]string{"-DDT_MPI4"}, args...)
			}
			run(t, bdir, []string{"DT_MPIF90=" + f.fc}, 2*time.Minute, filepath.Join(root, "bin", "dtf90"), args...)
			exe := filepath.Join(bdir, "families")
			for _, fam := range families {
				if f.mpi4 && fam.name == "requests" {
					fam.calls = append(slices.Clone(fam.calls), "MPI_Allreduce_init", "MPI_Bcast_init", "MPI_Start")
				}
				t.Run(fam.name, func(t *testing.T) {
					dir := t.TempDir()
					a := append([]string{"--mpirun", m.mpirun, "-np", "4"}, m.args...)
					out := run(t, dir, []string{"TMPDIR=" + dir}, 2*time.Minute, filepath.Join(root, "bin", "dtrun"), append(a, exe, fam.name)...)
					checkFamily(t, fam, dir, "families", out)
				})
			}
		})
	}
}
