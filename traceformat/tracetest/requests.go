package tracetest

import (
	"fmt"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Requests of other kinds and intercommunicators, for the analyzer's
// fixtures of docs/characteristics.md §8.8 and §8.9.

// Creates records a call named name (MPI_File_iwrite_at,
// MPI_Grequest_start, MPI_Rget …) that creates a request the analyzer
// matches nothing with, and returns it; a name ending in _init makes it
// persistent (MPI_Psend_init).
func (k *Rank) Creates(name string, dur int64, opts ...Opt) Req {
	persistent := len(name) > 5 && name[len(name)-5:] == "_init"
	id := k.newReq(reqInfo{persistent: persistent})
	k.Call(name, dur, traceformat.Event{Attr: traceformat.AttrReqs, Reqs: []uint64{id}}, opts...)
	return Req(id)
}

// CollInit records a persistent collective's creation (name such as
// MPI_Barrier_init or MPI_Bcast_init; root is recorded when ≥ 0 or one of
// traceformat's special values, ignored when -1) and returns its request,
// to be started with Start.
func (k *Rank) CollInit(name string, root int32, dur int64, opts ...Opt) Req {
	id := k.newReq(reqInfo{persistent: true})
	e := traceformat.Event{Attr: traceformat.AttrReqs, Reqs: []uint64{id}}
	if root != -1 {
		e.Attr |= traceformat.AttrRoot
		e.Root = root
	}
	k.Call(name, dur, e, opts...)
	return Req(id)
}

// InterComm is an intercommunicator between two groups of world ranks.
type InterComm struct {
	ID   uint64
	A, B []int
	// side is the communicator as each rank sees it (its group local).
	side map[int]*Comm
}

// NewInterComm declares an intercommunicator between groups a and b (world
// ranks in group-rank order); each member must create it with
// IntercommCreate before using it (with On(ic.Of(rank))).
func (r *Run) NewInterComm(a, b []int) *InterComm {
	ic := &InterComm{ID: uint64(len(r.comms)) * 1000, A: a, B: b, side: map[int]*Comm{}}
	ca, cb := &Comm{ID: ic.ID, Members: a}, &Comm{ID: ic.ID, Members: b}
	r.comms = append(r.comms, ca)
	for _, m := range a {
		ic.side[m] = ca
	}
	for _, m := range b {
		ic.side[m] = cb
	}
	return ic
}

// Of is the intercommunicator as world rank n sees it, for On.
func (ic *InterComm) Of(n int) *Comm { return ic.side[n] }

// IntercommCreate records MPI_Intercomm_create of ic on the rank.
func (k *Rank) IntercommCreate(ic *InterComm, dur int64) *Rank {
	c := ic.side[k.n]
	if c == nil {
		panic(fmt.Sprintf("tracetest: rank %d is not a member of the intercommunicator it creates", k.n))
	}
	remote := ic.B
	if ic.side[ic.B[0]] == c {
		remote = ic.A
	}
	local := uint32(len(k.commDef))
	k.comms[c] = local
	k.commDef = append(k.commDef, &tracepb.Communicator{Local: local, Id: ic.ID, Members: u32s(c.Members),
		RemoteMembers: u32s(remote), Inter: true, Parent: traceformat.CommWorld, CreatedBy: k.r.fn("MPI_Intercomm_create")})
	return k.Call("MPI_Intercomm_create", dur, traceformat.Event{Attr: traceformat.AttrNewComm, NewComm: local})
}
