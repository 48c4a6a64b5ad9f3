package srcchar

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestSortSymbols: the packed sort orders symbols as the sort on address
// and order added, aliases included, and so does its fallback for an
// address too large to pack.
func TestSortSymbols(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		var m module
		for i := range rng.IntN(300) {
			addr := uint64(rng.IntN(50)) * 16
			if trial%10 == 0 && i == 7 {
				addr = 1 << 62
			}
			m.syms = append(m.syms, symbol{name: string(rune('a' + i%26)), addr: addr, size: uint64(rng.IntN(3)), seq: i})
		}
		want := slices.Clone(m.syms)
		slices.SortStableFunc(want, func(a, b symbol) int { return cmp.Compare(a.addr, b.addr) })
		m.sortSymbols()
		if !reflect.DeepEqual(m.syms, want) && !(len(want) == 0 && len(m.syms) == 0) {
			t.Fatalf("trial %d: sorted %v, want %v", trial, m.syms, want)
		}
	}
}
