package analyzer

// reqTable holds a rank's live requests by id. Programs usually have a
// handful of requests in flight, for which a linear scan of a short slice
// beats a map; past smallReqs live requests the table switches to a map.
type reqTable struct {
	ids  []uint64
	vals []request
	big  map[uint64]*request
}

const smallReqs = 32

// get returns the request with the given id, or nil. The pointer is valid
// until the next put or del.
func (t *reqTable) get(id uint64) *request {
	if t.big != nil {
		return t.big[id]
	}
	for i, x := range t.ids {
		if x == id {
			return &t.vals[i]
		}
	}
	return nil
}

// put adds or replaces a request.
func (t *reqTable) put(id uint64, r request) {
	if t.big != nil {
		t.putBig(id, r)
		return
	}
	if p := t.get(id); p != nil {
		*p = r
		return
	}
	if len(t.ids) == smallReqs {
		t.big = make(map[uint64]*request, 2*smallReqs)
		for i, x := range t.ids {
			v := t.vals[i]
			t.big[x] = &v
		}
		t.ids, t.vals = nil, nil
		t.putBig(id, r)
		return
	}
	t.ids = append(t.ids, id)
	t.vals = append(t.vals, r)
}

// del removes a request.
func (t *reqTable) del(id uint64) {
	if t.big != nil {
		delete(t.big, id)
		return
	}
	for i, x := range t.ids {
		if x == id {
			last := len(t.ids) - 1
			t.ids[i], t.vals[i] = t.ids[last], t.vals[last]
			t.ids, t.vals = t.ids[:last], t.vals[:last]
			return
		}
	}
}

// putBig is apart so that only the map case moves the request to the heap.
func (t *reqTable) putBig(id uint64, r request) {
	v := new(request)
	*v = r
	t.big[id] = v
}
