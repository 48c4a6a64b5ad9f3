package analyzer

import (
	"strings"
	"unique"

	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// op is what the replay does with a call. (opInit, opFinalize and
// opPcontrol follow each other: fnInfo.prelude tests the range.)
type op uint8

const (
	opOther      op = iota // time only (probes, cancel, point-to-point odds and ends)
	opSystem               // System Time
	opInit                 // MPI_Init, MPI_Init_thread
	opFinalize             // MPI_Finalize
	opPcontrol             // MPI_Pcontrol: interval and section marks
	opSend                 // blocking send
	opRecv                 // blocking receive (MPI_Recv)
	opSendrecv             // MPI_Sendrecv, MPI_Sendrecv_replace
	opIsend                // nonblocking send start
	opIrecv                // nonblocking receive start
	opSendInit             // persistent send creation
	opRecvInit             // persistent receive creation
	opStart                // MPI_Start, MPI_Startall
	opComplete             // Wait/Test family
	opFree                 // MPI_Request_free
	opColl                 // blocking collective
	opICollStart           // nonblocking collective start
	opPCollInit            // persistent collective creation (MPI_Barrier_init …): MPI_Start starts it
	// Matched probes (MPI 3): MPI_Mprobe and a successful MPI_Improbe take
	// the message out of matching; MPI_Mrecv and MPI_Imrecv then receive it
	// by its message handle, matching nothing themselves.
	opMprobe  // MPI_Mprobe: blocking, waits for the sender like a receive
	opImprobe // MPI_Improbe: matches only when it found a message
	opMrecv   // MPI_Mrecv
	opImrecv  // MPI_Imrecv: a request whose message is already matched
	// opProbe is MPI_Probe: it waits for a late sender like a receive but
	// takes nothing (the receive that follows matches the message).
	opProbe
	// opIsendrecv is MPI_Isendrecv[_replace] (MPI 4): its send is posted
	// at the call, its receive is a request completed by a Wait/Test.
	opIsendrecv
)

// fnInfo is the replay's view of a Function definition.
type fnInfo struct {
	name  string
	op    op
	class tracepb.Function_Class
	shape tracepb.Function_Collective
	wait  bool // a Wait* call (counted in Wait Number even if it completes nothing)
	// barrier: MPI_Barrier, which synchronizes
	// without moving data (dependsOnEntries).
	barrier bool
	// pairwise: MPI_Alltoall, MPI_Alltoallv or MPI_Alltoallw (blocking,
	// nonblocking or persistent), whose members exchange data pair by
	// pair: a member that receives nothing waits for nobody
	// (dependsOnEntries).
	pairwise bool
	// mayBlock: a send that may wait for its receive to be posted: a
	// blocking MPI_Send, MPI_Ssend or MPI_Rsend (not MPI_Bsend), or a
	// synchronous nonblocking one, MPI_Issend or MPI_Ssend_init, whose
	// completing wait does.
	mayBlock bool
	// sync: a synchronous blocking send (MPI_Ssend), which cannot
	// complete before its receive is posted (lateSync).
	sync bool
	// persistentInit: a function named *_init creates a persistent
	// request (MPI_Psend_init, MPI_Allreduce_init); cancel: MPI_Cancel,
	// whose recorded request it does not create (createOther).
	persistentInit, cancel bool
	ok                     bool // classified (replayer.fns)
	// how a step replays its calls (stepHow).
	how uint8
	// endsSpan: its calls can wait for another rank (causes.go).
	endsSpan bool
	// posts: a nonblocking send, which hands its entry to the receiver
	// (a fixed point of the controlled logical clock, clc.go).
	posts bool
	// prelude: MPI_Init, MPI_Finalize, MPI_Pcontrol or MPI_Abort, which
	// replayer.prelude handles (one test per call instead of the range's).
	prelude bool
	// abort: MPI_Abort, whose call site says where the program gave up.
	abort bool
	// nameH keeps name the canonical copy of its bytes (unique.Make),
	// shared by every rank's definition of the function, so that the
	// members of a collective instance compare their names by pointer
	// (sameFn).
	nameH unique.Handle[string]
}

// derive sets what the replay tests at every call of fi that its
// operation decides (how, endsSpan, posts).
func (fi *fnInfo) derive() {
	fi.how = stepHow(fi)
	fi.endsSpan = endsSpan(fi.op)
	fi.posts = fi.op == opIsend || fi.op == opIsendrecv
	fi.prelude = fi.op >= opInit && fi.op <= opPcontrol || fi.abort
}

// classify is the replay's view of function f. Its class, shape and
// whether it starts a nonblocking collective are the trace's (the tracer
// writes mpifunc's classification); within a class, the calls the replay
// treats apart are told by their name as mpifunc spells it (mpifunc.Base:
// PMPI_, Fortran and large-count spellings alike).
func classify(f *tracepb.Function) fnInfo {
	h := unique.Make(f.Name)
	in := fnInfo{name: h.Value(), nameH: h, class: f.Class, shape: f.Collective}
	b := mpifunc.Base(f.Name)
	in.persistentInit, in.cancel = strings.HasSuffix(b, "_init"), b == "Cancel"
	in.abort = b == "Abort"
	switch f.Class {
	case tracepb.Function_COLLECTIVE:
		in.op = opColl
		in.barrier = b == "Barrier"
		switch b {
		case "Alltoall", "Alltoallv", "Alltoallw", "Ialltoall", "Ialltoallv", "Ialltoallw",
			"Alltoall_init", "Alltoallv_init", "Alltoallw_init":
			in.pairwise = true
		}
		if f.Nonblocking {
			in.op = opICollStart
			if in.persistentInit {
				in.op = opPCollInit
			}
		}
		return in
	case tracepb.Function_POINT_TO_POINT:
	default:
		switch b {
		case "Init", "Init_thread":
			in.op = opInit
		case "Finalize":
			in.op = opFinalize
		case "Pcontrol":
			in.op = opPcontrol
		default:
			in.op = opSystem
		}
		return in
	}
	switch b {
	case "Send", "Bsend", "Ssend", "Rsend":
		in.op = opSend
		in.mayBlock, in.sync = b != "Bsend", b == "Ssend"
	case "Recv":
		in.op = opRecv
	case "Probe":
		in.op = opProbe
	case "Mprobe":
		in.op = opMprobe
	case "Improbe":
		in.op = opImprobe
	case "Mrecv":
		in.op = opMrecv
	case "Imrecv":
		in.op = opImrecv
	case "Sendrecv", "Sendrecv_replace":
		in.op = opSendrecv
	case "Isend", "Ibsend", "Issend", "Irsend":
		in.op = opIsend
		in.mayBlock = b == "Issend"
	case "Irecv":
		in.op = opIrecv
	case "Isendrecv", "Isendrecv_replace":
		in.op = opIsendrecv
	case "Send_init", "Bsend_init", "Ssend_init", "Rsend_init":
		in.op = opSendInit
		in.mayBlock = b == "Ssend_init"
	case "Recv_init":
		in.op = opRecvInit
	case "Start", "Startall":
		in.op = opStart
	case "Wait", "Waitall", "Waitany", "Waitsome":
		in.op, in.wait = opComplete, true
	case "Test", "Testall", "Testany", "Testsome":
		in.op = opComplete
	case "Request_free":
		in.op = opFree
	default:
		in.op = opOther
	}
	return in
}
