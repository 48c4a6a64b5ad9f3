package otf2

import (
	"strings"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Persistent requests. OTF2 has no record for MPI_Send_init,
// MPI_Recv_init or MPI_Barrier_init and co.: Score-P (and Export) write
// each MPI_Start of one as the start of a nonblocking operation
// (MPI_ISEND, MPI_IRECV_REQUEST, NON_BLOCKING_COLLECTIVE_REQUEST) and its
// completion as that of any request. Our format records the arguments at
// the creating call and MPI_Start names its request, so the converter
// gives each creating call a request and binds every start to one of them
// (startPersistent): a send to the inactive send request with the same
// destination, tag, communicator and size (else the oldest inactive one
// never started), a receive or collective to the oldest inactive one of
// its kind, in the order the program created them. The creating call is
// held back like an MPI_Irecv until its first start (and, for a receive
// or collective, its first completion) gives its arguments.

type persKind uint8

const (
	persSend persKind = iota
	persRecv
	persColl
)

type persReq struct {
	id     uint64 // our request id
	kind   persKind
	bound  bool // its creating call has its arguments
	active bool // started and not completed
	// A send's arguments, once bound.
	peer, tag int32
	comm      uint32
	bytes     uint64
}

// isPersistentInit tells whether f creates a persistent request.
func isPersistentInit(f *fnInfo) bool {
	return f.info.Nonblocking && strings.HasSuffix(f.name, "_init")
}

// persistentInit gives the creating call e of f its request and queues it.
func (c *converter) persistentInit(e *traceformat.Event, f *fnInfo) {
	p := &persReq{id: c.nextReq, kind: persRecv}
	c.nextReq++
	switch {
	case f.info.Class == tracepb.Function_COLLECTIVE:
		p.kind = persColl
	case strings.Contains(strings.ToLower(mpiBase(f.name)), "send"):
		p.kind = persSend
	}
	e.Attr |= traceformat.AttrReqs
	e.Reqs = append(e.Reqs[:0], p.id)
	c.pers = append(c.pers, p)
	c.persByID[p.id] = p
	c.persistAt[p.id] = c.pendBase + len(c.pend) // the call's index once pushed
}

func mpiBase(name string) string {
	if i := strings.IndexByte(name, '_'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// startPersistent binds the start record r of an MPI_Start/MPI_Startall
// call to a persistent request; false when none fits (the record is then
// taken as a nonblocking call's own).
func (c *converter) startPersistent(r *rec) bool {
	kind := persRecv
	switch r.kind {
	case kIsend:
		kind = persSend
	case kNBCRequest:
		kind = persColl
	}
	lc, commOK := uint32(0), true
	if kind == persSend {
		lc, commOK = c.comm(uint32(r.comm))
		if !commOK {
			return false
		}
	}
	var p *persReq
	for _, q := range c.pers {
		if q.kind != kind || q.active {
			continue
		}
		if kind == persSend && q.bound {
			if q.peer == int32(r.ref) && q.tag == int32(r.tag) && q.comm == lc && q.bytes == uint64(r.len) {
				p = q
				break
			}
			continue
		}
		if p == nil {
			p = q
			if kind != persSend {
				break
			}
		}
	}
	if p == nil {
		c.unboundStarts++
		return false
	}
	p.active = true
	c.reqs[uint64(r.req)] = p.id
	e := &c.cur
	e.Attr |= traceformat.AttrReqs
	e.Reqs = append(e.Reqs, p.id)
	if p.bound {
		return true
	}
	p.bound = true
	at := c.persistAt[p.id]
	delete(c.persistAt, p.id)
	if at < c.pendBase {
		return true // already written (maxPending)
	}
	init := &c.pend[at-c.pendBase]
	switch kind {
	case persSend:
		p.peer, p.tag, p.comm, p.bytes = int32(r.ref), int32(r.tag), lc, uint64(r.len)
		init.Attr |= traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrComm
		init.Comm, init.SendPeer, init.SendTag, init.SendBytes = lc, p.peer, p.tag, p.bytes
	case persRecv:
		// The completion gives source, tag, communicator and size
		// (completeIrecv), as of an MPI_Irecv.
		init.Attr |= traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrComm
		init.Comm, init.RecvPeer, init.RecvTag = traceformat.CommWorld, traceformat.AnySource, traceformat.AnyTag
		c.irecvAt[uint64(r.req)] = at
	case persColl:
		init.Attr |= traceformat.AttrComm
		init.Comm = traceformat.CommWorld
		c.collAt[uint64(r.req)] = at
	}
	return true
}

// persistentDone marks our request id inactive if it is persistent.
func (c *converter) persistentDone(id uint64) {
	if p := c.persByID[id]; p != nil {
		p.active = false
	}
}
