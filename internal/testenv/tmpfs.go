package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (mount's size= option: "1m") with flags
// (syscall.MS_RDONLY, say) on a new temporary directory and returns it,
// unmounted when t ends: a file system a test can make full or read-only,
// which for root nothing else is. It skips t where mounting is not
// allowed (not root, a container without the capability).
func Tmpfs(t testing.TB, size string, flags uintptr) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// Fill writes the file name in dir until dir's file system has no byte
// left, and returns its path.
func Fill(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 1<<16)
	for n := len(block); n > 0; n /= 2 {
		for {
			if _, err := f.Write(block[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return path
}
