package analyzer

import (
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// unrepairedWant is the count of clock-condition violations not repaired
// a test expects, by class, with the worst (seconds) and its rank.
type unrepairedWant struct {
	sync, nonblocking, threaded int64
	worst                       float64
	rank                        int
}

// checkUnrepaired checks rep's violations not repaired against want, on a
// run that has no other problem: nothing repaired, and no warning but
// the one about them (none when want counts none).
func checkUnrepaired(t *testing.T, rep *report.Report, want unrepairedWant) {
	t.Helper()
	n := want.sync + want.nonblocking + want.threaded
	cv := rep.ClockViolations
	if n == 0 {
		if cv != nil {
			t.Errorf("clock violations %+v, want none", *cv)
		}
		noWarnings(t, rep)
		return
	}
	if cv == nil {
		t.Fatalf("no clock violations, want %+v (warnings %q)", want, rep.Warnings)
	}
	if cv.Count != 0 || cv.Unrepaired != n || cv.UnrepairedSyncSends != want.sync || cv.UnrepairedNonblocking != want.nonblocking ||
		cv.UnrepairedThreaded != want.threaded || !near(cv.UnrepairedWorst, want.worst) || cv.UnrepairedWorstRank != want.rank {
		t.Errorf("clock violations %+v, want %+v", *cv, want)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "are not repaired") {
		t.Errorf("warnings %q, want one about the violations not repaired", rep.Warnings)
	}
}

// analyzeDistToo is analyzeRun, checking also that the distributed
// analysis over 1–5 processes gives the same report (the violations not
// repaired are counted on the process of one rank and reduced).
func analyzeDistToo(t *testing.T, run *tracetest.Run) *report.Report {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep := analyzeDir(t, dir)
	checkDistOutputs(t, Options{Dir: dir, App: "app", MaxLevel: -1}, rep, nil, nil)
	return rep
}

// A Wait completing a nonblocking collective before a start it depends on
// is a violation the controlled logical clock does not repair (§8.5):
// counted, with the figures as they were. Three ranks start the
// collective at 0.001 ms, but rank 1 at 100 ms; rank 0 waits from 0.002
// to 50 ms, rank 2 to 200 ms, rank 1 1 µs. MPI_Iallreduce: rank 0's
// completion depends on rank 1's start, 50 ms later (one violation,
// 0.05 s on rank 0); its Potential Sync is its whole wait, 49.998 ms,
// rank 2's 99.998 ms (100 ms − its wait's entry), rank 1's 0. An
// MPI_Ibcast from rank 0 with the same times: the root depends on no
// start, and rank 2 on the root's; no violation, the same Potential Sync
// (every start counts, §8.5). An MPI_Ialltoallv whose rank 0 receives
// nothing (dependsOnEntries): no violation either. And a Wait that also
// completed a receive gets no Potential Sync but is counted the same.
// Execution Time (MPI_Init's exit to MPI_Finalize at 200 ms) is as
// recorded.
func TestUnrepairedNonblockingCollective(t *testing.T) {
	type startFn func(k *tracetest.Rank, r int) tracetest.Req
	alltoallv := func(k *tracetest.Rank, r int) tracetest.Req {
		id := uint64(900 + r)
		recv := uint64(8)
		if r == 0 {
			recv = 0
		}
		k.Call("MPI_Ialltoallv", us, traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrSendBytes | traceformat.AttrRecvBytes,
			Reqs: []uint64{id}, SendBytes: 8, RecvBytes: recv})
		return tracetest.Req(id)
	}
	for _, c := range []struct {
		name   string
		start  startFn
		shared bool
		want   unrepairedWant
	}{
		{"Iallreduce", func(k *tracetest.Rank, _ int) tracetest.Req { return k.Iallreduce(8, us) }, false, unrepairedWant{nonblocking: 1, worst: 0.05}},
		{"Iallreduce with a receive", func(k *tracetest.Rank, _ int) tracetest.Req { return k.Iallreduce(8, us) }, true, unrepairedWant{nonblocking: 1, worst: 0.05}},
		{"Ibcast", func(k *tracetest.Rank, _ int) tracetest.Req { return k.Ibcast(0, 8, us) }, false, unrepairedWant{}},
		{"Ialltoallv receiving nothing", alltoallv, false, unrepairedWant{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, rs := start(3)
			q0 := c.start(rs[0], 0)
			if c.shared {
				// A message rank 2 sent at 0.001 ms, received in the
				// same Waitall: SendRecv time, no Potential Sync.
				rs[2].Send(0, 1, 8, 0)
				q := rs[0].Irecv(2, 1, 8, 0)
				rs[0].Waitall([]tracetest.Req{q0, q}, 50*ms-rs[0].Now())
			} else {
				waitColl(rs[0], uint64(q0), 50*ms-rs[0].Now())
			}
			rs[1].At(100 * ms)
			waitColl(rs[1], uint64(c.start(rs[1], 1)), us)
			waitColl(rs[2], uint64(c.start(rs[2], 2)), 200*ms-rs[2].Now())
			for _, r := range rs {
				r.At(200 * ms)
			}
			finish(run)
			rep := analyzeDistToo(t, run)
			checkUnrepaired(t, rep, c.want)
			iv := find(t, rep)
			pot0 := 0.049998
			if c.shared {
				pot0 = 0
			}
			expect(t, "Potential Sync rank 0", rank(t, iv, 0).PotentialSync, pot0)
			expect(t, "Potential Sync rank 1", rank(t, iv, 1).PotentialSync, 0)
			expect(t, "Potential Sync rank 2", rank(t, iv, 2).PotentialSync, 0.099998)
			expect(t, "Execution Time rank 0", rank(t, iv, 0).ExecutionTime, 0.199999)
		})
	}
}

// A multi-threaded process's blocking collective left before an entry it
// depends on is not repaired (§8.10): counted. Thread 1 of rank 0 is in
// MPI_Allreduce from 1 to 50 ms, rank 1 enters it at 100 ms and leaves at
// 100.01 ms: one violation, 0.05 s on rank 0; Potential Sync 99 ms
// (rank 1's entry − rank 0's), Time Variation 50.01 ms (rank 1's exit −
// rank 0's), as without the count. In MPI_Bcast from rank 0 with the
// same times, rank 0 depends on no entry: none.
func TestUnrepairedThreadedCollective(t *testing.T) {
	for _, bcast := range []bool{false, true} {
		run, r0, r1 := pair()
		run.ThreadLevel = threadMultiple
		coll := func(k *tracetest.Rank, dur int64) {
			if bcast {
				k.Bcast(0, 8, dur)
			} else {
				k.Allreduce(8, dur)
			}
		}
		coll(r0.Thread(1).At(ms), 49*ms)
		r0.Thread(0).At(200 * ms)
		coll(r1.At(100*ms), 10*us)
		r1.At(200 * ms)
		finish(run)
		rep := analyzeDistToo(t, run)
		want := unrepairedWant{threaded: 1, worst: 0.05}
		if bcast {
			want = unrepairedWant{}
		}
		checkUnrepaired(t, rep, want)
		iv := find(t, rep)
		expect(t, "Potential Sync rank 0", rank(t, iv, 0).PotentialSync, 0.099)
		expect(t, "Time Variation rank 0", rank(t, iv, 0).TimeVariation, 0.05001)
		expect(t, "Execution Time rank 0", rank(t, iv, 0).ExecutionTime, 0.199999)
	}
}
