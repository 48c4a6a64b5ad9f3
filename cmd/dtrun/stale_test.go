package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestClaimStale: a spill directory is taken for a killed job's only when
// it has been left for staleAge, no dtrun holds it (holdSpill) and no
// process holds one of its files; and only on a file system whose locks
// are local.
func TestClaimStale(t *testing.T) {
	root := t.TempDir()
	if !localLocks(root) || !localLocks("/dev/shm") {
		t.Skip("the test's directory or /dev/shm is not on a local file system")
	}
	if localLocks("/proc") {
		t.Error("/proc taken for a file system with local locks")
	}
	mk := func(name string, age time.Duration) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "app.1.spill"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		os.Chtimes(d, old, old)
		return d
	}
	claim := func(d string) bool {
		release, ok := claimStale(d)
		if ok {
			release()
		}
		return ok
	}
	if d := mk("dtpa-dead", 2*staleAge); !claim(d) {
		t.Errorf("%s: a killed job's directory not claimed", d)
	}
	if d := mk("dtpa-new", 0); claim(d) {
		t.Errorf("%s: a directory just made claimed", d)
	}
	d := mk("dtpa-dtrun", 2*staleAge)
	release := holdSpill(d)
	if claim(d) {
		t.Errorf("%s: a directory its dtrun holds claimed", d)
	}
	release()
	d = mk("dtpa-rank", 2*staleAge)
	f, err := os.Open(filepath.Join(d, "app.1.spill"))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if claim(d) {
		t.Errorf("%s: a directory whose rank still holds its spill file claimed", d)
	}
	f.Close()
	if !claim(d) {
		t.Errorf("%s: not claimed once its rank is gone", d)
	}
}
