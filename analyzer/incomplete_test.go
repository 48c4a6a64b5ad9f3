package analyzer

import (
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// A rank whose tracing stopped early (SIZE_LIMIT) inside interval 1:
// interval 3, which every rank left before, is complete; interval 1 and
// the whole program are incomplete with rank 2 marked; interval 2, which
// ran on ranks 0 and 1 after rank 2's trace ended, is incomplete without
// any rank marked (rank 2 may have executed it unseen).
func TestIncompleteTrace(t *testing.T) {
	run, ranks := start(3)
	for i, r := range ranks {
		r.Pcontrol(100, 3).Compute(10*ms).Barrier(1*ms).Pcontrol(101, 3)
		r.Pcontrol(100, 1).Compute(50 * ms)
		if i == 2 {
			r.StopReason(tracepb.Footer_SIZE_LIMIT) // nothing after this
			continue
		}
		r.Compute(50*ms).Pcontrol(101, 1)
		r.Pcontrol(100, 2).Compute(20*ms).Pcontrol(101, 2)
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	if iv := find(t, rep, 3); iv.Incomplete || rank(t, iv, 2).Incomplete {
		t.Errorf("interval 3 marked incomplete: %q", iv.IncompleteReason)
	}
	for _, path := range [][]int{{}, {1}} {
		iv := find(t, rep, path...)
		r2 := rank(t, iv, 2)
		if !iv.Incomplete || !strings.Contains(iv.IncompleteReason, "rank(s) 2: its trace ends inside this interval (SIZE_LIMIT") ||
			!r2.Incomplete || !strings.Contains(r2.IncompleteReason, "SIZE_LIMIT: tracing stopped at MaxTraceSize") ||
			rank(t, iv, 0).Incomplete || rank(t, iv, 1).Incomplete {
			t.Errorf("interval %v: incomplete %v %q; rank 2 %v %q", path, iv.Incomplete, iv.IncompleteReason, r2.Incomplete, r2.IncompleteReason)
		}
	}
	iv := find(t, rep, 2)
	if len(iv.Ranks) != 2 || !iv.Incomplete || !strings.Contains(iv.IncompleteReason, "rank(s) 2: its trace ends before this interval ended on the others") ||
		rank(t, iv, 0).Incomplete || rank(t, iv, 1).Incomplete {
		t.Errorf("interval 2: incomplete %v %q", iv.Incomplete, iv.IncompleteReason)
	}
	// Rank 2's execution of interval 1 ends at its last event, the
	// entering MPI_Pcontrol: the 50 ms computed after it are unseen.
	expect(t, "interval 1 rank 2 Execution", rank(t, find(t, rep, 1), 2).ExecutionTime, 0)
}
