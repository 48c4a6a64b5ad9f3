// Package testenv is what the test suites that run real tools share: the
// repository root (where `make build` puts bin/ and lib/), the environment
// MPI launchers need on these machines, and the rule for a missing tool —
// skip on a developer's machine, fail under CI, where `make test` installs
// everything, so that a green CI never hides a test that did not run.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is the repository root, found from this file so that tests work
// from any working directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// MPIEnv lets Open MPI run as root (CI and the development machines do).
var MPIEnv = []string{"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}

// Missing skips t with why, or fails it when the environment variable CI
// is set.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why + " (make test installs it)")
	}
	t.Skip(why)
}

// NeedCommands calls Missing for the first command not on PATH.
func NeedCommands(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			Missing(t, n+" not installed")
			return
		}
	}
}

// Python is the interpreter Debian's python3-mpi4py is installed for
// (built against Open MPI); its traces are python3.<rank>.trc. The first
// python3 on PATH may be another one, without mpi4py.
const Python = "/usr/bin/python3"

// NeedMPI4Py calls Missing when python3-mpi4py is not installed.
func NeedMPI4Py(t testing.TB) {
	t.Helper()
	if err := exec.Command(Python, "-c", "import mpi4py").Run(); err != nil {
		Missing(t, "python3-mpi4py not installed")
	}
}
