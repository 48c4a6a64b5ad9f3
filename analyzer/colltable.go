package analyzer

// collTable holds the collective instances in progress by key
// (exchange.colls), under x.mu. An instance is kept in its key's slot, a
// direct-mapped array indexed by a hash of the key, or in more when
// another instance holds that slot. A program has few instances in
// progress at a time, mostly consecutive numbers on one communicator,
// which the hash puts in consecutive slots: finding, adding and removing
// one is then an index and a key comparison. (With a map, hashing the
// 32-byte key and the map's upkeep cost about as much as the rest of
// entering and completing an instance of a four-rank MPI_Alltoall.)
type collTable struct {
	slots [collTableSlots]*collInst
	more  map[collKey]*collInst
}

// collTableSlots is the size of collTable's array: a power of two.
const collTableSlots = 256

// collTableSlot is key k's slot in collTable's array: the communicator
// and group, mixed by a multiplicative hash, offset by the instance's
// number.
func collTableSlot(k *collKey) uint {
	h := (k.comm ^ uint64(uint32(k.group))) * 0x9e3779b97f4a7c15
	return uint(h>>40+k.seq) & (collTableSlots - 1)
}

// get is the instance in progress at key k, or nil.
func (t *collTable) get(k collKey) *collInst {
	if in := t.slots[collTableSlot(&k)]; in != nil && in.key == k {
		return in
	}
	if len(t.more) == 0 {
		return nil
	}
	return t.more[k]
}

// put adds instance in at its key, where no instance is.
func (t *collTable) put(in *collInst) {
	s := &t.slots[collTableSlot(&in.key)]
	if *s == nil {
		*s = in
		return
	}
	if t.more == nil {
		t.more = map[collKey]*collInst{}
	}
	t.more[in.key] = in
}

// del removes instance in, kept at its key.
func (t *collTable) del(in *collInst) {
	if s := &t.slots[collTableSlot(&in.key)]; *s == in {
		*s = nil
		return
	}
	delete(t.more, in.key)
}

// all lists the instances in progress, in no particular order.
func (t *collTable) all() []*collInst {
	var l []*collInst
	for _, in := range t.slots {
		if in != nil {
			l = append(l, in)
		}
	}
	for _, in := range t.more {
		l = append(l, in)
	}
	return l
}
