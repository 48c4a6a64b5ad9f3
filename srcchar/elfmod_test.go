package srcchar

import (
	"cmp"
	"debug/elf"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// TestSortSymbols: the digit sort orders symbols as the stable sort on
// address does (aliases in the order added), over spans of one to five
// of its digits, and so do its fallbacks for few symbols and for an
// address too large to pack.
func TestSortSymbols(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		var m module
		n, span := rng.IntN(300), 50
		if trial%2 == 1 {
			n, span = 256+rng.IntN(3000), 1<<(trial%40)
		}
		for i := range n {
			addr := 0x400000 + uint64(rng.IntN(max(1, min(span, n/2))))*uint64(max(1, span/max(1, n/2)))*16
			if trial%10 == 0 && i == 7 {
				addr = 1 << 62
			}
			m.syms = append(m.syms, symbol{name: strconv.Itoa(i), addr: addr, size: uint64(rng.IntN(3))})
		}
		want := slices.Clone(m.syms)
		slices.SortStableFunc(want, func(a, b symbol) int { return cmp.Compare(a.addr, b.addr) })
		m.sortSymbols()
		var got []symbol
		for _, i := range m.byAddr {
			got = append(got, m.syms[i])
		}
		if !reflect.DeepEqual(got, want) && !(len(want) == 0 && len(got) == 0) {
			t.Fatalf("trial %d: sorted %v, want %v", trial, got, want)
		}
	}
}

// TestFuncSymbols: funcSymbols lists the defined functions of a file's
// symbol tables as debug/elf's Symbols and DynamicSymbols do, on the test
// binary, the C library and its separate debug file when installed.
func TestFuncSymbols(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{exe}
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
			if f, err := elf.Open(p); err == nil {
				m := &module{buildID: buildID(f)}
				f.Close()
				for _, d := range m.debugFiles([]string{"/usr/lib/debug"}) {
					if _, err := os.Stat(d); err == nil {
						paths = append(paths, d)
					}
				}
			}
		}
	}
	type sym struct {
		name       string
		addr, size uint64
	}
	checked := 0
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
			read := f.Symbols
			if typ == elf.SHT_DYNSYM {
				read = f.DynamicSymbols
			}
			syms, err := read()
			var want []sym
			for _, s := range syms {
				if definedFunc(s) {
					want = append(want, sym{s.Name, s.Value, s.Size})
				}
			}
			var got []sym
			counted := -1
			ok := funcSymbols(f, typ, symbolSink{
				count: func(n int) { counted = n },
				add: func(tab []byte, start int, addr, size uint64) {
					got = append(got, sym{cName(string(tab[start:])), addr, size})
				},
			})
			if ok && counted < len(got) {
				t.Errorf("%s, %v: %d functions counted before %d were given", p, typ, counted, len(got))
			}
			if ok != (err == nil) || !slices.Equal(got, want) {
				t.Errorf("%s, %v: %d functions (read %v), want %d (error %v)", p, typ, len(got), ok, len(want), err)
			}
			checked += len(want)
		}
		f.Close()
	}
	if checked == 0 {
		t.Fatal("no function found")
	}
	t.Logf("%d files, %d functions", len(paths), checked)
}
