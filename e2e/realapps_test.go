package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
// hpcc is not installed by scripts/deps.sh yet (apt-get install hpcc): the
// test skips without it.
func TestHPCC(t *testing.T) {
	m := impls[0] // Debian's hpcc links Open MPI
	needMPI(t, m)
	exe, err := exec.LookPath("hpcc")
	if err != nil {
		t.Skip("hpcc not installed (apt-get install hpcc)")
	}
	in, err := os.ReadFile(filepath.Join(root, "testdata", "apps", "hpccinf.txt"))
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
			if err := os.WriteFile(filepath.Join(dir, "hpccinf.txt"), in, 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			a := append([]string{"--mpirun", m.mpirun, "-np", "4"}, m.args...)
			run(t, dir, env, 3*time.Minute, filepath.Join(root, "bin", "dtrun"), append(a, exe)...)
			t.Logf("traced run: %v", time.Since(start).Round(time.Millisecond))
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
}
