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
