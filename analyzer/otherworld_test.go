package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// TestOtherWorldMembers: a spawned world's view of the communicator merged
// with its parent (MPI_Intercomm_merge): the parent, another world's
// process, is rank 0 and the two children are ranks 1 and 2. The
// children's messages to each other are matched by their ranks in the
// communicator (leaving the parent out of the list shifted them: a send to
// rank 2 was unusable and a receive from rank 1 waited for rank 1 itself);
// the calls with the parent are counted, without partner, and said so in
// one warning, not as unmatched operations.
func TestOtherWorldMembers(t *testing.T) {
	run, rs := start(2)
	merged := &tracetest.Comm{ID: 77, Members: []int{-1, 0, 1}} // -1: traceformat.OtherWorld
	for _, r := range rs {
		r.CommSplit(nil, merged, 10*us)
	}
	on := tracetest.On(merged)
	rs[0].Recv(0, 1, 8, 10*ms, on) // from the parent
	rs[0].Compute(20*ms - rs[0].Now())
	rs[0].Send(2, 5, 8, 10*us, on) // to rank 1 of this world
	rs[1].Recv(1, 5, 8, 20*ms, on) // from rank 0 of this world, posted at 11 µs
	rs[1].Send(0, 2, 8, 10*us, on) // to the parent
	for _, r := range rs {
		r.Bcast(0, 8, ms, on) // rooted at the parent
		r.Compute(50*ms - r.Now())
	}
	finish(run)
	rep := analyzeRun(t, run)
	if rep.Unmatched != nil {
		t.Errorf("unmatched operations: %+v", *rep.Unmatched)
	}
	if len(rep.Warnings) != 1 || !hasWarning(rep, "4 call(s) communicated with processes of another MPI world") {
		t.Errorf("warnings %q, want one about 4 calls with another world", rep.Warnings)
	}
	iv := find(t, rep)
	expect(t, "Real Sync rank 1", rank(t, iv, 1).RealSync, 0.020-0.000011)
	expect(t, "Real Sync rank 0", rank(t, iv, 0).RealSync, 0)
	expect(t, "Potential Sync", iv.Main.PotentialSync, 0)
	if iv.Main.CollectiveNumber != 1 {
		t.Errorf("Collective Number %d, want 1 (the broadcast, counted once)", iv.Main.CollectiveNumber)
	}
	for r, want := range []int64{1, 1} {
		if got := rank(t, iv, r).SendNumber; got != want {
			t.Errorf("rank %d: Send Number %d, want %d", r, got, want)
		}
		if got := rank(t, iv, r).ReceiveNumber; got != want {
			t.Errorf("rank %d: Receive Number %d, want %d", r, got, want)
		}
	}
}
