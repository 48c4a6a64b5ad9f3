package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// An event standing for a folded run of unsuccessful polls
// (traceformat.AttrCalls) counts as that many calls in its point's
// ExeCount, completes nothing (Wait Number unchanged), and its duration,
// the run's time inside MPI, is its communication time.
func TestFoldedPolls(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	// Rank 0: a receive posted before interval 1, polled in it by 1000
	// MPI_Test calls folded into one event of 3 ms between 5 ms and 2 ms
	// of computation, and completed after it.
	r0.Init(1 * us)                                                         // 0 … 0.001 ms
	q := r0.Irecv(1, 5, 8, 1*us)                                            // … 0.002 ms
	r0.Pcontrol(100, 1)                                                     // interval 1 starts at 0.002 ms
	r0.Compute(5 * ms)                                                      // … 5.002 ms
	r0.Test(q, false, 3*ms, tracetest.Folded(1000), tracetest.Site("poll")) // … 8.002 ms
	r0.Compute(2 * ms)                                                      // … 10.002 ms
	r0.Pcontrol(101, 1)                                                     // interval 1 ends at 10.002 ms: 10 ms
	r0.Test(q, false, 10*us, tracetest.Site("once"))                        // one unfolded failed test
	r0.Wait(q, 1*ms)                                                        // 10.012 … 11.012 ms
	r0.Finalize(1 * us)
	// Rank 1: 500 MPI_Iprobe calls folded into one event of 1 ms between
	// 4 ms and 5 ms of computation in interval 1, then the send.
	r1.Init(1 * us).Compute(1 * us) // … 0.002 ms
	r1.Pcontrol(100, 1)
	r1.Compute(4 * ms) // … 4.002 ms
	r1.Call("MPI_Iprobe", 1*ms, traceformat.Event{Attr: traceformat.AttrRecv | traceformat.AttrFlag, RecvPeer: 0, RecvTag: 5},
		tracetest.Folded(500), tracetest.Site("probe")) // … 5.002 ms
	r1.Compute(5 * ms) // … 10.002 ms
	r1.Pcontrol(101, 1)
	r1.Send(0, 5, 8, 10*us)
	r1.Finalize(1 * us)
	rep := analyzeRun(t, run)

	iv := find(t, rep, 1)
	m := &iv.Main
	// Execution 10 ms on both ranks, so no idle time; communications are
	// the folded events' durations: 3 ms + 1 ms.
	expect(t, "Execution", m.ExecutionTime, 0.010)
	expect(t, "Total", m.TotalTime, 0.020)
	expect(t, "Communications", m.Communications, 0.004)
	expect(t, "SendRecv", m.SendRecvTime, 0.004)
	expect(t, "Idle", m.IdleTime, 0)
	expect(t, "Lost", m.LostTime, 0.004)
	expect(t, "Productive", m.ProductiveTime, 0.020-0.004)
	if !near(m.Efficiency, 0.016/0.020) {
		t.Errorf("Efficiency %.6f, want 0.8", m.Efficiency)
	}
	if m.WaitNumber != 0 || m.SendNumber != 0 || m.ReceiveNumber != 0 || m.SystemNumber != 0 || m.CollectiveNumber != 0 {
		t.Errorf("interval 1 counts %+v, want none", m)
	}
	rk0, rk1 := rank(t, iv, 0), rank(t, iv, 1)
	expect(t, "rank 0 Comm", rk0.Communications, 0.003)
	expect(t, "rank 0 SendRecv", rk0.SendRecvTime, 0.003)
	expect(t, "rank 0 Productive", rk0.ProductiveTime, 0.010-0.003)
	expect(t, "rank 1 Comm", rk1.Communications, 0.001)
	expect(t, "rank 1 Productive", rk1.ProductiveTime, 0.010-0.001)
	if rk0.WaitNumber != 0 {
		t.Errorf("rank 0 Wait Number %d, want 0: failed tests complete nothing", rk0.WaitNumber)
	}
	poll, probe := point(t, iv, "MPI_Test"), point(t, iv, "MPI_Iprobe")
	expect(t, "poll Comm", poll.Comm, 0.003)
	if len(poll.Ranks) != 1 || poll.Ranks[0].Rank != 0 || poll.Ranks[0].ExeCount != 1000 || !near(poll.Ranks[0].ExeTime, 0.003) {
		t.Errorf("MPI_Test point ranks %+v, want rank 0 with 1000 calls in 3 ms", poll.Ranks)
	}
	expect(t, "probe Comm", probe.Comm, 0.001)
	if len(probe.Ranks) != 1 || probe.Ranks[0].Rank != 1 || probe.Ranks[0].ExeCount != 500 || !near(probe.Ranks[0].ExeTime, 0.001) {
		t.Errorf("MPI_Iprobe point ranks %+v, want rank 1 with 500 calls in 1 ms", probe.Ranks)
	}

	// The whole program: the folded test still counts 1000 calls, the
	// unfolded one 1; only the MPI_Wait is a Wait Number.
	all := find(t, rep)
	var tests []int64
	for i := range all.SRC {
		p := &all.SRC[i]
		if p.Function == "MPI_Test" {
			tests = append(tests, p.Ranks[0].ExeCount)
		}
	}
	if len(tests) != 2 || tests[0]+tests[1] != 1001 || tests[0] != 1 && tests[0] != 1000 {
		t.Errorf("whole program MPI_Test points count %v calls, want 1000 and 1", tests)
	}
	if w := rank(t, all, 0).WaitNumber; w != 1 || all.Main.WaitNumber != 1 {
		t.Errorf("whole program Wait Number %d (rank 0 %d), want 1", all.Main.WaitNumber, w)
	}
	if p := point(t, all, "MPI_Iprobe"); p.Ranks[0].ExeCount != 500 {
		t.Errorf("whole program MPI_Iprobe calls %d, want 500", p.Ranks[0].ExeCount)
	}
}

// point is the interval's only SRC point of MPI function fn.
func point(t *testing.T, iv *report.Interval, fn string) *report.SRC {
	t.Helper()
	var p *report.SRC
	for i := range iv.SRC {
		if iv.SRC[i].Function == fn {
			if p != nil {
				t.Fatalf("two %s points", fn)
			}
			p = &iv.SRC[i]
		}
	}
	if p == nil {
		t.Fatalf("no %s point in %+v", fn, iv.SRC)
	}
	return p
}
