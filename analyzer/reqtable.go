package analyzer

import "math/bits"

// reqTable holds a rank's live requests by id. An id may be live several
// times at once: tracers may record MPI's handle values, and Open MPI
// returns one shared handle for every request that completed at once
// (MPI_PROC_NULL operations, small eager sends). Completions of such an id
// apply to its live requests oldest first, which is the order programs
// pass them in. Programs usually have a handful of requests in flight, for
// which a linear scan of a short slice in creation order beats a map; past
// smallReqs live requests the table switches to a map of queues.
type reqTable struct {
	ids  []uint64
	vals []request
	big  map[uint64][]request
	n    int // live requests in big
	// dead marks (by index) the small table's requests that a Wait/Test
	// call completed, removed together when it is done (compact):
	// completions come oldest first, and removing each at once would
	// shift the rest of the table every time.
	dead uint32
	// pre is the number of requests at the start of the small table that
	// are marked dead: where find looks first. A Wait/Test call mostly
	// completes the table in the order its requests were made, and a
	// request whose older ones are all marked dead is the oldest live
	// one of its id (ids repeat: Open MPI's shared handles).
	pre int
}

const smallReqs = 32

// get returns the oldest live request with the given id, or nil. The
// pointer is valid until the next put or del.
func (t *reqTable) get(id uint64) *request {
	if t.big != nil {
		if q := t.big[id]; len(q) > 0 {
			return &q[0]
		}
		return nil
	}
	for i, x := range t.ids {
		if x == id {
			return &t.vals[i]
		}
	}
	return nil
}

// put adds a request, after any live request with the same id.
func (t *reqTable) put(id uint64, r request) {
	*t.add(id) = r
}

// add adds a zero request, after any live request with the same id, and
// returns it to be filled in place (a request is large: building it on the
// stack and copying it in showed in the replay's profile). The pointer is
// valid until the next put, add or del.
func (t *reqTable) add(id uint64) *request {
	// The common case: the small table with room (the rest is in
	// addSlow, which keeps this function's frame small).
	if n := len(t.vals); t.big == nil && n < smallReqs && n < cap(t.vals) && n < cap(t.ids) {
		t.ids = t.ids[:n+1]
		t.ids[n] = id
		t.vals = t.vals[:n+1]
		t.vals[n] = request{}
		return &t.vals[n]
	}
	return t.addSlow(id)
}

func (t *reqTable) addSlow(id uint64) *request {
	if t.big == nil && len(t.ids) == smallReqs {
		t.big = make(map[uint64][]request, 2*smallReqs)
		for i, x := range t.ids {
			t.big[x] = append(t.big[x], t.vals[i])
		}
		t.n = len(t.ids)
		t.ids, t.vals = nil, nil
	}
	if t.big != nil {
		q := append(t.big[id], request{})
		t.big[id] = q
		t.n++
		return &q[len(q)-1]
	}
	t.ids = append(t.ids, id)
	t.vals = append(t.vals, request{})
	return &t.vals[len(t.vals)-1]
}

// find is get that also returns where the request is, for kill: its index
// in the small table, -1 in the map.
func (t *reqTable) find(id uint64) (*request, int) {
	if i := t.pre; t.first(i, id) {
		// (complete inlines this case: find is not inlined, with the
		// call below.)
		return &t.vals[i], i
	}
	return t.findSlow(id)
}

// first says whether the small table's request i, which is pre (every
// request before it is dead), has the given id: it is then the oldest
// one live.
func (t *reqTable) first(i int, id uint64) bool {
	return uint(i) < uint(len(t.ids)) && t.ids[i] == id
}

func (t *reqTable) findSlow(id uint64) (*request, int) {
	if t.big != nil {
		return t.get(id), -1
	}
	for i, x := range t.ids {
		if x == id && t.dead&(1<<i) == 0 {
			return &t.vals[i], i
		}
	}
	return nil, -1
}

// kill removes the request find returned at index i (del when i < 0):
// in the small table it is only marked, and find passes over it until
// compact removes it.
func (t *reqTable) kill(id uint64, i int) {
	if t.big == nil && i >= 0 {
		t.dead |= 1 << i
		if i == t.pre {
			t.pre = bits.TrailingZeros32(^t.dead)
		}
		return
	}
	t.del(id)
}

// compact removes the requests kill marked, keeping the others in
// creation order.
func (t *reqTable) compact() {
	if t.dead == 0 {
		return
	}
	if t.dead == 1<<len(t.ids)-1 {
		// All of them (a Wait/Test call that completed every request
		// in flight: the common case).
		t.ids, t.vals = t.ids[:0], t.vals[:0]
		t.dead, t.pre = 0, 0
		return
	}
	// From the first marked one (the newest request alone, after an
	// MPI_Wait, costs no copy).
	j := bits.TrailingZeros32(t.dead)
	for i := j + 1; i < len(t.ids); i++ {
		if t.dead&(1<<i) != 0 {
			continue
		}
		t.ids[j], t.vals[j] = t.ids[i], t.vals[i]
		j++
	}
	t.ids, t.vals = t.ids[:j], t.vals[:j]
	t.dead, t.pre = 0, 0
}

// del removes the oldest live request with the given id.
func (t *reqTable) del(id uint64) {
	if t.big != nil {
		q := t.big[id]
		switch len(q) {
		case 0:
			return
		case 1:
			delete(t.big, id)
		default:
			t.big[id] = q[1:]
		}
		t.n--
		return
	}
	for i, x := range t.ids {
		if x == id {
			// Keep creation order: it decides which of several requests
			// sharing an id a later completion applies to.
			copy(t.ids[i:], t.ids[i+1:])
			copy(t.vals[i:], t.vals[i+1:])
			t.ids, t.vals = t.ids[:len(t.ids)-1], t.vals[:len(t.vals)-1]
			return
		}
	}
}

// each calls f for every live request.
func (t *reqTable) each(f func(*request)) {
	for i := range t.vals {
		f(&t.vals[i])
	}
	for _, q := range t.big {
		for i := range q {
			f(&q[i])
		}
	}
}
