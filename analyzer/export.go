package analyzer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome"
)

// ChromeExport writes the run as Chrome trace-event JSON (package chrome)
// when set in Options.Chrome: one process per rank, named with the rank
// and its host; the rank's MPI calls as complete events on its first
// thread, with the call site (SRC id, file and line), bytes, peer and the
// time lost to a late partner in their args; each message received as a
// flow from its send to the call that received it; and the intervals'
// executions as complete events on a second thread.
//
// It observes the replay as the timeline recorder does (observe.go) and
// streams: while the ranks replay, on several goroutines, each appends
// compact binary records to a buffer of its own, which goes, when full, to
// one temporary spool file shared by all ranks; once the replay is over
// (call sites numbered, the report symbolized) the spool is read back
// rank by rank and written out as JSON. Memory is a buffer per rank,
// whatever the length of the traces (but for the sending calls of threads
// other than the main one: see finish); the spool is removed when Analyze
// returns.
//
// MPI_Init, MPI_Finalize and MPI_Pcontrol are not among the calls (the
// first two delimit the program, MPI_Pcontrol shows as the intervals), nor
// are calls before MPI_Init or after MPI_Finalize: the calls are those the
// analysis replays. A multi-threaded rank has a track of calls per thread
// that called MPI ("MPI calls": the thread that called MPI_Init; "MPI
// calls, thread n": the others, n as the trace numbers them), so that
// concurrent calls never overlap on one track; a message's flow runs from
// the sending thread's call to the receiving thread's.
type ChromeExport struct {
	W       io.Writer // where the JSON goes, once the replay is over
	TempDir string    // directory of the spool file; "" = os.TempDir()

	// Counts of what was written, once Analyze returned, and the size
	// the spool reached.
	Calls, Messages, Spans int64
	SpoolBytes             int64

	sp    *spool
	ranks []*exRank
}

// Perfetto and chrome://tracing need both ends of a flow to carry the
// same category, name and id; Chrome DevTools also binds a flow to a
// slice only of the same category.
const (
	chromeCat  = "mpi"
	chromeFlow = "message"
)

// start creates the spool before the replay.
func (x *ChromeExport) start(size int) error {
	if x == nil {
		return nil
	}
	if x.W == nil {
		return errors.New("chrome export: no output")
	}
	f, err := os.CreateTemp(x.TempDir, "dtpa-export-*.spool")
	if err != nil {
		return fmt.Errorf("chrome export: %w", err)
	}
	// Unlinked files cannot be left behind; where that fails (not on
	// Linux) cleanup removes it.
	name := f.Name()
	if os.Remove(name) == nil {
		name = ""
	}
	// A buffer per rank: 64 KiB, less with many ranks so that all of them
	// hold about 64 MiB, but never less than 4 KiB.
	chunk := 64 << 10
	for chunk > 4<<10 && chunk*size > 64<<20 {
		chunk /= 2
	}
	x.sp = &spool{f: f, name: name, chunk: chunk, chunks: make([][]spoolChunk, size)}
	x.ranks = make([]*exRank, size)
	return nil
}

// cleanup removes the spool.
func (x *ChromeExport) cleanup() {
	if x == nil || x.sp == nil {
		return
	}
	x.sp.f.Close()
	if x.sp.name != "" {
		os.Remove(x.sp.name)
	}
	x.sp = nil
}

// rank sets up the export of one rank (nil when x is nil).
func (x *ChromeExport) rank(rp *replayer) *exRank {
	if x == nil {
		return nil
	}
	o := &exRank{sp: x.sp, rank: rp.rank, fnIdx: map[*fnInfo]int{}, buf: make([]byte, 0, x.sp.chunk)}
	x.ranks[rp.rank] = o
	return o
}

// spool is the temporary file all ranks append their records to, in
// chunks; chunks[r] lists rank r's in order.
type spool struct {
	mu     sync.Mutex
	f      *os.File
	name   string // to remove at the end; "" once unlinked
	chunk  int
	off    int64
	chunks [][]spoolChunk
	err    error
}

type spoolChunk struct {
	off int64
	n   int
}

func (s *spool) put(rank int32, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil || len(b) == 0 {
		return
	}
	if _, err := s.f.WriteAt(b, s.off); err != nil {
		s.err = fmt.Errorf("chrome export: writing the spool: %w", err)
		return
	}
	s.chunks[rank] = append(s.chunks[rank], spoolChunk{s.off, len(b)})
	s.off += int64(len(b))
}

// Records of the spool: a kind byte, then varints.
const (
	recCall     = 1 // Δentry from the previous call, dur, lost, bytes, peer, fn, site, trace fn, calls, thread
	recMsg      = 2 // src, send entry, entry of the receiving call
	recInterval = 3 // enter, leave, level, path…
	maxRecord   = 1 + 16*binary.MaxVarintLen64
)

// exRank spools one rank. Only that rank's replay touches it until the
// export is written.
type exRank struct {
	sp          *spool
	rank        int32
	buf         []byte
	prev        int64 // entry of the previous call record
	started     bool
	first, last int64
	fnIdx       map[*fnInfo]int
	fns         []*fnInfo
	open        []openSpan
	threads     []uint32 // the calling threads seen, ascending
}

func (o *exRank) extend(from, to int64) {
	if !o.started {
		o.started, o.first = true, from
	}
	o.first = min(o.first, from)
	o.last = max(o.last, to)
}

func (o *exRank) flush() {
	o.sp.put(o.rank, o.buf)
	o.buf = o.buf[:0]
}

func (o *exRank) room() {
	if len(o.buf)+maxRecord > cap(o.buf) {
		o.flush()
	}
}

func (o *exRank) record(c *obsCall) {
	o.extend(c.entry, c.exit)
	if i, found := slices.BinarySearch(o.threads, c.thread); !found {
		o.threads = slices.Insert(o.threads, i, c.thread)
	}
	fi, ok := o.fnIdx[c.fi]
	if !ok {
		fi = len(o.fns)
		o.fns = append(o.fns, c.fi)
		o.fnIdx[c.fi] = fi
	}
	o.room()
	b := append(o.buf, recCall)
	b = binary.AppendVarint(b, c.entry-o.prev)
	b = binary.AppendUvarint(b, uint64(c.exit-c.entry))
	b = binary.AppendUvarint(b, uint64(max(0, c.lost)))
	b = binary.AppendUvarint(b, uint64(max(0, c.bytes)))
	b = binary.AppendVarint(b, int64(c.peer))
	b = binary.AppendUvarint(b, uint64(fi))
	b = binary.AppendUvarint(b, uint64(c.site))
	b = binary.AppendUvarint(b, uint64(c.fn))
	b = binary.AppendUvarint(b, uint64(c.calls))
	b = binary.AppendUvarint(b, uint64(c.thread))
	o.prev = c.entry
	o.buf = b
	for _, m := range c.msgs {
		o.room()
		b := append(o.buf, recMsg)
		b = binary.AppendUvarint(b, uint64(m.src))
		b = binary.AppendVarint(b, m.send)
		b = binary.AppendVarint(b, c.entry)
		o.buf = b
	}
}

func (o *exRank) interval(n *rnode, at int64, enter bool) {
	from, left := followSpan(&o.open, n, at, enter)
	if !left || len(n.Path) > 8 {
		return // deeper than any record holds: not drawn
	}
	o.extend(from, at)
	o.room()
	b := append(o.buf, recInterval)
	b = binary.AppendVarint(b, from)
	b = binary.AppendVarint(b, at)
	b = binary.AppendUvarint(b, uint64(len(n.Path)))
	for _, p := range n.Path {
		b = binary.AppendUvarint(b, uint64(p))
	}
	o.buf = b
}

// exportRecord is one decoded spool record.
type exportRecord struct {
	kind                    byte
	entry, dur, lost, bytes int64
	peer                    int32
	fn                      int
	site, traceFn           uint32
	calls                   int64
	thread                  uint32
	src                     int32
	send                    int64
	enter, leave            int64
	path                    [8]int
	level                   int
}

// spoolReader reads one rank's records back.
type spoolReader struct {
	sp     *spool
	chunks []spoolChunk
	buf    []byte
	pos    int
	prev   int64
	rank   int
	err    error // of the last scan
}

// scan reads the next record into rec, as bufio.Scanner scans: false at
// the end of the rank's records or on an error, which err then holds.
func (r *spoolReader) scan(rec *exportRecord) bool {
	ok, err := r.next(rec)
	r.err = err
	return ok
}

func (r *spoolReader) next(rec *exportRecord) (bool, error) {
	for r.pos >= len(r.buf) {
		if len(r.chunks) == 0 {
			return false, nil
		}
		c := r.chunks[0]
		r.chunks = r.chunks[1:]
		if cap(r.buf) < c.n {
			r.buf = make([]byte, c.n)
		}
		r.buf = r.buf[:c.n]
		if _, err := r.sp.f.ReadAt(r.buf, c.off); err != nil {
			return false, fmt.Errorf("chrome export: reading the spool: %w", err)
		}
		r.pos = 0
	}
	b := r.buf[r.pos:]
	bad := false
	i := 1
	uv := func() uint64 {
		v, n := binary.Uvarint(b[i:])
		if n <= 0 {
			bad = true
			return 0
		}
		i += n
		return v
	}
	sv := func() int64 { // zig-zag, as binary.Varint decodes it
		ux := uv()
		x := int64(ux >> 1)
		if ux&1 != 0 {
			x = ^x
		}
		return x
	}
	rec.kind = b[0]
	switch rec.kind {
	case recCall:
		rec.entry = r.prev + sv()
		rec.dur, rec.lost, rec.bytes = int64(uv()), int64(uv()), int64(uv())
		rec.peer = int32(sv())
		rec.fn, rec.site, rec.traceFn = int(uv()), uint32(uv()), uint32(uv())
		rec.calls = int64(uv())
		rec.thread = uint32(uv())
		r.prev = rec.entry
	case recMsg:
		rec.src, rec.send, rec.entry = int32(uv()), sv(), sv()
	case recInterval:
		rec.enter, rec.leave = sv(), sv()
		rec.level = int(uv())
		for j := 0; j < rec.level && j < len(rec.path) && !bad; j++ {
			rec.path[j] = int(uv())
		}
		bad = bad || rec.level > len(rec.path)
	default:
		bad = true
	}
	if bad {
		// The spool is ours: a bad record is a bug, not bad input.
		return false, fmt.Errorf("chrome export: spool of rank %d damaged", r.rank)
	}
	r.pos += i
	return true, nil
}

// Thread ids: the calls of rank r's main thread on thread r+1 of process
// r+1 (pid 0 and tid 0 mean the kernel's idle task to Perfetto), its
// intervals on thread size+r+1, the calls of its other threads on ids
// from 2·size+1 on, numbered across ranks by threadTids (thread ids are
// global in the format).
func callsTid(r int) int         { return r + 1 }
func spansTid(r, size int) int   { return size + r + 1 }
func pathKey(p []int) string     { return intervals.PathKey(p) }
func spanName(path []int) string { return "interval " + pathKey(path) }

// finish writes the JSON once the replay is over and the report built:
// siteID numbers call sites as the report's SRC ids, rep gives their
// source positions and the intervals', hosts the ranks' host names.
func (x *ChromeExport) finish(reps []*replayer, siteID map[string]int, rep *report.Report, hosts []string) error {
	for _, o := range x.ranks {
		if o != nil {
			o.flush()
		}
	}
	if x.sp.err != nil {
		return x.sp.err
	}
	x.SpoolBytes = x.sp.off
	size := len(x.ranks)
	var origin int64
	first := true
	for _, o := range x.ranks {
		if o != nil && o.started && (first || o.first < origin) {
			origin, first = o.first, false
		}
	}

	// Source positions: SRC id → file and line of its innermost frame;
	// interval path → where it is entered.
	pos := map[int]report.Frame{}
	ivPos := map[string]report.Interval{}
	for _, iv := range rep.Intervals {
		ivPos[pathKey(iv.Path)] = iv
		for _, s := range iv.SRC {
			if _, ok := pos[s.ID]; !ok && len(s.Stack) > 0 {
				pos[s.ID] = s.Stack[0]
			}
		}
	}

	w := chrome.NewWriter(x.W)
	tids := threadTids(x.ranks)
	for r, o := range x.ranks {
		if o == nil {
			continue
		}
		name := "rank " + strconv.Itoa(r)
		if hosts[r] != "" {
			name += " (" + hosts[r] + ")"
		}
		w.ProcessName(r+1, name, r)
		w.ThreadName(r+1, callsTid(r), "MPI calls", 0)
		n := 1
		for _, th := range o.threads {
			if th != 0 {
				w.ThreadName(r+1, tids[r][th], "MPI calls, thread "+strconv.FormatUint(uint64(th), 10), n)
				n++
			}
		}
		w.ThreadName(r+1, spansTid(r, size), "intervals", n)
	}
	// tidOf is the track of rank r's thread th.
	tidOf := func(r int, th uint32) int {
		if t, ok := tids[r][th]; ok {
			return t
		}
		return callsTid(r)
	}
	// sendThreads maps, for each rank with threads besides the main one,
	// the entry of each call of those threads that may send (neither a
	// wait nor a collective) to its thread, so that a message's flow
	// starts on the sending thread's track (a send is known to its
	// receiver by its entry, as in the HTML timeline). Its size is the
	// one part of the export's memory that grows with the traces, and
	// only with multi-threaded ranks' calls.
	sendThreads := make([]map[int64]uint32, size)
	var rec exportRecord
	var args []byte
	// Pass 1: calls and intervals, rank by rank.
	for r, o := range x.ranks {
		if o == nil {
			continue
		}
		keys := newSiteKeyer(reps[r].defs)
		siteArgs := map[[2]uint32][]byte{}
		rd := &spoolReader{sp: x.sp, chunks: x.sp.chunks[r], rank: r}
		for rd.scan(&rec) {
			switch rec.kind {
			case recCall:
				fi := o.fns[rec.fn]
				sk := [2]uint32{rec.site, rec.traceFn}
				sa, ok := siteArgs[sk]
				if !ok {
					sa = x.siteArgs(reps[r], keys, sk, siteID, pos)
					if len(siteArgs) < 1<<16 {
						siteArgs[sk] = sa
					}
				}
				args = append(args[:0], `"kind":"`...)
				args = append(args, kindNames[kindOf(fi)]...) // no character to escape
				args = append(args, '"')
				args = append(args, sa...)
				if rec.bytes > 0 {
					args = append(args, `,"bytes":`...)
					args = strconv.AppendInt(args, rec.bytes, 10)
				}
				if rec.peer >= 0 {
					args = append(args, `,"peer":`...)
					args = strconv.AppendInt(args, int64(rec.peer), 10)
				}
				if rec.lost > 0 {
					args = append(args, `,"lost_us":`...)
					args = chrome.AppendMicros(args, rec.lost)
				}
				if rec.calls > 1 {
					args = append(args, `,"calls":`...)
					args = strconv.AppendInt(args, rec.calls, 10)
				}
				w.Complete(r+1, tidOf(r, rec.thread), chromeCat, fi.name, rec.entry-origin, rec.dur, args)
				x.Calls++
				if k := kindOf(fi); rec.thread != 0 && k != kWait && k != kColl {
					if sendThreads[r] == nil {
						sendThreads[r] = map[int64]uint32{}
					}
					sendThreads[r][rec.entry] = rec.thread
				}
			case recInterval:
				path := rec.path[:rec.level]
				key := pathKey(path)
				args = append(args[:0], `"interval":`...)
				args = chrome.AppendString(args, key)
				if iv, ok := ivPos[key]; ok && iv.SourceFile != "" {
					args = append(args, `,"file":`...)
					args = chrome.AppendString(args, iv.SourceFile)
					args = append(args, `,"line":`...)
					args = strconv.AppendInt(args, int64(iv.Line), 10)
				}
				w.Complete(r+1, spansTid(r, size), "interval", spanName(path), rec.enter-origin, rec.leave-rec.enter, args)
				x.Spans++
			}
		}
		if rd.err != nil {
			return rd.err
		}
	}
	// Pass 2: the messages, after every slice, so that a viewer reading
	// the file in order has the slice a flow binds to when it reads the
	// flow (Perfetto also sorts a slice before a flow event of the same
	// time).
	var id uint64
	for r := range x.ranks {
		if x.ranks[r] == nil {
			continue
		}
		rd := &spoolReader{sp: x.sp, chunks: x.sp.chunks[r], rank: r}
		var thread uint32 // of the call the messages that follow it belong to
		for rd.scan(&rec) {
			if rec.kind == recCall {
				thread = rec.thread
			}
			if rec.kind != recMsg || rec.src < 0 || int(rec.src) >= size {
				continue
			}
			id++
			s := int(rec.src)
			w.FlowStart(s+1, tidOf(s, sendThreads[s][rec.send]), chromeCat, chromeFlow, id, rec.send-origin)
			w.FlowEnd(r+1, tidOf(r, thread), chromeCat, chromeFlow, id, rec.entry-origin)
			x.Messages++
		}
		if rd.err != nil {
			return rd.err
		}
	}
	other := map[string]string{
		"application": rep.Task,
		"producer":    "dtpa",
		"origin_ns":   strconv.FormatInt(origin, 10),
		"clock":       "global clock after dtpa's clock alignment; ts 0 is the earliest call or interval entry",
	}
	if err := w.Close(other); err != nil {
		return fmt.Errorf("writing the chrome export: %w", err)
	}
	return nil
}

// threadTids numbers the tracks of the threads other than the main one
// of every rank, from 2·len(ranks)+1 on; the main thread's track is
// callsTid's.
func threadTids(ranks []*exRank) []map[uint32]int {
	tids := make([]map[uint32]int, len(ranks))
	next := 2*len(ranks) + 1
	for r, o := range ranks {
		if o == nil {
			continue
		}
		tids[r] = map[uint32]int{0: callsTid(r)}
		for _, th := range o.threads {
			if th != 0 {
				tids[r][th] = next
				next++
			}
		}
	}
	return tids
}

// siteArgs encodes a call site's args members: `,"src":3,"file":"a.c","line":58`.
func (x *ChromeExport) siteArgs(rp *replayer, keys *siteKeyer, sk [2]uint32, siteID map[string]int, pos map[int]report.Frame) []byte {
	if rp.defs == nil {
		return nil
	}
	id, ok := siteID[keys.key(sk[0], sk[1])]
	if !ok {
		return nil
	}
	b := append([]byte(`,"src":`), strconv.Itoa(id)...)
	if f, ok := pos[id]; ok && f.File != "" {
		b = append(b, `,"file":`...)
		b = chrome.AppendString(b, f.File)
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(f.Line), 10)
	}
	return b
}
