package analyzer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome"
	"github.com/dtpa/dtpa/traceformat"
)

// ChromeExport writes the run as Chrome trace-event JSON (package chrome)
// when set in Options.Chrome: one process per rank, named with the rank
// and its host; the rank's MPI calls as complete events on its first
// thread, with the call site (SRC id, file and line), bytes, peer and the
// time lost to a late partner in their args; each message received as a
// flow from its send to the call that received it; each collective
// instance's members tied by an id in their args (the call that joined
// it, and the one that completed a nonblocking or persistent collective's
// request), with a flow from such a start to its completion; and the
// intervals' executions as complete events on a second thread.
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
	// OpenErr, when set, is why W could not be opened: the analysis is
	// not made and returns it, from every process of a distributed one
	// (dtpa-mpi's process 0 opens the file, the others must learn that
	// it failed).
	OpenErr error

	// Counts of what was written, once Analyze returned, and the size
	// the spool reached.
	Calls, Messages, Spans int64
	// Unfinished counts the calls in progress when their processes ended
	// (Report.Unfinished) written as slices: not among Calls.
	Unfinished int64
	SpoolBytes int64

	sp    *spool
	ranks []*exRank
}

// Perfetto and chrome://tracing need both ends of a flow to carry the
// same category, name and id; Chrome DevTools also binds a flow to a
// slice only of the same category.
const (
	chromeCat      = "mpi"
	chromeFlow     = "message"
	chromeCollFlow = "collective" // a nonblocking collective's start to its completion
)

// start creates the spool before the replay.
func (x *ChromeExport) start(size int) error {
	if x == nil {
		return nil
	}
	if x.OpenErr != nil {
		return x.OpenErr
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
	o := &exRank{sp: x.sp, rank: rp.rank, size: int32(len(x.ranks)), fnIdx: map[*fnInfo]int{}, buf: make([]byte, 0, x.sp.chunk)}
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
	recCall     = 1 // Δentry from the previous call, dur, lost, bytes, peer, fn, site, trace fn, calls, thread, inner gaps
	recMsg      = 2 // src, send entry, entry of the receiving call
	recInterval = 3 // enter, leave, level, path…
	// recTie: a tie of the next call record's call to a collective
	// instance (obsCall's): tie flags, then the instance's collHash (8
	// bytes). Before the call, so that the call's slice is written with
	// its ties in its args.
	recTie = 4
	// recOpen: a call in progress when the process ended (openCall):
	// entry, end (-1 unknown; read into leave), fn, thread, its place in
	// the footer, 1 when the end is only a bound (openCall.atLeast).
	recOpen = 5
	// recCrash: the moment the process crashed: time, thread + 1 (0: a
	// thread that never called MPI).
	recCrash = 6
	// recEnd: the moment a process that neither crashed nor finalized
	// ended (rankObs.ended): time, thread + 1 (0: unknown), 1 when it
	// exited (else a signal found it in no MPI call).
	recEnd    = 7
	maxRecord = 1 + 16*binary.MaxVarintLen64
)

// Tie flags of a recTie.
const (
	tieDone  = 1 << iota // the call completed the instance's request
	tieStart             // the call joined it by a nonblocking or persistent start
)

// exRank spools one rank. Only that rank's replay touches it until the
// export is written.
type exRank struct {
	sp          *spool
	rank, size  int32
	buf         []byte
	prev        int64 // entry of the previous call record
	started     bool
	first, last int64
	fnIdx       map[*fnInfo]int
	fns         []*fnInfo
	open        []openSpan
	threads     []uint32 // the calling threads seen, ascending
	// flows: the flows written: messages received from a rank of the run,
	// and nonblocking collectives' starts linked to their completions.
	flows int64
	// pending: the nonblocking or persistent collective instances this
	// rank started (by collHash) and has not completed yet.
	pending map[uint64]struct{}
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

// sawCall notes thread th calling function f and gives f's number in
// the rank's spool.
func (o *exRank) sawCall(th uint32, f *fnInfo) int {
	if i, found := slices.BinarySearch(o.threads, th); !found {
		o.threads = slices.Insert(o.threads, i, th)
	}
	fi, ok := o.fnIdx[f]
	if !ok {
		fi = len(o.fns)
		o.fns = append(o.fns, f)
		o.fnIdx[f] = fi
	}
	return fi
}

func (o *exRank) record(c *obsCall) {
	o.extend(c.entry, c.exit)
	fi := o.sawCall(c.thread, c.fi)
	if c.inColl {
		fl := byte(0)
		if c.collReq {
			fl = tieStart
		}
		o.tie(c.collKey, fl)
	}
	for _, t := range c.ties {
		if t.done {
			o.tie(t.key, tieDone)
		} else {
			o.tie(t.key, tieStart)
		}
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
	b = binary.AppendUvarint(b, uint64(c.inner))
	o.prev = c.entry
	o.buf = b
	for _, m := range c.msgs {
		if m.src >= 0 && m.src < o.size {
			o.flows++
		}
		o.room()
		b := append(o.buf, recMsg)
		b = binary.AppendUvarint(b, uint64(m.src))
		b = binary.AppendVarint(b, m.send)
		b = binary.AppendVarint(b, c.entry)
		o.buf = b
	}
}

// tie spools a tie of the call being recorded to instance k, and counts
// the flow of a start to its completion (writeFlows writes it).
func (o *exRank) tie(k collKey, fl byte) {
	h := collHash(k)
	switch fl {
	case tieStart:
		if o.pending == nil {
			o.pending = map[uint64]struct{}{}
		}
		o.pending[h] = struct{}{}
	case tieDone:
		if _, ok := o.pending[h]; ok {
			delete(o.pending, h)
			o.flows++
		}
	}
	o.room()
	b := append(o.buf, recTie, fl)
	o.buf = binary.LittleEndian.AppendUint64(b, h)
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

// unfinished spools a call in progress when the process ended.
func (o *exRank) unfinished(c *openCall) {
	o.extend(c.entry, max(c.entry, c.end))
	fi := o.sawCall(c.thread, c.fi)
	o.room()
	b := append(o.buf, recOpen)
	b = binary.AppendVarint(b, c.entry)
	b = binary.AppendVarint(b, c.end)
	b = binary.AppendUvarint(b, uint64(fi))
	b = binary.AppendUvarint(b, uint64(c.thread))
	b = binary.AppendUvarint(b, uint64(c.idx))
	if c.atLeast {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	o.buf = b
}

// crashed spools the moment the process crashed, on thread (-1: one
// that never called MPI).
func (o *exRank) crashed(at, thread int64) {
	o.extend(at, at)
	o.room()
	b := append(o.buf, recCrash)
	b = binary.AppendVarint(b, at)
	o.buf = binary.AppendUvarint(b, uint64(thread+1))
}

// ended spools the moment a process that neither crashed nor finalized
// ended, on thread (-1: unknown); exited: it exited, else a signal found
// it in no MPI call.
func (o *exRank) ended(at, thread int64, exited bool) {
	o.extend(at, at)
	o.room()
	b := append(o.buf, recEnd)
	b = binary.AppendVarint(b, at)
	b = binary.AppendUvarint(b, uint64(thread+1))
	if exited {
		b = append(b, 1)
	} else {
		b = append(b, 0)
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
	calls, inner            int64
	thread                  uint32
	src                     int32
	send                    int64
	enter, leave            int64
	path                    [8]int
	level                   int
	tie                     byte   // recTie's flags
	coll                    uint64 // recTie's instance
	idx                     int    // recOpen's place in the footer
	atLeast                 bool   // recOpen's end is a bound
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
		rec.inner = int64(uv())
		r.prev = rec.entry
	case recMsg:
		rec.src, rec.send, rec.entry = int32(uv()), sv(), sv()
	case recTie:
		if len(b) < 10 {
			bad = true
			break
		}
		rec.tie, rec.coll = b[1], binary.LittleEndian.Uint64(b[2:])
		i = 10
	case recOpen:
		rec.entry, rec.leave = sv(), sv()
		rec.fn, rec.thread, rec.idx = int(uv()), uint32(uv()), int(uv())
		rec.atLeast = uv() == 1
	case recCrash:
		rec.entry = sv()
		rec.calls = int64(uv()) // the thread + 1
	case recEnd:
		rec.entry = sv()
		rec.calls = int64(uv()) // the thread + 1
		rec.atLeast = uv() == 1 // exited
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

// chromeRun is what writing any rank's part of the export needs to know
// of the whole run: computed by the process that writes the file from
// every rank's exRank (dtpa) or from their summaries (dtpa-mpi,
// dist_obs.go), and, distributed, handed to every process.
type chromeRun struct {
	size    int
	origin  int64
	threads [][]uint32 // per rank, as exRank.threads; nil for a rank not exported
	present []bool     // the rank is exported (it has an exRank)
	tids    []map[uint32]int
	hosts   []string
	// siteID numbers call sites as the report's SRC ids; pos are their
	// source positions (SRC id → its innermost frame), ivPos the
	// intervals' (path key → where it is entered).
	siteID map[string]int
	// src, when set (the process that built the report), numbers a
	// rank's call sites as siteID does without their keys (srcIDsOf).
	src   func(r int) func(site, fn uint32) int
	pos   map[int]report.Frame
	ivPos map[string]report.Interval
	// crash says where each crashed rank crashed (Report.Crashes), by
	// rank.
	crash map[int]crashText
	// end says how each rank that neither crashed nor finalized ended
	// (endLines), by rank.
	end map[int]string
	// unf are the source positions of the calls in progress when the
	// processes ended, by rank and place in its footer (Report.Unfinished).
	unf map[[2]int]report.Frame
	// sendThreads maps, for each rank with threads besides the main one,
	// the entry of each call of those threads that may send (neither a
	// wait nor a collective) to its thread, so that a message's flow
	// starts on the sending thread's track (a send is known to its
	// receiver by its entry, as in the HTML timeline). Its size is the
	// one part of the export's memory that grows with the traces, and
	// only with multi-threaded ranks' calls.
	sendThreads []map[int64]uint32
	other       map[string]string // the object's otherData
}

// chromeRankSum is what the layout of the export needs of one rank's
// exRank.
type chromeRankSum struct {
	present, started bool
	first            int64
	threads          []uint32
	flows            int64
}

// sums are the chromeRankSums of x's ranks.
func (x *ChromeExport) sums() []chromeRankSum {
	out := make([]chromeRankSum, len(x.ranks))
	for r, o := range x.ranks {
		if o != nil {
			out[r] = chromeRankSum{present: true, started: o.started, first: o.first, threads: o.threads, flows: o.flows}
		}
	}
	return out
}

// newChromeRun is the chromeRun of the ranks summed up by sums, once the
// report rep and its call-site numbers siteID are known.
func newChromeRun(sums []chromeRankSum, siteID map[string]int, rep *report.Report, hosts []string, ends map[int]string) *chromeRun {
	run := &chromeRun{size: len(sums), threads: make([][]uint32, len(sums)), present: make([]bool, len(sums)),
		hosts: hosts, siteID: siteID, sendThreads: make([]map[int64]uint32, len(sums))}
	first := true
	for r, o := range sums {
		if !o.present {
			continue
		}
		run.present[r], run.threads[r] = true, o.threads
		if o.started && (first || o.first < run.origin) {
			run.origin, first = o.first, false
		}
	}
	run.tids = threadTids(run.threads, run.present)

	// Source positions: SRC id → file and line of its innermost frame;
	// interval path → where it is entered.
	run.pos = map[int]report.Frame{}
	run.ivPos = map[string]report.Interval{}
	for _, iv := range rep.Intervals {
		run.ivPos[pathKey(iv.Path)] = iv
		for _, s := range iv.SRC {
			if _, ok := run.pos[s.ID]; !ok && len(s.Stack) > 0 {
				run.pos[s.ID] = s.Stack[0]
			}
		}
	}
	run.crash = map[int]crashText{}
	for i := range rep.Crashes {
		run.crash[rep.Crashes[i].Rank] = crashText{rep.Crashes[i].Signal, rep.Crashes[i].Lines()}
	}
	run.end = ends
	run.unf = map[[2]int]report.Frame{}
	k := map[int]int{}
	for _, u := range rep.Unfinished {
		if u.File != "" {
			run.unf[[2]int{u.Rank, k[u.Rank]}] = report.Frame{File: u.File, Line: u.Line}
		}
		k[u.Rank]++
	}
	run.other = map[string]string{
		"application": rep.Task,
		"producer":    "dtpa",
		"origin_ns":   strconv.FormatInt(run.origin, 10),
		"clock":       "global clock after dtpa's clock alignment; ts 0 is the earliest call or interval entry",
	}
	return run
}

// tidOf is the track of rank r's thread th.
func (run *chromeRun) tidOf(r int, th uint32) int {
	if t, ok := run.tids[r][th]; ok {
		return t
	}
	return callsTid(r)
}

// finish writes the JSON once the replay is over and the report built:
// siteID numbers call sites as the report's SRC ids, and src a rank's
// (srcIDsOf), rep gives their source positions and the intervals', hosts
// the ranks' host names.
func (x *ChromeExport) finish(reps []*replayer, siteID map[string]int, src func(r int) func(site, fn uint32) int, rep *report.Report, hosts []string, ends map[int]string) error {
	if err := x.flushSpool(); err != nil {
		return err
	}
	run := newChromeRun(x.sums(), siteID, rep, hosts, ends)
	run.src = src
	w := chrome.NewWriter(x.W)
	x.writeHeader(w, run)
	for r := range x.ranks {
		if err := x.writeCalls(w, run, r, keysOf(reps, r), true); err != nil {
			return err
		}
	}
	// The messages, after every slice, so that a viewer reading the file
	// in order has the slice a flow binds to when it reads the flow
	// (Perfetto also sorts a slice before a flow event of the same time).
	var id uint64
	for r := range x.ranks {
		if err := x.writeFlows(w, run, r, &id); err != nil {
			return err
		}
	}
	if err := w.Close(run.other); err != nil {
		return fmt.Errorf("writing the chrome export: %w", err)
	}
	return nil
}

// flushSpool hands the ranks' last records to the spool once the replay
// is over.
func (x *ChromeExport) flushSpool() error {
	for _, o := range x.ranks {
		if o != nil {
			o.flush()
		}
	}
	if x.sp.err != nil {
		return x.sp.err
	}
	x.SpoolBytes = x.sp.off
	return nil
}

// writeHeader names the processes and threads of every rank exported.
func (x *ChromeExport) writeHeader(w *chrome.Writer, run *chromeRun) {
	for r, ok := range run.present {
		if !ok {
			continue
		}
		name := "rank " + strconv.Itoa(r)
		if run.hosts[r] != "" {
			name += " (" + run.hosts[r] + ")"
		}
		w.ProcessName(r+1, name, r)
		w.ThreadName(r+1, callsTid(r), "MPI calls", 0)
		n := 1
		for _, th := range run.threads[r] {
			if th != 0 {
				w.ThreadName(r+1, run.tids[r][th], "MPI calls, thread "+strconv.FormatUint(uint64(th), 10), n)
				n++
			}
		}
		w.ThreadName(r+1, spansTid(r, run.size), "intervals", n)
	}
}

// writeCalls writes rank r's calls and interval executions from its spool
// (nothing for a rank not exported here); keys is its siteKeyer (nil
// when its trace could not be opened), for the SRC ids run.src lacks. With sendThreads, it notes the
// entries of its other threads' calls that may send in run.sendThreads.
func (x *ChromeExport) writeCalls(w *chrome.Writer, run *chromeRun, r int, keys *siteKeyer, sendThreads bool) error {
	o := x.ranks[r]
	if o == nil {
		return nil
	}
	var srcOf func(site, fn uint32) int
	if run.src != nil {
		srcOf = run.src(r)
	}
	if srcOf == nil && keys != nil {
		srcOf = func(site, fn uint32) int { return run.siteID[keys.key(site, fn)] }
	}
	siteArgs := map[[2]uint32][]byte{}
	var rec exportRecord
	var args []byte
	var ties []exportRecord // of the next call
	rd := &spoolReader{sp: x.sp, chunks: x.sp.chunks[r], rank: r}
	for rd.scan(&rec) {
		switch rec.kind {
		case recTie:
			ties = append(ties, rec)
		case recCall:
			fi := o.fns[rec.fn]
			sk := [2]uint32{rec.site, rec.traceFn}
			sa, ok := siteArgs[sk]
			if !ok {
				sa = siteArgsOf(srcOf, sk, run.pos)
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
				if rec.inner > 0 {
					// The slice is the run's time inside MPI, ending at its
					// last call's exit; the run itself began earlier, with
					// the computation between its calls.
					args = append(args, `,"run_us":`...)
					args = chrome.AppendMicros(args, rec.dur+rec.inner)
				}
			}
			args = appendTies(args, `,"coll":"`, ties, false)
			args = appendTies(args, `,"completes":"`, ties, true)
			ties = ties[:0]
			w.Complete(r+1, run.tidOf(r, rec.thread), chromeCat, fi.name, rec.entry-run.origin, rec.dur, args)
			x.Calls++
			if sendThreads {
				noteSendThread(run.sendThreads, r, o, &rec)
			}
		case recOpen:
			x.writeOpen(w, run, r, o, &rec)
		case recCrash:
			x.writeCrash(w, run, r, &rec)
		case recEnd:
			x.writeEnd(w, run, r, &rec)
		case recInterval:
			path := rec.path[:rec.level]
			key := pathKey(path)
			args = append(args[:0], `"interval":`...)
			args = chrome.AppendString(args, key)
			if iv, ok := run.ivPos[key]; ok && iv.SourceFile != "" {
				args = append(args, `,"file":`...)
				args = chrome.AppendString(args, iv.SourceFile)
				args = append(args, `,"line":`...)
				args = strconv.AppendInt(args, int64(iv.Line), 10)
			}
			w.Complete(r+1, spansTid(r, run.size), "interval", spanName(path), rec.enter-run.origin, rec.leave-rec.enter, args)
			x.Spans++
		}
	}
	return rd.err
}

// writeOpen writes a call of rank r in progress when its process ended
// (rec, a recOpen): a slice to the process's end, or, where that end is
// unknown, a slice that begins and never ends, which Perfetto draws to the
// end of the trace as "Did not end", with how long it ran at least where
// the job's interrupt bounds it. Its args say so, with the program's line
// of the call (Report.Unfinished).
func (x *ChromeExport) writeOpen(w *chrome.Writer, run *chromeRun, r int, o *exRank, rec *exportRecord) {
	fi := o.fns[rec.fn]
	args := append([]byte(nil), `"kind":"`...)
	args = append(args, kindNames[kindOf(fi)]...)
	args = append(args, `","unfinished":"the call never returned: it was in progress when the process ended"`...)
	if p, ok := run.unf[[2]int{r, rec.idx}]; ok && p.File != "" {
		args = append(args, `,"file":`...)
		args = chrome.AppendString(args, p.File)
		args = append(args, `,"line":`...)
		args = strconv.AppendInt(args, int64(p.Line), 10)
	}
	if rec.leave >= 0 && rec.atLeast {
		args = append(args, `,"ran_at_least_us":`...)
		args = chrome.AppendMicros(args, max(0, rec.leave-rec.entry))
	}
	if rec.leave >= 0 && !rec.atLeast {
		w.Complete(r+1, run.tidOf(r, rec.thread), chromeCat, fi.name, rec.entry-run.origin, max(0, rec.leave-rec.entry), args)
	} else {
		w.Begin(r+1, run.tidOf(r, rec.thread), chromeCat, fi.name, rec.entry-run.origin, args)
	}
	x.Unfinished++
}

// crashText is a crash as the export names it: its signal, and the lines
// of report.Crash.Lines.
type crashText struct {
	signal string
	lines  []string
}

// writeCrash writes the moment rank r's process crashed (rec, a
// recCrash): an instant on the crashed thread's track (the rank's calls'
// track for a thread that never called MPI) named by the signal, whose
// args say where (Report.Crashes' lines).
func (x *ChromeExport) writeCrash(w *chrome.Writer, run *chromeRun, r int, rec *exportRecord) {
	tid := callsTid(r)
	if rec.calls > 0 {
		tid = run.tidOf(r, uint32(rec.calls-1))
	}
	name, args := "crash", []byte(nil)
	if c, ok := run.crash[r]; ok && len(c.lines) > 0 {
		name = c.signal
		args = append(args, `"crash":`...)
		args = chrome.AppendString(args, c.lines[0])
		args = append(args, `,"stack":`...)
		args = chrome.AppendString(args, strings.Join(c.lines[1:], "\n"))
	}
	w.Instant(r+1, tid, "crash", name, rec.entry-run.origin, args)
}

// writeEnd writes the moment rank r's process ended without a crash or
// MPI_Finalize (rec, a recEnd): an instant on the thread's track (the
// rank's calls' track when unknown) named "exit" for a process that
// exited, else "end" (a signal found it in no MPI call), whose args say
// how and where (endLines).
func (x *ChromeExport) writeEnd(w *chrome.Writer, run *chromeRun, r int, rec *exportRecord) {
	tid := callsTid(r)
	if rec.calls > 0 {
		tid = run.tidOf(r, uint32(rec.calls-1))
	}
	name := "end"
	if rec.atLeast {
		name = "exit"
	}
	var args []byte
	if l, ok := run.end[r]; ok {
		args = append(args, `"end":`...)
		args = chrome.AppendString(args, l)
	}
	w.Instant(r+1, tid, "end", name, rec.entry-run.origin, args)
}

// appendTies appends member key (`,"coll":"`) with the instances of ties
// that are done or not, as appendCollID spells them, space-separated; nothing
// when there are none.
func appendTies(args []byte, key string, ties []exportRecord, done bool) []byte {
	n := 0
	for _, t := range ties {
		if (t.tie&tieDone != 0) != done {
			continue
		}
		if n == 0 {
			args = append(args, key...)
		} else {
			args = append(args, ' ')
		}
		args = appendCollID(args, t.coll)
		n++
	}
	if n > 0 {
		args = append(args, '"')
	}
	return args
}

// appendCollID appends a collective instance's id in the export: its
// collHash in 16 hex digits, the same on every member (a string: a JSON
// number would lose digits in a viewer's doubles).
func appendCollID(b []byte, h uint64) []byte {
	const hex = "0123456789abcdef"
	for s := 60; s >= 0; s -= 4 {
		b = append(b, hex[h>>uint(s)&15])
	}
	return b
}

// defsOf is the definitions of rank r's replay among reps, nil when it
// was not replayed here or its trace could not be opened.
func defsOf(reps []*replayer, r int) *traceformat.Definitions {
	if reps[r] == nil {
		return nil
	}
	return reps[r].defs
}

// keysOf is the siteKeyer of rank r's replay among reps, nil when it has
// no definitions.
func keysOf(reps []*replayer, r int) *siteKeyer {
	defs := defsOf(reps, r)
	if defs == nil {
		return nil
	}
	k := newSiteKeyer(defs)
	k.virt = reps[r].sites.sites()
	return k
}

// noteSendThread notes in st[r] the thread of the call rec of rank r
// (whose exRank is o) when it is not the main thread and the call may
// send.
func noteSendThread(st []map[int64]uint32, r int, o *exRank, rec *exportRecord) {
	if k := kindOf(o.fns[rec.fn]); rec.thread != 0 && k != kWait && k != kColl {
		if st[r] == nil {
			st[r] = map[int64]uint32{}
		}
		st[r][rec.entry] = rec.thread
	}
}

// sendThreadsOf is rank r's map of noteSendThread, read from its spool
// (nil when its calls are all the main thread's).
func (x *ChromeExport) sendThreadsOf(r int) (map[int64]uint32, error) {
	o := x.ranks[r]
	if o == nil || len(o.threads) == 0 || len(o.threads) == 1 && o.threads[0] == 0 {
		return nil, nil
	}
	st := make([]map[int64]uint32, r+1)
	var rec exportRecord
	rd := &spoolReader{sp: x.sp, chunks: x.sp.chunks[r], rank: r}
	for rd.scan(&rec) {
		if rec.kind == recCall {
			noteSendThread(st, r, o, &rec)
		}
	}
	return st[r], rd.err
}

// writeFlows writes the messages rank r received as flows from the
// sending call to the receiving one, numbered on from *id.
func (x *ChromeExport) writeFlows(w *chrome.Writer, run *chromeRun, r int, id *uint64) error {
	if x.ranks[r] == nil {
		return nil
	}
	var rec exportRecord
	rd := &spoolReader{sp: x.sp, chunks: x.sp.chunks[r], rank: r}
	var thread uint32 // of the call the messages that follow it belong to
	// The nonblocking collectives started and not yet completed: where
	// their starting call is. The ties of the next call.
	type at struct {
		entry  int64
		thread uint32
	}
	var started map[uint64]at
	var ties []exportRecord
	for rd.scan(&rec) {
		if rec.kind == recTie {
			ties = append(ties, rec)
			continue
		}
		if rec.kind == recCall {
			thread = rec.thread
			for _, t := range ties {
				switch t.tie {
				case tieStart:
					if started == nil {
						started = map[uint64]at{}
					}
					started[t.coll] = at{rec.entry, rec.thread}
				case tieDone:
					s, ok := started[t.coll]
					if !ok {
						break
					}
					delete(started, t.coll)
					*id++
					w.FlowStart(r+1, run.tidOf(r, s.thread), chromeCat, chromeCollFlow, *id, s.entry-run.origin)
					w.FlowEnd(r+1, run.tidOf(r, rec.thread), chromeCat, chromeCollFlow, *id, rec.entry-run.origin)
				}
			}
			ties = ties[:0]
		}
		if rec.kind != recMsg || rec.src < 0 || int(rec.src) >= run.size {
			continue
		}
		*id++
		s := int(rec.src)
		w.FlowStart(s+1, run.tidOf(s, run.sendThreads[s][rec.send]), chromeCat, chromeFlow, *id, rec.send-run.origin)
		w.FlowEnd(r+1, run.tidOf(r, thread), chromeCat, chromeFlow, *id, rec.entry-run.origin)
		x.Messages++
	}
	return rd.err
}

// threadTids numbers the tracks of the threads other than the main one
// of every rank exported (present), from 2·len(threads)+1 on; the main
// thread's track is callsTid's.
func threadTids(threads [][]uint32, present []bool) []map[uint32]int {
	tids := make([]map[uint32]int, len(threads))
	next := 2*len(threads) + 1
	for r, ths := range threads {
		if !present[r] {
			continue
		}
		tids[r] = map[uint32]int{0: callsTid(r)}
		for _, th := range ths {
			if th != 0 {
				tids[r][th] = next
				next++
			}
		}
	}
	return tids
}

// siteArgs encodes a call site's args members: `,"src":3,"file":"a.c","line":58`;
// srcOf gives its SRC id (nil, or 0: none).
func siteArgsOf(srcOf func(site, fn uint32) int, sk [2]uint32, pos map[int]report.Frame) []byte {
	if srcOf == nil {
		return nil
	}
	id := srcOf(sk[0], sk[1])
	if id == 0 {
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
