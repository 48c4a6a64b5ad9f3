package analyzer

import (
	"context"
	"strings"
	"testing"
)

// A panic in a replay's coroutine outside replayer.run (the exchange's or
// the scheduler's code) ends that replay with an internal error, and the
// others run to their end.
func TestSchedPanicEndsReplay(t *testing.T) {
	const n = 3
	for _, workers := range []int{1, 2} {
		present := []bool{true, true, true}
		x := newExchange(n, present, defaultLimits())
		s := newSched(context.Background(), x)
		x.s = s
		var done [n]bool
		for r := range int32(n) {
			s.add(r, func() {
				if r == 1 {
					panic("broken")
				}
				done[r] = true
			})
		}
		err := s.run(workers)
		if err == nil || !strings.Contains(err.Error(), "internal error replaying rank 1: broken") {
			t.Errorf("%d workers: error %v, want rank 1's internal error", workers, err)
		}
		if !done[0] || !done[2] {
			t.Errorf("%d workers: replays finished %v, want ranks 0 and 2", workers, done)
		}
		if s.live != 0 {
			t.Errorf("%d workers: %d replays still live", workers, s.live)
		}
	}
}

// TestScanWorkers: one scan worker per 64 files, at least one, at most
// the processors.
func TestScanWorkers(t *testing.T) {
	for _, c := range []struct{ files, cpus, want int }{
		{1, 2, 1}, {4, 2, 1}, {127, 2, 1}, {128, 2, 2}, {32768, 2, 2}, {32768, 1, 1}, {32768, 64, 64}, {0, 8, 1},
	} {
		if got := scanWorkers(c.files, c.cpus); got != c.want {
			t.Errorf("scanWorkers(%d, %d) = %d, want %d", c.files, c.cpus, got, c.want)
		}
	}
}
