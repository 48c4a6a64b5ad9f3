package analyzer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// TestRandomClockRepairs checks the controlled logical clock (clc.go;
// docs/report-format.md, ClockViolations and "Clock-condition correction")
// on random programs whose receivers' clocks lag for stretches, after the
// alignment would have removed the clocks' offsets: receives, probes,
// Waits, Waitalls and MPI_Sendrecv calls that end before their sends
// started, collectives left before the entries they depend on, and calls
// whose figures do not come from a repair: MPI_Ssend and MPI_Issend whose
// receive is posted after they return (§8.6), nonblocking collectives
// completed before the last start (§8.5), and the calls of multi-threaded
// ranks (§8.10); with sequential sections. A model written from the docs
// repairs the recorded times itself (clcModel) and the figures of every
// interval are computed from its times (the accounting of
// TestRandomIntervals' model, ivlProg, and its comparison,
// checkIntervals); the report's clock_violations, every replayed call's
// times and the messages' send entries (a TimelineSink) must agree with
// it.

// clcBreak, when set (DTPA_CLC_BREAK=n), breaks the model in way n, to
// check that the test notices (each must fail it):
//  1. no repair at all; 2. forward jumps only, never amortized;
//  3. MPI_Pcontrol is no fixed point; 4. a send is no fixed point;
//  5. the jump is spread from the program's start; 6. collectives'
//     jumps are amortized too; 7. Real Sync from the recorded entries;
//  8. a receive whose posting a sender's Late receiver depends on is no
//     fixed point; 9. nor is its call's own repair forward only;
//  10. a wait of an MPI_Issend is no fixed point; 11. an MPI_Ssend's
//     receive posted after its exit charges nothing; 12. MPI_Sendrecv's
//     jump is amortized; 13. the receive of an MPI_Issend is no fixed
//     point; 14. MPI_Pcontrol starting or ending a section is none; 15.
//     a nonblocking collective's Potential Sync is not capped by its
//     completing call's time; 16. that call is repaired like a blocking
//     collective; 17. a multi-threaded rank's blocking collective is
//     repaired; 18. its calls are amortized; 19. its sends get Late
//     receiver.
var clcBreak, _ = strconv.Atoi(os.Getenv("DTPA_CLC_BREAK"))

// clcResult is what the model's repair found: the violations, the
// largest jump and its rank, those amortized.
type clcResult struct {
	count, amortized, worst int64
	worstRank               int
	// (No report figures:) amortizations from a wait of an MPI_Issend,
	// repairs on multi-threaded ranks.
	issFixed, thrJumps int64
	// unr are the violations not repaired, by class (clcUnrepaired).
	unr [unrClasses]unrepaired
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
	issAt := make([]int64, n) // the exit of the rank's latest wait of an MPI_Issend
	pend := make([][]int, n)
	arrived := func(r, i int) bool { return next[r] > i || next[r] == i && p.evs[r][i].t[0] != math.MinInt64 }
	for r := range p.evs {
		for i := range p.evs[r] {
			p.evs[r][i].t = [2]int64{math.MinInt64, math.MinInt64}
		}
	}
	fix := func(r int, at int64) { pend[r], fixedAt[r] = pend[r][:0], at }
	keep := func(r, i int) {
		if maxPend <= 0 || p.thr[r] && clcBreak != 18 {
			// (Several threads: their calls are no one sequence in
			// time, and only the repaired call's entry moves, §8.10.)
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
		if p.thr[r] {
			res.thrJumps++
		}
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
		case ceInit, cePcontrol, ceSend, ceIsend, ceIcoll:
			ev.t = [2]int64{e, x}
			if ev.kind == cePcontrol && (clcBreak == 3 || clcBreak == 14 && ev.level >= 102) || (ev.kind == ceSend || ev.kind == ceIsend) && clcBreak == 4 {
				keep(r, i)
				return true
			}
			fix(r, x)
		case ceFinalize:
			ev.t = [2]int64{e, x}
		case ceIcollEnd:
			// Published (the instance's Potential Sync), never repaired.
			if clcBreak == 16 {
				c := &p.colls[ev.coll]
				bound := int64(math.MinInt64)
				for _, o := range c.members {
					if !arrived(o, c.ev[o]) {
						return false
					}
					bound = max(bound, p.evs[o][c.ev[o]].t[0])
				}
				jump(r, &x, bound)
			}
			ev.t = [2]int64{e, x}
			fix(r, x)
		case ceSendrecv:
			// Its entry was published with its send: repaired forward
			// only.
			in := p.msgs[ev.msgs[1]].send
			if !arrived(in[0], in[1]) {
				return false
			}
			if d := jump(r, &x, p.evs[in[0]][in[1]].t[0]); clcBreak == 12 && d > 0 && e > fixedAt[r] {
				amortizeModel(p, r, pend[r], fixedAt[r], e, d)
				e += d
				res.amortized++
			}
			ev.t = [2]int64{e, x}
			fix(r, x)
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
			if p.thr[r] && clcBreak != 17 {
				// A multi-threaded rank's blocking collective: its exit
				// is not repaired (§8.10).
				bound = math.MinInt64
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
				if !arrived(sd[0], sd[1]) {
					return false
				}
				send := &p.evs[sd[0]][sd[1]]
				bound = max(bound, send.t[0])
				// The posting of a receive a blocking send may have
				// waited for is handed to the sender (§8.6); a
				// synchronous send's charge depends on it however late.
				sync := send.fn == "MPI_Ssend" || send.fn == "MPI_Issend" && clcBreak != 13
				if ev.kind != ceProbe && (sync || send.kind == ceSend && send.t[1] > p.evs[r][p.msgs[m].post[1]].t[0]) {
					handed, handedT = clcBreak != 8, min(handedT, send.t[0])
				}
			}
			if ev.kind == ceWait && len(ev.msgs) == 1 && p.msgs[ev.msgs[0]].src == r && p.evs[r][p.msgs[ev.msgs[0]].send[1]].fn == "MPI_Issend" {
				// A wait of an MPI_Issend hands its times to whichever
				// side charges its Late receiver (§8.6).
				handed = clcBreak != 10
				issAt[r] = x
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
				if ta == issAt[r] {
					res.issFixed++
				}
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
		t := [2]int64{move(ev.t[0]), move(ev.t[1])}
		ev.moved = ev.moved || t != ev.t
		ev.t = t
	}
}

// clcUnrepaired counts, in a repaired program, the clock-condition
// violations the controlled logical clock leaves (docs/report-format.md,
// ClockViolations), by class: an MPI_Ssend, or the wait of an MPI_Issend,
// that returned before its receive was posted; the wait of a nonblocking
// collective (MPI_Ibarrier, MPI_Iallreduce: every start) that returned
// before a start; a multi-threaded rank's blocking collective left before
// an entry its shape depends on (as clcModel's repairs). Each is the time
// it was early, on the rank of the call.
func clcUnrepaired(p *clcProg) (u [unrClasses]unrepaired) {
	at := func(rk [2]int) *clcEv { return &p.evs[rk[0]][rk[1]] }
	for r := range p.evs {
		for i := range p.evs[r] {
			ev := &p.evs[r][i]
			exit := ev.t[1]
			switch ev.kind {
			case ceSend:
				if m := &p.msgs[ev.msgs[0]]; ev.fn == "MPI_Ssend" && at(m.post).t[0] > exit {
					u[unrSync].note(at(m.post).t[0]-exit, int32(r))
				}
			case ceWait:
				for _, mi := range ev.msgs {
					if m := &p.msgs[mi]; m.src == r && at(m.send).fn == "MPI_Issend" && at(m.post).t[0] > exit {
						u[unrSync].note(at(m.post).t[0]-exit, int32(r))
					}
				}
			case ceIcollEnd, ceColl:
				c := &p.colls[ev.coll]
				deps := c.members
				if ev.kind == ceColl {
					if !p.thr[r] {
						continue
					}
					switch {
					case c.kind == 2 && c.members[c.root] != r:
						deps = []int{c.members[c.root]}
					case c.kind == 2, c.kind == 3 && c.members[c.root] != r:
						deps = nil
					}
				}
				bound := int64(math.MinInt64)
				for _, o := range deps {
					bound = max(bound, p.evs[o][c.ev[o]].t[0])
				}
				if exit < bound {
					k := unrThreaded
					if ev.kind == ceIcollEnd {
						k = unrNonblocking
					}
					u[k].note(bound-exit, int32(r))
				}
			}
		}
	}
	return u
}

// clcCases counts, in a repaired program, the cases the test is meant to
// reach, for TestRandomClockRepairs to check that it reaches them.
func clcCases(p *clcProg, c map[string]int) {
	for r := range p.evs {
		for i := range p.evs[r] {
			ev := &p.evs[r][i]
			switch ev.kind {
			case ceSend:
				if m := &p.msgs[ev.msgs[0]]; ev.fn == "MPI_Ssend" && p.evs[m.post[0]][m.post[1]].t[0] >= ev.t[1] {
					c["MPI_Ssend's receive posted after its exit"]++
				}
			case ceWait:
				if m := &p.msgs[ev.msgs[0]]; m.src == r && p.evs[r][m.send[1]].fn == "MPI_Issend" {
					if p.evs[m.post[0]][m.post[1]].t[0] >= ev.t[1] {
						c["MPI_Issend's receive posted after its wait's exit"]++
					}
					if ev.moved {
						c["MPI_Issend's wait moved by an amortization"]++
					}
				}
			case ceSendrecv:
				if ev.t[1] != ev.raw[1] && p.evs[p.msgs[ev.msgs[1]].send[0]][p.msgs[ev.msgs[1]].send[1]].t[0] == ev.t[1] {
					c["MPI_Sendrecv repaired"]++
				}
			case ceIcollEnd:
				for _, o := range p.colls[ev.coll].members {
					if p.evs[o][p.colls[ev.coll].ev[o]].t[0] > ev.t[1] {
						c["nonblocking collective completed before a start"]++
						break
					}
				}
			case cePcontrol:
				if ev.level == 102 {
					c["sequential section"]++
				}
			case ceColl:
				if p.thr[r] {
					for _, o := range p.colls[ev.coll].members {
						if p.evs[o][p.colls[ev.coll].ev[o]].t[0] > ev.t[1] {
							c["multi-threaded rank's collective left before an entry"]++
							break
						}
					}
				}
			}
		}
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
		offset: make([]int64, n), ppm: make([]float64, n), secs: make([][]ivlSpan, n), secFrom: make([]int64, n)}
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
				switch ev.level {
				case 100:
					q.m.enter(r, ev.arg, exit)
				case 101:
					q.m.leave(r, ev.arg, entry)
				case 102:
					q.secFrom[r] = exit
				case 103:
					q.secs[r] = append(q.secs[r], ivlSpan{strconv.FormatInt(ev.arg, 10), q.secFrom[r], entry})
				}
				lastRaw = ev.raw[1] // a gap ending at MPI_Pcontrol is not counted
				continue
			case ceSend:
				m := &p.msgs[ev.msgs[0]]
				post := at(m.post).t[0]
				lr := int64(0)
				if p.thr[r] && clcBreak != 19 {
					// Not charged with several threads (§8.10).
				} else if entry < post && post < exit {
					lr = post - entry
				} else if ev.fn == "MPI_Ssend" && post >= exit && clcBreak != 11 {
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
			case ceSendrecv:
				out, in := &p.msgs[ev.msgs[0]], &p.msgs[ev.msgs[1]]
				ts := at(in.send).t[0]
				rs := max(0, ts-entry)
				count = func(x *ivlStat) { x.send++; x.recv++; x.rs += rs; x.sent(out.dst); x.received(exit - ts) }
			case ceIcoll:
				c := &p.colls[ev.coll]
				cl = ivlColl
				count = func(x *ivlStat) { x.colln++ }
				if c.members[0] == r {
					for _, o := range q.m.stack[r] {
						q.m.mainColl[o.key]++
					}
				}
			case ceIcollEnd:
				c := &p.colls[ev.coll]
				last := int64(math.MinInt64)
				for _, o := range c.members {
					last = max(last, p.evs[o][c.ev[o]].t[0])
				}
				// §8.5: at most the completing call's own time.
				ps := min(max(0, last-entry), exit-entry)
				if clcBreak == 15 {
					ps = max(0, last-entry)
				}
				cl = ivlColl
				count = func(x *ivlStat) { x.wait++; x.ps += ps }
			case ceWait:
				var from []int64
				last := entry // no Real Sync without receives
				var sends []int64
				lr := int64(0)
				for _, mi := range ev.msgs {
					m := &p.msgs[mi]
					ts := at(m.send).t[0]
					if m.src == r {
						from = append(from, ts)
						if at(m.send).fn == "MPI_Issend" {
							// It cannot complete before its receive is
							// posted: a later posting counts as at its
							// exit (§8.6).
							lr = max(lr, min(at(m.post).t[0], exit)-entry)
						}
						continue
					}
					from = append(from, max(at(m.post).t[0], ts))
					last = max(last, ts)
					sends = append(sends, ts)
				}
				q.overlap(r, from, entry)
				rs := max(0, last-entry)
				if len(sends) > 0 || p.thr[r] && clcBreak != 19 {
					lr = 0 // (none when it completed receives too, nor with several threads)
				}
				count = func(x *ivlStat) {
					x.wait++
					x.rs += rs + lr
					x.lr += lr
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
	q.sections()
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
			if w.kind == ceRecv || w.kind == ceWait || w.kind == ceSendrecv {
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
	var unr unrepaired
	for _, u := range want.unr {
		unr.add(u)
	}
	if want.count == 0 && unr.n == 0 {
		if cv != nil {
			t.Errorf("%s: clock violations %+v, want none", name, *cv)
		}
		return
	}
	if cv == nil {
		t.Errorf("%s: no clock violations, want %+v", name, want)
		return
	}
	worst, worstRank := float64(want.worst)/1e9, want.worstRank
	if want.count == 0 {
		worst, worstRank = 0, 0
	}
	if cv.Count != want.count || cv.Amortized != want.amortized || !cv.Repaired ||
		!near(cv.Worst, worst) || cv.WorstRank != worstRank {
		t.Errorf("%s: clock violations %+v, want %d (%d amortized), worst %d ns on rank %d", name, *cv,
			want.count, want.amortized, want.worst, want.worstRank)
	}
	if cv.Unrepaired != unr.n || !near(cv.UnrepairedWorst, float64(unr.worst)/1e9) || cv.UnrepairedWorstRank != int(unr.rank) ||
		cv.UnrepairedSyncSends != want.unr[unrSync].n || cv.UnrepairedNonblocking != want.unr[unrNonblocking].n ||
		cv.UnrepairedThreaded != want.unr[unrThreaded].n {
		t.Errorf("%s: clock violations %+v, want not repaired %+v", name, *cv, want.unr)
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
	var unrTotal [unrClasses]int64
	cases := map[string]int{}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 23))
		run, p := randomClockRepairs(rng)
		lim := defaultLimits()
		lim.pend = []int{maxPend, maxPend, 3, 0}[seed%4]
		res := clcModel(p, lim.pend)
		res.unr = clcUnrepaired(p)
		clcCases(p, cases)
		cases["amortized from a wait of an MPI_Issend"] += int(res.issFixed)
		cases["repair on a multi-threaded rank"] += int(res.thrJumps)
		m := clcFigures(p)
		total.count, total.amortized = total.count+res.count, total.amortized+res.amortized
		for c, u := range res.unr {
			unrTotal[c] += u.n
		}
		level := []int{-1, -1, 0, 1, 2}[rng.IntN(5)]
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 4} {
			name := fmt.Sprintf("seed %d (%d ranks, pend %d, level %d), %d workers", seed, run.Size(), lim.pend, level, w)
			sink := &clcSink{}
			rep, warned := analyzeSink(t, Options{Dir: dir, App: "app", MaxLevel: level, Workers: w, limits: &lim}, sink)
			if rep.Unmatched != nil {
				t.Errorf("%s: unmatched %+v", name, rep.Unmatched)
			}
			if len(warned) != min(1, int(res.count))+min(1, int(res.unr[unrSync].n+res.unr[unrNonblocking].n+res.unr[unrThreaded].n)) {
				t.Errorf("%s: warnings %q", name, warned)
			}
			checkViolations(t, name, rep.ClockViolations, res)
			checkRepairedCalls(t, name, p, sink)
			checkIntervals(t, name, rep, m, level, tol)
		}
		opts := Options{Dir: dir, App: "app", MaxLevel: level, limits: &lim}
		rep := analyzeOpts(t, opts)
		checkIntervals(t, fmt.Sprintf("seed %d, analyzeOpts", seed), rep, m, level, tol)
		checkViolations(t, fmt.Sprintf("seed %d, analyzeOpts", seed), rep.ClockViolations, res)
		if seed < 8 {
			// The whole report (the violations, repaired and not, are
			// counted on the processes of their ranks) over 1–5
			// processes.
			checkDistOutputs(t, opts, rep, nil, nil)
		}
	}
	if total.count == 0 || total.amortized == 0 || total.amortized == total.count {
		t.Errorf("%d violations, %d amortized: the programs do not exercise the repair", total.count, total.amortized)
	}
	for _, c := range []string{"MPI_Ssend's receive posted after its exit", "MPI_Issend's receive posted after its wait's exit",
		"amortized from a wait of an MPI_Issend", "MPI_Sendrecv repaired", "nonblocking collective completed before a start",
		"sequential section", "repair on a multi-threaded rank", "multi-threaded rank's collective left before an entry"} {
		if cases[c] == 0 {
			t.Errorf("no case of %s: the programs do not exercise it", c)
		}
	}
	for c, n := range unrTotal {
		if n == 0 {
			t.Errorf("no violation not repaired of class %d: the programs do not exercise it", c)
		}
	}
	t.Logf("%d violations, %d amortized, not repaired %v; %v", total.count, total.amortized, unrTotal, cases)
}
