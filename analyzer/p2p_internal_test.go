package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Messages with ever new tags do not grow the inbox beyond what is in
// flight; tickets, revocations and out-of-order takes keep FIFO order.
func TestInboxStaysBounded(t *testing.T) {
	x := newExchange(2, []bool{true, true})
	var sc, rc fifoCache
	for i := 0; i < 20000; i++ {
		k := p2pKey{src: 0, dst: 1, tag: int32(i)}
		x.send(k, int64(i), &sc)
		f, tk := x.ticket(k, &rc)
		if got, ok := x.recv(f, k.src, k.dst, tk); !ok || got != int64(i) {
			t.Fatalf("message %d: got %d %v", i, got, ok)
		}
	}
	if n := len(x.ranks[1].inbox); n > 2*minSweep {
		t.Errorf("inbox holds %d queues", n)
	}
	k := p2pKey{src: 0, dst: 1, tag: -5}
	f, a := x.ticket(k, &rc)
	_, b := x.ticket(k, &rc)
	_, c := x.ticket(k, &rc)
	x.revoke(f, k.dst, a)
	x.send(k, 100, &sc)
	x.send(k, 200, &sc)
	if got, _ := x.recv(f, k.src, k.dst, c); got != 200 {
		t.Errorf("third ticket (second after the revoked one) got %d, want 200", got)
	}
	if got, _ := x.recv(f, k.src, k.dst, b); got != 100 {
		t.Errorf("second ticket got %d, want 100", got)
	}
}

// The request table switches from a slice to a map past smallReqs live
// requests and keeps working; an id live several times at once (Open MPI's
// shared handle for requests completed at once) is taken oldest first.
func TestReqTable(t *testing.T) {
	for _, n := range []uint64{10, 100} { // slice, then map representation
		var tb reqTable
		for i := uint64(1); i <= n; i++ {
			tb.put(i, request{start: int64(i)})
			if i%3 == 0 {
				tb.del(i - 1)
			}
		}
		tb.put(7, request{start: 70})
		for i := uint64(1); i <= n; i++ {
			r := tb.get(i)
			switch {
			case i%3 == 2 && i < n-1:
				if r != nil {
					t.Errorf("n=%d: request %d should be gone", n, i)
				}
			default:
				if r == nil || r.start != int64(i) {
					t.Errorf("n=%d: request %d = %+v", n, i, r)
				}
			}
		}
		tb.del(7)
		if r := tb.get(7); r == nil || r.start != 70 {
			t.Errorf("n=%d: second request 7 = %+v", n, r)
		}
		tb.del(7)
		if r := tb.get(7); r != nil {
			t.Errorf("n=%d: request 7 still there: %+v", n, r)
		}
	}
}

// Every collective call takes the contributions deferred to its rank, also
// when it waited and left without taking x.mu again (collJoin): no rank
// piles up one per instance. With 64 ranks the last entrant's role moves
// from rank to rank, so that without it a rank would hold dozens.
func TestDeferredStaysBounded(t *testing.T) {
	const n, calls = 64, 1000
	for _, workers := range []int{1, 2, 5} {
		present := make([]bool, n)
		members := make([]int32, n)
		for i := range present {
			present[i], members[i] = true, int32(i)
		}
		x := newExchange(n, present)
		s := newSched(x, nil)
		most := make([]int, n)
		got := make([]int, n) // contributions received
		for r := range int32(n) {
			s.add(r, func() {
				var buf []collContrib
				for i := range calls {
					t0 := int64(i) * 1000
					_, _, ok, mismatch, out := x.collJoin(collKey{seq: uint64(i)}, "MPI_Allreduce", tracepb.Function_ALL_TO_ALL, -1,
						members, int(r), r, t0+int64(r), t0+500, true, collAtt{}, buf)
					if !ok || mismatch {
						t.Errorf("rank %d call %d: ok %v mismatch %v", r, i, ok, mismatch)
					}
					got[r] += len(out)
					buf = out[:0]
					x.lock(&x.mu)
					most[r] = max(most[r], len(x.ranks[r].deferred))
					x.unlock(&x.mu)
				}
				_, out := x.finish(r, buf)
				got[r] += len(out)
			})
		}
		if err := s.run(workers); err != nil {
			t.Fatal(err)
		}
		for r := range n {
			// What completes after a rank finished is collected once
			// every replay ended (Analyze).
			got[r] += len(x.ranks[r].deferred)
			if most[r] > 4 || got[r] != calls {
				t.Errorf("%d workers, rank %d: up to %d contributions waiting, %d received, want %d", workers, r, most[r], got[r], calls)
			}
		}
	}
}
