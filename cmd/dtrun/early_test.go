package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/records"
)

// writeDeferred writes a deferred trace with a header and a footer at
// path, as a rank that ended leaves it for dtrun.
func writeDeferred(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := records.WriterOptions(false)
	opts.Deferred = true
	w, err := traceformat.NewWriter(f, &tracepb.Header{Rank: 0, WorldSize: 1, Hostname: "h"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(&tracepb.Footer{StopReason: tracepb.Footer_FINALIZE}); err != nil {
		t.Fatal(err)
	}
	if !records.IsDeferred(path) {
		t.Fatalf("%s: not deferred", path)
	}
}

// The early compactor compacts a trace of the job's directory once its
// rank said so on the FIFO, and leaves alone a trace no rank named, one a
// rank still holds (left to after the job), one that was there before the
// job, a name outside the directory and one of no file; with
// DT_COMPACT_EARLY=0 there is none.
func TestEarlyCompaction(t *testing.T) {
	spill, dir := t.TempDir(), t.TempDir()
	old := filepath.Join(dir, "app.3.trc")
	writeDeferred(t, old)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	job := newJobFiles(dir)
	e := startEarly(spill, job, func(string) string { return "" }, io.Discard)
	if e == nil {
		t.Fatal("no early compactor")
	}
	for _, name := range []string{"app.0", "app.1", "app.2"} {
		writeDeferred(t, filepath.Join(dir, name+".trc"))
	}
	held, err := os.OpenFile(filepath.Join(dir, "app.2.trc"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	records.LockTrace(int(held.Fd()))
	fifo, err := os.OpenFile(filepath.Join(spill, endedFIFO), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"app.0", "app.2", "app.3", "../app.1", "app.4"} {
		if _, err := fifo.WriteString(name + ".trc\n"); err != nil {
			t.Fatal(err)
		}
	}
	fifo.Close()
	// app.0 is compacted once the watcher saw its spill file go (no
	// deadline: the test's own timeout bounds it).
	for records.IsDeferred(filepath.Join(dir, "app.0.trc")) {
		time.Sleep(10 * time.Millisecond)
	}
	e.stop()
	for name, deferred := range map[string]bool{"app.1.trc": true, "app.2.trc": true, "app.3.trc": true} {
		if got := records.IsDeferred(filepath.Join(dir, name)); got != deferred {
			t.Errorf("%s: deferred %v, want %v", name, got, deferred)
		}
	}
	if e := startEarly(spill, job, func(k string) string { return map[string]string{"DT_COMPACT_EARLY": "0"}[k] }, io.Discard); e != nil {
		t.Error("DT_COMPACT_EARLY=0: an early compactor")
	}
	var none *earlyCompactor
	none.stop()
}
