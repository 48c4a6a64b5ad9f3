package analyzer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// A rank whose tracing stopped early (SIZE_LIMIT) inside interval 1:
// interval 3, which every rank left before, is complete; interval 1 and
// the whole program are incomplete with rank 2 marked; interval 2, which
// ran on ranks 0 and 1 after rank 2's trace ended, is incomplete without
// any rank marked (rank 2 may have executed it unseen).
func TestIncompleteTrace(t *testing.T) {
	run, ranks := start(3)
	for i, r := range ranks {
		r.Pcontrol(100, 3).Compute(10*ms).Barrier(1*ms).Pcontrol(101, 3)
		r.Pcontrol(100, 1).Compute(50 * ms)
		if i == 2 {
			r.StopReason(tracepb.Footer_SIZE_LIMIT) // nothing after this
			continue
		}
		r.Compute(50*ms).Pcontrol(101, 1)
		r.Pcontrol(100, 2).Compute(20*ms).Pcontrol(101, 2)
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	if iv := find(t, rep, 3); iv.Incomplete || rank(t, iv, 2).Incomplete {
		t.Errorf("interval 3 marked incomplete: %q", iv.IncompleteReason)
	}
	for _, path := range [][]int{{}, {1}} {
		iv := find(t, rep, path...)
		r2 := rank(t, iv, 2)
		if !iv.Incomplete || !strings.Contains(iv.IncompleteReason, "rank(s) 2: its trace ends inside this interval (SIZE_LIMIT") ||
			!r2.Incomplete || !strings.Contains(r2.IncompleteReason, "SIZE_LIMIT: tracing stopped at MaxTraceSize") ||
			rank(t, iv, 0).Incomplete || rank(t, iv, 1).Incomplete {
			t.Errorf("interval %v: incomplete %v %q; rank 2 %v %q", path, iv.Incomplete, iv.IncompleteReason, r2.Incomplete, r2.IncompleteReason)
		}
	}
	iv := find(t, rep, 2)
	if len(iv.Ranks) != 2 || !iv.Incomplete || !strings.Contains(iv.IncompleteReason, "rank(s) 2: its trace ends before this interval ended on the others") ||
		rank(t, iv, 0).Incomplete || rank(t, iv, 1).Incomplete {
		t.Errorf("interval 2: incomplete %v %q", iv.Incomplete, iv.IncompleteReason)
	}
	// Rank 2's execution of interval 1 ends at its last event, the
	// entering MPI_Pcontrol: the 50 ms computed after it are unseen.
	expect(t, "interval 1 rank 2 Execution", rank(t, find(t, rep, 1), 2).ExecutionTime, 0)
}

// Calls in progress that a footer lists (a job killed while it hung) are
// listed with how long they had run when the rank's tracing ended, the
// footer's end minus their entry on the rank's own clock (skewed here);
// a footer whose times are damaged gives no duration; no figure changes.
func TestUnfinishedCalls(t *testing.T) {
	run, ranks := start(3)
	for _, r := range ranks {
		r.Compute(10 * ms).Barrier(1 * ms)
	}
	ranks[0].Compute(5 * ms).Finalize(1 * us)
	ranks[1].Compute(2*ms).Unfinished(0, "MPI_Recv", ranks[1].Now(), 0).Compute(300 * ms).StopReason(tracepb.Footer_SIGNAL)
	ranks[1].Skew(7*ms, 50)
	ranks[2].Compute(1 * ms).StopReason(tracepb.Footer_SIGNAL).
		UnfinishedRaw(&tracepb.UnfinishedCall{Thread: 1, Name: "MPI_Wait", EntryLocalNs: -1 << 62}).
		UnfinishedRaw(&tracepb.UnfinishedCall{Thread: 2, Name: "MPI_Probe", EntryLocalNs: 1 << 62})
	rep := analyzeRun(t, run)
	u := rep.Unfinished
	if len(u) != 3 || u[0].Rank != 1 || u[0].Function != "MPI_Recv" || u[0].Seconds == nil ||
		u[1].Rank != 2 || u[1].Thread != 1 || u[1].Seconds != nil || u[2].Thread != 2 || u[2].Seconds != nil {
		t.Fatalf("unfinished %+v", u)
	}
	// 300 ms of true time on a clock that runs 50 ppm fast.
	expect(t, "rank 1's MPI_Recv", *u[0].Seconds, 0.300*(1+50e-6))
	// The call's time is in no figure: rank 1's Execution Time ends at its
	// barrier, 11 ms in.
	expect(t, "rank 1 Execution", rank(t, find(t, rep), 1).ExecutionTime, 0.011)
}

// TestElsewhere: beside ranks whose processes ended inside MPI calls
// (rank 0, in MPI_Barrier), the report says where the others were, as
// their footers say: rank 1's trace ended with MPI_Finalize (at its line),
// ranks 2 and 6 were in no MPI call when a signal ended them, rank 3
// exited without MPI_Finalize, each after its last call, MPI_Comm_rank
// at p.c:40. Rank 4 crashed (Crashes says where) and rank 5's trace has
// no end: neither is listed. The findings name them after the calls in
// progress; dtpa-mpi says the same.
func TestElsewhere(t *testing.T) {
	run, ranks := start(7)
	for _, r := range ranks {
		r.Barrier(10 * us)
	}
	last := tracetest.Site("rank", 0x400000+40+1)
	ranks[0].Compute(ms).Unfinished(0, "MPI_Barrier", ranks[0].Now(), 0).Compute(100 * ms).StopReason(tracepb.Footer_SIGNAL)
	ranks[1].Compute(ms).Finalize(us, tracetest.Site("fin", 0x400000+30+1))
	for _, r := range []int{2, 3, 6} {
		ranks[r].Compute(ms).Call("MPI_Comm_rank", us, traceformat.Event{}, last).Compute(ms).StopReason(tracepb.Footer_SIGNAL)
	}
	ranks[3].StopReason(tracepb.Footer_EXIT)
	ranks[4].Compute(ms).CrashedWith(&tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, Stack: []uint64{0x401000}})
	ranks[5].Compute(ms).Crash()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rank 1: had called MPI_Finalize at p.c:30",
		"ranks 2, 6: in no MPI call, after MPI_Comm_rank at p.c:40",
		"rank 3: had exited without MPI_Finalize, after MPI_Comm_rank at p.c:40",
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: lineSymbolizer{}}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		var got []string
		for _, e := range rep.Elsewhere {
			got = append(got, fmt.Sprintf("%d %s %v", e.Rank, e.State, e.LastCall))
		}
		if w := []string{"1 finalized MPI_Finalize at p.c:30", "2 outside MPI_Comm_rank at p.c:40", "3 exited MPI_Comm_rank at p.c:40",
			"6 outside MPI_Comm_rank at p.c:40"}; !slices.Equal(got, w) {
			t.Errorf("elsewhere %q, want %q", got, w)
		}
		if l := report.ElsewhereLines(rep.Elsewhere); !slices.Equal(l, want) {
			t.Errorf("lines %q, want %q", l, want)
		}
		if f := report.FindingsOf(rep); f == nil || !strings.Contains(f.Verdict, "). In none then: "+strings.Join(want, "; ")+". ") {
			t.Errorf("findings %+v: want the other ranks after the calls in progress", f)
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 3; n++ {
		check(t, analyzeDistReport(t, opts, n))
	}
	// Without calls in progress, nobody is elsewhere.
	run2, ranks2 := start(2)
	for _, r := range ranks2 {
		r.Barrier(10 * us).Finalize(us)
	}
	if rep := analyzeRun(t, run2); rep.Elsewhere != nil {
		t.Errorf("elsewhere %+v without calls in progress", rep.Elsewhere)
	}
}

// The calls in progress when the processes ended are drawn where they
// ran, on the global clock, in the timeline and the Chrome export (and by
// a distributed analysis alike, exportRun): rank 1's MPI_Recv, entered 3
// ms after the barrier's entry on a clock 7 ms off and 50 ppm fast, ran
// 300 ms until its process ended; rank 2's thread 1 entered MPI_Wait 2 ms
// after the barrier, and nothing says when its process ended, so the call
// is open (a slice that never ends); rank 2's second call, entered
// centuries after its tracing started, is damage and not drawn; rank 3's
// MPI_Send, entered 4 ms after the barrier, was still in progress when
// the job was interrupted 100 ms later, and its process ended after that:
// it ran at least 100 ms, and is open past them. The times come from the
// calls' entries alone, not from the figures.
func TestUnfinishedDrawn(t *testing.T) {
	run, ranks := start(4)
	for _, r := range ranks {
		r.Compute(10 * ms).Barrier(1 * ms)
	}
	ranks[0].Compute(5 * ms).Finalize(1 * us)
	ranks[1].Compute(2*ms).Unfinished(0, "MPI_Recv", ranks[1].Now(), 0x401234).Compute(300 * ms).StopReason(tracepb.Footer_SIGNAL)
	ranks[1].Skew(7*ms, 50)
	ranks[2].Compute(1*ms).Unfinished(1, "MPI_Wait", ranks[2].Now(), 0).NoEndTime().StopReason(tracepb.Footer_SIGNAL).
		UnfinishedRaw(&tracepb.UnfinishedCall{Thread: 2, Name: "MPI_Probe", EntryLocalNs: 1 << 62})
	ranks[3].Compute(3*ms).Unfinished(0, "MPI_Send", ranks[3].Now(), 0).InterruptedAt(ranks[3].Now() + 100*ms).StopReason(tracepb.Footer_SIGNAL)
	ranks[3].Skew(-3*ms, -20)
	rep, rec, x, tr, _ := exportRun(t, run, fakeSymbolizer{})
	if len(rep.Unfinished) != 4 || rep.Unfinished[0].File == "" {
		t.Fatalf("unfinished %+v", rep.Unfinished)
	}
	if u := rep.Unfinished[3]; u.Rank != 3 || u.Seconds == nil || !u.AtLeast || rep.Unfinished[0].AtLeast {
		t.Errorf("rank 3's MPI_Send %+v, want at least 100 ms; rank 1's %+v", u, rep.Unfinished[0])
	} else {
		// 100 ms of true time on a clock 20 ppm slow.
		expect(t, "rank 3's MPI_Send", *u.Seconds, 0.100*(1-20e-6))
	}
	tl := rec.Timeline()
	near2 := func(got, want int64) bool { return got-want <= 2 && want-got <= 2 } // the skewed clock's rounding
	barrier := map[int]int64{}
	for _, ln := range tl.Lanes {
		barrier[ln.Rank] = ln.Start[0]
		u := ln.Unfinished
		switch ln.Rank {
		case 0:
			if u != nil {
				t.Errorf("rank 0: unfinished %+v", u)
			}
		case 1:
			if u == nil || len(u.Start) != 1 || !near2(u.Start[0]-ln.Start[0], 3*ms) || !near2(u.Dur[0], 300*ms) ||
				tl.Funcs[u.Func[0]].Name != "MPI_Recv" || tl.Funcs[u.Func[0]].Kind != "p2p" || u.Thread[0] != 0 {
				t.Errorf("rank 1: unfinished %+v (barrier at %d)", u, ln.Start[0])
			}
			if !near2(tl.End, u.Start[0]+u.Dur[0]) {
				t.Errorf("the timeline ends at %d, not at rank 1's end %d", tl.End, u.Start[0]+u.Dur[0])
			}
		case 2:
			if u == nil || len(u.Start) != 1 || u.Start[0]-ln.Start[0] != 2*ms || u.Dur[0] != -1 ||
				tl.Funcs[u.Func[0]].Name != "MPI_Wait" || tl.Funcs[u.Func[0]].Kind != "wait" || u.Thread[0] != 1 {
				t.Errorf("rank 2: unfinished %+v (barrier at %d)", u, ln.Start[0])
			}
			if len(ln.Threads) != 2 || ln.Threads[1] != 1 {
				t.Errorf("rank 2: threads %v, want a row for thread 1", ln.Threads)
			}
		case 3:
			if u == nil || len(u.Start) != 1 || !near2(u.Start[0]-ln.Start[0], 4*ms) || !near2(u.Dur[0], 100*ms) ||
				tl.Funcs[u.Func[0]].Name != "MPI_Send" || len(u.AtLeast) != 1 || !u.AtLeast[0] {
				t.Errorf("rank 3: unfinished %+v (barrier at %d)", u, ln.Start[0])
			}
		}
	}
	if x.Unfinished != 3 {
		t.Errorf("%d unfinished calls exported, want 3", x.Unfinished)
	}
	n := 0
	for _, s := range tr.Slices {
		if s.Args["unfinished"] == nil {
			continue
		}
		n++
		switch s.Pid - 1 {
		case 3:
			if s.Name != "MPI_Send" || !s.Open || !near2(s.Ts, barrier[3]+4*ms) || !nearUs(s.Args["ran_at_least_us"], 100000) {
				t.Errorf("rank 3's slice %+v", s)
			}
		case 1:
			if s.Name != "MPI_Recv" || s.Open || !near2(s.Ts, barrier[1]+3*ms) || !near2(s.Dur, 300*ms) ||
				s.Args["file"] != rep.Unfinished[0].File || s.Args["line"] != float64(rep.Unfinished[0].Line) || s.Args["kind"] != "p2p" {
				t.Errorf("rank 1's slice %+v", s)
			}
		case 2:
			if s.Name != "MPI_Wait" || !s.Open || s.Ts != barrier[2]+2*ms || tr.Threads[[2]int{s.Pid, s.Tid}] != "MPI calls, thread 1" {
				t.Errorf("rank 2's slice %+v on %q", s, tr.Threads[[2]int{s.Pid, s.Tid}])
			}
		default:
			t.Errorf("unexpected unfinished slice %+v", s)
		}
	}
	if n != 3 {
		t.Errorf("%d unfinished slices, want 3", n)
	}
}

// nearUs tells whether v, a JSON number of µs, is within 2 ns of want.
func nearUs(v any, want float64) bool {
	f, ok := v.(float64)
	return ok && f-want <= 0.002 && want-f <= 0.002
}

// FuzzUnfinished gives a rank's footer calls in progress and end times of
// any value (a damaged or hostile footer; the frame's checksum holds):
// the analysis, its timeline and its Chrome export must neither fail nor
// panic, and every duration given must be a time of the run.
// TestUnfinishedPython: a call in progress from C code below Python whose
// return address has no line (libffi) is placed at the first of its
// Python frames that is the program's own (not Python's library), else
// at the first; one whose return address has a line keeps it.
func TestUnfinishedPython(t *testing.T) {
	const py, lib = 0xF000000000000000, 0x7f0000000000
	for _, c := range []struct {
		ra    uint64
		stack []uint64
		want  string
	}{
		{lib + 0x10, []uint64{py + 525, py + 1<<32 + 12}, "/home/u/app.py:12"},
		{lib + 0x10, []uint64{py + 525}, "/usr/lib/python3.11/ctypes/__init__.py:525"},
		{lib + 0x10, nil, ":0"},
		{0x400000 + 0x20, []uint64{py + 1<<32 + 12}, "/src/app.c:32"},
	} {
		run, ranks := start(2)
		for _, r := range ranks {
			r.Modules(&tracepb.Module{Path: "/usr/lib/x86_64-linux-gnu/libffi.so.8", Start: lib, End: lib + 1<<24, LoadBias: lib},
				&tracepb.Module{Path: "/bin/app", Start: 0x400000, End: 0x500000},
				&tracepb.Module{Path: traceformat.SourceModulePrefix + "/usr/lib/python3.11/ctypes/__init__.py", Start: py, End: py + 1<<32, LoadBias: py},
				&tracepb.Module{Path: traceformat.SourceModulePrefix + "/home/u/app.py", Start: py + 1<<32, End: py + 2<<32, LoadBias: py + 1<<32})
			r.Compute(10 * ms).Barrier(1 * ms)
		}
		ranks[0].Finalize(1 * us)
		ranks[1].Compute(1 * ms).StopReason(tracepb.Footer_SIGNAL).
			UnfinishedRaw(&tracepb.UnfinishedCall{Function: 1, Name: "MPI_Barrier", ReturnAddress: c.ra, PythonStack: c.stack})
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: unfSymbolizer{}})
		if len(rep.Unfinished) != 1 || fmt.Sprintf("%s:%d", rep.Unfinished[0].File, rep.Unfinished[0].Line) != c.want {
			t.Errorf("return address %#x, Python frames %#x: calls in progress %+v, want one at %s", c.ra, c.stack, rep.Unfinished, c.want)
		}
	}
}

// unfSymbolizer is pySymbolizer (crash_test.go), and the program's frames
// read /src/app.c at their offset less 0x400000.
type unfSymbolizer struct{ pySymbolizer }

func (s unfSymbolizer) Symbolize(path string, off uint64) []report.Frame {
	if filepath.Base(path) == "app" { // the program (tracetest's, or the one given)
		return []report.Frame{{Function: "g", File: "/src/app.c", Line: int(off - 0x400000)}}
	}
	return s.pySymbolizer.Symbolize(path, off)
}

func FuzzUnfinished(f *testing.F) {
	const py = 0xF000000000000000 // a source-file module's start (the tracer's Python frames)
	f.Add(uint32(0), uint32(3), int64(11*ms), int64(300*ms), int64(0), "MPI_Recv", uint64(0x7f0000000010), uint64(py+12), uint64(py+1<<32+7))
	f.Add(uint32(1), uint32(1<<20), int64(-1), int64(0), int64(1<<62), "", uint64(0), uint64(0), uint64(1<<64-1))
	f.Add(uint32(7), uint32(0), int64(1<<62), int64(1<<62+5), int64(-1<<63), "MPI_Wait", uint64(1), uint64(py-1), uint64(py))
	f.Fuzz(func(t *testing.T, thread, fn uint32, entry, end, interrupted int64, name string, ra, py0, py1 uint64) {
		run, ranks := start(2)
		for _, r := range ranks {
			r.Compute(10 * ms).Barrier(1 * ms)
		}
		ranks[0].Finalize(1 * us)
		ranks[1].Modules(&tracepb.Module{Path: "/usr/lib/x86_64-linux-gnu/libffi.so.8", Start: 0x7f0000000000, End: 0x7f0001000000, LoadBias: 0x7f0000000000},
			&tracepb.Module{Path: traceformat.SourceModulePrefix + "/usr/lib/python3.11/ctypes/__init__.py", Start: py, End: py + 1<<32, LoadBias: py},
			&tracepb.Module{Path: traceformat.SourceModulePrefix + "/home/u/app.py", Start: py + 1<<32, End: py + 2<<32, LoadBias: py + 1<<32})
		ranks[1].Compute(1*ms).StopReason(tracepb.Footer_SIGNAL).FooterTimes(end, interrupted).
			UnfinishedRaw(&tracepb.UnfinishedCall{Thread: thread, Function: fn, Name: name, EntryLocalNs: entry, ReturnAddress: ra, PythonStack: []uint64{py0, py1}})
		dir, spool := t.TempDir(), t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Skip(err) // a name protobuf cannot hold
		}
		var out bytes.Buffer
		rec := &TimelineRecorder{}
		rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: rec, Chrome: &ChromeExport{W: &out, TempDir: spool},
			Symbolizer: pySymbolizer{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chrometest.Read(out.Bytes()); err != nil {
			t.Fatalf("chrome export: %v", err)
		}
		var js bytes.Buffer
		if err := rec.WriteJSON(&js); err != nil || !json.Valid(js.Bytes()) {
			t.Fatalf("timeline JSON: %v", err)
		}
		for _, u := range rep.Unfinished {
			if u.Seconds != nil && (*u.Seconds < 0 || math.IsNaN(*u.Seconds) || math.IsInf(*u.Seconds, 0)) {
				t.Errorf("duration %v", *u.Seconds)
			}
		}
		if tl := rec.Timeline(); tl != nil && tl.End > int64(1)<<53 {
			t.Errorf("the timeline runs %d ns", tl.End)
		}
	})
}

// exitSymbolizer reads the C library's frames as exit's, program offsets
// from 0x900 on as the C start-up code's (no frame, as srcchar drops
// them), and other program offsets as lineSymbolizer does.
type exitSymbolizer struct{}

func (exitSymbolizer) Symbolize(path string, off uint64) []report.Frame {
	switch {
	case strings.Contains(path, "libc.so"):
		return []report.Frame{{Function: "exit", File: "exit.c", Line: 7}}
	case off >= 0x400000+0x900:
		return nil
	}
	return lineSymbolizer{}.Symbolize(path, off)
}

// TestElsewhereHow: how the ranks that exited without MPI_Finalize did
// (Footer.exit): rank 1 called exit(3) in the program (past the C
// library's frames, at the program's innermost frame, a library's
// below it), rank 2's main returned 1 (nothing left past the C library's
// frames and the start-up code's), rank 3's exit call is unknown but for
// its status, rank 4's is not known at all (a footer without it); and
// where the signal that ended them found the ranks in no MPI call
// (Footer.interrupted): rank 5 computing in the program (its first frame
// the interrupted instruction, not a return address), rank 6 in a
// library called from the program, rank 7 in a thread with no frame of
// the program's (left unsaid); the lines, the findings and dtpa-mpi's
// report say so.
func TestElsewhereHow(t *testing.T) {
	const libc, rt = 0x7f0000000000, 0x7f1000000000
	mods := []*tracepb.Module{
		{Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", Start: libc, End: libc + 1<<24, LoadBias: libc},
		{Path: "/usr/lib/x86_64-linux-gnu/libgfortran.so.5", Start: rt, End: rt + 1<<24, LoadBias: rt},
	}
	run, ranks := start(8)
	for _, r := range ranks {
		r.Modules(mods...).Barrier(10 * us)
	}
	last := tracetest.Site("rank", 0x400000+40+1)
	ranks[0].Compute(ms).Unfinished(0, "MPI_Recv", ranks[0].Now(), 0).Compute(100 * ms).StopReason(tracepb.Footer_SIGNAL)
	for _, r := range ranks[1:] {
		r.Compute(ms).Call("MPI_Comm_rank", us, traceformat.Event{}, last).Compute(ms)
	}
	ranks[1].Exited(&tracepb.ExitCall{Status: 3, HasStatus: true, HasThread: true,
		Stack: []uint64{libc + 0x10, libc + 0x20, rt + 0x30, 0x400000 + 12 + 1, 0x400000 + 50 + 1, 0x400000 + 0x900 + 1}})
	ranks[2].Exited(&tracepb.ExitCall{Status: 1, HasStatus: true, Stack: []uint64{libc + 0x10, libc + 0x20, libc + 0x40, 0x400000 + 0x900 + 1}})
	ranks[3].Exited(&tracepb.ExitCall{Status: 0, HasStatus: true})
	ranks[4].StopReason(tracepb.Footer_EXIT)
	sigterm := func(st ...uint64) *tracepb.Crash {
		return &tracepb.Crash{Signal: 15, Name: "SIGTERM (Terminated)", HasThread: true, Stack: st}
	}
	ranks[5].Signalled(sigterm(0x400000+60, 0x400000+70+1, 0x400000+0x900+1))
	ranks[6].Signalled(sigterm(libc+0x50, rt+0x60, 0x400000+80+1))
	ranks[7].Signalled(sigterm(libc+0x50, rt+0x60))
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rank 1: had exited without MPI_Finalize (exit(3) from f40000c at p.c:12), after MPI_Comm_rank at p.c:40",
		"rank 2: had exited without MPI_Finalize (main returned 1), after MPI_Comm_rank at p.c:40",
		"rank 3: had exited without MPI_Finalize (status 0), after MPI_Comm_rank at p.c:40",
		"rank 4: had exited without MPI_Finalize, after MPI_Comm_rank at p.c:40",
		"rank 5: in no MPI call (in f40003c at p.c:60), after MPI_Comm_rank at p.c:40",
		"rank 6: in no MPI call (in f400050 at p.c:80), after MPI_Comm_rank at p.c:40",
		"rank 7: in no MPI call, after MPI_Comm_rank at p.c:40",
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: exitSymbolizer{}}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		if l := report.ElsewhereLines(rep.Elsewhere); !slices.Equal(l, want) {
			t.Errorf("lines %q, want %q", l, want)
		}
		if f := report.FindingsOf(rep); f == nil || !strings.Contains(f.Verdict, "In none then: "+strings.Join(want[:3], "; ")+"; and 4 more. ") {
			t.Errorf("findings %+v: want the other ranks after the calls in progress", f)
		}
		if errs := report.Check(rep); len(errs) > 0 {
			t.Errorf("invariants: %v", errs)
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 3; n++ {
		check(t, analyzeDistReport(t, opts, n))
	}
}

// FuzzElsewhereExit: any exit call in a footer (its stack's addresses in
// the C library, the program, the start-up code or nowhere) reads as a
// line of the other ranks' whereabouts, a warning and a mark on the
// timeline in the same words, and the report keeps its invariants.
func FuzzElsewhereExit(f *testing.F) {
	f.Add(int32(3), true, uint64(0x7f0000000010), uint64(0x400000+12+1), uint64(0x400000+0x900+1), 3)
	f.Add(int32(-1), false, uint64(0), uint64(1<<64-1), uint64(0x7f0000000010), 300)
	f.Fuzz(func(t *testing.T, status int32, has bool, pc0, pc1, pc2 uint64, n int) {
		var st []uint64
		for i := 0; i < min(max(n, 0), 100); i++ {
			st = append(st, []uint64{pc0, pc1, pc2}[i%3]+uint64(i/3))
		}
		mods := []*tracepb.Module{{Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", Start: 0x7f0000000000, End: 0x7f0001000000, LoadBias: 0x7f0000000000}}
		run, ranks := start(2)
		for _, r := range ranks {
			r.Modules(mods...).Barrier(10 * us)
		}
		ranks[0].Compute(ms).Unfinished(0, "MPI_Recv", ranks[0].Now(), 0).StopReason(tracepb.Footer_SIGNAL)
		ranks[1].Compute(ms).Exited(&tracepb.ExitCall{Status: status, HasStatus: has, Stack: st})
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		rec := &TimelineRecorder{}
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: exitSymbolizer{}, Timeline: rec})
		l := report.ElsewhereLines(rep.Elsewhere)
		if len(l) != 1 || !strings.HasPrefix(l[0], "rank 1: had exited without MPI_Finalize") {
			t.Errorf("lines %q", l)
		}
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, "Rank 1: the process exited without MPI_Finalize") }) {
			t.Errorf("warnings %q: none says how rank 1 exited", rep.Warnings)
		}
		// The timeline's mark says it in the same words, without the last call.
		for _, ln := range rec.Timeline().Lanes {
			if e := ln.End; (ln.Rank == 1) != (e != nil) || (e != nil && (!e.Exited || !strings.HasPrefix(l[0], e.How+", after "))) {
				t.Errorf("rank %d: end %+v, elsewhere %q", ln.Rank, e, l)
			}
		}
		if errs := report.Check(rep); len(errs) > 0 {
			t.Errorf("invariants: %v", errs)
		}
	})
}
