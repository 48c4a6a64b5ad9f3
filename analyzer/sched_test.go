package analyzer

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
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

// TestProcs: an analysis with the default workers tells Options.Procs,
// once, how many goroutines it runs at once: one for a run of a few ranks
// (one scan worker and one replay worker), and its report is the one of
// the analysis with every worker the machine has.
func TestProcs(t *testing.T) {
	run, ranks := start(4)
	for i, r := range ranks {
		r.Compute(ms)
		r.Barrier(int64(i+1) * us)
		r.Finalize(us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	var told []int
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Procs: func(n int) { told = append(told, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] != 1 {
		t.Fatalf("Procs told %v, want [1]", told)
	}
	want := analyzeDir(t, dir)
	if a, b := mustJSON(t, rep), mustJSON(t, want); !bytes.Equal(a, b) {
		t.Errorf("report with the default workers differs from the one with %d", runtime.GOMAXPROCS(0))
	}
	for _, c := range []struct{ files, cpus, want int }{
		{1, 2, 1}, {4, 2, 1}, {127, 2, 1}, {128, 2, 2}, {32768, 2, 2}, {32768, 1, 1}, {32768, 64, 64}, {0, 8, 1},
	} {
		if got := scanWorkers(c.files, c.cpus); got != c.want {
			t.Errorf("scanWorkers(%d, %d) = %d, want %d", c.files, c.cpus, got, c.want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
