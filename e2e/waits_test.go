package e2e

import (
	"testing"

	"github.com/dtpa/dtpa/report"
)

// checkLateSenders verifies that the Real Sync of each waiting rank e.late
// names is attributed to the late sender it names, at an MPI_Send call
// site (that the waits add up to Real Sync is report.Check's, in
// checkInvariants).
func checkLateSenders(t *testing.T, iv *report.Interval, e expect) {
	t.Helper()
	seen := map[int]bool{}
	for _, w := range iv.Waits {
		want, ok := e.late[w.WaitingRank]
		if !ok || w.Kind != report.LateSender {
			continue
		}
		seen[w.WaitingRank] = true
		if w.LateRank != want {
			t.Errorf("interval %v: rank %d waited %.4f s for rank %d, want rank %d", e.path, w.WaitingRank, w.Seconds, w.LateRank, want)
		}
		if fn := srcFunction(iv, w.LateSRC); fn != "MPI_Send" {
			t.Errorf("interval %v: rank %d's late call is %q (SRC %d), want MPI_Send", e.path, w.WaitingRank, fn, w.LateSRC)
		}
	}
	for r := range e.late {
		if !seen[r] {
			t.Errorf("interval %v: no late-sender wait of rank %d in %+v", e.path, r, iv.Waits)
		}
	}
}

func srcFunction(iv *report.Interval, id int) string {
	for _, s := range iv.SRC {
		if s.ID == id {
			return s.Function
		}
	}
	return ""
}
