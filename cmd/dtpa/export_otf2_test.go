package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// TestEndToEndOTF2: dtpa --export otf2 writes the late-sender run as an
// archive in the directory given with -o, which dtpa then analyses like
// the traces: rank 1's 0.2 s Real Sync in the whole program (the MPI_Send
// enters at 200.001 ms, the MPI_Recv at 0.001 ms). Without -o
// the command line is refused; a failed export leaves nothing behind.
func TestEndToEndOTF2(t *testing.T) {
	dir := lateSender(t)
	outDir := t.TempDir()
	arch := filepath.Join(outDir, "app-otf2")
	out, errOut, code := dtpa(t, "--export", "otf2", "--dir", dir, "-o", arch, "app")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(arch, "traces.otf2")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = dtpa(t, "--json", arch)
	if code != 0 {
		t.Fatalf("analysing the archive: exit %d: %s", code, errOut)
	}
	r := decode(t, out)
	if got := r.Intervals[0].Main.RealSync; !near(got, 0.2) {
		t.Errorf("Real Sync of the archive's run %v, want 0.2", got)
	}
	if _, errOut, code := dtpa(t, "--export", "otf2", "--dir", dir, "app"); code != exitUsage {
		t.Errorf("without -o: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := dtpa(t, "--export", "otf2", "--dir", t.TempDir(), "-o", filepath.Join(outDir, "none"), "app"); code != exitError {
		t.Errorf("no traces: exit %d", code)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("after a failure, beside the archive: %v", ents)
	}
}

// TestOTF2ExportFullDisk: an archive that does not fit on its disk is an
// error that says so in a line, and leaves nothing on the full disk. The
// check before each of libotf2's flushes (dtpa_w_pre_flush) refuses the
// write that would not fit; libotf2 would crash after the failed write
// (it frees the buffer whose flush failed and writes it again), which the
// child process that writes the archive would turn into such a line too.
// A tmpfs mounted for the test is the full disk (testenv.Tmpfs).
func TestOTF2ExportFullDisk(t *testing.T) {
	full := testenv.Tmpfs(t, "256k", 0)
	testenv.Fill(t, full, "filler")
	dir := pingRun(t, 200000)
	_, errOut, code := dtpa(t, "--export", "otf2", "--dir", dir, "-o", filepath.Join(full, "archive"), "app")
	if code != exitError || !strings.Contains(errOut, "dtpa: otf2 export: no room for the archive on the file system of "+full) ||
		strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "[OTF2]") {
		t.Errorf("exit %d; want one line saying the disk is full\n%s", code, errOut)
	}
	if ents, _ := os.ReadDir(full); len(ents) != 1 {
		t.Errorf("left on the full disk: %v", ents)
	}
}

// pingRun writes a run of two ranks in which rank 0 sends n messages to
// rank 1, 10 µs apart.
func pingRun(t *testing.T, n int) string {
	t.Helper()
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	r1.Init(1 * us)
	for i := 0; i < n; i++ {
		r0.Compute(10*us).Send(1, 1, 8, 2*us)
		r1.Recv(0, 1, 8, 12*us)
	}
	r0.Finalize(1 * us)
	r1.Finalize(1 * us)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportFullDisk: a report (text, JSON, a comparison) that does not
// fit on its disk is an error, and no half report is left in -o FILE.
func TestReportFullDisk(t *testing.T) {
	full := testenv.Tmpfs(t, "64k", 0)
	testenv.Fill(t, full, "filler")
	dir := pingRun(t, 2000)
	out := filepath.Join(full, "report")
	for _, args := range [][]string{
		{"--json", "-o", out, "--dir", dir, "app"},
		{"-o", out, "--dir", dir, "app"},
		{"--html", "-o", out, "--dir", dir, "app"},
		{"--diff", "-o", out, "--dir", dir, "app", "app"},
	} {
		_, errOut, code := dtpa(t, args...)
		if code != exitError || !strings.Contains(errOut, "no space left on device") {
			t.Errorf("dtpa %v: exit %d; want an error saying the disk is full\n%s", args, code, errOut)
		}
		if ents, _ := os.ReadDir(full); len(ents) != 1 {
			t.Errorf("dtpa %v: left on the full disk: %v", args, ents)
		}
	}
}
