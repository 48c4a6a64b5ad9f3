package analyzer

import (
	"slices"
	"testing"
)

// TestCollTable checks collTable against a map: instances whose keys
// share a slot (kept in more), removal from either place, and keys that
// differ only in the fields the slot does not hash (split, n).
func TestCollTable(t *testing.T) {
	var tab collTable
	ref := map[collKey]*collInst{}
	var keys []collKey
	for comm := uint64(1); comm <= 3; comm++ {
		for seq := uint64(0); seq < 2*collTableSlots; seq += 7 {
			keys = append(keys, collKey{comm: comm, seq: seq, n: 4}, collKey{comm: comm, seq: seq, group: 2, n: 4},
				collKey{comm: comm, seq: seq, split: 2, n: 4}, collKey{comm: comm, seq: seq, n: 5})
		}
	}
	check := func(step string) {
		t.Helper()
		for _, k := range keys {
			if got, want := tab.get(k), ref[k]; got != want {
				t.Fatalf("%s: get(%+v) = %p, want %p", step, k, got, want)
			}
		}
		var got, want []*collInst
		got = tab.all()
		for _, in := range ref {
			want = append(want, in)
		}
		order := func(a, b *collInst) int {
			if a.key.comm != b.key.comm {
				return int(a.key.comm) - int(b.key.comm)
			}
			if a.key.seq != b.key.seq {
				return int(a.key.seq) - int(b.key.seq)
			}
			if a.key.group != b.key.group {
				return int(a.key.group - b.key.group)
			}
			if a.key.split != b.key.split {
				return int(a.key.split - b.key.split)
			}
			return int(a.key.n - b.key.n)
		}
		slices.SortFunc(got, order)
		slices.SortFunc(want, order)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: all() has %d instances, want %d", step, len(got), len(want))
		}
	}
	for _, k := range keys {
		in := &collInst{key: k}
		tab.put(in)
		ref[k] = in
	}
	check("after put")
	if len(tab.more) == 0 {
		t.Fatal("no key shared a slot: the test does not reach collTable.more")
	}
	for i, k := range keys {
		if i%3 != 0 {
			tab.del(ref[k])
			delete(ref, k)
		}
	}
	check("after del")
	// Renumbered as resyncLocked does: removed, key changed, added.
	for _, k := range keys {
		if in := ref[k]; in != nil && k.seq%2 == 0 {
			tab.del(in)
			delete(ref, k)
			in.key.seq += 1000
			if ref[in.key] == nil {
				tab.put(in)
				ref[in.key] = in
				keys = append(keys, in.key)
			}
		}
	}
	check("after renumbering")
	for _, in := range tab.all() {
		tab.del(in)
		delete(ref, in.key)
	}
	check("after emptying")
}
