package analyzer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dtpa/dtpa/internal/partstream"
	"github.com/dtpa/dtpa/report"
)

// The finished timeline (TimelineRecorder) is drawn lane by lane: finish
// keeps of each rank what the whole timeline needs (its times, counts,
// functions, intervals and call sites), and the lanes and the messages'
// arrows are made from the ranks' recordings when the timeline is written
// (WriteJSON: one lane in memory at a time, the page of dtpa --html) or
// asked for whole (Timeline). The recordings of a distributed analysis's
// other processes come to process 0 as one part per process, in chunks
// (partstream), and wait in a spool file, from which each rank's is read
// again whenever its lane or its messages are written: process 0 holds
// its own ranks' recordings and, of the others', a rank at a time.

// tlFinished is what finish keeps to write the timeline.
type tlFinished struct {
	head  *report.Timeline // without lanes and messages
	ranks []*tlInfo        // by rank; nil: not recorded
	ivs   map[string]int   // interval path → Timeline.Intervals index
	hosts []string
	ends  map[int]string // how ranks ended that neither crashed nor finalized (endLines)
}

// tlInfo is what finish keeps of a recorded rank.
type tlInfo struct {
	o      *tlRank // the recording, when held in memory
	off, n int64   // else where it lies in the spool
	// Where its detail ends (tlRank), for the arrows of the messages it
	// sent.
	truncated bool
	detailEnd int64
	gf        []int // the rank's function numbers → Timeline.Funcs
	// src gives the SRC id of a (call site, function) (srcIDsOf), nil
	// when the rank has no definitions: looked up as the lane is written.
	src func(site, fn uint32) int
}

// finish finishes t once the replay is over; src(r) numbers rank r's call
// sites as the report's SRC ids (srcIDsOf; nil when its trace could not
// be opened). hosts are the ranks' host names, ends how the ranks that
// neither crashed nor finalized ended (endLines).
func (t *TimelineRecorder) finish(src func(r int) func(site, fn uint32) int, hosts []string, ends map[int]string) error {
	size := max(len(t.ranks), len(hosts))
	f := &tlFinished{ranks: make([]*tlInfo, size), ivs: map[string]int{}, hosts: hosts, ends: ends}
	for r, o := range t.ranks {
		if o != nil {
			f.ranks[r] = &tlInfo{o: o}
		}
	}
	if err := t.spool.index(f.ranks, t.spanNodes()); err != nil {
		return err
	}
	tl := &report.Timeline{Funcs: []report.TimelineFunc{}, Lanes: []report.Lane{}, Bins: overviewBins, Intervals: []string{},
		Messages: report.Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}}
	tl.MaxCalls = t.MaxCalls
	if tl.MaxCalls <= 0 {
		tl.MaxCalls = DefaultTimelineCalls
	}
	funcs := map[report.TimelineFunc]int{}
	first := true
	var last int64
	err := t.each(f, func(r int, in *tlInfo, o *tlRank) error {
		in.truncated, in.detailEnd = o.truncated, o.detailEnd
		if !o.started {
			return nil
		}
		if first || o.first < tl.Origin {
			tl.Origin = o.first
		}
		first = false
		last = max(last, o.last)
		if o.truncated {
			tl.Truncated = true
		}
		tl.CallCount += o.calls
		tl.MessageCount += o.received
		in.gf = make([]int, len(o.fnNames))
		for i, name := range o.fnNames {
			fn := report.TimelineFunc{Name: name, Kind: o.fnKinds[i]}
			j, ok := funcs[fn]
			if !ok {
				j = len(tl.Funcs)
				funcs[fn] = j
				tl.Funcs = append(tl.Funcs, fn)
			}
			in.gf[i] = j
		}
		src := src(r)
		o.laneFuncs = in.gf
		if o.sink != nil {
			o.laneSites = make([]int, len(o.sites))
			if src != nil {
				for i, k := range o.sites {
					o.laneSites[i] = src(k[0], k[1])
				}
			}
		}
		in.src = src
		for _, s := range o.spans {
			key := s.n.Key()
			if _, ok := f.ivs[key]; !ok {
				f.ivs[key] = len(tl.Intervals)
				tl.Intervals = append(tl.Intervals, key)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	tl.End = max(0, last-tl.Origin)
	f.head = tl
	t.fin, t.tl = f, nil
	return nil
}

// each calls fn for every recorded rank in rank order, with its
// recording (read from the spool for another process's rank: valid until
// the next call).
func (t *TimelineRecorder) each(f *tlFinished, fn func(r int, in *tlInfo, o *tlRank) error) error {
	for r, in := range f.ranks {
		if in == nil {
			continue
		}
		o := in.o
		if o == nil {
			var err error
			if o, err = t.spool.read(in, len(f.ranks), t.spanNodes()); err != nil {
				return err
			}
		}
		if err := fn(r, in, o); err != nil {
			return err
		}
	}
	return nil
}

// spanNodes stands one node for each interval path that the spooled
// recordings' executions name (only their paths are read).
func (t *TimelineRecorder) spanNodes() map[string]*rnode {
	if t.spool.nodes == nil {
		t.spool.nodes = map[string]*rnode{}
	}
	return t.spool.nodes
}

// lanes calls put with every lane in rank order. A lane's collective
// instances are numbered in the order the lanes first name them.
func (t *TimelineRecorder) lanes(put func(*report.Lane) error) error {
	f := t.fin
	tl := f.head
	insts := map[collKey]int{}
	return t.each(f, func(r int, in *tlInfo, o *tlRank) error {
		if !o.started {
			return nil
		}
		ln := report.Lane{Rank: r, Host: f.hosts[r], Calls: o.calls, Truncated: o.truncated, DetailEnd: tl.End}
		if len(o.threads) > 1 || len(o.threads) == 1 && o.threads[0] != 0 {
			for _, th := range o.threads {
				ln.Threads = append(ln.Threads, int(th))
			}
		}
		if o.truncated {
			ln.DetailEnd = o.detailEnd - tl.Origin
		}
		n := len(o.boxes)
		ln.Start, ln.Dur, ln.Lost = make([]int64, n), make([]int64, n), make([]int64, n)
		ln.Func, ln.Site, ln.Bytes = make([]int, n), make([]int, n), make([]int64, n)
		ln.Peer, ln.Coll = make([]int, n), make([]int, n)
		for i, b := range o.boxes {
			ln.Start[i], ln.Dur[i], ln.Lost[i] = b.entry-tl.Origin, b.exit-b.entry, b.lost
			ln.Func[i], ln.Bytes[i], ln.Peer[i], ln.Coll[i] = in.gf[b.fidx], b.bytes, int(b.peer), -1
			if in.src != nil {
				ln.Site[i] = in.src(b.site, b.fn)
			}
			if b.thread != 0 {
				if ln.Thread == nil {
					ln.Thread = make([]int, n)
				}
				ln.Thread[i] = int(b.thread)
			}
		}
		for _, c := range o.colls {
			id, ok := insts[c.key]
			if !ok {
				id = len(insts)
				insts[c.key] = id
			}
			if !c.done && ln.Coll[c.box] < 0 {
				ln.Coll[c.box] = id
				continue
			}
			if ln.Ties == nil {
				ln.Ties = &report.CollTies{Call: []int{}, Coll: []int{}, Done: []bool{}}
			}
			ln.Ties.Call = append(ln.Ties.Call, int(c.box))
			ln.Ties.Coll = append(ln.Ties.Coll, id)
			ln.Ties.Done = append(ln.Ties.Done, c.done)
		}
		if len(o.unf) > 0 {
			u := &report.LaneUnfinished{}
			for _, c := range o.unf {
				d := int64(-1)
				if c.end >= 0 {
					d = c.end - c.entry
				}
				u.Start, u.Dur = append(u.Start, c.entry-tl.Origin), append(u.Dur, d)
				u.Func, u.Thread = append(u.Func, in.gf[c.fidx]), append(u.Thread, int(c.thread))
				if c.atLeast && u.AtLeast == nil {
					u.AtLeast = make([]bool, len(o.unf))
				}
				if c.atLeast {
					u.AtLeast[len(u.Start)-1] = true
				}
			}
			ln.Unfinished = u
		}
		if c := o.crash; c != nil {
			ln.Crash = &report.LaneCrash{At: c.at - tl.Origin, Thread: int(c.thread)}
		}
		if e := o.end; e != nil {
			ln.End = &report.LaneEnd{At: e.at - tl.Origin, Thread: int(e.thread), Exited: e.exited, How: f.ends[r]}
		}
		sp := &ln.Spans
		sp.Start, sp.Dur = make([]int64, len(o.spans)), make([]int64, len(o.spans))
		sp.Interval, sp.Level = make([]int, len(o.spans)), make([]int, len(o.spans))
		for i, s := range o.spans {
			sp.Start[i], sp.Dur[i], sp.Interval[i], sp.Level[i] = s.enter-tl.Origin, s.leave-s.enter, f.ivs[s.n.Key()], s.n.Level()
		}
		ln.Overview = o.hist.resample(tl.Origin, tl.End, o.first, o.last)
		return put(&ln)
	})
}

// messages calls put with every value of column col of the arrows (0
// From, 1 To, 2 Send, 3 Recv): those whose send lies within the sender's
// detail, by receiver in rank order.
func (t *TimelineRecorder) messages(col int, put func(int64) error) error {
	f := t.fin
	origin := f.head.Origin
	return t.each(f, func(r int, _ *tlInfo, o *tlRank) error {
		for _, m := range o.msgs {
			s := f.ranks[m.src]
			if s == nil || (s.truncated && m.send >= s.detailEnd) {
				continue
			}
			var v int64
			switch col {
			case 0:
				v = int64(m.src)
			case 1:
				v = int64(r)
			case 2:
				v = m.send - origin
			default:
				v = o.boxes[m.box].exit - origin
			}
			if err := put(v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Timeline is the recorded timeline, once Analyze returned (nil before,
// when the analysis failed, or when the spool cannot be read). Lane.Site
// numbers are the report's SRC ids. It holds every lane: WriteJSON
// writes the same timeline a lane at a time.
func (t *TimelineRecorder) Timeline() *report.Timeline {
	if t.tl != nil || t.fin == nil {
		return t.tl
	}
	tl := *t.fin.head
	err := t.lanes(func(ln *report.Lane) error {
		tl.Lanes = append(tl.Lanes, *ln)
		return nil
	})
	m := &tl.Messages
	for col := 0; col < 4 && err == nil; col++ {
		err = t.messages(col, func(v int64) error {
			switch col {
			case 0:
				m.From = append(m.From, int(v))
			case 1:
				m.To = append(m.To, int(v))
			case 2:
				m.Send = append(m.Send, v)
			default:
				m.Recv = append(m.Recv, v)
			}
			return nil
		})
	}
	if err != nil {
		return nil
	}
	t.tl = &tl
	return t.tl
}

// WriteJSON writes the JSON of Timeline (null before Analyze returned or
// when it failed) without holding it whole: a lane at a time
// (report.WriteTimelineJSON).
func (t *TimelineRecorder) WriteJSON(w io.Writer) error {
	if t.fin == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	return report.WriteTimelineJSON(w, t.fin.head, t.lanes, t.messages)
}

// Close releases the spool of the other processes' recordings (process 0
// of a distributed analysis); the timeline cannot be written after.
func (t *TimelineRecorder) Close() error {
	return t.spool.close()
}

// tlSpool is a file holding other processes' recordings: each rank's
// encoding (resWriter.tlRank) after its length (a uvarint). It is removed
// from its directory once created, so that nothing is left behind however
// the analysis ends.
type tlSpool struct {
	f      *os.File
	w      *bufio.Writer
	size   int64
	budget int
	buf    []byte
	nodes  map[string]*rnode // span nodes of the spooled recordings
}

// receive writes process from's part into the spool (in dir), in chunks
// from rcv.
func (s *tlSpool) receive(rcv *partstream.Receiver, from int, dir string) error {
	if s.f == nil {
		f, err := os.CreateTemp(dir, ".dtpa-timeline-*.tmp")
		if err != nil {
			return fmt.Errorf("spooling the timeline: %w", err)
		}
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return fmt.Errorf("spooling the timeline: %w", err)
		}
		s.f, s.w = f, newSpoolWriter(f)
	}
	_, err := rcv.Receive(from, func(b []byte) error {
		n, err := s.w.Write(b)
		s.size += int64(n)
		return err
	})
	if err != nil {
		return fmt.Errorf("the timeline of analysis process %d: %w", from, err)
	}
	return nil
}

func newSpoolWriter(f *os.File) *bufio.Writer { return bufio.NewWriterSize(f, tlChunk) }

// index finds every spooled rank's recording and notes where it lies in
// ranks, checking it (a rank recorded twice, a damaged part).
func (s *tlSpool) index(ranks []*tlInfo, nodes map[string]*rnode) error {
	if s.f == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spooling the timeline: %w", err)
	}
	rd := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.size), tlChunk)
	var off int64
	for off < s.size {
		n, err := binary.ReadUvarint(rd)
		if err != nil || n > uint64(s.size) {
			return fmt.Errorf("bad timeline part at byte %d of the spool", off)
		}
		head := int64(binary.PutUvarint(make([]byte, binary.MaxVarintLen64), n))
		in := &tlInfo{off: off + head, n: int64(n)}
		if cap(s.buf) < int(n) {
			s.buf = make([]byte, n)
		}
		if _, err := io.ReadFull(rd, s.buf[:n]); err != nil {
			return fmt.Errorf("bad timeline part at byte %d of the spool: %w", off, err)
		}
		o, err := s.decode(s.buf[:n], len(ranks), nodes)
		if err != nil {
			return err
		}
		r := o.rp.rank
		if ranks[r] != nil {
			return fmt.Errorf("rank %d recorded twice", r)
		}
		ranks[r] = in
		off = in.off + in.n
	}
	return nil
}

// read decodes the spooled recording in.
func (s *tlSpool) read(in *tlInfo, size int, nodes map[string]*rnode) (*tlRank, error) {
	if cap(s.buf) < int(in.n) {
		s.buf = make([]byte, in.n)
	}
	b := s.buf[:in.n]
	if _, err := s.f.ReadAt(b, in.off); err != nil {
		return nil, fmt.Errorf("reading the timeline's spool: %w", err)
	}
	return s.decode(b, size, nodes)
}

func (s *tlSpool) decode(b []byte, size int, nodes map[string]*rnode) (*tlRank, error) {
	r := &resReader{b: b}
	o := r.tlRank(size, s.budget, nodes)
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("bad timeline part: %w", r.err)
	}
	return o, nil
}

func (s *tlSpool) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.w, s.buf = nil, nil, nil
	return err
}

// tlChunk is the size of the chunks a timeline part travels in.
const tlChunk = 256 << 10

// sendTimeline sends this process's recordings to process 0 as one part
// (tlSpool's layout), in chunks.
func sendTimeline(t *TimelineRecorder, s *partstream.Sender) error {
	w := bufio.NewWriterSize(chunkWriter{s}, tlChunk)
	var enc resWriter
	var n [binary.MaxVarintLen64]byte
	for _, o := range t.ranks {
		if o == nil {
			continue
		}
		enc.b = enc.b[:0]
		enc.tlRank(o)
		w.Write(n[:binary.PutUvarint(n[:], uint64(len(enc.b)))])
		w.Write(enc.b)
	}
	err := w.Flush()
	if err == nil {
		err = s.End(nil)
	}
	if errors.Is(err, partstream.ErrStopped) {
		return nil
	}
	return err
}

// chunkWriter hands a bufio.Writer's writes to a part in chunks of
// tlChunk at most (a bufio.Writer passes a write larger than its buffer
// on whole).
type chunkWriter struct{ s *partstream.Sender }

func (c chunkWriter) Write(b []byte) (int, error) {
	for i := 0; i < len(b); i += tlChunk {
		if _, err := c.s.Write(b[i:min(len(b), i+tlChunk)]); err != nil {
			return i, err
		}
	}
	return len(b), nil
}
