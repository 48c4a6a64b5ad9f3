package analyzer

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// sendAt posts a message of key k whose send entered at t.
func sendAt(x *exchange, k p2pKey, t int64, c *fifoCache) {
	x.send(&k, &msgSlot{t: t}, lateInfo{}, c)
}

// Messages with ever new tags do not grow the inbox beyond what is in
// flight; tickets, revocations and out-of-order takes keep FIFO order.
func TestInboxStaysBounded(t *testing.T) {
	x := newExchange(2, []bool{true, true}, defaultLimits())
	var sc, rc fifoCache
	for i := 0; i < 20000; i++ {
		k := p2pKey{src: 0, dst: 1, tag: int32(i)}
		sendAt(x, k, int64(i), &sc)
		f, tk := x.ticket(k, &rc)
		if got, _, _, ok := x.recv(f, f.message(tk), k.src, k.dst, 0, 0); !ok || got != int64(i) {
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
	sendAt(x, k, 100, &sc)
	sendAt(x, k, 200, &sc)
	if got, _, _, _ := x.recv(f, f.message(c), k.src, k.dst, 0, 0); got != 200 {
		t.Errorf("third ticket (second after the revoked one) got %d, want 200", got)
	}
	if got, _, _, _ := x.recv(f, f.message(b), k.src, k.dst, 0, 0); got != 100 {
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

// find, kill and compact (a Wait/Test call's completions) agree with a
// plain list in creation order, whatever the order of the ids passed, with
// ids live several times at once (find's first guess, the first request
// not marked dead, must then give way to the oldest) and with requests
// found but kept live (persistent ones), also past the small table's size.
func TestReqTableFindKill(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type live struct {
		id    uint64
		start int64
	}
	for round := range 2000 {
		var tb reqTable
		var model []live
		seq := int64(0)
		for range 20 {
			for range rng.IntN(6) {
				id := uint64(rng.IntN(8)) // few ids: duplicates are common
				if round%2 == 0 {
					id = uint64(seq) // unique ids
				}
				seq++
				tb.add(id).start = seq
				model = append(model, live{id, seq})
			}
			// A completion of some ids, in an order of their own.
			var ids []uint64
			for range rng.IntN(len(model) + 2) {
				if rng.IntN(4) == 0 || len(model) == 0 {
					ids = append(ids, 1000+uint64(rng.IntN(3))) // unknown
				} else {
					ids = append(ids, model[rng.IntN(len(model))].id)
				}
			}
			if rng.IntN(3) > 0 {
				slices.Sort(ids)
			}
			gone := map[int]bool{}
			for _, id := range ids {
				want := -1
				for j, m := range model {
					if m.id == id && !gone[j] {
						want = j
						break
					}
				}
				p, at := tb.find(id)
				switch {
				case want < 0 && p != nil:
					t.Fatalf("round %d: find(%d) = %+v, want none", round, id, *p)
				case want >= 0 && (p == nil || p.start != model[want].start):
					t.Fatalf("round %d: find(%d) = %v, want start %d", round, id, p, model[want].start)
				}
				if p != nil && rng.IntN(5) > 0 {
					gone[want] = true
					tb.kill(id, at)
				}
			}
			tb.compact()
			kept := model[:0]
			for j, m := range model {
				if !gone[j] {
					kept = append(kept, m)
				}
			}
			model = kept
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
		x := newExchange(n, present, defaultLimits())
		s := newSched(context.Background(), x)
		x.s = s
		most := make([]int, n)
		got := make([]int, n) // contributions received
		for r := range int32(n) {
			s.add(r, func() {
				var buf []collContrib
				for i := range calls {
					t0 := int64(i) * 1000
					_, _, ok, mismatch, out := x.collJoin(&collCall{key: collKey{seq: uint64(i)}, fn: "MPI_Allreduce", shape: tracepb.Function_ALL_TO_ALL, root: -1,
						members: members, idx: int(r), me: r, entry: t0 + int64(r), exit: t0 + 500, moves: true}, buf)
					if !ok || mismatch {
						t.Errorf("rank %d call %d: ok %v mismatch %v", r, i, ok, mismatch)
					}
					got[r] += len(out)
					buf = out[:0]
					x.lock(&x.mu)
					most[r] = max(most[r], len(x.ranks[r].deferred))
					x.unlock(&x.mu)
				}
				out := x.finish(r, buf)
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

// The queues of a key are read and written without a lock by a sender and
// a receiver on different workers: every message arrives once, in FIFO
// order by ticket, through sweeps (ever new tags), out-of-order takes
// (two tickets waited for in reverse) and flow control; messages sent
// and never received are counted once. Run with -race at several
// GOMAXPROCS.
func TestInboxConcurrent(t *testing.T) {
	const n, msgs, tags, flood, extra = 4, 6000, 3000, 3000, 5
	lim := defaultLimits()
	lim.pending = 8
	for _, workers := range []int{1, 2, 5} {
		present := make([]bool, n)
		for i := range present {
			present[i] = true
		}
		x := newExchange(n, present, lim)
		s := newSched(context.Background(), x)
		x.s = s
		for r := range int32(n) {
			to, from := (r+1)%n, (r+n-1)%n
			s.add(r, func() {
				var sc, rc fifoCache
				val := func(src int32, i int) int64 { return int64(src)<<32 | int64(i) }
				for i := 0; i < msgs; i++ {
					// Messages 2j and 2j+1 share a tag.
					sendAt(x, p2pKey{src: r, dst: to, tag: int32(i / 2 % tags)}, val(r, i), &sc)
					if i%2 == 1 {
						k := p2pKey{src: from, dst: r, tag: int32(i / 2 % tags)}
						fa, a := x.ticket(k, &rc)
						fb, b := x.ticket(k, &rc)
						if got, _, _, ok := x.recv(fb, fb.message(b), from, r, 0, 0); !ok || got != val(from, i) {
							t.Errorf("%d workers, rank %d, message %d: got %x %v", workers, r, i, got, ok)
						}
						if got, _, _, ok := x.recv(fa, fa.message(a), from, r, 0, 0); !ok || got != val(from, i-1) {
							t.Errorf("%d workers, rank %d, message %d: got %x %v", workers, r, i-1, got, ok)
						}
					}
				}
				// A flood on one key, far above lim.pending: the sender
				// is held back, then released as the receiver catches up.
				k := p2pKey{src: r, dst: to, tag: -1}
				for i := 0; i < flood; i++ {
					sendAt(x, k, val(r, i), &sc)
				}
				k = p2pKey{src: from, dst: r, tag: -1}
				for i := 0; i < flood; i++ {
					if got, _, _, ok := x.recvNext(k, &rc, 0, 0); !ok || got != val(from, i) {
						t.Fatalf("%d workers, rank %d, flood message %d: got %x %v", workers, r, i, got, ok)
					}
				}
				// Never received: counted at the end.
				for i := 0; i < extra; i++ {
					sendAt(x, p2pKey{src: r, dst: to, tag: -2}, 0, &sc)
				}
				x.finish(r, nil)
			})
		}
		if err := s.run(workers); err != nil {
			t.Fatal(err)
		}
		if got := x.unreceived() + x.droppedSends.Load(); got != n*extra {
			t.Errorf("%d workers: %d messages unreceived, want %d", workers, got, n*extra)
		}
		if x.stalls != 0 {
			t.Errorf("%d workers: %d stalls", workers, x.stalls)
		}
		for r, rs := range x.ranks {
			if len(rs.inbox) > 2*minSweep+2 {
				t.Errorf("%d workers: rank %d's inbox holds %d queues", workers, r, len(rs.inbox))
			}
		}
	}
}

// A sweep races with a sender that cached the queue it drops: the message
// posted into the dropped queue is posted again into the new one, or the
// sweep keeps the queue. The receiver sweeps after every message, when its
// queue is idle, just as the sender posts the next one. (Two goroutines
// without the scheduler, which would run a spinning replay on one worker:
// neither parks, the receiver spins until its message is there.)
func TestInboxSweepRace(t *testing.T) {
	const msgs = 20000
	x := newExchange(2, []bool{true, true}, defaultLimits())
	k := p2pKey{src: 0, dst: 1, tag: 3}
	var got atomic.Int64 // messages received
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		var sc fifoCache
		for i := range msgs {
			for got.Load() < int64(i) {
				runtime.Gosched()
			}
			sendAt(x, k, int64(i), &sc)
		}
	}()
	go func() {
		defer wg.Done()
		var rc fifoCache
		rs := x.ranks[1]
		for i := range msgs {
			f, tk := x.ticket(k, &rc)
			for !f.arrived(f.message(tk)) {
				runtime.Gosched()
			}
			if v, _, _, ok := x.recv(f, f.message(tk), k.src, k.dst, 0, 0); !ok || v != int64(i) {
				t.Errorf("message %d: got %d %v", i, v, ok)
				return
			}
			got.Store(int64(i + 1))
			x.lock(&rs.mu)
			x.sweep(rs)
			x.unlock(&rs.mu)
		}
	}()
	wg.Wait()
	if n := x.unreceived() + x.droppedSends.Load(); n != 0 {
		t.Errorf("%d messages unreceived", n)
	}
}

// With several workers, the members a collective wakes are ordered by rank
// in the direction of the messages the replays parked for since the last
// collective; in arrival order when there is no clear direction.
func TestSortWake(t *testing.T) {
	x := newExchange(4, []bool{true, true, true, true}, defaultLimits())
	for _, c := range []struct {
		up, down int64
		want     []int32
	}{
		{10, 1, []int32{0, 1, 2, 3}},
		{0, 5, []int32{3, 2, 1, 0}},
		{3, 3, []int32{2, 0, 3, 1}},
		{0, 0, []int32{2, 0, 3, 1}},
	} {
		x.waitUp.Add(c.up)
		x.waitDown.Add(c.down)
		rs := []int32{2, 0, 3, 1}
		x.sortWake(rs)
		if !slices.Equal(rs, c.want) {
			t.Errorf("up %d down %d: %v, want %v", c.up, c.down, rs, c.want)
		}
	}
}
