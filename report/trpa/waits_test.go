package trpa

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/reporttest"
)

// TestGoldenWaits renders the waits section, its causes and the SRC
// points' "made it wait" lines of a hand-built report (the full fixture
// with waits in interval 1.2: rank 1's MPI_Waitall waited for rank 3's
// MPI_Isend, computed late after its MPI_Allreduce), with and without the
// per-processor lines, and compares with testdata/waits*.trpa.
func TestGoldenWaits(t *testing.T) {
	r := reporttest.Full()
	i := slices.IndexFunc(r.Intervals, func(iv report.Interval) bool { return slices.Equal(iv.Path, []int{1, 2}) })
	if i < 0 {
		t.Fatal("no interval 1.2 in the fixture")
	}
	iv := &r.Intervals[i]
	iv.Waits = []report.Wait{
		{Kind: report.LateSender, WaitingRank: 1, LateRank: 3, Seconds: 0.25, Count: 10, WaitingSRC: 2, LateSRC: 4},
		{Kind: "wait_at_nxn", WaitingRank: 0, LateRank: 3, Seconds: 0.05, Count: 2, WaitingSRC: 3, LateSRC: 3},
		{Kind: report.WrongOrder, WaitingRank: 0, LateRank: 1, Seconds: 0.01, Count: 1, WaitingSRC: 2, LateSRC: 4},
	}
	iv.Causes = []report.Cause{
		{LateRank: 3, FromSRC: 3, ToSRC: 4, Count: 10, Waits: 0.25, Delay: 0.2, LateComputation: 0.5, WaitingComputation: 0.3},
		{LateRank: 1, FromSRC: 0, ToSRC: 4, Count: 1, Waits: 0.01, Delay: 0, LateComputation: 0.001, WaitingComputation: 0.002},
	}
	for _, tt := range []struct {
		name string
		opts Options
	}{{"waits", Options{}}, {"waits-wp", Options{NoPerProcessor: true}}} {
		t.Run(tt.name, func(t *testing.T) {
			reporttest.Golden(t, filepath.Join("testdata", tt.name+".trpa"), []byte(render(t, r, tt.opts)), *update)
		})
	}
}
