package analyzer

import (
	"context"
	"fmt"
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
// worker they run in order on the calling goroutine; a panic of an item
// reaches the caller (which Analyze turns into an internal error) after
// the other items ran.
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
	for _, workers := range []int{1, 3} {
		var mu sync.Mutex
		ran := 0
		p := func() (p any) {
			defer func() { p = recover() }()
			parallel(20, workers, func(i int) {
				if i == 5 || i == 7 && workers > 1 {
					panic(fmt.Sprint("item ", i))
				}
				mu.Lock()
				ran++
				mu.Unlock()
			})
			return nil
		}()
		if s, _ := p.(string); !strings.HasPrefix(s, "item ") {
			t.Errorf("parallel(20, %d): the caller got %v, want an item's panic", workers, p)
		}
		if workers > 1 && ran != 18 {
			t.Errorf("parallel(20, %d): %d items ran besides the two that panicked, want 18", workers, ran)
		}
	}
}
