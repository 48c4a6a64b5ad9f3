package main

import (
	"debug/dwarf"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// sitesLines are the lines of testdata/sites.c marked FIRST, SECOND, THIRD.
func sitesLines(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "sites.c"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for i, l := range strings.Split(string(data), "\n") {
		for _, m := range []string{"FIRST", "SECOND", "THIRD"} {
			if strings.Contains(l, "/* "+m+" */") {
				out[m] = i + 1
			}
		}
	}
	if len(out) != 3 {
		t.Fatalf("markers %v", out)
	}
	return out
}

// lineAddr is the first statement address of line in exe's line table.
func lineAddr(t *testing.T, exe string, line int) uint64 {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		if err != nil || lr == nil {
			continue
		}
		var e dwarf.LineEntry
		for lr.Next(&e) == nil {
			if e.Line == line && e.IsStmt && filepath.Base(e.File.Name) == "sites.c" {
				return e.Address
			}
		}
		r.SkipChildren()
	}
	t.Fatalf("no address for sites.c:%d", line)
	return 0
}

// sitesTraces builds testdata/sites.c (-g, non-PIE) and writes a
// synthetic two-rank run of it whose three MPI_Barrier call sites return
// into the marked lines: FIRST costs 5 ms per rank, SECOND 1 ms, THIRD
// 10 ms, so that Comm order (THIRD, FIRST, SECOND) differs from source
// order and a 20 % cut drops SECOND.
func sitesTraces(t *testing.T) (dir string, lines map[string]int) {
	t.Helper()
	testenv.NeedCommands(t, "gcc")
	dir = t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "sites.c"))
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sites")
	if out, err := exec.Command("gcc", "-g", "-O0", "-no-pie", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	lines = sitesLines(t)
	run := tracetest.NewRun(2)
	run.Program = exe
	for i := 0; i < 2; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
		// +1: a return address follows the call instruction.
		r.Barrier(5*ms, tracetest.Site("first", lineAddr(t, exe, lines["FIRST"])+1))
		r.Barrier(1*ms, tracetest.Site("second", lineAddr(t, exe, lines["SECOND"])+1))
		r.Barrier(10*ms, tracetest.Site("third", lineAddr(t, exe, lines["THIRD"])+1))
		r.Finalize(1 * us)
	}
	if _, err := run.WriteDir(dir, "sites"); err != nil {
		t.Fatal(err)
	}
	return dir, lines
}

var innermostFrame = regexp.MustCompile(`(?m)^\s+#0\s+(\S+)\s+(\S+)\s+(\d+)$`)

// TestSRCOrderSymbolized: the whole command on synthetic traces of a real
// binary: stacks name the functions and lines, -src orders by Comm and
// cuts, -srct keeps the same points in source order, -wp hides the
// per-processor lines.
func TestSRCOrderSymbolized(t *testing.T) {
	dir, lines := sitesTraces(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"third", "first", "second"}},
		{[]string{"-src", "20"}, []string{"third", "first"}},
		{[]string{"-srct", "20"}, []string{"first", "third"}},
		{[]string{"-srct", "0"}, []string{"first", "second", "third"}},
		{[]string{"-wp", "-src", "20", "-srct", "20"}, []string{"third", "first", "first", "third"}},
		{[]string{"-src", "100", "-srct", "100"}, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append(append([]string{}, tc.args...), "--dir", dir, "sites", "0")
			out, errOut, code := dtpa(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Contains(errOut, "warning") {
				t.Errorf("warnings: %s", errOut)
			}
			var got []string
			for _, m := range innermostFrame.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
				want := lines[strings.ToUpper(m[1])]
				if filepath.Base(m[2]) != "sites.c" || m[3] != strconv.Itoa(want) {
					t.Errorf("frame %q, want %s at sites.c:%d", m[0], m[1], want)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("points %v, want %v\n%s", got, tc.want, out)
			}
			if wp := slices.Contains(tc.args, "-wp"); len(tc.want) > 0 && wp == strings.Contains(out, "Proc  ExeCount") {
				t.Errorf("-wp %v but per-processor SRC lines present: %v", wp, !wp)
			}
		})
	}
}

// TestSRCJSONStack: the JSON report carries the symbolized stacks.
func TestSRCJSONStack(t *testing.T) {
	dir, lines := sitesTraces(t)
	out, errOut, code := dtpa(t, "--json", "--dir", dir, "sites")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := decode(t, out)
	if len(r.Intervals) != 1 || len(r.Intervals[0].SRC) != 3 {
		t.Fatalf("report %+v", r.Intervals)
	}
	for _, p := range r.Intervals[0].SRC {
		if len(p.Stack) != 1 {
			t.Errorf("point %d stack %+v, want the one recorded frame", p.ID, p.Stack)
			continue
		}
		f := p.Stack[0]
		if want := lines[strings.ToUpper(f.Function)]; want == 0 || f.Line != want || filepath.Base(f.File) != "sites.c" {
			t.Errorf("point %d frame %+v", p.ID, f)
		}
	}
}
