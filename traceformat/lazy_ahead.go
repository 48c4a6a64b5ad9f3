package traceformat

// maxAhead bounds StatusAhead's walk: a request completed further on in
// the batch is left for its completion to resolve.
const maxAhead = 1024

// StatusAhead looks through the next events of the batch, past the one
// Next handed out last, for the first call that names request id, and
// returns the status that call recorded for it when it completed the
// request. ok is false when no call of the batch within maxAhead events
// names it (its completion is further on, or in a later batch), when the
// first call that does is not a completion with a status (MPI_Cancel,
// MPI_Request_free), or when the batch is walked by nextSlow.
//
// The analyzer matches a wildcard MPI_Irecv by its status: knowing it
// when the request is posted matches it where MPI does, among the
// receives of its key in posting order. scratch holds the walk's state
// and keeps its buffers between calls; the batch itself is unchanged.
func (lb *LazyBatch) StatusAhead(id uint64, scratch *LazyBatch) (st Status, ok bool) {
	if lb.slow != nil || lb.i >= lb.n {
		return Status{}, false
	}
	lc, reqBuf, stBuf := scratch.lc, scratch.reqBuf, scratch.stBuf
	*scratch = *lb
	// What Next writes besides the positions held in the struct: the
	// rare columns' positions and the current event's buffers.
	scratch.lc = append(lc[:0], lb.lc...)
	if cap(reqBuf) < cap(lb.reqBuf) {
		reqBuf = make([]uint64, cap(lb.reqBuf))
	}
	if cap(stBuf) < cap(lb.stBuf) {
		stBuf = make([]Status, cap(lb.stBuf))
	}
	scratch.reqBuf, scratch.stBuf = reqBuf, stBuf
	var e Event
	for range maxAhead {
		if !scratch.Next(&e) {
			break
		}
		if e.Attr&AttrReqs == 0 {
			continue
		}
		for k, r := range e.Reqs {
			if r != id {
				continue
			}
			if e.Attr&AttrStatus == 0 || k >= len(e.Status) {
				return Status{}, false
			}
			return e.Status[k], true
		}
	}
	return Status{}, false
}
