package otf2

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/otf2/otf2test"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	. "github.com/dtpa/dtpa/traceformat/tracetest"
)

// roundTrip analyses run's traces directly and after Export and Import,
// and returns both reports and Import's warnings.
func roundTrip(t *testing.T, run *Run) (direct, back *report.Report, importWarns []string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	direct, err := analyzer.Analyze(ctx, analyzer.Options{Dir: dir, App: "app", MaxLevel: -1})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "otf2")
	warn := func(s string) { t.Logf("warning: %s", s) }
	if _, err := Export(ctx, ExportOptions{Dir: dir, App: "app", Out: out, Warn: warn}); err != nil {
		t.Fatal(err)
	}
	back2 := filepath.Join(dir, "back")
	if err := os.Mkdir(back2, 0o755); err != nil {
		t.Fatal(err)
	}
	iwarn := func(s string) { importWarns = append(importWarns, s); warn(s) }
	if _, err := Import(ctx, filepath.Join(out, ArchiveName), back2, "app", iwarn); err != nil {
		t.Fatal(err)
	}
	back, err = analyzer.Analyze(ctx, analyzer.Options{Dir: back2, App: "app", MaxLevel: -1})
	if err != nil {
		t.Fatal(err)
	}
	return direct, back, importWarns
}

// TestRoundTrip: trace → OTF2 → trace gives the report of the trace
// (otf2test.CompareReports: every figure within one tick), on a run with
// a late sender, nonblocking messages completed later, an unsuccessful
// test, a collective on a derived communicator and rank 1's clock skewed.
func TestRoundTrip(t *testing.T) {
	direct, back, _ := roundTrip(t, mixedRunOf(false))
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripMarks: the same with an interval (MPI_Pcontrol's arguments)
// and a folded run of polls, which the archive carries as the
// attributes dtpa::pcontrol_level, dtpa::pcontrol_arg and dtpa::calls of
// the calls' ENTER records; Import reads them back.
func TestRoundTripMarks(t *testing.T) {
	direct, back, warns := roundTrip(t, mixedRunOf(true))
	if len(direct.Intervals) != 2 {
		t.Fatalf("the direct report has %d intervals; the fixture has the whole program and interval 1", len(direct.Intervals))
	}
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripTwoMessages: the timeline fixture, whose figures the
// analyzer's tests derive by hand.
func TestRoundTripTwoMessages(t *testing.T) {
	direct, back, _ := roundTrip(t, TwoMessages())
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripNonblockingCollectives: MPI_Ibarrier and a rooted
// MPI_Ibcast on a derived communicator, completed later by MPI_Wait and
// MPI_Waitall, which the archive carries as NON_BLOCKING_COLLECTIVE_REQUEST
// at the start and NON_BLOCKING_COLLECTIVE_COMPLETE in the completing
// call, as Score-P does; rank 2 starts late, so the waits lose time.
func TestRoundTripNonblockingCollectives(t *testing.T) {
	run := NewRun(3)
	sub := run.NewComm(0, 2)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Init(1 * US)
		if i != 1 {
			r.CommSplit(nil, sub, 5*US)
		}
		r.Compute(int64(i) * 10 * MS)
		b := r.Ibarrier(2 * US)
		if i == 1 {
			r.Wait(b, 20*MS+10*US-r.Now())
			r.Finalize(1 * US)
			continue
		}
		id := r.Creates("MPI_Ibcast", 2*US, On(sub), func(_ *Rank, e *traceformat.Event) {
			e.Attr |= traceformat.AttrRoot | traceformat.AttrSendBytes | traceformat.AttrRecvBytes
			e.Root, e.SendBytes, e.RecvBytes = 0, 64, 64
		})
		r.Waitall([]Req{b, id}, 20*MS+10*US-r.Now())
		r.Finalize(1 * US)
	}
	direct, back, warns := roundTrip(t, run)
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	if len(direct.Warnings) > 0 || len(back.Warnings) > 0 {
		t.Errorf("warnings: direct %q, round trip %q", direct.Warnings, back.Warnings)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripPersistent: persistent sends, receives and collectives,
// started twice each (MPI_Startall, MPI_Start) and completed by waits,
// which the archive carries only as the starts' MPI_ISEND,
// MPI_IRECV_REQUEST and NON_BLOCKING_COLLECTIVE_REQUEST records; Import
// binds them back to their creating calls. Rank 1 is late, so the
// receives and the collective lose time.
func TestRoundTripPersistent(t *testing.T) {
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * US)
	r1.Init(1 * US)
	s0 := r0.SendInit(1, 3, 8, 1*US)
	q0 := r0.RecvInit(1, 4, 16, 1*US)
	b0 := r0.CollInit("MPI_Barrier_init", -1, 1*US)
	r1.Compute(5 * MS)
	s1 := r1.SendInit(0, 4, 16, 1*US)
	q1 := r1.RecvInit(0, 3, 8, 1*US)
	b1 := r1.CollInit("MPI_Barrier_init", -1, 1*US)
	for i := 0; i < 2; i++ {
		r0.Startall([]Req{s0, q0}, 2*US)
		r0.Start(b0, 1*US)
		r1.Compute(10 * MS)
		r1.Startall([]Req{q1, s1}, 2*US)
		r1.Start(b1, 1*US)
		end := max(r0.Now(), r1.Now()) + 20*US
		r0.Waitall([]Req{s0, q0, b0}, end-r0.Now())
		r1.Waitall([]Req{q1, s1, b1}, end-r1.Now())
	}
	r0.Finalize(1 * US)
	r1.Finalize(1 * US)
	direct, back, warns := roundTrip(t, run)
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	if len(direct.Warnings) > 0 || len(back.Warnings) > 0 {
		t.Errorf("warnings: direct %q, round trip %q", direct.Warnings, back.Warnings)
	}
	if direct.Intervals[0].Main.RealSync == 0 || direct.Intervals[0].Main.CollectiveNumber != 2 {
		t.Errorf("the fixture should lose Real Sync and have 2 collectives: %+v", direct.Intervals[0].Main)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripProbe: a blocking MPI_Probe that waits 100 ms for a late
// sender (Real Sync, §8.6); its status, which Score-P does not record,
// goes into the attributes dtpa::status_source, dtpa::status_tag and
// dtpa::status_comm of its ENTER record.
func TestRoundTripProbe(t *testing.T) {
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * US)
	r1.Init(1 * US)
	r0.Compute(100*MS).Send(1, 6, 8, 2*US)
	r1.Call("MPI_Probe", 100*MS+5*US, traceformat.Event{Attr: traceformat.AttrRecv | traceformat.AttrStatus,
		RecvPeer: traceformat.AnySource, RecvTag: 6, Status: []traceformat.Status{{Source: 0, Tag: 6}}})
	r1.Recv(0, 6, 8, 2*US)
	r0.Finalize(1 * US)
	r1.Finalize(1 * US)
	direct, back, warns := roundTrip(t, run)
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	if rs := direct.Intervals[0].Main.RealSync; rs < 0.099 {
		t.Errorf("the fixture's probe should lose 100 ms of Real Sync, not %g s", rs)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripProcNull: a send and a receive addressed to MPI_PROC_NULL
// keep their byte counts (attribute dtpa::bytes; Score-P writes no
// message for them).
func TestRoundTripProcNull(t *testing.T) {
	run := NewRun(2)
	for i := 0; i < 2; i++ {
		r := run.Rank(i)
		r.Init(1 * US)
		r.Send(traceformat.ProcNull, 3, 40, 2*US).Recv(traceformat.ProcNull, 3, 24, 2*US)
		r.Finalize(1 * US)
	}
	direct, back, warns := roundTrip(t, run)
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	var bytes uint64
	for _, f := range direct.Intervals[0].Functions {
		bytes += uint64(f.Bytes)
	}
	if bytes != 128 {
		t.Errorf("the fixture's calls move %d bytes, want 2·(40+24)", bytes)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// innerGapsRun has folded runs with and without their inner gaps (the
// analyzer's TestProfileFoldedInnerGaps with its ranks swapped, whose gap
// figures it derives by hand), rank 1's clock 100 ppm fast when skew is
// set. Times in ns:
//
//	rank 0: Init 0–1000, 5000 + 3000, 4 MPI_Iprobe folded (4000 in MPI,
//	        3 gaps of 1000), 1 100 000, Recv 1000, 4000, 3 MPI_Comm_size
//	        folded without inner gaps (3000 in MPI), 2000, Finalize.
//	rank 1: Init 0–1000, 9000 + 899 100 of computation, a folded run of
//	        1000 MPI_Comm_rank (100 000 in MPI, 999 gaps of 900 between
//	        them), 20 000, Send 2000, 1000, 3 MPI_Wtime whose recorded inner
//	        gaps (5000) exceed the gap before the event (1000), Finalize.
//
// Rank 0 ends 6 gaps of 1 112 000 ns in all (one for the run without
// inner gaps); rank 1 ends 1004 of 929 100 ns (the Wtime's inner gaps are
// clamped to the 1000 before it).
func innerGapsRun(skew bool) *Run {
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	if skew {
		r1.Skew(2_500*MS, 100)
	}
	r0.Init(1000).Compute(5000 + 3000)
	r0.Call("MPI_Iprobe", 4000, traceformat.Event{Attr: traceformat.AttrRecv | traceformat.AttrFlag, RecvPeer: 1, RecvTag: 5},
		FoldedGaps(4, 3000))
	r0.Compute(1_100_000).Recv(1, 5, 8, 1000).Compute(4000)
	r0.System("MPI_Comm_size", 3000, Folded(3)).Compute(2000).Finalize(1000)
	r1.Init(1000).Compute(9000 + 899_100)
	r1.System("MPI_Comm_rank", 100_000, FoldedGaps(1000, 899_100))
	r1.Compute(20_000).Send(0, 5, 8, 2000).Compute(1000)
	r1.System("MPI_Wtime", 300, FoldedGaps(3, 5000)).Finalize(1000)
	return run
}

// innerGapsWant are innerGapsRun's gap count and sum (ns) by rank.
var innerGapsWant = [2]struct{ n, sum int64 }{{6, 1_112_000}, {1004, 929_100}}

// TestRoundTripInnerGaps: folded runs keep their inner gaps through the
// archive (attribute dtpa::inner_gaps beside dtpa::calls), so the gaps
// come back one per call of a run that has them and one per run that has
// not: every rank's gap count, sum and mean exact, and every other figure.
func TestRoundTripInnerGaps(t *testing.T) {
	direct, back, warns := roundTrip(t, innerGapsRun(false))
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	for _, rep := range []*report.Report{direct, back} {
		checkGaps(t, rep, 0)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripInnerGapsSkewed: on a rank whose clock is 100 ppm fast the
// traces' gaps are measured on its clock (rank 1's 929 100 ns read 93 ns
// longer) and the archive's on the global one, inner gaps included
// (TestExportInnerGaps): read back, they are the true ones within a few
// ns of rounding, and as many.
func TestRoundTripInnerGapsSkewed(t *testing.T) {
	direct, back, warns := roundTrip(t, innerGapsRun(true))
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	checkGaps(t, back, 4)
	if p := direct.Intervals[0].Ranks[1].RankProfile; p.Gaps != innerGapsWant[1].n ||
		math.Abs(p.GapMean*float64(p.Gaps)*1e9-1.0001*float64(innerGapsWant[1].sum)) > 5 {
		t.Errorf("the traces' rank 1: %d gaps of %.3f ns in all; want %d, 100 ppm more than %d ns", p.Gaps,
			p.GapMean*float64(p.Gaps)*1e9, innerGapsWant[1].n, innerGapsWant[1].sum)
	}
}

// checkGaps checks the gap count, sum and mean of every rank of rep's
// whole program against innerGapsWant, the sums within tol ns.
func checkGaps(t *testing.T, rep *report.Report, tol float64) {
	t.Helper()
	for _, rk := range rep.Intervals[0].Ranks {
		w := innerGapsWant[rk.Rank]
		p := rk.RankProfile
		sum := p.GapMean * float64(p.Gaps) * 1e9
		if p.Gaps != w.n || math.Abs(sum-float64(w.sum)) > tol+1e-6 ||
			math.Abs(p.GapMean-float64(w.sum)/float64(w.n)*1e-9) > (tol+1e-6)*1e-9/float64(w.n) {
			t.Errorf("rank %d: %d gaps, %.3f ns in all, mean %.12f s; want %d, %d ns, %.12f s", rk.Rank, p.Gaps, sum, p.GapMean,
				w.n, w.sum, float64(w.sum)/float64(w.n)*1e-9)
		}
	}
}

// TestRoundTripThreads: the threads of MPI_THREAD_MULTIPLE ranks come back
// as threads (each its location in the archive), so that the report of
// the archive is the report of the traces: rank 0's thread 1 waits 200 ms
// for rank 1's thread 1 while the master threads exchange a message, and
// each thread's batch reaches its trace after the master thread's
// MPI_Finalize, as buffers handed over at the end.
func TestRoundTripThreads(t *testing.T) {
	run := NewRun(2)
	run.ThreadLevel = 3
	r0, r1 := run.Rank(0), run.Rank(1)
	for _, r := range []*Rank{r0, r1} {
		r.Init(1 * US)
		r.Thread(1).Thread(0)
	}
	r0.At(50*MS).Send(1, 0, 8, 10*US)
	r0.At(300 * MS).Finalize(US)
	r0.Thread(1).At(1*MS).Recv(1, 1, 8, 200*MS+20*US)
	q := r0.At(210*MS).Irecv(1, 2, 4, US)
	r0.At(230*MS).Wait(q, 10*US)
	r1.At(60*MS).Recv(0, 0, 8, 10*US)
	r1.At(300 * MS).Finalize(US)
	r1.Thread(1).At(201*MS).Send(0, 1, 8, 10*US)
	r1.At(220*MS).Send(0, 2, 4, 10*US)
	direct, back, warns := roundTrip(t, run)
	for _, w := range warns {
		t.Errorf("Import warns: %s", w)
	}
	if rs := direct.Intervals[0].Ranks; len(rs) != 2 || rs[0].RealSync < 0.19 {
		t.Fatalf("the direct report does not see thread 1's wait: %+v", rs)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}

// TestRoundTripUnfinished: the calls in progress when their processes
// ended come back from the archive as the footers said them (rank,
// thread, function, how long they ran, whether only at least), and the
// report is the trace's. (Unskewed: a rank's durations are measured on
// its own clock, which an archive, on the global clock only, does not
// keep.)
func TestRoundTripUnfinished(t *testing.T) {
	direct, back, _ := roundTrip(t, unfinishedRunOf(false))
	if len(direct.Unfinished) != 3 || len(back.Unfinished) != 3 {
		t.Fatalf("calls in progress: trace %+v, archive %+v", direct.Unfinished, back.Unfinished)
	}
	for _, d := range otf2test.CompareReports(direct, back) {
		t.Error(d)
	}
}
