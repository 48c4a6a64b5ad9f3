package analyzer

import (
	"math/rand/v2"
	"testing"
)

// TestLateCache: a rank's late-receiver charges added through the cache
// are those a map alone holds, for keys that share slots (a universe of
// keys several times the cache's size, added in random order).
func TestLateCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var rs rankSync
	want := map[lateKey]waitVal{}
	for i := 0; i < 20000; i++ {
		k := lateKey{
			att:  uint64(rng.IntN(4))<<32 | uint64(rng.IntN(5)),
			from: msgFrom{rank: int32(rng.IntN(6)), site: uint32(rng.IntN(3))},
		}
		d := rng.Int64N(1000)
		rs.addLate(k, d)
		w := want[k]
		w.ns += d
		w.n++
		want[k] = w
	}
	if len(rs.late) != len(want) {
		t.Fatalf("%d keys, want %d", len(rs.late), len(want))
	}
	for k, w := range want {
		if v := rs.late[k]; v == nil || *v != w {
			t.Errorf("%+v: %+v, want %+v", k, v, w)
		}
	}
}
