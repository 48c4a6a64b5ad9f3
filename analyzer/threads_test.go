package analyzer

import (
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

const threadMultiple = 3

// threadedLateSender: on rank 0, thread 1 waits in MPI_Recv for a message
// rank 1's thread 1 sends 200 ms late, while thread 0 sends to rank 1's
// thread 0 in the middle of that wait. Rank 0's thread 1 batch is written
// after thread 0's MPI_Finalize, as a buffer handed over at the end.
func threadedLateSender() *tracetest.Run {
	run, r0, r1 := pair()
	run.ThreadLevel = threadMultiple
	r0.Thread(1).Thread(0)                            // thread 1 starts at 1 µs too
	r0.At(50*ms).Send(1, 0, 8, 10*us)                 // 50 ms … 50.01 ms
	r0.At(300 * ms).Finalize(us)                      // level 0 ends at 300 ms
	r0.Thread(1).At(1*ms).Recv(1, 1, 8, 200*ms+20*us) // 1 ms … 201.02 ms
	r1.Thread(1).Thread(0)
	r1.At(60*ms).Recv(0, 0, 8, 10*us)            // 60 ms … 60.01 ms: no wait
	r1.Thread(1).At(201*ms).Send(0, 1, 8, 10*us) // 201 ms … 201.01 ms
	r1.Thread(0).At(300 * ms).Finalize(us)
	return run
}

func TestThreadsLateSender(t *testing.T) {
	rep := analyzeClean(t, threadedLateSender())
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v", rep.Unmatched)
	}
	iv := find(t, rep)
	r0, r1 := rank(t, iv, 0), rank(t, iv, 1)
	// Thread 1 waits from 1 ms to the send's entry at 201 ms.
	expect(t, "rank 0 Real Sync", r0.RealSync, 0.2)
	expect(t, "rank 1 Real Sync", r1.RealSync, 0)
	// Union of [1, 201.02] ms and [50, 50.01] ms: the send lies within
	// the wait, which takes its time.
	expect(t, "rank 0 SendRecv", r0.SendRecvTime, 0.20002)
	expect(t, "rank 1 SendRecv", r1.SendRecvTime, 20e-6)
	expect(t, "rank 0 Execution", r0.ExecutionTime, 0.299999)
	if r0.SendNumber != 1 || r0.ReceiveNumber != 1 || r1.SendNumber != 1 || r1.ReceiveNumber != 1 {
		t.Errorf("numbers: rank 0 %d/%d, rank 1 %d/%d", r0.SendNumber, r0.ReceiveNumber, r1.SendNumber, r1.ReceiveNumber)
	}
	for _, p := range iv.SRC {
		if p.Function == "MPI_Send" {
			for _, pr := range p.Ranks {
				if pr.Rank == 0 && pr.ExeTime != 0 {
					t.Errorf("rank 0's MPI_Send keeps %v s inside thread 1's wait", pr.ExeTime)
				}
			}
		}
	}
}

// Two threads of rank 0 wait at once for late senders: 1 … 101 ms for a
// send at 100 ms, 51 … 151 ms for one at 150 ms. The waits overlap from
// 51 to 100 ms: Real Sync is their union, 1 … 150 ms, not their sum.
func TestThreadsOverlappingWaits(t *testing.T) {
	run, r0, r1 := pair()
	run.ThreadLevel = threadMultiple
	r0.Thread(2).Thread(1).At(1*ms).Recv(1, 1, 8, 100*ms) // 1 … 101 ms
	r0.Thread(2).At(51*ms).Recv(1, 2, 8, 100*ms)          // 51 … 151 ms
	r0.Thread(0).At(200 * ms).Finalize(us)
	r1.At(100*ms).Send(0, 1, 8, 10*us).At(150*ms).Send(0, 2, 8, 10*us)
	r1.At(200 * ms).Finalize(us)
	rep := analyzeClean(t, run)
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v", rep.Unmatched)
	}
	r := rank(t, find(t, rep), 0)
	expect(t, "rank 0 Real Sync", r.RealSync, 0.149)
	expect(t, "rank 0 SendRecv", r.SendRecvTime, 0.150)
}

// Threads of one process exchange a message: thread 1 receives from its
// own rank what thread 0 sends 99 ms later.
func TestThreadsSelfMessage(t *testing.T) {
	run, ranks := start(1)
	r0 := ranks[0]
	run.ThreadLevel = threadMultiple
	r0.Thread(1).Thread(0)
	r0.At(100*ms).Send(0, 5, 8, 10*us) // 100 … 100.01 ms
	r0.At(200 * ms).Finalize(us)
	r0.Thread(1).At(1*ms).Recv(0, 5, 8, 99*ms+20*us) // 1 … 100.02 ms
	rep := analyzeClean(t, run)
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v", rep.Unmatched)
	}
	r := rank(t, find(t, rep), 0)
	expect(t, "Real Sync", r.RealSync, 0.099)
	expect(t, "SendRecv", r.SendRecvTime, 0.09902)
}

// Two threads of each rank run blocking collectives on two communicators
// at once, entered in opposite orders on the two ranks: rank 0 enters A's
// MPI_Allreduce at 10 ms and B's at 15 ms, rank 1 B's at 18 ms and A's at
// 25 ms. A replay that waited in each collective for the other rank would
// deadlock here (each rank first waits in the collective the other enters
// second); entries are replayed at the calls' entries, exits at their
// exits, and nothing is unmatched.
func TestThreadsConcurrentCollectives(t *testing.T) {
	run, r0, r1 := pair()
	run.ThreadLevel = threadMultiple
	ca, cb := run.NewComm(0, 1), run.NewComm(0, 1)
	for _, r := range []*tracetest.Rank{r0, r1} {
		r.CommSplit(nil, ca, us).CommSplit(nil, cb, us) // 1 … 3 µs
		r.Thread(2).Thread(1).Thread(0)
	}
	r0.Thread(1).At(10*ms).Allreduce(8, 20*ms, tracetest.On(ca)) // 10 … 30 ms
	r0.Thread(2).At(15*ms).Allreduce(8, 5*ms, tracetest.On(cb))  // 15 … 20 ms
	r1.Thread(2).At(18*ms).Allreduce(8, 2*ms, tracetest.On(cb))  // 18 … 20 ms
	r1.Thread(1).At(25*ms).Allreduce(8, 5*ms, tracetest.On(ca))  // 25 … 30 ms
	for _, r := range []*tracetest.Rank{r0, r1} {
		r.Thread(0).At(40 * ms).Finalize(us)
	}
	rep := analyzeClean(t, run)
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v", rep.Unmatched)
	}
	iv := find(t, rep)
	k0, k1 := rank(t, iv, 0), rank(t, iv, 1)
	// Collective time: the union of each rank's calls.
	expect(t, "rank 0 Collective", k0.CollectiveTime, 0.020)
	expect(t, "rank 1 Collective", k1.CollectiveTime, 0.007)
	// Potential Sync per call, as for blocking collectives: rank 0
	// waited in A for rank 1's entry at 25 ms (15 ms) and in B for its
	// entry at 18 ms (3 ms); rank 1 entered last both times. The exits
	// agree: no Time Variation.
	expect(t, "rank 0 Potential Sync", k0.PotentialSync, 0.018)
	expect(t, "rank 1 Potential Sync", k1.PotentialSync, 0)
	expect(t, "Time Variation", iv.Main.TimeVariation, 0)
	if iv.Main.CollectiveNumber != 2 || k0.CollectiveNumber != 2 {
		t.Errorf("collective number main %d, rank 0 %d", iv.Main.CollectiveNumber, k0.CollectiveNumber)
	}
}

// A call of another thread returning after MPI_Finalize began (a damaged
// trace: FuzzImportThreads found one in an archive whose timestamp was
// damaged) ends the rank's program with it, with a warning, so that its
// time stays within the rank's execution time.
func TestThreadCallPastFinalize(t *testing.T) {
	run, r0, r1 := pair()
	run.ThreadLevel = threadMultiple
	r0.Thread(1).Thread(0)
	r1.Thread(1).Thread(0)
	r0.At(210*ms).Recv(1, 5, 8, 1*ms) // 210 … 211 ms; the send at 201 ms
	r0.At(300 * ms).Finalize(us)
	r1.At(300 * ms).Finalize(us)
	r1.Thread(1).At(201*ms).Send(0, 5, 8, 620*ms) // 201 … 821 ms
	rep := analyzeRun(t, run)
	if errs := report.Check(rep); len(errs) != 0 {
		t.Errorf("inconsistent report: %v", errs)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "Rank 1: a call of another thread returned 0.521000 s after MPI_Finalize was entered")
	}
	if !found {
		t.Errorf("warnings %q", rep.Warnings)
	}
	r1rep := rank(t, find(t, rep), 1)
	expect(t, "rank 1 Execution", r1rep.ExecutionTime, 0.820999)
}
