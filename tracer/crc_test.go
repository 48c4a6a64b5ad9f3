package tracer_test

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriterCRC: the CRC-32C the writer puts in its frames (rt/dt_crc.h:
// three interleaved streams of the crc32 instruction, and the table
// without it) is Go's, which traceformat checks, for every length around
// the streams' block sizes, unaligned starts, and continued CRCs.
func TestWriterCRC(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "crccheck")
	src := filepath.Join(root, "tracer", "testdata", "crc", "crccheck.c")
	if b, err := exec.Command(cc, "-O2", "-Wall", "-Werror", "-I", filepath.Join(root, "tracer", "rt"), "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", src, err, b)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 400_000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	type piece struct {
		off, n int
		init   uint32
	}
	var pieces []piece
	add := func(off, n int) {
		pieces = append(pieces, piece{off, n, rng.Uint32() * uint32(len(pieces)%2)})
	}
	for n := 0; n <= 40; n++ {
		add(n%9, n)
	}
	for _, block := range []int{3 * 256, 3 * 4096} {
		for k := 1; k <= 3; k++ {
			for d := -9; d <= 9; d++ {
				add(rng.IntN(7), k*block+d)
			}
		}
	}
	for _, n := range []int{128 << 10, 128<<10 + 14, 300_001, 399_000} {
		add(rng.IntN(1000), n)
	}
	for range 40 {
		n := rng.IntN(200_000)
		add(rng.IntN(len(data)-n), n)
	}
	args := []string{file}
	for _, p := range pieces {
		args = append(args, fmt.Sprintf("%d:%d:%x", p.off, p.n, p.init))
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	for _, mode := range []string{"hw", "sw"} {
		a := args
		if mode == "sw" {
			a = append([]string{file, "sw"}, args[1:]...)
		}
		out, err := exec.Command(prog, a...).Output()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		got := strings.Fields(string(out))
		if len(got) != len(pieces) {
			t.Fatalf("%s: %d CRCs for %d pieces", mode, len(got), len(pieces))
		}
		for i, p := range pieces {
			want := fmt.Sprintf("%08x", crc32.Update(p.init, tab, data[p.off:p.off+p.n]))
			if got[i] != want {
				t.Errorf("%s: %d bytes at %d from %08x: %s, want %s", mode, p.n, p.off, p.init, got[i], want)
			}
		}
	}
}
