package analyzer

import (
	"math/rand/v2"
	"testing"
)

// TestAggTable: the aggregates added through a table are those a map
// holds, through growth from empty, for keys whose hashes collide (a
// hash of few values makes every get probe) and for the tables' real
// hashes.
func TestAggTable(t *testing.T) {
	hashes := map[string]func(lateKey) uint32{
		"real":   lateKey.hash,
		"few":    func(k lateKey) uint32 { return uint32(k.from.site) << 30 },
		"one":    func(lateKey) uint32 { return 0 },
		"lowbit": func(k lateKey) uint32 { return uint32(k.att) },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var tb lateTable
			want := map[lateKey]waitVal{}
			for i := 0; i < 20000; i++ {
				k := lateKey{
					att:  uint64(rng.IntN(4))<<32 | uint64(rng.IntN(9)),
					from: msgFrom{rank: int32(rng.IntN(7)), site: uint32(rng.IntN(3))},
				}
				d := rng.Int64N(1000)
				v := tb.get(k, noLate, hash(k), hash)
				v.ns += d
				v.n++
				w := want[k]
				w.ns += d
				w.n++
				want[k] = w
				if 2*tb.len() > len(tb.ents) {
					t.Fatalf("%d keys in %d entries", tb.len(), len(tb.ents))
				}
			}
			if tb.len() != len(want) {
				t.Fatalf("%d keys, want %d", tb.len(), len(want))
			}
			seen := 0
			for k, v := range tb.all() {
				seen++
				if *v != want[k] {
					t.Errorf("%+v: %+v, want %+v", k, *v, want[k])
				}
			}
			if seen != len(want) {
				t.Errorf("all yields %d keys, want %d", seen, len(want))
			}
		})
	}
}

// TestAggTableKinds: waits, causes and late charges add up under their
// own keys; an empty table yields nothing.
func TestAggTableKinds(t *testing.T) {
	var a acc
	for range a.culprits.all() {
		t.Fatal("an empty table yields a key")
	}
	k := waitKey{kind: wkLateSender, site: 3, late: msgFrom{rank: 0, site: 0}}
	a.addWait(k, 5, 1)
	a.addWait(k, 7, 1)
	a.addWait(waitKey{kind: wkWrongOrder, site: 3}, 2, 1)
	if v := a.culprits.get(k, noWait, k.hash(), waitKey.hash); *v != (waitVal{12, 2}) || a.culprits.len() != 2 {
		t.Errorf("wait %+v of %d keys, want {12 2} of 2", *v, a.culprits.len())
	}
	a.addCause(lateCall{msgFrom: msgFrom{rank: 2, site: 1}, span: 4, comp: 100}, 30, 60)
	a.addCause(lateCall{msgFrom: msgFrom{rank: 2, site: 1}, span: 4, comp: 10}, 20, 5)
	ck := causeKey{late: msgFrom{rank: 2, site: 1}, span: 4}
	if v := a.causes.get(ck, noCause, ck.hash(), causeKey.hash); *v != (causeVal{wait: 50, delay: 30 + 5, lateComp: 110, ownComp: 65, n: 2}) {
		t.Errorf("cause %+v", *v)
	}
	var rs rankSync
	lk := lateKey{att: 1<<32 | 2, from: msgFrom{rank: 1}}
	rs.addLate(lk, 4)
	rs.addLate(lk, 6)
	if v := rs.late.get(lk, noLate, lk.hash(), lateKey.hash); *v != (waitVal{10, 2}) {
		t.Errorf("late %+v", *v)
	}
}

// TestAggTableProbes: the keys of a many-rank run (every rank of 32 768
// late, at a few sites) spread over the table: no key is found more than
// a few entries past where its hash points.
func TestAggTableProbes(t *testing.T) {
	var tb waitTable
	var keys []waitKey
	for r := int32(0); r < 32768; r++ {
		for s := uint32(0); s < 3; s++ {
			k := waitKey{kind: wkNxN, site: 7, late: msgFrom{rank: r, site: s}}
			tb.get(k, noWait, k.hash(), waitKey.hash).n++
			keys = append(keys, k)
		}
	}
	m := uint32(len(tb.ents) - 1)
	worst, sum := uint32(0), uint32(0)
	for _, k := range keys {
		i := k.hash() >> tb.shift
		d := uint32(0)
		for tb.ents[(i+d)&m].k != k {
			d++
		}
		worst, sum = max(worst, d), sum+d
	}
	mean := float64(sum) / float64(len(keys))
	t.Logf("%d keys in %d entries: probes mean %.2f, worst %d", len(keys), len(tb.ents), mean, worst)
	if worst > 64 || mean > 2 {
		t.Errorf("%d keys in %d entries: probes mean %.2f, worst %d", len(keys), len(tb.ents), mean, worst)
	}
}
