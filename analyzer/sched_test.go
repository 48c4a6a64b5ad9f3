package analyzer

import (
	"context"
	"slices"
	"strings"
	"sync"
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

// TestParallel: every item runs once whatever the workers; with one
// worker they run in order on the calling goroutine (a panic in one is
// then the caller's, which Analyze turns into an internal error).
func TestParallel(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 5} {
		for _, n := range []int{0, 1, 7, 100} {
			var mu sync.Mutex
			var got []int
			parallel(n, workers, func(i int) {
				mu.Lock()
				got = append(got, i)
				mu.Unlock()
			})
			if workers <= 1 && !slices.IsSorted(got) {
				t.Errorf("parallel(%d, %d): items ran out of order: %v", n, workers, got)
			}
			slices.Sort(got)
			if len(got) != n || n > 0 && (got[0] != 0 || got[n-1] != n-1 || len(slices.Compact(got)) != n) {
				t.Errorf("parallel(%d, %d): ran %v", n, workers, got)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("parallel(3, 1): a panic of an item did not reach the caller")
		}
	}()
	parallel(3, 1, func(i int) {
		if i == 1 {
			panic("item 1")
		}
	})
}
