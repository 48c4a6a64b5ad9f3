package tracetest

import (
	"fmt"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// More MPI calls for analyzer fixtures: persistent requests, the rest of
// the Wait/Test family and more collectives.

// SendInit records MPI_Send_init and returns its persistent request.
func (k *Rank) SendInit(dest, tag int32, bytes uint64, dur int64, opts ...Opt) Req {
	id := k.newReq(reqInfo{persistent: true})
	k.Call("MPI_Send_init", dur, traceformat.Event{
		Attr:     traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrReqs,
		SendPeer: dest, SendTag: tag, SendBytes: bytes, Reqs: []uint64{id}}, opts...)
	return Req(id)
}

// RecvInit records MPI_Recv_init and returns its persistent request; its
// completions report status (src, tag).
func (k *Rank) RecvInit(src, tag int32, bytes uint64, dur int64, opts ...Opt) Req {
	id := k.newReq(reqInfo{recv: true, persistent: true, st: traceformat.Status{Source: src, Tag: tag}})
	k.Call("MPI_Recv_init", dur, traceformat.Event{
		Attr:     traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrReqs,
		RecvPeer: src, RecvTag: tag, RecvBytes: bytes, Reqs: []uint64{id}}, opts...)
	return Req(id)
}

// Start records MPI_Start of a persistent request.
func (k *Rank) Start(req Req, dur int64) *Rank {
	return k.starts("MPI_Start", []Req{req}, dur)
}

// Startall records MPI_Startall.
func (k *Rank) Startall(reqs []Req, dur int64) *Rank {
	return k.starts("MPI_Startall", reqs, dur)
}

func (k *Rank) starts(name string, reqs []Req, dur int64) *Rank {
	e := traceformat.Event{Attr: traceformat.AttrReqs}
	for _, r := range reqs {
		in, ok := k.reqs[uint64(r)]
		if !ok || !in.persistent {
			panic(fmt.Sprintf("tracetest: rank %d starts request %d, which is not persistent", k.n, r))
		}
		in.cancelled = false // a new operation: only a Cancel after this start cancels it
		k.reqs[uint64(r)] = in
		e.Reqs = append(e.Reqs, uint64(r))
	}
	return k.Call(name, dur, e)
}

// RequestFree records MPI_Request_free.
func (k *Rank) RequestFree(req Req, dur int64) *Rank {
	delete(k.reqs, uint64(req))
	return k.Call("MPI_Request_free", dur, traceformat.Event{Attr: traceformat.AttrReqs, Reqs: []uint64{uint64(req)}})
}

// Waitsome records MPI_Waitsome completing reqs (the ones it reports).
func (k *Rank) Waitsome(reqs []Req, dur int64, opts ...Opt) *Rank {
	return k.complete("MPI_Waitsome", reqs, dur, opts)
}

// Testsome records MPI_Testsome completing reqs (possibly none).
func (k *Rank) Testsome(reqs []Req, dur int64, opts ...Opt) *Rank {
	return k.complete("MPI_Testsome", reqs, dur, opts)
}

// Testall records MPI_Testall; done says whether it completed reqs.
func (k *Rank) Testall(reqs []Req, done bool, dur int64, opts ...Opt) *Rank {
	if !done {
		reqs = nil
	}
	opts = append(opts, func(k *Rank, e *traceformat.Event) { e.Attr |= traceformat.AttrFlag; e.Flag = done })
	return k.complete("MPI_Testall", reqs, dur, opts)
}

// Gather records MPI_Gather to root.
func (k *Rank) Gather(root int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Gather", dur, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrSendBytes, Root: root, SendBytes: bytes}, opts...)
}

// Scatter records MPI_Scatter from root.
func (k *Rank) Scatter(root int32, bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Scatter", dur, traceformat.Event{
		Attr: traceformat.AttrRoot | traceformat.AttrRecvBytes, Root: root, RecvBytes: bytes}, opts...)
}

// Allgather records MPI_Allgather.
func (k *Rank) Allgather(bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Allgather", dur, traceformat.Event{
		Attr: traceformat.AttrSendBytes | traceformat.AttrRecvBytes, SendBytes: bytes, RecvBytes: bytes}, opts...)
}

// Alltoall records MPI_Alltoall.
func (k *Rank) Alltoall(bytes uint64, dur int64, opts ...Opt) *Rank {
	return k.Call("MPI_Alltoall", dur, traceformat.Event{
		Attr: traceformat.AttrSendBytes | traceformat.AttrRecvBytes, SendBytes: bytes, RecvBytes: bytes}, opts...)
}

// System records a call of System class (MPI_Comm_rank, MPI_Type_commit …).
func (k *Rank) System(name string, dur int64, opts ...Opt) *Rank {
	return k.Call(name, dur, traceformat.Event{}, opts...)
}

// Self is MPI_COMM_SELF of the rank (local index 1), for On.
func (k *Rank) Self() *Comm {
	for c, local := range k.comms {
		if local == traceformat.CommSelf {
			return c
		}
	}
	c := &Comm{ID: traceformat.SelfCommID(uint32(k.n)), Members: []int{k.n}}
	k.comms[c] = traceformat.CommSelf
	return c
}

// Cancel records an MPI_Cancel of req that succeeds: its completion then
// reports it cancelled (a receive with no status, a send with
// traceformat.Cancelled).
func (k *Rank) Cancel(req Req, dur int64) *Rank {
	if in, ok := k.reqs[uint64(req)]; ok {
		in.cancelled = true
		k.reqs[uint64(req)] = in
	}
	return k.Call("MPI_Cancel", dur, traceformat.Event{Attr: traceformat.AttrReqs, Reqs: []uint64{uint64(req)}})
}

// LoadBias makes the rank's program loaded bias bytes higher, as address-
// space randomization does: its recorded return addresses and module map
// move by bias, the addresses inside the executable do not.
func (k *Rank) LoadBias(bias uint64) *Rank { k.bias = bias; return k }

// Modules adds modules to the rank's module map after its program's (ids
// 1, 2 …, in order): shared libraries, or the source files of a Python
// program (traceformat.SourceModulePrefix).
func (k *Rank) Modules(mods ...*tracepb.Module) *Rank {
	k.mods = append(k.mods, mods...)
	return k
}

// Ibcast records MPI_Ibcast from root and returns its request.
func (k *Rank) Ibcast(root int32, bytes uint64, dur int64, opts ...Opt) Req {
	id := k.newReq(reqInfo{})
	k.Call("MPI_Ibcast", dur, traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrRoot | traceformat.AttrSendBytes,
		Reqs: []uint64{id}, Root: root, SendBytes: bytes}, opts...)
	return Req(id)
}

// Iallreduce records MPI_Iallreduce of bytes and returns its request.
func (k *Rank) Iallreduce(bytes uint64, dur int64, opts ...Opt) Req {
	id := k.newReq(reqInfo{})
	k.Call("MPI_Iallreduce", dur, traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrSendBytes | traceformat.AttrRecvBytes,
		Reqs: []uint64{id}, SendBytes: bytes, RecvBytes: bytes}, opts...)
	return Req(id)
}

// Ibarrier records MPI_Ibarrier and returns its request.
func (k *Rank) Ibarrier(dur int64, opts ...Opt) Req {
	id := k.newReq(reqInfo{})
	k.Call("MPI_Ibarrier", dur, traceformat.Event{Attr: traceformat.AttrReqs, Reqs: []uint64{id}}, opts...)
	return Req(id)
}
