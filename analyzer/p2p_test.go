package analyzer

import (
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// lateSender: rank 0 computes 200 ms then sends; rank 1 waits in MPI_Recv.
func lateSender() *tracetest.Run {
	run, r0, r1 := pair()
	r0.Compute(200*ms).Send(1, 7, 8, 10*us) // send 200.001 ms … 200.011 ms
	r1.Recv(0, 7, 8, 200*ms+20*us)          // recv 0.001 ms … 200.021 ms
	r0.Finalize(1 * us)                     // level 0 ends at 200.011 ms
	r1.Finalize(1 * us)                     // level 0 ends at 200.021 ms
	return run
}

func TestLateSender(t *testing.T) {
	rep := analyzeRun(t, lateSender())
	noWarnings(t, rep)
	if rep.Processors != 2 || rep.Task != "app" {
		t.Errorf("processors %d task %q", rep.Processors, rep.Task)
	}
	iv := find(t, rep)
	r0, r1 := rank(t, iv, 0), rank(t, iv, 1)
	// Real Sync = Tsend - Trecv = 200.001 ms - 0.001 ms.
	expect(t, "rank 1 Real Sync", r1.RealSync, 0.2)
	expect(t, "rank 0 Real Sync", r0.RealSync, 0)
	expect(t, "rank 0 Execution", r0.ExecutionTime, 0.200010) // Init exit → Finalize entry
	expect(t, "rank 1 Execution", r1.ExecutionTime, 0.200020)
	expect(t, "rank 0 SendRecv", r0.SendRecvTime, 10e-6)
	expect(t, "rank 1 SendRecv", r1.SendRecvTime, 0.200020)
	expect(t, "rank 0 Idle", r0.IdleTime, 10e-6)
	expect(t, "rank 0 Productive", r0.ProductiveTime, 0.2)
	expect(t, "rank 1 Productive", r1.ProductiveTime, 0)
	expect(t, "rank 1 Load Imbalance", r1.LoadImbalance, 0.2)
	if r0.SendNumber != 1 || r1.ReceiveNumber != 1 || iv.Main.SendNumber != 1 || iv.Main.ReceiveNumber != 1 {
		t.Errorf("send/receive numbers %d/%d main %d/%d", r0.SendNumber, r1.ReceiveNumber, iv.Main.SendNumber, iv.Main.ReceiveNumber)
	}
	expect(t, "Main Real Sync", iv.Main.RealSync, 0.2)
	expect(t, "Main Execution", iv.Main.ExecutionTime, 0.200020)
	expect(t, "Efficiency·Total", iv.Main.Efficiency*iv.Main.TotalTime, 0.2)
	expect(t, "comparative Real Sync max", iv.Comparative.RealSync.Max, 0.2)
	if iv.Comparative.RealSync.MaxProc != 1 || iv.Comparative.RealSync.MinProc != 0 {
		t.Errorf("Real Sync comparative %+v", iv.Comparative.RealSync)
	}
	// SRC: one point per function here (the default sites), merged over ranks.
	var recv *int
	for i, p := range iv.SRC {
		if p.Function == "MPI_Recv" {
			recv = &i
			expect(t, "SRC MPI_Recv Real Sync", p.RealSync, 0.2)
			if len(p.Ranks) != 1 || p.Ranks[0].Rank != 1 || p.Ranks[0].ExeCount != 1 {
				t.Errorf("SRC MPI_Recv ranks %+v", p.Ranks)
			}
		}
	}
	if recv == nil {
		t.Errorf("no SRC point for MPI_Recv: %+v", iv.SRC)
	}
}

// The same late sender seen through MPI_Irecv + MPI_Wait.
func TestLateSenderWait(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(200*ms).Send(1, 7, 8, 10*us) // send entered at 200.001 ms
	q := r1.Irecv(0, 7, 8, 1*us)            // 0.001 … 0.002 ms
	r1.Compute(50 * ms)                     // wait entered at 50.002 ms
	r1.Wait(q, 150*ms+20*us)
	finish(run)
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	r1r := rank(t, iv, 1)
	expect(t, "Real Sync through MPI_Wait", r1r.RealSync, 0.200001-0.050002)
	// Overlap: wait entry - max(irecv start, send start) = 50.002 - 200.001 < 0 → 0.
	expect(t, "receive overlap", r1r.Overlap, 0)
	if r1r.WaitNumber != 1 || r1r.ReceiveNumber != 1 {
		t.Errorf("wait %d receive %d", r1r.WaitNumber, r1r.ReceiveNumber)
	}
}

// Isend/Irecv overlapped with computation.
func TestOverlap(t *testing.T) {
	run, r0, r1 := pair()
	q1 := r1.Irecv(0, 3, 64, 1*us) // 0.001 … 0.002 ms
	r0.Compute(10 * ms)
	q0 := r0.Isend(1, 3, 64, 2*us) // 10.001 … 10.003 ms
	r0.Compute(30 * ms)            // wait entered at 40.003 ms
	r0.Wait(q0, 5*us)
	r1.Compute(60 * ms) // wait entered at 60.002 ms
	r1.Wait(q1, 5*us)
	finish(run)
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	// Send: wait entry - Isend start = 40.003 - 10.001 ms.
	expect(t, "send overlap", rank(t, iv, 0).Overlap, 0.030002)
	// Receive: wait entry - max(Irecv start, send start) = 60.002 - 10.001 ms.
	expect(t, "receive overlap", rank(t, iv, 1).Overlap, 0.050001)
	expect(t, "no Real Sync", rank(t, iv, 1).RealSync, 0)
	expect(t, "Main overlap", iv.Main.Overlap, 0.080003)
}

// ANY_SOURCE receives are matched through their statuses.
func TestAnySource(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(1 * us)
	}
	run.Rank(1).Compute(100*ms).Send(2, 5, 8, 1*us) // entered at 100.001 ms
	run.Rank(0).Compute(300*ms).Send(2, 5, 8, 1*us) // entered at 300.001 ms
	r2 := run.Rank(2)
	// First receive gets rank 1's message, second rank 0's.
	r2.Recv(traceformat.AnySource, 5, 8, 100*ms+10*us, tracetest.Status(1, 5)) // 0.001 … 100.011 ms
	r2.Recv(traceformat.AnySource, traceformat.AnyTag, 8, 200*ms, tracetest.Status(0, 5))
	for i := 0; i < 3; i++ {
		run.Rank(i).Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	// (100.001 - 0.001) + (300.001 - 100.011) ms
	expect(t, "ANY_SOURCE Real Sync", rank(t, iv, 2).RealSync, 0.1+0.19999)
	noWarnings(t, rep)
}

// Messages with the same source, destination and tag match in order
// (non-overtaking); different tags match independently.
func TestFIFOAndTags(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(10*ms).Send(1, 1, 8, 1*us) // A tag 1 at 10.001 ms
	r0.Compute(10*ms).Send(1, 2, 8, 1*us) // B tag 2 at 20.002 ms
	r0.Compute(10*ms).Send(1, 1, 8, 1*us) // C tag 1 at 30.003 ms
	r1.Recv(0, 2, 8, 30*ms)               // gets B: 0.001 … 30.001 ms, Real Sync 20.001 ms
	r1.Recv(0, 1, 8, 1*us)                // gets A (no wait): 30.001 … 30.002
	r1.Recv(0, 1, 8, 10*ms)               // gets C: 30.002 … 40.002, Real Sync 0.001 ms
	finish(run)
	rep := analyzeRun(t, run)
	expect(t, "Real Sync", rank(t, find(t, rep), 1).RealSync, 0.020001+0.000001)
}

// MPI_Sendrecv both sends and receives; PROC_NULL peers are ignored.
func TestSendrecvAndProcNull(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(50 * ms)
	r0.Sendrecv(1, 0, 8, 1, 0, 8, 10*us)       // entered at 50.001 ms
	r1.Sendrecv(0, 0, 8, 0, 0, 8, 50*ms+20*us) // entered at 0.001 ms
	r0.Send(traceformat.ProcNull, 0, 8, 1*us)
	r1.Recv(traceformat.ProcNull, 0, 8, 1*us)
	finish(run)
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	expect(t, "rank 1 Real Sync", rank(t, iv, 1).RealSync, 0.05)
	expect(t, "rank 0 Real Sync", rank(t, iv, 0).RealSync, 0)
	if n := rank(t, iv, 0).SendNumber; n != 1 {
		t.Errorf("rank 0 Send Number %d, want 1 (PROC_NULL ignored)", n)
	}
	noWarnings(t, rep)
}

// Persistent requests: created once, started and completed twice, freed;
// completed through MPI_Waitsome and MPI_Startall.
func TestPersistentAndWaitsome(t *testing.T) {
	run, r0, r1 := pair()
	sq := r0.SendInit(1, 9, 8, 1*us) // 0.001 … 0.002
	rq := r1.RecvInit(0, 9, 8, 1*us) // 0.001 … 0.002
	for i := 0; i < 2; i++ {
		r0.Compute(20*ms).Start(sq, 1*us) // starts at 20.002 and 40.004 ms
		r0.Wait(sq, 1*us)
		r1.Startall([]tracetest.Req{rq}, 1*us) // starts at 0.002 and 40.005 ms
		r1.Waitsome([]tracetest.Req{rq}, r0.Now()-r1.Now()+1*us)
	}
	r0.RequestFree(sq, 1*us)
	r1.RequestFree(rq, 1*us)
	finish(run)
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	r1r := rank(t, iv, 1)
	// Iteration 1: Waitsome entered at 0.003 ms, send started at 20.002 ms.
	// Iteration 2: r1 reaches Startall at 20.005 ms (after the first
	// Waitsome ended at 20.004 ms + 1 µs), Waitsome at 20.006 ms; the
	// second send starts at 40.004 ms.
	expect(t, "persistent Real Sync", r1r.RealSync, (0.020002-0.000003)+(0.040004-0.020006))
	if r1r.ReceiveNumber != 2 || rank(t, iv, 0).SendNumber != 2 || r1r.WaitNumber != 2 {
		t.Errorf("receive %d send %d wait %d", r1r.ReceiveNumber, rank(t, iv, 0).SendNumber, r1r.WaitNumber)
	}
	noWarnings(t, rep)
}

// MPI matches receives when they are posted: a pre-posted MPI_Irecv gets
// the first message even if a later blocking receive of the same key
// completes first, and waits in reverse order do not swap messages.
func TestMatchAtPosting(t *testing.T) {
	run, r0, r1 := pair()
	r0.Compute(10*ms).Send(1, 4, 8, 1*us) // m1 entered at 10.001 ms
	r0.Compute(10*ms).Send(1, 4, 8, 1*us) // m2 at 20.002 ms
	r0.Compute(10*ms).Send(1, 4, 8, 1*us) // m3 at 30.003 ms
	r0.Compute(10*ms).Send(1, 4, 8, 1*us) // m4 at 40.004 ms
	a := r1.Irecv(0, 4, 8, 1*us)          // gets m1; 0.001 … 0.002 ms
	r1.Recv(0, 4, 8, 20*ms+1*us)          // gets m2: 0.002 … 20.003 ms, Real Sync 20.000 ms
	r1.Wait(a, 1*us)                      // m1 arrived long ago: no Real Sync
	b := r1.Irecv(0, 4, 8, 1*us)          // m3; 20.004 … 20.005
	c := r1.Irecv(0, 4, 8, 1*us)          // m4; 20.005 … 20.006
	r1.Wait(c, 40*ms-r1.Now()+5*us)       // entered 20.006 ms, m4 sent at 40.004: Real Sync 19.998 ms
	r1.Wait(b, 1*us)                      // m3 already there
	finish(run)
	rep := analyzeRun(t, run)
	expect(t, "Real Sync", rank(t, find(t, rep), 1).RealSync, 0.020000+0.019998)
	noWarnings(t, rep)
}

// A cancelled receive gives back its place: the next receive of the key
// gets the message.
func TestCancelledReceive(t *testing.T) {
	run, r0, r1 := pair()
	a := r1.Irecv(0, 4, 8, 1*us)
	r1.Cancel(a, 1*us)
	r1.Wait(a, 1*us)                      // completes the cancelled request: 0.003 … 0.004 ms
	r0.Compute(10*ms).Send(1, 4, 8, 1*us) // entered at 10.001 ms
	r1.Recv(0, 4, 8, 10*ms)               // 0.004 ms … : Real Sync 9.997 ms
	finish(run)
	rep := analyzeRun(t, run)
	expect(t, "Real Sync", rank(t, find(t, rep), 1).RealSync, 0.009997)
	noWarnings(t, rep)
}

// Tests that complete nothing are not Wait Number; a successful test is.
// Nonblocking collectives are completed by waits without warnings (rank
// 0's wait ends after rank 1's start: before, it would break the clock
// condition).
func TestTestFamilyAndIbarrier(t *testing.T) {
	run, r0, r1 := pair()
	q := r1.Irecv(0, 2, 8, 1*us) // 0.001 … 0.002
	for i := 0; i < 3; i++ {
		r1.Compute(1*ms).Test(q, false, 1*us)
	}
	r0.Compute(2*ms).Send(1, 2, 8, 1*us)                // entered 2.001 ms
	r1.Compute(1*ms).Testsome([]tracetest.Req{q}, 1*us) // entered 4.005 ms: completes, no Real Sync
	b0, b1 := r0.Ibarrier(1*us), r1.Ibarrier(1*us)
	r0.Wait(b0, r1.Now()-r0.Now())
	r1.Waitall([]tracetest.Req{b1}, 1*us)
	finish(run)
	rep := analyzeRun(t, run)
	iv := find(t, rep)
	r1r := rank(t, iv, 1)
	if r1r.WaitNumber != 2 { // Testsome + Waitall
		t.Errorf("rank 1 Wait Number %d, want 2", r1r.WaitNumber)
	}
	expect(t, "Real Sync", r1r.RealSync, 0)
	// Testsome entered at 4.005 ms, send started at 2.001 ms.
	expect(t, "Overlap", r1r.Overlap, 0.004005-0.002001)
	if iv.Main.CollectiveNumber != 1 || len(rep.Warnings) != 0 {
		t.Errorf("collectives %d warnings %q", iv.Main.CollectiveNumber, rep.Warnings)
	}
}

// Flow control: a sender far ahead of its receiver waits for it (memory),
// but never when that would stall the replay (the forwarded message below
// is needed before the flood is received).
func TestFlowControl(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(1 * us)
	}
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	const n = 200
	for i := 0; i < n; i++ {
		r0.Send(1, 1, 8, 1*us) // 0.001 + i µs
	}
	r0.Send(2, 2, 8, 1*us) // entered at 0.201 ms
	r2.Recv(0, 2, 8, 200*us+1*us)
	r2.Send(1, 3, 8, 1*us)        // entered at 0.202 ms
	r1.Recv(2, 3, 8, 201*us+1*us) // 0.001 … 0.203 ms: Real Sync 0.201 ms
	for i := 0; i < n; i++ {
		r1.Recv(0, 1, 8, 1*us)
	}
	for i := 0; i < 3; i++ {
		run.Rank(i).Finalize(1 * us)
	}
	rep := analyzeRunLimits(t, run, func(l *limits) { l.pending = 16 })
	noWarnings(t, rep)
	expect(t, "rank 1 Real Sync", rank(t, find(t, rep), 1).RealSync, 0.000201)
	expect(t, "rank 2 Real Sync", rank(t, find(t, rep), 2).RealSync, 0.000200)
}

// Many requests in flight at once (a rank receiving from everybody).
func TestManyRequests(t *testing.T) {
	const n = 48
	run := tracetest.NewRun(n + 1)
	for i := 0; i <= n; i++ {
		run.Rank(i).Init(1 * us)
	}
	root := run.Rank(0)
	var qs []tracetest.Req
	for i := 1; i <= n; i++ {
		qs = append(qs, root.Irecv(int32(i), 0, 8, 0))
		run.Rank(i).Compute(int64(i)*ms).Send(0, 0, 8, 1*us) // entered at 0.001 + i ms
	}
	root.Waitall(qs, n*ms) // entered at 0.001 ms: latest send at 0.001 + 48 ms
	for i := 0; i <= n; i++ {
		run.Rank(i).Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	expect(t, "Real Sync", rank(t, find(t, rep), 0).RealSync, 0.048)
	noWarnings(t, rep)
}

// Open MPI returns one shared request handle (ompi_request_empty) for every
// request that completed at once: an MPI_PROC_NULL receive, a small eager
// send. Traces that record handle values therefore have several live
// requests with the same id; completions apply to them oldest first. Here
// rank 0 computes 200 ms and sends to rank 1 with such a handle, and rank 1
// waits for its receive in MPI_Waitall alongside a PROC_NULL send that
// shares the handle.
func TestSharedRequestHandle(t *testing.T) {
	const empty, real = 0x7f4fe91c6cc0, 0x55f11768dd80
	none := traceformat.Status{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}
	irecv := func(src int32, id uint64) traceformat.Event {
		return traceformat.Event{Attr: traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrReqs,
			RecvPeer: src, RecvBytes: 8, Reqs: []uint64{id}}
	}
	isend := func(dst int32, id uint64) traceformat.Event {
		return traceformat.Event{Attr: traceformat.AttrComm | traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrReqs,
			SendPeer: dst, SendBytes: 8, Reqs: []uint64{id}}
	}
	waitall := func(ids []uint64, st []traceformat.Status) traceformat.Event {
		return traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrStatus, Reqs: ids, Status: st}
	}
	run, r0, r1 := pair()
	r0.Compute(200*ms).
		Call("MPI_Irecv", us, irecv(traceformat.ProcNull, empty)).
		Call("MPI_Isend", us, isend(1, empty)). // entered at 200.002 ms
		Call("MPI_Waitall", us, waitall([]uint64{empty, empty},
			[]traceformat.Status{{Source: traceformat.ProcNull, Tag: traceformat.AnyTag}, none}))
	r1.Call("MPI_Irecv", us, irecv(0, real)).
		Call("MPI_Isend", us, isend(traceformat.ProcNull, empty)).
		Call("MPI_Waitall", 200*ms, waitall([]uint64{real, empty}, // entered at 0.003 ms
			[]traceformat.Status{{Source: 0, Tag: 0}, none}))
	finish(run)
	rep := analyzeClean(t, run)
	iv := find(t, rep)
	expect(t, "Real Sync on rank 1", rank(t, iv, 1).RealSync, float64(200*ms+2*us-3*us)/1e9)
	expect(t, "Real Sync on rank 0", rank(t, iv, 0).RealSync, 0)
	if r := rank(t, iv, 0); r.SendNumber != 1 || r.ReceiveNumber != 0 || r.WaitNumber != 1 {
		t.Errorf("rank 0 counts: %d sends, %d receives, %d waits", r.SendNumber, r.ReceiveNumber, r.WaitNumber)
	}
}

// MPICH leaves the status of a receive from MPI_PROC_NULL unset ({0, 0}
// in the trace) where Open MPI reports {PROC_NULL, ANY_TAG}; it also hands
// out one shared handle for requests completed at once. A PROC_NULL receive
// must match nothing whatever its status says: here it would otherwise
// steal rank 0's message to rank 1 (source 0, tag 0). Rank 0 sends after
// 100 ms; rank 1 waits from 0.003 ms: Real Sync 0.1 s - 0.002 ms + 0.001 ms.
func TestProcNullReceiveStatusIgnored(t *testing.T) {
	const shared, real = 0x6c000002, 0xac000000
	irecv := func(src int32, id uint64) traceformat.Event {
		return traceformat.Event{Attr: traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrReqs,
			RecvPeer: src, RecvBytes: 8, Reqs: []uint64{id}}
	}
	run, r0, r1 := pair()
	r0.Compute(100*ms).Send(1, 0, 8, us) // entered at 100.001 ms
	r1.Call("MPI_Irecv", us, irecv(traceformat.ProcNull, shared)).
		Call("MPI_Irecv", us, irecv(0, real)).
		Call("MPI_Waitall", 100*ms, traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrStatus, // entered at 0.003 ms
			Reqs: []uint64{shared, real}, Status: []traceformat.Status{{Source: 0, Tag: 0}, {Source: 0, Tag: 0}}})
	r1.Recv(traceformat.ProcNull, 0, 8, us, tracetest.Status(0, 0)) // blocking, status unset too
	finish(run)
	rep := analyzeClean(t, run)
	expect(t, "Real Sync on rank 1", rank(t, find(t, rep), 1).RealSync, float64(100*ms+us-3*us)/1e9)
}

// Matched probes, as mpi4py receives pickled objects: MPI_Mprobe waits for
// the message and takes it out of matching, MPI_Mrecv receives it by its
// handle (no communicator, no source). Rank 0 sends to rank 2 at 0.001 ms,
// computes 200 ms and sends to rank 1, entering at 200.002 ms; rank 1 is in
// MPI_Mprobe from 0.001 ms: Real Sync 200.001 ms. Rank 2 polls with
// MPI_Improbe (twice nothing, then rank 0's first message), then
// MPI_Imrecv and MPI_Wait: no Real Sync, Overlap = wait entry − Imrecv
// start = 50.001 ms; one receive each, counted at the probe.
func TestMatchedProbes(t *testing.T) {
	probe := func(src, tag int32, st ...traceformat.Status) traceformat.Event {
		e := traceformat.Event{Attr: traceformat.AttrComm | traceformat.AttrRecv, RecvPeer: src, RecvTag: tag}
		if len(st) > 0 {
			e.Attr |= traceformat.AttrStatus
			e.Status = st
		}
		return e
	}
	flag := func(e traceformat.Event, f bool) traceformat.Event {
		e.Attr |= traceformat.AttrFlag
		e.Flag = f
		return e
	}
	run := tracetest.NewRun(3)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	r0.Init(us)
	r1.Init(us)
	r2.Init(us)
	r0.Send(2, 9, 8, us) // entered at 0.001 ms, to rank 2
	r0.Compute(200*ms).Send(1, 7, 23, us)
	r1.Call("MPI_Mprobe", 200*ms+10*us, probe(0, 7, traceformat.Status{Source: 0, Tag: 7})).
		Call("MPI_Mrecv", 2*us, traceformat.Event{Attr: traceformat.AttrRecvBytes | traceformat.AttrStatus,
			RecvBytes: 23, Status: []traceformat.Status{{Source: 0, Tag: 7}}})
	r2.Compute(10*ms).
		Call("MPI_Improbe", us, flag(probe(0, 9), false)).
		Call("MPI_Improbe", us, flag(probe(0, 9), false)).
		Call("MPI_Improbe", us, flag(probe(0, 9, traceformat.Status{Source: 0, Tag: 9}), true)).
		Call("MPI_Imrecv", us, traceformat.Event{Attr: traceformat.AttrRecvBytes | traceformat.AttrReqs, RecvBytes: 8, Reqs: []uint64{42}}).
		Compute(50*ms). // Imrecv started at 10.004 ms; the wait is entered at 60.005 ms
		Call("MPI_Wait", us, traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrStatus, Reqs: []uint64{42},
			Status: []traceformat.Status{{Source: 0, Tag: 9}}})
	r0.Finalize(us)
	r1.Finalize(us)
	r2.Finalize(us)
	rep := analyzeClean(t, run)
	iv := find(t, rep)
	expect(t, "Real Sync on rank 1", rank(t, iv, 1).RealSync, float64(200*ms+2*us-us)/1e9)
	expect(t, "Real Sync on rank 2", rank(t, iv, 2).RealSync, 0)
	expect(t, "Overlap on rank 2", rank(t, iv, 2).Overlap, float64(50*ms+us)/1e9)
	if r1, r2 := rank(t, iv, 1), rank(t, iv, 2); r1.ReceiveNumber != 1 || r2.ReceiveNumber != 1 || r2.WaitNumber != 1 {
		t.Errorf("receives %d, %d; waits on rank 2 %d; want 1, 1, 1", r1.ReceiveNumber, r2.ReceiveNumber, r2.WaitNumber)
	}
}

// MPI_Isendrecv (MPI 4) sends at the call and receives through its
// request: rank 0 starts one at 1 µs (to rank 1, tag 1; from rank 1, tag
// 2) and waits from 10 ms; rank 1 receives the tag-1 message at 1 ms and
// sends tag 2 at 50 ms. Rank 0's wait lasts until 50.02 ms: Real Sync =
// 50 − 10 ms; rank 1's receive finds its message there (no wait).
func TestIsendrecv(t *testing.T) {
	run, r0, r1 := pair()
	q := r0.Isendrecv(1, 1, 8, 1, 2, 8, 10*us)
	r0.At(10*ms).Wait(q, 40*ms+20*us) // 10 … 50.02 ms
	r1.At(1*ms).Recv(0, 1, 8, 10*us)
	r1.At(50*ms).Send(0, 2, 8, 10*us)
	finish(run)
	rep := analyzeClean(t, run)
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v", rep.Unmatched)
	}
	iv := find(t, rep)
	k0, k1 := rank(t, iv, 0), rank(t, iv, 1)
	expect(t, "rank 0 Real Sync", k0.RealSync, 0.040)
	expect(t, "rank 1 Real Sync", k1.RealSync, 0)
	if k0.SendNumber != 1 || k0.ReceiveNumber != 1 || k0.WaitNumber != 1 {
		t.Errorf("rank 0 sends %d receives %d waits %d", k0.SendNumber, k0.ReceiveNumber, k0.WaitNumber)
	}
}

// analyzeMatched finishes run, analyzes it on one worker and fails t if
// anything is warned of or unmatched.
func analyzeMatched(t *testing.T, run *tracetest.Run) *report.Report {
	t.Helper()
	finish(run)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: 1})
	noWarnings(t, rep)
	if rep.Unmatched != nil {
		t.Errorf("unmatched %+v", rep.Unmatched)
	}
	return rep
}

// A cancelled MPI_Isend sends nothing: rank 0 starts one at 1 µs and
// cancels it, then sends again at 20 ms; rank 1's receive, posted at
// 1 µs, gets the second message (Real Sync 20 ms − 1 µs), and no message
// is left unreceived. (One worker: a receive replayed before the sender's
// cancellation could take the message, exchange.withdraw.)
func TestCancelledSend(t *testing.T) {
	run, r0, r1 := pair()
	q := r0.Isend(1, 5, 8, 10*us)
	r0.Cancel(q, 10*us).Wait(q, 10*us)
	r0.At(20*ms).Send(1, 5, 8, 10*us)
	r1.Recv(0, 5, 8, 20*ms+20*us) // 0.001 … 20.021 ms
	rep := analyzeMatched(t, run)
	expect(t, "rank 1 Real Sync", rank(t, find(t, rep), 1).RealSync, 0.020-0.000001)
}

// A cancelled persistent send sends nothing either: rank 0 starts its
// MPI_Send_init request at 1 µs and cancels it, then starts it again at
// 20 ms; rank 1's receive, posted at 1 µs, gets the second start's message
// (Real Sync 20 ms − 1 µs), and no message is left unreceived. A third
// start, not cancelled, is received by rank 1's second receive at 30 ms.
// (One worker, as in TestCancelledSend.)
func TestCancelledPersistentSend(t *testing.T) {
	run, r0, r1 := pair()
	q := r0.SendInit(1, 5, 8, 1*us)
	r0.Start(q, 10*us).Cancel(q, 10*us).Wait(q, 10*us)
	r0.At(20*ms).Start(q, 10*us).Wait(q, 10*us)
	r0.At(30*ms).Start(q, 10*us).Wait(q, 10*us)
	r0.RequestFree(q, 1*us)
	r1.Recv(0, 5, 8, 20*ms+20*us) // 0.001 … 20.021 ms
	r1.At(30*ms+20*us).Recv(0, 5, 8, 10*us)
	rep := analyzeMatched(t, run)
	iv := find(t, rep)
	expect(t, "rank 1 Real Sync", rank(t, iv, 1).RealSync, 0.020-0.000001)
	if k := rank(t, iv, 0); k.SendNumber != 3 {
		t.Errorf("rank 0 sends %d, want 3 (the cancelled start was made)", k.SendNumber)
	}
}

// After a cancelled send the receives of its key get the messages after
// it, however many there are: rank 0 cancels its first MPI_Isend and
// sends twice more (20 and 30 ms); rank 1 receives both, with blocking
// receives (the first posted at 1 µs) or with two MPI_Irecv posted at
// 1 µs and one MPI_Waitall from 10 µs. Nothing is unmatched, and rank 1
// waits until the second send's entry less its first call's entry
// (20 ms − 1 µs blocking, then none; 30 ms − 10 µs in the Waitall).
func TestCancelledSendLaterReceives(t *testing.T) {
	for _, blocking := range []bool{true, false} {
		run, r0, r1 := pair()
		q := r0.Isend(1, 5, 8, 10*us)
		r0.Cancel(q, 10*us).Wait(q, 10*us)
		r0.At(20*ms).Send(1, 5, 8, 10*us)
		r0.At(30*ms).Send(1, 5, 8, 10*us)
		want := 0.020 - 0.000001
		if blocking {
			r1.Recv(0, 5, 8, 20*ms+20*us) // 0.001 … 20.021 ms
			r1.At(30*ms+20*us).Recv(0, 5, 8, 10*us)
		} else {
			a := r1.Irecv(0, 5, 8, 1*us)
			b := r1.Irecv(0, 5, 8, 1*us)
			r1.At(10*us).Waitall([]tracetest.Req{a, b}, 30*ms+10*us) // 0.01 … 30.02 ms
			want = 0.030 - 0.000010
		}
		rep := analyzeMatched(t, run)
		expect(t, "rank 1 Real Sync", rank(t, find(t, rep), 1).RealSync, want)
	}
}

// TestCancelledSendToFinishedRank: an MPI_Isend (or started persistent
// send) cancelled after its destination's replay finished. Its
// cancellation is seen when it is posted (cancelledAhead), or, when it
// comes further on than the replay reads ahead, its message is counted
// unreceived when it is sent (the destination can no longer receive it,
// exchange.send) and its cancellation takes it back off that count; it
// withdraws no other message. Rank 0 sends a first message of the key,
// which rank 1 receives (or does not), then its cancelled send; rank 1
// ends before it with one worker, and at any point with several (and over
// 1–4 analysis processes, analyzeOpts): the count is 0 (1) whatever the
// order.
func TestCancelledSendToFinishedRank(t *testing.T) {
	type variant struct{ received, persistent, far bool }
	var variants []variant
	for i := range 8 {
		variants = append(variants, variant{i&1 == 0, i&2 != 0, i&4 != 0})
	}
	for _, c := range variants {
		received := c.received
		for _, workers := range []int{1, 2, 4} {
			run, r0, r1 := pair()
			var q tracetest.Req
			if c.persistent {
				q = r0.SendInit(1, 5, 8, 1*us)
				r0.Start(q, 10*us)
			} else {
				q = r0.Isend(1, 5, 8, 10*us)
			}
			r0.Wait(q, 10*us)
			r0.Recv(1, 9, 8, 10*ms) // waits for rank 1's last message
			if c.persistent {
				r0.At(20*ms).Start(q, 10*us)
			} else {
				q = r0.At(20*ms).Isend(1, 5, 8, 10*us)
			}
			if c.far {
				// The cancellation beyond what the replay reads ahead
				// (LazyBatch.StatusAhead): the message is posted, and
				// taken back when the completion is replayed.
				for range 1100 {
					r0.System("MPI_Comm_rank", 100)
				}
			}
			r0.Cancel(q, 10*us).Wait(q, 10*us)
			if received {
				r1.Recv(0, 5, 8, 10*us)
			}
			r1.At(5*ms).Send(0, 9, 8, 10*us)
			finish(run)
			dir := t.TempDir()
			if _, err := run.WriteDir(dir, "app"); err != nil {
				t.Fatal(err)
			}
			rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: workers})
			var sends int64
			if rep.Unmatched != nil {
				sends = rep.Unmatched.Sends
			}
			want := int64(1)
			if received {
				want = 0
			}
			for n := 2; n <= 4; n++ {
				_, xs := replayDist(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: workers}, n)
				var got int64
				for _, x := range xs {
					got += x.unreceived() + x.droppedSends.Load()
				}
				if got != want {
					t.Errorf("%+v, %d workers, %d processes: %d sends unreceived, want %d", c, workers, n, got, want)
				}
			}
			if received {
				if sends != 0 || len(rep.Warnings) != 0 {
					t.Errorf("%+v, %d workers: %d sends unreceived, warnings %q", c, workers, sends, rep.Warnings)
				}
				continue
			}
			if sends != 1 || len(rep.Warnings) != 2 || !strings.Contains(rep.Warnings[1], "Rank 0: 1 message to rank 1 with tag 5 never received") {
				t.Errorf("%+v, %d workers: %d sends unreceived, warnings %q", c, workers, sends, rep.Warnings)
			}
		}
	}
}

// A cancelled send whose destination's receive is replayed before the
// cancellation: rank 0 starts an MPI_Isend to rank 1 at 1 µs, then waits
// in MPI_Recv for rank 1's message of 5 ms, and only then (6 ms) cancels
// the send and completes it. Rank 1 sends that message, then receives
// from rank 0 from 5.01 ms: it must get the message rank 0 sends at 20 ms
// (Real Sync 20 − 5.01 ms), not the cancelled one, which would be posted
// by then unless the cancellation was read ahead (cancelledAhead).
// Nothing is left unreceived. On one thread, and on two (thread 1 starts
// the send and waits; thread 1 or thread 0 cancels and completes it: the
// request is the process's; thread 0 sends at 20 ms), where the
// cancellation is read among the calls the merge holds.
func TestCancelledSendReceivedFirst(t *testing.T) {
	for _, c := range []struct {
		threads bool
		by      uint32
	}{{false, 0}, {true, 1}, {true, 0}} {
		run, r0, r1 := pair()
		if c.threads {
			run.ThreadLevel = threadMultiple
			r0.Thread(1)
		}
		q := r0.Isend(1, 5, 8, 10*us) // 0.001 … 0.011 ms
		r0.Recv(1, 9, 8, 5*ms)        // … 5.011 ms
		r0.Thread(c.by).At(6*ms).Cancel(q, 10*us).Wait(q, 10*us)
		r0.Thread(0).At(20*ms).Send(1, 5, 8, 10*us)
		r1.At(5*ms).Send(0, 9, 8, 10*us).Recv(0, 5, 8, 15*ms+20*us) // 5.01 … 20.03 ms
		rep := analyzeMatched(t, run)
		expect(t, "rank 1 Real Sync", rank(t, find(t, rep), 1).RealSync, 0.020-0.00501)
	}
}
