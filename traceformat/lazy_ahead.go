package traceformat

import (
	"encoding/binary"
	"math"
	"slices"
)

// maxAhead bounds StatusAhead's walk: a request completed further on in
// the batch is left for its completion to resolve.
const maxAhead = 1024

// Ahead is what a walk ahead for a request's completion found.
type Ahead uint8

const (
	// AheadNotFound: no call of the walk names the request.
	AheadNotFound Ahead = iota
	// AheadFound: the first call that names it completed it with a status.
	AheadFound
	// AheadNamed: the first call that names it records no status for it
	// (MPI_Request_free): its status is not to be had.
	AheadNamed
)

// StatusAhead looks through the next events of the batch, past the one
// Next handed out last, for the first call that names request id other
// than calls of function pass (the trace's MPI_Cancel, which names the
// request it cancels and completes nothing), and returns the status that
// call recorded for it when it completed the request. ok is false when
// no call of the batch within maxAhead events names it (its completion is
// further on, or in a later batch), or when the first call that does is
// not a completion with a status (MPI_Request_free).
//
// The analyzer matches a wildcard MPI_Irecv by its status: knowing it
// before later receives are posted matches it where MPI does, among the
// receives of its key in posting order. The walk reads only the columns
// that say which requests an event names and their statuses (shape,
// request counts and ids, status sources and tags), as Next reads them,
// from positions of its own: the batch is unchanged.
func (lb *LazyBatch) StatusAhead(id uint64, pass uint32) (st Status, ok bool) {
	st, a := lb.statusAhead(id, pass, maxAhead)
	return st, a == AheadFound
}

// FindStatus is StatusAhead through the rest of the batch, however long,
// saying whether the request was named at all: a caller that goes on
// into the batches that follow (the analyzer's wildcard receives) stops
// at AheadNamed. A batch just read is walked from its first event.
func (lb *LazyBatch) FindStatus(id uint64, pass uint32) (Status, Ahead) {
	return lb.statusAhead(id, pass, math.MaxInt32)
}

// statusAhead walks at most limit events.
func (lb *LazyBatch) statusAhead(id uint64, pass uint32, limit int) (Status, Ahead) {
	if lb.slow != nil {
		return lb.slowStatusAhead(id, pass, limit)
	}
	if lb.i >= lb.n {
		return Status{}, AheadNotFound
	}
	raw, shapes := lb.raw, lb.shapes
	ps, pn, pr, psrc, ptag := int(lb.pShape), int(lb.pNReqs), int(lb.pReqs), int(lb.pSrc), int(lb.pTag)
	prev := lb.prevReq
	rcap, scap := uint64(cap(lb.reqBuf)), cap(lb.stBuf)
	for i, end := int(lb.i), min(int(lb.n), int(lb.i)+limit); i < end; i++ {
		var s uint64
		s, ps = aheadVarint(raw, ps)
		if s >= uint64(len(shapes)) {
			// (Next's zero shape: cannot happen in a checked batch.)
			if len(shapes) == 0 {
				continue
			}
			s = 0
		}
		sh := &shapes[s]
		a := sh.attr &^ staticAttrs
		nst, at := 1, -1
		if a&AttrReqs != 0 {
			var v uint64
			v, pn = aheadVarint(raw, pn)
			m := int(min(uint64(uint32(v)), rcap))
			for k := range m {
				v, pr = aheadVarint(raw, pr)
				prev += uint64(int64(v>>1) ^ -int64(v&1))
				if prev == id && at < 0 {
					at = k
				}
			}
			nst = m
		}
		if at >= 0 && sh.fn == pass {
			at = -1
		}
		if a&AttrStatus == 0 {
			if at >= 0 {
				return Status{}, AheadNamed
			}
			continue
		}
		m := min(nst, scap)
		if at >= m {
			return Status{}, AheadNamed
		}
		for k := range m {
			var src, tag uint64
			src, psrc = aheadVarint(raw, psrc)
			tag, ptag = aheadVarint(raw, ptag)
			if k == at {
				return Status{Source: zz32(src), Tag: zz32(tag)}, AheadFound
			}
		}
	}
	return Status{}, AheadNotFound
}

// slowStatusAhead is statusAhead for a batch decoded up front (nextSlow):
// a copy of its cursor walks the decoded events.
func (lb *LazyBatch) slowStatusAhead(id uint64, pass uint32, limit int) (Status, Ahead) {
	c := lb.cursor
	var e Event
	for n := 0; n < limit && c.Next(lb.slow, &e); n++ {
		at := slices.Index(e.Reqs, id)
		if at < 0 || e.Func == pass {
			continue
		}
		if at >= len(e.Status) {
			return Status{}, AheadNamed
		}
		return e.Status[at], AheadFound
	}
	return Status{}, AheadNotFound
}

// aheadVarint decodes the varint at raw[p:] of a column Next reads at
// every event (at most 8 bytes long, raw holding rawSlack bytes after the
// columns: LazyBatch.check) and returns it with the position after it.
func aheadVarint(raw []byte, p int) (uint64, int) {
	w := binary.LittleEndian.Uint64(raw[p : p+8])
	if w&0x80 == 0 {
		return w & 0x7f, p + 1
	}
	v, n := varint8(w)
	return v, p + n
}

// ShapeFunc is the function of the batch's shape s (Shape), 0 for none.
func (lb *LazyBatch) ShapeFunc(s int) uint32 {
	if s < 0 || s >= len(lb.shapes) {
		return 0
	}
	return lb.shapes[s].fn
}
