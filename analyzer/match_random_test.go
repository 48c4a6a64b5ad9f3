package analyzer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// matchSink keeps, by rank and call entry, the messages each call
// received, as the replay reports them to a TimelineSink.
type matchSink struct{ got []map[int64][]TimelineMsg }

func (s *matchSink) Start(ranks int) {
	s.got = make([]map[int64][]TimelineMsg, ranks)
	for i := range s.got {
		s.got[i] = map[int64][]TimelineMsg{}
	}
}

func (s *matchSink) Call(rank int, c *TimelineCall) {
	if len(c.Msgs) > 0 {
		s.got[rank][c.Entry] = append([]TimelineMsg(nil), c.Msgs...)
	}
}

func (s *matchSink) Span(int, *TimelineSpan) {}

// randomP2P is a random program of point-to-point calls over 2–4 ranks,
// in rounds, and, by rank and call entry, the messages MPI's matching
// rules give each call that completes receives. Messages go over
// MPI_COMM_WORLD or a communicator of all ranks in reverse order. In each
// round every rank
//   - posts some of its receives with MPI_Irecv,
//   - sends its messages (random destinations and tags) with MPI_Send,
//     MPI_Isend and MPI_Wait at once, MPI_Isend waited at the end of its
//     sends with one MPI_Waitall, or a persistent request (MPI_Send_init
//     once per destination and tag, MPI_Start, MPI_Wait); with cancels, an
//     MPI_Isend cancelled at once is mixed in now and then,
//   - receives the rest with blocking MPI_Recv (some after an MPI_Probe
//     or MPI_Iprobe of the same source and tag) or MPI_Mprobe and
//     MPI_Mrecv, then completes its MPI_Irecv requests
//     with MPI_Waitall, MPI_Wait, MPI_Waitany, an unsuccessful MPI_Test
//     followed by MPI_Wait, or a few at a time by MPI_Waitsome and
//     MPI_Testsome.
//
// A receive names its source and tag or, at random, MPI_ANY_SOURCE or
// MPI_ANY_TAG (resolved by its status). Receives are posted in a random
// order; the receives of one stream (source and tag) get its messages in
// the order they were sent and the receives were posted, wildcard ones
// too (so a specific receive posted while a wildcard MPI_Irecv of its
// stream is pending gets the message after the wildcard one's). Every
// send of a round enters before any receive of the round exits.
//
// With h, each rank calls MPI from h.n threads (MPI_THREAD_MULTIPLE): the
// calls go on, one after the other in time, from a thread drawn at
// random before each phase and each call (hops.hop), so that a request
// is often posted, cancelled and completed by different threads, and the
// rank's batches alternate between threads. MPI's matching knows
// processes, not threads: the messages are the same.
func randomP2P(rng *rand.Rand, cancels bool, h *hops) (*tracetest.Run, []map[int64][]TimelineMsg) {
	n := 2 + rng.IntN(3)
	run, ranks := start(n)
	if h != nil {
		run.ThreadLevel = threadMultiple
	}
	want := make([]map[int64][]TimelineMsg, n)
	for i := range want {
		want[i] = map[int64][]TimelineMsg{}
	}
	// A second communicator of every rank, in reverse order: its rank of
	// world rank r is n−1−r.
	rev := make([]int, n)
	for i := range rev {
		rev[i] = n - 1 - i
	}
	revComm := run.NewComm(rev...)
	for _, k := range ranks {
		k.CommSplit(run.World(), revComm, us)
	}
	// local is world rank r's rank in communicator c (0: WORLD, 1: the
	// reversed one); on the option that puts a call there.
	local := func(c, r int32) int32 {
		if c == 1 {
			return int32(n-1) - r
		}
		return r
	}
	on := func(c int32) []tracetest.Opt {
		if c == 1 {
			return []tracetest.Opt{tracetest.On(revComm)}
		}
		return nil
	}
	// Streams are by world ranks and communicator.
	type stream struct{ src, dst, tag, comm int32 }
	pers := make([]map[stream]tracetest.Req, n)
	for i := range pers {
		pers[i] = map[stream]tracetest.Req{}
	}
	const round = 10 * ms
	for r := range 6 {
		base := ms + int64(r)*round
		// The round's messages, by sender, in send order.
		out := make([][]stream, n)
		for s := range n {
			for range rng.IntN(6) {
				d := int32(rng.IntN(n - 1))
				if d >= int32(s) {
					d++
				}
				out[s] = append(out[s], stream{int32(s), d, int32(rng.IntN(3)), int32(rng.IntN(2))})
			}
		}
		// Each receiver's receives in posting order: a random order of
		// its messages' streams.
		in := make([][]stream, n)
		for s := range n {
			for _, m := range out[s] {
				in[m.dst] = append(in[m.dst], m)
			}
		}
		type recv struct {
			s        stream
			src, tag int32 // as posted
			nonblock bool
		}
		posts := make([][]recv, n)
		for d := range n {
			rng.Shuffle(len(in[d]), func(i, j int) { in[d][i], in[d][j] = in[d][j], in[d][i] })
			k := rng.IntN(len(in[d]) + 1) // the first k are MPI_Irecv
			for i, s := range in[d] {
				rv := recv{s: s, src: local(s.comm, s.src), tag: s.tag, nonblock: i < k}
				if rng.IntN(4) == 0 {
					rv.src = traceformat.AnySource
				}
				if rng.IntN(5) == 0 {
					rv.tag = traceformat.AnyTag
				}
				posts[d] = append(posts[d], rv)
			}
		}
		// Phase 1: the MPI_Irecv calls.
		reqs := make([][]tracetest.Req, n)
		for d := range n {
			h.hop(ranks[d])
			ranks[d].At(base + 10*us)
			for _, rv := range posts[d] {
				if !rv.nonblock {
					continue
				}
				h.hop(ranks[d])
				st := []int32{local(rv.s.comm, rv.s.src), rv.s.tag}
				if rv.s.comm == 1 {
					reqs[d] = append(reqs[d], ranks[d].IrecvOn(revComm, rv.src, rv.tag, 8, us, st...))
				} else {
					reqs[d] = append(reqs[d], ranks[d].Irecv(rv.src, rv.tag, 8, us, st...))
				}
			}
		}
		// Phase 2: the sends.
		sent := map[stream][]int64{}
		for s := range n {
			h.hop(ranks[s])
			k := ranks[s].At(base + ms)
			var later []tracetest.Req
			for _, m := range out[s] {
				dst, o := local(m.comm, m.dst), on(m.comm)
				if cancels && rng.IntN(4) == 0 {
					q := k.Isend(dst, m.tag, 8, us, o...)
					h.hop(k)
					k.Cancel(q, us)
					h.hop(k)
					k.Wait(q, us)
				}
				h.hop(k)
				k.Compute(2 * us)
				sent[m] = append(sent[m], k.Now())
				switch rng.IntN(4) {
				case 0:
					k.Send(dst, m.tag, 8, us, o...)
				case 1:
					q := k.Isend(dst, m.tag, 8, us, o...)
					k.Wait(q, us)
				case 2:
					later = append(later, k.Isend(dst, m.tag, 8, us, o...))
				case 3:
					q, ok := pers[s][m]
					if !ok {
						// MPI_Send_init before the time taken as the send's.
						q = k.SendInit(dst, m.tag, 8, 0, o...)
					}
					pers[s][m] = q
					k.Start(q, us).Wait(q, us)
				}
			}
			if len(later) > 0 {
				h.hop(k)
				k.Compute(us).Waitall(later, us)
			}
		}
		// The messages of each stream, to the receives in posting order.
		next := map[stream]int{}
		got := func(s stream) TimelineMsg {
			i := next[s]
			next[s]++
			return TimelineMsg{Src: s.src, Send: sent[s][i]}
		}
		// Phase 3: blocking receives, then the MPI_Irecv requests
		// completed. A request's message is the one its stream gives at
		// its posting; blocking receives were posted after every
		// MPI_Irecv of the round.
		for d := range n {
			h.hop(ranks[d])
			k := ranks[d].At(base + 5*ms)
			var pending []TimelineMsg
			for _, rv := range posts[d] {
				if rv.nonblock {
					pending = append(pending, got(rv.s))
				}
			}
			for _, rv := range posts[d] {
				if rv.nonblock {
					continue
				}
				h.hop(k)
				k.Compute(2 * us)
				st := tracetest.Status(local(rv.s.comm, rv.s.src), rv.s.tag)
				o := append(on(rv.s.comm), st)
				probe := traceformat.Event{Attr: traceformat.AttrRecv, RecvPeer: rv.src, RecvTag: rv.tag}
				switch rng.IntN(6) {
				case 0:
					// MPI_Probe first, with the receive's source and
					// tag: it finds the receive's message and takes
					// nothing.
					k.Call("MPI_Probe", us, probe, o...)
					k.Compute(us)
				case 1:
					// MPI_Iprobe: twice nothing, then found.
					none := probe
					none.Attr |= traceformat.AttrFlag
					k.Call("MPI_Iprobe", us, none, on(rv.s.comm)...)
					k.Call("MPI_Iprobe", us, none, on(rv.s.comm)...)
					probe.Attr |= traceformat.AttrFlag
					probe.Flag = true
					k.Call("MPI_Iprobe", us, probe, o...)
					k.Compute(us)
				case 2:
					// MPI_Mprobe takes the message (it is received
					// there), MPI_Mrecv receives it by its handle.
					want[d][k.Now()] = []TimelineMsg{got(rv.s)}
					k.Call("MPI_Mprobe", us, probe, o...)
					k.Compute(us)
					k.Call("MPI_Mrecv", us, traceformat.Event{Attr: traceformat.AttrRecvBytes | traceformat.AttrStatus, RecvBytes: 8,
						Status: []traceformat.Status{{Source: local(rv.s.comm, rv.s.src), Tag: rv.s.tag}}})
					continue
				}
				want[d][k.Now()] = []TimelineMsg{got(rv.s)}
				k.Recv(rv.src, rv.tag, 8, us, o...)
			}
			if len(reqs[d]) == 0 {
				continue
			}
			h.hop(k)
			k.Compute(2 * us)
			switch rng.IntN(5) {
			case 0:
				want[d][k.Now()] = pending
				k.Waitall(reqs[d], us)
			case 1:
				// MPI_Waitsome or MPI_Testsome of a few at a time,
				// in a random order.
				order := rng.Perm(len(reqs[d]))
				for len(order) > 0 {
					c := 1 + rng.IntN(len(order))
					var rs []tracetest.Req
					var ms []TimelineMsg
					for _, i := range order[:c] {
						rs, ms = append(rs, reqs[d][i]), append(ms, pending[i])
					}
					order = order[c:]
					h.hop(k)
					k.Compute(2 * us)
					want[d][k.Now()] = ms
					if rng.IntN(2) == 0 {
						k.Waitsome(rs, us)
					} else {
						k.Testsome(rs, us)
					}
				}
			default:
				order := rng.Perm(len(reqs[d]))
				kind := rng.IntN(3)
				for _, i := range order {
					h.hop(k)
					k.Compute(2 * us)
					switch kind {
					case 0:
						want[d][k.Now()] = pending[i : i+1]
						k.Wait(reqs[d][i], us)
					case 1:
						want[d][k.Now()] = pending[i : i+1]
						k.Waitany(reqs[d][i], us)
					case 2:
						k.Test(reqs[d][i], false, us)
						h.hop(k)
						k.Compute(us)
						want[d][k.Now()] = pending[i : i+1]
						k.Wait(reqs[d][i], us)
					}
				}
			}
		}
	}
	for s := range n {
		h.hop(ranks[s])
		for _, q := range pers[s] {
			ranks[s].RequestFree(q, us)
		}
		// (MPI_Finalize is the MPI_Init thread's.)
		now := ranks[s].Now()
		ranks[s].Thread(0).At(now)
	}
	finish(run)
	return run, want
}

// hops draws the thread of a rank's next calls in randomP2P.
type hops struct {
	rng *rand.Rand
	n   int
}

// hop makes k's calls from now on those of a thread drawn at random,
// from k's current time on; nothing on one thread (h nil).
func (h *hops) hop(k *tracetest.Rank) {
	if h == nil {
		return
	}
	now := k.Now()
	k.Thread(uint32(h.rng.IntN(h.n))).At(now)
}

// TestRandomMatching: in random programs of point-to-point calls
// (randomP2P) every receive gets the message MPI's matching rules give
// it, nothing is unmatched, and nothing is warned of, with 1, 2 and 4
// replay workers; with cancelled sends on one worker (with several, a
// receive replayed before the sender's cancellation may take the
// cancelled message: docs/characteristics.md). Half the programs, those
// without cancels, also go through analyzeOpts (invariants, the
// distributed replay over 1–4 processes, the replay on the worker's
// stack).
func TestRandomMatching(t *testing.T) {
	for seed := range 60 {
		cancels := seed%2 == 1
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		run, want := randomP2P(rng, cancels, nil)
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 4} {
			checkMatching(t, dir, want, w, fmt.Sprintf("seed %d (cancels %v), %d workers", seed, cancels, w))
		}
		analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1})
	}
}

// TestRandomMatchingThreads is TestRandomMatching with two or three
// threads calling MPI on every rank (randomP2P's hops): a wildcard
// MPI_Irecv of one thread, a receive of its key by another, and the
// completion by a third are matched as on one thread (the wildcard
// lookahead through the threads' calls, farStatusThreads), and so are
// cancelled sends (cancelledAhead). On one worker and two.
func TestRandomMatchingThreads(t *testing.T) {
	for seed := range 40 {
		cancels := seed%2 == 1
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		h := &hops{rng: rand.New(rand.NewPCG(uint64(seed), 17)), n: 2 + seed%4/2}
		run, want := randomP2P(rng, cancels, h)
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2} {
			checkMatching(t, dir, want, w, fmt.Sprintf("seed %d (cancels %v, %d threads), %d workers", seed, cancels, h.n, w))
		}
	}
}

// checkMatching analyzes the traces in dir on w workers and fails t
// unless every call received the messages of want (randomP2P's), with
// nothing unmatched and nothing warned of.
func checkMatching(t *testing.T, dir string, want []map[int64][]TimelineMsg, w int, name string) {
	t.Helper()
	sink := &matchSink{}
	rep, warned := analyzeSink(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: w}, sink)
	if len(warned) > 0 || rep.Unmatched != nil {
		t.Errorf("%s: warnings %q, unmatched %+v", name, warned, rep.Unmatched)
	}
	cmpMsg := func(a, b TimelineMsg) int {
		if a.Src != b.Src {
			return int(a.Src - b.Src)
		}
		return int(a.Send - b.Send)
	}
	for r := range want {
		for entry, msgs := range want[r] {
			g := sink.got[r][entry]
			g, m := slices.SortedFunc(slices.Values(g), cmpMsg), slices.SortedFunc(slices.Values(msgs), cmpMsg)
			if !slices.Equal(g, m) {
				t.Errorf("%s: rank %d, call at %d ns received %+v, want %+v", name, r, entry, g, m)
			}
		}
		for entry, g := range sink.got[r] {
			if _, ok := want[r][entry]; !ok {
				t.Errorf("%s: rank %d, call at %d ns received %+v, want none", name, r, entry, g)
			}
		}
	}
}
