package analyzer

import "iter"

// aggTable holds aggregates by key (an interval's waits and causes, a
// rank's late receivers' charges): an open-addressed array whose entries
// hold key and value side by side, so that adding to an aggregate reads
// and writes one cache line, where a Go map of values allocated apart,
// behind a small cache of its entries, touches three (the cache's slot,
// the map's group on a cache miss, the value). At many ranks a rank's
// aggregates are out of the caches whenever its replay comes back to them
// (a collective charges each member's wait to the member that entered
// last, a different rank each time), so the lines an add touches are
// what it costs.
//
// A key equal to the table's free key (one that never occurs, given to
// get) marks a free entry. The caller hashes the key: only the top bits
// of the hash pick the entry.
type aggTable[K comparable, V any] struct {
	ents  []aggEnt[K, V] // a power of two long, at most half in use
	n     int            // entries in use
	shift uint8          // 32 - log2(len(ents))
	free  K
}

type aggEnt[K comparable, V any] struct {
	k K
	v V
}

// minAggEnts is a table's first size.
const minAggEnts = 16

// get returns k's value, a new zero one if k was not in the table; h is
// hash(k), free the table's free key. The value is valid until the next
// get of a new key. (The first entry probed holds the key at most adds:
// get tests it and leaves the rest to probe, out of line.)
func (t *aggTable[K, V]) get(k, free K, h uint32, hash func(K) uint32) *V {
	if len(t.ents) > 0 {
		if e := &t.ents[h>>t.shift]; e.k == k {
			return &e.v
		}
	}
	return t.probe(k, free, h, hash)
}

// probe is get past the first entry.
//
//go:noinline
func (t *aggTable[K, V]) probe(k, free K, h uint32, hash func(K) uint32) *V {
	if len(t.ents) > 0 {
		m := uint32(len(t.ents) - 1)
		for i := h >> t.shift; ; i = (i + 1) & m {
			e := &t.ents[i]
			if e.k == k {
				return &e.v
			}
			if e.k == free {
				break
			}
		}
	}
	if 2*(t.n+1) > len(t.ents) {
		t.grow(free, hash)
	}
	m := uint32(len(t.ents) - 1)
	i := h >> t.shift
	for t.ents[i].k != free {
		i = (i + 1) & m
	}
	t.n++
	e := &t.ents[i]
	e.k = k
	return &e.v
}

// grow doubles the table (or makes its first array).
func (t *aggTable[K, V]) grow(free K, hash func(K) uint32) {
	old := t.ents
	size := max(minAggEnts, 2*len(old))
	t.ents = make([]aggEnt[K, V], size)
	t.free = free
	for i := range t.ents {
		t.ents[i].k = free
	}
	t.shift = 32
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	m := uint32(size - 1)
	for j := range old {
		e := &old[j]
		if e.k == free {
			continue
		}
		i := hash(e.k) >> t.shift
		for t.ents[i].k != free {
			i = (i + 1) & m
		}
		t.ents[i] = *e
	}
}

// len is the number of keys in the table.
func (t *aggTable[K, V]) len() int { return t.n }

// all yields the table's keys and values, in no particular order.
func (t *aggTable[K, V]) all() iter.Seq2[K, *V] {
	return func(yield func(K, *V) bool) {
		for i := range t.ents {
			e := &t.ents[i]
			if e.k != t.free && !yield(e.k, &e.v) {
				return
			}
		}
	}
}

// keys yields t's keys, in no particular order.
func keys[K comparable, V any](t *aggTable[K, V]) iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range t.all() {
			if !yield(k) {
				return
			}
		}
	}
}

// hash64 mixes two words of a key into a 32-bit hash whose top bits
// depend on every bit of both: a product's high bits depend on all the
// bits of its factors. (The words are not folded into 32 bits first: a
// rank shifted to a 32-bit word's top loses its high bits, and ranks
// 4096 apart would share a hash.)
func hash64(x, y uint64) uint32 {
	return uint32(((x * 0x9e3779b97f4a7c15) ^ y) * 0xbf58476d1ce4e5b9 >> 32)
}
