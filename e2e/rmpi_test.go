package e2e

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/testenv"
)

// TestRmpi traces R programs (Debian's r-cran-rmpi, which links Open MPI).
// dtrun runs Rscript, which links no MPI and execs R, which loads Rmpi's
// (dtrun refused it as "not an MPI program"); the traces are R's.
//   - spmd: rmpi_spmd.R at 4 ranks; rank r sleeps r × 50 ms before an
//     allreduce, so rank 0's Potential Sync there is 150 ms by construction.
//   - spawn: rmpi_spawn.R, Rmpi's master/slave use: one master spawns two
//     slaves and works with them in a communicator merged from both worlds.
//     Each world's report is clean but for one warning on the calls with
//     the other world (the merged communicator's ranks were shifted before
//     the tracer kept the other world's members in their places).
func TestRmpi(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	rscript, err := exec.LookPath("Rscript")
	if err == nil {
		err = exec.Command(rscript, "-e", "library(Rmpi)").Run()
	}
	if err != nil {
		testenv.Missing(t, "R's Rmpi not installed (apt-get install --no-install-recommends r-cran-rmpi)")
	}
	runR := func(t *testing.T, np int, script string) (string, string) {
		dir := t.TempDir()
		a := append([]string{"--mpirun", m.mpirun, "-np", strconv.Itoa(np)}, m.args...)
		a = append(a, "Rscript", filepath.Join(root, "testdata", "apps", script))
		return dir, run(t, dir, nil, 2*time.Minute, filepath.Join(root, "bin", "dtrun"), a...)
	}
	t.Run("spmd", func(t *testing.T) {
		dir, out := runR(t, 4, "rmpi_spmd.R")
		if !strings.Contains(out, "rmpi: total 8002000 bcast 7.5 ring 3") {
			t.Errorf("the program's output is missing:\n%s", out)
		}
		r, stderr := analyse(t, dir, "R")
		checkClean(t, r, stderr, false, 1)
		ps := -1.0
		for _, p := range r.Intervals[0].SRC {
			if p.Function == "MPI_Allreduce" && len(p.Ranks) == 4 && p.Ranks[0].Rank == 0 {
				ps = p.Ranks[0].PotentialSync
			}
		}
		if ps < 0.12 || ps > 0.2 {
			t.Errorf("rank 0: Potential Sync in MPI_Allreduce %.6f s, want the 150 ms rank 3 sleeps more", ps)
		}
	})
	t.Run("spawn", func(t *testing.T) {
		dir, out := runR(t, 1, "rmpi_spawn.R")
		if !strings.Contains(out, "rmpi: slaves 500500 2001000 squares 204") {
			t.Errorf("the program's output is missing:\n%s", out)
		}
		tasks := analyzer.Tasks(dir)
		if len(tasks) != 2 || tasks[0].Name != "R" || tasks[0].Files != 1 || !strings.HasPrefix(tasks[1].Name, "R.spawn-") || tasks[1].Files != 2 {
			t.Fatalf("tasks %+v, want R (1 trace) and R.spawn-<id> (2)", tasks)
		}
		for _, tk := range tasks {
			r, _ := analyse(t, dir, tk.Name)
			checkInvariants(t, r, tk.Files)
			if r.Unmatched != nil {
				t.Errorf("%s: unmatched operations %+v", tk.Name, *r.Unmatched)
			}
			if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "communicated with processes of another MPI world") {
				t.Errorf("%s: warnings %q, want one on the calls with another world", tk.Name, r.Warnings)
			}
		}
	})
}
