package hugetext

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPageIn pages in a copy of the test binary: its bytes unchanged and
// every page of it in the page cache afterwards. Whether the kernel gave
// 2 MB folios depends on the file system and the kernel (logged).
func TestPageIn(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, want, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PageIn(p); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("PageIn changed the file")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, len(want), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	missing := 0
	for _, v := range vec {
		if v&1 == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d pages not in the page cache after PageIn", missing, len(vec))
	}
	// What the kernel made of it: a mapping of the file, touched, is
	// mapped with 2 MB entries where its folios are 2 MB (and aligned).
	var sum byte
	for off := 0; off < len(m); off += 4096 {
		sum += m[off]
	}
	runtime.KeepAlive(sum)
	t.Logf("FilePmdMapped of this process after touching the %d MB copy: %s", len(m)>>20, pmdMapped())
}

// pmdMapped is this process's FilePmdMapped (smaps_rollup).
func pmdMapped() string {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "FilePmdMapped:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "FilePmdMapped:"))
		}
	}
	return "unknown"
}

func TestPageInErrors(t *testing.T) {
	if err := PageIn(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file: no error")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PageIn(empty); err != nil {
		t.Errorf("an empty file: %v", err)
	}
}
