package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// WaitPatternUp into a barrier: rank i enters i·100 ms late; everybody
// leaves at the same moment.
func TestPotentialSyncBarrier(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
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
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// Exits spread over 30 µs: Time Variation.
func TestTimeVariation(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
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
	run := tracetest.NewRun(4)
	lo, hi := run.NewComm(0, 1), run.NewComm(3, 2) // rank 3 is rank 0 of hi
	for i := 0; i < 4; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
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
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// Rooted collectives: Gather waits for everybody at the root only,
// Scatter makes non-roots wait for the root.
func TestRootedCollectives(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
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
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// A root running ahead through many broadcasts waits for the others past
// maxPendingColls instances, without changing any figure.
func TestCollectiveFlowControl(t *testing.T) {
	old := maxPendingColls
	maxPendingColls = 4
	defer func() { maxPendingColls = old }()
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	for i := 0; i < 100; i++ {
		r0.Bcast(0, 8, 1*us) // the root enters at 0.001 + i µs
	}
	r1.Compute(10 * ms)
	for i := 0; i < 100; i++ {
		r1.Bcast(0, 8, 1*us) // enters at 10.001 ms + i µs
	}
	r0.Compute(20 * ms).Finalize(1 * us)
	r1.Finalize(1 * us)
	rep := analyzeRun(t, run)
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
	// Each instance: the root entered 10 ms earlier than rank 1.
	expect(t, "root Potential Sync", rank(t, find(t, rep), 0).PotentialSync, 100*0.010)
	if n := find(t, rep).Main.CollectiveNumber; n != 100 {
		t.Errorf("Collective Number %d", n)
	}
}
