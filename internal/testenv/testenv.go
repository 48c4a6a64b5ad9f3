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
	"strings"
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

// Interp is a CPython the Python tests run under and what its scripts
// need to import mpi4py there.
type Interp struct {
	Version string   // "3.11"; "3.11-mpich" for the stand-in built with MPICH
	Exe     string   // the interpreter
	Include string   // its headers (sysconfig's INCLUDEPY)
	Env     []string // PYTHONPATH of the stand-in mpi4py, if it has one
	MPICH   bool     // its mpi4py is built with MPICH (run it with mpirun.mpich), else Open MPI
}

// Debian is Debian's interpreter with python3-mpi4py.
func Debian() Interp {
	return Interp{Version: "3.11", Exe: Python, Include: "/usr/include/python3.11"}
}

// DebianMPICH is Debian's interpreter with the stand-in for mpi4py built
// with MPICH (Debian's mpi4py is Open MPI's), in a directory of t's.
func DebianMPICH(t testing.TB) Interp {
	t.Helper()
	NeedCommands(t, "mpicc.mpich")
	ip, ok := standIn(t, Python, "3.11-mpich", "mpicc.mpich")
	if !ok {
		Missing(t, "python3.11-dev not installed")
	}
	ip.MPICH = true
	return ip
}

// OtherPythons are the CPython versions besides Debian's whose frames the
// tracer reads (3.8 to 3.13), each found as /usr/bin/python3.N or under pyenv
// ($PYENV_ROOT, ~/.pyenv: the development machines' image has them),
// with a stand-in for mpi4py's MPI module built for it with Open MPI in a
// directory of t's (standIn: Debian has no mpi4py for them). A version
// not found is left out.
func OtherPythons(t testing.TB) []Interp {
	t.Helper()
	NeedCommands(t, "mpicc.openmpi")
	pyenv := os.Getenv("PYENV_ROOT")
	if pyenv == "" {
		home, _ := os.UserHomeDir()
		pyenv = filepath.Join(home, ".pyenv")
	}
	var out []Interp
	for _, v := range []string{"3.8", "3.9", "3.10", "3.12", "3.13"} {
		cands := []string{"/usr/bin/python" + v}
		vers, _ := filepath.Glob(filepath.Join(pyenv, "versions", v+".*", "bin", "python"+v))
		for _, exe := range append(cands, vers...) {
			if ip, ok := standIn(t, exe, v, "mpicc.openmpi"); ok {
				out = append(out, ip)
				break
			}
		}
	}
	return out
}

// standIn builds the stand-in for mpi4py's MPI module
// (tracer/testdata/py/minimpi4py) for interpreter exe with the MPI
// compiler mpicc, in a directory of t's, without debugging information
// (as Debian's mpi4py is installed); false when exe does not run, has no
// headers or is a free-threaded build. One that cannot be built fails t.
func standIn(t testing.TB, exe, version, mpicc string) (Interp, bool) {
	t.Helper()
	b, err := exec.Command(exe, "-c", "import sysconfig as s; print(s.get_config_var('INCLUDEPY')); print(s.get_config_var('EXT_SUFFIX')); print(s.get_config_var('Py_GIL_DISABLED') or 0)").Output()
	if err != nil {
		return Interp{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 3 || f[2] != "0" {
		return Interp{}, false
	}
	if _, err := os.Stat(filepath.Join(f[0], "Python.h")); err != nil {
		return Interp{}, false
	}
	dir := filepath.Join(t.TempDir(), "py"+version)
	pkg := filepath.Join(dir, "mpi4py")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(Root(), "tracer", "testdata", "py", "minimpi4py", "MPI.c")
	if b, err := exec.Command(mpicc, "-shared", "-fPIC", "-O1", "-I"+f[0], "-o", filepath.Join(pkg, "MPI"+f[1]), src).CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in mpi4py for %s with %s: %v\n%s", exe, mpicc, err, b)
	}
	return Interp{Version: version, Exe: exe, Include: f[0], Env: []string{"PYTHONPATH=" + dir}}, true
}
