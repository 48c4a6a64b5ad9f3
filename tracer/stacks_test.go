package tracer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Call stacks of optimised code (README "Call sites"): programs built
// without frame pointers are unwound from their unwind tables, frame by
// frame, under both MPIs.

// stackMPIs are the MPIs the stack tests run under: C compiler, Fortran
// compiler, launcher arguments for 4 ranks.
var stackMPIs = []struct {
	name, cc, fc string
	launch       []string
}{
	{"OpenMPI", ompi, "mpif90.openmpi", oversub},
	{"MPICH", "mpicc.mpich", "mpif90.mpich", []string{"-n", "4"}},
}

// buildOptimised compiles tracer/testdata/c/deepstack.c (cc) or
// tracer/testdata/fortran/deepstack.f90 (an MPI Fortran compiler) as
// production builds are: -O2 without frame pointers. The C program links
// libnounw.so, built without unwind tables.
func buildOptimised(t *testing.T, compiler string, fortran bool) string {
	t.Helper()
	needMPI(t, compiler)
	build(t, "pingpong", ompi) // creates buildDir
	buildMu.Lock()
	defer buildMu.Unlock()
	key := "deepstack-O2@" + compiler
	if p, ok := built[key]; ok {
		return p
	}
	dir := filepath.Join(buildDir, compiler, "O2")
	os.MkdirAll(dir, 0o755)
	out := filepath.Join(dir, "deepstack")
	var cmds [][]string
	if fortran {
		cmds = [][]string{{compiler, "-g", "-O2", "-fno-inline", "-o", out, filepath.Join(root, "tracer", "testdata", "fortran", "deepstack.f90")}}
	} else {
		src := filepath.Join(root, "tracer", "testdata", "c")
		cmds = [][]string{
			{compiler, "-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
				"-shared", "-fPIC", "-o", filepath.Join(dir, "libnounw.so"), filepath.Join(src, "nounw.c")},
			{compiler, "-g", "-O2", "-fomit-frame-pointer", "-pthread", "-o", out, filepath.Join(src, "deepstack.c"),
				"-L" + dir, "-lnounw", "-Wl,-rpath," + dir},
		}
	}
	for _, c := range cmds {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, b)
		}
	}
	built[key] = out
	return out
}

// sourceMarkers maps each "@name" marker after comment (// or !) of a test
// source to its line.
func sourceMarkers(t *testing.T, path, comment string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		if _, tag, ok := strings.Cut(sc.Text(), comment+" @"); ok {
			m[strings.TrimSpace(tag)] = n
		}
	}
	return m
}

// reportSRC runs dtpa --json on the traces of app in dir.
func reportSRC(t *testing.T, dir, app string) []report.SRC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--json", "--dir", dir, app)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dtpa --json: %v\n%s", err, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decoding the JSON report: %v", err)
	}
	if len(rep.Intervals) == 0 {
		t.Fatal("report without intervals")
	}
	return rep.Intervals[0].SRC
}

// checkDeepSRC checks that dtpa's SRC holds the 16 stacks of MPI_Sendrecv
// in deepstack (exch > mid1 > mid2 > top > main, each helper called from
// two lines), each frame at its own file:line.
func checkDeepSRC(t *testing.T, src []report.SRC, file string, lines map[string]int) {
	t.Helper()
	want := map[string]bool{}
	for _, a := range []string{"mid1a", "mid1b"} {
		for _, b := range []string{"mid2a", "mid2b"} {
			for _, c := range []string{"topa", "topb"} {
				for _, d := range []string{"maina", "mainb"} {
					want[fmt.Sprintf("%s:%d %s:%d %s:%d %s:%d %s:%d", file, lines["exch"], file, lines[a], file, lines[b], file, lines[c], file, lines[d])] = true
				}
			}
		}
	}
	got := map[string]bool{}
	var all []string
	for _, s := range src {
		if !strings.EqualFold(s.Function, "MPI_Sendrecv") {
			continue
		}
		var fr []string
		for _, f := range s.Stack {
			fr = append(fr, fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line))
		}
		all = append(all, strings.Join(fr, " "))
		if len(fr) >= 5 {
			got[strings.Join(fr[:5], " ")] = true
		}
	}
	for w := range want {
		if !got[w] {
			t.Errorf("no SRC point with the stack %s; MPI_Sendrecv's:\n%s", w, strings.Join(all, "\n"))
			return
		}
	}
	if len(all) != 16 {
		t.Errorf("%d SRC points of MPI_Sendrecv, want 16:\n%s", len(all), strings.Join(all, "\n"))
	}
}

func TestDeepStacksOptimised(t *testing.T) {
	for _, m := range stackMPIs {
		t.Run(m.name+"/C", func(t *testing.T) {
			prog := buildOptimised(t, m.cc, false)
			dir := t.TempDir()
			dtrunOK(t, dir, []string{"UserStackSize=6"}, append(append(m.launch[:len(m.launch):len(m.launch)], prog), "deep")...)
			trs := readTraces(t, dir, "deepstack", 4)
			checkComplete(t, trs)
			checkDeepSRC(t, reportSRC(t, dir, "deepstack"), "deepstack.c", sourceMarkers(t, filepath.Join(root, "tracer", "testdata", "c", "deepstack.c"), "//"))
		})
		t.Run(m.name+"/Fortran", func(t *testing.T) {
			prog := buildOptimised(t, m.fc, true)
			dir := t.TempDir()
			dtrunOK(t, dir, []string{"UserStackSize=6"}, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
			trs := readTraces(t, dir, "deepstack", 4)
			checkComplete(t, trs)
			checkDeepSRC(t, reportSRC(t, dir, "deepstack"), "deepstack.f90", sourceMarkers(t, filepath.Join(root, "tracer", "testdata", "fortran", "deepstack.f90"), "!"))
		})
	}
}

// A frame without unwind tables (libnounw.so) ends the stack: the frames up
// to it are recorded, nothing beyond, and the program runs as untraced.
func TestStackThroughLibraryWithoutUnwindTables(t *testing.T) {
	for _, m := range stackMPIs {
		t.Run(m.name, func(t *testing.T) {
			prog := buildOptimised(t, m.cc, false)
			dir := t.TempDir()
			dtrunOK(t, dir, []string{"UserStackSize=6"}, append(append(m.launch[:len(m.launch):len(m.launch)], prog), "nounw")...)
			trs := readTraces(t, dir, "deepstack", 4)
			checkComplete(t, trs)
			for r, tr := range trs {
				ev := tr.calls("MPI_Sendrecv")
				if len(ev) != 1 {
					t.Fatalf("rank %d: %d MPI_Sendrecv, want 1", r, len(ev))
				}
				pcs := tr.defs.CallSites[ev[0].Site]
				if len(pcs) != 3 || !tr.inExecutable(pcs[0]) || !tr.inExecutable(pcs[1]) || !strings.HasSuffix(tr.modulePath(pcs[2]), "/libnounw.so") {
					t.Errorf("rank %d: stack %x (modules %q), want exch and viacb in the program, then nounw_call in libnounw.so, and no more",
						r, pcs, []string{tr.modulePath(pcs[0]), tr.modulePath(pcs[len(pcs)-1])})
				}
			}
			lines := sourceMarkers(t, filepath.Join(root, "tracer", "testdata", "c", "deepstack.c"), "//")
			for _, s := range reportSRC(t, dir, "deepstack") {
				if s.Function == "MPI_Sendrecv" {
					if len(s.Stack) < 2 || s.Stack[0].Line != lines["exch"] || s.Stack[1].Line != lines["cb"] {
						t.Errorf("SRC stack %+v, want deepstack.c:%d, deepstack.c:%d, ...", s.Stack, lines["exch"], lines["cb"])
					}
				}
			}
		})
	}
}

// Calls whose wrapper frame is at one address, with one return address,
// but other callers above (deepstack's "alias": outer1, outer2 and outer3
// call shim, which calls exch) have their own stacks: the memo of a walk
// (dt_memo) must not answer for another. Through outer2, shim's frame (an
// RBP-based one) is higher than through outer1, and the words read through
// outer1 lie untouched in its alloca: only the saved RBP tells the walks
// apart. Through outer3 only shim's return address differs from outer1's.
// Three frames are kept, so that a walk ends in those words.
func TestStacksSameFrameOtherCallers(t *testing.T) {
	for _, m := range stackMPIs {
		t.Run(m.name, func(t *testing.T) {
			prog := buildOptimised(t, m.cc, false)
			dir := t.TempDir()
			res := dtrunOK(t, dir, []string{"UserStackSize=3"}, append(append(m.launch[:len(m.launch):len(m.launch)], prog), "alias")...)
			if n := strings.Count(res.out, "exch frame fixed\n"); n != 4 {
				t.Fatalf("%d ranks had exch's frame at one address, want 4 (the test needs it):\n%s", n, res.out)
			}
			trs := readTraces(t, dir, "deepstack", 4)
			checkComplete(t, trs)
			lines := sourceMarkers(t, filepath.Join(root, "tracer", "testdata", "c", "deepstack.c"), "//")
			got := map[string][]int64{}
			for _, s := range reportSRC(t, dir, "deepstack") {
				if !strings.EqualFold(s.Function, "MPI_Sendrecv") {
					continue
				}
				var fr []string
				for _, f := range s.Stack {
					fr = append(fr, fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line))
				}
				counts := make([]int64, 4)
				for _, r := range s.Ranks {
					if r.Rank >= 0 && r.Rank < 4 {
						counts[r.Rank] = r.ExeCount
					}
				}
				got[strings.Join(fr, " ")] = counts
			}
			for _, o := range []string{"outer1", "outer2", "outer3"} {
				w := fmt.Sprintf("deepstack.c:%d deepstack.c:%d deepstack.c:%d", lines["exch"], lines["shim"], lines[o])
				if c, ok := got[w]; !ok || c[0] != 3 || c[1] != 3 || c[2] != 3 || c[3] != 3 {
					t.Errorf("stack %s: calls per rank %v, want 3 on each; MPI_Sendrecv's stacks: %v", w, c, got)
				}
			}
			if len(got) != 3 {
				t.Errorf("%d stacks of MPI_Sendrecv, want 3: %v", len(got), got)
			}
		})
	}
}

// Timer signals arriving while call stacks are unwound (SIGPROF every 20 µs
// of CPU time, SIGALRM every 50 µs) change neither the program's results nor
// the stacks.
func TestStacksUnderSignalStorm(t *testing.T) {
	for _, m := range stackMPIs {
		t.Run(m.name, func(t *testing.T) {
			prog := buildOptimised(t, m.cc, false)
			dir := t.TempDir()
			res := dtrunOK(t, dir, []string{"UserStackSize=6"}, append(append(m.launch[:len(m.launch):len(m.launch)], prog), "storm")...)
			// 250 × (top(0) + top(8)): the exchanged values sum to 250 × 120.
			if n := strings.Count(res.out, "sum=30000\n"); n != 4 {
				t.Errorf("%d ranks printed sum=30000, want 4:\n%s", n, res.out)
			}
			if strings.Contains(res.out, "signals=0 ") {
				t.Errorf("a rank caught no signal:\n%s", res.out)
			}
			trs := readTraces(t, dir, "deepstack", 4)
			checkComplete(t, trs)
			for r, tr := range trs {
				sites := map[uint32]bool{}
				ev := tr.calls("MPI_Sendrecv")
				for _, e := range ev {
					sites[e.Site] = true
					if n := len(tr.defs.CallSites[e.Site]); n < 5 {
						t.Errorf("rank %d: a stack of %d frames, want ≥ 5", r, n)
						break
					}
				}
				if len(ev) != 4000 || len(sites) != 16 {
					t.Errorf("rank %d: %d MPI_Sendrecv at %d call sites, want 4000 at 16", r, len(ev), len(sites))
				}
			}
		})
	}
}

// A rank SIGKILLed while it makes deep calls: dtrun recovers its trace from
// the shared-memory buffers, stacks included.
func TestStacksKilledMidRun(t *testing.T) {
	for _, m := range stackMPIs {
		t.Run(m.name, func(t *testing.T) {
			prog := buildOptimised(t, m.cc, false)
			dir := t.TempDir()
			res := dtrun(t, dir, []string{"UserStackSize=6"}, append(append(m.launch[:len(m.launch):len(m.launch)], prog), "kill")...)
			if res.code == 0 {
				t.Fatalf("dtrun: exit 0, want the killed rank's failure\n%s", res.out)
			}
			trs := readTraces(t, dir, "deepstack", 4)
			tr := trs[1]
			var ce *traceformat.CorruptError
			if tr.err != nil && !errors.As(tr.err, &ce) || tr.footer.GetStopReason() != tracepb.Footer_SIGNAL || !strings.Contains(tr.footer.Message, "recovered") {
				t.Errorf("rank 1: footer %v err %v, want one written by dtrun", tr.footer, tr.err)
			}
			stacks := map[[4]uint64]bool{}
			ev := tr.calls("MPI_Sendrecv")
			for _, e := range ev {
				pcs := tr.defs.CallSites[e.Site]
				if len(pcs) < 5 {
					t.Errorf("rank 1: a stack of %d frames, want ≥ 5", len(pcs))
					break
				}
				stacks[[4]uint64(pcs[:4])] = true
			}
			// top(0) alone: 8 stacks exch > mid1 > mid2 > top (main may
			// call top from more than one place: GCC peels the loop).
			if len(ev) < 8 || len(stacks) != 8 {
				t.Errorf("rank 1: %d MPI_Sendrecv with %d stacks below main, want ≥ 8 with 8\n%s", len(ev), len(stacks), res.out)
			}
		})
	}
}

// modulePath is the path of the module whose code holds pc ("" if none).
func (tr *trace) modulePath(pc uint64) string {
	for _, m := range tr.defs.Modules {
		if pc >= m.Start && pc < m.End {
			return m.Path
		}
	}
	return ""
}
