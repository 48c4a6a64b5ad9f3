package srcchar

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FuzzSymbolize damages a shared library with DWARF (bytes overwritten at
// an offset) and symbolizes addresses in it: a module debug/elf or
// debug/dwarf cannot read costs its own frames only (safeSymbolize, which
// recovers from their panics), and nothing may hang or exhaust memory.
func FuzzSymbolize(f *testing.F) {
	dir := f.TempDir()
	src, err := filepath.Abs("testdata")
	if err != nil {
		f.Fatal(err)
	}
	lib := filepath.Join(dir, "libcb.so")
	if out, err := runOut(dir, "gcc", "-g", "-O2", "-shared", "-fPIC", "-o", lib, filepath.Join(src, "libcb.c")); err != nil {
		f.Fatalf("gcc: %v\n%s", err, out)
	}
	orig, err := os.ReadFile(lib)
	if err != nil {
		f.Fatal(err)
	}
	for _, off := range []uint32{0x20, 0x28, 0x3c, uint32(len(orig) / 2), uint32(len(orig) - 64)} {
		f.Add(off, []byte{0xff, 0xff, 0xff, 0x7f}, uint16(0x1100))
	}
	f.Fuzz(func(t *testing.T, off uint32, data []byte, pc uint16) {
		b := append([]byte(nil), orig...)
		o := int(off) % len(b)
		copy(b[o:], data)
		p := filepath.Join(t.TempDir(), "libcb.so")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s := New(Config{DebugDirs: []string{}, Warn: func(string) {}})
		// No frames is an answer too: an address a damaged symbol table
		// puts in the C start-up code, or a module it names MPI's.
		for _, at := range []uint64{uint64(pc), 0x1000, 0x1100} {
			s.Symbolize(p, at)
		}
	})
}

func runOut(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}
