package srcchar

import (
	"debug/elf"
	"path/filepath"
	"testing"
)

// BenchmarkSymbolize symbolizes distinct addresses of a large binary with
// DWARF (bin/dtpa, a Go program with inlined frames) from a cold start:
// opening the file, loading DWARF, indexing units as addresses need them.
func BenchmarkSymbolize(b *testing.B) {
	exe := filepath.Join(repoRoot, "bin", "dtpa")
	f, err := elf.Open(exe)
	if err != nil {
		b.Skip(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		b.Skip(err)
	}
	var addrs []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 8 {
			addrs = append(addrs, s.Value+s.Size/2)
		}
		if len(addrs) == 2000 {
			break
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := New(Config{})
		for _, a := range addrs {
			if len(s.Symbolize(exe, a)) == 0 {
				b.Fatalf("%#x not symbolized", a)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(addrs)), "ns/site")
}
