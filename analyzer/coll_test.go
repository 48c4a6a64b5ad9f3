package analyzer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// WaitPatternUp into a barrier: rank i enters i·100 ms late; everybody
// leaves at the same moment.
func TestPotentialSyncBarrier(t *testing.T) {
	run, ranks := start(3)
	for i, r := range ranks {
		r.Compute(int64(i) * 100 * ms) // enters at 0.001 + i·100 ms
		r.Barrier(300*ms - r.Now())    // all leave at 300 ms
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	for i, want := range []float64{0.2, 0.1, 0} {
		expect(t, "Potential Sync rank "+itoa(i), rank(t, iv, i).PotentialSync, want)
		expect(t, "Time Variation rank "+itoa(i), rank(t, iv, i).TimeVariation, 0)
	}
	expect(t, "Main Potential Sync", iv.Main.PotentialSync, 0.3)
	if iv.Main.CollectiveNumber != 1 {
		t.Errorf("Collective Number %d, want 1 (one instance)", iv.Main.CollectiveNumber)
	}
	if rank(t, iv, 2).CollectiveNumber != 1 {
		t.Errorf("rank 2 Collective Number %d, want 1 (its calls)", rank(t, iv, 2).CollectiveNumber)
	}
	noWarnings(t, rep)
}

// Exits spread over 30 µs: Time Variation.
func TestTimeVariation(t *testing.T) {
	run, ranks := start(3)
	for i, r := range ranks {
		r.Allreduce(8, int64(10+10*i)*us) // enter together at 0.001 ms, leave at 0.011, 0.021, 0.031 ms
		r.Compute(40*us - r.Now())
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	for i, want := range []float64{20e-6, 10e-6, 0} {
		expect(t, "Time Variation rank "+itoa(i), rank(t, iv, i).TimeVariation, want)
		expect(t, "Potential Sync rank "+itoa(i), rank(t, iv, i).PotentialSync, 0)
	}
	expect(t, "collective time", iv.Main.CollectiveTime, 60e-6)
}

// Collectives on split communicators: each group is its own instance.
func TestSplitCommunicators(t *testing.T) {
	run, ranks := start(4)
	lo, hi := run.NewComm(0, 1), run.NewComm(3, 2) // rank 3 is rank 0 of hi
	for i, r := range ranks {
		c := lo
		if i >= 2 {
			c = hi
		}
		r.CommSplit(nil, c, 1*us) // a System call: 0.001 … 0.002 ms
		r.Compute(int64(i) * 10 * ms)
		r.Barrier(50*ms-r.Now(), tracetest.On(c)) // leave at 50 ms
		r.Bcast(0, 8, 10*us, tracetest.On(c))     // 50 … 50.010 ms
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	// Groups {0,1} and {2,3}: entries 0.002 + i·10 ms.
	for i, want := range []float64{0.010, 0, 0.010, 0} {
		expect(t, "Potential Sync rank "+itoa(i), rank(t, iv, i).PotentialSync, want)
	}
	// Two barrier and two bcast instances: counted on ranks 0 and 3.
	if iv.Main.CollectiveNumber != 4 {
		t.Errorf("Collective Number %d, want 4", iv.Main.CollectiveNumber)
	}
	if iv.Main.SystemNumber != 4 {
		t.Errorf("System Number %d, want 4 (MPI_Comm_split)", iv.Main.SystemNumber)
	}
	expect(t, "System Time", iv.Main.SystemTime, 4e-6)
	noWarnings(t, rep)
}

// Rooted collectives: Gather waits for everybody at the root only,
// Scatter makes non-roots wait for the root.
func TestRootedCollectives(t *testing.T) {
	run, ranks := start(3)
	for i, r := range ranks {
		r.Compute(int64(i) * 10 * ms) // enter at 0.001 + i·10 ms
		if i == 0 {
			r.Gather(0, 8, 20*ms+10*us) // the root leaves at 20.011 ms
		} else {
			r.Gather(0, 8, 5*us)
		}
		r.Compute(30*ms - r.Now())
		r.Scatter(2, 8, 5*us) // all enter at 30 ms
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	// Gather: last entry 20.001 ms; Scatter: all enter together.
	for i, want := range []float64{0.020, 0.010, 0} {
		expect(t, "Potential Sync rank "+itoa(i), rank(t, iv, i).PotentialSync, want)
	}
	// Gather exits: 20.011, 10.006, 20.006 ms → TV 0, 10.005, 0.005 ms.
	for i, want := range []float64{0, 0.010005, 0.000005} {
		expect(t, "Time Variation rank "+itoa(i), rank(t, iv, i).TimeVariation, want)
	}
	noWarnings(t, rep)
}

// A root running ahead through many broadcasts waits for the others past
// limits.pendingColls instances (here 4), without changing any figure.
func TestCollectiveFlowControl(t *testing.T) {
	run, r0, r1 := pair()
	for i := 0; i < 100; i++ {
		r0.Bcast(0, 8, 1*us) // the root enters at 0.001 + i µs
	}
	r1.Compute(10 * ms)
	for i := 0; i < 100; i++ {
		r1.Bcast(0, 8, 1*us) // enters at 10.001 ms + i µs
	}
	r0.Compute(20 * ms).Finalize(1 * us)
	r1.Finalize(1 * us)
	rep := analyzeRunLimits(t, run, func(l *limits) { l.pendingColls = 4 })
	noWarnings(t, rep)
	// Each instance: the root entered 10 ms earlier than rank 1.
	expect(t, "root Potential Sync", rank(t, find(t, rep), 0).PotentialSync, 100*0.010)
	if n := find(t, rep).Main.CollectiveNumber; n != 100 {
		t.Errorf("Collective Number %d", n)
	}
}

// A collective of count 0 is a no-op in MPI implementations: a non-root
// leaves MPI_Bcast of 0 bytes at once, long before the root enters it
// (seen in hpcc). That exit is no clock-condition violation: nothing may
// be repaired, nothing shifted. Rank 1 enters the Bcast at 0.001 ms and
// leaves at 0.011 ms; the root enters at 100.001 ms. Rank 1 then sends to
// rank 0 at 50 ms, received by rank 0 at 100.011 ms: no Real Sync. Shifting
// rank 1 behind the root's entry (the bug) would move its send to ~150 ms,
// giving Real Sync(0) ≈ 0.05 s and a violation warning. Potential Sync and
// Time Variation still count the instance: rank 1's are 100.001 − 0.001 =
// 0.1 s and 100.011 − 0.011 = 0.1 s.
func TestZeroByteCollectiveNoViolation(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(100 * ms)
	r0.Call("MPI_Bcast", 10*us, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrSendBytes, Root: 0, SendBytes: 0})
	r1.Call("MPI_Bcast", 10*us, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrRecvBytes, Root: 0, RecvBytes: 0})
	r1.Compute(50*ms - r1.Now())
	r1.Send(0, 1, 8, 10*us)
	r0.Recv(1, 1, 8, 10*us)
	r1.Compute(r0.Now() - r1.Now())
	finish(run)
	rep := analyzeClean(t, run)
	iv := find(t, rep)
	expect(t, "Real Sync rank 0", rank(t, iv, 0).RealSync, 0)
	expect(t, "Potential Sync rank 1", rank(t, iv, 1).PotentialSync, 0.1)
	expect(t, "Time Variation rank 1", rank(t, iv, 1).TimeVariation, 0.1)
	expect(t, "Execution Time rank 1", rank(t, iv, 1).ExecutionTime, 0.1+20e-6)
	checkInvariants(t, rep)
}

// A Bcast that does carry data and ends before its root entered is a
// violation: it is still repaired and reported.
func TestDataCollectiveViolationRepaired(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(100 * ms)
	r0.Bcast(0, 8, 10*us)
	r1.Call("MPI_Bcast", 10*us, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrRecvBytes, Root: 0, RecvBytes: 8})
	r1.Compute(r0.Now() - r1.Now())
	finish(run)
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "clock-condition violation") {
		t.Errorf("no violation reported: %q", rep.Warnings)
	}
}

// A member that sends no data bounds no exit: MPI libraries complete an
// MPI_Allgatherv without the members whose contribution is empty (PETSc's
// GAMG under Open MPI: three ranks left one 0.6 ms before the fourth, which
// sent 0 elements, entered it; repaired as a violation, that shifted the
// three ranks' later calls and set off 46 more). Ranks 0 and 1 enter at
// 0.001 ms and leave at 0.011 ms (rank 0 sends 8 bytes, rank 1 none); rank
// 2 enters at 100.001 ms, sending none. No violation, nothing shifted: rank
// 1 sends to rank 0 at 50 ms, and rank 0, in MPI_Recv from 0.011 ms, gets
// Real Sync 0.049989 s (shifted behind rank 2's entry, the send would come
// after the receive's end, a violation again). Potential Sync still counts every member's entry (§3): 0.1 s for
// ranks 0 and 1. When rank 2 sends data, ranks 0 and 1 violate the clock
// condition and are repaired.
func TestQuietMemberBoundsNoExit(t *testing.T) {
	for _, quiet := range []bool{true, false} {
		t.Run(map[bool]string{true: "quiet", false: "sends"}[quiet], func(t *testing.T) {
			run, rs := start(3)
			gv := func(r *tracetest.Rank, sent uint64) {
				r.Call("MPI_Allgatherv", 10*us, traceformat.Event{
					Attr: traceformat.AttrSendBytes | traceformat.AttrRecvBytes, SendBytes: sent, RecvBytes: 8})
			}
			gv(rs[0], 8)
			gv(rs[1], 0)
			rs[2].Compute(100 * ms)
			late := uint64(0)
			if !quiet {
				late = 8
			}
			gv(rs[2], late)
			rs[1].Compute(50*ms - rs[1].Now())
			rs[1].Send(0, 1, 8, 10*us)
			rs[0].Recv(1, 1, 8, 50*ms)
			for _, r := range rs {
				r.Compute(200*ms - r.Now())
			}
			finish(run)
			if !quiet {
				if rep := analyzeRun(t, run); !hasWarning(rep, "clock-condition violation") || rep.ClockViolations.Count < 2 {
					t.Errorf("want the exits of ranks 0 and 1 repaired: %q", rep.Warnings)
				}
				return
			}
			rep := analyzeClean(t, run)
			iv := find(t, rep)
			expect(t, "Real Sync rank 0", rank(t, iv, 0).RealSync, 0.049989)
			expect(t, "Potential Sync rank 0", rank(t, iv, 0).PotentialSync, 0.1)
			expect(t, "Potential Sync rank 1", rank(t, iv, 1).PotentialSync, 0.1)
			expect(t, "Potential Sync rank 2", rank(t, iv, 2).PotentialSync, 0)
		})
	}
}

// A member of an MPI_Alltoallv that receives nothing (its recorded
// receive count is 0) waits for nobody: MPI libraries skip the empty
// receives, and the other members' sends to it complete without it. Rank
// 2 sends 8 bytes and receives none, in the call from 0.001 to 0.011 ms;
// ranks 0 and 1 enter at 100 ms (sending and receiving 8 bytes) and leave
// at 100.01 ms. No violation, nothing shifted: rank 2 sends to rank 0 at
// 50 ms, which receives it from 100.01 ms with no Real Sync (shifted
// behind the others' entries, rank 2's send would come at 149.99 ms).
// Potential Sync still counts every member's entry (§3): 99.999 ms for
// rank 2; Execution Time from MPI_Init's exit to MPI_Finalize at 200 ms.
// When rank 2 receives some data, its exit is repaired, which moves its
// send after rank 0's receive: a second repair.
func TestReceiveNothingBoundsNoExit(t *testing.T) {
	for _, deaf := range []bool{true, false} {
		t.Run(map[bool]string{true: "receives nothing", false: "receives"}[deaf], func(t *testing.T) {
			run, rs := start(3)
			av := func(r *tracetest.Rank, recv uint64) {
				r.Call("MPI_Alltoallv", 10*us, traceformat.Event{
					Attr: traceformat.AttrSendBytes | traceformat.AttrRecvBytes, SendBytes: 8, RecvBytes: recv})
			}
			recv := uint64(0)
			if !deaf {
				recv = 8
			}
			av(rs[2], recv)
			rs[0].At(100 * ms)
			av(rs[0], 8)
			rs[1].At(100 * ms)
			av(rs[1], 8)
			rs[2].At(50*ms).Send(0, 1, 8, 10*us)
			rs[0].Recv(2, 1, 8, 10*us)
			for _, r := range rs {
				r.At(200 * ms)
			}
			finish(run)
			if !deaf {
				if rep := analyzeRun(t, run); rep.ClockViolations == nil || rep.ClockViolations.Count != 2 {
					t.Errorf("want rank 2's exit repaired, and then rank 0's receive: %q", rep.Warnings)
				}
				return
			}
			rep := analyzeClean(t, run)
			iv := find(t, rep)
			expect(t, "Real Sync rank 0", rank(t, iv, 0).RealSync, 0)
			expect(t, "Potential Sync rank 2", rank(t, iv, 2).PotentialSync, 0.099999)
			expect(t, "Potential Sync rank 0", rank(t, iv, 0).PotentialSync, 0)
			expect(t, "Execution Time rank 2", rank(t, iv, 2).ExecutionTime, 0.199999)
		})
	}
}

// A collective lacking a rank (its trace is missing) is counted over the
// ranks present, a lower bound, and a warning names the collective and the
// missing rank. Rank 0 enters the barrier at 0.1 s, rank 1 at 0.3 s; both
// leave at 0.301 s: Potential Sync of rank 0 = 0.3 − 0.1 = 0.2 s, Time
// Variation 0.
func TestUnmatchedCollective(t *testing.T) {
	run := tracetest.NewRun(3)
	for i, work := range []int64{100 * ms, 300 * ms, 0} {
		r := run.Rank(i)
		r.Init(1 * us).Compute(work)
		r.Barrier(301*ms - r.Now()).Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "app.2.trc"))
	rep := analyzeDir(t, dir)
	iv := find(t, rep)
	expect(t, "rank 0 Potential Sync", rank(t, iv, 0).PotentialSync, 0.2)
	expect(t, "rank 1 Potential Sync", rank(t, iv, 1).PotentialSync, 0)
	expect(t, "Time Variation", iv.Main.TimeVariation, 0)
	if !hasWarning(rep, "Collective MPI_Barrier (call 1 on MPI_COMM_WORLD) lacks rank(s) 2 (their traces end before it") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}
