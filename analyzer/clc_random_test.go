package analyzer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// TestRandomClockRepairs checks the controlled logical clock (clc.go;
// docs/report-format.md, ClockViolations and "Clock-condition correction")
// on random programs whose receivers' clocks lag for stretches, after the
// alignment would have removed the clocks' offsets: receives, probes,
// Waits and Waitalls that end before their sends started, and collectives
// left before the entries they depend on. A model written from the docs
// repairs the recorded times itself (clcModel) and the figures of every
// interval are computed from its times (the accounting of
// TestRandomIntervals' model, ivlProg, and its comparison,
// checkIntervals); the report's clock_violations, every replayed call's
// times and the messages' send entries (a TimelineSink) must agree with
// it.

// Kinds of clcEv.
const (
	ceInit = iota
	ceFinalize
	cePcontrol
	ceSend  // MPI_Send or MPI_Ssend: a blocking send, which a late receiver may charge (§8.6)
	ceIsend // MPI_Isend
	ceIrecv // MPI_Irecv
	ceRecv  // MPI_Recv
	ceProbe // MPI_Probe before an MPI_Recv
	ceWait  // MPI_Wait or MPI_Waitall, of receives or of one send
	ceColl  // MPI_Barrier, MPI_Allreduce, MPI_Bcast, MPI_Reduce
	ceSys   // MPI_Comm_rank, MPI_Comm_split
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
	msgs []int
	coll int    // the collective instance (ceColl)
	ivl  string // the innermost interval open at the call, "1/2" ("": none)
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
	if p.rng.IntN(3) != 0 {
		return
	}
	depth := len(p.open[r])
	var level int32 = 101
	var arg int64
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
// MPI_Ssend (returning after the receive is posted), or MPI_Isend and
// MPI_Wait; received by MPI_Recv, MPI_Probe and MPI_Recv,
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
	switch p.rng.IntN(3) {
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
	i := p.call(s, ceIsend, "MPI_Isend", ts, us, func(k *tracetest.Rank) { q = k.Isend(int32(d), 0, 8, us) })
	p.evs[s][i].msgs = []int{m}
	msg.send = [2]int{s, i}
	p.gap(s)
	dur := p.micros(1, 5)
	i = p.call(s, ceWait, "MPI_Wait", p.now[s], dur, func(k *tracetest.Rank) { k.Wait(q, dur) })
	p.evs[s][i].msgs = []int{m}
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

// randomClockRepairs builds a random program over 2–4 ranks: MPI_Init,
// two communicators (all ranks in reverse order, all but the last), 40
// steps of messages, collectives and system calls with intervals entered
// and left at random between each rank's calls, and MPI_Finalize. Every
// rank but 0 has its clock offset by up to ±1 s, which the alignment
// removes.
func randomClockRepairs(rng *rand.Rand) (*tracetest.Run, *clcProg) {
	n := 2 + rng.IntN(3)
	run, ranks := start(n)
	p := &clcProg{rng: rng, ranks: ranks, now: make([]int64, n), lag: make([]int64, n), evs: make([][]clcEv, n), open: make([][]int64, n)}
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
	comms := []*tracetest.Comm{run.World(), run.NewComm(rev...), run.NewComm(rev[1:]...)}
	for _, c := range comms[1:] {
		for _, r := range c.Members {
			p.call(r, ceSys, "MPI_Comm_split", p.now[r], us, func(k *tracetest.Rank) { k.CommSplit(run.World(), c, us) })
		}
	}
	for range 40 {
		switch x := rng.IntN(12); {
		case x < 6:
			s := rng.IntN(n)
			d := rng.IntN(n - 1)
			if d >= s {
				d++
			}
			if x == 5 {
				p.gather(d)
			} else if x == 4 {
				p.cross(s, d)
			} else {
				p.p2p(s, d)
			}
		case x < 10:
			p.collective(comms[rng.IntN(len(comms))])
		default:
			r := rng.IntN(n)
			p.gap(r)
			dur := p.micros(1, 10)
			p.call(r, ceSys, "MPI_Comm_rank", p.now[r], dur, func(k *tracetest.Rank) { k.System("MPI_Comm_rank", dur) })
		}
	}
	for r := range ranks {
		p.gap(r)
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

// clcBreak, when set (DTPA_CLC_BREAK=n), breaks the model in way n, to
// check that the test notices (each must fail it):
//  1. no repair at all; 2. forward jumps only, never amortized;
//  3. MPI_Pcontrol is no fixed point; 4. a send is no fixed point;
//  5. the jump is spread from the program's start; 6. collectives'
//     jumps are amortized too; 7. Real Sync from the recorded entries;
//  8. a receive whose posting a sender's Late receiver depends on is no
//     fixed point; 9. nor is its call's own repair forward only.
var clcBreak, _ = strconv.Atoi(os.Getenv("DTPA_CLC_BREAK"))

// clcResult is what the model's repair found: the violations, the
// largest jump and its rank, those amortized.
type clcResult struct {
	count, amortized, worst int64
	worstRank               int
}

// clcModel repairs the recorded times of p's calls as the docs describe
// the controlled logical clock (docs/report-format.md, ClockViolations;
// clc.go's opening comment), into each call's t, with at most maxPend
// calls waiting for a backward amortization:
//   - a receive, probe or Wait whose exit is before the latest entry of
//     the sends it received from, and a collective whose exit is before
//     the latest entry of the members its shape depends on (all for
//     MPI_Barrier and MPI_Allreduce, the root for MPI_Bcast's others, all
//     for MPI_Reduce's root), is moved to end at that entry, and every
//     later call of its rank by the same jump d;
//   - for a receive, probe or Wait, the calls since the last fixed point
//     t_a (the program's start, a send, a collective, an MPI_Pcontrol, an
//     earlier repair, a call that received a message whose posting a
//     blocking send's Late receiver depends on: posted before its exit,
//     §8.6) up to the repaired call's entry t_r are moved by
//     t ↦ t + d·(t − t_a)/(t_r − t_a), and the repaired call's entry by d
//     (it keeps its duration), when t_r > t_a and the call received no
//     such message sent before the bound (whose posting would move);
//   - past maxPend calls since the last fixed point, the latest of them
//     becomes the fixed point.
func clcModel(p *clcProg, maxPend int) clcResult {
	n := len(p.evs)
	var res clcResult
	delta, fixedAt, next := make([]int64, n), make([]int64, n), make([]int, n)
	pend := make([][]int, n)
	arrived := func(r, i int) bool { return next[r] > i || next[r] == i && p.evs[r][i].t[0] != math.MinInt64 }
	for r := range p.evs {
		for i := range p.evs[r] {
			p.evs[r][i].t = [2]int64{math.MinInt64, math.MinInt64}
		}
	}
	fix := func(r int, at int64) { pend[r], fixedAt[r] = pend[r][:0], at }
	keep := func(r, i int) {
		if maxPend <= 0 {
			fix(r, p.evs[r][i].t[1])
			return
		}
		if len(pend[r]) >= maxPend {
			fix(r, p.evs[r][pend[r][len(pend[r])-1]].t[1])
		}
		pend[r] = append(pend[r], i)
	}
	jump := func(r int, x *int64, bound int64) int64 {
		if clcBreak == 1 || *x >= bound {
			return 0
		}
		d := bound - *x
		res.count++
		if d > res.worst {
			res.worst, res.worstRank = d, r
		}
		delta[r] += d
		*x = bound
		return d
	}
	// step replays call i of rank r if what it depends on is there.
	step := func(r, i int) bool {
		ev := &p.evs[r][i]
		if ev.t[0] == math.MinInt64 {
			ev.t[0] = ev.raw[0] + delta[r]
		}
		e, x := ev.t[0], ev.raw[1]+delta[r]
		switch ev.kind {
		case ceInit, cePcontrol, ceSend, ceIsend:
			ev.t = [2]int64{e, x}
			if ev.kind == cePcontrol && clcBreak == 3 || (ev.kind == ceSend || ev.kind == ceIsend) && clcBreak == 4 {
				keep(r, i)
				return true
			}
			fix(r, x)
		case ceFinalize:
			ev.t = [2]int64{e, x}
		case ceColl:
			c := &p.colls[ev.coll]
			var deps []int
			switch {
			case c.kind <= 1 || c.kind == 3 && c.members[c.root] == r:
				deps = c.members
			case c.kind == 2 && c.members[c.root] != r:
				deps = []int{c.members[c.root]}
			}
			bound := int64(math.MinInt64)
			for _, o := range deps {
				if !arrived(o, c.ev[o]) {
					return false
				}
				bound = max(bound, p.evs[o][c.ev[o]].t[0])
			}
			d := jump(r, &x, bound)
			if clcBreak == 6 && d > 0 && e > fixedAt[r] {
				amortizeModel(p, r, pend[r], fixedAt[r], e, d)
				e += d
			}
			ev.t = [2]int64{e, x}
			fix(r, x)
		case ceRecv, ceProbe, ceWait:
			bound := int64(math.MinInt64)
			handed, handedT := false, int64(math.MaxInt64)
			for _, m := range ev.msgs {
				sd := p.msgs[m].send
				if sd[0] == r {
					continue // a Wait of an MPI_Isend
				}
				if next[sd[0]] <= sd[1] {
					return false
				}
				send := &p.evs[sd[0]][sd[1]]
				bound = max(bound, send.t[0])
				// The posting of a receive a blocking send may have
				// waited for is handed to the sender (§8.6).
				// An MPI_Ssend's charge depends on its posting however
				// late.
				if ev.kind != ceProbe && send.kind == ceSend && (send.fn == "MPI_Ssend" || send.t[1] > p.evs[r][p.msgs[m].post[1]].t[0]) {
					handed, handedT = clcBreak != 8, min(handedT, send.t[0])
				}
			}
			d := jump(r, &x, bound)
			if d == 0 {
				ev.t = [2]int64{e, x}
				if handed {
					fix(r, x)
				} else {
					keep(r, i)
				}
				return true
			}
			ta := fixedAt[r]
			if clcBreak == 5 {
				ta = p.evs[r][0].t[1]
			}
			// A handed posting stays, but for a message sent at the
			// bound: it would move before the bound, charged nothing
			// either way.
			if clcBreak != 2 && (!handed || handedT >= bound || clcBreak == 9) && e > ta {
				amortizeModel(p, r, pend[r], ta, e, d)
				e += d
				res.amortized++
			}
			ev.t = [2]int64{e, x}
			fix(r, x)
		default:
			ev.t = [2]int64{e, x}
			keep(r, i)
		}
		return true
	}
	for progress := true; progress; {
		progress = false
		for r := range n {
			for next[r] < len(p.evs[r]) && step(r, next[r]) {
				next[r]++
				progress = true
			}
		}
	}
	for r := range n {
		if next[r] < len(p.evs[r]) {
			panic(fmt.Sprintf("clcModel: rank %d stuck at call %d", r, next[r]))
		}
	}
	return res
}

// amortizeModel moves rank r's pending calls for a jump of d found at a
// call entered at tr, the last fixed point being ta.
func amortizeModel(p *clcProg, r int, pend []int, ta, tr, d int64) {
	k := float64(d) / float64(tr-ta)
	move := func(t int64) int64 {
		if t <= ta {
			return t
		}
		return t + int64(math.Round(float64(t-ta)*k))
	}
	for _, i := range pend {
		ev := &p.evs[r][i]
		ev.t = [2]int64{move(ev.t[0]), move(ev.t[1])}
	}
}

// clcFigures computes the model of every interval's figures from the
// repaired times, with TestRandomIntervals' accounting (ivlProg): the
// formulas of docs/characteristics.md §2–§5 and §8.6 applied to the
// repaired times; the gaps between calls on the rank's own clock
// (report-format.md, Rank: gaps), which no repair moves.
func clcFigures(p *clcProg) *ivlModel {
	n := len(p.evs)
	q := &ivlProg{m: newIvlModel(n), lastExit: make([]int64, n), covered: make([][][2]int64, n), mpi: make([][][2]int64, n),
		offset: make([]int64, n), ppm: make([]float64, n), secs: make([][]ivlSpan, n)}
	at := func(rk [2]int) *clcEv { return &p.evs[rk[0]][rk[1]] }
	for r := range n {
		lastRaw := int64(0)
		for i := range p.evs[r] {
			ev := &p.evs[r][i]
			entry, exit := ev.t[0], ev.t[1]
			var count func(*ivlStat)
			cl := ivlSendRecv
			switch ev.kind {
			case ceInit:
				q.m.start(r, exit)
				lastRaw = ev.raw[1]
				continue
			case ceFinalize:
				q.m.finish(r, entry)
				continue
			case cePcontrol:
				if ev.level == 100 {
					q.m.enter(r, ev.arg, exit)
				} else {
					q.m.leave(r, ev.arg, entry)
				}
				lastRaw = ev.raw[1] // a gap ending at MPI_Pcontrol is not counted
				continue
			case ceSend:
				m := &p.msgs[ev.msgs[0]]
				post := at(m.post).t[0]
				lr := int64(0)
				if entry < post && post < exit {
					lr = post - entry
				} else if ev.fn == "MPI_Ssend" && post >= exit {
					// It cannot return before its receive is posted: a
					// later posting counts as at its exit (§8.6).
					lr = exit - entry
				}
				count = func(x *ivlStat) { x.send++; x.sent(m.dst); x.rs += lr; x.lr += lr }
			case ceIsend:
				count = func(x *ivlStat) { x.send++; x.sent(p.msgs[ev.msgs[0]].dst) }
			case ceIrecv:
				count = func(x *ivlStat) { x.recv++ }
			case ceRecv, ceProbe:
				ts := at(p.msgs[ev.msgs[0]].send).t[0]
				rs := max(0, ts-entry)
				if clcBreak == 7 {
					rs = max(0, ts-ev.raw[0])
				}
				if ev.kind == ceProbe {
					count = func(x *ivlStat) { x.rs += rs }
				} else {
					count = func(x *ivlStat) { x.recv++; x.rs += rs; x.received(exit - ts) }
				}
			case ceWait:
				var from []int64
				last := entry // no Real Sync without receives
				var sends []int64
				for _, mi := range ev.msgs {
					m := &p.msgs[mi]
					ts := at(m.send).t[0]
					if m.src == r {
						from = append(from, ts)
						continue
					}
					from = append(from, max(at(m.post).t[0], ts))
					last = max(last, ts)
					sends = append(sends, ts)
				}
				q.overlap(r, from, entry)
				rs := max(0, last-entry)
				count = func(x *ivlStat) {
					x.wait++
					x.rs += rs
					for _, ts := range sends {
						x.received(exit - ts)
					}
				}
			case ceColl:
				c := &p.colls[ev.coll]
				last, lastExit := int64(math.MinInt64), int64(math.MinInt64)
				for _, o := range c.members {
					last, lastExit = max(last, p.evs[o][c.ev[o]].t[0]), max(lastExit, p.evs[o][c.ev[o]].t[1])
				}
				ps, tv := last-entry, lastExit-exit
				cl = ivlColl
				count = func(x *ivlStat) { x.colln++; x.ps += ps; x.tv += tv }
				if c.members[0] == r {
					for _, o := range q.m.stack[r] {
						q.m.mainColl[o.key]++
					}
				}
			case ceSys:
				cl = ivlSys
				count = func(x *ivlStat) { x.sysn++ }
			}
			q.call(r, cl, ev.fn, entry, exit, count)
			// call counted the gap on the repaired clock: the report's is
			// on the rank's own.
			gap := ev.raw[0] - lastRaw
			q.m.each(r, func(s *ivlStat) { s.gaps[len(s.gaps)-1] = gap })
			lastRaw = ev.raw[1]
		}
	}
	return q.m
}

// clcSink keeps every replayed call's times and messages, and every
// execution of an interval, by rank, in order.
type clcSink struct {
	got   [][]clcCall
	spans [][]TimelineSpan
}

type clcCall struct {
	entry, exit int64
	msgs        []TimelineMsg
}

func (s *clcSink) Start(ranks int) {
	s.got, s.spans = make([][]clcCall, ranks), make([][]TimelineSpan, ranks)
}
func (s *clcSink) Call(rank int, c *TimelineCall) {
	s.got[rank] = append(s.got[rank], clcCall{c.Entry, c.Exit, append([]TimelineMsg(nil), c.Msgs...)})
}
func (s *clcSink) Span(rank int, sp *TimelineSpan) { s.spans[rank] = append(s.spans[rank], *sp) }

// checkRepairedCalls compares the replayed calls (the sink's) with the
// model's repaired times: the same calls in the same order (MPI_Init,
// MPI_Pcontrol and MPI_Finalize are not replayed calls), each at its
// repaired times; and checks the clock condition on them: in order on each
// rank, no negative duration, and every message received no earlier than
// its send entered, which is the model's; and that every call lies in an
// execution of the interval it was made in (the timeline's, every level),
// and in none deeper.
func checkRepairedCalls(t *testing.T, name string, p *clcProg, sink *clcSink) {
	t.Helper()
	for r := range p.evs {
		var want []*clcEv
		for i := range p.evs[r] {
			if k := p.evs[r][i].kind; k != ceInit && k != cePcontrol && k != ceFinalize {
				want = append(want, &p.evs[r][i])
			}
		}
		got := sink.got[r]
		if len(got) != len(want) {
			t.Errorf("%s: rank %d: %d calls replayed, want %d", name, r, len(got), len(want))
			continue
		}
		prev := int64(math.MinInt64)
		for i, c := range got {
			w := want[i]
			if c.entry != w.t[0] || c.exit != w.t[1] {
				t.Errorf("%s: rank %d call %d (%s): [%d, %d] repaired, want [%d, %d] (recorded [%d, %d])", name, r, i, w.fn,
					c.entry, c.exit, w.t[0], w.t[1], w.raw[0], w.raw[1])
			}
			if c.entry < prev || c.exit < c.entry {
				t.Errorf("%s: rank %d call %d (%s): [%d, %d] after a call that ended at %d", name, r, i, w.fn, c.entry, c.exit, prev)
			}
			prev = c.exit
			in, depth := "", 0
			for _, sp := range sink.spans[r] {
				if sp.Enter <= c.entry && c.exit <= sp.Leave && sp.Level > depth {
					in, depth = sp.Interval, sp.Level
				}
			}
			if in != w.ivl {
				t.Errorf("%s: rank %d call %d (%s) at [%d, %d] lies in interval %q, want %q", name, r, i, w.fn, c.entry, c.exit, in, w.ivl)
			}
			for _, m := range c.msgs {
				if c.exit < m.Send {
					t.Errorf("%s: rank %d call %d (%s) ends at %d, before its message from %d was sent at %d", name, r, i, w.fn, c.exit, m.Src, m.Send)
				}
			}
			var sends []int64
			if w.kind == ceRecv || w.kind == ceWait {
				for _, mi := range w.msgs {
					if m := &p.msgs[mi]; m.src != r {
						sends = append(sends, p.evs[m.src][m.send[1]].t[0])
					}
				}
			}
			var gotSends []int64
			for _, m := range c.msgs {
				gotSends = append(gotSends, m.Send)
			}
			if !slices.Equal(slices.Sorted(slices.Values(gotSends)), slices.Sorted(slices.Values(sends))) {
				t.Errorf("%s: rank %d call %d (%s): messages sent at %v, want %v", name, r, i, w.fn, gotSends, sends)
			}
		}
	}
}

// checkViolations compares the report's clock_violations with the model's.
func checkViolations(t *testing.T, name string, cv *report.ClockViolations, want clcResult) {
	t.Helper()
	if want.count == 0 {
		if cv != nil {
			t.Errorf("%s: clock violations %+v, want none", name, *cv)
		}
		return
	}
	if cv == nil {
		t.Errorf("%s: no clock violations, want %+v", name, want)
		return
	}
	if cv.Count != want.count || cv.Amortized != want.amortized || !cv.Repaired ||
		!near(cv.Worst, float64(want.worst)/1e9) || cv.WorstRank != want.worstRank {
		t.Errorf("%s: clock violations %+v, want %d (%d amortized), worst %d ns on rank %d", name, *cv,
			want.count, want.amortized, want.worst, want.worstRank)
	}
}

// TestRandomClockRepairs: random programs (randomClockRepairs) whose
// receivers' clocks lag for stretches, repaired by the model (clcModel) at
// the default bound of events kept for amortization, at a small one, and
// at none (each repaired call's own entry still moves); every interval's
// figures (checkIntervals), the replayed calls' times and messages
// (checkRepairedCalls) and the violations counted, with 1, 2 and 4
// workers, and through analyzeOpts (invariants, the distributed replay).
func TestRandomClockRepairs(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 12
	}
	var total clcResult
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 23))
		run, p := randomClockRepairs(rng)
		lim := defaultLimits()
		lim.pend = []int{maxPend, maxPend, 3, 0}[seed%4]
		res := clcModel(p, lim.pend)
		m := clcFigures(p)
		total.count, total.amortized = total.count+res.count, total.amortized+res.amortized
		level := []int{-1, -1, 0, 1, 2}[rng.IntN(5)]
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 4} {
			name := fmt.Sprintf("seed %d (%d ranks, pend %d, level %d), %d workers", seed, run.Size(), lim.pend, level, w)
			var warned []string
			sink := &clcSink{}
			rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: level, Workers: w, limits: &lim,
				Timeline: &TimelineRecorder{Sink: sink}, Warn: func(s string) { warned = append(warned, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Unmatched != nil {
				t.Errorf("%s: unmatched %+v", name, rep.Unmatched)
			}
			if len(warned) != min(1, int(res.count)) {
				t.Errorf("%s: warnings %q", name, warned)
			}
			checkViolations(t, name, rep.ClockViolations, res)
			checkRepairedCalls(t, name, p, sink)
			checkIntervals(t, name, rep, m, level, tol)
		}
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: level, limits: &lim})
		checkIntervals(t, fmt.Sprintf("seed %d, analyzeOpts", seed), rep, m, level, tol)
		checkViolations(t, fmt.Sprintf("seed %d, analyzeOpts", seed), rep.ClockViolations, res)
	}
	if total.count == 0 || total.amortized == 0 || total.amortized == total.count {
		t.Errorf("%d violations, %d amortized: the programs do not exercise the repair", total.count, total.amortized)
	}
	t.Logf("%d violations, %d amortized", total.count, total.amortized)
}
