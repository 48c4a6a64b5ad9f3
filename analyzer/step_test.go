package analyzer

import (
	"context"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
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
	reps[1].clkOffsetOnly, reps[1].clkAffine, reps[1].clk = false, false, nil
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

// analyzeOne analyzes run with one worker, which replays on its stack
// (analyzeOpts compares the report with the coroutines' alone), with the
// replay's bounds changed by set when it is not nil.
func analyzeOne(t *testing.T, run *tracetest.Run, set func(*limits)) *report.Report {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	lim := defaultLimits()
	if set != nil {
		set(&lim)
	}
	return analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: 1, limits: &lim})
}

// MPI_Sendrecv whose send flow control holds back: its receive is
// replayed after the hold, in the coroutine. Rank 0 sends 3 messages and
// a 4th with MPI_Sendrecv (limits.pending 4), whose receive waits from
// 0.004 ms for rank 1's send at 10.005 ms (after its 10 ms of computation
// and four receives of 1 µs).
func TestStepSendrecvFlowControl(t *testing.T) {
	run, r0, r1 := pair()
	for i := 0; i < 3; i++ {
		r0.Send(1, 0, 8, us)
	}
	r0.Sendrecv(1, 0, 8, 1, 1, 8, 20*ms)
	r1.Compute(10 * ms)
	for i := 0; i < 4; i++ {
		r1.Recv(0, 0, 8, us)
	}
	r1.Send(0, 1, 8, us)
	r1.Compute(r0.Now() - r1.Now())
	finish(run)
	rep := analyzeOne(t, run, func(l *limits) { l.pending = 4 })
	noWarnings(t, rep)
	iv := find(t, rep)
	expect(t, "Real Sync rank 0", rank(t, iv, 0).RealSync, 0.010001)
	expect(t, "Real Sync rank 1", rank(t, iv, 1).RealSync, 0)
	if n := iv.Main.ReceiveNumber; n != 5 {
		t.Errorf("%d receives, want 5", n)
	}
}

// A replay waiting in a collective on the worker's stack that a stall
// releases gives its wait up in the coroutine: rank 0 waits in MPI_Barrier
// for rank 1, which waits for a message rank 0 never sends.
func TestStepCollectiveStall(t *testing.T) {
	run, r0, r1 := pair()
	r0.Barrier(ms)
	r1.Recv(0, 0, 8, ms)
	r1.Barrier(ms)
	finish(run)
	rep := analyzeOne(t, run, nil)
	if !hasWarning(rep, "stalled 1 time(s)") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	want := report.Unmatched{Receives: 1, Collectives: 1, Stalls: 1}
	if un := rep.Unmatched; un == nil || *un != want {
		t.Errorf("unmatched %+v, want %+v", un, want)
	}
}
