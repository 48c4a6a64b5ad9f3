package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCompactedAsRanksEnd: dtrun compacts the traces of its node's ranks
// as each rank ends, while the job still runs (cmd/dtrun,
// earlyCompactor): rank 0 of testdata/apps/lastrank.c stays on after
// MPI_Finalize until the other ranks' traces are no longer deferred, and
// says how many still are (it gives up after 20 s: the test then fails
// without waiting longer). The job's traces are then whole: dtpa reads
// every rank's calls. Under both MPIs.
func TestCompactedAsRanksEnd(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "lastrank")
			out := trace(t, m, dir, nil, 3, exe)
			if !strings.Contains(out, "lastrank: 0 of 2 traces still deferred") {
				t.Errorf("the ranks' traces were not compacted while the job ran:\n%s", out)
			}
			rep, _ := analyse(t, dir, filepath.Base(exe))
			fs := rep.Intervals[0].Functions
			n := map[string]int64{}
			for _, f := range fs {
				n[f.Function] = f.Calls
			}
			if n["MPI_Sendrecv_replace"] != 3 {
				t.Errorf("calls by function %v, want 3 MPI_Sendrecv_replace", n)
			}
		})
	}
}
