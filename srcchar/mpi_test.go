package srcchar

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
)

var repoRoot = testenv.Root()

const mpiRanks = 3

// mpiImpl is an MPI implementation the test program is built and run with.
type mpiImpl struct {
	name, cc, mpirun string
	args             []string
}

var (
	openMPI = mpiImpl{"openmpi", "mpicc.openmpi", "mpirun.openmpi", []string{"--oversubscribe"}}
	mpich   = mpiImpl{"mpich", "mpicc.mpich", "mpiexec.mpich", nil}
)

// traceMPI compiles testdata/mpirecv.c with m's compiler and flags into a
// fresh directory as name, traces it with bin/dtrun at mpiRanks ranks and
// returns the directory (holding the program and its traces).
func traceMPI(t *testing.T, m mpiImpl, name string, strip bool, flags ...string) string {
	t.Helper()
	needTool(t, m.cc)
	needTool(t, m.mpirun)
	dtrun := filepath.Join(repoRoot, "bin", "dtrun")
	for _, p := range []string{dtrun, filepath.Join(repoRoot, "lib", "libdtpa_"+m.name+".so")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s missing: run make build", p)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(repoRoot, "srcchar", "testdata", "mpirecv.c")
	run(t, dir, m.cc, append(flags, "-o", name, src)...)
	if strip {
		run(t, dir, "strip", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"--mpirun", m.mpirun, "-np", strconv.Itoa(mpiRanks)}, m.args...)
	cmd := exec.CommandContext(ctx, dtrun, append(args, "./"+name)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), testenv.MPIEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("dtrun: %v\n%s", err, out.String())
	}
	return dir
}

func analyzeMPI(t *testing.T, dir, app string) (*report.Report, []string) {
	t.Helper()
	var warned []string
	warn := func(w string) { warned = append(warned, w) }
	rep, err := analyzer.Analyze(context.Background(), analyzer.Options{Dir: dir, App: app, MaxLevel: -1, Warn: warn,
		Symbolizer: New(Config{TraceDir: dir, Warn: warn})})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Intervals) != 2 {
		t.Fatalf("%d intervals, want the whole program and interval 1", len(rep.Intervals))
	}
	return rep, warned
}

func pointOf(t *testing.T, iv *report.Interval, fn string) *report.SRC {
	t.Helper()
	var found *report.SRC
	for i := range iv.SRC {
		if iv.SRC[i].Function == fn {
			if found != nil {
				t.Fatalf("interval %v: two %s points", iv.Path, fn)
			}
			found = &iv.SRC[i]
		}
	}
	if found == nil {
		t.Fatalf("interval %v: no %s point in %+v", iv.Path, fn, iv.SRC)
	}
	return found
}

// A real program built with -g and traced by dtrun: the MPI_Recv point
// names the file and line of the call, interval 1 the line of its
// MPI_Pcontrol, and the points' per-processor figures add up to the
// processors' totals of each interval. Open MPI and MPICH.
func TestTracedProgram(t *testing.T) {
	for _, m := range []mpiImpl{openMPI, mpich} {
		t.Run(m.name, func(t *testing.T) { testTracedProgram(t, m) })
	}
}

func testTracedProgram(t *testing.T, m mpiImpl) {
	dir := traceMPI(t, m, "mpirecv", false, "-g", "-O0")
	rep, warned := analyzeMPI(t, dir, "mpirecv")
	for _, w := range warned {
		if strings.Contains(w, "call-stack") || strings.Contains(w, "call stacks") {
			t.Errorf("symbolization warning: %s", w)
		}
	}
	recvLine := markerLine(t, "mpirecv.c", "RECV")
	for i := range rep.Intervals {
		iv := &rep.Intervals[i]
		p := pointOf(t, iv, "MPI_Recv")
		if len(p.Stack) == 0 {
			t.Fatalf("interval %v: MPI_Recv point without a stack", iv.Path)
		}
		checkFrame(t, "MPI_Recv call", p.Stack[0], "main", "mpirecv.c", recvLine)
		for _, f := range p.Stack {
			if strings.HasPrefix(f.Function, "__libc_start") || strings.Contains(f.File, "libmpi") {
				t.Errorf("frame %+v should be left out", f)
			}
		}
		if p.RealSync <= 0 || len(p.Ranks) != mpiRanks-1 {
			t.Errorf("interval %v: MPI_Recv point real sync %v on %d ranks, want > 0 on %d (rank 0 sends late)",
				iv.Path, p.RealSync, len(p.Ranks), mpiRanks-1)
		}
		for _, r := range p.Ranks {
			if r.ExeCount != 5 {
				t.Errorf("interval %v rank %d: %d MPI_Recv calls, want 5", iv.Path, r.Rank, r.ExeCount)
			}
		}
		checkFrame(t, "MPI_Send call", pointOf(t, iv, "MPI_Send").Stack[0], "main", "mpirecv.c", markerLine(t, "mpirecv.c", "SEND"))
		checkSums(t, iv)
	}
	in1 := &rep.Intervals[1]
	if filepath.Base(in1.SourceFile) != "mpirecv.c" || in1.Line != markerLine(t, "mpirecv.c", "INTERVAL") {
		t.Errorf("interval 1 at %s:%d, want mpirecv.c:%d", in1.SourceFile, in1.Line, markerLine(t, "mpirecv.c", "INTERVAL"))
	}
}

// checkSums compares, per processor, the sums over an interval's points
// with the processor's totals: every MPI call of the interval is at some
// point, so they must agree up to rounding.
func checkSums(t *testing.T, iv *report.Interval) {
	t.Helper()
	type sums struct{ comm, rs, pot, tv, ov float64 }
	got := map[int]*sums{}
	for _, p := range iv.SRC {
		for _, r := range p.Ranks {
			s := got[r.Rank]
			if s == nil {
				s = &sums{}
				got[r.Rank] = s
			}
			s.comm += r.ExeTime
			s.rs += r.RealSync
			s.pot += r.PotentialSync
			s.tv += r.TimeVariation
			s.ov += r.Overlap
		}
	}
	if len(got) != len(iv.Ranks) {
		t.Errorf("interval %v: points on %d processors, %d executed it", iv.Path, len(got), len(iv.Ranks))
	}
	const eps = 1e-8
	for _, rk := range iv.Ranks {
		s := got[rk.Rank]
		if s == nil {
			t.Errorf("interval %v: no point on rank %d", iv.Path, rk.Rank)
			continue
		}
		for _, c := range []struct {
			name      string
			sum, want float64
		}{
			{"Communications", s.comm, rk.Communications},
			{"Real Sync", s.rs, rk.RealSync},
			{"Potential Sync", s.pot, rk.PotentialSync},
			{"Time Variation", s.tv, rk.TimeVariation},
			{"Overlap", s.ov, rk.Overlap},
		} {
			if math.Abs(c.sum-c.want) > eps {
				t.Errorf("interval %v rank %d: points sum to %s %.9f, the processor has %.9f", iv.Path, rk.Rank, c.name, c.sum, c.want)
			}
		}
	}
}

// A stripped program without -g is still analysed: the same points, with
// module+offset frames and no file.
func TestTracedProgramStripped(t *testing.T) {
	dir := traceMPI(t, openMPI, "mpistripped", true, "-O0")
	rep, _ := analyzeMPI(t, dir, "mpistripped")
	for i := range rep.Intervals {
		iv := &rep.Intervals[i]
		p := pointOf(t, iv, "MPI_Recv")
		if len(p.Stack) == 0 || !strings.HasPrefix(p.Stack[0].Function, "mpistripped+0x") || p.Stack[0].File != "" {
			t.Errorf("interval %v: MPI_Recv stack %+v, want mpistripped+0x… without a file", iv.Path, p.Stack)
		}
		checkSums(t, iv)
	}
	if in1 := rep.Intervals[1]; in1.SourceFile != "mpistripped" || in1.Line != 0 {
		t.Errorf("interval 1 at %s:%d, want the program name without a line", in1.SourceFile, in1.Line)
	}
}
