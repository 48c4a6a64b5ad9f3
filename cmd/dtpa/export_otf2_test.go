package main

import (
	"os"
	"path/filepath"
	"testing"
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
