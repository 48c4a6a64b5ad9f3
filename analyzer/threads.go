package analyzer

import (
	"errors"
	"io"
	"slices"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Threads. A process initialized with MPI_THREAD_SERIALIZED or
// MPI_THREAD_MULTIPLE may call MPI from several threads; the tracer
// records each thread's calls in batches of their own, handed over when a
// thread's buffer fills, when a periodic flush finds the thread in a call,
// or when the thread ends, so that a thread's batches may come long after
// other threads' later calls. The replay of such a rank is still one
// sequence of calls (the exchange, the intervals and the accumulators are
// per process): threadMerge interleaves the threads' calls, and
// threadCover accounts for the time during which several threads are in
// MPI at once. docs/characteristics.md §8.10 defines the figures.
//
// The order. Within a thread the calls keep their program order. Across
// threads, MPI orders nothing but what the program synchronizes; the
// replay orders what each call gives other processes at its entry (a
// send, a nonblocking start, the entry of a blocking collective, the send
// of MPI_Sendrecv) and what it takes from them at its exit, when what it
// waited for had happened (a receive, probe, Wait/Test, the rest of a
// blocking collective or MPI_Sendrecv). Both times lie within the call,
// so each thread's order is kept. Only receives (and probes and waits)
// make the replay wait, for a send entered before their exit, which is
// replayed before them: so the replay cannot deadlock where the program
// did not, whatever the threads did at once (up to clock alignment
// errors larger than a message's latency). A blocking collective of a
// multi-threaded process is therefore replayed in two steps, like a
// nonblocking one (its entry, then its exit) and never waits: its
// Potential Sync and Time Variation are those of a blocking collective
// (exchange.maybeComplete); only its exit is not repaired by the
// controlled logical clock.

// The merge reads threadWindow calls ahead, so that a thread's first
// batch, handed over a little after other threads' later calls, is
// merged in its place. It holds up to maxThreadBuffered calls while it
// waits for the next batch of a thread it has no call of: a thread that
// has ended, or stays out of MPI for long, has none for a while, and
// beyond that many calls the merge goes on with the threads it has calls
// of (a call of that thread coming later is then replayed after later
// calls of other threads; matching within a thread is unaffected).
// MPI_Finalize, after every other thread's calls, waits for the end of
// the file.
const (
	threadWindow      = 1 << 12
	maxThreadBuffered = 1 << 16
)

// threadLevelSerialized is MPI_THREAD_SERIALIZED in the trace header's
// thread_level (MPI_THREAD_SINGLE = 0 … MPI_THREAD_MULTIPLE = 3).
const threadLevelSerialized = 2

// threadEv is a buffered call of one thread, with the definition of its
// communicator as it was when the call was read (a local index may be
// redefined by later batches).
type threadEv struct {
	e    traceformat.Event
	comm *tracepb.Communicator
	key  int64 // local ns: its place in the merge
	fin  bool  // MPI_Finalize
	// early: the part replayed at the call's entry (early) of a call
	// whose other part, later in the merge, is replayed at its exit.
	early bool
}

// threadQ is one thread's calls read and not yet replayed.
type threadQ struct {
	id   uint32
	evs  []threadEv
	head int
}

func (q *threadQ) empty() bool { return q.head == len(q.evs) }

// threadMerge reads a rank's batches and hands out its threads' calls in
// the merge order.
type threadMerge struct {
	rp       *replayer
	rd       *traceformat.Reader
	qs       []*threadQ // by first appearance
	eof      bool
	buffered int
}

// multiThreaded tells whether the trace at path holds calls of a thread
// other than the one that called MPI_Init; only asked when the header's
// thread level allows them (the file is read until the first such batch).
func multiThreaded(p *filePool, path string, hdr *tracepb.Header) (bool, error) {
	if hdr.GetThreadLevel() < threadLevelSerialized {
		return false, nil
	}
	f, rd, err := openTrace(p, path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for {
		b, err := rd.ReadLazyBatch()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		if b.Thread != 0 {
			return true, nil
		}
	}
}

// next is the next call to replay; false at the end of the trace.
func (m *threadMerge) next() (*threadEv, bool, error) {
	for {
		if !m.eof && (m.buffered < threadWindow || m.buffered < maxThreadBuffered && m.missing()) {
			if err := m.read(); err != nil {
				return nil, false, err
			}
			continue
		}
		var best *threadQ
		for _, q := range m.qs {
			if !q.empty() && (best == nil || q.evs[q.head].key < best.evs[best.head].key) {
				best = q
			}
		}
		if best == nil || best.evs[best.head].fin && !m.eof {
			if m.eof {
				return nil, false, nil
			}
			if err := m.read(); err != nil {
				return nil, false, err
			}
			continue
		}
		ev := &best.evs[best.head]
		best.head++
		m.buffered--
		if best.empty() {
			best.evs, best.head = best.evs[:0], 0
		}
		return ev, true, nil
	}
}

// missing tells whether a thread has no call at hand.
func (m *threadMerge) missing() bool {
	for _, q := range m.qs {
		if q.empty() {
			return true
		}
	}
	return false
}

// floor is a time (global ns) before which no call still to be replayed
// after the one just taken enters: the earliest entry at hand, as the
// threads' calls enter in order. Exact while every thread has a call at hand; beyond
// maxThreadBuffered, a late batch may still bring an earlier one.
func (m *threadMerge) floor() (int64, bool) {
	var lo int64
	has := false
	for _, q := range m.qs {
		if !q.empty() {
			if t := q.evs[q.head].e.Entry; !has || t < lo {
				lo, has = t, true
			}
		}
	}
	if !has {
		return 0, false
	}
	return m.rp.global(lo), true
}

// read reads one batch into its thread's queue.
func (m *threadMerge) read() error {
	b, err := m.rd.ReadLazyBatch()
	if err != nil {
		m.eof = true
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var q *threadQ
	for _, x := range m.qs {
		if x.id == b.Thread {
			q = x
			break
		}
	}
	if q == nil {
		q = &threadQ{id: b.Thread}
		m.qs = append(m.qs, q)
	}
	defs := m.rp.defs
	var e traceformat.Event
	for b.Next(&e) {
		e.Reqs = slices.Clone(e.Reqs)
		e.Status = slices.Clone(e.Status)
		ev := threadEv{e: e, comm: defs.Comm(eventLocalComm(&e)), key: e.Entry}
		fi := m.rp.fn(e.Func)
		if fi.cancel {
			// (cancelledAhead looks ahead from now on, passing over
			// MPI_Cancel as farStatusThreads does: passFn.)
			m.rp.batchCancels, m.rp.cancelFn = true, e.Func+1
		}
		switch fi.op {
		case opFinalize:
			ev.fin = true
		case opSendrecv, opColl:
			ev.early = true
			q.evs = append(q.evs, ev)
			m.buffered++
			ev.early = false
			fallthrough
		case opRecv, opProbe, opMprobe, opImprobe, opComplete:
			ev.key = e.Exit
		}
		q.evs = append(q.evs, ev)
		m.buffered++
	}
	return nil
}

// findStatus is LazyBatch.FindStatus through the calls the merge holds
// and has not handed out: what the first of them in the merge's order
// that names request id, other than a call of function pass (MPI_Cancel),
// recorded for it, looking at no more than limit calls of each thread.
// Each thread's calls are in the merge's order, and the merge hands out
// the smallest key first (the first thread on a tie): so it is the first
// such call of a thread, of the smallest key.
func (m *threadMerge) findStatus(id uint64, pass uint32, limit int) (traceformat.Status, traceformat.Ahead) {
	var best *threadEv
	at := 0
	for _, q := range m.qs {
		evs := q.evs[q.head:]
		if len(evs) > limit {
			evs = evs[:limit]
		}
		for i := range evs {
			ev := &evs[i]
			if ev.early || ev.e.Attr&traceformat.AttrReqs == 0 || ev.e.Func == pass {
				continue
			}
			if k := slices.Index(ev.e.Reqs, id); k >= 0 {
				if best == nil || ev.key < best.key {
					best, at = ev, k
				}
				break
			}
		}
	}
	switch {
	case best == nil:
		return traceformat.Status{}, traceformat.AheadNotFound
	case best.e.Attr&traceformat.AttrStatus == 0 || at >= len(best.e.Status):
		return traceformat.Status{}, traceformat.AheadNamed
	}
	return best.e.Status[at], traceformat.AheadFound
}

// runThreads replays a multi-threaded rank's calls in the merge order.
func (rp *replayer) runThreads(rd *traceformat.Reader) {
	rp.thr = &threadCover{}
	m := &threadMerge{rp: rp, rd: rd}
	rp.merge = m
	for {
		if rp.ctx != nil && rp.ctx.Err() != nil {
			return
		}
		ev, ok, err := m.next()
		if err != nil {
			rp.readErr = err
		}
		if !ok {
			return
		}
		lo := rp.global(ev.e.Entry)
		if f, ok := m.floor(); ok {
			lo = min(lo, f)
		}
		rp.thr.prune(lo)
		rp.noShape = shapeInfo{comm: rp.commOf(eventLocalComm(&ev.e), ev.comm), commOK: true}
		rp.sc = &rp.noShape
		if ev.early {
			rp.early(&ev.e)
		} else {
			rp.event(&ev.e)
		}
	}
}

// early replays what a call gives other processes at its entry, when the
// rest of it is replayed at its exit: the send of MPI_Sendrecv, the entry
// of a blocking collective.
func (rp *replayer) early(e *traceformat.Event) {
	if !rp.running || rp.tr.Ended() {
		return
	}
	e.Site = rp.sites.of(e.Site, e.Func) // as eventFn will
	fi := rp.fn(e.Func)
	entry := rp.global(e.Entry)
	switch fi.op {
	case opSendrecv:
		rp.evSite = e.Site
		rp.post(rp.cur.Value, e, entry, lateInfo{})
	case opColl:
		rp.collEntryThreaded(e, fi, entry)
	}
}

// thrColl is a blocking collective a thread has entered (its instance and
// index in it; in nil: not matched) and not yet left.
type thrColl struct {
	in  *collInst
	idx int
	key collKey
}

// collEntryThreaded posts the entry of a blocking collective call of a
// multi-threaded rank; collExitThreaded, at its exit, completes it.
func (rp *replayer) collEntryThreaded(e *traceformat.Event, fi *fnInfo, entry int64) {
	c := rp.eventComm(e)
	if c == nil || c.myIdx < 0 {
		return
	}
	root := int32(-1)
	if fi.shape == tracepb.Function_ONE_TO_ALL || fi.shape == tracepb.Function_ALL_TO_ONE {
		if e.Attr&traceformat.AttrRoot != 0 {
			root = e.Root
		}
	}
	key, members, idx, root, joins := rp.collPlace(c, root)
	if idx == 0 {
		rp.cur.Value.collInst++
	}
	if !joins {
		return
	}
	in, contrib := rp.x.icollStart(key, fi.name, fi.shape, false, root, members, idx, rp.rank, entry, startAtt(e, fi, rp.callSite(e.Site, entry)), rp.contrib)
	rp.contrib = contrib
	if rp.thrColls == nil {
		rp.thrColls = map[uint32]thrColl{}
	}
	rp.thrColls[e.Thread] = thrColl{in: in, idx: idx, key: rp.x.ranks[rp.rank].placed}
	rp.applyContrib()
}

// collExitThreaded posts the exit of the blocking collective call e
// (collEntryThreaded), in interval node.
func (rp *replayer) collExitThreaded(e *traceformat.Event, exit int64, node *rnode) {
	p, ok := rp.thrColls[e.Thread]
	if !ok {
		return // not a member, or not joined
	}
	delete(rp.thrColls, e.Thread)
	if p.in == nil {
		rp.unmatchedColls++
		return
	}
	rp.obs.coll(p.key, 0, false)
	// Not repaired (characteristics.md §8.10): counted when it precedes
	// its bound (collInst.unbound).
	rp.contrib = rp.x.icollDone(p.in, p.idx, rp.rank, exit, 0, collAtt{node: node, site: e.Site, check: true}, rp.contrib)
	rp.applyContrib()
}

// global is local time t on the global clock, as event computes it.
func (rp *replayer) global(t int64) int64 {
	if rp.clkOffsetOnly {
		return t + rp.clkOffset
	}
	if rp.clkAffine {
		return rp.onLine(t)
	}
	return rp.clk.At(t) + rp.delta
}

// threadCover is the time of a process during which at least one of its
// threads was in MPI, as disjoint segments in time order, each charged to
// one call (its owner). A call gets the part of its time no call charged
// before covers, except that the time it waits for a late sender (its
// Real Sync) is taken back from calls that were in MPI then without
// waiting: so that the process's time in MPI is the union of its threads'
// calls, its Real Sync the union of their waits, and each call's Real
// Sync part of its own time (docs/characteristics.md §8.10).
type threadCover struct {
	segs []coverSeg
	buf  []coverSeg
}

// coverSeg is [lo, hi) charged to a call: its interval's accumulators, call
// site and class; wait: the call waited for a late sender then.
type coverSeg struct {
	lo, hi int64
	own    coverOwner
	wait   bool
}

type coverOwner struct {
	a     *acc
	site  uint32
	class tracepb.Function_Class
}

// prune forgets the segments that end before lo, which no call still to
// come overlaps.
func (c *threadCover) prune(lo int64) {
	i := 0
	for i < len(c.segs) && c.segs[i].hi <= lo {
		i++
	}
	if i > 0 {
		c.segs = append(c.segs[:0], c.segs[i:]...)
	}
}

// charge covers a call in MPI over [lo, hi) that waited over [lo, wait)
// (wait ≤ hi; wait ≤ lo: no wait), owned by own: dur is the time it gets,
// rs its Real Sync (rs ≤ dur). Time taken back from other calls is
// subtracted from their figures here.
func (c *threadCover) charge(lo, hi, wait int64, own coverOwner) (dur, rs int64) {
	if hi <= lo {
		return 0, 0
	}
	wait = min(max(wait, lo), hi)
	// The segments [i, j) overlap [lo, hi).
	i, _ := slices.BinarySearchFunc(c.segs, lo, func(s coverSeg, t int64) int {
		if s.hi <= t {
			return -1
		}
		return 1
	})
	j := i
	for j < len(c.segs) && c.segs[j].lo < hi {
		j++
	}
	out := c.buf[:0]
	add := func(s coverSeg) {
		if s.hi > s.lo {
			out = append(out, s)
		}
	}
	// mine adds [a, b) as the call's own, split at its wait's end.
	mine := func(a, b int64) {
		if a >= b {
			return
		}
		dur += b - a
		if w := min(b, wait); w > a {
			rs += w - a
			add(coverSeg{lo: a, hi: w, own: own, wait: true})
			a = w
		}
		add(coverSeg{lo: a, hi: b, own: own})
	}
	at := lo
	for k := i; k < j; k++ {
		s := c.segs[k]
		if s.lo > at {
			mine(at, s.lo)
		}
		// Split s at the call's wait: the part of s within [lo, wait) is
		// taken back unless s waited then too.
		ta, tb := max(s.lo, lo), min(s.hi, wait)
		if s.wait || ta >= tb {
			add(s)
		} else {
			add(coverSeg{lo: s.lo, hi: ta, own: s.own, wait: s.wait})
			s.own.take(tb - ta)
			mine(ta, tb)
			add(coverSeg{lo: tb, hi: s.hi, own: s.own, wait: s.wait})
		}
		at = max(at, s.hi)
	}
	if at < hi {
		mine(at, hi)
	}
	// Splice out[...] in place of segs[i:j].
	tail := append([]coverSeg(nil), c.segs[j:]...)
	c.segs = append(append(c.segs[:i], out...), tail...)
	c.buf = out[:0]
	return dur, rs
}

// take removes d ns from the owner's figures: a waiting call of another
// thread takes them.
func (o coverOwner) take(d int64) {
	a := o.a
	switch o.class {
	case tracepb.Function_POINT_TO_POINT:
		a.p2p -= d
	case tracepb.Function_COLLECTIVE:
		a.coll -= d
	default:
		a.sys -= d
	}
	a.site(o.site).time -= d
}
