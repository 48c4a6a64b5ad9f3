package analyzer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// exportRun analyses run with a Chrome export (and a timeline recorder),
// checks the spool is gone and decodes the JSON.
func exportRun(t *testing.T, run *tracetest.Run, sym Symbolizer) (*report.Report, *TimelineRecorder, *ChromeExport, *chrometest.Trace, []byte) {
	t.Helper()
	dir, spool := t.TempDir(), t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	x := &ChromeExport{W: &out, TempDir: spool}
	rec := &TimelineRecorder{}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true, Symbolizer: sym, Timeline: rec, Chrome: x})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Errorf("spool left behind: %v", left)
	}
	tr, err := chrometest.Read(out.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Bytes())
	}
	// The same outputs from a distributed analysis.
	checkDistOutputs(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: sym, Timeline: &TimelineRecorder{}},
		rep, rec.Timeline(), out.Bytes())
	return rep, rec, x, tr, out.Bytes()
}

// TestChromeExport: the calls of timelineRun (see there) as slices, with
// exactly their times relative to the earliest entry (rank 1's Recv at
// 0.001 ms), and its two messages as flows from the sending call to the
// receiving one.
func TestChromeExport(t *testing.T) {
	rep, _, x, tr, _ := exportRun(t, tracetest.TwoMessages(), fakeSymbolizer{})
	type slice struct {
		name      string
		ts, dur   int64
		bytes     float64
		peer      float64 // -1: none
		lost      string  // µs as written, "" none
		kind      string
		hasSource bool
	}
	want := [][]slice{
		{{"MPI_Send", 100 * ms, 10 * us, 8, 1, "", "p2p", true},
			{"MPI_Barrier", 100*ms + 10*us, 50*ms - 1*us, 0, -1, "49989.000", "coll", true}},
		{{"MPI_Recv", 0, 100*ms + 20*us, 8, 0, "100000.000", "p2p", true},
			{"MPI_Irecv", 100*ms + 20*us, 1 * us, 16, -1, "", "p2p", true},
			{"MPI_Wait", 100*ms + 21*us, 8 * us, 0, 2, "", "wait", true},
			{"MPI_Barrier", 100*ms + 29*us, 50*ms - 20*us, 0, -1, "49970.000", "coll", true}},
		{{"MPI_Send", 50 * ms, 5 * us, 16, 1, "", "p2p", true},
			{"MPI_Barrier", 150*ms - 1*us, 10 * us, 0, -1, "", "coll", true}},
	}
	srcs := map[int]report.SRC{}
	for _, s := range rep.Intervals[0].SRC {
		srcs[s.ID] = s
	}
	got := map[int][]chrometest.Slice{}
	for _, s := range tr.Slices {
		got[s.Pid] = append(got[s.Pid], s)
	}
	for r, ws := range want {
		pid := r + 1
		if name := tr.Processes[pid]; name != "rank "+string(rune('0'+r))+" (testhost)" {
			t.Errorf("process %d named %q", pid, name)
		}
		if tr.Threads[[2]int{pid, pid}] != "MPI calls" {
			t.Errorf("thread %d/%d named %q", pid, pid, tr.Threads[[2]int{pid, pid}])
		}
		gs := got[pid]
		if len(gs) != len(ws) {
			t.Errorf("rank %d: %d slices, want %d: %+v", r, len(gs), len(ws), gs)
			continue
		}
		for i, w := range ws {
			g := gs[i]
			bytesArg, _ := g.Args["bytes"].(float64)
			peer, ok := g.Args["peer"].(float64)
			if !ok {
				peer = -1
			}
			if g.Tid != pid || g.Cat != "mpi" || g.Name != w.name || g.Ts != w.ts || g.Dur != w.dur || bytesArg != w.bytes || peer != w.peer || g.Args["kind"] != w.kind {
				t.Errorf("rank %d slice %d: %+v, want %+v", r, i, g, w)
			}
			if (w.lost == "") != (g.Args["lost_us"] == nil) {
				t.Errorf("rank %d slice %d (%s): lost_us %v, want %q", r, i, w.name, g.Args["lost_us"], w.lost)
			}
			// The call site is the report's SRC point of that function,
			// with its innermost frame's file and line.
			id, _ := g.Args["src"].(float64)
			p, ok := srcs[int(id)]
			if !ok || p.Function != w.name || len(p.Stack) == 0 || g.Args["file"] != p.Stack[0].File || g.Args["line"] != float64(p.Stack[0].Line) {
				t.Errorf("rank %d slice %d (%s): site args %v, SRC %+v", r, i, w.name, g.Args, p)
			}
		}
	}
	// The lost time is written exactly, in µs.
	if _, _, _, _, raw := exportRun(t, tracetest.TwoMessages(), nil); !bytes.Contains(raw, []byte(`"lost_us":100000.000`)) || !bytes.Contains(raw, []byte(`"lost_us":49989.000`)) {
		t.Errorf("lost times not written as µs with three decimals")
	}
	if len(tr.Flows) != 2 || x.Messages != 2 || x.Calls != 8 {
		t.Fatalf("%d flows, %d messages, %d calls written; want 2, 2, 8", len(tr.Flows), x.Messages, x.Calls)
	}
	type flow struct {
		from, to         int // pid
		fromName, toName string
	}
	var flows []flow
	for _, f := range tr.Flows {
		a, b := tr.Slices[f.From], tr.Slices[f.To]
		flows = append(flows, flow{a.Pid, b.Pid, a.Name, b.Name})
	}
	// In the receiver's order: rank 0's Send into rank 1's Recv, rank 2's
	// Send into the Wait that completed rank 1's Irecv.
	if flows[0] != (flow{1, 2, "MPI_Send", "MPI_Recv"}) || flows[1] != (flow{3, 2, "MPI_Send", "MPI_Wait"}) {
		t.Errorf("flows %+v", flows)
	}
	if tr.OtherData["application"] != "app" || tr.OtherData["origin_ns"] == "" {
		t.Errorf("otherData %v", tr.OtherData)
	}
}

// evilSymbolizer names every file like an HTML injection.
type evilSymbolizer struct{}

const evilFile = `<img src=x onerror=alert(1)>".c`

func (evilSymbolizer) Symbolize(module string, off uint64) []report.Frame {
	return []report.Frame{{Function: "main", File: evilFile, Line: 7}}
}

// intervalRun: two ranks alike, each
//
//	MPI_Init [0, 1 µs]; Pcontrol(100, 1) at 1 µs; compute 10 µs;
//	Pcontrol(100, 2) at 11 µs; Barrier [11, 16 µs]; Pcontrol(101, 2) at
//	16 µs; compute 4 µs; Pcontrol(101, 1) at 20 µs; MPI_Finalize.
//
// Time 0 is interval 1's entry at 1 µs.
func intervalRun() *tracetest.Run {
	run := tracetest.NewRun(2)
	for i := 0; i < 2; i++ {
		r := run.Rank(i)
		r.Init(1*us).Pcontrol(100, 1).Compute(10*us).Pcontrol(100, 2).Barrier(5*us).Pcontrol(101, 2)
		r.Compute(4*us).Pcontrol(101, 1).Finalize(1 * us)
	}
	return run
}

// TestChromeExportIntervals: intervals are slices on their own thread,
// and strings from traces (a file name full of markup) stay strings.
func TestChromeExportIntervals(t *testing.T) {
	_, rec, x, tr, raw := exportRun(t, intervalRun(), evilSymbolizer{})
	if x.Spans != 4 || x.Calls != 2 || x.Messages != 0 {
		t.Errorf("spans %d calls %d messages %d; want 4 2 0", x.Spans, x.Calls, x.Messages)
	}
	for r := 0; r < 2; r++ {
		pid, tid := r+1, 2+r+1
		if tr.Threads[[2]int{pid, tid}] != "intervals" {
			t.Errorf("rank %d: thread %d named %q", r, tid, tr.Threads[[2]int{pid, tid}])
		}
		var spans, calls []chrometest.Slice
		for _, s := range tr.Slices {
			switch {
			case s.Pid == pid && s.Tid == tid:
				spans = append(spans, s)
			case s.Pid == pid:
				calls = append(calls, s)
			}
		}
		if len(spans) != 2 || spans[0].Name != "interval 1/2" || spans[0].Ts != 10*us || spans[0].Dur != 5*us ||
			spans[1].Name != "interval 1" || spans[1].Ts != 0 || spans[1].Dur != 19*us || spans[1].Cat != "interval" {
			t.Errorf("rank %d spans %+v", r, spans)
		}
		if len(spans) == 2 && (spans[1].Args["interval"] != "1" || spans[1].Args["file"] != evilFile || spans[1].Args["line"] != 7.0) {
			t.Errorf("rank %d interval 1 args %v", r, spans[1].Args)
		}
		if len(calls) != 1 || calls[0].Name != "MPI_Barrier" || calls[0].Ts != 10*us || calls[0].Dur != 5*us || calls[0].Args["file"] != evilFile {
			t.Errorf("rank %d calls %+v", r, calls)
		}
	}
	if bytes.Contains(raw, []byte("<img")) {
		t.Error("markup written unescaped")
	}

	// The timeline has the same spans and the hosts.
	tl := rec.Timeline()
	if len(tl.Lanes) != 2 || tl.Origin != 1*us {
		t.Fatalf("%d lanes, origin %d", len(tl.Lanes), tl.Origin)
	}
	for _, ln := range tl.Lanes {
		sp := ln.Spans
		if ln.Host != "testhost" || len(sp.Start) != 2 || sp.Start[0] != 10*us || sp.Dur[0] != 5*us || sp.Level[0] != 2 ||
			tl.Intervals[sp.Interval[0]] != "1/2" || sp.Start[1] != 0 || sp.Dur[1] != 19*us || sp.Level[1] != 1 || tl.Intervals[sp.Interval[1]] != "1" {
			t.Errorf("lane %d: host %q spans %+v (intervals %v)", ln.Rank, ln.Host, sp, tl.Intervals)
		}
	}
}

// TestChromeExportOff: without an export nothing is set up.
func TestChromeExportOff(t *testing.T) {
	var x *ChromeExport
	if err := x.start(4); err != nil || x.rank(&replayer{}) != nil {
		t.Error("a nil export did something")
	}
	if newRankObs(&replayer{}, nil, nil) != nil {
		t.Error("an observer without observers")
	}
}

// TestChromeExportThreads: each thread of a multi-threaded rank has its
// own track of calls, and a message's flow runs between the sending and
// the receiving thread's tracks (threadedLateSender: ranks 0 and 1 with
// threads 0 and 1 each; thread 1's tracks are 5 (rank 0) and 6 (rank 1),
// after the 2 main-thread and 2 interval tracks).
func TestChromeExportThreads(t *testing.T) {
	_, _, x, tr, _ := exportRun(t, threadedLateSender(), nil)
	names := map[[2]int]string{{1, 1}: "MPI calls", {1, 5}: "MPI calls, thread 1", {1, 3}: "intervals",
		{2, 2}: "MPI calls", {2, 6}: "MPI calls, thread 1", {2, 4}: "intervals"}
	for k, want := range names {
		if got := tr.Threads[k]; got != want {
			t.Errorf("process %d thread %d named %q, want %q", k[0], k[1], got, want)
		}
	}
	type call struct {
		pid, tid int
		name     string
	}
	var calls []call
	for _, s := range tr.Slices {
		calls = append(calls, call{s.Pid, s.Tid, s.Name})
	}
	want := []call{{1, 1, "MPI_Send"}, {1, 5, "MPI_Recv"}, {2, 2, "MPI_Recv"}, {2, 6, "MPI_Send"}}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if len(tr.Flows) != 2 || x.Messages != 2 {
		t.Fatalf("%d flows, %d messages; want 2", len(tr.Flows), x.Messages)
	}
	var flows [][2]call
	for _, f := range tr.Flows {
		a, b := tr.Slices[f.From], tr.Slices[f.To]
		flows = append(flows, [2]call{{a.Pid, a.Tid, a.Name}, {b.Pid, b.Tid, b.Name}})
	}
	// In the receivers' order: rank 1's thread 1 into rank 0's thread 1,
	// rank 0's thread 0 into rank 1's thread 0.
	wantFlows := [][2]call{{{2, 6, "MPI_Send"}, {1, 5, "MPI_Recv"}}, {{1, 1, "MPI_Send"}, {2, 2, "MPI_Recv"}}}
	if !slices.Equal(flows, wantFlows) {
		t.Errorf("flows %v, want %v", flows, wantFlows)
	}
}

// TestChromeExportMissingRank: a rank whose trace is missing has no
// tracks, and the others' export is written, by dtpa and by a
// distributed analysis alike.
func TestChromeExportMissingRank(t *testing.T) {
	dir, spool := t.TempDir(), t.TempDir()
	if _, err := tracetest.TwoMessages().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "app.1.trc")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rec := &TimelineRecorder{}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: rec, Chrome: &ChromeExport{W: &out, TempDir: spool}}
	rep, err := Analyze(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := chrometest.Read(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for k := range tr.Threads {
		if k[0] == 2 {
			t.Errorf("the missing rank 1 has a track: %v", k)
		}
	}
	if len(tr.Slices) == 0 {
		t.Error("no calls exported")
	}
	checkDistOutputs(t, Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: &TimelineRecorder{}}, rep, rec.Timeline(), out.Bytes())
}

// TestChromeExportFoldedRun: a folded run of unsuccessful polls is one
// slice of the run's time inside MPI ending at its last call's exit, with
// its number of calls and, when the trace gives its inner gaps, the time
// from its first call's entry to that exit (run_us).
func TestChromeExportFoldedRun(t *testing.T) {
	run := tracetest.NewRun(2)
	run.Rank(0).Init(1*us).Compute(20*us).Send(1, 0, 8, 1*us).Finalize(1 * us)
	r := run.Rank(1).Init(1 * us)
	q := r.Irecv(0, 0, 8, 1*us)
	// Four MPI_Test calls, 3 µs inside MPI and 8 µs between them in all:
	// the first entered at 4 µs, the last left at 15 µs.
	r.Compute(10*us).Test(q, false, 3*us, tracetest.FoldedGaps(4, 8*us))
	// And two without their inner gaps (a trace before format 2.1).
	r.Compute(1*us).Test(q, false, 2*us, tracetest.Folded(2)).Wait(q, 4*us).Finalize(1 * us)
	_, _, _, tr, _ := exportRun(t, run, nil)
	var tests []chrometest.Slice
	for _, s := range tr.Slices {
		if s.Name == "MPI_Test" {
			tests = append(tests, s)
		}
	}
	if len(tests) != 2 {
		t.Fatalf("MPI_Test slices %+v, want 2", tests)
	}
	if a := tests[0]; a.Dur != 3*us || a.Args["calls"] != 4.0 || a.Args["run_us"] != 11.0 {
		t.Errorf("run with inner gaps: %+v", a)
	}
	if a := tests[1]; a.Dur != 2*us || a.Args["calls"] != 2.0 || a.Args["run_us"] != nil {
		t.Errorf("run without inner gaps: %+v", a)
	}
	if tests[1].Ts-tests[0].Ts != 4*us {
		t.Errorf("runs %d ns apart, want 4 µs", tests[1].Ts-tests[0].Ts)
	}
}
