package analyzer

import (
	"math"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// mixed is a fixture with every kind of wait, for comparing analyses with
// and without injected clock skew.
func mixed() *tracetest.Run {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(1 * us)
	}
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	r0.Compute(200*ms).Send(1, 7, 8, 10*us)
	r1.Recv(0, 7, 8, 200*ms+20*us)
	q := r2.Irecv(1, 3, 8, 1*us)
	r1.Compute(5*ms).Send(2, 3, 8, 5*us)
	r2.Compute(300*ms).Wait(q, 5*us)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Pcontrol(100, 1)
		r.Compute(int64(i+1) * 30 * ms)
		r.Allreduce(8, 400*ms-r.Now()+int64(i)*10*us)
		r.Pcontrol(101, 1)
		r.Finalize(1 * us)
	}
	return run
}

// Injected offsets and drifts are undone by the alignment: the same
// figures as without skew.
func TestSkewIsUndone(t *testing.T) {
	want := analyzeRun(t, mixed())
	skewed := mixed()
	skewed.Rank(1).Skew(3*s, 80)
	skewed.Rank(2).Skew(-7*s, -50)
	got := analyzeRun(t, skewed)
	if len(got.Warnings) != 0 || got.ClockViolations != nil || got.Unmatched != nil {
		t.Errorf("warnings: %q, %+v, %+v", got.Warnings, got.ClockViolations, got.Unmatched)
	}
	compareReports(t, got, want)
}

func compareReports(t *testing.T, got, want *report.Report) {
	t.Helper()
	if len(got.Intervals) != len(want.Intervals) {
		t.Fatalf("%d intervals, want %d", len(got.Intervals), len(want.Intervals))
	}
	for i := range want.Intervals {
		g, w := got.Intervals[i], want.Intervals[i]
		for j := range w.Ranks {
			gr, wr := g.Ranks[j], w.Ranks[j]
			for _, f := range []struct {
				name string
				g, w float64
			}{
				{"Execution", gr.ExecutionTime, wr.ExecutionTime},
				{"Real Sync", gr.RealSync, wr.RealSync},
				{"Potential Sync", gr.PotentialSync, wr.PotentialSync},
				{"Time Variation", gr.TimeVariation, wr.TimeVariation},
				{"Overlap", gr.Overlap, wr.Overlap},
				{"Communications", gr.Communications, wr.Communications},
				{"Idle", gr.IdleTime, wr.IdleTime},
			} {
				// Drift rounding: a few ns.
				if d := f.g - f.w; d > 20e-9 || d < -20e-9 {
					t.Errorf("interval %v rank %d %s = %.9f, want %.9f", w.Path, wr.Rank, f.name, f.g, f.w)
				}
			}
		}
	}
}

// A receive that ends before its send started (after alignment) is
// detected, repaired before the waits are computed, and reported.
func TestClockConditionViolation(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(100*ms).Send(1, 1, 8, 10*us) // entered at 100.001 ms
	r1.Recv(0, 1, 8, 50*ms)                 // 0.001 … 50.001 ms: ends 50 ms before the send started
	r1.Compute(10 * ms)
	r1.Barrier(1 * us)  // recorded 60.001 … 60.002; shifted by 50 ms
	r0.Barrier(20 * ms) // 100.011 … 120.011
	finish(run)
	rep := analyzeOneViolation(t, run, "0.050000000 s")
	iv := find(t, rep)
	r1r := rank(t, iv, 1)
	// After repair the receive ends at the send's entry (100.001 ms): Real
	// Sync 100 ms, the receive lasts 100 ms.
	expect(t, "Real Sync after repair", r1r.RealSync, 0.1)
	expect(t, "SendRecv after repair", r1r.SendRecvTime, 0.1)
	// Local intervals after the receive are kept: barrier entered at
	// 110.001 ms, so rank 0 waits there.
	expect(t, "rank 0 Potential Sync", rank(t, iv, 0).PotentialSync, 0.110001-0.100011)
}

// Collective clock conditions: a non-root leaving MPI_Bcast before the root
// entered it, and the root of MPI_Reduce leaving before the last entered.
func TestCollectiveClockCondition(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(10*ms).Bcast(0, 8, 1*us)  // root enters at 10.001 ms
	r1.Bcast(0, 8, 1*us)                 // non-root leaves at 0.002 ms: violation of 9.999 ms
	r1.Compute(20*ms).Reduce(1, 8, 1*us) // root 1: recorded 20.002 … 20.003, shifted by 9.999 ms
	r0.Compute(40*ms).Reduce(1, 8, 1*us) // enters at 10.002 + 40 = 50.002 ms: the root left too early
	finish(run)
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "2 clock-condition violation") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	iv := find(t, rep)
	// Bcast: rank 1 entered at 0.001 ms, the root at 10.001 ms. After the
	// repair rank 1 enters the Reduce at 20.002 + 9.999 = 30.001 ms; rank 0
	// at 50.002 ms.
	expect(t, "rank 1 Potential Sync", rank(t, iv, 1).PotentialSync, 0.010000+0.020001)
}

// Backward amortization (clc.go): the jump of a receive that ended before
// its send started is spread over the rank's events since the last fixed
// point, so that the receive keeps its recorded duration and the calls
// before it are not left where the skewed clock put them.
//
// Rank 1 (times in ms): MPI_Isend 0.001–0.002 (the fixed point: its entry
// went to rank 0), MPI_Irecv q1 0.002–0.003, compute, MPI_Irecv q2
// 10.003–10.004, compute, MPI_Wait(q1) 50.004–60.004. q1's send started at
// 100.011: a jump d = 40.007 over the stretch 0.002…50.004 (50.002 long),
// so an event at t moves by d·(t − 0.002)/50.002, rounded to the ns:
//
//	q1 0.002–0.003      → 0.002–0.0038      (1.8 µs)
//	q2 10.003–10.004    → 18.00488–18.00668 (1.8 µs; +8.00188, +8.00268)
//	Wait(q1)            → 90.011–100.011    (10 ms, as recorded)
//
// Real Sync of the Wait: 100.011 − 90.011 = 10 ms (forward only it would
// be 50.007 ms, the whole jump in one call). Everything after is shifted
// by d: MPI_Wait(q2) 101.011–101.012 finds q2's message (sent at 5.001)
// and overlaps from q2's moved start: 101.011 − 18.00488 = 83.00612 ms.
func TestBackwardAmortization(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(5*ms).Send(1, 3, 8, 10*us)        // 5.001 … 5.011
	r0.Compute(95*ms).Send(1, 1, 8, 10*us)       // 100.011 … 100.021
	r0.Recv(1, 2, 8, 10*us)                      // 100.021 … 100.031
	s := r1.Isend(0, 2, 8, 1*us)                 // 0.001 … 0.002
	q1 := r1.Irecv(0, 1, 8, 1*us)                // 0.002 … 0.003
	q2 := r1.Compute(10*ms).Irecv(0, 3, 8, 1*us) // 10.003 … 10.004
	r1.Compute(40*ms).Wait(q1, 10*ms)            // 50.004 … 60.004
	r1.Compute(1*ms).Wait(q2, 1*us)              // 61.004 … 61.005 → 101.011 … 101.012
	r1.Barrier(1 * us)                           // → 101.012 … 101.013
	r0.Barrier(20 * ms)                          // 100.031 … 120.031
	finish(run)
	_ = s
	rep := analyzeOneViolation(t, run, "0.040007000 s")
	iv := find(t, rep)
	r1r := rank(t, iv, 1)
	expect(t, "rank 1 Real Sync", r1r.RealSync, 0.010)
	expect(t, "rank 1 Overlap", r1r.Overlap, 0.08300612)
	// Isend 1 µs + two Irecvs 1.8 µs each + Wait 10 ms + Wait 1 µs.
	expect(t, "rank 1 SendRecv", r1r.SendRecvTime, 0.0100056)
	expect(t, "rank 1 Execution", r1r.ExecutionTime, 0.101012)
	expect(t, "rank 0 Potential Sync", rank(t, iv, 0).PotentialSync, 0.101012-0.100031)
	want := report.ClockViolations{Count: 1, Worst: 0.040007, WorstRank: 1, Repaired: true, Amortized: 1}
	if cv := rep.ClockViolations; cv == nil || *cv != want {
		t.Errorf("clock_violations %+v, want %+v", cv, want)
	}
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v, want none", rep.Unmatched)
	}
}

// No room to amortize: a receive entered right at the fixed point keeps
// the whole jump (TestClockConditionViolation), and so does a violation at
// MPI_Sendrecv, whose entry was handed to its partner before the
// violation could be seen: the calls before it keep their times.
func TestSendrecvViolationForwardOnly(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(100*ms).Send(1, 1, 8, 10*us)          // entered at 100.001
	r0.Recv(1, 2, 8, 10*us)                          // 100.011 … 100.021
	r1.Compute(10*ms).System("MPI_Comm_rank", 40*ms) // 10.001 … 50.001
	r1.Sendrecv(0, 2, 8, 0, 1, 8, 10*ms)             // 50.001 … 60.001: jump 40 ms
	finish(run)
	rep := analyzeOneViolation(t, run, "0.040000000 s")
	r1r := rank(t, find(t, rep), 1)
	expect(t, "rank 1 System", r1r.SystemTime, 0.040)
	expect(t, "rank 1 SendRecv", r1r.SendRecvTime, 0.050)
	expect(t, "rank 1 Real Sync", r1r.RealSync, 0.050)
	want := report.ClockViolations{Count: 1, Worst: 0.040, WorstRank: 1, Repaired: true}
	if cv := rep.ClockViolations; cv == nil || *cv != want {
		t.Errorf("clock_violations %+v, want %+v (not amortized)", cv, want)
	}
}

// The same stretch with MPI_Recv: the system call inside it grows by the
// factor 1 + d/(t_r − t_a).
func TestBackwardAmortizationRecv(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)                                  // fixed point 0.001
	r0.Compute(100*ms).Send(1, 1, 8, 10*us)          // entered at 100.001
	r1.Compute(40*ms).System("MPI_Comm_rank", 10*ms) // 40.001 … 50.001
	r1.Recv(0, 1, 8, 10*ms)                          // 50.001 … 60.001: jump 40 ms
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	rep := analyzeRun(t, run)
	r1r := rank(t, find(t, rep), 1)
	// Stretch 0.001…50.001 (50 ms), factor 1 + 40/50: the system call
	// moves to 72.001 … 90.001 (18 ms), the receive to 90.001 … 100.001.
	expect(t, "rank 1 System", r1r.SystemTime, 0.018)
	expect(t, "rank 1 SendRecv", r1r.SendRecvTime, 0.010)
	expect(t, "rank 1 Real Sync", r1r.RealSync, 0.010)
	expect(t, "rank 1 Execution", r1r.ExecutionTime, 0.100) // 0.001 … 100.001
}

// Past limits.pend events (here 2) since the last fixed point, the stretch so far is
// fixed: only the later events are moved.
func TestBackwardAmortizationBounded(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(110*ms).Send(1, 1, 8, 10*us)          // entered at 110.001
	r1.Compute(10*ms).System("MPI_Comm_rank", 10*ms) // A 10.001 … 20.001
	r1.Compute(10*ms).System("MPI_Comm_rank", 10*ms) // B 30.001 … 40.001
	r1.System("MPI_Comm_rank", 20*ms)                // C 40.001 … 60.001
	r1.Recv(0, 1, 8, 10*ms)                          // 60.001 … 70.001: jump 40 ms
	finish(run)
	rep := analyzeRunLimits(t, run, func(l *limits) { l.pend = 2 })
	r1r := rank(t, find(t, rep), 1)
	// A and B are fixed when C arrives (the stretch then starts at B's
	// exit, 40.001, and is 20 ms long): C moves to 40.001 … 100.001 (60
	// ms), A and B keep 10 ms each. (Unbounded, the stretch would start at
	// 0.001 and the three calls would take 66.667 ms.)
	expect(t, "rank 1 System", r1r.SystemTime, 0.080)
	expect(t, "rank 1 Real Sync", r1r.RealSync, 0.010)
	expect(t, "rank 1 SendRecv", r1r.SendRecvTime, 0.010)
}

// A stretch of more late-sender waits than the ring of recent ones holds
// (maxWrongOrder): the Real Sync of the calls whose records were pushed
// out of it is amortized too. Rank 1 receives n messages, each waiting
// 50 µs, then one whose send is 0.1 ms after its exit. (The n sends return
// at once, as eager sends do: a send still in progress at its receive's
// posting would make the receive a fixed point, clc.go.)
func TestBackwardAmortizationManyWaits(t *testing.T) {
	const n = maxWrongOrder + 30
	run, r0, r1 := pair()
	r0.Compute(50 * us)
	for i := range n {
		r0.Send(1, int32(i), 8, 0).Compute(100 * us) // sent at 0.051 + 0.1·i ms
	}
	r0.Compute(60*us).Send(1, n, 8, 10*us) // 13.111 ms
	for i := range n + 1 {
		d := 100 * us // 0.001 + 0.1·i … 0.101 + 0.1·i ms
		if i == n {
			d = 10 * us // 13.001 … 13.011 ms: jump 0.1 ms
		}
		r1.Recv(0, int32(i), 8, d)
	}
	finish(run)
	rep := analyzeRun(t, run)
	// The stretch is 0.001 … 13.001 ms: receive i's entry moves by
	// 0.1·i ms · 0.1/13.
	ta, tr, jump := int64(us), int64(13*ms+us), int64(100*us)
	k := float64(jump) / float64(tr-ta)
	var want float64
	waits := int64(1)
	for i := range int64(n) {
		entry := ta + i*100*us
		if rs := 50*us - int64(math.Round(float64(entry-ta)*k)); rs > 0 {
			want += float64(rs) / 1e9
			waits++
		}
	}
	want += 10e-6 // the last receive's
	iv := find(t, rep)
	expect(t, "rank 1 Real Sync", rank(t, iv, 1).RealSync, want)
	var late float64
	var count int64
	for _, w := range iv.Waits {
		if w.WaitingRank == 1 && w.Kind == report.LateSender {
			late += w.Seconds
			count += w.Count
		}
	}
	expect(t, "rank 1 late-sender waits", late, want)
	if count != waits {
		t.Errorf("rank 1: %d late-sender waits, want %d", count, waits)
	}
	if cv := rep.ClockViolations; cv == nil || cv.Amortized != 1 {
		t.Errorf("clock_violations %+v, want one amortized", cv)
	}
}

// With limits.pend 0 no event waits for an amortization: each is a
// fixed point, and the repair is forward only (as at MPI_Sendrecv).
func TestBackwardAmortizationNone(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(110*ms).Send(1, 1, 8, 10*us)          // entered at 110.001
	r1.Compute(10*ms).System("MPI_Comm_rank", 10*ms) // 10.001 … 20.001
	r1.System("MPI_Comm_rank", 20*ms)                // 20.001 … 40.001
	r1.Recv(0, 1, 8, 10*ms)                          // 40.001 … 50.001: jump 60 ms
	finish(run)
	rep := analyzeRunLimits(t, run, func(l *limits) { l.pend = 0 })
	r1r := rank(t, find(t, rep), 1)
	expect(t, "rank 1 System", r1r.SystemTime, 0.030)
	expect(t, "rank 1 Real Sync", r1r.RealSync, 0.070)
	expect(t, "rank 1 SendRecv", r1r.SendRecvTime, 0.070)
	if cv := rep.ClockViolations; cv == nil || !cv.Repaired || cv.Amortized != 0 {
		t.Errorf("clock_violations %+v, want repaired, not amortized", cv)
	}
}

// analyzeOneViolation is analyzeRun of a run with one clock-condition
// violation, which the warnings must report with its size (size, as the
// warning prints it).
func analyzeOneViolation(t *testing.T, run *tracetest.Run, size string) *report.Report {
	t.Helper()
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "1 clock-condition violation") || !hasWarning(rep, size) {
		t.Fatalf("violation not reported: %q", rep.Warnings)
	}
	return rep
}

// TestLateReceiverPostingFixed: a receive whose posting time a blocking
// send's Late receiver was computed from is a fixed point of the
// controlled logical clock, so that a later repair's backward amortization
// does not move the posting after the charge was made from it. Rank 0's
// MPI_Send lasts from 100 to 200 µs; rank 1's MPI_Recv, posted at 150 µs,
// charges it 50 µs of Late receiver (§8.6) and ends at 210 µs. Rank 1's
// next MPI_Recv, [300, 310] µs, receives a message sent at 600 µs: it is
// repaired to [590, 600] µs (the jump of 290 µs amortized from 210 µs,
// where nothing lies), Real Sync 10 µs. Were the first receive moved with
// the stretch from MPI_Init's exit, it would be posted at 294.5 µs, after
// the send returned, with the 50 µs charged all the same (and its own time
// stretched to 118 µs).
func TestLateReceiverPostingFixed(t *testing.T) {
	run, r0, r1 := pair()
	r0.At(100*us).Send(1, 0, 8, 100*us)
	r0.At(600*us).Send(1, 1, 8, us)
	r1.At(150*us).Recv(0, 0, 8, 60*us)
	r1.At(300*us).Recv(0, 1, 8, 10*us)
	finish(run)
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	k0, k1 := rank(t, iv, 0), rank(t, iv, 1)
	expect(t, "rank 0 Late receiver", k0.LateReceiver, 50e-6)
	expect(t, "rank 0 Real Sync", k0.RealSync, 50e-6)
	expect(t, "rank 1 SendRecv Time", k1.SendRecvTime, 70e-6)
	expect(t, "rank 1 Real Sync", k1.RealSync, 10e-6)
	expect(t, "rank 1 Execution Time", k1.ExecutionTime, 599e-6)
	if cv := rep.ClockViolations; cv == nil || cv.Count != 1 || cv.Amortized != 1 || cv.WorstRank != 1 || !near(cv.Worst, 290e-6) {
		t.Errorf("clock violations %+v, want 1 (1 amortized), worst 290 µs on rank 1", cv)
	}
}

// TestOverlapAmortizedSplit: a backward amortization stretches only the
// part of a moved call's Overlap after the last fixed point, also when
// that Overlap is not in one piece. Rank 0 posts MPI_Irecv at 10 µs (rank
// 1 sent at 5 µs), starts MPI_Isend at 20 µs (a fixed point at its exit,
// 21 µs), waits for the send at 30 µs (Overlap 20–30 µs) and for the
// receive at 40 µs (Overlap 10–20 and 30–40 µs), then its MPI_Recv at
// 50–52 µs gets a message sent at 100 µs: the 48 µs jump is spread over
// 21–50 µs. The first wait's Overlap becomes 1 + (44.897 − 21) = 24.897
// µs, the second's 10 (before 21 µs, unmoved) + 71.448 − 44.897 = 36.551
// µs: 61.448 µs in all (stretching the second's 20 µs as one piece ending
// at its entry would give 51.448 µs, 76.345 in all).
func TestOverlapAmortizedSplit(t *testing.T) {
	run, r0, r1 := pair()
	q1 := r1.At(5*us).Isend(0, 0, 8, us)
	r1.Wait(q1, us)
	r1.At(25*us).Recv(0, 0, 8, 2*us)
	r1.At(100*us).Send(0, 1, 8, us)
	qr := r0.At(10*us).Irecv(1, 0, 8, us)
	qs := r0.At(20*us).Isend(1, 0, 8, us)
	r0.At(30*us).Wait(qs, us)
	r0.At(40*us).Wait(qr, us)
	r0.At(50*us).Recv(1, 1, 8, 2*us)
	finish(run)
	rep := analyzeRun(t, run)
	expect(t, "rank 0 Overlap", rank(t, find(t, rep), 0).Overlap, 61.448e-6)
	if cv := rep.ClockViolations; cv == nil || cv.Count != 1 || cv.Amortized != 1 {
		t.Errorf("clock violations %+v, want 1 (amortized)", cv)
	}
}

// TestLateReceiverIssendWaitFixed: the call completing an MPI_Issend hands
// its entry and exit to the exchange, which charges its Late receiver from
// them (§8.6): it is a fixed point of the controlled logical clock, so that
// a later repair's backward amortization does not move it after the charge
// was made. Rank 0 starts MPI_Issend at 100 µs (to 101 µs), waits for it
// from 200 to 300 µs (rank 1 posts the receive at 250 µs: 50 µs of Late
// receiver), then its MPI_Recv, [400, 410] µs, receives a message sent at
// 500 µs: repaired to [490, 500] µs (Real Sync 10 µs), the jump of 90 µs
// amortized from the wait's exit (300 µs). SendRecv Time 1 + 100 + 10 =
// 111 µs. Were the wait
// moved with the stretch from the MPI_Issend's exit, it would last from
// 229.80 to 359.90 µs (SendRecv Time 141.1 µs) and its Late receiver from
// those times would be 20.2 µs, not the 50 µs charged from the recorded
// ones.
func TestLateReceiverIssendWaitFixed(t *testing.T) {
	run, r0, r1 := pair()
	q := r0.At(100*us).Issend(1, 0, 8, us)
	r0.At(200*us).Wait(q, 100*us)
	r0.At(400*us).Recv(1, 1, 8, 10*us)
	qr := r1.At(250*us).Irecv(0, 0, 8, us)
	r1.At(260*us).Wait(qr, us)
	r1.At(500*us).Send(0, 1, 8, us)
	finish(run)
	rep := analyzeRun(t, run)
	k0 := rank(t, find(t, rep), 0)
	expect(t, "rank 0 Late receiver", k0.LateReceiver, 50e-6)
	expect(t, "rank 0 Real Sync", k0.RealSync, 60e-6) // and the MPI_Recv's 10
	expect(t, "rank 0 SendRecv Time", k0.SendRecvTime, 111e-6)
	if cv := rep.ClockViolations; cv == nil || cv.Count != 1 || cv.Amortized != 1 || cv.WorstRank != 0 || !near(cv.Worst, 90e-6) {
		t.Errorf("clock violations %+v, want 1 (1 amortized), worst 90 µs on rank 0", cv)
	}
}
