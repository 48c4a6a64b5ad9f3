package analyzer

import (
	"context"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

type fakeSymbolizer struct{}

func (fakeSymbolizer) Symbolize(module string, off uint64) []report.Frame {
	return []report.Frame{{Function: "f", File: module, Line: int(off & 0xffff)}}
}

// The same call site on ranks loaded at different addresses is one SRC
// point; different sites of the same function are different points.
func TestSRCMergesAcrossRanks(t *testing.T) {
	run := tracetest.NewRun(2)
	run.Rank(1).LoadBias(0x7f0000000000)
	for i := 0; i < 2; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
		r.Compute(int64(i+1) * 10 * ms)
		r.Barrier(30*ms-r.Now(), tracetest.Site("loop", 0x401234, 0x405678)) // leave at 30 ms
		r.Barrier(10*us, tracetest.Site("end", 0x401300))
		r.Pcontrol(100, 1, tracetest.Site("pc", 0x402222))
		r.Barrier(10*us, tracetest.Site("end", 0x401300))
		r.Pcontrol(101, 1)
		r.Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: fakeSymbolizer{}})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, rep)
	iv := find(t, rep)
	if len(iv.SRC) != 2 {
		t.Fatalf("%d SRC points, want 2: %+v", len(iv.SRC), iv.SRC)
	}
	var loop, end *report.SRC
	for i := range iv.SRC {
		p := &iv.SRC[i]
		if len(p.Stack) == 2 {
			loop = p
		} else {
			end = p
		}
	}
	if loop == nil || end == nil || loop.Function != "MPI_Barrier" || len(loop.Ranks) != 2 {
		t.Fatalf("points %+v", iv.SRC)
	}
	if loop.Stack[0].Line != 0x1234 || loop.Stack[1].Line != 0x5678 || loop.Stack[0].File != "/tmp/app" {
		t.Errorf("stack %+v: offsets should be module-relative", loop.Stack)
	}
	// Barrier entries 10.001 and 20.001 ms: Potential Sync 10 ms on rank 0.
	expect(t, "point Potential Sync", loop.PotentialSync, 0.010)
	expect(t, "point Comm", loop.Comm, (0.030-0.010001)+(0.030-0.020001))
	if end.Ranks[0].ExeCount != 2 || end.Ranks[1].ExeCount != 2 {
		t.Errorf("end point ranks %+v", end.Ranks)
	}
	// Interval 1 has only the second "end" barrier, same point number.
	in1 := find(t, rep, 1)
	if len(in1.SRC) != 1 || in1.SRC[0].ID != end.ID || in1.SRC[0].Ranks[0].ExeCount != 1 {
		t.Errorf("interval 1 points %+v", in1.SRC)
	}
	// Its source position comes from the entering MPI_Pcontrol's site.
	if in1.SourceFile != "/tmp/app" || in1.Line != 0x2222 {
		t.Errorf("interval 1 at %s:%d", in1.SourceFile, in1.Line)
	}
}

type notingSymbolizer struct {
	fakeSymbolizer
	mods []Module
}

func (n *notingSymbolizer) NoteModules(mods []Module) { n.mods = append(n.mods, mods...) }

// A ModuleNoter hears of each recorded module once, the program marked as
// the executable, before symbolizing.
func TestSymbolizerNotedModules(t *testing.T) {
	run, ranks := start(2)
	for _, r := range ranks {
		r.Barrier(10*us, tracetest.Site("b", 0x401234))
		r.Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	sym := &notingSymbolizer{}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: sym})
	if err != nil {
		t.Fatal(err)
	}
	if len(sym.mods) != 1 || sym.mods[0].Path != "/tmp/app" || !sym.mods[0].Executable {
		t.Errorf("noted %+v, want the program once, as the executable", sym.mods)
	}
	if iv := find(t, rep); len(iv.SRC) != 1 || len(iv.SRC[0].Stack) != 1 || iv.SRC[0].Stack[0].Line != 0x1234 {
		t.Errorf("points %+v", iv.SRC)
	}
}

// One call site (return addresses) reached with several MPI functions — a
// call through a function pointer, or every call made through Python's
// ctypes — is one SRC point per function: each function's figures stay
// its own, and a wait names the point of the function that waited or was
// late. Rank 0 sends at site "fp" 1 ms late (from a second thread when
// threaded), then calls MPI_Barrier there; rank 1 receives and calls
// MPI_Barrier at its own "fp".
func TestSRCSiteWithSeveralFunctions(t *testing.T) {
	for _, threaded := range []bool{false, true} {
		t.Run(map[bool]string{false: "one thread", true: "threads"}[threaded], func(t *testing.T) {
			run, ranks := start(2)
			fp := tracetest.Site("fp", 0x401234)
			if threaded {
				run.ThreadLevel = threadMultiple
				ranks[0].Thread(1).At(2*ms+1*us).Send(1, 7, 8, 5*us, fp).Thread(0)
			} else {
				ranks[0].Compute(2*ms).Send(1, 7, 8, 5*us, fp)
			}
			ranks[1].Compute(1*ms).Recv(0, 7, 8, 1*ms+10*us, fp)
			for _, r := range ranks {
				r.At(3 * ms)
				r.Barrier(20*us, fp)
				r.Finalize(1 * us)
			}
			checkSiteWithSeveralFunctions(t, run)
		})
	}
}

func checkSiteWithSeveralFunctions(t *testing.T, run *tracetest.Run) {
	// The timeline and the Chrome export name each call's own point.
	rep, rec, _, tr, _ := exportRun(t, run, fakeSymbolizer{})
	fnOf := map[int]string{}
	for _, p := range find(t, rep).SRC {
		fnOf[p.ID] = p.Function
	}
	tl := rec.Timeline()
	for _, ln := range tl.Lanes {
		for i := range ln.Site {
			if name := tl.Funcs[ln.Func[i]].Name; fnOf[ln.Site[i]] != name {
				t.Errorf("timeline: rank %d's %s at SRC %d (%s)", ln.Rank, name, ln.Site[i], fnOf[ln.Site[i]])
			}
		}
	}
	for _, sl := range tr.Slices {
		if id, ok := sl.Args["src"].(float64); ok && fnOf[int(id)] != sl.Name {
			t.Errorf("Chrome export: %s at SRC %v (%s)", sl.Name, id, fnOf[int(id)])
		}
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: fakeSymbolizer{}, Workers: workers})
		iv := find(t, rep)
		ids := map[string]int{}
		for _, p := range iv.SRC {
			n := int64(0)
			for _, r := range p.Ranks {
				n += r.ExeCount
			}
			ids[p.Function] = p.ID
			switch p.Function {
			case "MPI_Barrier":
				if n != 2 || len(p.Ranks) != 2 {
					t.Errorf("MPI_Barrier at fp: %d calls on %d ranks, want 2 on 2", n, len(p.Ranks))
				}
				expect(t, "MPI_Barrier time", p.Comm, 40e-6)
			case "MPI_Send":
				if n != 1 || len(p.Ranks) != 1 {
					t.Errorf("MPI_Send at fp: %d calls on %d ranks, want 1 on 1", n, len(p.Ranks))
				}
				expect(t, "MPI_Send time", p.Comm, 5e-6)
			case "MPI_Recv":
				if n != 1 || len(p.Ranks) != 1 {
					t.Errorf("MPI_Recv at fp: %d calls on %d ranks, want 1 on 1", n, len(p.Ranks))
				}
				expect(t, "MPI_Recv Real Sync", p.RealSync, 0.001)
			}
		}
		if len(iv.SRC) != 3 || ids["MPI_Send"] == 0 || ids["MPI_Recv"] == 0 || ids["MPI_Barrier"] == 0 {
			t.Fatalf("%d SRC points %v, want MPI_Send, MPI_Recv and MPI_Barrier at fp", len(iv.SRC), ids)
		}
		if len(iv.Waits) != 1 || iv.Waits[0].WaitingSRC != ids["MPI_Recv"] || iv.Waits[0].LateSRC != ids["MPI_Send"] {
			t.Errorf("waits %+v, want rank 1's MPI_Recv (%d) waiting for rank 0's MPI_Send (%d)", iv.Waits, ids["MPI_Recv"], ids["MPI_Send"])
		}
	}
}

// An interval entered from several places is placed at the first entry of
// the lowest-numbered processor that executed it (characteristics.md §2):
// rank 1 enters interval 1 first, elsewhere; rank 0 then enters it at
// "pcA" and again at "pcB".
func TestIntervalLineSeveralEntries(t *testing.T) {
	run, ranks := start(2)
	pcA, pcB := tracetest.Site("pcA", 0x402222), tracetest.Site("pcB", 0x403333)
	ranks[1].Compute(1*ms).Pcontrol(100, 1, pcB).Compute(1*ms).Pcontrol(101, 1)
	ranks[0].Compute(2*ms).Pcontrol(100, 1, pcA).Compute(1*ms).Pcontrol(101, 1)
	ranks[0].Compute(1*ms).Pcontrol(100, 1, pcB).Compute(1*ms).Pcontrol(101, 1)
	for _, r := range ranks {
		r.At(10 * ms).Barrier(10 * us)
		r.Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: fakeSymbolizer{}})
	if in1 := find(t, rep, 1); in1.Line != 0x2222 {
		t.Errorf("interval 1 at %s:%#x, want rank 0's first entry (line 0x2222)", in1.SourceFile, in1.Line)
	}
}
