package e2e

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMPMD traces an MPMD job under both MPIs (dtrun -np 2 ./ocean : -np 2
// ./atmos, testdata/apps/mpmd.c under two names), given on the command
// line and in an app file (Open MPI's --app, MPICH's -configfile). Open MPI
// takes -x per program: before dtrun passed its environment to each, atmos
// ran untraced and ocean's ranks hung in MPI_Init; and it applies a command
// line's -x to no context of an app file, which dtrun therefore rewrites
// (before, dtrun found no program in such a job). Every rank is traced,
// dtrun names the run once, and dtpa ocean (or atmos) analyses all four
// ranks: atmos's ranks wait 0.2 s for ocean's messages.
func TestMPMD(t *testing.T) {
	for _, m := range impls {
		for _, how := range []string{"args", "appfile"} {
			t.Run(m.name+"/"+how, func(t *testing.T) {
				needMPI(t, m)
				testMPMD(t, m, how, nil)
			})
		}
	}
}

// testMPMD runs the coupled model (ranks 0-1 ./ocean, 2-3 ./atmos) the
// way how says: "args" (ocean : atmos), "appfile" (the launcher's file of
// contexts) or "multiprog" (srun --multi-prog), with env added to the
// job's environment.
func testMPMD(t *testing.T, m mpiImpl, how string, env []string) {
	dir := t.TempDir()
	exe := compile(t, m, dir, "mpmd")
	for _, name := range []string{"ocean", "atmos"} {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := append([]string{"--mpirun", m.mpirun}, m.args...)
	switch {
	case how == "multiprog":
		writeFile(t, filepath.Join(dir, "progs"), "# the coupled model\n0-1 ./ocean\n2-3 ./atmos\n")
		a = append(a, "-n", "4", "--multi-prog", "progs")
	case how == "args":
		a = append(a, "-np", "2", "./ocean", ":", "-np", "2", "./atmos")
	case m.name == "openmpi":
		writeFile(t, filepath.Join(dir, "apps"), "# the coupled model\n-np 2 ./ocean\n-np 2 ./atmos\n")
		a = append(a, "--app", "apps")
	default:
		writeFile(t, filepath.Join(dir, "apps"), "-n 2 ./ocean\n-n 2 ./atmos\n")
		a = append(a, "-configfile", "apps")
	}
	out := run(t, dir, env, 2*time.Minute, filepath.Join(root, "bin", "dtrun"), a...)
	if !strings.Contains(out, "4 traces of atmos and ocean (one MPMD run)") {
		t.Errorf("dtrun's summary does not name the run once:\n%s", out)
	}
	for _, app := range []string{"ocean", "atmos"} {
		r, stderr := analyse(t, dir, app)
		checkInvariants(t, r, 4)
		if len(r.Warnings) != 0 || stderr != "" {
			t.Errorf("%s: warnings %q, stderr %q", app, r.Warnings, stderr)
		}
		whole := r.Intervals[0]
		for _, rk := range []int{2, 3} {
			if rs := whole.Ranks[rk].RealSync; math.Abs(rs-0.2) > 0.03 {
				t.Errorf("%s: Real Sync on rank %d = %.6f s, want 0.2 ± 0.03", app, rk, rs)
			}
		}
		if len(r.Programs) != 2 || filepath.Base(r.Programs[0].Program) != "ocean" || !slices.Equal(r.Programs[0].Ranks, []int{0, 1}) ||
			filepath.Base(r.Programs[1].Program) != "atmos" || !slices.Equal(r.Programs[1].Ranks, []int{2, 3}) {
			t.Errorf("%s: programs %+v", app, r.Programs)
		}
	}
}

// writeFile writes text to path.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
