package analyzer

import (
	"context"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

func recordTimeline(t *testing.T, run *tracetest.Run, maxCalls int) (*report.Report, *report.Timeline) {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rec := &TimelineRecorder{MaxCalls: maxCalls}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true, Timeline: rec})
	if err != nil {
		t.Fatal(err)
	}
	tl := rec.Timeline()
	if tl == nil {
		t.Fatal("no timeline recorded")
	}
	// The same timeline from a distributed analysis.
	checkDistOutputs(t, Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: &TimelineRecorder{MaxCalls: maxCalls}}, rep, tl, nil)
	return rep, tl
}

func fnName(tl *report.Timeline, ln *report.Lane, i int) string { return tl.Funcs[ln.Func[i]].Name }

// TestTimeline records tracetest.TwoMessages. Time 0 of the timeline is the
// earliest call's entry: rank 1's Recv at 0.001 ms.
func TestTimeline(t *testing.T) {
	rep, tl := recordTimeline(t, tracetest.TwoMessages(), 0)
	if len(tl.Lanes) != 3 || tl.MessageCount != 2 || tl.CallCount != 8 || tl.Truncated {
		t.Fatalf("lanes %d messages %d calls %d truncated %v; want 3 2 8 false", len(tl.Lanes), tl.MessageCount, tl.CallCount, tl.Truncated)
	}
	if tl.End != 150*ms+10*us-1*us {
		t.Errorf("End %d, want %d", tl.End, 150*ms+9*us)
	}
	type box struct {
		fn               string
		start, dur, lost int64
		bytes            int64
		peer             int
		coll             bool
	}
	want := [][]box{
		{{"MPI_Send", 100 * ms, 10 * us, 0, 8, 1, false},
			// Waits from 100.011 ms for rank 2's entry at 150 ms.
			{"MPI_Barrier", 100*ms + 10*us, 50*ms - 1*us, 50*ms - 11*us, 0, -1, true}},
		{{"MPI_Recv", 0, 100*ms + 20*us, 100 * ms, 8, 0, false},
			{"MPI_Irecv", 100*ms + 20*us, 1 * us, 0, 16, -1, false},
			{"MPI_Wait", 100*ms + 21*us, 8 * us, 0, 0, 2, false},
			{"MPI_Barrier", 100*ms + 29*us, 50*ms - 20*us, 50*ms - 30*us, 0, -1, true}},
		{{"MPI_Send", 50 * ms, 5 * us, 0, 16, 1, false},
			{"MPI_Barrier", 150*ms - 1*us, 10 * us, 0, 0, -1, true}},
	}
	for r, lw := range want {
		ln := &tl.Lanes[r]
		if ln.Rank != r || len(ln.Start) != len(lw) || ln.Truncated || ln.DetailEnd != tl.End {
			t.Errorf("lane %d: rank %d, %d boxes, truncated %v, detail end %d; want %d boxes", r, ln.Rank, len(ln.Start), ln.Truncated, ln.DetailEnd, len(lw))
			continue
		}
		for i, w := range lw {
			got := box{fnName(tl, ln, i), ln.Start[i], ln.Dur[i], ln.Lost[i], ln.Bytes[i], ln.Peer[i], ln.Coll[i] >= 0}
			if got != w {
				t.Errorf("rank %d box %d: %+v, want %+v", r, i, got, w)
			}
			// The site numbers are the report's SRC ids.
			found := false
			for _, p := range rep.Intervals[0].SRC {
				if p.ID == ln.Site[i] && p.Function == got.fn {
					found = true
				}
			}
			if !found {
				t.Errorf("rank %d box %d (%s): site %d is no SRC of that function", r, i, got.fn, ln.Site[i])
			}
		}
	}
	// One barrier instance on all three.
	if c0, c1, c2 := tl.Lanes[0].Coll[1], tl.Lanes[1].Coll[3], tl.Lanes[2].Coll[1]; c0 != c1 || c1 != c2 {
		t.Errorf("barrier instances %d %d %d, want one", c0, c1, c2)
	}
	kinds := map[string]string{}
	for _, f := range tl.Funcs {
		kinds[f.Name] = f.Kind
	}
	for fn, k := range map[string]string{"MPI_Send": report.KindP2P, "MPI_Irecv": report.KindP2P, "MPI_Wait": report.KindWait, "MPI_Barrier": report.KindColl} {
		if kinds[fn] != k {
			t.Errorf("%s kind %q, want %q", fn, kinds[fn], k)
		}
	}
	// Arrows, in the receiver's order: 0→1 sent at 100 ms, received at the
	// Recv's exit 100.020 ms; 2→1 sent at 50 ms, received at the Wait's
	// exit 100.029 ms.
	m := tl.Messages
	if len(m.From) != 2 || m.From[0] != 0 || m.To[0] != 1 || m.Send[0] != 100*ms || m.Recv[0] != 100*ms+20*us ||
		m.From[1] != 2 || m.To[1] != 1 || m.Send[1] != 50*ms || m.Recv[1] != 100*ms+29*us {
		t.Errorf("messages %+v", m)
	}
	// The overview holds every call's time: rank 1's point-to-point time
	// is the Recv and the Irecv, its lost time the Recv's 100 ms and the
	// barrier's wait (resampling rounds, by < 1 ns per bin).
	ov := tl.Lanes[1].Overview
	if len(ov.P2P) != tl.Bins {
		t.Fatalf("%d overview bins, want %d", len(ov.P2P), tl.Bins)
	}
	for _, c := range []struct {
		what string
		bins []int64
		want int64
	}{{"p2p", ov.P2P, 100*ms + 21*us}, {"wait", ov.Wait, 8 * us}, {"coll", ov.Coll, 50*ms - 20*us}, {"lost", ov.Lost, 150*ms - 30*us}} {
		var sum int64
		for _, v := range c.bins {
			sum += v
		}
		if d := sum - c.want; d < -int64(tl.Bins) || d > int64(tl.Bins) {
			t.Errorf("rank 1 overview %s: %d ns, want %d", c.what, sum, c.want)
		}
	}
}

// TestTimelineTruncated: a budget of one box per rank keeps each rank's
// first call; the arrow into a dropped box is left out, the count is not.
func TestTimelineTruncated(t *testing.T) {
	_, tl := recordTimeline(t, tracetest.TwoMessages(), 3)
	if !tl.Truncated || tl.MessageCount != 2 || tl.CallCount != 8 {
		t.Fatalf("truncated %v messages %d calls %d", tl.Truncated, tl.MessageCount, tl.CallCount)
	}
	for r, end := range []int64{100*ms + 10*us, 100*ms + 20*us, 150*ms - 1*us} {
		ln := tl.Lanes[r]
		if len(ln.Start) != 1 || !ln.Truncated || ln.DetailEnd != end {
			t.Errorf("lane %d: %d boxes, truncated %v, detail end %d; want 1, true, %d", r, len(ln.Start), ln.Truncated, ln.DetailEnd, end)
		}
	}
	if m := tl.Messages; len(m.From) != 1 || m.From[0] != 0 {
		t.Errorf("messages %+v, want the one from rank 0", m)
	}
}

// TestTimelineOffCostsNothing: without a recorder the replay keeps no
// observer.
func TestTimelineOff(t *testing.T) {
	var rec *TimelineRecorder
	if rec.rank(&replayer{}, 1) != nil {
		t.Error("a nil recorder gave an observer")
	}
}

// TestTimelineAmortized: the timeline shows the calls where the report
// puts them after the backward amortization of a repair (clc.go), on the
// run of TestBackwardAmortization. Rank 1 in ns: Isend 1000–2000 (the
// fixed point), q1 Irecv 2000–3000 → 2000–3800, q2 Irecv
// 10003000–10004000 → 18004880–18006680, Wait(q1) 90011000–100011000 with
// its 10 ms of Real Sync, Wait(q2) and the barrier shifted by the jump.
func TestTimelineAmortized(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(5*ms).Send(1, 3, 8, 10*us)
	r0.Compute(95*ms).Send(1, 1, 8, 10*us)
	r0.Recv(1, 2, 8, 10*us)
	r1.Isend(0, 2, 8, 1*us)
	q1 := r1.Irecv(0, 1, 8, 1*us)
	q2 := r1.Compute(10*ms).Irecv(0, 3, 8, 1*us)
	r1.Compute(40*ms).Wait(q1, 10*ms)
	r1.Compute(1*ms).Wait(q2, 1*us)
	r1.Barrier(1 * us)
	r0.Barrier(20 * ms)
	finish(run)
	_, tl := recordTimeline(t, run, 0)
	type box struct {
		fn                string
		entry, exit, lost int64
	}
	want := []box{
		{"MPI_Isend", 1000, 2000, 0},
		{"MPI_Irecv", 2000, 3800, 0},
		{"MPI_Irecv", 18004880, 18006680, 0},
		{"MPI_Wait", 90011000, 100011000, 10 * ms},
		{"MPI_Wait", 101011000, 101012000, 0},
		{"MPI_Barrier", 101012000, 101013000, 0},
	}
	ln := &tl.Lanes[1]
	if len(ln.Start) != len(want) {
		t.Fatalf("rank 1: %d boxes, want %d", len(ln.Start), len(want))
	}
	for i, w := range want {
		got := box{fnName(tl, ln, i), tl.Origin + ln.Start[i], tl.Origin + ln.Start[i] + ln.Dur[i], ln.Lost[i]}
		if got != w {
			t.Errorf("rank 1 box %d: %+v, want %+v", i, got, w)
		}
	}
}

// TestChromeExportAmortized: the Chrome export shows the run of
// TestTimelineAmortized with the same amortized times (µs in the file,
// relative to the earliest entry, rank 1's Isend at 1000 ns).
func TestChromeExportAmortized(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(5*ms).Send(1, 3, 8, 10*us)
	r0.Compute(95*ms).Send(1, 1, 8, 10*us)
	r0.Recv(1, 2, 8, 10*us)
	r1.Isend(0, 2, 8, 1*us)
	q1 := r1.Irecv(0, 1, 8, 1*us)
	q2 := r1.Compute(10*ms).Irecv(0, 3, 8, 1*us)
	r1.Compute(40*ms).Wait(q1, 10*ms)
	r1.Compute(1*ms).Wait(q2, 1*us)
	r1.Barrier(1 * us)
	r0.Barrier(20 * ms)
	finish(run)
	_, _, _, tr, _ := exportRun(t, run, nil)
	type slice struct {
		name        string
		entry, exit int64
	}
	want := []slice{{"MPI_Isend", 1000, 2000}, {"MPI_Irecv", 2000, 3800}, {"MPI_Irecv", 18004880, 18006680},
		{"MPI_Wait", 90011000, 100011000}, {"MPI_Wait", 101011000, 101012000}, {"MPI_Barrier", 101012000, 101013000}}
	var got []slice
	for _, s := range tr.Slices {
		if s.Pid == 2 {
			got = append(got, slice{s.Name, s.Ts + 1000, s.Ts + s.Dur + 1000})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("rank 1 slices %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rank 1 slice %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// threadSink keeps the thread of every call a TimelineSink gets, by rank.
type threadSink struct{ threads [][]int }

func (s *threadSink) Start(ranks int) { s.threads = make([][]int, ranks) }
func (s *threadSink) Call(rank int, c *TimelineCall) {
	s.threads[rank] = append(s.threads[rank], int(c.Thread))
}
func (s *threadSink) Span(int, *TimelineSpan) {}

// TestTimelineThreads: on both ranks of threadedLateSender thread 1 makes
// MPI calls besides thread 0. Each lane lists both threads, its Thread
// column names thread 1 for exactly the calls the sink gets from thread 1,
// and a lane truncated to one call still lists both threads.
func TestTimelineThreads(t *testing.T) {
	dir := t.TempDir()
	if _, err := threadedLateSender().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	sink := &threadSink{}
	rec := &TimelineRecorder{Sink: sink}
	if _, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true, Timeline: rec}); err != nil {
		t.Fatal(err)
	}
	tl := rec.Timeline()
	for _, ln := range tl.Lanes {
		if len(ln.Threads) != 2 || ln.Threads[0] != 0 || ln.Threads[1] != 1 {
			t.Errorf("rank %d threads %v, want [0 1]", ln.Rank, ln.Threads)
		}
		if len(ln.Thread) != len(ln.Start) {
			t.Fatalf("rank %d: %d threads for %d calls", ln.Rank, len(ln.Thread), len(ln.Start))
		}
		ones := 0
		for i, th := range ln.Thread {
			if th != sink.threads[ln.Rank][i] {
				t.Errorf("rank %d call %d (%s): thread %d, the sink got %d", ln.Rank, i, fnName(tl, &ln, i), th, sink.threads[ln.Rank][i])
			}
			if th == 1 {
				ones++
				if f := fnName(tl, &ln, i); ln.Rank == 0 && f != "MPI_Recv" || ln.Rank == 1 && f != "MPI_Send" {
					t.Errorf("rank %d: thread 1 made %s", ln.Rank, f)
				}
			}
		}
		if ones != 1 {
			t.Errorf("rank %d: %d calls of thread 1, want 1", ln.Rank, ones)
		}
	}
	_, tl = recordTimeline(t, threadedLateSender(), 2)
	for _, ln := range tl.Lanes {
		if len(ln.Start) != 1 || len(ln.Threads) != 2 {
			t.Errorf("truncated rank %d: %d boxes, threads %v; want 1 box, threads [0 1]", ln.Rank, len(ln.Start), ln.Threads)
		}
	}
	_, tl = recordTimeline(t, tracetest.TwoMessages(), 0)
	for _, ln := range tl.Lanes {
		if ln.Threads != nil || ln.Thread != nil {
			t.Errorf("single-threaded rank %d: threads %v, thread column %v", ln.Rank, ln.Threads, ln.Thread)
		}
	}
}
