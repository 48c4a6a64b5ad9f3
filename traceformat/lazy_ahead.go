package traceformat

import "encoding/binary"

// maxAhead bounds StatusAhead's walk: a request completed further on in
// the batch is left for its completion to resolve.
const maxAhead = 1024

// StatusAhead looks through the next events of the batch, past the one
// Next handed out last, for the first call that names request id other
// than calls of function pass (the trace's MPI_Cancel, which names the
// request it cancels and completes nothing), and returns the status that
// call recorded for it when it completed the request. ok is false when
// no call of the batch within maxAhead events names it (its completion is
// further on, or in a later batch), when the first call that does is not
// a completion with a status (MPI_Request_free), or when the batch is
// walked by nextSlow.
//
// The analyzer matches a wildcard MPI_Irecv by its status: knowing it
// before later receives are posted matches it where MPI does, among the
// receives of its key in posting order. The walk reads only the columns
// that say which requests an event names and their statuses (shape,
// request counts and ids, status sources and tags), as Next reads them,
// from positions of its own: the batch is unchanged.
func (lb *LazyBatch) StatusAhead(id uint64, pass uint32) (st Status, ok bool) {
	if lb.slow != nil || lb.i >= lb.n {
		return Status{}, false
	}
	raw, shapes := lb.raw, lb.shapes
	ps, pn, pr, psrc, ptag := int(lb.pShape), int(lb.pNReqs), int(lb.pReqs), int(lb.pSrc), int(lb.pTag)
	prev := lb.prevReq
	rcap, scap := uint64(cap(lb.reqBuf)), cap(lb.stBuf)
	for i := lb.i; i < min(lb.n, lb.i+maxAhead); i++ {
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
				return Status{}, false
			}
			continue
		}
		m := min(nst, scap)
		if at >= m {
			return Status{}, false
		}
		for k := range m {
			var src, tag uint64
			src, psrc = aheadVarint(raw, psrc)
			tag, ptag = aheadVarint(raw, ptag)
			if k == at {
				return Status{Source: zz32(src), Tag: zz32(tag)}, true
			}
		}
	}
	return Status{}, false
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
