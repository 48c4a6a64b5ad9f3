package analyzer

import (
	"math/rand/v2"

	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// The random programs of TestRandomClockRepairs (clc_random_test.go): their
// calls, recorded on lagging clocks, and what the model needs of them.

// Kinds of clcEv.
const (
	ceInit = iota
	ceFinalize
	cePcontrol
	ceSend     // MPI_Send or MPI_Ssend: a blocking send, which a late receiver may charge (§8.6)
	ceIsend    // MPI_Isend or MPI_Issend
	ceIrecv    // MPI_Irecv
	ceRecv     // MPI_Recv
	ceProbe    // MPI_Probe before an MPI_Recv
	ceWait     // MPI_Wait or MPI_Waitall, of receives or of one send
	ceColl     // MPI_Barrier, MPI_Allreduce, MPI_Bcast, MPI_Reduce
	ceSys      // MPI_Comm_rank, MPI_Comm_split
	ceSendrecv // MPI_Sendrecv or MPI_Sendrecv_replace: msgs are the message sent, then the one received
	ceIcoll    // MPI_Ibarrier or MPI_Iallreduce
	ceIcollEnd // the MPI_Wait or successful MPI_Test completing an ceIcoll
)

// clcEv is one call of a random program: its times as recorded (raw, on
// the rank's clock less the offset alignment removes) and as the model
// repairs them (t).
type clcEv struct {
	kind  int
	fn    string
	raw   [2]int64 // entry, exit as recorded
	t     [2]int64 // entry, exit after the model's repair
	level int32    // MPI_Pcontrol's
	arg   int64
	// msgs: the messages the call sends, posts (MPI_Irecv), probes or
	// completes (MPI_Recv, a Wait of receives); the send a Wait of an
	// MPI_Isend completes.
	msgs  []int
	coll  int    // the collective instance (ceColl, ceIcoll, ceIcollEnd)
	ivl   string // the innermost interval open at the call, "1/2" ("": none)
	moved bool   // by a backward amortization (clcModel)
}

// clcMsg is a message (8 bytes) and the calls that handle it, as (rank,
// index of the call) pairs.
type clcMsg struct {
	src, dst int
	send     [2]int // MPI_Send or MPI_Isend
	post     [2]int // the MPI_Recv or MPI_Irecv that posted the receive
}

// clcColl is a collective instance: kind as randomColl's, the root (a
// rank of the communicator), the members (world ranks in communicator
// order) and each member's call.
type clcColl struct {
	kind, root int
	members    []int
	ev         map[int]int
}

// clcProg is a random program. Each rank has a true clock (now) and a lag:
// a call at true time t is recorded at t − lag. The lag only changes
// between calls: it grows while the rank computes (its clock runs slow,
// never backward) and now and then drops to 0 (its clock jumps forward).
// The program is consistent in true time; the lags make some of its
// receives and collectives violate the clock condition in recorded time.
type clcProg struct {
	rng   *rand.Rand
	ranks []*tracetest.Rank
	now   []int64 // true time, by rank
	lag   []int64
	evs   [][]clcEv
	msgs  []clcMsg
	colls []clcColl
	open  [][]int64 // by rank, the numbers of the intervals open
	sec   []int64   // by rank, the sequential section open (0: none)
	// thr: the rank has a second thread (MPI_THREAD_MULTIPLE), which
	// calls MPI_Comm_rank while the first computes (§8.10).
	thr []bool
}

func (p *clcProg) micros(lo, hi int) int64 { return int64(lo+p.rng.IntN(hi-lo+1)) * us }

// call records a call of rank r entering at true time at for dur ns (rec
// records it on the trace, at the cursor) and returns its index.
func (p *clcProg) call(r, kind int, fn string, at, dur int64, rec func(k *tracetest.Rank)) int {
	k := p.ranks[r]
	k.At(at - p.lag[r])
	rec(k)
	p.now[r] = at + dur
	var ivl []int
	for _, num := range p.open[r] {
		ivl = append(ivl, int(num))
	}
	p.evs[r] = append(p.evs[r], clcEv{kind: kind, fn: fn, raw: [2]int64{at - p.lag[r], at - p.lag[r] + dur}, ivl: intervals.PathKey(ivl)})
	return len(p.evs[r]) - 1
}

// compute advances rank r by up to hi µs of computation, during which its
// clock may slow down (lag grows by at most the time computed, so that
// its recorded times never go back) or jump forward to the true time.
func (p *clcProg) compute(r int, hi int) {
	c := p.micros(0, hi)
	switch x := p.rng.IntN(8); {
	case x == 0:
		p.lag[r] = 0
	case x < 3:
		p.lag[r] = min(p.lag[r]+c*int64(p.rng.IntN(101))/100, 300*us)
	}
	p.now[r] += c
}

// gap is rank r's time between two calls: computation, now and then a
// long stretch of it (where the lag builds up), and now and then an
// MPI_Pcontrol that enters an interval (numbers 1–3, up to three deep) or
// leaves the innermost one.
func (p *clcProg) gap(r int) {
	hi := 20
	if p.rng.IntN(6) == 0 {
		hi = 200
	}
	p.compute(r, hi)
	if p.thr[r] && p.rng.IntN(4) == 0 {
		p.thread1(r)
	}
	if p.rng.IntN(3) != 0 {
		return
	}
	depth := len(p.open[r])
	var level int32 = 101
	var arg int64
	switch x := p.rng.IntN(20); {
	case x <= 2 && p.sec[r] == 0:
		// Sequential sections 1 and 2 (§3.8), across the intervals'
		// boundaries.
		p.sec[r] = int64(1 + p.rng.IntN(2))
		p.pcontrol(r, 102, p.sec[r])
		p.compute(r, 20)
		return
	case x <= 3 && p.sec[r] != 0:
		p.pcontrol(r, 103, p.sec[r])
		p.sec[r] = 0
		p.compute(r, 20)
		return
	}
	if depth < 3 && (depth == 0 || p.rng.IntN(20) < 11) {
		level, arg = 100, int64(1+p.rng.IntN(3))
		p.open[r] = append(p.open[r], arg)
	} else {
		arg = p.open[r][depth-1]
		p.open[r] = p.open[r][:depth-1]
	}
	p.pcontrol(r, level, arg)
	p.compute(r, 20)
}

// thread1 records a call of rank r's second thread while its first
// computes (so that their calls never overlap: Communications is their
// sum, §8.10).
func (p *clcProg) thread1(r int) {
	k := p.ranks[r]
	k.Thread(1)
	dur := p.micros(1, 5)
	p.call(r, ceSys, "MPI_Comm_rank", p.now[r], dur, func(k *tracetest.Rank) { k.System("MPI_Comm_rank", dur) })
	k.Thread(0)
	p.compute(r, 5)
}

func (p *clcProg) pcontrol(r int, level int32, arg int64) {
	dur := p.micros(0, 2)
	i := p.call(r, cePcontrol, "MPI_Pcontrol", p.now[r], dur, func(k *tracetest.Rank) {
		k.Call("MPI_Pcontrol", dur, traceformat.Event{Attr: traceformat.AttrPcontrol, PcLevel: level, PcArg: arg})
	})
	p.evs[r][i].level, p.evs[r][i].arg = level, arg
}

func (p *clcProg) newMsg(s, d int) int {
	p.msgs = append(p.msgs, clcMsg{src: s, dst: d})
	return len(p.msgs) - 1
}

// p2p sends one message from s to d (tag 0): MPI_Send (short, or long
// enough now and then to be in progress when the receive is posted),
// MPI_Ssend (returning after the receive is posted), or MPI_Isend or
// MPI_Issend (whose wait returns after the receive is posted, now and then
// followed by a reply) and MPI_Wait; received by MPI_Recv, MPI_Probe and MPI_Recv,
// or MPI_Irecv and MPI_Wait. Gaps between the calls may change either
// rank's interval and lag.
func (p *clcProg) p2p(s, d int) {
	p.gap(s)
	p.gap(d)
	m := p.newMsg(s, d)
	msg := &p.msgs[m]
	ts := p.now[s] + p.micros(0, 60)
	tp := p.now[d] + p.micros(0, 60)
	post := tp // in true time
	switch p.rng.IntN(3) {
	case 0:
		dur := max(tp, ts) + p.micros(1, 10) - tp
		i := p.call(d, ceRecv, "MPI_Recv", tp, dur, func(k *tracetest.Rank) { k.Recv(int32(s), 0, 8, dur) })
		p.evs[d][i].msgs = []int{m}
		msg.post = [2]int{d, i}
	case 1:
		dur := max(tp, ts) + p.micros(1, 10) - tp
		i := p.call(d, ceProbe, "MPI_Probe", tp, dur, func(k *tracetest.Rank) {
			k.Call("MPI_Probe", dur, probeEv(int32(s), 0, traceformat.Status{Source: int32(s)}))
		})
		p.evs[d][i].msgs = []int{m}
		p.gap(d)
		dur, post = p.micros(1, 3), p.now[d]
		i = p.call(d, ceRecv, "MPI_Recv", p.now[d], dur, func(k *tracetest.Rank) { k.Recv(int32(s), 0, 8, dur) })
		p.evs[d][i].msgs = []int{m}
		msg.post = [2]int{d, i}
	default:
		var q tracetest.Req
		i := p.call(d, ceIrecv, "MPI_Irecv", tp, us, func(k *tracetest.Rank) { q = k.Irecv(int32(s), 0, 8, us) })
		p.evs[d][i].msgs = []int{m}
		msg.post = [2]int{d, i}
		p.gap(d)
		tw := p.now[d] + p.micros(0, 30)
		dur := max(tw, ts) + p.micros(1, 10) - tw
		i = p.call(d, ceWait, "MPI_Wait", tw, dur, func(k *tracetest.Rank) { k.Wait(q, dur) })
		p.evs[d][i].msgs = []int{m}
	}
	mode := p.rng.IntN(4)
	switch mode {
	case 0:
		dur := p.micros(1, 2)
		if p.rng.IntN(2) == 0 {
			dur = p.micros(1, 100)
		}
		i := p.call(s, ceSend, "MPI_Send", ts, dur, func(k *tracetest.Rank) { k.Send(int32(d), 0, 8, dur) })
		p.evs[s][i].msgs = []int{m}
		msg.send = [2]int{s, i}
		return
	case 1:
		// MPI_Ssend returns once the receive is posted.
		dur := max(ts, post) + p.micros(1, 10) - ts
		i := p.call(s, ceSend, "MPI_Ssend", ts, dur, func(k *tracetest.Rank) { k.Ssend(int32(d), 0, 8, dur) })
		p.evs[s][i].msgs = []int{m}
		msg.send = [2]int{s, i}
		return
	}
	var q tracetest.Req
	fn, isend := "MPI_Isend", (*tracetest.Rank).Isend
	if mode == 3 {
		fn, isend = "MPI_Issend", (*tracetest.Rank).Issend
	}
	i := p.call(s, ceIsend, fn, ts, us, func(k *tracetest.Rank) { q = isend(k, int32(d), 0, 8, us) })
	p.evs[s][i].msgs = []int{m}
	msg.send = [2]int{s, i}
	p.gap(s)
	tw := p.now[s]
	dur := p.micros(1, 5)
	if mode == 3 {
		// MPI_Issend's wait returns once the receive is posted.
		dur = max(tw, post) + p.micros(1, 10) - tw
	}
	i = p.call(s, ceWait, "MPI_Wait", tw, dur, func(k *tracetest.Rank) { k.Wait(q, dur) })
	p.evs[s][i].msgs = []int{m}
	if mode == 3 {
		// A reply, whose receive may be repaired right after the wait
		// (a fixed point: it handed its times, §8.6), or a second
		// message, whose receive may be repaired right after the first
		// (a fixed point: it handed its posting).
		switch p.rng.IntN(3) {
		case 0:
			p.p2p(d, s)
		case 1:
			p.p2p(s, d)
		}
	}
}

// cross exchanges a message each way between a and b (tag 3) with
// nonblocking calls whose windows interleave on a: a posts MPI_Irecv from
// b, starts MPI_Isend to b, and completes the send (MPI_Wait) before the
// receive (MPI_Wait); b sends with MPI_Isend and MPI_Wait, now and then
// before a's MPI_Isend, and receives with MPI_Recv. The time a's first
// Wait covers (§8.7) may then split the window of its second.
func (p *clcProg) cross(a, b int) {
	p.gap(a)
	p.gap(b)
	ma, mb := p.newMsg(a, b), p.newMsg(b, a)
	var qr, qs, qb tracetest.Req
	i := p.call(a, ceIrecv, "MPI_Irecv", p.now[a]+p.micros(0, 20), us, func(k *tracetest.Rank) { qr = k.Irecv(int32(b), 3, 8, us) })
	p.evs[a][i].msgs = []int{mb}
	p.msgs[mb].post = [2]int{a, i}
	p.gap(a)
	ta := p.now[a] + p.micros(0, 20)
	i = p.call(a, ceIsend, "MPI_Isend", ta, us, func(k *tracetest.Rank) { qs = k.Isend(int32(b), 3, 8, us) })
	p.evs[a][i].msgs = []int{ma}
	p.msgs[ma].send = [2]int{a, i}
	tb := p.now[b] + p.micros(0, 60)
	i = p.call(b, ceIsend, "MPI_Isend", tb, us, func(k *tracetest.Rank) { qb = k.Isend(int32(a), 3, 8, us) })
	p.evs[b][i].msgs = []int{mb}
	p.msgs[mb].send = [2]int{b, i}
	p.gap(b)
	dur := p.micros(1, 5)
	i = p.call(b, ceWait, "MPI_Wait", p.now[b], dur, func(k *tracetest.Rank) { k.Wait(qb, dur) })
	p.evs[b][i].msgs = []int{mb}
	p.gap(b)
	tr := p.now[b]
	dur = max(tr, ta) + p.micros(1, 10) - tr
	i = p.call(b, ceRecv, "MPI_Recv", tr, dur, func(k *tracetest.Rank) { k.Recv(int32(a), 3, 8, dur) })
	p.evs[b][i].msgs = []int{ma}
	p.msgs[ma].post = [2]int{b, i}
	p.gap(a)
	dur = p.micros(1, 5)
	i = p.call(a, ceWait, "MPI_Wait", p.now[a], dur, func(k *tracetest.Rank) { k.Wait(qs, dur) })
	p.evs[a][i].msgs = []int{ma}
	p.gap(a)
	tw := p.now[a]
	dur = max(tw, tb) + p.micros(1, 10) - tw
	i = p.call(a, ceWait, "MPI_Wait", tw, dur, func(k *tracetest.Rank) { k.Wait(qr, dur) })
	p.evs[a][i].msgs = []int{mb}
}

// swap exchanges a message each way between a and b (tag 4): a calls
// MPI_Sendrecv or MPI_Sendrecv_replace, b the same, or MPI_Ssend (whose
// receive a's call posts) then MPI_Recv. Each call leaves once the message
// it receives was sent and, for MPI_Ssend, once its receive was posted.
func (p *clcProg) swap(a, b int) {
	p.gap(a)
	p.gap(b)
	ma, mb := p.newMsg(a, b), p.newMsg(b, a)
	ta, tb := p.now[a]+p.micros(0, 60), p.now[b]+p.micros(0, 60)
	sendrecv := func(r, o int, at, from int64, out, in int) {
		dur := max(at, from) + p.micros(1, 10) - at
		fn := "MPI_Sendrecv"
		rec := func(k *tracetest.Rank) { k.Sendrecv(int32(o), 4, 8, int32(o), 4, 8, dur) }
		if p.rng.IntN(2) == 0 {
			fn = "MPI_Sendrecv_replace"
			rec = func(k *tracetest.Rank) { k.SendrecvReplace(int32(o), 4, int32(o), 4, 8, dur) }
		}
		i := p.call(r, ceSendrecv, fn, at, dur, rec)
		p.evs[r][i].msgs = []int{out, in}
		p.msgs[out].send, p.msgs[in].post = [2]int{r, i}, [2]int{r, i}
	}
	sendrecv(a, b, ta, tb, ma, mb)
	if p.rng.IntN(2) == 0 {
		sendrecv(b, a, tb, ta, mb, ma)
		return
	}
	dur := max(tb, ta) + p.micros(1, 10) - tb
	i := p.call(b, ceSend, "MPI_Ssend", tb, dur, func(k *tracetest.Rank) { k.Ssend(int32(a), 4, 8, dur) })
	p.evs[b][i].msgs = []int{mb}
	p.msgs[mb].send = [2]int{b, i}
	p.gap(b)
	tr := p.now[b]
	dur = max(tr, ta) + p.micros(1, 10) - tr
	i = p.call(b, ceRecv, "MPI_Recv", tr, dur, func(k *tracetest.Rank) { k.Recv(int32(a), 4, 8, dur) })
	p.evs[b][i].msgs = []int{ma}
	p.msgs[ma].post = [2]int{b, i}
}

// gather sends one message from every other rank to d (tag 1), which
// posts an MPI_Irecv for each and completes them with one MPI_Waitall.
func (p *clcProg) gather(d int) {
	var reqs []tracetest.Req
	var ms []int
	for s := range p.ranks {
		if s == d {
			continue
		}
		p.gap(d)
		m := p.newMsg(s, d)
		var q tracetest.Req
		i := p.call(d, ceIrecv, "MPI_Irecv", p.now[d], us, func(k *tracetest.Rank) { q = k.Irecv(int32(s), 1, 8, us) })
		p.evs[d][i].msgs = []int{m}
		p.msgs[m].post = [2]int{d, i}
		reqs, ms = append(reqs, q), append(ms, m)
	}
	last := int64(0)
	for _, m := range ms {
		s := p.msgs[m].src
		p.gap(s)
		ts := p.now[s] + p.micros(0, 60)
		dur := p.micros(1, 100)
		i := p.call(s, ceSend, "MPI_Send", ts, dur, func(k *tracetest.Rank) { k.Send(int32(d), 1, 8, dur) })
		p.evs[s][i].msgs = []int{m}
		p.msgs[m].send = [2]int{s, i}
		last = max(last, ts)
	}
	p.gap(d)
	tw := p.now[d]
	dur := max(tw, last) + p.micros(1, 10) - tw
	i := p.call(d, ceWait, "MPI_Waitall", tw, dur, func(k *tracetest.Rank) { k.Waitall(reqs, dur) })
	p.evs[d][i].msgs = ms
}

// collective runs one blocking collective on c (randomColl's kinds), every
// member leaving after the last entered.
func (p *clcProg) collective(c *tracetest.Comm) {
	cl := clcColl{kind: p.rng.IntN(4), root: p.rng.IntN(len(c.Members)), members: c.Members, ev: map[int]int{}}
	entry := map[int]int64{}
	last := int64(0)
	for _, r := range c.Members {
		p.gap(r)
		entry[r] = p.now[r] + p.micros(1, 50)
		last = max(last, entry[r])
	}
	for _, r := range c.Members {
		dur := last + p.micros(1, 20) - entry[r]
		i := p.call(r, ceColl, []string{"MPI_Barrier", "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce"}[cl.kind], entry[r], dur,
			func(k *tracetest.Rank) { randomColl(k, cl.kind, int32(cl.root), dur, tracetest.On(c)) })
		p.evs[r][i].coll = len(p.colls)
		cl.ev[r] = i
	}
	p.colls = append(p.colls, cl)
}

// icollective runs one nonblocking collective on c (MPI_Ibarrier or
// MPI_Iallreduce), each member completing it after a gap with MPI_Wait or
// a successful MPI_Test, which leaves after the last member started. Its
// calls are fixed points and are not repaired (§8.5: the completing call's
// Potential Sync is capped by its own time).
func (p *clcProg) icollective(c *tracetest.Comm) {
	cl := clcColl{kind: 4 + p.rng.IntN(2), members: c.Members, ev: map[int]int{}}
	fn := []string{"MPI_Ibarrier", "MPI_Iallreduce"}[cl.kind-4]
	reqs := map[int]tracetest.Req{}
	last := int64(0)
	for _, r := range c.Members {
		p.gap(r)
		at := p.now[r] + p.micros(1, 50)
		i := p.call(r, ceIcoll, fn, at, us, func(k *tracetest.Rank) {
			if cl.kind == 4 {
				reqs[r] = k.Ibarrier(us, tracetest.On(c))
			} else {
				reqs[r] = k.Iallreduce(8, us, tracetest.On(c))
			}
		})
		p.evs[r][i].coll = len(p.colls)
		cl.ev[r] = i
		last = max(last, at)
	}
	for _, r := range c.Members {
		p.gap(r)
		tw := p.now[r] + p.micros(0, 30)
		dur := max(tw, last) + p.micros(1, 10) - tw
		fn, end := "MPI_Wait", func(k *tracetest.Rank) { k.Wait(reqs[r], dur) }
		if p.rng.IntN(3) == 0 {
			fn, end = "MPI_Test", func(k *tracetest.Rank) { k.Test(reqs[r], true, dur) }
		}
		i := p.call(r, ceIcollEnd, fn, tw, dur, end)
		p.evs[r][i].coll = len(p.colls)
	}
	p.colls = append(p.colls, cl)
}

// randomClockRepairs builds a random program over 2–4 ranks: MPI_Init,
// two communicators (all ranks in reverse order, all but the last), 40
// steps of messages, collectives and system calls with intervals entered
// and left at random between each rank's calls, and MPI_Finalize. Every
// rank but 0 has its clock offset by up to ±1 s, which the alignment
// removes.
func randomClockRepairs(rng *rand.Rand) (*tracetest.Run, *clcProg) {
	n := 2 + rng.IntN(3)
	run, ranks := start(n)
	p := &clcProg{rng: rng, ranks: ranks, now: make([]int64, n), lag: make([]int64, n), evs: make([][]clcEv, n), open: make([][]int64, n),
		sec: make([]int64, n), thr: make([]bool, n)}
	if rng.IntN(4) == 0 {
		// Some ranks have a second thread.
		run.ThreadLevel = 3
		for r := range p.thr {
			p.thr[r] = rng.IntN(2) == 0
		}
	}
	for r, k := range ranks {
		p.now[r] = k.Now()
		p.evs[r] = []clcEv{{kind: ceInit, fn: "MPI_Init", raw: [2]int64{0, us}}}
		if r > 0 {
			k.Skew(int64(rng.IntN(2001)-1000)*ms, 0)
		}
	}
	rev := make([]int, n)
	for i := range rev {
		rev[i] = n - 1 - i
	}
	for r := range ranks {
		if p.thr[r] {
			p.compute(r, 5)
			p.thread1(r)
		}
	}
	comms := []*tracetest.Comm{run.World(), run.NewComm(rev...), run.NewComm(rev[1:]...)}
	for _, c := range comms[1:] {
		for _, r := range c.Members {
			p.call(r, ceSys, "MPI_Comm_split", p.now[r], us, func(k *tracetest.Rank) { k.CommSplit(run.World(), c, us) })
		}
	}
	for range 40 {
		switch x := rng.IntN(12); {
		case x < 6:
			s, d := distinctPair(rng, n)
			switch x {
			case 5:
				p.gather(d)
			case 4:
				p.cross(s, d)
			case 3:
				p.swap(s, d)
			default:
				p.p2p(s, d)
			}
		case x < 10:
			if c := comms[rng.IntN(len(comms))]; x == 9 {
				p.icollective(c)
			} else {
				p.collective(c)
			}
		default:
			r := rng.IntN(n)
			p.gap(r)
			dur := p.micros(1, 10)
			p.call(r, ceSys, "MPI_Comm_rank", p.now[r], dur, func(k *tracetest.Rank) { k.System("MPI_Comm_rank", dur) })
		}
	}
	for r := range ranks {
		p.gap(r)
		if p.sec[r] != 0 {
			p.pcontrol(r, 103, p.sec[r])
		}
		for len(p.open[r]) > 0 {
			num := p.open[r][len(p.open[r])-1]
			p.open[r] = p.open[r][:len(p.open[r])-1]
			p.pcontrol(r, 101, num)
		}
		p.compute(r, 20)
		p.call(r, ceFinalize, "MPI_Finalize", p.now[r], us, func(k *tracetest.Rank) { k.Finalize(us) })
	}
	return run, p
}
