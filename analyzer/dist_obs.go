package analyzer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/dtpa/dtpa/internal/partstream"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome"
)

// The observers of a distributed analysis (dtpa-mpi --html, --export
// chrome; docs/distributed.md): each process records its own ranks'
// calls as dtpa does (observe.go, export.go), and process 0 builds from
// the parts what dtpa builds from all of them.
//
//   - The timeline keeps a bounded detail per rank (TimelineRecorder):
//     each process sends its ranks' recordings to process 0 after its
//     results, as one part in chunks (package partstream), which process
//     0 spools and reads a rank at a time as it writes the timeline
//     (timeline.go).
//   - The Chrome export is as long as the traces: each process spools
//     its ranks' records and sends process 0 a summary of them (dmObs:
//     the first time, the threads, the number of flows); process 0 lays
//     out the file (the origin of the times, the tracks, where each
//     rank's flows are numbered from) and, once the report is built,
//     sends every process that layout and the report's call-site
//     numbers (dmChromeRun). Each process then writes its ranks' events
//     with dtpa's own code, and process 0 writes the file: the header,
//     then every rank's calls in rank order, its own and each process's
//     part received in chunks (package partstream), then every rank's
//     flows likewise, then the end. The bytes are dtpa's.
//
// A message's flow starts on the sending thread's track; with
// multi-threaded ranks that is known where the sender was replayed, so
// the map of their sending calls' threads (chromeRun.sendThreads) goes
// to process 0 with the summary and to every process with the layout.

// obsMagic starts a marshalled observer part; its last byte is the
// version of the layout.
const obsMagic = "dtpaO\x02"

// maxObsRecords bounds what one decoded list of a part may hold, against
// damaged input (the lengths are also checked against the bytes left).
const maxObsRecords = 1 << 30

// marshalObs encodes the summary of this process's ranks that the
// Chrome export needs (chromeRankSum, with the threads of the
// multi-threaded ranks' sending calls, sendThreads). The timeline's
// recordings go apart, in chunks (sendTimeline).
func marshalObs(opts Options, sendThreads map[int]map[int64]uint32) []byte {
	w := &resWriter{b: []byte(obsMagic)}
	var ex []*exRank
	if opts.Chrome != nil {
		for _, o := range opts.Chrome.ranks {
			if o != nil {
				ex = append(ex, o)
			}
		}
	}
	w.u(uint64(len(ex)))
	for _, o := range ex {
		w.u(uint64(o.rank))
		w.bool(o.started)
		w.i(o.first)
		w.u32s(o.threads)
		w.i(o.flows)
		w.sendThreads(sendThreads[int(o.rank)])
	}
	return w.b
}

func (w *resWriter) u32s(v []uint32) {
	w.u(uint64(len(v)))
	for _, x := range v {
		w.u(uint64(x))
	}
}

// sendThreads writes m in key order (equal maps, equal bytes).
func (w *resWriter) sendThreads(m map[int64]uint32) {
	keys := slices.Sorted(maps.Keys(m))
	w.u(uint64(len(keys)))
	prev := int64(0)
	for _, k := range keys {
		w.i(k - prev)
		w.u(uint64(m[k]))
		prev = k
	}
}

func (w *resWriter) tlRank(o *tlRank) {
	w.u(uint64(o.rp.rank))
	w.bool(o.started)
	w.i(o.first)
	w.i(o.last)
	w.i(o.calls)
	w.i(o.received)
	w.bool(o.truncated)
	w.i(o.detailEnd)
	w.u32s(o.threads)
	w.u(uint64(len(o.fnNames)))
	for i, name := range o.fnNames {
		w.str(name)
		w.str(o.fnKinds[i])
	}
	w.u(uint64(len(o.boxes)))
	prev := int64(0)
	for _, b := range o.boxes {
		w.i(b.entry - prev)
		w.i(b.exit - b.entry)
		w.i(b.lost)
		w.i(b.bytes)
		w.u(uint64(b.site))
		w.u(uint64(b.fn))
		w.u(uint64(b.fidx))
		w.i(int64(b.peer))
		w.u(uint64(b.thread))
		prev = b.entry
	}
	w.u(uint64(len(o.msgs)))
	for _, m := range o.msgs {
		w.u(uint64(m.src))
		w.i(m.send)
		w.u(uint64(m.box))
	}
	w.u(uint64(len(o.colls)))
	for _, c := range o.colls {
		w.u(uint64(c.box))
		w.u(c.key.comm)
		w.u(c.key.seq)
		w.i(int64(c.key.group))
		w.i(int64(c.key.split))
		w.u(uint64(c.key.n))
		w.bool(c.done)
	}
	w.u(uint64(len(o.spans)))
	for _, s := range o.spans {
		w.i(s.enter)
		w.i(s.leave - s.enter)
		w.u(uint64(len(s.n.Path)))
		for _, p := range s.n.Path {
			w.i(int64(p))
		}
	}
	h := &o.hist
	w.i(h.origin)
	w.i(h.width)
	w.u(uint64(len(h.bins)))
	for _, b := range h.bins {
		for _, v := range b {
			w.i(v)
		}
	}
	w.u(uint64(len(o.unf)))
	for _, c := range o.unf {
		w.i(c.entry)
		w.i(c.end)
		w.u(uint64(c.fidx))
		w.u(uint64(c.thread))
		w.bool(c.atLeast)
	}
	w.bool(o.crash != nil)
	if c := o.crash; c != nil {
		w.i(c.at)
		w.i(c.thread)
	}
	w.bool(o.end != nil)
	if e := o.end; e != nil {
		w.i(e.at)
		w.i(e.thread)
		w.bool(e.exited)
	}
}

// obsPart is a decoded observer part.
type obsPart struct {
	sums        map[int]chromeRankSum
	sendThreads map[int]map[int64]uint32
}

// unmarshalObs decodes a part of a run of size ranks; bad bytes give an
// error.
func unmarshalObs(b []byte, size int) (*obsPart, error) {
	if len(b) < len(obsMagic) || string(b[:len(obsMagic)]) != obsMagic {
		return nil, errors.New("not an observer part of this version")
	}
	r := &resReader{b: b[len(obsMagic):]}
	p := &obsPart{sums: map[int]chromeRankSum{}, sendThreads: map[int]map[int64]uint32{}}
	n := r.count("export ranks")
	for i := 0; i < n && r.err == nil; i++ {
		rank := int(r.below(uint64(size), "rank"))
		s := chromeRankSum{present: true, started: r.bool(), first: r.i(), threads: r.u32s(), flows: r.i()}
		p.sums[rank] = s
		if st := r.sendThreads(); len(st) > 0 {
			p.sendThreads[rank] = st
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("bad observer part: %w", r.err)
	}
	return p, nil
}

func (r *resReader) u32s() []uint32 {
	n := r.count("threads")
	var out []uint32
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.u32("thread"))
	}
	return out
}

func (r *resReader) sendThreads() map[int64]uint32 {
	n := r.count("sending calls")
	if n == 0 {
		return nil
	}
	m := make(map[int64]uint32, n)
	prev := int64(0)
	for i := 0; i < n && r.err == nil; i++ {
		prev += r.i()
		m[prev] = r.u32("thread")
	}
	return m
}

func (r *resReader) tlRank(size, budget int, spans map[string]*rnode) *tlRank {
	o := &tlRank{rp: &replayer{rank: int32(r.below(uint64(size), "rank"))}}
	o.started, o.first, o.last = r.bool(), r.i(), r.i()
	o.calls, o.received = r.i(), r.i()
	o.truncated, o.detailEnd = r.bool(), r.i()
	o.threads = r.u32s()
	n := r.count("functions")
	for i := 0; i < n && r.err == nil; i++ {
		o.fnNames = append(o.fnNames, r.str("function"))
		o.fnKinds = append(o.fnKinds, r.str("kind"))
	}
	n = r.count("calls")
	if n > budget {
		r.fail("%d calls kept, more than the %d of the budget", n, budget)
	}
	prev := int64(0)
	for i := 0; i < n && r.err == nil; i++ {
		b := tlBox{entry: prev + r.i()}
		b.exit = b.entry + r.i()
		b.lost, b.bytes = r.i(), r.i()
		b.site, b.fn = r.u32("call site"), r.u32("function")
		b.fidx = int32(r.below(uint64(len(o.fnNames)), "function index"))
		b.peer = r.i32("peer")
		b.thread = r.u32("thread")
		o.boxes = append(o.boxes, b)
		prev = b.entry
	}
	n = r.count("messages")
	for i := 0; i < n && r.err == nil; i++ {
		m := tlMsg{src: int32(r.below(uint64(size), "sender")), send: r.i()}
		m.box = int32(r.below(uint64(len(o.boxes)), "call"))
		o.msgs = append(o.msgs, m)
	}
	n = r.count("collectives")
	for i := 0; i < n && r.err == nil; i++ {
		c := tlColl{box: int32(r.below(uint64(len(o.boxes)), "call"))}
		c.key.comm, c.key.seq = r.u(), r.u()
		c.key.group, c.key.split = r.i32("group"), r.i32("split")
		c.key.n = int64(r.u())
		c.done = r.bool()
		o.colls = append(o.colls, c)
	}
	n = r.count("interval executions")
	if n > budget {
		r.fail("%d interval executions kept, more than the %d of the budget", n, budget)
	}
	for i := 0; i < n && r.err == nil; i++ {
		s := tlSpan{enter: r.i()}
		s.leave = s.enter + r.i()
		path := make([]int, r.count("path"))
		for j := range path {
			path[j] = r.int("interval")
		}
		// Only the path of an execution's node is read (finish): one
		// node per interval, standing for the replay's.
		key := pathKey(path)
		if spans[key] == nil {
			spans[key] = &rnode{Path: path}
		}
		s.n = spans[key]
		o.spans = append(o.spans, s)
	}
	o.hist.origin, o.hist.width = r.i(), r.i()
	n = r.count("overview bins")
	if n > histBins {
		r.fail("%d overview bins", n)
	}
	o.hist.bins = make([][nKinds]int64, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		var b [nKinds]int64
		for k := range b {
			b[k] = r.i()
		}
		o.hist.bins = append(o.hist.bins, b)
	}
	n = r.count("unfinished calls")
	if n > maxUnfinished {
		r.fail("%d unfinished calls", n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		c := tlOpen{entry: r.i(), end: r.i()}
		c.fidx = int32(r.below(uint64(len(o.fnNames)), "function index"))
		c.thread = r.u32("thread")
		c.atLeast = r.bool()
		o.unf = append(o.unf, c)
	}
	if r.bool() {
		o.crash = &tlCrash{at: r.i(), thread: r.i()}
		if o.crash.thread < -1 || o.crash.thread > 1<<32-1 {
			r.fail("crash on thread %d", o.crash.thread)
		}
	}
	if r.bool() {
		o.end = &tlCrash{at: r.i(), thread: r.i(), exited: r.bool()}
		if o.end.thread < -1 || o.end.thread > 1<<32-1 {
			r.fail("end on thread %d", o.end.thread)
		}
	}
	return o
}

// marshalChromeRun encodes what a process needs of run to write its
// ranks' events (writeCalls, writeFlows): the layout and the report's
// call-site numbers and source positions. sums give each rank's flows.
func marshalChromeRun(run *chromeRun, sums []chromeRankSum) []byte {
	w := &resWriter{b: []byte{dmChromeRun}}
	w.u(uint64(run.size))
	w.i(run.origin)
	for r := range run.size {
		w.bool(run.present[r])
		if run.present[r] {
			w.u32s(run.threads[r])
			w.i(sums[r].flows)
			w.sendThreads(run.sendThreads[r])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(run.siteID)) {
		w.u(1)
		w.str(k)
		w.i(int64(run.siteID[k]))
	}
	w.u(0)
	for _, id := range slices.Sorted(maps.Keys(run.pos)) {
		w.u(1)
		w.i(int64(id))
		w.str(run.pos[id].File)
		w.i(int64(run.pos[id].Line))
	}
	w.u(0)
	for _, k := range slices.Sorted(maps.Keys(run.ivPos)) {
		w.u(1)
		w.str(k)
		w.str(run.ivPos[k].SourceFile)
		w.i(int64(run.ivPos[k].Line))
	}
	w.u(0)
	for _, k := range slices.SortedFunc(maps.Keys(run.unf), func(a, b [2]int) int { return cmp.Or(a[0]-b[0], a[1]-b[1]) }) {
		w.u(1)
		w.i(int64(k[0]))
		w.i(int64(k[1]))
		w.str(run.unf[k].File)
		w.i(int64(run.unf[k].Line))
	}
	w.u(0)
	for _, k := range slices.Sorted(maps.Keys(run.crash)) {
		w.u(1)
		w.i(int64(k))
		w.str(run.crash[k].signal)
		w.u(uint64(len(run.crash[k].lines)))
		for _, l := range run.crash[k].lines {
			w.str(l)
		}
	}
	w.u(0)
	for _, k := range slices.Sorted(maps.Keys(run.end)) {
		w.u(1)
		w.i(int64(k))
		w.str(run.end[k])
	}
	w.u(0)
	return w.b
}

// unmarshalChromeRun decodes what marshalChromeRun encoded (after the
// kind byte), for a run of size ranks, and returns with it the number
// of the first flow of each rank, less one.
func unmarshalChromeRun(b []byte, size int) (*chromeRun, []uint64, error) {
	r := &resReader{b: b}
	if n := r.u(); r.err == nil && n != uint64(size) {
		return nil, nil, fmt.Errorf("export layout of a run of %d ranks, not %d", n, size)
	}
	run := &chromeRun{size: size, origin: r.i(), threads: make([][]uint32, size), present: make([]bool, size),
		sendThreads: make([]map[int64]uint32, size), siteID: map[string]int{}, pos: map[int]report.Frame{},
		ivPos: map[string]report.Interval{}, unf: map[[2]int]report.Frame{}, crash: map[int]crashText{}, end: map[int]string{}}
	base := make([]uint64, size)
	var flows uint64
	for k := range size {
		base[k] = flows
		if run.present[k] = r.bool(); run.present[k] {
			run.threads[k] = r.u32s()
			n := r.i()
			if n < 0 || n > maxObsRecords {
				r.fail("rank %d: %d flows", k, n)
			}
			flows += uint64(n)
			run.sendThreads[k] = r.sendThreads()
		}
	}
	for r.bool() && r.err == nil {
		k := r.str("call site")
		run.siteID[k] = r.int("SRC id")
	}
	for r.bool() && r.err == nil {
		id := r.int("SRC id")
		run.pos[id] = report.Frame{File: r.str("file"), Line: r.int("line")}
	}
	for r.bool() && r.err == nil {
		k := r.str("interval")
		run.ivPos[k] = report.Interval{SourceFile: r.str("file"), Line: r.int("line")}
	}
	for r.bool() && r.err == nil {
		k := [2]int{r.int("rank"), r.int("unfinished call")}
		run.unf[k] = report.Frame{File: r.str("file"), Line: r.int("line")}
	}
	for r.bool() && r.err == nil {
		k := r.int("rank")
		c := crashText{signal: r.str("signal")}
		n := r.count("crash lines")
		for i := 0; i < n && r.err == nil; i++ {
			c.lines = append(c.lines, r.str("crash line"))
		}
		run.crash[k] = c
	}
	for r.bool() && r.err == nil {
		k := r.int("rank")
		run.end[k] = r.str("end")
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return nil, nil, fmt.Errorf("bad export layout: %w", r.err)
	}
	run.tids = threadTids(run.threads, run.present)
	return run, base, nil
}

// ownSendThreads is sendThreadsOf of each of this process's
// multi-threaded ranks.
func (x *ChromeExport) ownSendThreads() (map[int]map[int64]uint32, error) {
	out := map[int]map[int64]uint32{}
	for r := range x.ranks {
		st, err := x.sendThreadsOf(r)
		if err != nil {
			return nil, err
		}
		if len(st) > 0 {
			out[r] = st
		}
	}
	return out, nil
}

// chromeCounts is a part's trailer: what it wrote.
func chromeCounts(calls, spans, messages, unfinished int64) []byte {
	w := &resWriter{}
	w.i(calls)
	w.i(spans)
	w.i(messages)
	w.i(unfinished)
	return w.b
}

func (x *ChromeExport) addCounts(b []byte) error {
	r := &resReader{b: b}
	calls, spans, messages, unfinished := r.i(), r.i(), r.i(), r.i()
	if r.err != nil {
		return fmt.Errorf("bad export counts: %w", r.err)
	}
	x.Calls += calls
	x.Spans += spans
	x.Messages += messages
	x.Unfinished += unfinished
	return nil
}

// writeChromeDist is process 0's end of the distributed Chrome export,
// once the report rep is built: it sends every process the layout and
// writes the file from its own ranks and the parts of the others
// (sendChromeParts). sums and sendThreads are every rank's, from the
// processes' observer parts and its own; reps are its own replays.
func writeChromeDist(x *ChromeExport, tr Transport, rcv *partstream.Receiver, sums []chromeRankSum, sendThreads map[int]map[int64]uint32,
	own []int, reps []*replayer, siteID map[string]int, rep *report.Report, hosts []string, ends map[int]string) error {
	run := newChromeRun(sums, siteID, rep, hosts, ends)
	for r, st := range sendThreads {
		run.sendThreads[r] = st
	}
	msg := marshalChromeRun(run, sums)
	for p := 1; p < tr.Size(); p++ {
		if err := tr.Send(p, msg); err != nil {
			return err
		}
	}
	w := chrome.NewWriter(x.W)
	x.writeHeader(w, run)
	part := func(p int) error {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("writing the chrome export: %w", err)
		}
		trailer, err := rcv.Receive(p, func(b []byte) error {
			if _, err := x.W.Write(b); err != nil {
				return fmt.Errorf("writing the chrome export: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return x.addCounts(trailer)
	}
	for _, r := range own {
		if err := x.writeCalls(w, run, r, keysOf(reps, r), false); err != nil {
			return err
		}
	}
	for p := 1; p < tr.Size(); p++ {
		if err := part(p); err != nil {
			return err
		}
	}
	var id uint64
	for _, r := range own {
		if err := x.writeFlows(w, run, r, &id); err != nil {
			return err
		}
	}
	for p := 1; p < tr.Size(); p++ {
		if err := part(p); err != nil {
			return err
		}
	}
	if err := w.Close(run.other); err != nil {
		return fmt.Errorf("writing the chrome export: %w", err)
	}
	return nil
}

// sendChromeParts is the end of the distributed Chrome export of a
// process other than 0: once process 0 sends the layout, it writes its
// ranks' (own) calls, then their flows, as two parts sent to process 0
// (partstream). An error of its own goes to process 0, which reports
// it; one of process 0 ends it without error.
func sendChromeParts(x *ChromeExport, s *partstream.Sender, size int, own []int, reps []*replayer) error {
	var run *chromeRun
	var base []uint64
	for run == nil {
		_, msg, err := s.Recv(true)
		if errors.Is(err, partstream.ErrStopped) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(msg) > 0 && msg[0] == dmChromeRun {
			if run, base, err = unmarshalChromeRun(msg[1:], size); err != nil {
				return failPart(s, err)
			}
		}
	}
	calls, spans, unf := x.Calls, x.Spans, x.Unfinished
	w := chrome.NewPartWriter(s)
	for _, r := range own {
		if err := x.writeCalls(w, run, r, keysOf(reps, r), false); err != nil {
			return failPart(s, err)
		}
	}
	if err := endPart(s, w, chromeCounts(x.Calls-calls, x.Spans-spans, 0, x.Unfinished-unf)); err != nil {
		return err
	}
	msgs := x.Messages
	w = chrome.NewPartWriter(s)
	var id uint64
	if len(own) > 0 {
		id = base[own[0]]
	}
	for _, r := range own {
		if err := x.writeFlows(w, run, r, &id); err != nil {
			return failPart(s, err)
		}
	}
	return endPart(s, w, chromeCounts(0, 0, x.Messages-msgs, 0))
}

// endPart flushes w's events into the part and ends it; process 0's
// stop is no error.
func endPart(s *partstream.Sender, w *chrome.Writer, trailer []byte) error {
	err := w.Flush()
	if err == nil {
		err = s.End(trailer)
	}
	if errors.Is(err, partstream.ErrStopped) {
		return nil
	}
	return err
}

// failPart hands err to process 0 as the part's failure.
func failPart(s *partstream.Sender, err error) error {
	if errors.Is(err, partstream.ErrStopped) {
		return nil
	}
	return s.Fail(err)
}

// ownRanks are the ranks of a run of size ranks that process me of n
// replays, ascending.
func ownRanks(size, n, me int) []int {
	var out []int
	for r := me * size / n; r < (me+1)*size/n; r++ {
		out = append(out, r)
	}
	return out
}

// agree makes every process return the same error, the first of their
// errs (process 0's, else the lowest process's), nil when none has one:
// for what may fail in some processes only before the replay, which
// they must begin together or not at all. The transport it returns is
// tr with the messages that came before process 0's answer (a process
// answered earlier may have begun the replay) to be received first.
func agree(tr Transport, err error) (Transport, error) {
	st := &stashed{Transport: tr}
	if tr.Rank() != 0 {
		msg := []byte{dmStart}
		if err != nil {
			msg = append(msg, err.Error()...)
		}
		if e := tr.Send(0, msg); e != nil {
			return st, &DistError{e}
		}
		for {
			from, msg, e := tr.Recv(true)
			if e != nil {
				return st, &DistError{e}
			}
			if from == 0 && len(msg) > 0 && msg[0] == dmStart {
				if len(msg) == 1 {
					return st, nil
				}
				return st, errors.New(string(msg[1:]))
			}
			st.q = append(st.q, stashedMsg{from, append([]byte(nil), msg...)})
		}
	}
	errs := make([]string, tr.Size())
	got := make([]bool, tr.Size())
	for n := 1; n < tr.Size(); {
		from, msg, e := tr.Recv(true)
		if e != nil {
			return st, &DistError{e}
		}
		if from > 0 && from < len(got) && !got[from] && len(msg) > 0 && msg[0] == dmStart {
			got[from], errs[from] = true, string(msg[1:])
			n++
		}
	}
	out := []byte{dmStart}
	if err != nil {
		out = append(out, err.Error()...)
	} else {
		for _, e := range errs {
			if e != "" {
				out = append(out, e...)
				err = errors.New(e)
				break
			}
		}
	}
	for p := 1; p < tr.Size(); p++ {
		if e := tr.Send(p, out); e != nil {
			return st, &DistError{e}
		}
	}
	return st, err
}

// stashed is a Transport whose Recv returns the messages q first.
type stashed struct {
	Transport
	q []stashedMsg
}

type stashedMsg struct {
	from int
	b    []byte
}

func (s *stashed) Recv(wait bool) (int, []byte, error) {
	if len(s.q) > 0 {
		m := s.q[0]
		s.q = s.q[1:]
		return m.from, m.b, nil
	}
	return s.Transport.Recv(wait)
}
