package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
	"github.com/dtpa/dtpa/tracer/records"
)

// TestSummary: dtrun's closing lines name the traces of the run (not an
// older run's), their count and size, and every rank that stopped
// tracing early, by the reason its footer records (or its missing
// footer).
func TestSummary(t *testing.T) {
	dir := t.TempDir()
	old := tracetest.NewRun(2)
	if _, err := old.WriteDir(dir, "old"); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	for r := 0; r < 2; r++ {
		os.Chtimes(filepath.Join(dir, fmt.Sprintf("old.%d.trc", r)), past, past)
	}
	start := time.Now().Add(-time.Minute)

	run := tracetest.NewRun(4)
	for r := 0; r < 4; r++ {
		run.Rank(r).Compute(1000).Barrier(10)
	}
	run.Rank(1).StopReason(tracepb.Footer_SIZE_LIMIT)
	run.Rank(3).Crash()
	total := writeRun(t, run, dir)
	var out bytes.Buffer
	summarize(&out, &jobFiles{dir: dir, start: start}, remoteRecovery{spill: "/dev/shm/dtpa-x"}, nil)
	want := fmt.Sprintf("dtrun: 4 traces of app in %s, %s in all; analyse with: dtpa %s\n", dir, size(total), filepath.Join(dir, "app")) +
		"dtrun: warning: Rank 1: tracing stopped at MaxTraceSize; its trace lacks the rest of the run\n" +
		"dtrun: warning: Rank 3: the trace has no end (the process was killed before writing it); its trace lacks the rest of the run\n"
	hint := "dtrun: rank 3, killed on testhost, left its last records there: run `dtrun --recover /dev/shm/dtpa-x` on testhost to add them to its trace\n"
	if out.String() != want+hint {
		t.Errorf("summary\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	summarize(&out, &jobFiles{dir: t.TempDir(), start: start}, remoteRecovery{}, nil)
	if !strings.Contains(out.String(), "no traces were written") {
		t.Errorf("empty directory: %q", out.String())
	}
}

// TestSummaryKilledElsewhere: ranks killed without warning on other
// nodes (their traces without an end) are named with their nodes, and one
// command of the launcher recovers their last records on all of them;
// those of dtrun's own node, whose records dtrun recovered itself, are
// not named.
func TestSummaryKilledElsewhere(t *testing.T) {
	summary := func(hosts int, killed ...int) string {
		dir := t.TempDir()
		run := tracetest.NewRun(hosts * 2)
		for r := 0; r < hosts*2; r++ {
			run.Rank(r).Host(fmt.Sprintf("node%d", r%hosts)).Compute(1000).Barrier(10)
		}
		for _, r := range killed {
			run.Rank(r).Crash()
		}
		writeRun(t, run, dir)
		var out bytes.Buffer
		rec := remoteRecovery{spill: "/dev/shm/dtpa-x", self: "node0.cluster", on: func(hosts []string) string {
			return styleOf("srun").onNodes("/usr/bin/srun", hosts, "/opt/dtpa/bin/dtrun --recover /dev/shm/dtpa-x")
		}}
		summarize(&out, &jobFiles{dir: dir, start: time.Now().Add(-time.Minute)}, rec, nil)
		return out.String()
	}
	// One other node.
	s := summary(3, 0, 1, 4)
	want := "dtrun: ranks 1, 4, killed on node1, left their last records there: run `dtrun --recover /dev/shm/dtpa-x` on node1 to add them to their traces, " +
		"e.g. `/usr/bin/srun -w node1 -N 1 -n 1 /opt/dtpa/bin/dtrun --recover /dev/shm/dtpa-x`\n"
	if !strings.HasSuffix(s, want) || strings.Contains(s, "node0") {
		t.Errorf("summary\n%s\nwant it to end with\n%s", s, want)
	}
	// Two, and eleven: one line, one command.
	s = summary(3, 0, 1, 2, 4)
	want = "dtrun: ranks 1, 2, 4, killed on 2 other nodes (node1: 1, 4; node2: 2), left their last records there: run `dtrun --recover /dev/shm/dtpa-x` on each to add them to their traces, " +
		"e.g. `/usr/bin/srun -w node1,node2 -N 2 -n 2 /opt/dtpa/bin/dtrun --recover /dev/shm/dtpa-x`\n"
	if !strings.HasSuffix(s, want) {
		t.Errorf("summary\n%s\nwant it to end with\n%s", s, want)
	}
	var all []int
	for r := 1; r < 12; r++ {
		all = append(all, r)
	}
	s = summary(12, all...)
	if !strings.Contains(s, "dtrun: ranks 1-11, killed on 11 other nodes (node1: 1; node10: 10; node11: 11; node2: 2; node3: 3; node4: 4; node5: 5; node6: 6; and 3 more), ") ||
		!strings.Contains(s, "-w node1,node10,node11,node2,node3,node4,node5,node6,node7,node8,node9 -N 11 -n 11 ") || strings.Count(s, "killed on") != 1 {
		t.Errorf("eleven nodes:\n%s", s)
	}
	for _, c := range []struct {
		launcher, want string
	}{
		{"mpirun.openmpi", "mpirun.openmpi --host n7,n8 -np 2 dtrun --recover S"},
		{"mpiexec.mpich", "mpiexec.mpich -hosts n7,n8 -n 2 dtrun --recover S"},
	} {
		if got := styleOf(c.launcher).onNodes(c.launcher, []string{"n7", "n8"}, "dtrun --recover S"); got != c.want {
			t.Errorf("%s: %q, want %q", c.launcher, got, c.want)
		}
	}
}

// TestSummaryMissing: ranks of the run without a trace in the directory
// (a job run from a directory of each node's own: the other nodes wrote
// theirs in theirs) are named, with the run's size.
func TestSummaryMissing(t *testing.T) {
	dir := t.TempDir()
	run := tracetest.NewRun(4)
	for r := 0; r < 4; r++ {
		run.Rank(r).Compute(1000).Barrier(10)
	}
	writeRun(t, run, dir)
	for _, r := range []int{1, 3} {
		os.Remove(filepath.Join(dir, fmt.Sprintf("app.%d.trc", r)))
	}
	var out bytes.Buffer
	summarize(&out, &jobFiles{dir: dir, start: time.Now().Add(-time.Minute)}, remoteRecovery{}, nil)
	want := fmt.Sprintf("dtrun: warning: ranks 1, 3 of 4: no trace in %s: they never reached MPI_Init, or ran on other nodes", dir)
	if !strings.Contains(out.String(), want) {
		t.Errorf("summary\n%s\nwant %q", out.String(), want)
	}
}

// TestSummaryOverwritten: a run of 2 ranks, within a second of a run of 4
// of the same program in the same directory, wrote over the first two
// traces. The summary counts the job's two, names the other two as an
// earlier run's, and dtrun compacts only the job's deferred traces; a
// trace that a running process holds (another job's) is not the job's.
func TestSummaryOverwritten(t *testing.T) {
	dir := t.TempDir()
	old := tracetest.NewRun(4)
	if _, err := old.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	job := newJobFiles(dir)
	total := writeRun(t, tracetest.NewRun(2), dir)
	var out bytes.Buffer
	summarize(&out, job, remoteRecovery{}, nil)
	want := fmt.Sprintf("dtrun: 2 traces of app in %s, %s in all; analyse with: dtpa %s\n", dir, size(total), filepath.Join(dir, "app")) +
		fmt.Sprintf("dtrun: app.2.trc, app.3.trc in %s are an earlier run's, which dtpa leaves out\n", dir)
	if out.String() != want {
		t.Errorf("summary\n%s\nwant\n%s", out.String(), want)
	}
	if got := job.traces(); len(got) != 2 || filepath.Base(got[0]) != "app.0.trc" || filepath.Base(got[1]) != "app.1.trc" {
		t.Errorf("the job's traces %q, want app.0.trc and app.1.trc", got)
	}

	// Another job, in the same directory, writes other.0.trc.
	f, err := os.Create(filepath.Join(dir, "other.0.trc"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records.LockTrace(int(f.Fd()))
	if got := job.traces(); len(got) != 2 {
		t.Errorf("the job's traces %q: another job's running trace among them", got)
	}
}

// writeRun writes run's traces of app into dir and returns their size.
func writeRun(t *testing.T, run *tracetest.Run, dir string) int64 {
	t.Helper()
	paths, err := run.WriteDir(dir, "app")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range paths {
		st, _ := os.Stat(p)
		total += st.Size()
	}
	return total
}

func TestTraceDir(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-np", "4", "./app"}, "."},
		{[]string{"-np", "4", "--wdir", "/tmp/x", "./app", "-wdir", "no"}, "/tmp/x"},
		{[]string{"-wdir=/w", "./app"}, "/w"},
		{[]string{"-x", "-wdir", "./app"}, "."}, // -x takes "-wdir" as its value
		{[]string{"./app", "--wd", "arg"}, "."},
	} {
		if got := traceDir(tc.args, valueOpts); got != tc.want {
			t.Errorf("traceDir(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	for b, want := range map[int64]string{950: "950 B", 12595: "12.3 KiB", 5 << 20: "5.00 MiB", 3 << 30: "3.00 GiB"} {
		if got := size(b); got != want {
			t.Errorf("size(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"dtrun", "--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "dtrun version ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestSummaryCrash: a rank whose footer records a crash is named with its
// signal and cause after the warnings, with the dtpa command that says
// where; the ranks the launcher then ended are not.
func TestSummaryCrash(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute)
	run := tracetest.NewRun(3)
	for r := 0; r < 3; r++ {
		run.Rank(r).Compute(1000).Barrier(10)
	}
	run.Rank(0).StopReason(tracepb.Footer_SIGNAL)
	run.Rank(1).CrashedWith(&tracepb.Crash{Signal: 8, Name: "SIGFPE (Floating point exception)", Code: 1, Address: 0x401234, HasAddress: true, Stack: []uint64{0x401234}})
	writeRun(t, run, dir)
	var out bytes.Buffer
	summarize(&out, &jobFiles{dir: dir, start: start}, remoteRecovery{}, nil)
	want := fmt.Sprintf("dtrun: rank 1 crashed: SIGFPE (Floating point exception), integer divide by zero (0x401234); dtpa %s says where\n", filepath.Join(dir, "app"))
	if !strings.Contains(out.String(), want) || strings.Count(out.String(), "crashed") != 1 {
		t.Errorf("summary\n%s\nwant a line\n%s", out.String(), want)
	}
}

// TestOtherNodesOutliveLauncher: after the launcher's end, ranks of other
// nodes, which dtrun cannot see, may still be writing their traces (an
// interrupted Open MPI job: mpirun exits before the ranks its daemons
// end). dtrun waits for the job's traces that a process holds, of the
// job's run as its finished traces say, and counts them once let go; one
// still held then is the job's, still being written, not an earlier
// run's. Another job's trace at work in the same directory (another run)
// is not waited for.
func TestOtherNodesOutliveLauncher(t *testing.T) {
	dir := t.TempDir()
	job := newJobFiles(dir)
	run := tracetest.NewRun(3)
	for r := 0; r < 3; r++ {
		run.Rank(r).Compute(1000).Barrier(10)
	}
	writeRun(t, run, dir)
	if _, err := tracetest.NewRun(1).WriteDir(dir, "other"); err != nil { // another run id
		t.Fatal(err)
	}
	lock := func(name string) *os.File {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		records.LockTrace(int(f.Fd()))
		return f
	}
	rank2, other := lock("app.2.trc"), lock("other.0.trc")
	defer other.Close()
	if got := job.heldTraces(); len(got) != 1 || filepath.Base(got[0]) != "app.2.trc" {
		t.Fatalf("held traces of the job %q, want app.2.trc alone", got)
	}
	time.AfterFunc(200*time.Millisecond, func() { rank2.Close() })
	waitRanks(t.TempDir(), job, time.Minute)
	if records.Held(filepath.Join(dir, "app.2.trc")) {
		t.Fatal("waitRanks returned while app.2.trc was held")
	}
	job.stillHeld()
	var out bytes.Buffer
	summarize(&out, job, remoteRecovery{}, nil)
	if s := out.String(); !strings.HasPrefix(s, "dtrun: 3 traces of app in ") || strings.Contains(s, "app.2") {
		t.Errorf("summary after rank 2 let its trace go:\n%s", s)
	}

	// Rank 1 still writes its trace when dtrun gives up waiting.
	job = &jobFiles{dir: dir, start: job.start}
	rank1 := lock("app.1.trc")
	defer rank1.Close()
	job.stillHeld()
	out.Reset()
	summarize(&out, job, remoteRecovery{}, nil)
	want := fmt.Sprintf("dtrun: app.1.trc in %s is still written by the job's processes", dir)
	if s := out.String(); !strings.HasPrefix(s, "dtrun: 2 traces of app in ") || !strings.Contains(s, want) || strings.Contains(s, "earlier run") {
		t.Errorf("summary while rank 1 writes its trace:\n%s\nwant %q", s, want)
	}
}
