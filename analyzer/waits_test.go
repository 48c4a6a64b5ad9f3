package analyzer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// srcID is the SRC id of the interval's call site of function fn (the
// default site: one per function).
func srcID(t *testing.T, iv *report.Interval, fn string) int {
	t.Helper()
	for _, p := range iv.SRC {
		if p.Function == fn {
			return p.ID
		}
	}
	t.Fatalf("no SRC point for %s", fn)
	return 0
}

// expectWaits compares the interval's waits, in their order, with want
// (seconds within tol).
func expectWaits(t *testing.T, iv *report.Interval, want []report.Wait) {
	t.Helper()
	if len(iv.Waits) != len(want) {
		t.Fatalf("waits %+v, want %+v", iv.Waits, want)
	}
	for i, w := range want {
		g := iv.Waits[i]
		expect(t, fmt.Sprintf("wait %d seconds", i), g.Seconds, w.Seconds)
		g.Seconds = w.Seconds
		if g != w {
			t.Errorf("wait %d: %+v, want %+v", i, iv.Waits[i], w)
		}
	}
}

// A late sender names the sending rank and its MPI_Send as the culprit of
// the receive's Real Sync.
func TestWaitsLateSender(t *testing.T) {
	iv := find(t, analyzeRun(t, lateSender()))
	// Real Sync of rank 1 = send entry 200.001 ms − receive entry 0.001 ms.
	expectWaits(t, iv, []report.Wait{{Kind: "late_sender", WaitingRank: 1, LateRank: 0, Seconds: 0.2, Count: 1,
		WaitingSRC: srcID(t, iv, "MPI_Recv"), LateSRC: srcID(t, iv, "MPI_Send")}})
}

// A Waitall completing two receives waits for the later of the two
// senders, rank 2, whose clock runs 3 ms ahead (aligned by its clock-sync
// records before anything is computed).
func TestWaitsWaitallSkewed(t *testing.T) {
	run := tracetest.NewRun(3)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	r2.Skew(3*ms, 0)
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Init(1 * us)
	}
	r0.Compute(10*ms).Send(1, 1, 8, 10*us, tracetest.Site("early send")) // entered at 10.001 ms
	r2.Compute(50*ms).Send(1, 1, 8, 10*us, tracetest.Site("late send"))  // entered at 50.001 ms
	a := r1.Irecv(0, 1, 8, 1*us)                                         // 0.001 … 0.002 ms
	b := r1.Irecv(2, 1, 8, 1*us)                                         // 0.002 … 0.003 ms
	r1.Waitall([]tracetest.Req{a, b}, 50*ms)                             // 0.003 … 50.003 ms
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Finalize(1 * us)
	}
	iv := find(t, analyzeRun(t, run))
	late := 0
	for _, p := range iv.SRC {
		if p.Function == "MPI_Send" && len(p.Ranks) == 1 && p.Ranks[0].Rank == 2 {
			late = p.ID
		}
	}
	// Real Sync = the latest send entry, 50.001 ms, − the Waitall's
	// entry, 0.003 ms = 49.998 ms, all of it rank 2's.
	expect(t, "rank 1 Real Sync", rank(t, iv, 1).RealSync, 0.049998)
	expectWaits(t, iv, []report.Wait{{Kind: "late_sender", WaitingRank: 1, LateRank: 2, Seconds: 0.049998, Count: 1,
		WaitingSRC: srcID(t, iv, "MPI_Waitall"), LateSRC: late}})
}

// A synchronous send waiting for its receive names the receiving rank.
func TestWaitsLateReceiver(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	r0.Ssend(1, 5, 8, 100*ms)              // 0.001 … 100.001 ms
	r1.Compute(80*ms).Recv(0, 5, 8, 10*us) // posted at 80.001 ms
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	iv := find(t, analyzeRun(t, run))
	// The send waited from its entry, 0.001 ms, to the receive's
	// posting, 80.001 ms.
	expectWaits(t, iv, []report.Wait{{Kind: "late_receiver", WaitingRank: 0, LateRank: 1, Seconds: 0.08, Count: 1,
		WaitingSRC: srcID(t, iv, "MPI_Ssend"), LateSRC: srcID(t, iv, "MPI_Recv")}})
}

// Staggered arrivals at MPI_Barrier: every earlier rank's Potential Sync
// is attributed to the last arriver, rank 1; then a late MPI_Bcast root;
// then an MPI_Reduce whose root came with the first sender (rank 2): the
// root waits for the last sender, rank 1, an early reduce (Scalasca's Early
// Reduce: the last sender's entry minus the root's); rank 2 waits for rank
// 1 beyond any pattern (wait_at_collective).
func TestWaitsCollectives(t *testing.T) {
	run := tracetest.NewRun(3)
	rs := []*tracetest.Rank{run.Rank(0), run.Rank(1), run.Rank(2)}
	for _, r := range rs {
		r.Init(1 * us)
	}
	// Barrier entries 10.001, 30.001, 20.001 ms; all leave at 30.011 ms.
	for i, d := range []int64{10 * ms, 30 * ms, 20 * ms} {
		rs[i].Compute(d).Barrier(30*ms + 10*us - d)
	}
	// Bcast from root 2, entered 5 ms after the others (at 35.011 ms
	// against 30.011 ms); each lasts until 35.021 ms.
	rs[0].Bcast(2, 8, 5*ms+10*us)
	rs[1].Bcast(2, 8, 5*ms+10*us)
	rs[2].Compute(5*ms).Bcast(2, 8, 10*us)
	// Reduce to root 0 entered at 35.021 ms; rank 1 enters 7 ms later.
	rs[0].Reduce(0, 8, 7*ms+10*us)
	rs[1].Compute(7*ms).Reduce(0, 8, 10*us)
	rs[2].Reduce(0, 8, 10*us)
	for _, r := range rs {
		r.Finalize(1 * us)
	}
	iv := find(t, analyzeRun(t, run))
	bar, bc, red := srcID(t, iv, "MPI_Barrier"), srcID(t, iv, "MPI_Bcast"), srcID(t, iv, "MPI_Reduce")
	expectWaits(t, iv, []report.Wait{
		{Kind: "wait_at_barrier", WaitingRank: 0, LateRank: 1, Seconds: 0.02, Count: 1, WaitingSRC: bar, LateSRC: bar},
		{Kind: "wait_at_barrier", WaitingRank: 2, LateRank: 1, Seconds: 0.01, Count: 1, WaitingSRC: bar, LateSRC: bar},
		{Kind: "early_reduce", WaitingRank: 0, LateRank: 1, Seconds: 0.007, Count: 1, WaitingSRC: red, LateSRC: red},
		{Kind: "wait_at_collective", WaitingRank: 2, LateRank: 1, Seconds: 0.007, Count: 1, WaitingSRC: red, LateSRC: red},
		{Kind: "late_broadcast", WaitingRank: 0, LateRank: 2, Seconds: 0.005, Count: 1, WaitingSRC: bc, LateSRC: bc},
		{Kind: "late_broadcast", WaitingRank: 1, LateRank: 2, Seconds: 0.005, Count: 1, WaitingSRC: bc, LateSRC: bc},
	})
}

// The rooted collectives split each participant's Potential Sync into the
// part Scalasca's pattern explains and the rest, waiting for the latest
// participant: an MPI_Reduce to an early root 0 (rank 1 comes 5 ms after
// it, rank 2 8 ms), then an MPI_Bcast from root 1, which comes 4 ms after
// rank 0 and 2 ms before rank 2.
func TestWaitsShapeSplit(t *testing.T) {
	run := tracetest.NewRun(3)
	rs := []*tracetest.Rank{run.Rank(0), run.Rank(1), run.Rank(2)}
	for _, r := range rs {
		r.Init(1 * us) // all at 0.001 ms
	}
	// Reduce entries 0.001, 5.001, 8.001 ms; all leave at 8.011 ms.
	for i, d := range []int64{0, 5 * ms, 8 * ms} {
		rs[i].Compute(d).Reduce(0, 8, 8*ms+10*us-d)
	}
	// Bcast entries 8.011, 12.011, 14.011 ms; all leave at 14.021 ms
	// (rank 1 then gets 2 ms of Potential Sync, rank 0 6 ms).
	for i, d := range []int64{0, 4 * ms, 6 * ms} {
		rs[i].Compute(d).Bcast(1, 8, 6*ms+10*us-d)
	}
	for _, r := range rs {
		r.Finalize(1 * us)
	}
	iv := find(t, analyzeRun(t, run))
	bc, red := srcID(t, iv, "MPI_Bcast"), srcID(t, iv, "MPI_Reduce")
	// Reduce: the root's 8 ms = early_reduce until the last sender,
	// rank 2 (Scalasca's Early Reduce); rank 1's 3 ms are rank 2's too,
	// wait_at_collective.
	// Bcast: rank 0's 6 ms = late_broadcast until the root's entry (4 ms)
	// + 2 ms for rank 2; the root's 2 ms are rank 2's.
	expectWaits(t, iv, []report.Wait{
		{Kind: "early_reduce", WaitingRank: 0, LateRank: 2, Seconds: 0.008, Count: 1, WaitingSRC: red, LateSRC: red},
		{Kind: "late_broadcast", WaitingRank: 0, LateRank: 1, Seconds: 0.004, Count: 1, WaitingSRC: bc, LateSRC: bc},
		{Kind: "wait_at_collective", WaitingRank: 1, LateRank: 2, Seconds: 0.003, Count: 1, WaitingSRC: red, LateSRC: red},
		{Kind: "wait_at_collective", WaitingRank: 0, LateRank: 2, Seconds: 0.002, Count: 1, WaitingSRC: bc, LateSRC: bc},
		{Kind: "wait_at_collective", WaitingRank: 1, LateRank: 2, Seconds: 0.002, Count: 1, WaitingSRC: bc, LateSRC: bc},
	})
	// Causes: before the Reduce every rank computed since MPI_Init (from
	// SRC 0): 0, 5, 8 ms; before the Bcast, since the Reduce: 0, 4, 6 ms.
	// Each wait's delay is the whole wait (the late rank computed longer
	// than the waiter by at least the wait). Rank 2 made the root wait 8
	// ms and rank 1 3 ms at the Reduce (computations 8 + 8 against 0 +
	// 5); at the Bcast rank 1 made
	// rank 0 wait 4 ms (4 against 0), rank 2 ranks 0 and 1 2 ms each (6 + 6
	// against 0 + 4).
	want := []report.Cause{
		{LateRank: 2, FromSRC: 0, ToSRC: red, Count: 2, Waits: 0.011, Delay: 0.011, LateComputation: 0.016, WaitingComputation: 0.005},
		{LateRank: 1, FromSRC: red, ToSRC: bc, Count: 1, Waits: 0.004, Delay: 0.004, LateComputation: 0.004, WaitingComputation: 0},
		{LateRank: 2, FromSRC: red, ToSRC: bc, Count: 2, Waits: 0.004, Delay: 0.004, LateComputation: 0.012, WaitingComputation: 0.004},
	}
	if len(iv.Causes) != len(want) {
		t.Fatalf("causes %+v, want %+v", iv.Causes, want)
	}
	for i, w := range want {
		g := iv.Causes[i]
		expect(t, fmt.Sprintf("cause %d waits", i), g.Waits, w.Waits)
		expect(t, fmt.Sprintf("cause %d delay", i), g.Delay, w.Delay)
		expect(t, fmt.Sprintf("cause %d late computation", i), g.LateComputation, w.LateComputation)
		expect(t, fmt.Sprintf("cause %d waiting computation", i), g.WaitingComputation, w.WaitingComputation)
		if g.LateRank != w.LateRank || g.FromSRC != w.FromSRC || g.ToSRC != w.ToSRC || g.Count != w.Count {
			t.Errorf("cause %d: %+v, want %+v", i, g, w)
		}
	}
}

// Messages in wrong order: rank 2 waits in MPI_Recv for rank 0's message
// (sent at 10.001 ms) while rank 1's, sent at 2.001 ms, was there to be
// received; it receives that one next. Its second wait, for rank 0's
// message sent at 20.001 ms, is a plain late sender: nothing it receives
// after was sent earlier.
func TestWaitsWrongOrder(t *testing.T) {
	run := tracetest.NewRun(3)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Init(1 * us)
	}
	r0.Compute(10*ms).Send(2, 1, 8, 0, tracetest.Site("late send")) // 10.001 ms
	r1.Compute(2*ms).Send(2, 2, 8, 0, tracetest.Site("early send")) // 2.001 ms
	r2.Recv(0, 1, 8, 10*ms)                                         // 0.001 … 10.001 ms
	r2.Recv(1, 2, 8, 10*us)                                         // 10.001 … 10.011 ms
	r0.Compute(10*ms).Send(2, 3, 8, 0, tracetest.Site("late send")) // 20.001 ms
	r2.Recv(0, 3, 8, 20*ms+1*us-10*ms-11*us)                        // 10.011 … 20.001 ms
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Finalize(1 * us)
	}
	iv := find(t, analyzeRun(t, run))
	late := 0
	for _, p := range iv.SRC {
		if p.Function == "MPI_Send" && len(p.Ranks) == 1 && p.Ranks[0].Rank == 0 {
			late = p.ID
		}
	}
	recv := srcID(t, iv, "MPI_Recv")
	// Real Sync: 10.001 − 0.001 = 10 ms (wrong order), then 20.001 −
	// 10.011 = 9.99 ms (late sender).
	expect(t, "rank 2 Real Sync", rank(t, iv, 2).RealSync, 0.01999)
	expectWaits(t, iv, []report.Wait{
		{Kind: "wrong_order", WaitingRank: 2, LateRank: 0, Seconds: 0.01, Count: 1, WaitingSRC: recv, LateSRC: late},
		{Kind: "late_sender", WaitingRank: 2, LateRank: 0, Seconds: 0.00999, Count: 1, WaitingSRC: recv, LateSRC: late},
	})
}

// A synchronous send waiting for a nonblocking receive names the
// MPI_Irecv, whose posting it waited for, not the MPI_Wait after it.
func TestWaitsLateReceiverIrecv(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	r0.Ssend(1, 5, 8, 100*ms)                // 0.001 … 100.001 ms
	q := r1.Compute(80*ms).Irecv(0, 5, 8, 0) // posted at 80.001 ms
	r1.Compute(20*ms).Wait(q, 10*us)
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	iv := find(t, analyzeRun(t, run))
	expectWaits(t, iv, []report.Wait{{Kind: "late_receiver", WaitingRank: 0, LateRank: 1, Seconds: 0.08, Count: 1,
		WaitingSRC: srcID(t, iv, "MPI_Ssend"), LateSRC: srcID(t, iv, "MPI_Irecv")}})
}

// The cause of a wait: rank 0's MPI_Waitall waits for rank 1's MPI_Isend,
// which came late because rank 1 computed 30 ms since its MPI_Barrier
// against rank 0's 10 ms; the MPI_Irecv and MPI_Isend in between start
// requests and return: they do not end the span.
func TestWaitsCauses(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	for _, r := range []*tracetest.Rank{r0, r1} {
		r.Init(1 * us).Barrier(10 * us) // 0.001 … 0.011 ms
	}
	a := r0.Compute(10*ms).Irecv(1, 1, 8, us) // 10.011 … 10.012 ms
	b := r0.Isend(1, 1, 8, us)                // 10.012 … 10.013 ms
	r0.Waitall([]tracetest.Req{a, b}, 20*ms)  // 10.013 … 30.013 ms
	c := r1.Compute(30*ms).Irecv(0, 1, 8, us) // 30.011 … 30.012 ms
	d := r1.Isend(0, 1, 8, us)                // 30.012 … 30.013 ms
	r1.Waitall([]tracetest.Req{c, d}, 10*us)
	for _, r := range []*tracetest.Rank{r0, r1} {
		r.Finalize(1 * us)
	}
	iv := find(t, analyzeRun(t, run))
	if len(iv.Causes) != 1 {
		t.Fatalf("causes %+v, want one", iv.Causes)
	}
	c0 := iv.Causes[0]
	// Wait: 30.012 − 10.013 = 19.999 ms. Computations: rank 1 30.012 −
	// 0.011 − 0.001 (its MPI_Irecv) = 30 ms, rank 0 10.013 − 0.011 −
	// 0.002 = 10 ms; the 20 ms more explain the whole wait.
	expect(t, "waits", c0.Waits, 0.019999)
	expect(t, "delay", c0.Delay, 0.019999)
	expect(t, "late computation", c0.LateComputation, 0.03)
	expect(t, "waiting computation", c0.WaitingComputation, 0.01)
	if c0.LateRank != 1 || c0.Count != 1 || c0.FromSRC != srcID(t, iv, "MPI_Barrier") || c0.ToSRC != srcID(t, iv, "MPI_Isend") {
		t.Errorf("cause %+v: want rank 1 from the MPI_Barrier (SRC %d) to the MPI_Isend (SRC %d), once", c0, srcID(t, iv, "MPI_Barrier"), srcID(t, iv, "MPI_Isend"))
	}
}

// A wrong-order wait moved by backward amortization stays a wrong-order
// wait: rank 2 waits 9 ms in MPI_Recv (1.001 … 10.011 ms) for rank 0's
// message sent at 10.001 ms, then receives rank 1's, sent at 2.001 ms (the
// first wait becomes wrong_order), then a message of rank 0 sent at 50.001
// ms by a receive its clock puts at 10.021 … 10.031 ms: the ~40 ms jump is
// amortized back to the fixed point at 0.001 ms, which moves the first
// receive's entry forward and shrinks its wait. report.Check (analyzeDir)
// verifies that the kinds still add up to Real Sync. (Rank 0's first send
// returns at once, as an eager send does: one still in progress at its
// receive's posting would make the receive a fixed point, clc.go.)
func TestWaitsWrongOrderAmortized(t *testing.T) {
	run := tracetest.NewRun(3)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Init(1 * us)
	}
	r0.Compute(10*ms).Send(2, 1, 8, 0)         // 10.001 ms
	r0.Compute(40*ms).Send(2, 3, 8, 10*us)     // 50.001 ms
	r1.Compute(2*ms).Send(2, 2, 8, 10*us)      // 2.001 ms
	r2.Compute(1*ms).Recv(0, 1, 8, 9*ms+10*us) // 1.001 … 10.011 ms
	r2.Recv(1, 2, 8, 10*us)                    // 10.011 … 10.021 ms
	r2.Recv(0, 3, 8, 10*us)                    // 10.021 … 10.031 ms: violation
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	if cv := rep.ClockViolations; cv == nil || cv.Amortized != 1 {
		t.Fatalf("clock_violations %+v, want one amortized", cv)
	}
	iv := find(t, rep)
	var wo []report.Wait
	for _, w := range iv.Waits {
		if w.Kind == report.WrongOrder {
			wo = append(wo, w)
		}
	}
	// The jump: d = 50.001 − 10.031 = 39.97 ms, spread over 0.001 …
	// 10.021 ms. The first receive's entry, 1.001 ms, moves by 1 ·
	// 39.97/10.02 = 3.989022 ms: its wait shrinks from 9 ms to 10.001 −
	// 4.990022 = 5.010978 ms, and stays wrong_order.
	if len(wo) != 1 || wo[0].WaitingRank != 2 || wo[0].LateRank != 0 || wo[0].Count != 1 {
		t.Fatalf("wrong-order waits %+v, want one of rank 2 for rank 0", wo)
	}
	expect(t, "wrong-order wait", wo[0].Seconds, 0.005010978)
}

// TestContainsLower checks containsLower against the lower-case copy it
// avoids building (collWaitKind).
func TestContainsLower(t *testing.T) {
	for _, s := range []string{"MPI_Scatter", "MPI_Iscatterv", "mpi_scatter_", "MPI_SCATTER", "MPI_Gather",
		"MPI_Barrier", "MPI_Ibarrier", "MPI_Bcast", "", "scatte", "MPI_Scatteİ", "MPI_ScİATTER", "xxBARRIERxx"} {
		for _, sub := range []string{"scatter", "gather", "barrier"} {
			if got, want := containsLower(s, sub), strings.Contains(strings.ToLower(s), sub); got != want {
				t.Errorf("containsLower(%q, %q) = %v, want %v", s, sub, got, want)
			}
		}
	}
}

// firstAfter finds what a binary search over the window finds, wherever
// the window starts in the ring and however full it is.
func TestWoRingFirstAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var w woRing
		w.n, w.next = rng.IntN(maxWrongOrder+1), rng.IntN(maxWrongOrder)
		start := (w.next - w.n + maxWrongOrder) % maxWrongOrder
		pm := int64(rng.IntN(50))
		for j := range w.n {
			pm += int64(rng.IntN(3)) // nondecreasing, with repeats
			w.recs[(start+j)%maxWrongOrder].pm = pm
		}
		at := int64(rng.IntN(int(pm) + 10))
		wantJ := sort.Search(w.n, func(j int) bool { return w.recs[(start+j)%maxWrongOrder].pm > at })
		wantHi := int64(math.MinInt64)
		if wantJ > 0 {
			wantHi = w.recs[(start+wantJ-1)%maxWrongOrder].pm
		}
		if j, hi := w.firstAfter(at); j != wantJ || hi != wantHi {
			t.Fatalf("n=%d next=%d t=%d: firstAfter = %d, %d; want %d, %d", w.n, w.next, at, j, hi, wantJ, wantHi)
		}
	}
}

// The ring's bound w.max is its newest record's pm and bounds every send
// entry in it, as noteLateSender (which takes pm from it) and the callers
// of wrongOrder (which skip it when t ≥ w.max) rely on; and the waits
// moved to wrong_order are those of a plain list of the last
// maxWrongOrder records, whatever the order of the send entries.
func TestWrongOrderBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		rp := &replayer{}
		a := &acc{}
		type rec struct{ s, ns int64 }
		var model []rec
		var lateNs, woNs int64
		spread := int64(1 + rng.IntN(200))
		for op := range 2000 {
			if rng.IntN(4) > 0 {
				f := &callFigures{syncT: int64(op) + rng.Int64N(spread) - spread/2, hasSync: true, realSync: 1 + rng.Int64N(9)}
				rp.lateSender(a, 1, f.realSync)
				rp.noteLateSender(a, 1, f, false)
				model = append(model, rec{f.syncT, f.realSync})
				if len(model) > maxWrongOrder {
					model = model[1:]
				}
				lateNs += f.realSync
			} else if at := int64(op) - rng.Int64N(spread); rp.wo.n > 0 && at < rp.wo.max {
				rp.wrongOrder(at)
				kept := model[:0]
				for _, r := range model {
					if r.s > at {
						lateNs -= r.ns
						woNs += r.ns
						continue
					}
					kept = append(kept, r)
				}
				model = kept
			}
			w := &rp.wo
			if w.n != len(model) {
				t.Fatalf("round %d op %d: %d records, want %d", round, op, w.n, len(model))
			}
			for j, r := range model {
				got := &w.recs[(w.next-w.n+j+maxWrongOrder)%maxWrongOrder]
				if got.s != r.s || got.s > got.pm || got.pm > w.max {
					t.Fatalf("round %d op %d: record %d s=%d pm=%d (max %d), want s=%d ≤ pm ≤ max", round, op, j, got.s, got.pm, w.max, r.s)
				}
			}
			if w.n > 0 {
				if newest := w.recs[w.prev(w.next)].pm; newest != w.max {
					t.Fatalf("round %d op %d: max %d, newest record's bound %d", round, op, w.max, newest)
				}
			}
		}
		var gotLate, gotWo int64
		for k, v := range a.culprits.all() {
			switch k.kind {
			case wkLateSender:
				gotLate += v.ns
			case wkWrongOrder:
				gotWo += v.ns
			}
		}
		if gotLate != lateNs || gotWo != woNs {
			t.Fatalf("round %d: late sender %d ns, wrong order %d ns; want %d, %d", round, gotLate, gotWo, lateNs, woNs)
		}
	}
}
