// Package realtraces finds the traces of real MPI programs that
// scripts/realtraces.sh writes once per machine, which the benchmarks of
// the analyzer and of the dtpa command read.
package realtraces

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// Names are the traces, in the order the benchmarks run them (see
// scripts/realtraces.sh for what each program does).
var Names = []string{"stencil", "stencil32", "stencil128", "alltoall", "hpcc", "lammps"}

// Dir is where scripts/realtraces.sh writes them: $DTPA_REAL_TRACES, else
// $TMPDIR/dtpa-bench-traces.
func Dir() string {
	if d := os.Getenv("DTPA_REAL_TRACES"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "dtpa-bench-traces")
}

// App returns the directory of trace name and the program whose traces it
// holds (<app>.0.trc), or why the benchmark of that trace cannot run: the
// script has not written it completely, or it holds the traces of no
// single program.
func App(name string) (dir, app string, err error) {
	dir = filepath.Join(Dir(), name)
	if _, err := os.Stat(filepath.Join(dir, "COMPLETE")); err != nil {
		return dir, "", fmt.Errorf("no trace in %s: scripts/realtraces.sh writes it (needs Open MPI and make build; make bench runs it)", dir)
	}
	m, err := filepath.Glob(filepath.Join(dir, "*.0.trc"))
	if err != nil || len(m) != 1 {
		return dir, "", fmt.Errorf("%s: want the traces of one program, found %v", dir, m)
	}
	return dir, strings.TrimSuffix(filepath.Base(m[0]), ".0.trc"), nil
}

// Need returns App's directory and program for benchmark b, or skips b,
// saying why on stderr too: go test does not print a skipped benchmark's
// reason.
func Need(b testing.TB, name string) (dir, app string) {
	b.Helper()
	dir, app, err := App(name)
	if err != nil {
		msg := fmt.Sprintf("%s skipped: %v", b.Name(), err)
		fmt.Fprintln(os.Stderr, msg)
		b.Skip(msg)
	}
	return dir, app
}

// Calls is the number of MPI calls the program made, as the report counts
// them: the whole program's calls of every MPI function, a folded run of
// unsuccessful polls counting as the calls it stands for. The trace's
// events can be far fewer (hpcc's MPI_Testany loops: 4.35 M calls in
// 116 215 events), so the benchmarks give calls per second, the figure
// a user's run is measured by, and events per second, the analyzer's work,
// side by side.
func Calls(rep *report.Report) int64 {
	if rep == nil || len(rep.Intervals) == 0 {
		return 0
	}
	var n int64
	for _, f := range rep.Intervals[0].Functions {
		n += f.Calls
	}
	return n
}
