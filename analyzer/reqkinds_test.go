package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// Requests of other kinds (docs/characteristics.md §8.9): created by file
// I/O, MPI_Grequest_start and partitioned communication, completed by
// waits, a persistent one started twice, and a cancelled receive: nothing
// is unmatched, nothing "never created", and the times stay in the classes
// of their calls.
func TestRequestsOfOtherKinds(t *testing.T) {
	run := tracetest.NewRun(2)
	for r := 0; r < 2; r++ {
		k := run.Rank(r)
		k.Init(us)                                          // 0 … 1 µs
		f := k.Creates("MPI_File_iwrite_at", 2*us)          // System 2 µs
		k.Compute(100 * us)                                 //
		k.Wait(f, 5*us)                                     // SendRecv 5 µs
		g := k.Creates("MPI_Grequest_start", us)            // System 1 µs
		k.Wait(g, us)                                       // SendRecv 1 µs
		p := k.Creates("MPI_Psend_init", us)                // SendRecv 1 µs
		k.Start(p, us).Wait(p, us).Start(p, us).Wait(p, us) // 4 µs
		k.RequestFree(p, us)                                // 1 µs
		q := k.Irecv(int32(1-r), 9, 8, us)                  // 1 µs, never sent
		k.Cancel(q, us).Wait(q, us)                         // 2 µs
		k.Finalize(us)
	}
	rep := analyzeRun(t, run)
	if rep.Unmatched != nil || len(rep.Warnings) != 0 {
		t.Fatalf("unmatched %+v, warnings %q", rep.Unmatched, rep.Warnings)
	}
	iv := find(t, rep)
	for r := 0; r < 2; r++ {
		rk := rank(t, iv, r)
		expect(t, "System rank "+itoa(r), rk.SystemTime, 3e-6)
		// 5 + 1 + 1 + 4 + 1 + 1 + 2 µs.
		expect(t, "SendRecv rank "+itoa(r), rk.SendRecvTime, 15e-6)
		expect(t, "Real Sync rank "+itoa(r), rk.RealSync, 0)
		if rk.WaitNumber != 5 {
			t.Errorf("rank %d: wait number %d, want 5", r, rk.WaitNumber)
		}
	}
}

// A persistent collective (MPI_Barrier_init) started twice: each start
// joins an instance, whose wait gets Potential Sync like a nonblocking
// collective's (latest start − wait entry).
func TestPersistentCollective(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		k := run.Rank(i)
		k.Init(us)
		b := k.CollInit("MPI_Barrier_init", -1, us) // 1 … 2 µs
		for _, base := range []int64{2 * us, 40 * ms} {
			k.Compute(base + int64(i)*10*ms - k.Now())
			k.Start(b, us)                // base + i·10 ms
			k.Wait(b, base+30*ms-k.Now()) // from base + i·10 ms + 1 µs to base + 30 ms
		}
		k.RequestFree(b, us)
		k.Finalize(us)
	}
	rep := analyzeRun(t, run)
	if rep.Unmatched != nil || len(rep.Warnings) != 0 {
		t.Fatalf("unmatched %+v, warnings %q", rep.Unmatched, rep.Warnings)
	}
	iv := find(t, rep)
	// Latest start base + 20 ms; wait entries base + i·10 ms + 1 µs: twice
	// 19.999, 9.999 and 0 ms. Collective time: the init (1 µs) and twice
	// the start and wait, 30 − 10·i ms.
	for i, want := range []float64{0.039998, 0.019998, 0} {
		rk := rank(t, iv, i)
		expect(t, "Potential Sync rank "+itoa(i), rk.PotentialSync, want)
		expect(t, "Collective rank "+itoa(i), rk.CollectiveTime, []float64{0.060001, 0.040001, 0.020001}[i])
	}
	if iv.Main.CollectiveNumber != 2 {
		t.Errorf("instances %d, want 2", iv.Main.CollectiveNumber)
	}
}

// Collectives on an intercommunicator between {0,1} and {2,3}
// (docs/characteristics.md §8.8): in MPI_Allreduce each group waits for
// the other group's entries (MPI's intercommunicator semantics); the
// MPI_Bcast rooted at rank 0 (MPI_ROOT; rank 1 passes MPI_PROC_NULL and
// takes no part) is waited for by the other group.
func TestInterCommCollectives(t *testing.T) {
	run := tracetest.NewRun(4)
	ic := run.NewInterComm([]int{0, 1}, []int{2, 3})
	for i := 0; i < 4; i++ {
		k := run.Rank(i)
		on := tracetest.On(ic.Of(i))
		k.Init(us).IntercommCreate(ic, us) // 0 … 2 µs
		k.Compute(int64(i) * 10 * ms)
		k.Allreduce(8, 30*ms+2*us-k.Now(), on) // entries 2 µs + i·10 ms, exits 30.002 ms
		switch i {
		case 0:
			k.Compute(20 * ms)
			k.Bcast(traceformat.RootInter, 8, 10*us, on) // 50.002 … 50.012 ms
		case 1:
			k.Bcast(traceformat.ProcNull, 0, us, on)
		default:
			k.Bcast(0, 8, 50*ms+12*us-k.Now(), on) // 30.002 … 50.012 ms
		}
		k.Finalize(us)
	}
	rep := analyzeRun(t, run)
	if rep.Unmatched != nil || len(rep.Warnings) != 0 {
		t.Fatalf("unmatched %+v, warnings %q", rep.Unmatched, rep.Warnings)
	}
	iv := find(t, rep)
	// Allreduce: ranks 0 and 1 wait for group {2,3}'s latest entry at
	// 30.002 ms: 30 and 20 ms; ranks 2 and 3 entered after group {0,1}'s
	// latest entry (10.002 ms): 0 (over both groups it would be 30, 20,
	// 10, 0; within each group 10, 0, 10, 0). Bcast: ranks 2 and 3 wait
	// 20 ms for the root's entry at 50.002 ms.
	for i, want := range []float64{0.030, 0.020, 0.020, 0.020} {
		expect(t, "Potential Sync rank "+itoa(i), rank(t, iv, i).PotentialSync, want)
	}
	if iv.Main.CollectiveNumber != 2 {
		t.Errorf("instances %d, want 2", iv.Main.CollectiveNumber)
	}
}

// An MPI_Ibcast on an intercommunicator between {0,1} and {2,3}, rooted
// at rank 0 (MPI_ROOT); rank 1 passes MPI_PROC_NULL: its request joins no
// instance, and its MPI_Wait completes it without anything being
// unmatched or "never created".
func TestInterCommIbcastProcNull(t *testing.T) {
	run := tracetest.NewRun(4)
	ic := run.NewInterComm([]int{0, 1}, []int{2, 3})
	for i := 0; i < 4; i++ {
		k := run.Rank(i)
		on := tracetest.On(ic.Of(i))
		k.Init(us).IntercommCreate(ic, us) // 0 … 2 µs
		switch i {
		case 0:
			k.Compute(20 * ms)
			b := k.Ibcast(traceformat.RootInter, 8, us, on) // 20.002 … 20.003 ms
			k.Wait(b, 10*us)                                // 20.003 … 20.013 ms
		case 1:
			b := k.Ibcast(traceformat.ProcNull, 0, us, on) // 2 … 3 µs
			k.Wait(b, us)
		default:
			b := k.Ibcast(0, 8, us, on)    // 2 … 3 µs
			k.Wait(b, 20*ms+13*us-k.Now()) // 3 µs … 20.013 ms
		}
		k.Finalize(us)
	}
	rep := analyzeRun(t, run)
	if rep.Unmatched != nil || len(rep.Warnings) != 0 {
		t.Fatalf("unmatched %+v, warnings %q", rep.Unmatched, rep.Warnings)
	}
	iv := find(t, rep)
	// Ranks 2 and 3 wait from 3 µs for the root's start at 20.002 ms:
	// 19.999 ms; the root and rank 1 wait for nobody.
	for i, want := range []float64{0, 0, 0.019999, 0.019999} {
		expect(t, "Potential Sync rank "+itoa(i), rank(t, iv, i).PotentialSync, want)
	}
	if iv.Main.CollectiveNumber != 1 {
		t.Errorf("instances %d, want 1", iv.Main.CollectiveNumber)
	}
}
