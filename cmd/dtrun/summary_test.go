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
	summarize(&out, &jobFiles{dir: dir, start: start}, "/dev/shm/dtpa-x", nil)
	want := fmt.Sprintf("dtrun: 4 traces of app in %s, %s in all; analyse with: dtpa %s\n", dir, size(total), filepath.Join(dir, "app")) +
		"dtrun: warning: Rank 1: tracing stopped at MaxTraceSize; its trace lacks the rest of the run\n" +
		"dtrun: warning: Rank 3: the trace is cut or damaged at byte "
	hint := "dtrun: a rank killed on another node left its last records there: run `dtrun --recover /dev/shm/dtpa-x` on that node to add them to its trace\n"
	if !strings.HasPrefix(out.String(), want) || !strings.HasSuffix(out.String(), "the process died, or the file was damaged; its trace lacks the rest of the run\n"+hint) {
		t.Errorf("summary\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	summarize(&out, &jobFiles{dir: t.TempDir(), start: start}, "", nil)
	if !strings.Contains(out.String(), "no traces were written") {
		t.Errorf("empty directory: %q", out.String())
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
	summarize(&out, job, "", nil)
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
	summarize(&out, &jobFiles{dir: dir, start: start}, "", nil)
	want := fmt.Sprintf("dtrun: rank 1 crashed: SIGFPE (Floating point exception), integer divide by zero (0x401234); dtpa %s says where\n", filepath.Join(dir, "app"))
	if !strings.Contains(out.String(), want) || strings.Count(out.String(), "crashed") != 1 {
		t.Errorf("summary\n%s\nwant a line\n%s", out.String(), want)
	}
}
