package analyzer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// ivlStat is one processor's figures in one interval as the reference
// model of TestRandomIntervals computes them: times in ns, counts.
type ivlStat struct {
	exe                                   int
	exec, sendrecv, coll, sys, rs, lr, ps int64
	tv, ov                                int64
	ip                                    float64 // Insufficient Parallelism, ns
	send, recv, wait, colln, sysn         int64
	// gaps are the gaps between MPI calls that end at a call made in
	// the interval (report-format.md, Rank: gaps), on the rank's own
	// clock; fns the calls and time per MPI function (call_mix).
	gaps []int64
	fns  map[string]*[2]int64
	// to are the messages sent, by destination (comm_matrix: at the
	// send); rcvd and lat the messages received and their summed latency,
	// send entry to the receiving call's exit (message_sizes: at the
	// receive). Every message has 8 bytes.
	to        map[int]int64
	rcvd, lat int64
}

func (s *ivlStat) sent(d int) {
	if s.to == nil {
		s.to = map[int]int64{}
	}
	s.to[d]++
}

func (s *ivlStat) received(lat int64) { s.rcvd, s.lat = s.rcvd+1, s.lat+lat }

// ivlOpen is an interval open on a processor: its key (the path written
// "1/2", "" for the whole program), its number and the time it was
// entered.
type ivlOpen struct {
	key string
	num int64
	at  int64
}

// ivlSpan is one entry of an interval (key), from its start to its end.
type ivlSpan struct {
	key      string
	from, to int64
}

// ivlModel is the reference model of TestRandomIntervals, written from
// docs/characteristics.md §2–§5 and §8.5–§8.6, not from the analyzer: each
// processor's stack of open intervals, and per interval and processor the
// figures of every call made while the interval was open (an interval
// includes its nested ones: a call counts in every interval open on its
// processor).
type ivlModel struct {
	stats    map[string][]*ivlStat // by interval key, by rank; nil: not executed
	mainColl map[string]int64      // collective instances, on the member of rank 0 of their communicator (§5)
	stack    [][]ivlOpen           // by rank; [0] is the whole program
	spans    [][]ivlSpan           // by rank, every entry of an interval, once left
	warns    []string              // the warnings the Pcontrol mistakes must give
}

func newIvlModel(n int) *ivlModel {
	return &ivlModel{stats: map[string][]*ivlStat{}, mainColl: map[string]int64{}, stack: make([][]ivlOpen, n),
		spans: make([][]ivlSpan, n)}
}

func (m *ivlModel) open(r int, key string, num, at int64) {
	if m.stats[key] == nil {
		m.stats[key] = make([]*ivlStat, len(m.stack))
	}
	if m.stats[key][r] == nil {
		m.stats[key][r] = &ivlStat{}
	}
	m.stats[key][r].exe++
	m.stack[r] = append(m.stack[r], ivlOpen{key, num, at})
}

// start opens the whole program at the exit of MPI_Init (§2).
func (m *ivlModel) start(r int, at int64) { m.open(r, "", 0, at) }

// enter opens interval num inside the current one at the exit of
// MPI_Pcontrol(100, num).
func (m *ivlModel) enter(r int, num, at int64) {
	cur := m.stack[r][len(m.stack[r])-1].key
	key := strconv.FormatInt(num, 10)
	if cur != "" {
		key = cur + "/" + key
	}
	m.open(r, key, num, at)
}

func (m *ivlModel) closeTop(r int, at int64) {
	top := m.stack[r][len(m.stack[r])-1]
	m.stats[top.key][r].exec += at - top.at
	m.spans[r] = append(m.spans[r], ivlSpan{top.key, top.at, at})
	m.stack[r] = m.stack[r][:len(m.stack[r])-1]
}

// leave closes interval num at the entry of MPI_Pcontrol(101, num): the
// innermost open interval of that number, and the ones open inside it
// (crossing pairs, a warning); an interval that is not open is left
// alone (a warning).
func (m *ivlModel) leave(r int, num, at int64) {
	st := m.stack[r]
	i := len(st) - 1
	for i >= 1 && st[i].num != num {
		i--
	}
	if i < 1 {
		m.warns = append(m.warns, fmt.Sprintf("Rank %d: MPI_Pcontrol(101, %d) leaves interval %d, which is not open; ignored.", r, num, num))
		return
	}
	if i < len(st)-1 {
		var inner []string
		for _, o := range st[i+1:] {
			inner = append(inner, strconv.FormatInt(o.num, 10))
		}
		m.warns = append(m.warns, fmt.Sprintf("Rank %d: MPI_Pcontrol(101, %d) crosses interval(s) %s still open inside it; they are closed at the same time.",
			r, num, strings.Join(inner, ", ")))
	}
	for len(m.stack[r]) > i {
		m.closeTop(r, at)
	}
}

// finish closes every interval at the entry of MPI_Finalize; intervals
// still open are a warning.
func (m *ivlModel) finish(r int, at int64) {
	if len(m.stack[r]) > 1 {
		var open []string
		for _, o := range m.stack[r][1:] {
			open = append(open, o.key)
		}
		m.warns = append(m.warns, fmt.Sprintf("Rank %d: interval(s) %s not left by MPI_Pcontrol(101); closed at the end of the program.",
			r, strings.Join(open, ", ")))
	}
	for len(m.stack[r]) > 0 {
		m.closeTop(r, at)
	}
}

// each applies f to rank r's figures in every interval open on it now.
func (m *ivlModel) each(r int, f func(*ivlStat)) {
	for _, o := range m.stack[r] {
		f(m.stats[o.key][r])
	}
}

// ivlProg builds a random program and its model together: every call is
// recorded on its rank's trace and its figures added to the model.
type ivlProg struct {
	rng      *rand.Rand
	ranks    []*tracetest.Rank
	lastExit []int64      // by rank, the exit of its latest call, on its own clock
	covered  [][][2]int64 // by rank, the time its nonblocking operations' windows covered (§8.7), in order
	mpi      [][][2]int64 // by rank, its calls in Communications (entry, exit)
	secs     [][]ivlSpan  // by rank, its sequential sections' executions (key: the section number)
	secOpen  []int64      // by rank, the section open (0: none) and its start
	secFrom  []int64
	offset   []int64 // by rank, its clock's offset (ns) and drift (ppm), as given to Skew
	ppm      []float64
	issends  uint64 // MPI_Issend requests made
	// psend and precv are the persistent send and receive requests, by
	// sender and receiver.
	psend, precv map[[2]int]tracetest.Req
	m            *ivlModel
	unbalanced   bool // Pcontrol mistakes: leaving intervals not open, crossing pairs, intervals left open
}

// Call classes (§3.2).
const (
	ivlSendRecv = iota
	ivlColl
	ivlSys
)

// call adds a call of rank r to function fn of class cl from entry to
// exit to the intervals open on r, with the counts count sets.
func (p *ivlProg) call(r, cl int, fn string, entry, exit int64, count func(*ivlStat)) {
	p.callRun(r, cl, fn, 1, 0, entry, exit, count)
}

// callRun is call of a run of calls folded into one event, with inner ns
// between them in all: it ends calls gaps, the one before its first call
// and calls − 1 between them, each taken for their mean (report-format.md,
// Rank: gaps).
func (p *ivlProg) callRun(r, cl int, fn string, calls, inner, entry, exit int64, count func(*ivlStat)) {
	gap := p.local(r, entry) - p.lastExit[r] - inner
	p.lastExit[r] = p.local(r, exit)
	p.mpi[r] = append(p.mpi[r], [2]int64{entry, exit})
	p.m.each(r, func(s *ivlStat) {
		s.gaps = append(s.gaps, gap)
		for i := int64(1); i < calls; i++ {
			s.gaps = append(s.gaps, inner/(calls-1))
		}
		if s.fns == nil {
			s.fns = map[string]*[2]int64{}
		}
		if s.fns[fn] == nil {
			s.fns[fn] = &[2]int64{}
		}
		s.fns[fn][0] += calls
		s.fns[fn][1] += exit - entry
		switch cl {
		case ivlSendRecv:
			s.sendrecv += exit - entry
		case ivlColl:
			s.coll += exit - entry
		case ivlSys:
			s.sys += exit - entry
		}
		if count != nil {
			count(s)
		}
	})
}

// overlap adds the windows [from, to) of the nonblocking sends and
// receives a wait of rank r entered at to completes (§3.6): each clipped
// to the current entry of the interval where it is completed, less the
// time earlier windows covered; the rest counts in every interval open.
func (p *ivlProg) overlap(r int, from []int64, to int64) {
	st := p.m.stack[r]
	in := st[len(st)-1].at
	var add int64
	for _, f := range from {
		f = max(f, in)
		if f >= to {
			continue
		}
		// The part of [f, to) the covered time (disjoint segments) lacks,
		// then the union.
		add += to - f
		lo, hi := f, to
		var keep [][2]int64
		for _, c := range p.covered[r] {
			if c[1] < f || c[0] > to {
				keep = append(keep, c)
				continue
			}
			add -= min(c[1], to) - max(c[0], f)
			lo, hi = min(lo, c[0]), max(hi, c[1])
		}
		p.covered[r] = append(keep, [2]int64{lo, hi})
	}
	p.m.each(r, func(x *ivlStat) { x.ov += add })
}

// local is true time t on rank r's clock, as tracetest writes it.
func (p *ivlProg) local(r int, t int64) int64 {
	return p.offset[r] + t + int64(float64(t)*p.ppm[r]*1e-6)
}

// micros is a random duration of lo to hi µs.
func (p *ivlProg) micros(lo, hi int) int64 { return int64(lo+p.rng.IntN(hi-lo+1)) * us }

// pcontrol records MPI_Pcontrol(level, arg) on rank r, lasting 0–2 µs (the
// time inside belongs to the enclosing interval only, §2).
func (p *ivlProg) pcontrol(r int, level int32, arg int64) {
	k := p.ranks[r]
	entry := k.Now()
	k.Call("MPI_Pcontrol", p.micros(0, 2), traceformat.Event{Attr: traceformat.AttrPcontrol, PcLevel: level, PcArg: arg})
	p.lastExit[r] = p.local(r, k.Now()) // a gap ending at MPI_Pcontrol is not counted
	switch level {
	case 100:
		p.m.enter(r, arg, k.Now())
	case 101:
		p.m.leave(r, arg, entry)
	case 102:
		p.secOpen[r], p.secFrom[r] = arg, k.Now()
	case 103:
		p.secs[r] = append(p.secs[r], ivlSpan{strconv.FormatInt(arg, 10), p.secFrom[r], entry})
		p.secOpen[r] = 0
	}
}

// gap is rank r's time between two calls: computation, and now and then
// an MPI_Pcontrol that enters an interval (numbers 1–3, so that intervals
// are entered many times and the same number lies under several parents)
// or leaves the innermost one; in unbalanced programs also one that
// leaves an interval that is not open, or one that is open but not the
// innermost. Now and then an MPI_Pcontrol of another level, which marks
// nothing.
func (p *ivlProg) gap(r int) {
	k := p.ranks[r]
	k.Compute(p.micros(0, 20))
	if p.rng.IntN(3) != 0 {
		return
	}
	depth := len(p.m.stack[r]) - 1
	switch x := p.rng.IntN(20); {
	case x == 0:
		p.pcontrol(r, 7, 1)
	case x == 3 && p.secOpen[r] == 0:
		p.pcontrol(r, 102, int64(1+p.rng.IntN(2)))
	case x == 3 || x == 4 && p.secOpen[r] != 0:
		p.pcontrol(r, 103, p.secOpen[r])
	case p.unbalanced && x == 1:
		p.pcontrol(r, 101, int64(1+p.rng.IntN(5)))
	case p.unbalanced && x == 2 && depth > 0:
		p.pcontrol(r, 101, p.m.stack[r][1+p.rng.IntN(depth)].num)
	case depth < 3 && (depth == 0 || x < 11):
		p.pcontrol(r, 100, int64(1+p.rng.IntN(3)))
	default:
		p.pcontrol(r, 101, p.m.stack[r][depth].num)
	}
	k.Compute(p.micros(0, 20))
}

// p2p sends one message from s to d on MPI_COMM_WORLD (tag 0). The send
// is an MPI_Send, short or long enough now and then to be still in
// progress when the receive is posted (Late receiver, §8.6), an MPI_Ssend,
// or an MPI_Isend or MPI_Issend completed by MPI_Wait; the receive an MPI_Recv (now and then
// after an MPI_Probe, which gets the Real Sync, §8.4), or an MPI_Irecv
// completed by MPI_Wait (now and then after an unsuccessful MPI_Test,
// which counts its time only). Gaps between the calls may move either
// rank to other intervals, so that a send and its receive, or a request's
// start and its wait, lie in different intervals.
func (p *ivlProg) p2p(s, d int) {
	ks, kd := p.ranks[s], p.ranks[d]
	mode, rmode := p.rng.IntN(6), p.rng.IntN(4) // the send's form, the receive's
	p.gap(s)
	p.gap(d)
	// A persistent request is made at its first use, in whatever
	// interval is current then.
	pair := [2]int{s, d}
	if _, ok := p.psend[pair]; mode == 5 && !ok {
		t0 := ks.Now()
		p.psend[pair] = ks.SendInit(int32(d), 0, 8, us)
		p.call(s, ivlSendRecv, "MPI_Send_init", t0, t0+us, nil)
		p.gap(s)
	}
	if _, ok := p.precv[pair]; rmode == 3 && !ok {
		t0 := kd.Now()
		p.precv[pair] = kd.RecvInit(int32(s), 0, 8, us)
		p.call(d, ivlSendRecv, "MPI_Recv_init", t0, t0+us, nil)
		p.gap(d)
	}
	ts := ks.Now() + p.micros(0, 60)
	tp := kd.Now() + p.micros(0, 60) // the receive's first call
	dur := p.micros(1, 2)            // a blocking send's
	if p.rng.IntN(2) == 0 {
		dur = p.micros(1, 100)
	}
	// The receiver first: the sender's Late receiver needs the posting.
	kd.At(tp)
	var post int64
	switch rmode {
	case 0:
		post = tp
		exit := max(tp, ts) + p.micros(1, 10)
		kd.Recv(int32(s), 0, 8, exit-tp)
		rs := max(0, ts-tp)
		p.call(d, ivlSendRecv, "MPI_Recv", tp, exit, func(x *ivlStat) { x.recv++; x.rs += rs; x.received(exit - ts) })
	case 1:
		exit := max(tp, ts) + p.micros(1, 10)
		kd.Call("MPI_Probe", exit-tp, probeEv(int32(s), 0, traceformat.Status{Source: int32(s)}))
		rs := max(0, ts-tp)
		p.call(d, ivlSendRecv, "MPI_Probe", tp, exit, func(x *ivlStat) { x.rs += rs })
		p.gap(d)
		post = kd.Now()
		kd.Recv(int32(s), 0, 8, p.micros(1, 3))
		post2 := kd.Now()
		p.call(d, ivlSendRecv, "MPI_Recv", post, kd.Now(), func(x *ivlStat) { x.recv++; x.received(post2 - ts) })
	case 2, 3:
		// MPI_Irecv, or MPI_Start of a persistent receive: a receive
		// call each (§3.12).
		post = tp
		var q tracetest.Req
		fn := "MPI_Irecv"
		if rmode == 3 {
			q, fn = p.precv[pair], "MPI_Start"
			kd.Start(q, us)
		} else {
			q = kd.Irecv(int32(s), 0, 8, us)
		}
		p.call(d, ivlSendRecv, fn, tp, tp+us, func(x *ivlStat) { x.recv++ })
		p.gap(d)
		if p.rng.IntN(3) == 0 {
			// Unsuccessful MPI_Test: alone, or a run of them the tracer
			// folded, with its inner gaps: their time only, no Wait
			// Number (§3.12).
			calls, inner := int64(1), int64(0)
			if p.rng.IntN(2) == 0 {
				calls = int64(2 + p.rng.IntN(20))
				inner = (calls - 1) * int64(100+p.rng.IntN(500))
				kd.Compute(inner)
			}
			t0 := kd.Now()
			if calls > 1 {
				kd.Test(q, false, p.micros(1, 3), tracetest.FoldedGaps(uint32(calls), inner))
			} else {
				kd.Test(q, false, p.micros(1, 3))
			}
			p.callRun(d, ivlSendRecv, "MPI_Test", calls, inner, t0, kd.Now(), nil)
			p.gap(d)
		}
		// MPI_Wait, or a successful MPI_Test: Real Sync alike (§3.3).
		tw := kd.Now() + p.micros(0, 30)
		exit := max(tw, ts) + p.micros(1, 10)
		fn = "MPI_Wait"
		if p.rng.IntN(4) == 0 {
			fn = "MPI_Test"
			kd.At(tw).Test(q, true, exit-tw)
		} else {
			kd.At(tw).Wait(q, exit-tw)
		}
		p.overlap(d, []int64{max(tp, ts)}, tw)
		rs := max(0, ts-tw)
		p.call(d, ivlSendRecv, fn, tw, exit, func(x *ivlStat) { x.wait++; x.rs += rs; x.received(exit - ts) })
	}
	ks.At(ts)
	// late is the Late receiver of a call from entry to exit that waits
	// for the receive's posting (§8.6).
	late := func(entry, exit int64) int64 {
		if entry < post && post < exit {
			return post - entry
		}
		return 0
	}
	switch mode {
	case 0, 1, 3:
		fn := "MPI_Send"
		if mode == 3 {
			// MPI_Ssend returns once the receive is posted.
			fn, dur = "MPI_Ssend", max(ts, post)+p.micros(1, 10)-ts
			ks.Ssend(int32(d), 0, 8, dur)
		} else {
			ks.Send(int32(d), 0, 8, dur)
		}
		lr := late(ts, ts+dur)
		p.call(s, ivlSendRecv, fn, ts, ts+dur, func(x *ivlStat) { x.send++; x.sent(d); x.rs += lr; x.lr += lr })
		return
	case 2, 5:
		// MPI_Isend, or MPI_Start of a persistent send: a send call each
		// (§3.12), the message counted at it.
		var q tracetest.Req
		fn := "MPI_Isend"
		if mode == 5 {
			q, fn = p.psend[pair], "MPI_Start"
			ks.Start(q, us)
		} else {
			q = ks.Isend(int32(d), 0, 8, us)
		}
		p.call(s, ivlSendRecv, fn, ts, ts+us, func(x *ivlStat) { x.send++; x.sent(d) })
		p.gap(s)
		tw, wd := ks.Now(), p.micros(1, 5)
		ks.Wait(q, wd)
		p.overlap(s, []int64{ts}, tw)
		p.call(s, ivlSendRecv, "MPI_Wait", tw, tw+wd, func(x *ivlStat) { x.wait++ })
		return
	}
	// MPI_Issend: its wait returns once the receive is posted, and gets
	// the Late receiver (§8.6). (Request ids above tracetest's.)
	p.issends++
	id := uint64(1<<40 + p.issends)
	ks.Call("MPI_Issend", us, traceformat.Event{Attr: traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrReqs,
		SendPeer: int32(d), SendBytes: 8, Reqs: []uint64{id}})
	p.call(s, ivlSendRecv, "MPI_Issend", ts, ts+us, func(x *ivlStat) { x.send++; x.sent(d) })
	p.gap(s)
	tw := ks.Now()
	exit := max(tw, post) + p.micros(1, 10)
	ks.Call("MPI_Wait", exit-tw, traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrStatus, Reqs: []uint64{id},
		Status: []traceformat.Status{{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}}})
	p.overlap(s, []int64{ts}, tw)
	lr := late(tw, exit)
	p.call(s, ivlSendRecv, "MPI_Wait", tw, exit, func(x *ivlStat) { x.wait++; x.rs += lr; x.lr += lr })
}

// gather sends one message from every other rank to d, which posts an
// MPI_Irecv for each (gaps between them may change its interval) and
// completes them together with MPI_Waitall: Real Sync (latest send's
// entry − the wait's entry), §3.3.
func (p *ivlProg) gather(d int) {
	kd := p.ranks[d]
	reqs := []tracetest.Req{}
	posts := map[int]int64{}
	for s := range p.ranks {
		if s == d {
			continue
		}
		p.gap(d)
		posts[s] = kd.Now()
		reqs = append(reqs, kd.Irecv(int32(s), 1, 8, us))
		p.call(d, ivlSendRecv, "MPI_Irecv", posts[s], posts[s]+us, func(x *ivlStat) { x.recv++ })
	}
	lastSend := int64(0)
	var sends, sendAt []int64 // the windows' starts, the sends' entries
	for s, ks := range p.ranks {
		if s == d {
			continue
		}
		p.gap(s)
		ts := ks.Now() + p.micros(0, 60)
		dur := p.micros(1, 100)
		ks.At(ts).Send(int32(d), 1, 8, dur)
		lr := int64(0)
		if ts < posts[s] && posts[s] < ts+dur {
			lr = posts[s] - ts
		}
		p.call(s, ivlSendRecv, "MPI_Send", ts, ts+dur, func(x *ivlStat) { x.send++; x.sent(d); x.rs += lr; x.lr += lr })
		lastSend = max(lastSend, ts)
		sendAt = append(sendAt, ts)
		sends = append(sends, max(posts[s], ts))
	}
	p.gap(d)
	tw := kd.Now()
	exit := max(tw, lastSend) + p.micros(1, 10)
	kd.Waitall(reqs, exit-tw)
	p.overlap(d, sends, tw)
	rs := max(0, lastSend-tw)
	p.call(d, ivlSendRecv, "MPI_Waitall", tw, exit, func(x *ivlStat) {
		x.wait++
		x.rs += rs
		for _, t := range sendAt {
			x.received(exit - t)
		}
	})
}

// exchange is an MPI_Sendrecv between a and b (tag 2): each one's Real
// Sync is the other's entry less its own, when positive (its receive
// half; the send half gets no Late receiver, §8.6); one send and one
// receive each.
func (p *ivlProg) exchange(a, b int) {
	p.gap(a)
	p.gap(b)
	entry := map[int]int64{a: p.ranks[a].Now() + p.micros(0, 60), b: p.ranks[b].Now() + p.micros(0, 60)}
	for _, ro := range [][2]int{{a, b}, {b, a}} {
		r, o := ro[0], ro[1]
		exit := max(entry[r], entry[o]) + p.micros(1, 10)
		p.ranks[r].At(entry[r]).Sendrecv(int32(o), 2, 8, int32(o), 2, 8, exit-entry[r])
		rs := max(0, entry[o]-entry[r])
		p.call(r, ivlSendRecv, "MPI_Sendrecv", entry[r], exit, func(x *ivlStat) { x.send++; x.recv++; x.rs += rs; x.sent(o); x.received(exit - entry[o]) })
	}
}

// collective runs one collective on c: blocking (MPI_Barrier,
// MPI_Allreduce, MPI_Bcast, MPI_Reduce), every member leaving after the
// last entered, with §3.4–3.5's Potential Sync and Time Variation; or
// nonblocking (MPI_Ibarrier, MPI_Ibcast) completed by MPI_Wait after a
// gap (which may change the interval), with §8.5's Potential Sync at the
// wait: (latest start − wait's entry), at most the wait's own time. The
// root of an MPI_Ibcast may leave its wait before the others start, a
// non-root once the root has started.
func (p *ivlProg) collective(c *tracetest.Comm) {
	rootLocal := int32(p.rng.IntN(len(c.Members)))
	root := c.Members[rootLocal]
	first := c.Members[0] // rank 0 of c: counts the instance in Main (§5)
	kind := p.rng.IntN(6)
	entry := map[int]int64{}
	last := int64(0)
	for _, r := range c.Members {
		p.gap(r)
		entry[r] = p.ranks[r].Now() + p.micros(1, 50)
		last = max(last, entry[r])
	}
	opt := tracetest.On(c)
	if kind >= 4 {
		reqs := map[int]tracetest.Req{}
		for _, r := range c.Members {
			k := p.ranks[r].At(entry[r])
			if kind == 4 {
				reqs[r] = k.Ibarrier(us, opt)
			} else {
				reqs[r] = k.Ibcast(rootLocal, 8, us, opt)
			}
			p.call(r, ivlColl, []string{"MPI_Ibarrier", "MPI_Ibcast"}[kind-4], entry[r], entry[r]+us, func(x *ivlStat) { x.colln++ })
			if r == first {
				for _, o := range p.m.stack[r] {
					p.m.mainColl[o.key]++
				}
			}
		}
		for _, r := range c.Members {
			k := p.ranks[r]
			p.gap(r)
			tw := k.Now() + p.micros(0, 30)
			var exit int64
			switch {
			case kind == 4:
				exit = max(tw, last) + p.micros(1, 10)
			case r == root:
				exit = tw + p.micros(1, 30)
			default:
				exit = max(tw, entry[root]) + p.micros(1, 30)
			}
			k.At(tw).Wait(reqs[r], exit-tw)
			ps := min(max(0, last-tw), exit-tw)
			p.call(r, ivlColl, "MPI_Wait", tw, exit, func(x *ivlStat) { x.wait++; x.ps += ps })
		}
		return
	}
	exit := map[int]int64{}
	lastExit := int64(0)
	for _, r := range c.Members {
		exit[r] = last + p.micros(1, 20)
		lastExit = max(lastExit, exit[r])
	}
	for _, r := range c.Members {
		k := p.ranks[r].At(entry[r])
		dur := exit[r] - entry[r]
		randomColl(k, kind, rootLocal, dur, opt)
		ps, tv := last-entry[r], lastExit-exit[r]
		p.call(r, ivlColl, []string{"MPI_Barrier", "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce"}[kind], entry[r], exit[r], func(x *ivlStat) { x.colln++; x.ps += ps; x.tv += tv })
		if r == first {
			for _, o := range p.m.stack[r] {
				p.m.mainColl[o.key]++
			}
		}
	}
}

// randomIntervals builds a random program over 2–4 ranks: MPI_Init, the
// creation of two communicators (all ranks in reverse order, all but the
// last), then 30 steps of point-to-point messages between two random
// ranks, collectives on a random communicator and system calls, with
// MPI_Pcontrol intervals entered and left at random between the calls of
// each rank independently (so some ranks only enter some intervals), and
// MPI_Finalize; sequential sections 1 and 2 (one at a time) start and end
// at random points too, across the intervals' boundaries. A balanced
// program leaves every interval before MPI_Finalize. Every rank but 0 has its clock offset, and with drift
// drifting, by random amounts, which the alignment must undo.
func randomIntervals(rng *rand.Rand, unbalanced, drift bool) (*tracetest.Run, *ivlModel) {
	n := 2 + rng.IntN(3)
	run, ranks := start(n)
	p := &ivlProg{rng: rng, ranks: ranks, m: newIvlModel(n), unbalanced: unbalanced,
		lastExit: make([]int64, n), covered: make([][][2]int64, n), mpi: make([][][2]int64, n),
		psend: map[[2]int]tracetest.Req{}, precv: map[[2]int]tracetest.Req{}, secs: make([][]ivlSpan, n), secOpen: make([]int64, n), secFrom: make([]int64, n), offset: make([]int64, n), ppm: make([]float64, n)}
	for r, k := range ranks[1:] {
		if drift {
			p.ppm[r+1] = float64(rng.IntN(201) - 100)
		}
		p.offset[r+1] = int64(rng.IntN(2001)-1000) * ms
		k.Skew(p.offset[r+1], p.ppm[r+1])
	}
	rev := make([]int, n)
	for i := range rev {
		rev[i] = n - 1 - i
	}
	comms := []*tracetest.Comm{run.World(), run.NewComm(rev...), run.NewComm(rev[1:]...)}
	for r := range n {
		p.m.start(r, ranks[r].Now())
		p.lastExit[r] = p.local(r, ranks[r].Now())
	}
	for _, c := range comms[1:] {
		for _, r := range c.Members {
			t0 := ranks[r].Now()
			ranks[r].CommSplit(run.World(), c, us)
			p.call(r, ivlSys, "MPI_Comm_split", t0, t0+us, func(x *ivlStat) { x.sysn++ })
		}
	}
	for range 40 {
		switch x := rng.IntN(12); {
		case x < 6:
			s, d := distinctPair(rng, n)
			switch x {
			case 4:
				p.exchange(s, d)
			case 5:
				p.gather(d)
			default:
				p.p2p(s, d)
			}
		case x < 10:
			p.collective(comms[rng.IntN(len(comms))])
		default:
			// A system call, or a run of them the tracer folded into
			// one event: it counts as all its calls (§3.12).
			r := rng.IntN(n)
			p.gap(r)
			dur := p.micros(1, 10)
			calls, inner := int64(1), int64(0)
			if rng.IntN(2) == 0 {
				calls = int64(2 + rng.IntN(50))
				inner = (calls - 1) * int64(100+rng.IntN(500))
				ranks[r].Compute(inner)
			}
			t0 := ranks[r].Now()
			if calls > 1 {
				ranks[r].System("MPI_Comm_rank", dur, tracetest.FoldedGaps(uint32(calls), inner))
			} else {
				ranks[r].System("MPI_Comm_rank", dur)
			}
			p.callRun(r, ivlSys, "MPI_Comm_rank", calls, inner, t0, t0+dur, func(x *ivlStat) { x.sysn += calls })
		}
	}
	for r, k := range ranks {
		p.gap(r)
		for s := range n {
			for _, pq := range []struct {
				req map[[2]int]tracetest.Req
				key [2]int
			}{{p.psend, [2]int{r, s}}, {p.precv, [2]int{s, r}}} {
				if q, ok := pq.req[pq.key]; ok {
					t0 := k.Now()
					k.RequestFree(q, us)
					p.call(r, ivlSendRecv, "MPI_Request_free", t0, t0+us, nil)
				}
			}
		}
		if p.secOpen[r] != 0 {
			p.pcontrol(r, 103, p.secOpen[r])
		}
		if !unbalanced || rng.IntN(2) == 0 {
			for len(p.m.stack[r]) > 1 {
				p.pcontrol(r, 101, p.m.stack[r][len(p.m.stack[r])-1].num)
			}
		}
		k.Compute(p.micros(0, 20))
		p.m.finish(r, k.Now())
	}
	finish(run)
	p.sections()
	return run, p.m
}

// sections adds Insufficient Parallelism (§3.8): the j-th execution of
// section k on each processor is one instance, executed by K processors;
// each interval gets, per execution, its time inside the interval less
// the time in MPI calls (Communications) there, times (K−1)/K.
func (p *ivlProg) sections() {
	type inst struct {
		k string
		j int
	}
	procs := map[inst]int{}
	for r := range p.secs {
		nth := map[string]int{}
		for _, sc := range p.secs[r] {
			procs[inst{sc.key, nth[sc.key]}]++
			nth[sc.key]++
		}
	}
	for r := range p.secs {
		nth := map[string]int{}
		for _, sc := range p.secs[r] {
			k := float64(procs[inst{sc.key, nth[sc.key]}])
			nth[sc.key]++
			for _, sp := range p.m.spans[r] {
				lo, hi := max(sc.from, sp.from), min(sc.to, sp.to)
				if lo >= hi {
					continue
				}
				seq := hi - lo
				for _, c := range p.mpi[r] {
					seq -= max(0, min(c[1], hi)-max(c[0], lo))
				}
				p.m.stats[sp.key][r].ip += float64(seq) * (k - 1) / k
			}
		}
	}
}

// TestRandomIntervals: random programs (randomIntervals) whose
// MPI_Pcontrol intervals are opened and closed at random points of each
// rank, checked against a reference model of docs/characteristics.md
// §2–§5 written in the test: every interval reported (and only those up
// to the level asked for), and in each, per processor, Execution Time,
// SendRecv, Collective and System Time, Real Sync and its Late receiver
// part, Potential Sync, Time Variation, Overlap, Insufficient
// Parallelism, Idle, Lost and Productive Time, Load Imbalance, the call
// counts and ExeCount, the gaps and the call mix, with the main
// characteristics and the comparative ones. With 1, 2 and 4 workers, and
// through analyzeOpts (invariants, the distributed replay). A third of
// the programs make Pcontrol mistakes (leaving an interval that is not
// open, crossing pairs, intervals left open at MPI_Finalize): each gives
// its warning and the figures are those of §2's rules.
func TestRandomIntervals(t *testing.T) {
	seeds := 45
	if testing.Short() {
		seeds = 12
	}
	for seed := range seeds {
		unbalanced, drift := seed%3 == 2, seed%4 == 3
		rng := rand.New(rand.NewPCG(uint64(seed), 17))
		run, m := randomIntervals(rng, unbalanced, drift)
		// Times are exact to the ns; a drifting clock's conversion rounds
		// each to a few ns, and sums of a hundred of them may differ by
		// as many.
		tol := tol
		if drift {
			tol = 500e-9
		}
		level := []int{-1, -1, 0, 1, 2}[rng.IntN(5)]
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 4} {
			name := fmt.Sprintf("seed %d (%d ranks, level %d), %d workers", seed, run.Size(), level, w)
			var warned []string
			rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: level, Workers: w,
				Warn: func(s string) { warned = append(warned, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Unmatched != nil {
				t.Errorf("%s: unmatched %+v", name, rep.Unmatched)
			}
			want := slices.Compact(slices.Sorted(slices.Values(m.warns)))
			if g := slices.Compact(slices.Sorted(slices.Values(warned))); !slices.Equal(g, want) {
				t.Errorf("%s: warnings\n%q\nwant\n%q", name, g, want)
			}
			checkIntervals(t, name, rep, m, level, tol)
		}
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: level})
		checkIntervals(t, fmt.Sprintf("seed %d, analyzeOpts", seed), rep, m, level, tol)
	}
}

// distinctPair draws two different ranks of n (n ≥ 2), a sender and a
// receiver, each pair equally likely.
func distinctPair(rng *rand.Rand, n int) (s, d int) {
	s, d = rng.IntN(n), rng.IntN(n-1)
	if d >= s {
		d++
	}
	return s, d
}
