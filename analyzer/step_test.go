package analyzer

import (
	"context"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// A panic on the worker's stack (a bug) ends that rank's replay with an
// internal error, as a panic in its coroutine does, and the other replays
// finish: the one waiting for the failed rank's message gives its receive
// up.
func TestStepPanicEndsReplay(t *testing.T) {
	const n = 3
	run := tracetest.NewRun(n)
	for i := 0; i < n; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
		r.Send(int32((i+1)%n), 0, 8, 1*us)
		r.Recv(int32((i+n-1)%n), 0, 8, 1*ms)
		r.Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := Options{Dir: dir, App: "app", MaxLevel: -1}
	sc, err := scanRun(ctx, opts, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	x, s, reps := newReplay(ctx, opts, sc, nil)
	// No clock map: rank 1's first event panics converting its times.
	reps[1].clkOffsetOnly, reps[1].clk = false, nil
	if err := s.run(1); err != nil {
		t.Fatal(err)
	}
	if !x.stepping {
		t.Fatal("one worker did not step")
	}
	if err := reps[1].readErr; err == nil || !strings.Contains(err.Error(), "internal error replaying") {
		t.Errorf("rank 1: error %v, want an internal error", err)
	}
	if s.live != 0 || !x.ranks[1].done.Load() {
		t.Errorf("%d replays still live, rank 1 finished: %v", s.live, x.ranks[1].done.Load())
	}
	for _, r := range []int{0, 2} {
		if rp := reps[r]; !rp.finalized || rp.readErr != nil {
			t.Errorf("rank %d: finalized %v, error %v", r, rp.finalized, rp.readErr)
		}
	}
	if reps[2].unmatchedRecvs != 1 || reps[0].unmatchedRecvs != 0 {
		t.Errorf("unmatched receives %d (rank 2), %d (rank 0), want 1 and 0", reps[2].unmatchedRecvs, reps[0].unmatchedRecvs)
	}
}
