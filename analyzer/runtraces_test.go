package analyzer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// TestRunTracesMissing: the ranks of a run that have no trace in the
// directory (a job run from a directory of each node's own) are listed,
// by the headers' world size; a header that claims more processes than
// dtpa handles (a damaged or forged one) does not make the list.
func TestRunTracesMissing(t *testing.T) {
	dir := t.TempDir()
	run := tracetest.NewRun(6)
	for r := 0; r < 6; r++ {
		run.Rank(r).Compute(1000).Barrier(10)
	}
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{1, 3, 4} {
		os.Remove(filepath.Join(dir, fmt.Sprintf("app.%d.trc", r)))
	}
	sets := RunTraces(dir, nil)
	if len(sets) != 1 || sets[0].World != 6 || !slices.Equal(sets[0].Missing, []int{1, 3, 4}) {
		t.Errorf("sets %+v, want a world of 6 missing ranks 1, 3, 4", sets)
	}

	huge := t.TempDir()
	f, err := os.Create(filepath.Join(huge, "big.0.trc"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := traceformat.NewWriter(f, &tracepb.Header{Rank: 0, WorldSize: 1 << 30, RunId: []byte("0123456789abcdef")}, traceformat.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(&tracepb.Footer{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if sets := RunTraces(huge, nil); len(sets) != 1 || sets[0].World != 0 || sets[0].Missing != nil {
		t.Errorf("a header claiming 2^30 processes: sets %+v, want the world unknown and none missing", sets)
	}
}
