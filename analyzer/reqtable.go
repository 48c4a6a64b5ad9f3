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
	vals []request // the small table, in creation order (each with its id)
	big  map[uint64][]request
	n    int // live requests in big
	// A Wait/Test call's completions are removed together when it is
	// done (compact): completions come oldest first, and removing each at
	// once would shift the rest of the table every time. Until then the
	// small table's completed requests are those before pre and those
	// dead marks (by index). pre is the first live request: where find
	// looks first. A Wait/Test call mostly completes the table in the
	// order its requests were made, each then the first live one (it
	// only moves pre), and a request whose older ones are all completed
	// is the oldest live one of its id (ids repeat: Open MPI's shared
	// handles).
	dead uint32
	pre  int
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
	for i := range t.vals {
		if t.vals[i].id == id {
			return &t.vals[i]
		}
	}
	return nil
}

// put adds a request, after any live request with the same id.
func (t *reqTable) put(id uint64, r request) {
	rq := t.slot(id)
	*rq = r
	rq.id = id
}

// add adds a zero request, after any live request with the same id, and
// returns it to be filled in place (a request is large: building it on the
// stack and copying it in showed in the replay's profile). The pointer is
// valid until the next put, add or del.
func (t *reqTable) add(id uint64) *request {
	rq := t.slot(id)
	*rq = request{id: id}
	return rq
}

// slot is add without clearing the request but its id: it may hold one
// completed before, and the caller writes every other field (create).
func (t *reqTable) slot(id uint64) *request {
	// The common case: the small table with room (the map has no
	// small table: vals is nil then).
	if n := len(t.vals); n < cap(t.vals) && n < smallReqs {
		t.vals = t.vals[:n+1]
		rq := &t.vals[n]
		rq.id = id
		return rq
	}
	return t.addSlow(id)
}

func (t *reqTable) addSlow(id uint64) *request {
	if t.big == nil && len(t.vals) == smallReqs {
		t.big = make(map[uint64][]request, 2*smallReqs)
		for _, r := range t.vals {
			t.big[r.id] = append(t.big[r.id], r)
		}
		t.n = len(t.vals)
		t.vals = nil
	}
	if t.big != nil {
		q := append(t.big[id], request{id: id})
		t.big[id] = q
		t.n++
		return &q[len(q)-1]
	}
	t.vals = append(t.vals, request{id: id})
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
	return uint(i) < uint(len(t.vals)) && t.vals[i].id == id
}

func (t *reqTable) findSlow(id uint64) (*request, int) {
	if t.big != nil {
		return t.get(id), -1
	}
	for i := t.pre; i < len(t.vals); i++ {
		if t.vals[i].id == id && t.dead&(1<<i) == 0 {
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
		if i != t.pre {
			t.dead |= 1 << i
			return
		}
		t.pre++
		if t.dead != 0 {
			// Past those completed after it.
			t.pre = bits.TrailingZeros64(^(uint64(t.dead) | (1<<t.pre - 1)))
		}
		return
	}
	t.del(id)
}

// compact removes the requests completed since the last compact, keeping
// the others in creation order.
func (t *reqTable) compact() {
	if t.pre == len(t.vals) {
		// All of them (a Wait/Test call that completed every request
		// in flight: the common case), or none in the small table.
		if t.pre != 0 {
			t.vals = t.vals[:0]
			t.dead, t.pre = 0, 0
		}
		return
	}
	dead := uint64(t.dead) | (1<<t.pre - 1)
	if dead == 0 {
		return
	}
	// From the first completed one (the newest request alone, after an
	// MPI_Wait, costs no copy).
	j := bits.TrailingZeros64(dead)
	for i := j + 1; i < len(t.vals); i++ {
		if dead&(1<<i) != 0 {
			continue
		}
		t.vals[j] = t.vals[i]
		j++
	}
	t.vals = t.vals[:j]
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
	for i := range t.vals {
		if t.vals[i].id == id {
			// Keep creation order: it decides which of several requests
			// sharing an id a later completion applies to.
			copy(t.vals[i:], t.vals[i+1:])
			t.vals = t.vals[:len(t.vals)-1]
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
