package records

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestCompactFinished: a deferred trace that no process holds is compacted
// in place, byte for byte as Compact compacts it, and a compacted one is
// left alone; one that a process holds (LockTrace, as a rank writing it)
// is waited for and then refused, and compacted once released; one
// compacted by another process while this one waited is left alone.
func TestCompactFinished(t *testing.T) {
	dir, pre, footer, want := compactedFixture(t)
	path := filepath.Join(dir, "app.0.trc")

	writeRun(t, path, testParts(), true, 4, pre, footer())
	if ok, err := CompactFinished(path, 0); !ok || err != nil {
		t.Fatalf("CompactFinished = %v, %v; want compacted", ok, err)
	}
	if !bytes.Equal(readFile(t, path), readFile(t, want)) {
		t.Error("compacted trace differs from Compact's")
	}
	if ok, err := CompactFinished(path, 0); ok || err != nil {
		t.Errorf("a compacted trace: CompactFinished = %v, %v; want left alone", ok, err)
	}

	writeRun(t, path, testParts(), true, 4, pre, nil) // no footer: its rank may still write it
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if Held(path) {
		t.Error("Held before the lock")
	}
	LockTrace(int(f.Fd()))
	if !Held(path) {
		t.Error("not Held while its rank writes it")
	}
	start := time.Now()
	if ok, err := CompactFinished(path, 100*time.Millisecond); ok || !errors.Is(err, ErrBeingWritten) {
		t.Errorf("a held trace: CompactFinished = %v, %v; want ErrBeingWritten", ok, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("refused after %v; want it waited for", d)
	}
	if !IsDeferred(path) {
		t.Error("a held trace was changed")
	}
	f.Close()
	if Held(path) {
		t.Error("Held once released")
	}
	if ok, err := CompactFinished(path, 0); !ok || err != nil || IsDeferred(path) {
		t.Errorf("released: CompactFinished = %v, %v; want compacted", ok, err)
	}

	// Another process compacts the trace while this one waits for it.
	writeRun(t, path, testParts(), true, 4, pre, footer())
	f, err = os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		Compact(path)
		f.Close()
	}()
	if ok, err := CompactFinished(path, 10*time.Second); ok || err != nil || IsDeferred(path) {
		t.Errorf("compacted meanwhile: CompactFinished = %v, %v; want left alone, compacted", ok, err)
	}
}

// compactedFixture is a directory with want.trc, testParts() written
// deferred and compacted, and the prefix and footer it was written with.
func compactedFixture(t *testing.T) (dir string, pre Prefix, footer func() *tracepb.Footer, want string) {
	t.Helper()
	dir = t.TempDir()
	pre = Prefix{Conv: Converter{TSC: true, NsPerTick: 0.4, Raw0: 1 << 40, Ns0: 5e9}}
	footer = func() *tracepb.Footer { return &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE} }
	want = filepath.Join(dir, "want.trc")
	writeRun(t, want, testParts(), true, 4, pre, footer())
	if _, err := Compact(want); err != nil {
		t.Fatal(err)
	}
	return dir, pre, footer, want
}

// TestCompactFinishedCopy: a trace whose directory cannot be written is
// compacted into another directory, byte for byte as in place, and left
// as it was; a trace its rank still holds is not, and one that is not
// deferred gives no copy.
func TestCompactFinishedCopy(t *testing.T) {
	dir, pre, footer, want := compactedFixture(t)
	copies := t.TempDir()
	path := filepath.Join(dir, "app.0.trc")
	writeRun(t, path, testParts(), true, 4, pre, footer())
	before := readFile(t, path)
	if ok, err := CompactFinishedCopy(path, copies, 0); !ok || err != nil {
		t.Fatalf("CompactFinishedCopy = %v, %v; want a copy", ok, err)
	}
	if !bytes.Equal(readFile(t, filepath.Join(copies, "app.0.trc")), readFile(t, want)) {
		t.Error("the copy differs from the trace compacted in place")
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("the trace itself was changed")
	}
	if m, _ := filepath.Glob(filepath.Join(copies, ".*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}

	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	LockTrace(int(f.Fd()))
	os.Remove(filepath.Join(copies, "app.0.trc"))
	if ok, err := CompactFinishedCopy(path, copies, 0); ok || !errors.Is(err, ErrBeingWritten) {
		t.Errorf("a held trace: CompactFinishedCopy = %v, %v; want ErrBeingWritten", ok, err)
	}
	f.Close()
	if ok, err := CompactFinishedCopy(want, copies, 0); ok || err != nil {
		t.Errorf("a compacted trace: CompactFinishedCopy = %v, %v; want no copy", ok, err)
	}
	if m, _ := filepath.Glob(filepath.Join(copies, "*")); len(m) != 0 {
		t.Errorf("copies made: %v", m)
	}
}

// TestEnded: ended tells a deferred trace with its footer from one
// without (where the file system has no locks, only the first is
// compacted).
func TestEnded(t *testing.T) {
	dir := t.TempDir()
	for _, withFooter := range []bool{true, false} {
		path := filepath.Join(dir, "app.0.trc")
		var footer *tracepb.Footer
		if withFooter {
			footer = &tracepb.Footer{}
		}
		writeRun(t, path, testParts(), true, 4, Prefix{}, footer)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := ended(f); got != withFooter {
			t.Errorf("footer %v: ended = %v", withFooter, got)
		}
		f.Close()
	}
}

// TestCompactPanicIsAnError: a panic while compacting (a bug) is the
// compaction's error, in place and into a copy: the trace stays deferred
// and whole, no new file is left behind, and a later compaction succeeds.
func TestCompactPanicIsAnError(t *testing.T) {
	dir, pre, footer, want := compactedFixture(t)
	path := filepath.Join(dir, "app.0.trc")
	writeRun(t, path, testParts(), true, 4, pre, footer())
	before := readFile(t, path)
	compactTestHook = func(string) { panic("a bug") }
	copies := t.TempDir()
	ok, err := CompactFinished(path, 0)
	okc, errc := CompactFinishedCopy(path, copies, 0)
	compactTestHook = nil
	for _, c := range []struct {
		what string
		ok   bool
		err  error
	}{{"in place", ok, err}, {"into a copy", okc, errc}} {
		if c.ok || c.err == nil || !strings.Contains(c.err.Error(), "internal error: a bug") {
			t.Errorf("%s: CompactFinished = %v, %v; want not compacted, the panic as an internal error", c.what, c.ok, c.err)
		}
	}
	if !IsDeferred(path) || !bytes.Equal(readFile(t, path), before) {
		t.Error("the trace changed")
	}
	if tmps := CompactTemps(dir); len(tmps) > 0 {
		t.Errorf("new files left behind: %v", tmps)
	}
	if m, _ := filepath.Glob(filepath.Join(copies, "*")); len(m) > 0 {
		t.Errorf("files left in the copies' directory: %v", m)
	}
	if ok, err := CompactFinished(path, 0); !ok || err != nil {
		t.Fatalf("afterwards: CompactFinished = %v, %v; want compacted", ok, err)
	}
	if !bytes.Equal(readFile(t, path), readFile(t, want)) {
		t.Error("compacted trace differs from Compact's")
	}
}
