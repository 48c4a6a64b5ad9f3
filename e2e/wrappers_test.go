package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWrappedProgram runs the demo solver behind two wrappers (env, nice)
// under dtrun without --mpirun: dtrun must take the launcher of the MPI
// the wrapped program links (Open MPI's mpirun, MPICH's mpiexec), not
// refuse env as "not an MPI program", and every rank must be traced.
func TestWrappedProgram(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			compile(t, m, dir, "solver")
			a := append([]string{"-np", "2"}, m.args...)
			a = append(a, "env", "DTPA_WRAPPED=1", "nice", "-n", "0", "./solver")
			out := run(t, dir, nil, 2*time.Minute, filepath.Join(root, "bin", "dtrun"), a...)
			if !strings.Contains(out, "2 traces of solver") {
				t.Errorf("dtrun's summary does not name 2 traces of solver:\n%s", out)
			}
			r, stderr := analyse(t, dir, "solver")
			checkInvariants(t, r, 2)
			if r.Unmatched != nil || stderr != "" {
				t.Errorf("unmatched %+v, stderr %q", r.Unmatched, stderr)
			}
		})
	}
}
