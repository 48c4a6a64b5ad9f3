package e2e

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/traceformat"
)

// python is testenv.Python, the interpreter Debian's mpi4py is for.
const python = testenv.Python

func needMPI4Py(t *testing.T) { testenv.NeedMPI4Py(t) }

// tracePython copies testdata/apps/script into dir (copyPython) and runs it with
// python under bin/dtrun at np ranks of m, with env and args; it returns
// the job's output.
func tracePython(t *testing.T, m mpiImpl, dir string, env []string, np int, script string, args ...string) string {
	t.Helper()
	copyPython(t, dir, script)
	a := append([]string{"--mpirun", m.mpirun, "-np", strconv.Itoa(np)}, m.args...)
	a = append(append(a, python, script), args...)
	return run(t, dir, env, 2*time.Minute, filepath.Join(root, "bin", "dtrun"), a...)
}

// copyPython copies testdata/apps/script into dir, with dtmarks.py, the
// interval marks the scripts import.
func copyPython(t *testing.T, dir, script string) {
	t.Helper()
	for _, name := range []string{script, "dtmarks.py"} {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "apps", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// traceCallsByThread counts the MPI calls in the trace file at path per
// thread and function name (a folded run of polls is one call: one
// event).
func traceCallsByThread(t *testing.T, path string) map[uint32]map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path})
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32]map[string]int{}
	for {
		e, err := rd.ReadEvent()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		n := out[e.Thread]
		if n == nil {
			n = map[string]int{}
			out[e.Thread] = n
		}
		n[rd.Definitions().Function(e.Func).GetName()]++
	}
}
