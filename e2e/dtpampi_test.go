package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// dtpa-mpi (docs/distributed.md) must write the report dtpa writes, for
// any number of analysis processes: counts equal, seconds within 1e-9
// relative. checkDtpaMPI compares them on every trace of these tests and
// on hpcc's and LAMMPS's (realapps_test.go).

// mpiProcs are the analysis process counts every comparison runs.
var mpiProcs = []int{1, 2, 3, 4}

// needDtpaMPI skips (fails under CI) without Open MPI or bin/dtpa-mpi.
func needDtpaMPI(t *testing.T) {
	t.Helper()
	testenv.NeedCommands(t, "mpirun.openmpi")
	if _, err := os.Stat(filepath.Join(root, "bin", "dtpa-mpi")); err != nil {
		testenv.Missing(t, "bin/dtpa-mpi missing: make build builds it where mpicc.openmpi is installed")
	}
}

// runJob runs name args in dir and returns its stdout, stderr and exit
// code; a job that hangs is killed with its process group.
func runJob(t *testing.T, dir string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runJobEnv(t, dir, nil, name, args...)
}

// runJobEnv is runJob with env added to the job's environment.
func runJobEnv(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), mpiEnv...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out\n%s", name, strings.Join(args, " "), errb.String())
	}
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// dtpaMPI runs bin/dtpa-mpi at np analysis processes with args.
//
// More processes than this machine has processors make process 0 note on
// stderr that they share them (cmd/dtpa oversubscribed): dtpaMPI checks
// that it does exactly then, and returns stderr without the note, which
// the callers compare with dtpa's.
func dtpaMPI(t *testing.T, dir string, np int, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	a := append([]string{"-np", strconv.Itoa(np), "--oversubscribe", filepath.Join(root, "bin", "dtpa-mpi")}, args...)
	stdout, stderr, code = runJob(t, dir, "mpirun.openmpi", a...)
	cpus := onlineCPUs(t)
	var kept []string
	notes := 0
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if strings.HasPrefix(l, fmt.Sprintf("dtpa-mpi: %d analysis processes share this node's %d processors:", np, cpus)) {
			notes++
			continue
		}
		kept = append(kept, l)
	}
	if want := np > cpus; notes != boolInt(want) {
		t.Errorf("dtpa-mpi at %d processes on %d processors: %d notes that they share them, want %d; stderr\n%s", np, cpus, notes, boolInt(want), stderr)
	}
	return stdout, strings.Join(kept, ""), code
}

// onlineCPUs is the machine's number of processors online, as dtpa-mpi
// counts them.
func onlineCPUs(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("getconf", "_NPROCESSORS_ONLN").Output()
	n, err2 := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || err2 != nil || n < 1 {
		t.Fatalf("getconf _NPROCESSORS_ONLN: %q, %v", out, err)
	}
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkDtpaMPI compares dtpa-mpi's JSON report of app in dir at every
// process count with dtpa's, and their warnings.
func checkDtpaMPI(t *testing.T, dir, app string) {
	t.Helper()
	checkDtpaMPIBy(t, dir, app, func(np int) (string, string, int) { return dtpaMPI(t, dir, np, "--json", app) })
}

// checkDtpaMPIBy is checkDtpaMPI with dtpa-mpi --json app at np processes
// run by run (on other nodes: TestNodes).
func checkDtpaMPIBy(t *testing.T, dir, app string, run func(np int) (stdout, stderr string, code int)) {
	t.Helper()
	needDtpaMPI(t)
	start := time.Now()
	want, wantErr, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), "--json", app)
	if code != 0 {
		t.Fatalf("dtpa --json %s: exit %d\n%s", app, code, wantErr)
	}
	took := []string{fmt.Sprintf("dtpa %v", time.Since(start).Round(time.Millisecond))}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	for _, np := range mpiProcs {
		start := time.Now()
		got, gotErr, code := run(np)
		took = append(took, fmt.Sprintf("%d: %v", np, time.Since(start).Round(time.Millisecond)))
		if code != 0 {
			t.Errorf("dtpa-mpi at %d processes: exit %d\n%s", np, code, gotErr)
			continue
		}
		var g any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Errorf("dtpa-mpi at %d processes: %v", np, err)
			continue
		}
		var diffs []string
		jsonDiff("", g, w, &diffs)
		if len(diffs) > 0 {
			if len(diffs) > 20 {
				diffs = append(diffs[:20], fmt.Sprintf("… and %d more", len(diffs)-20))
			}
			t.Errorf("dtpa-mpi at %d processes differs from dtpa:\n%s", np, strings.Join(diffs, "\n"))
		}
		if gotErr != wantErr {
			t.Errorf("dtpa-mpi at %d processes warns\n%s\ndtpa warns\n%s", np, gotErr, wantErr)
		}
	}
	t.Logf("%s: wall time %s", app, strings.Join(took, ", dtpa-mpi at "))
}

// jsonDiff lists where got and want differ; numbers agree within 1e-9
// relative (counts, being below 1e9, then exactly).
func jsonDiff(path string, got, want any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %T, want an object", path, got))
			return
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			jsonDiff(path+"."+k, gv, wv, out)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: not in dtpa's report", path, k))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %d elements", path, abbreviate(got), len(w)))
			return
		}
		for i := range w {
			jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], out)
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > 1e-9*math.Max(math.Abs(g), math.Abs(w)) {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %v", path, abbreviate(got), w))
		}
	default:
		if fmt.Sprint(got) != fmt.Sprint(want) {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %v", path, abbreviate(got), abbreviate(want)))
		}
	}
}

func abbreviate(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// TestDtpaMPIStencil: the halo-exchange stencil (testdata/apps/stencil.c)
// traced at 32 ranks under Open MPI.
func TestDtpaMPIStencil(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needDtpaMPI(t)
	dir := t.TempDir()
	exe := compile(t, m, dir, "stencil")
	trace(t, m, dir, nil, 32, exe, "300", "200")
	checkDtpaMPI(t, dir, "stencil")
}

// TestDtpaMPISynthetic: a run written by the fixture builder, 7 ranks (no
// process count but 1 and 7 divides them) with a skewed clock, nested
// intervals, a ring of nonblocking messages, synchronous sends, wildcard
// receives, collectives of every shape on the world and on a split
// communicator, and a nonblocking collective; analysed also by more
// processes than ranks.
func TestDtpaMPISynthetic(t *testing.T) {
	needDtpaMPI(t)
	const n = 7
	run := tracetest.NewRun(n)
	half, odd := run.NewComm(0, 2, 4, 6), run.NewComm(1, 3, 5)
	ranks := make([]*tracetest.Rank, n)
	for i := range ranks {
		ranks[i] = run.Rank(i)
		ranks[i].Init(tracetest.US)
	}
	ranks[3].Skew(7*tracetest.MS, 40)
	for i, k := range ranks {
		if i%2 == 0 {
			k.CommSplit(run.World(), half, 2*tracetest.US)
		} else {
			k.CommSplit(run.World(), odd, 2*tracetest.US)
		}
	}
	for step := 0; step < 40; step++ {
		for i, k := range ranks {
			k.Pcontrol(100, 1)
			k.Compute(int64((i*37+step*11)%50) * tracetest.US)
			right, left := int32((i+1)%n), int32((i+n-1)%n)
			r := k.Irecv(left, 1, 64, tracetest.US)
			s := k.Isend(right, 1, 64, tracetest.US)
			k.Waitall([]tracetest.Req{r, s}, 3*tracetest.US)
			k.Pcontrol(101, 1)
		}
		for i, k := range ranks {
			k.Compute(int64((i*13+step*7)%30) * tracetest.US)
			k.Allreduce(8, 5*tracetest.US)
			if step%5 == 0 {
				k.Bcast(int32(step%n), 1024, 4*tracetest.US)
				k.Reduce(int32((step+1)%n), 8, 4*tracetest.US)
				k.Alltoall(16, 6*tracetest.US)
			}
		}
		// Rank 0 gathers a message from everybody, by wildcard.
		for i, k := range ranks {
			if i == 0 {
				continue
			}
			k.Compute(int64(i) * tracetest.US)
			k.Ssend(0, 2, 32, 2*tracetest.US)
		}
		for i := 1; i < n; i++ {
			q := ranks[0].Irecv(traceformat.AnySource, 2, 32, tracetest.US, int32(i), 2)
			ranks[0].Wait(q, 2*tracetest.US)
		}
		for i, k := range ranks {
			if i%2 == 0 {
				k.Barrier(3*tracetest.US, tracetest.On(half))
				q := k.Ibarrier(tracetest.US, tracetest.On(half))
				k.Compute(10 * tracetest.US)
				k.Wait(q, tracetest.US)
			}
		}
	}
	for _, k := range ranks {
		k.Finalize(tracetest.US)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "synth"); err != nil {
		t.Fatal(err)
	}
	old := mpiProcs
	mpiProcs = []int{1, 2, 3, 4, 8}
	defer func() { mpiProcs = old }()
	checkDtpaMPI(t, dir, "synth")
}

// TestDtpaMPILostCollective: traces that disagree on a collective (a
// call missing from one rank's trace, as when the tracer dropped it) are
// resynchronized by dtpa-mpi as by dtpa (docs/characteristics.md §8.1):
// 5 ranks make 300 collectives on the world, cycling through
// MPI_Barrier, MPI_Allreduce and MPI_Bcast, and ranks 0, 2 and 4 make
// 100 pairs of MPI_Barrier and MPI_Allreduce on a communicator of their
// own; rank 1 lacks world call 153 (an MPI_Bcast), rank 4 call 81 on the
// other one (an MPI_Barrier). (Had rank 4 lacked an MPI_Allreduce there,
// its next call on that communicator would come after a world call that
// ranks 0 and 2, waiting for it, never enter: dtpa too stalls then.)
func TestDtpaMPILostCollective(t *testing.T) {
	needDtpaMPI(t)
	const n = 5
	run := tracetest.NewRun(n)
	even, odd := run.NewComm(0, 2, 4), run.NewComm(1, 3)
	ranks := make([]*tracetest.Rank, n)
	for i := range ranks {
		ranks[i] = run.Rank(i)
		ranks[i].Init(tracetest.US)
	}
	for i, k := range ranks {
		if i%2 == 0 {
			k.CommSplit(run.World(), even, 2*tracetest.US)
		} else {
			k.CommSplit(run.World(), odd, 2*tracetest.US)
		}
	}
	for c := 0; c < 300; c++ {
		for i, k := range ranks {
			k.Compute(tracetest.MS)
			if i == 1 && c == 152 {
				k.Compute(10 * tracetest.US)
				continue
			}
			switch c % 3 {
			case 0:
				k.Barrier(10 * tracetest.US)
			case 1:
				k.Allreduce(8, 10*tracetest.US)
			default:
				k.Bcast(0, 8, 10*tracetest.US)
			}
			if c%3 != 1 {
				continue
			}
			// Every rank spends the same time, as the resynchronization
			// tells calls apart by their entries.
			k.Compute(tracetest.US)
			switch {
			case i%2 == 1:
				k.Compute(10 * tracetest.US)
			case i == 4 && c/3 == 40:
				k.Compute(5 * tracetest.US)
				k.Allreduce(8, 5*tracetest.US, tracetest.On(even))
			default:
				k.Barrier(5*tracetest.US, tracetest.On(even))
				k.Allreduce(8, 5*tracetest.US, tracetest.On(even))
			}
		}
	}
	for _, k := range ranks {
		k.Finalize(tracetest.US)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "lost"); err != nil {
		t.Fatal(err)
	}
	_, warn, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), "--json", "lost")
	if code != 0 || !strings.Contains(warn, "(call 153 on MPI_COMM_WORLD) lacks rank(s) 1 ") ||
		!strings.Contains(warn, "(call 81 on ") || strings.Contains(warn, "stall") {
		t.Fatalf("dtpa: exit %d, warnings\n%s", code, warn)
	}
	checkDtpaMPI(t, dir, "lost")
}

// TestDtpaMPIErrors: dtpa-mpi fails as dtpa does, once: no traces (also
// for the page and the exports), an output it cannot write (which only
// process 0 opens: the others must not wait for it), a usage error, and
// dtpa view, which dtpa-mpi does not serve.
func TestDtpaMPIErrors(t *testing.T) {
	needDtpaMPI(t)
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces")
	if err := os.Mkdir(traces, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := tracetest.TwoMessages().WriteDir(traces, "app"); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--json", "nothere"}, 1, "no traces of \"nothere\""},
		{[]string{"--html", "nothere"}, 1, "no traces of \"nothere\""},
		{[]string{"--export", "chrome", "-o", "x.json", "nothere"}, 1, "no traces of \"nothere\""},
		{[]string{"--export", "otf2", "nothere"}, 2, "--export otf2 writes a directory"},
		{[]string{"--export", "otf2", "-o", full, traces + "/app"}, 1, "exists and is not empty"},
		{[]string{"--export", "chrome", "-o", filepath.Join(dir, "file", "x.json"), traces + "/app"}, 1, "writing export"},
		{[]string{"--html", "-o", filepath.Join(dir, "file", "x.html"), traces + "/app"}, 1, "writing report"},
		{[]string{"view", "nothere"}, 1, "run dtpa view, not dtpa-mpi"},
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
	} {
		_, stderr, code := dtpaMPI(t, dir, 3, c.args...)
		if code != c.code || strings.Count(stderr, c.want) != 1 {
			t.Errorf("dtpa-mpi %s: exit %d, stderr\n%s\nwant exit %d and %q once", strings.Join(c.args, " "), code, stderr, c.code, c.want)
		}
	}
}

// TestDtpaMPIFlowControl: rank 0 sends a flood to rank 3, which takes none
// of it before a chain of ping-pongs between ranks 1 and 2 ends; at 2 and
// 3 analysis processes, sender and receiver are replayed by different
// ones. With a bound of 8 messages (DTPA_MPI_FLOW) the receiver's process
// holds at most 8 of the flood at once and the sender's waits for it;
// with the default bound it holds the whole flood. The report is dtpa's
// either way.
func TestDtpaMPIFlowControl(t *testing.T) {
	needDtpaMPI(t)
	const flood, pings = 400, 50
	run := tracetest.NewRun(4)
	for i := 0; i < 4; i++ {
		run.Rank(i).Init(tracetest.US)
	}
	r0, r1, r2, r3 := run.Rank(0), run.Rank(1), run.Rank(2), run.Rank(3)
	for i := 0; i < flood; i++ {
		r0.Send(3, 1, 8, tracetest.US)
	}
	for i := 0; i < pings; i++ {
		r1.Send(2, 2, 8, tracetest.US)
		r2.Recv(1, 2, 8, 2*tracetest.US)
		r2.Send(1, 2, 8, tracetest.US)
		r1.Recv(2, 2, 8, 2*tracetest.US)
	}
	r2.Send(3, 3, 8, tracetest.US)
	r3.Compute(tracetest.MS).Recv(2, 3, 8, tracetest.US)
	for i := 0; i < flood; i++ {
		r3.Recv(0, 1, 8, tracetest.US)
	}
	for i := 0; i < 4; i++ {
		run.Rank(i).Finalize(tracetest.US)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "flood"); err != nil {
		t.Fatal(err)
	}
	want, wantErr, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), "--json", "flood")
	if code != 0 {
		t.Fatalf("dtpa --json flood: exit %d\n%s", code, wantErr)
	}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	for _, np := range []int{2, 3} {
		for _, bound := range []int{8, 65536} {
			got, stderr, code := runJob(t, dir, "mpirun.openmpi", "-np", strconv.Itoa(np), "--oversubscribe",
				"-x", "DTPA_MPI_FLOW="+strconv.Itoa(bound), filepath.Join(root, "bin", "dtpa-mpi"), "--json", "flood")
			what := fmt.Sprintf("dtpa-mpi at %d processes, bound %d", np, bound)
			if code != 0 {
				t.Errorf("%s: exit %d\n%s", what, code, stderr)
				continue
			}
			var g any
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			var diffs []string
			jsonDiff("", g, w, &diffs)
			if len(diffs) > 0 {
				t.Errorf("%s differs from dtpa:\n%s", what, strings.Join(diffs, "\n"))
			}
			// Rank 3 is the last process's, rank 0 process 0's.
			held, waits := flowFigures(t, stderr, np-1), flowFigures(t, stderr, 0)
			t.Logf("%s: the receiver's process held at most %d messages of one key, the sender waited %d times", what, held[0], waits[1])
			switch {
			case bound == 8 && (held[0] < 1 || held[0] > 8 || waits[1] < flood/8):
				t.Errorf("%s: held %d messages at most, the sender waited %d times; want 1…8 and at least %d", what, held[0], waits[1], flood/8)
			case bound > flood && (held[0] != flood || waits[1] != 0):
				t.Errorf("%s: held %d messages at most, the sender waited %d times; want %d and none", what, held[0], waits[1], flood)
			}
		}
	}
}

// flowFigures reads process p's line of DTPA_MPI_FLOW in stderr: the
// most messages of one key it held and how often its senders waited.
func flowFigures(t *testing.T, stderr string, p int) [2]int64 {
	t.Helper()
	prefix := fmt.Sprintf("dtpa-mpi: analysis process %d: flow control at ", p)
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var bound int
		var f [2]int64
		_, err := fmt.Sscanf(line[len(prefix):], "%d messages: held at most %d messages of one key from other processes; senders waited %d times for another process", &bound, &f[0], &f[1])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return f
	}
	t.Fatalf("no flow control figures of process %d in\n%s", p, stderr)
	return [2]int64{}
}

// TestDtpaMPIDeferred: traces that no one compacted (the ranks told to
// leave them to a dtrun that never ran, as a killed dtrun leaves them) are
// compacted in place by dtpa-mpi's process 0 alone, which warns of each as
// dtpa does: at every process count, the same report and warnings as
// dtpa's, each analysis on copies of the same deferred traces.
func TestDtpaMPIDeferred(t *testing.T) {
	src, exe := deferredStencil(t, 8)
	traces, _ := filepath.Glob(filepath.Join(src, "stencil.*.trc"))
	copyRun := func() string {
		dir := t.TempDir()
		copyTree(t, src, dir)
		return dir
	}
	if m := traceMajor(t, traces[0]); m != traceformat.DeferredMajor {
		t.Fatalf("major version %#x, want a deferred trace", m)
	}
	want, wantErr, code := runJob(t, copyRun(), filepath.Join(root, "bin", "dtpa"), "--json", "--exe", exe, "stencil")
	if code != 0 || !strings.Contains(wantErr, "Ranks 0-7: its trace's events were still raw records (dtrun did not compact the run's traces) and dtpa compacted it in place") {
		t.Fatalf("dtpa: exit %d; want 8 traces compacted in place\n%s", code, wantErr)
	}
	for _, np := range mpiProcs {
		got, gotErr, code := dtpaMPI(t, copyRun(), np, "--json", "--exe", exe, "stencil")
		if code != 0 {
			t.Errorf("dtpa-mpi at %d processes: exit %d\n%s", np, code, gotErr)
			continue
		}
		var g, w any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		var diffs []string
		if jsonDiff("", g, w, &diffs); len(diffs) > 0 {
			t.Errorf("dtpa-mpi at %d processes differs from dtpa:\n%s", np, strings.Join(diffs[:min(len(diffs), 20)], "\n"))
		}
		if gotErr != wantErr {
			t.Errorf("dtpa-mpi at %d processes warns\n%s\ndtpa warns\n%s", np, gotErr, wantErr)
		}
	}
}

// deferredStencil runs the stencil on np ranks under Open MPI with the
// tracer preloaded and told to leave its traces' compaction to a dtrun
// that never runs, as a killed dtrun leaves them: the traces stay
// deferred (raw records). It returns their directory and the program.
func deferredStencil(t *testing.T, np int) (dir, exe string) {
	t.Helper()
	m := impls[0]
	needMPI(t, m)
	needDtpaMPI(t)
	dir = t.TempDir()
	exe = compile(t, m, dir, "stencil")
	spill := t.TempDir()
	if _, errOut, code := runJob(t, dir, m.mpirun, "-np", strconv.Itoa(np), "--oversubscribe",
		"-x", "LD_PRELOAD="+filepath.Join(root, "lib", "libdtpa_preload.so"), "-x", "DT_SPILL_DIR="+spill,
		"-x", "DT_COMPACT_AT_END=0", exe, "100", "50"); code != 0 {
		t.Fatalf("%s: exit %d\n%s", m.mpirun, code, errOut)
	}
	if traces, _ := filepath.Glob(filepath.Join(dir, "stencil.*.trc")); len(traces) != np {
		t.Fatalf("%d traces, want %d", len(traces), np)
	}
	return dir, exe
}

// traceMajor is the major format version in the preamble of the trace at
// path.
func traceMajor(t *testing.T, path string) uint16 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < traceformat.PreambleSize {
		t.Fatalf("%s: %v", path, err)
	}
	return uint16(b[8]) | uint16(b[9])<<8
}

// TestDtpaReadOnlyDeferred: deferred traces in a directory dtpa cannot
// write (a read-only file system here; another user's directory alike)
// are analysed from compacted copies in TMPDIR, which go when dtpa ends:
// the report is the one of the traces compacted in place, by dtpa and by
// dtpa-mpi, the traces stay as they were, and the OTF2 export reads them
// too.
func TestDtpaReadOnlyDeferred(t *testing.T) {
	src, exe := deferredStencil(t, 4)
	writable := t.TempDir()
	copyTree(t, src, writable)
	want, wantErr, code := runJob(t, writable, filepath.Join(root, "bin", "dtpa"), "--json", "--exe", exe, "stencil")
	if code != 0 || !strings.Contains(wantErr, "Ranks 0-3: its trace's events were still raw records (dtrun did not compact the run's traces) and dtpa compacted it in place") {
		t.Fatalf("dtpa: exit %d; want 4 traces compacted in place\n%s", code, wantErr)
	}
	full := ""
	if os.Geteuid() == 0 {
		full = fullDir(t, src)
	}
	ro, out := readOnlyDir(t, src), t.TempDir()
	before := readTree(t, ro)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	copyNote := regexp.MustCompile(`Ranks 0-3: its trace's events were still raw records \(dtrun did not compact the run's traces\), and its directory cannot be written \((read-only file system|permission denied|no space left on device)\): dtpa analysed a compacted copy in ` +
		regexp.QuoteMeta(tmp) + `/dtpa-compacted-\d+, removed after the analysis`)
	check := func(what, got, gotErr string, code int) {
		t.Helper()
		if code != 0 {
			t.Errorf("%s: exit %d\n%s", what, code, gotErr)
			return
		}
		if !copyNote.MatchString(gotErr) {
			t.Errorf("%s: the traces are not said to be analysed from copies\n%s", what, gotErr)
		}
		var g, w map[string]any
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		json.Unmarshal([]byte(want), &w)
		delete(g, "warnings")
		delete(w, "warnings")
		var diffs []string
		if jsonDiff("", g, w, &diffs); len(diffs) > 0 {
			t.Errorf("%s: the report differs from the one of the traces compacted in place:\n%s", what, strings.Join(diffs[:min(len(diffs), 20)], "\n"))
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "dtpa-compacted-*")); len(left) != 0 {
			t.Errorf("%s: copies left behind: %v", what, left)
		}
	}
	got, gotErr, code := runJob(t, ro, filepath.Join(root, "bin", "dtpa"), "--json", "--exe", exe, "stencil")
	check("dtpa", got, gotErr, code)
	if full != "" {
		got, gotErr, code = runJob(t, full, filepath.Join(root, "bin", "dtpa"), "--json", "--exe", exe, "stencil")
		check("dtpa on a full file system", got, gotErr, code)
	}
	got, gotErr, code = dtpaMPI(t, ro, 3, "--json", "--exe", exe, "stencil")
	check("dtpa-mpi at 3 processes", got, gotErr, code)
	_, gotErr, code = runJob(t, ro, filepath.Join(root, "bin", "dtpa"), "--export", "otf2", "-o", filepath.Join(out, "archive"), "stencil")
	if code != 0 || !copyNote.MatchString(gotErr) {
		t.Errorf("dtpa --export otf2: exit %d; want 4 traces exported from copies\n%s", code, gotErr)
	}
	if _, err := os.Stat(filepath.Join(out, "archive", "traces.otf2")); err != nil {
		t.Errorf("no archive: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "dtpa-compacted-*")); len(left) != 0 {
		t.Errorf("otf2 export: copies left behind: %v", left)
	}
	if after := readTree(t, ro); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Error("the read-only directory's files changed")
	}
}

// readOnlyDir returns dir as a place where a process can read the files
// but create none: as root, a read-only bind mount of it (skipped where
// mounting is not allowed); otherwise dir itself without write permission.
func readOnlyDir(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return dir
	}
	mnt := t.TempDir()
	if err := syscall.Mount(dir, mnt, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("a read-only directory for root needs a bind mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("remounting the bind mount read-only: %v", err)
	}
	return mnt
}

// fullDir returns a copy of dir's files on a small file system with no
// space left (testenv.Tmpfs, filled).
func fullDir(t *testing.T, dir string) string {
	t.Helper()
	mnt := testenv.Tmpfs(t, "4m", 0)
	copyTree(t, dir, mnt)
	testenv.Fill(t, mnt, "filler")
	return mnt
}

// readTree is the files of dir by name.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			files[e.Name()] = b
		}
	}
	return files
}
