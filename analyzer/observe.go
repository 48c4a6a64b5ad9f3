package analyzer

import (
	"cmp"
	"math"
	"slices"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Observers watch the replay: every replayed call, on the global clock
// after alignment and the controlled logical clock's forward repairs, with
// the message each receive took (its sender and send entry) and the
// instance each collective call joined, and every interval entered and
// left. The replay calls its rank's rankObs at a few points (replayer.obs)
// and the interval tracker calls it at each interval boundary; disabled,
// each point is a nil check. Two observers exist: the timeline recorder
// (dtpa --html) and the Chrome trace export (export.go).
//
// The times are the report's: a call is handed on only once it lies
// before the rank's last fixed point (clc.go), so that the backward
// amortization of a later repair, which moves the calls since that point,
// moves them here too (rankObs.amortize) before anyone sees them.

// rankObs gathers what the replay of one rank says about the call being
// replayed and hands each finished call, and each interval boundary, to
// the observers that are on. Only that rank's replay touches it.
type rankObs struct {
	rp *replayer
	tl *tlRank // the timeline recorder's, nil when off
	ex *exRank // the Chrome export's, nil when off
	c  obsCall
	// held are the finished calls after the last fixed point, in call
	// order: an amortization may still move them. About replayer.maxPend
	// at most: the replay fixes its stretch when it grows past that.
	held []obsCall
	// thrs and thrLast are the calling threads of the calls handed on and
	// each one's latest exit: a call in progress at the end began after
	// its thread's last call returned (unfinished).
	thrs    []uint32
	thrLast []int64
}

// heldSlack is how far held may grow past the replay's own bound of
// pending events (replayer.maxPend) should its fixed points ever fall
// behind: the oldest calls are then handed on as they are.
const heldSlack = 64

// obsCall is one replayed call as the observers see it.
type obsCall struct {
	// The event's call site and function ids and its number of calls (a
	// folded run of polls is several): copied, since the event itself is
	// reused by the decoder before a held call is handed on.
	site, fn uint32
	thread   uint32 // the calling thread (0: the MPI_Init thread)
	calls    int64
	// inner: a folded run's summed gaps between its calls (AttrInnerGaps),
	// so that the run's first call entered at entry − inner.
	inner                    int64
	fi                       *fnInfo
	kind                     int
	entry, exit, lost, bytes int64
	peer                     int32   // partner's world rank, -1 none
	msgs                     []tlMsg // messages the call received (box unset)
	// The collective instance it joined first (a blocking collective's,
	// or the one a nonblocking or persistent collective's start joined)
	// and the latest entry it waited for (collHas: it waited for one).
	inColl, collHas bool
	collKey         collKey
	collLatest      int64
	// collReq: it joined collKey by a start whose request a later call
	// completes (collStart).
	collReq bool
	// ties are its other ties to instances: those it completed (a
	// Wait/Test call completing nonblocking or persistent collectives'
	// requests) and those it joined past the first (MPI_Startall of
	// several persistent collectives).
	ties []collTie
}

// collTie ties a call to a collective instance besides obsCall.collKey:
// done, it completed the instance's request; else it joined it too.
type collTie struct {
	key  collKey
	done bool
}

// newRankObs is the observer of rp's replay, nil when nothing observes.
func newRankObs(rp *replayer, tl *tlRank, ex *exRank) *rankObs {
	if tl == nil && ex == nil {
		return nil
	}
	o := &rankObs{rp: rp, tl: tl, ex: ex}
	rp.tr.Observe = o.interval
	return o
}

// recv notes that the call being replayed received the message rank src
// sent at global time send (ok false: nothing was received).
func (o *rankObs) recv(src int32, send int64, ok bool) {
	if o != nil && ok {
		o.c.msgs = append(o.c.msgs, tlMsg{src: src, send: send})
	}
}

// coll notes the collective instance the call being replayed joined and
// the latest entry it waited for (has: it waited for one).
func (o *rankObs) coll(k collKey, latest int64, has bool) {
	if o != nil {
		o.c.collKey, o.c.inColl, o.c.collLatest, o.c.collHas, o.c.collReq = k, true, latest, has, false
	}
}

// collStart notes that the call being replayed joined instance k by
// starting a nonblocking or persistent collective (it waits for nobody),
// whose request a later call completes (collDone).
func (o *rankObs) collStart(k collKey) {
	if o == nil {
		return
	}
	if !o.c.inColl {
		o.c.collKey, o.c.inColl, o.c.collHas, o.c.collReq = k, true, false, true
		return
	}
	o.c.ties = append(o.c.ties, collTie{key: k})
}

// collDone notes that the call being replayed completed this rank's part
// of nonblocking or persistent instance k (its request).
func (o *rankObs) collDone(k collKey) {
	if o != nil {
		o.c.ties = append(o.c.ties, collTie{key: k, done: true})
	}
}

// call finishes the call just replayed: global entry and exit, and its
// Real Sync.
func (o *rankObs) call(e *traceformat.Event, fi *fnInfo, entry, exit, realSync int64) {
	if o == nil {
		return
	}
	c := &o.c
	c.site, c.fn, c.thread, c.calls = e.Site, e.Func, e.Thread, int64(e.NumCalls())
	c.inner = 0
	if e.Attr&traceformat.AttrInnerGaps != 0 && e.Calls > 1 {
		c.inner = max(0, e.InnerGaps)
	}
	c.fi, c.kind, c.entry, c.exit, c.lost = fi, kindOf(fi), entry, exit, realSync
	if c.inColl && c.collHas && fi.op == opColl {
		c.lost = max(0, min(c.collLatest, exit)-entry)
	}
	c.bytes, c.peer = 0, -1
	if e.Attr&traceformat.AttrSendBytes != 0 {
		c.bytes += int64(e.SendBytes)
	}
	if e.Attr&traceformat.AttrRecvBytes != 0 {
		c.bytes += int64(e.RecvBytes)
	}
	if len(c.msgs) > 0 {
		c.peer = c.msgs[0].src
	} else if e.Attr&traceformat.AttrSend != 0 {
		if cm := o.rp.eventComm(e); cm != nil {
			if w, ok := cm.peerWorld(e.SendPeer); ok {
				c.peer = w
			}
		}
	}
	o.release(o.rp.fixedAt)
	o.hold(c)
	c.msgs, c.ties = c.msgs[:0], c.ties[:0]
	c.inColl = false
}

// hold keeps a copy of c until it is fixed; the copy's messages and ties
// reuse the storage of the slot's earlier occupant.
func (o *rankObs) hold(c *obsCall) {
	n := len(o.held)
	if n < cap(o.held) {
		o.held = o.held[:n+1]
	} else {
		o.held = append(o.held, obsCall{})
	}
	h := &o.held[n]
	msgs := append(h.msgs[:0], c.msgs...)
	ties := h.ties[:0]
	if len(c.ties) > 0 {
		ties = append(ties, c.ties...)
	}
	*h = *c
	h.msgs, h.ties = msgs, ties
}

// release hands on the held calls that end at or before fixed (no
// amortization moves them any more), and the oldest beyond the bound.
func (o *rankObs) release(fixed int64) {
	i, bound := 0, 2*o.rp.maxPend+heldSlack
	for i < len(o.held) && (o.held[i].exit <= fixed || len(o.held)-i > bound) {
		h := &o.held[i]
		o.noteExit(h.thread, h.exit)
		if o.tl != nil {
			o.tl.record(h)
		}
		if o.ex != nil {
			o.ex.record(h)
		}
		i++
	}
	switch i {
	case 0:
		return
	case len(o.held):
		o.held = o.held[:0]
		return
	}
	// Shift the rest down; the released slots' message and tie storage
	// moves to the free slots at the end, so that no two slots share it.
	var buf [8][]tlMsg
	var tbuf [8][]collTie
	spare, tspare := buf[:0], tbuf[:0]
	for j := 0; j < i; j++ {
		spare = append(spare, o.held[j].msgs[:0])
		tspare = append(tspare, o.held[j].ties[:0])
	}
	n := copy(o.held, o.held[i:])
	for j := n; j < len(o.held); j++ {
		o.held[j] = obsCall{msgs: spare[j-n], ties: tspare[j-n]}
	}
	o.held = o.held[:n]
}

// noteExit notes that thread th's call handed on returned at exit.
func (o *rankObs) noteExit(th uint32, exit int64) {
	for i, t := range o.thrs {
		if t == th {
			o.thrLast[i] = max(o.thrLast[i], exit)
			return
		}
	}
	o.thrs, o.thrLast = append(o.thrs, th), append(o.thrLast, exit)
}

// flush hands on every held call: at an interval boundary (a fixed point
// of the replay: nothing before it moves) and at the end of the replay.
func (o *rankObs) flush() {
	if o != nil {
		o.release(math.MaxInt64)
	}
}

// amortize moves the held calls as clc.go's amortize moved the events
// since the last fixed point (move maps an old time to the new one). The
// time a call lost to a late partner ends where it did (the partner's
// time does not move): it shrinks by as much as the entry moved.
func (o *rankObs) amortize(move func(int64) int64) {
	if o == nil {
		return
	}
	for i := range o.held {
		h := &o.held[i]
		ne, nx := move(h.entry), move(h.exit)
		if h.lost > 0 && !h.inColl {
			h.lost = max(0, h.entry+h.lost-ne)
		}
		h.entry, h.exit = ne, nx
	}
}

// interval notes that interval n (never the root) was entered or left at
// global time at (intervals.Tracker.Observe).
func (o *rankObs) interval(n *rnode, at int64, enter bool) {
	o.flush()
	if o.tl != nil {
		o.tl.interval(n, at, enter)
	}
	if o.ex != nil {
		o.ex.interval(n, at, enter)
	}
}

// openCall is a call the rank's footer says was in progress when its
// process ended (Footer.unfinished), as the observers see it.
type openCall struct {
	idx    int // its place among the footer's calls: Report.Unfinished's order within the rank
	thread uint32
	fi     *fnInfo
	kind   int
	// On the global clock: the call's entry and the process's end, -1
	// when nothing says when that was; with atLeast, end is when the job
	// was interrupted, which the process outlived.
	entry, end int64
	atLeast    bool
}

// ended hands how the rank's process ended to the observers, once the
// replay is over: the calls in progress then, each from its entry to the
// end of the process, and the moment it crashed, on the global clock as
// the rank's calls are. They are drawn, not counted
// (docs/characteristics.md §8.2).
func (o *rankObs) ended() {
	if o == nil {
		return
	}
	rp := o.rp
	for _, u := range openCalls(rp.unf, rp.unfStart, rp.unfEnd, rp.unfAtLeast) {
		c := openCall{idx: u.Index, thread: u.Thread, fi: rp.unfFn(rp.unf[u.Index]), entry: rp.global(u.Entry), end: -1}
		if k := slices.Index(o.thrs, u.Thread); k >= 0 && c.entry < o.thrLast[k] {
			continue // before its thread's last call returned: damage
		}
		c.kind = kindOf(c.fi)
		if u.End > 0 {
			c.end, c.atLeast = rp.global(u.End), u.AtLeast
		}
		if o.tl != nil {
			o.tl.unfinished(&c)
		}
		if o.ex != nil {
			o.ex.unfinished(&c)
		}
	}
	// Where the process crashed, when: at the signal, on the crashed
	// thread (-1: one that never called MPI, drawn on the process).
	if c := rp.crash; c != nil && c.LocalNs > 0 && c.LocalNs >= rp.unfStart && c.LocalNs-rp.unfStart <= maxOpenSpan {
		th := int64(-1)
		if c.HasThread {
			th = int64(c.Thread)
		}
		at := rp.global(c.LocalNs)
		if o.tl != nil {
			o.tl.crashed(at, th)
		}
		if o.ex != nil {
			o.ex.crashed(at, th)
		}
	}
	// Where a process that neither crashed nor finalized ended, when: at
	// its exit, or at the signal that found it in no MPI call.
	if e := rp.endAt; rp.endState != "" && e > 0 && e >= rp.unfStart && e-rp.unfStart <= maxOpenSpan {
		at, exited := rp.global(e), rp.endState == "exited"
		if o.tl != nil {
			o.tl.ended(at, rp.endThread, exited)
		}
		if o.ex != nil {
			o.ex.ended(at, rp.endThread, exited)
		}
	}
}

// maxOpenSpan bounds the time from the start of tracing to the entry of a
// call in progress at the end, and from that entry to the end (104 days,
// longer than any batch job): past it the footer is damaged.
const maxOpenSpan = 1 << 53

// unfFn is the function of unfinished call u: by its id, or, when the
// definitions hold no function of that id and name (a damaged footer), by
// its name alone.
func (rp *replayer) unfFn(u *tracepb.UnfinishedCall) *fnInfo {
	if rp.defs != nil {
		if f := rp.defs.Function(u.Function); f != nil && f.Name == u.Name {
			return rp.fn(u.Function)
		}
	}
	in := classify(&tracepb.Function{Name: cmp.Or(u.Name, unknownFunction)})
	in.derive()
	return &in
}

// openSpan is an interval entered and not yet left.
type openSpan struct {
	n  *rnode
	at int64
}

// followSpan follows the open intervals of a rank through the entry
// (enter) or exit of n at time at: an entry is kept, up to maxOpenSpans
// open at once; an exit removes n and returns when it was entered, left
// true. An exit of an interval not kept returns left false.
func followSpan(open *[]openSpan, n *rnode, at int64, enter bool) (from int64, left bool) {
	s := *open
	if enter {
		if len(s) < maxOpenSpans {
			*open = append(s, openSpan{n, at})
		}
		return 0, false
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].n == n {
			from := s[i].at
			*open = append(s[:i], s[i+1:]...)
			return from, true
		}
	}
	return 0, false
}

// DefaultTimelineCalls is the detail budget of a TimelineRecorder whose
// MaxCalls is 0: boxes over all ranks (about 80 bytes each in memory).
const DefaultTimelineCalls = 1 << 20

// overviewBins is the resolution of the overview in the finished
// Timeline. While replaying, each rank's histogram has histBins bins at
// most, fewer with many ranks so that all of them together hold
// histTotalBins (40 bytes each), but never fewer than minHistBins.
const (
	overviewBins  = 1000
	histBins      = 2048
	minHistBins   = 64
	histTotalBins = 1 << 20
)

// TimelineRecorder records the timeline of a run when set in
// Options.Timeline. Memory is bounded: each rank keeps the detail of its
// first MaxCalls/ranks calls (and of the messages they received) and a
// fixed-size overview of all of them.
type TimelineRecorder struct {
	MaxCalls int // detail budget over all ranks; 0 = DefaultTimelineCalls
	// Sink, when set, also gets every call and interval execution of every
	// rank, each once final, for a viewer that keeps the whole run
	// outside memory (dtpa view); the Timeline's own detail stays bounded
	// by MaxCalls.
	Sink TimelineSink
	// TempDir is where process 0 of a distributed analysis spools the
	// other processes' recordings until the page is written ("": the
	// system's temporary directory; timeline.go).
	TempDir string

	ranks []*tlRank // the ranks recorded in this process
	spool tlSpool   // the other processes' ranks (dtpa-mpi's process 0)
	fin   *tlFinished
	tl    *report.Timeline
}

// TimelineSink receives a run call by call (TimelineRecorder.Sink). Each
// rank's calls come from that rank's replay alone, in call order, with
// their final times on the global clock (before the Timeline's Origin is
// known); different ranks' calls come concurrently.
type TimelineSink interface {
	Start(ranks int)                // once, before any call: the run's number of ranks
	Call(rank int, c *TimelineCall) // c and its Msgs are reused after the call
	Span(rank int, s *TimelineSpan)
}

// TimelineCall is one call as a Lane holds it, on the global clock.
type TimelineCall struct {
	Entry, Exit, Lost, Bytes int64
	Peer                     int32 // as Lane.Peer
	// Func and Site are the rank's own numbers of the call's function and
	// call site: LaneFuncs and LaneSites map them to Timeline.Funcs and to
	// SRC ids once Analyze returned.
	Func, Site int32
	Kind       string // report.KindP2P, KindColl, KindWait or KindOther
	// Thread is the calling thread (0: the thread that called MPI_Init),
	// as Lane.Thread.
	Thread int32
	// Coll identifies the collective instance the call joined, the same
	// on every member (a hash of the instance's key); 0 none. A blocking
	// collective joins its instance; so do the start of a nonblocking
	// collective (MPI_Ibarrier …) and MPI_Start of a persistent one
	// (MPI_Barrier_init …), whose request the Wait/Test call that
	// completes it lists in Done.
	Coll uint64
	// More are the instances the call joined besides Coll (MPI_Startall
	// of several persistent collectives); Done those whose request it
	// completed (MPI_Wait, MPI_Waitall over several MPI_Ibarrier …), in
	// the order of its requests. Identified as Coll; reused as Msgs.
	More, Done []uint64
	Msgs       []TimelineMsg // the messages the call received
}

// TimelineMsg is a message received: its sender and the send's entry.
type TimelineMsg struct {
	Src  int32
	Send int64
}

// TimelineSpan is one execution of an interval, on the global clock.
type TimelineSpan struct {
	Enter, Leave int64
	Interval     string // its path, as Timeline.Intervals names it
	Level        int
}

// LaneFuncs maps rank's function numbers (TimelineCall.Func) to indexes
// into Timeline.Funcs, once Analyze returned.
func (t *TimelineRecorder) LaneFuncs(rank int) []int {
	if rank < 0 || rank >= len(t.ranks) || t.ranks[rank] == nil {
		return nil
	}
	return t.ranks[rank].laneFuncs
}

// LaneSites maps rank's call-site numbers (TimelineCall.Site) to SRC ids
// (0 unknown), once Analyze returned.
func (t *TimelineRecorder) LaneSites(rank int) []int {
	if rank < 0 || rank >= len(t.ranks) || t.ranks[rank] == nil {
		return nil
	}
	return t.ranks[rank].laneSites
}

// rank sets up the recording of one rank (nil when t is nil).
func (t *TimelineRecorder) rank(rp *replayer, size int) *tlRank {
	if t == nil {
		return nil
	}
	max := t.MaxCalls
	if max <= 0 {
		max = DefaultTimelineCalls
	}
	bins := histBins
	for bins > minHistBins && bins*size > histTotalBins {
		bins /= 2
	}
	o := &tlRank{rp: rp, budget: max / size, fnIdx: map[*fnInfo]int{}, hist: hist{bins: make([][nKinds]int64, bins)}, sink: t.Sink}
	if t.Sink != nil {
		o.siteIdx = map[[2]uint32]int32{}
	}
	if o.budget < 1 {
		o.budget = 1
	}
	if t.ranks == nil {
		t.ranks = make([]*tlRank, size)
		if t.Sink != nil {
			t.Sink.Start(size)
		}
	}
	t.ranks[rp.rank] = o
	return o
}

// tlBox is one call kept in detail.
type tlBox struct {
	entry, exit, lost, bytes int64
	site, fn                 uint32 // trace ids, for the SRC id
	fidx, peer               int32
	thread                   uint32 // the calling thread (0: the MPI_Init thread)
}

type tlMsg struct {
	src  int32
	send int64
	box  int32 // the receiving call's box
}

// tlColl ties call box to instance key: the call joined it, or, done,
// completed its request (obsCall.ties). A box's first tie that is not
// done is the one Lane.Coll gives.
type tlColl struct {
	box  int32
	key  collKey
	done bool
}

// tlOpen is a call in progress when the process ended (openCall).
type tlOpen struct {
	entry, end int64
	fidx       int32
	thread     uint32
	atLeast    bool
}

// tlSpan is one execution of an interval kept in detail.
type tlSpan struct {
	enter, leave int64
	n            *rnode
}

// tlRank records one rank. Only that rank's replay touches it.
type tlRank struct {
	rp     *replayer
	budget int
	boxes  []tlBox
	msgs   []tlMsg
	colls  []tlColl
	spans  []tlSpan
	open   []openSpan
	unf    []tlOpen // kept whatever the budget: one per thread at most
	// crash is when and on which thread (-1: none that called MPI) the
	// process crashed; nil when it did not.
	crash *tlCrash
	// end is when and on which thread (-1: unknown) a process that
	// neither crashed nor finalized ended (tlRank.ended); nil otherwise.
	end *tlCrash

	calls, received  int64
	truncated        bool
	detailEnd        int64
	started          bool
	first, last      int64
	fnIdx            map[*fnInfo]int
	fnNames, fnKinds []string
	hist             hist
	threads          []uint32 // the calling threads seen, ascending

	sink      TimelineSink
	sc        TimelineCall
	siteIdx   map[[2]uint32]int32 // (call site, function) → the rank's site number
	sites     [][2]uint32
	laneFuncs []int // set by finish
	laneSites []int
}

// toSink hands c to the sink.
func (o *tlRank) toSink(c *obsCall) {
	sc := &o.sc
	sc.Entry, sc.Exit, sc.Lost, sc.Bytes, sc.Peer = c.entry, c.exit, c.lost, c.bytes, c.peer
	sc.Func, sc.Kind, sc.Thread = int32(o.fnIndex(c.fi, c.kind)), kindNames[c.kind], int32(c.thread)
	k := [2]uint32{c.site, c.fn}
	si, ok := o.siteIdx[k]
	if !ok {
		si = int32(len(o.sites))
		o.siteIdx[k] = si
		o.sites = append(o.sites, k)
	}
	sc.Site, sc.Coll = si, 0
	if c.inColl {
		sc.Coll = collHash(c.collKey)
	}
	sc.More, sc.Done = sc.More[:0], sc.Done[:0]
	for _, t := range c.ties {
		if t.done {
			sc.Done = append(sc.Done, collHash(t.key))
		} else {
			sc.More = append(sc.More, collHash(t.key))
		}
	}
	sc.Msgs = sc.Msgs[:0]
	for _, m := range c.msgs {
		sc.Msgs = append(sc.Msgs, TimelineMsg{Src: m.src, Send: m.send})
	}
	o.sink.Call(int(o.rp.rank), sc)
}

// sawThread adds th to the threads seen (a handful at most, so a sorted
// slice).
func (o *tlRank) sawThread(th uint32) {
	i, found := slices.BinarySearch(o.threads, th)
	if !found {
		o.threads = slices.Insert(o.threads, i, th)
	}
}

// collHash numbers a collective instance alike on every member, never 0.
func collHash(k collKey) uint64 {
	h := k.comm*0x9e3779b97f4a7c15 ^ (uint64(uint32(k.group))+0x632be59bd9b4e019)*0xbf58476d1ce4e5b9
	h ^= (k.seq + 0x94d049bb133111eb) * 0xd6e8feb86ca6b2c5
	h ^= h >> 31
	return h | 1
}

func (o *tlRank) extend(from, to int64) {
	if !o.started {
		o.started, o.first = true, from
	}
	o.first = min(o.first, from)
	o.last = max(o.last, to)
}

func (o *tlRank) record(c *obsCall) {
	o.extend(c.entry, c.exit)
	o.hist.add(c.entry, c.exit, c.lost, c.kind)
	o.calls++
	o.received += int64(len(c.msgs))
	o.sawThread(c.thread)
	if o.sink != nil {
		o.toSink(c)
	}
	if !o.truncated && len(o.boxes) >= o.budget {
		o.truncated, o.detailEnd = true, c.entry
	}
	if !o.truncated {
		b := tlBox{entry: c.entry, exit: c.exit, lost: c.lost, site: c.site, fn: c.fn, fidx: int32(o.fnIndex(c.fi, c.kind)),
			peer: c.peer, bytes: c.bytes, thread: c.thread}
		i := int32(len(o.boxes))
		o.boxes = append(o.boxes, b)
		for _, m := range c.msgs {
			m.box = i
			o.msgs = append(o.msgs, m)
		}
		if c.inColl {
			o.colls = append(o.colls, tlColl{box: i, key: c.collKey})
		}
		for _, t := range c.ties {
			o.colls = append(o.colls, tlColl{box: i, key: t.key, done: t.done})
		}
	}
}

// tlCrash is where a process crashed on the timeline, or, with end,
// where one that neither crashed nor finalized ended.
type tlCrash struct {
	at     int64
	thread int64 // -1: a thread that never called MPI (a crash), unknown (an end)
	exited bool  // an end: the process exited (else a signal found it in no MPI call)
}

// crashed records that the process crashed at global time at, on thread
// (-1: one that never called MPI).
func (o *tlRank) crashed(at, thread int64) {
	o.extend(at, at)
	if thread >= 0 {
		o.sawThread(uint32(thread))
	}
	o.crash = &tlCrash{at: at, thread: thread}
}

// ended records that the process, which neither crashed nor finalized,
// ended at global time at on thread (-1: unknown): it exited, or a signal
// found it in no MPI call.
func (o *tlRank) ended(at, thread int64, exited bool) {
	o.extend(at, at)
	if thread >= 0 {
		o.sawThread(uint32(thread))
	}
	o.end = &tlCrash{at: at, thread: thread, exited: exited}
}

// unfinished records a call in progress when the process ended.
func (o *tlRank) unfinished(c *openCall) {
	o.extend(c.entry, max(c.entry, c.end))
	o.sawThread(c.thread)
	o.unf = append(o.unf, tlOpen{entry: c.entry, end: c.end, fidx: int32(o.fnIndex(c.fi, c.kind)), thread: c.thread, atLeast: c.atLeast})
}

// interval keeps the executions of intervals that start within the
// detail, as many as the detail budget.
func (o *tlRank) interval(n *rnode, at int64, enter bool) {
	from, left := followSpan(&o.open, n, at, enter)
	if !left {
		return
	}
	o.extend(from, at)
	if o.sink != nil {
		o.sink.Span(int(o.rp.rank), &TimelineSpan{Enter: from, Leave: at, Interval: n.Key(), Level: n.Level()})
	}
	if (!o.truncated || from < o.detailEnd) && len(o.spans) < o.budget {
		o.spans = append(o.spans, tlSpan{enter: from, leave: at, n: n})
	}
}

// maxOpenSpans bounds the nesting of intervals followed (deeper ones are
// not drawn).
const maxOpenSpans = 64

func (o *tlRank) fnIndex(fi *fnInfo, kind int) int {
	if i, ok := o.fnIdx[fi]; ok {
		return i
	}
	i := len(o.fnNames)
	o.fnNames = append(o.fnNames, fi.name)
	o.fnKinds = append(o.fnKinds, kindNames[kind])
	o.fnIdx[fi] = i
	return i
}

// Kinds of call, in the order of hist's columns.
const (
	kP2P = iota
	kColl
	kWait
	kOther
	kLost
	nKinds
)

var kindNames = [...]string{report.KindP2P, report.KindColl, report.KindWait, report.KindOther}

func kindOf(fi *fnInfo) int {
	switch {
	case fi.op == opComplete:
		return kWait
	case fi.class == tracepb.Function_POINT_TO_POINT:
		return kP2P
	case fi.class == tracepb.Function_COLLECTIVE:
		return kColl
	}
	return kOther
}

// hist is one rank's time per kind in len(bins) bins (an even number) of
// width ns from origin; when a call ends past the last bin, pairs of bins
// merge and the width doubles, so it covers any run in fixed memory.
type hist struct {
	origin, width int64
	bins          [][nKinds]int64
}

// maxHistWidth keeps width·len(bins) within int64.
const maxHistWidth = math.MaxInt64 / (2 * histBins)

func (h *hist) add(entry, exit, lost int64, kind int) {
	if h.width == 0 {
		h.origin, h.width = entry, 1000
	}
	entry = max(entry, h.origin)
	exit = max(exit, entry)
	n := int64(len(h.bins))
	for exit-h.origin >= h.width*n && h.width < maxHistWidth {
		for i := range n / 2 {
			for k := range h.bins[i] {
				h.bins[i][k] = h.bins[2*i][k] + h.bins[2*i+1][k]
			}
		}
		clear(h.bins[n/2:])
		h.width *= 2
	}
	exit = min(exit, h.origin+h.width*n-1) // beyond ~290 years: damaged times
	entry = min(entry, exit)
	h.spread(entry, exit, kind)
	if lost > 0 {
		h.spread(entry, min(exit, entry+lost), kLost)
	}
}

// spread adds [from, to) to column k of the bins it overlaps.
func (h *hist) spread(from, to int64, k int) {
	for t := from; t < to; {
		i := (t - h.origin) / h.width
		end := min(to, h.origin+(i+1)*h.width)
		h.bins[i][k] += end - t
		t = end
	}
}

// resample spreads the histogram over overviewBins bins of [origin,
// origin+span), in proportion to how much of each source bin a target bin
// covers; the source bins are first clipped to [first, last), the rank's
// calls, which the first and last bins only partly cover.
func (h *hist) resample(origin, span, first, last int64) report.Overview {
	var acc [nKinds][overviewBins]float64
	if h.width > 0 && span > 0 {
		w := float64(span) / overviewBins
		for i := range h.bins {
			lo := max(h.origin+int64(i)*h.width, first)
			hi := min(h.origin+int64(i+1)*h.width, last)
			if hi <= lo || h.bins[i] == ([nKinds]int64{}) {
				continue
			}
			flo, fhi := float64(lo-origin), float64(hi-origin)
			for j := max(0, int(flo/w)); j < overviewBins && float64(j)*w < fhi; j++ {
				a, b := max(flo, float64(j)*w), min(fhi, float64(j+1)*w)
				if j == overviewBins-1 {
					b = fhi // the last bin takes the rounding
				}
				if b <= a {
					continue
				}
				f := (b - a) / (fhi - flo)
				for k, v := range h.bins[i] {
					acc[k][j] += float64(v) * f
				}
			}
		}
	}
	var out [nKinds][]int64
	for k := range out {
		out[k] = make([]int64, overviewBins)
		for j, v := range acc[k] {
			out[k][j] = int64(math.Round(v))
		}
	}
	return report.Overview{P2P: out[kP2P], Coll: out[kColl], Wait: out[kWait], Other: out[kOther], Lost: out[kLost]}
}
