package analyzer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
	"google.golang.org/protobuf/proto"
)

// lineSymbolizer makes the line of a frame its offset less one (the
// instruction before a return address, as srcchar's) below the program's
// text at 0x400000; a frame outside every module (path "") has none, as
// frames inside MPI have none.
type lineSymbolizer struct{}

func (lineSymbolizer) Symbolize(path string, off uint64) []report.Frame {
	if path == "" {
		return nil
	}
	return []report.Frame{{Function: fmt.Sprintf("f%x", off-1), File: "/src/p.c", Line: int(off - 1 - 0x400000)}}
}

// crashRun: rank 1 (its program loaded 0x7f0000000000 higher) crashed
// with SIGSEGV (SEGV_ACCERR at 0x1000) at the instruction at program
// offset 0x401000, called from the return address at 0x402345; rank 2
// called abort() (si_code SI_TKILL) from a thread that never called MPI,
// its first frame outside every module, its second the program's return
// address 0x403000. Rank 0 ended normally.
func crashRun() *tracetest.Run {
	run := tracetest.NewRun(3)
	const bias = 0x7f0000000000
	run.Rank(1).LoadBias(bias)
	for i := 0; i < 3; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
		r.Barrier(10 * us)
	}
	run.Rank(0).Finalize(us)
	run.Rank(1).CrashedWith(&tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 2, Address: 0x1000, HasAddress: true,
		HasThread: true, Stack: []uint64{bias + 0x401000, bias + 0x402345}})
	run.Rank(2).CrashedWith(&tracepb.Crash{Signal: 6, Name: "SIGABRT (Aborted)", Code: -6, Stack: []uint64{0x10, 0x403000}})
	return run
}

// TestCrashes: each crashed rank's footer becomes a report.Crash: the
// signal, what its si_code says, the address, the thread, and the stack
// symbolized on the rank's own load addresses, its first frame the
// instruction itself (line 0x1000 here, not the instruction before), the
// others return addresses (line 0x2344, the call before 0x402345). At is
// the program's innermost frame: below a first frame in no module, the
// next. The findings open with the first crash; dtpa-mpi reports the same
// at 1 to 3 processes.
func TestCrashes(t *testing.T) {
	dir := t.TempDir()
	if _, err := crashRun().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: lineSymbolizer{}}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		if len(rep.Crashes) != 2 {
			t.Fatalf("crashes %+v, want ranks 1 and 2", rep.Crashes)
		}
		c1, c2 := rep.Crashes[0], rep.Crashes[1]
		want1 := []string{
			"rank 1 crashed: SIGSEGV (Segmentation fault), invalid permissions for the mapped address (0x1000)",
			"in f401000 at p.c:4096",
			"called from f402344 at p.c:9028",
		}
		if got := c1.Lines(); strings.Join(got, "\n") != strings.Join(want1, "\n") || c1.At != 0 || c1.Thread == nil || *c1.Thread != 0 || c1.SignalNumber != 11 {
			t.Errorf("rank 1: %q, at %d, thread %v; want %q at 0 on thread 0", got, c1.At, c1.Thread, want1)
		}
		want2 := []string{
			"rank 2 crashed: SIGABRT (Aborted), abort() called",
			"in (unknown code)+0x10",
			"called from f402fff at p.c:12287",
		}
		if got := c2.Lines(); strings.Join(got, "\n") != strings.Join(want2, "\n") || c2.At != 1 || c2.Thread != nil || c2.Address != nil {
			t.Errorf("rank 2: %q, at %d, thread %v, address %v; want %q at 1, no thread, no address", got, c2.At, c2.Thread, c2.Address, want2)
		}
		if w := c2.Where(); w != "rank 2 crashed: SIGABRT (Aborted), abort() called, called from f402fff at p.c:12287" {
			t.Errorf("rank 2's crash in one line: %q", w)
		}
		if f := report.FindingsOf(rep); f == nil || !strings.HasPrefix(f.Verdict, "Rank 1 crashed: SIGSEGV (Segmentation fault), invalid permissions for the mapped address (0x1000), in f401000 at p.c:4096 (and 1 more crashes). ") {
			t.Errorf("findings %+v: want them to open with rank 1's crash", f)
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) { check(t, analyzeDistReport(t, opts, n)) })
	}
}

// TestCrashCause: what si_code says of each signal, and nothing where it
// says nothing known.
func TestCrashCause(t *testing.T) {
	for _, c := range []struct {
		sig, code int32
		want      string
	}{
		{11, 1, "address not mapped"}, {7, 3, "object-specific hardware error (a mapped file cut short?)"},
		{8, 1, "integer divide by zero"}, {8, 7, "floating-point invalid operation"}, {4, 1, "illegal opcode"},
		{11, 0, "sent by a process (kill)"}, {6, -6, "abort() called"}, {11, -6, "sent by the process itself (raise, tgkill)"},
		{11, 99, ""}, {5, 1, ""}, {11, -60, ""},
	} {
		if got := crashCause(&tracepb.Crash{Signal: c.sig, Code: c.code}); got != c.want {
			t.Errorf("signal %d, code %d: %q, want %q", c.sig, c.code, got, c.want)
		}
	}
}

// FuzzCrash: a footer's crash of any values (a damaged or hostile footer)
// is reported without failing the analysis, in lines that say it.
func FuzzCrash(f *testing.F) {
	f.Add(int32(11), int32(1), "SIGSEGV (Segmentation fault)", uint64(0), true, uint32(0), uint64(0x401000), uint64(0x402345), 2,
		uint64(0), 0, "")
	f.Add(int32(-1), int32(-1<<31), "", uint64(1<<63), false, uint32(1<<31), uint64(0), uint64(1<<64-1), 1000, uint64(0), 0, "")
	f.Add(int32(11), int32(1), "SIGSEGV (Segmentation fault)", uint64(0), true, uint32(0), uint64(0x401000), uint64(0x402345), 2,
		uint64(0xF000000000000000+12), 3, "/src/app.py")
	f.Add(int32(0), int32(0), "ZeroDivisionError", uint64(0), false, uint32(0), uint64(0), uint64(0), 7,
		uint64(0xF000000000000000+12), 3, "division by zero")
	f.Fuzz(func(t *testing.T, sig, code int32, name string, addr uint64, hasAddr bool, thread uint32, pc0, pc1 uint64, n int,
		py0 uint64, npy int, pyFile string) {
		stack := []uint64{pc0, pc1}
		for i := 2; i < min(max(n, 0), 300); i++ {
			stack = append(stack, pc1+uint64(i))
		}
		// Python frames, the first few in a file the crash brings (a
		// module of any range and path).
		var py []uint64
		for i := 0; i < min(max(npy, 0), 300); i++ {
			py = append(py, py0+uint64(i))
		}
		var files []*tracepb.Module
		if npy%3 != 0 {
			files = append(files, &tracepb.Module{Path: traceformat.SourceModulePrefix + pyFile, Start: py0 &^ (1<<32 - 1),
				End: py0&^(1<<32-1) + uint64(npy)<<30, LoadBias: py0 &^ (1<<32 - 1)})
		}
		if npy%5 == 1 {
			files = append(files, &tracepb.Module{Path: pyFile, Start: 0, End: 1 << 63})
		}
		run := tracetest.NewRun(2)
		for i := 0; i < 2; i++ {
			run.Rank(i).Init(us).Barrier(10 * us)
		}
		run.Rank(0).Finalize(us)
		crash := &tracepb.Crash{Signal: sig, Name: name, Code: code, Address: addr, HasAddress: hasAddr,
			Thread: thread, HasThread: thread%2 == 0, Stack: stack, PythonStack: py, PythonFiles: files}
		if n%4 == 3 {
			// An uncaught Python exception, with or without a signal
			// or a C stack (neither is written by the tracer).
			crash.Exception, crash.ExceptionMessage = name, pyFile
			if n%8 == 7 {
				crash.Signal, crash.Stack = 0, nil
			}
		}
		run.Rank(1).CrashedWith(crash)
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Skip(err) // a name protobuf cannot hold
		}
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: pySymbolizer{}})
		if len(rep.Crashes) != 1 {
			t.Fatalf("crashes %+v, want rank 1's", rep.Crashes)
		}
		c := rep.Crashes[0]
		if len(c.Frames) > 2*maxCrashFrames || c.At >= len(c.Frames) || !strings.HasPrefix(c.Lines()[0], "rank 1 ") || c.Where() == "" {
			t.Errorf("crash %+v", c)
		}
		report.FindingsOf(rep)
	})
}

// TestCrashDrawn: the moment a rank crashed (Crash.local_ns, on its own
// clock: rank 1's runs 7 ms ahead and 50 ppm fast) is drawn on the
// timeline (Lane.crash, on the crashed thread, -1 for one that never
// called MPI) and exported for Perfetto as an instant on that thread's
// track (the rank's calls' track for no thread) named by the signal, whose
// args say where; dtpa-mpi's timeline and export are the same
// (exportRun).
func TestCrashDrawn(t *testing.T) {
	run, ranks := start(3)
	for _, r := range ranks {
		r.Compute(10 * ms).Barrier(1 * ms)
	}
	ranks[0].Compute(5 * ms).Finalize(1 * us)
	ranks[1].CrashedAt(ranks[1].Now()+20*ms, &tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
		Stack: []uint64{0x401000}})
	ranks[1].Skew(7*ms, 50)
	ranks[2].CrashedAt(ranks[2].Now()+30*ms, &tracepb.Crash{Signal: 6, Name: "SIGABRT (Aborted)", Code: -6, Stack: []uint64{0x402000}})
	rep, rec, _, tr, _ := exportRun(t, run, lineSymbolizer{})
	if len(rep.Crashes) != 2 {
		t.Fatalf("crashes %+v", rep.Crashes)
	}
	near2 := func(got, want int64) bool { return got-want <= 2 && want-got <= 2 } // the skewed clock's rounding
	tl := rec.Timeline()
	barrier := map[int]int64{}
	for _, ln := range tl.Lanes {
		barrier[ln.Rank] = ln.Start[0]
		c := ln.Crash
		switch ln.Rank {
		case 0:
			if c != nil {
				t.Errorf("rank 0: crash %+v", c)
			}
		case 1:
			if c == nil || !near2(c.At-ln.Start[0], 21*ms) || c.Thread != 0 {
				t.Errorf("rank 1: crash %+v, want 21 ms after the barrier's entry %d on thread 0", c, ln.Start[0])
			} else if tl.End < c.At {
				t.Errorf("the timeline ends at %d, before rank 1's crash at %d", tl.End, c.At)
			}
		case 2:
			if c == nil || c.At-ln.Start[0] != 31*ms || c.Thread != -1 {
				t.Errorf("rank 2: crash %+v, want 31 ms after the barrier's entry %d on no thread", c, ln.Start[0])
			}
		}
	}
	if len(tr.Instants) != 2 {
		t.Fatalf("instants %+v, want the two crashes", tr.Instants)
	}
	for _, in := range tr.Instants {
		r := in.Pid - 1
		want := map[int]string{1: "SIGSEGV (Segmentation fault)", 2: "SIGABRT (Aborted)"}[r]
		at := map[int]int64{1: 21 * ms, 2: 31 * ms}[r]
		lines := rep.Crashes[r-1].Lines()
		if in.Name != want || in.Cat != "crash" || !near2(in.Ts-barrier[r], at) || in.Tid != callsTid(r) ||
			in.Args["crash"] != lines[0] || in.Args["stack"] != strings.Join(lines[1:], "\n") {
			t.Errorf("rank %d's instant %+v, want %s %d ns after the barrier's entry on track %d, args %q", r, in, want, at, callsTid(r), lines)
		}
	}
}

// offsetSymbolizer knows no symbols: every frame reads module+offset, as
// srcchar's do for a module without them.
type offsetSymbolizer struct{}

func (offsetSymbolizer) Symbolize(path string, off uint64) []report.Frame {
	return []report.Frame{{Function: fmt.Sprintf("%s+%#x", filepath.Base(path), off)}}
}

// TestCrashFramesWithoutSymbols: the first frame of a module without
// symbols names the instruction's own offset, the others their return
// addresses.
func TestCrashFramesWithoutSymbols(t *testing.T) {
	mods := []*tracepb.Module{{Path: "/bin/app", Start: 0x400000, End: 0x500000}}
	fr, at := crashFrames([]siteFrame{frameOf(mods, 0x40118f), frameOf(mods, 0x401234)}, mods, "/bin/app", offsetSymbolizer{}, true)
	if len(fr) != 2 || fr[0].Function != "app+0x40118f" || fr[1].Function != "app+0x401234" || at != -1 {
		t.Errorf("frames %+v, at %d; want app+0x40118f, app+0x401234, at -1 (no file)", fr, at)
	}
}

// TestAbortWhere: a rank whose footer says it called MPI_Abort is reported
// with the call's stack (return addresses: the line is the call's, 0x4014ff
// before 0x401500), from 1 to 2 dtpa-mpi processes too; the findings open
// with it.
func TestAbortWhere(t *testing.T) {
	run, ranks := start(2)
	for _, r := range ranks {
		r.Barrier(10 * us)
	}
	ranks[0].Finalize(us)
	ranks[1].Call("MPI_Abort", us, traceformat.Event{}, tracetest.Site("abort", 0x401500, 0x402000)).StopReason(tracepb.Footer_ABORT)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: lineSymbolizer{}}
	for n := 0; n <= 2; n++ {
		rep := analyzeOpts(t, opts)
		if n > 0 {
			rep = analyzeDistReport(t, opts, n)
		}
		want := []string{"rank 1 called MPI_Abort", "in f4014ff at p.c:5375", "called from f401fff at p.c:8191"}
		if len(rep.Crashes) != 1 || !rep.Crashes[0].Abort || rep.Crashes[0].At != 0 || strings.Join(rep.Crashes[0].Lines(), "\n") != strings.Join(want, "\n") {
			t.Errorf("%d processes: crashes %+v, want %q", n, rep.Crashes, want)
		} else if f := report.FindingsOf(rep); f == nil || !strings.HasPrefix(f.Verdict, "Rank 1 called MPI_Abort, in f4014ff at p.c:5375. ") {
			t.Errorf("%d processes: findings %+v", n, f)
		}
	}
}

// TestLateCrash: a crash after MPI_Finalize, which the tracer writes
// beside the complete trace (<trace>.crash, tracepb.LateCrash), is rank
// 1's crash, after MPI_Finalize, its frames symbolized as a footer's
// crash's; dtpa-mpi reports the same at 1 and 2 processes, and dtrun's
// listing (RunTraces) names it. The file of another run (an earlier run's
// left behind) is ignored; one that cannot be read is a warning, and the
// report has no crash; one beside a trace that ended with MPI_Abort is
// ignored (the abort ended the process).
func TestLateCrash(t *testing.T) {
	dir, path, rf := finishedRun(t)
	crash := &tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
		Stack: []uint64{0x401000, 0x402345}}
	write := func(t *testing.T, runID []byte, b []byte) {
		t.Helper()
		if b == nil {
			var err error
			if b, err = proto.Marshal(&tracepb.LateCrash{RunId: runID, Crash: crash}); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(path+LateCrashSuffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: lineSymbolizer{}}

	write(t, rf.hdr.RunId, nil)
	want := []string{
		"rank 1 crashed after MPI_Finalize: SIGSEGV (Segmentation fault), address not mapped (0x0)",
		"in f401000 at p.c:4096",
		"called from f402344 at p.c:9028",
	}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		if len(rep.Crashes) != 1 || rep.Crashes[0].After != "MPI_Finalize" || strings.Join(rep.Crashes[0].Lines(), "\n") != strings.Join(want, "\n") {
			t.Fatalf("crashes %+v, want rank 1's after MPI_Finalize: %q", rep.Crashes, want)
		}
		if f := report.FindingsOf(rep); f == nil || !strings.HasPrefix(f.Verdict, "Rank 1 crashed after MPI_Finalize: SIGSEGV") {
			t.Errorf("findings %+v: want them to open with rank 1's crash", f)
		}
		if len(rep.Warnings) != 0 {
			t.Errorf("warnings %q", rep.Warnings)
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 2; n++ {
		check(t, analyzeDistReport(t, opts, n))
	}
	sets := RunTraces(dir, nil)
	if len(sets) != 1 || len(sets[0].Late) != 1 || len(sets[0].Stopped) != 0 || sets[0].Late[0].Lines()[0] != want[0] {
		t.Errorf("RunTraces: %+v, want rank 1's crash after MPI_Finalize and no rank stopped early", sets)
	}

	write(t, []byte("another run's id"), nil)
	if rep := analyzeOpts(t, opts); len(rep.Crashes) != 0 || len(rep.Warnings) != 0 {
		t.Errorf("another run's crash: crashes %+v, warnings %q; want neither", rep.Crashes, rep.Warnings)
	}
	write(t, nil, []byte{0x0a, 0xff, 0x01})
	rep := analyzeOpts(t, opts)
	if len(rep.Crashes) != 0 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "Rank 1: "+path+".crash cannot be read") {
		t.Errorf("a damaged file: crashes %+v, warnings %q; want one warning naming it", rep.Crashes, rep.Warnings)
	}

	// Beside a trace that ended with MPI_Abort: not a crash after its end.
	run := tracetest.NewRun(2)
	run.Rank(0).Init(us).Barrier(10 * us).Finalize(us)
	run.Rank(1).Init(us).Barrier(10 * us).StopReason(tracepb.Footer_ABORT)
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	var err error
	if rf, err = scan(path); err != nil {
		t.Fatal(err)
	}
	write(t, rf.hdr.RunId, nil)
	if rep := analyzeOpts(t, opts); len(rep.Crashes) != 0 {
		t.Errorf("after MPI_Abort: crashes %+v, want none", rep.Crashes)
	}
}

// TestCrashLastCall: a crash none of whose frames is the program's own
// code (an mpi4py program's in a C extension: the interpreter's frames)
// names the rank's last MPI call and its line, the nearest place in the
// program the trace knows; dtpa-mpi the same. A crash in the program's
// code does not.
func TestCrashLastCall(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(us).Barrier(10*us, tracetest.Site("bar", 0x400000+41+1))
	}
	run.Rank(0).Finalize(us)
	run.Rank(1).CrashedWith(&tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
		Stack: []uint64{0x10, 0x20}})
	run.Rank(2).CrashedWith(&tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
		Stack: []uint64{0x401000}})
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: lineSymbolizer{}}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		if len(rep.Crashes) != 2 {
			t.Fatalf("crashes %+v", rep.Crashes)
		}
		c1, c2 := rep.Crashes[0], rep.Crashes[1]
		if c1.LastCall == nil || *c1.LastCall != (report.CallPlace{Function: "MPI_Barrier", File: "/src/p.c", Line: 41}) {
			t.Errorf("rank 1's last call %+v, want MPI_Barrier at p.c:41", c1.LastCall)
		}
		if w := c1.Where(); w != "rank 1 crashed: SIGSEGV (Segmentation fault), address not mapped (0x0), in (unknown code)+0x10, after its last MPI call, MPI_Barrier at p.c:41" {
			t.Errorf("rank 1: %q", w)
		}
		if l := c1.Lines(); l[len(l)-1] != "after its last MPI call, MPI_Barrier at p.c:41" {
			t.Errorf("rank 1's lines %q", l)
		}
		if c2.LastCall != nil || c2.At != 0 {
			t.Errorf("rank 2 crashed in the program's code (at %d): last call %+v, want none", c2.At, c2.LastCall)
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 3; n++ {
		check(t, analyzeDistReport(t, opts, n))
	}
}

// pySymbolizer names a frame of a source file (a Python frame) py<line>
// at that file and line, one of another module <module>+<offset>, without
// a file (as the interpreter and libraries without debug information).
type pySymbolizer struct{}

func (pySymbolizer) Symbolize(path string, off uint64) []report.Frame {
	if file, ok := strings.CutPrefix(path, traceformat.SourceModulePrefix); ok {
		return []report.Frame{{Function: fmt.Sprintf("py%d", off), File: file, Line: int(off)}}
	}
	return []report.Frame{{Function: fmt.Sprintf("%s+%#x", filepath.Base(path), off)}}
}

// TestCrashPythonFrames: a Python program's crash (Crash.python_stack)
// reads as its C frames up to where they enter the interpreter (libpython
// here), then its Python frames; Crash.At is the first Python frame of
// the program's own code, not of Python's library or installed packages,
// else the first. Rank 0 crashed in a C extension three Python frames
// deep; rank 1 inside the interpreter itself (its first frame stays);
// rank 2 where no C frame is the interpreter's (the Python frames follow
// them all), its only Python frame in an installed package; rank 3 has
// no Python frames.
func TestCrashPythonFrames(t *testing.T) {
	const (
		libpy  = 0x7f0000000000
		libc   = 0x7f1000000000
		ctypes = 0x7f2000000000
		lib    = 0xF000000000000000 // the tracer's first source file
		app    = lib + 1<<32
		pkg    = lib + 2<<32
	)
	mods := []*tracepb.Module{
		{Path: "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", Start: libpy, End: libpy + 1<<24, LoadBias: libpy},
		{Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", Start: libc, End: libc + 1<<24, LoadBias: libc},
		{Path: "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so", Start: ctypes, End: ctypes + 1<<24, LoadBias: ctypes},
		{Path: traceformat.SourceModulePrefix + "/usr/lib/python3.11/ctypes/__init__.py", Start: lib, End: lib + 1<<32, LoadBias: lib},
		{Path: traceformat.SourceModulePrefix + "/home/u/app.py", Start: app, End: app + 1<<32, LoadBias: app},
		{Path: traceformat.SourceModulePrefix + "/home/u/venv/lib/python3.11/site-packages/np/core.py", Start: pkg, End: pkg + 1<<32, LoadBias: pkg},
	}
	segv := func(stack, py []uint64) *tracepb.Crash {
		return &tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
			Stack: stack, PythonStack: py}
	}
	run := tracetest.NewRun(4)
	for i := 0; i < 4; i++ {
		run.Rank(i).Modules(mods...).Init(us).Barrier(10 * us)
	}
	run.Rank(0).CrashedWith(segv([]uint64{libc + 0x100, ctypes + 0x200, ctypes + 0x300, libpy + 0x400, libpy + 0x500, 0x401000},
		[]uint64{lib + 519, app + 15, app + 28}))
	run.Rank(1).CrashedWith(segv([]uint64{libpy + 0x600, libpy + 0x400, 0x401000}, []uint64{app + 7}))
	run.Rank(2).CrashedWith(segv([]uint64{libc + 0x100, ctypes + 0x200}, []uint64{pkg + 99}))
	run.Rank(3).CrashedWith(segv([]uint64{libc + 0x100, libpy + 0x400}, nil))
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		frames []string
		at     int
	}{
		{[]string{"libc.so.6+0x100", "_ctypes.cpython-311-x86_64-linux-gnu.so+0x200", "_ctypes.cpython-311-x86_64-linux-gnu.so+0x300",
			"py519 __init__.py:519", "py15 app.py:15", "py28 app.py:28"}, 4},
		{[]string{"libpython3.11.so.1.0+0x600", "py7 app.py:7"}, 1},
		{[]string{"libc.so.6+0x100", "_ctypes.cpython-311-x86_64-linux-gnu.so+0x200", "py99 core.py:99"}, 2},
		{[]string{"libc.so.6+0x100", "libpython3.11.so.1.0+0x400"}, -1},
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: pySymbolizer{}}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		if len(rep.Crashes) != len(want) {
			t.Fatalf("crashes %+v", rep.Crashes)
		}
		for r, w := range want {
			c := rep.Crashes[r]
			var got []string
			for _, f := range c.Frames {
				s := f.Function
				if f.File != "" {
					s += fmt.Sprintf(" %s:%d", filepath.Base(f.File), f.Line)
				}
				got = append(got, s)
			}
			if !slices.Equal(got, w.frames) || c.At != w.at {
				t.Errorf("rank %d: frames %q at %d, want %q at %d", r, got, c.At, w.frames, w.at)
			}
			if r < 3 && c.LastCall != nil {
				t.Errorf("rank %d: last call %+v beside Python frames", r, c.LastCall)
			}
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 3; n++ {
		check(t, analyzeDistReport(t, opts, n))
	}
}

// finishedRun writes two ranks that called MPI_Finalize (with the modules
// mods after their program's) and scans rank 1's trace: the directory,
// that trace's path and its scan.
func finishedRun(t *testing.T, mods ...*tracepb.Module) (string, string, *rankFile) {
	t.Helper()
	run := tracetest.NewRun(2)
	for i := 0; i < 2; i++ {
		run.Rank(i).Modules(mods...).Init(us).Barrier(10 * us).Finalize(us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "app.1.trc")
	rf, err := scan(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path, rf
}

// TestLateCrashPythonFiles: a Python program's crash after its trace's
// end names a source file no MPI call was made from, whose module the
// trace's definitions lack: the crash brings it (Crash.python_files), and
// the frame reads its file and line, in dtpa's report, dtpa-mpi's and
// CrashOf's (the OTF2 export's).
func TestLateCrashPythonFiles(t *testing.T) {
	const (
		libpy = 0x7f0000000000
		app   = 0xF000000000000000 // named by the trace's calls
		lib   = app + 1<<32        // named first by the crash
	)
	mods := []*tracepb.Module{
		{Id: 1, Path: "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", Start: libpy, End: libpy + 1<<24, LoadBias: libpy},
		{Id: 2, Path: traceformat.SourceModulePrefix + "/home/u/app.py", Start: app, End: app + 1<<32, LoadBias: app},
	}
	dir, path, rf := finishedRun(t, mods...)
	crash := &tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
		Stack: []uint64{libpy + 0x600, libpy + 0x400}, PythonStack: []uint64{lib + 519, app + 28},
		PythonFiles: []*tracepb.Module{{Path: traceformat.SourceModulePrefix + "/usr/lib/python3.11/ctypes/__init__.py",
			Start: lib, End: lib + 1<<32, LoadBias: lib}}}
	b, err := proto.Marshal(&tracepb.LateCrash{RunId: rf.hdr.RunId, Crash: crash})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+LateCrashSuffix, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rank 1 crashed after MPI_Finalize: SIGSEGV (Segmentation fault), address not mapped (0x0)",
		"in libpython3.11.so.1.0+0x600",
		"called from py519 at __init__.py:519",
		"called from py28 at app.py:28",
	}
	check := func(t *testing.T, c *report.Crash) {
		t.Helper()
		if got := c.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") || c.At != 2 {
			t.Errorf("crash %q at %d, want %q at 2", got, c.At, want)
		}
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: pySymbolizer{}}
	reps := []*report.Report{analyzeOpts(t, opts)}
	for n := 1; n <= 2; n++ {
		reps = append(reps, analyzeDistReport(t, opts, n))
	}
	for _, rep := range reps {
		if len(rep.Crashes) != 1 {
			t.Fatalf("crashes %+v", rep.Crashes)
		}
		check(t, &rep.Crashes[0])
	}
	// The trace's modules as its definitions hold them; rf's footer was
	// read before the crash's file was written, as the export reads it.
	mods = append([]*tracepb.Module{{Path: "app", Start: 0x400000, End: 0x500000}}, mods...)
	c, _ := CrashOf(1, path, rf.hdr, rf.footer, mods[:3:3], pySymbolizer{})
	if c == nil {
		t.Fatal("CrashOf: no crash")
	}
	check(t, c)
}

// TestPythonException: an uncaught Python exception is its rank's crash
// (Crash.exception, its traceback as python_stack, no signal): named as
// Python names it, with its message, the frames its traceback's lines
// from the line that raised it (not moved to the instruction before, as
// a signal's first frame is), after MPI_Finalize (the interpreter's
// exit), MPI_Abort (`python -m mpi4py`) or in a file beside a finished
// trace; in dtpa's report, dtpa-mpi's and CrashOf's.
func TestPythonException(t *testing.T) {
	const (
		libpy = 0x7f0000000000
		app   = 0xF000000000000000
		pkg   = app + 1<<32
	)
	mods := []*tracepb.Module{
		{Path: "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", Start: libpy, End: libpy + 1<<24, LoadBias: libpy},
		{Path: traceformat.SourceModulePrefix + "/home/u/app.py", Start: app, End: app + 1<<32, LoadBias: app},
		{Path: traceformat.SourceModulePrefix + "/usr/lib/python3/dist-packages/np/core.py", Start: pkg, End: pkg + 1<<32, LoadBias: pkg},
	}
	exc := func(typ, msg string, py ...uint64) *tracepb.Crash {
		return &tracepb.Crash{Exception: typ, ExceptionMessage: msg, HasThread: true, PythonStack: py}
	}
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Modules(mods...).Init(us).Barrier(10 * us)
	}
	run.Rank(0).CrashedWith(exc("ZeroDivisionError", "division by zero", app+10, app+30)).Finalize(us).StopReason(tracepb.Footer_FINALIZE)
	run.Rank(1).CrashedWith(exc("np.core.LinAlgError", "", pkg+99, app+31)).Call("MPI_Abort", us, traceformat.Event{}).
		StopReason(tracepb.Footer_ABORT)
	run.Rank(2).Finalize(us)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"rank 0 crashed: uncaught ZeroDivisionError: division by zero", "in py10 at app.py:10", "called from py30 at app.py:30"},
		{"rank 1 crashed: uncaught np.core.LinAlgError", "in py99 at core.py:99", "called from py31 at app.py:31"},
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: pySymbolizer{}}
	check := func(t *testing.T, rep *report.Report) {
		t.Helper()
		if len(rep.Crashes) != 2 {
			t.Fatalf("crashes %+v", rep.Crashes)
		}
		for r, w := range want {
			c := rep.Crashes[r]
			if got := c.Lines(); !slices.Equal(got, w) || c.At != r || c.SignalNumber != 0 || c.Abort || c.LastCall != nil {
				t.Errorf("rank %d: %q at %d (%+v), want %q at %d", r, got, c.At, c, w, r)
			}
		}
		if c := rep.Crashes[0]; c.Exception != "ZeroDivisionError" || c.Cause != "division by zero" || c.Signal != "uncaught ZeroDivisionError" {
			t.Errorf("rank 0: %+v", c)
		}
		if v := report.FindingsOf(rep).Verdict; !strings.HasPrefix(v, "Rank 0 crashed: uncaught ZeroDivisionError: division by zero, in py10 at app.py:10 (and 1 more crashes).") {
			t.Errorf("verdict %q", v)
		}
	}
	check(t, analyzeOpts(t, opts))
	for n := 1; n <= 3; n++ {
		check(t, analyzeDistReport(t, opts, n))
	}

	// Raised after MPI.Finalize(): the file beside the finished trace.
	dir, path, rf := finishedRun(t, mods...)
	b, err := proto.Marshal(&tracepb.LateCrash{RunId: rf.hdr.RunId, Crash: exc("ValueError", "bad", app+12)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+LateCrashSuffix, b, 0o644); err != nil {
		t.Fatal(err)
	}
	late := []string{"rank 1 crashed after MPI_Finalize: uncaught ValueError: bad", "in py12 at app.py:12"}
	rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: pySymbolizer{}})
	if len(rep.Crashes) != 1 || !slices.Equal(rep.Crashes[0].Lines(), late) {
		t.Errorf("crashes %+v, want %q", rep.Crashes, late)
	}
	c, _ := CrashOf(1, path, rf.hdr, rf.footer, append([]*tracepb.Module{{Path: "app", Start: 0x400000, End: 0x500000}}, mods...), pySymbolizer{})
	if c == nil || !slices.Equal(c.Lines(), late) || c.At != 0 {
		t.Errorf("CrashOf: %+v, want %q", c, late)
	}
}

// TestCxxException: SIGABRT from std::terminate for a C++ exception no
// handler caught (Crash.cxx_exception, the mangled type_info name) reads
// the type as the program spells it after the signal and its cause; a
// name that does not demangle is kept as it is; a Python exception's
// fields are not taken for it.
func TestCxxException(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(us).Barrier(10 * us)
	}
	abrt := func(typ string) *tracepb.Crash {
		return &tracepb.Crash{Signal: 6, Name: "SIGABRT (Aborted)", Code: -6, HasThread: true, Stack: []uint64{0x401000, 0x402345},
			CxxException: typ}
	}
	run.Rank(0).CrashedWith(abrt("St12out_of_range"))
	run.Rank(1).CrashedWith(abrt("N3app8BadInputE"))
	run.Rank(2).CrashedWith(abrt("?not mangled"))
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rank 0 crashed: SIGABRT (Aborted), abort() called: uncaught std::out_of_range",
		"rank 1 crashed: SIGABRT (Aborted), abort() called: uncaught app::BadInput",
		"rank 2 crashed: SIGABRT (Aborted), abort() called: uncaught ?not mangled",
	}
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: lineSymbolizer{}}
	for n := 0; n <= 2; n++ {
		rep := analyzeOpts(t, opts)
		if n > 0 {
			rep = analyzeDistReport(t, opts, n)
		}
		var got []string
		for _, c := range rep.Crashes {
			got = append(got, c.Lines()[0])
		}
		if !slices.Equal(got, want) || rep.Crashes[0].Exception != "std::out_of_range" || rep.Crashes[0].SignalNumber != 6 {
			t.Errorf("%d processes: crashes %q (%+v), want %q", n, got, rep.Crashes, want)
		}
		if errs := report.Check(rep); len(errs) > 0 {
			t.Errorf("invariants: %v", errs)
		}
	}
}

// TestEndDrawn: the moment a rank that neither crashed nor finalized
// ended is drawn on the timeline (Lane.end) and exported for Perfetto as
// an instant of category "end" on its thread's track, whose args say how
// (Report.Elsewhere's line): rank 1 (its clock 7 ms ahead and 50 ppm
// fast) exited 20 ms after the barrier returned, called from the
// program's line; rank 2's signal found a thread not named (-1: the
// rank's calls' track) in no MPI call 25 ms after it, at a line of the
// program; rank 3's, 15 ms after it, on thread 0 at no place of the
// program. Rank 0 finalized: nothing. With no call in progress the
// report lists no other ranks; rank 1's exit is a warning that says how.
// dtpa-mpi's timeline and export are the same (exportRun).
func TestEndDrawn(t *testing.T) {
	run, ranks := start(4)
	for _, r := range ranks {
		r.Compute(10 * ms).Barrier(1 * ms)
	}
	ranks[0].Compute(5 * ms).Finalize(1 * us)
	ranks[1].Compute(20 * ms).Exited(&tracepb.ExitCall{Status: 3, HasStatus: true, HasThread: true, Stack: []uint64{0x401000 + 13}})
	ranks[1].Skew(7*ms, 50)
	ranks[2].SignalledAt(ranks[2].Now()+25*ms, &tracepb.Crash{Signal: 15, Name: "SIGTERM (Terminated)", Stack: []uint64{0x401000 + 50 - 1}})
	ranks[3].SignalledAt(ranks[3].Now()+15*ms, &tracepb.Crash{Signal: 15, Name: "SIGTERM (Terminated)", HasThread: true})
	rep, rec, _, tr, _ := exportRun(t, run, lineSymbolizer{})
	near2 := func(got, want int64) bool { return got-want <= 2 && want-got <= 2 } // the skewed clock's rounding
	want := map[int]struct {
		at     int64
		thread int
		exited bool
		line   string
	}{
		1: {21 * ms, 0, true, "rank 1: had exited without MPI_Finalize (exit(3) from f40100c at p.c:4108)"},
		2: {26 * ms, -1, false, "rank 2: in no MPI call (in f401031 at p.c:4145)"},
		3: {16 * ms, 0, false, "rank 3: in no MPI call"},
	}
	tl := rec.Timeline()
	barrier := map[int]int64{}
	for _, ln := range tl.Lanes {
		barrier[ln.Rank] = ln.Start[0]
		e, w := ln.End, want[ln.Rank]
		if ln.Rank == 0 {
			if e != nil {
				t.Errorf("rank 0: end %+v", e)
			}
			continue
		}
		if e == nil || !near2(e.At-ln.Start[0], w.at) || e.Thread != w.thread || e.Exited != w.exited || e.How != w.line {
			t.Errorf("rank %d: end %+v, want %d ns after the barrier's entry %d on thread %d, exited %v, %q", ln.Rank, e, w.at, ln.Start[0], w.thread, w.exited, w.line)
		} else if tl.End < e.At {
			t.Errorf("the timeline ends at %d, before rank %d's end at %d", tl.End, ln.Rank, e.At)
		}
		if ln.Crash != nil {
			t.Errorf("rank %d: crash %+v", ln.Rank, ln.Crash)
		}
	}
	if len(tr.Instants) != 3 {
		t.Fatalf("instants %+v, want the three ends", tr.Instants)
	}
	for _, in := range tr.Instants {
		r := in.Pid - 1
		w := want[r]
		name := map[bool]string{true: "exit", false: "end"}[w.exited]
		tid := callsTid(r) // thread 0's track, and the track of no thread
		if in.Name != name || in.Cat != "end" || !near2(in.Ts-barrier[r], w.at) || in.Tid != tid || in.Args["end"] != w.line {
			t.Errorf("rank %d's instant %+v, want %s %d ns after the barrier's entry on track %d, args %q", r, in, name, w.at, tid, w.line)
		}
	}
	// No call was in progress: the report's other ranks are not listed,
	// and the warning says how rank 1 exited.
	if rep.Elsewhere != nil {
		t.Errorf("elsewhere %+v, want none", rep.Elsewhere)
	}
	const exit = "Rank 1: the process exited without MPI_Finalize (exit(3) from f40100c at p.c:4108); its figures end at its last MPI call."
	if !slices.Contains(rep.Warnings, exit) {
		t.Errorf("warnings %q, want %q", rep.Warnings, exit)
	}
}
