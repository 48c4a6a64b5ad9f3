package view

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
)

// Store keeps a run's calls outside memory for window requests: it is the
// analyzer's TimelineSink during the analysis. Each rank's calls (with the
// messages they received) and interval executions are encoded into chunks
// that go to one temporary file; in memory stay each chunk's place and
// time range (the sparse time index) and each rank's histogram of time per
// kind (the overview, at a resolution fixed when the store is made).
type Store struct {
	mu    sync.Mutex // f, off, err
	f     *os.File
	off   int64
	err   error
	chunk int // bytes of encoded records per chunk
	ranks []*lane

	// Set by finish.
	origin, end int64
	kinds       []string // Timeline.Funcs kinds
	funcs       [][]int  // per rank: its function numbers → Timeline.Funcs
	sites       [][]int  // per rank: its site numbers → SRC ids
	intervals   []string // interval paths the spans name
	ivIdx       map[string]int
	ivMu        sync.Mutex // ivIdx while ranks replay
	laneOrder   []int      // ranks with calls, in rank order
	hists       []*hist    // per rank
	readMu      sync.Mutex // serializes window reads (one buffer)
	readBuf     []byte
	finished    bool
	detailLimit int
	scanLimit   int
}

// lane is one rank's spooling state; only that rank's replay touches it
// while the analysis runs.
type lane struct {
	calls, spans stream
	prevEntry    int64
	h            *hist
}

// stream is a sequence of records in chunks: buf is the chunk being
// filled, chunks those written.
type stream struct {
	buf      []byte
	n        int32
	from, to int64 // time range of the records in buf
	lo       int64 // the earliest start in buf
	chunks   []chunk
}

// chunk is where a run of records lies in the file and the time they
// cover: from is the first record's start, to the largest end so far in
// the stream (so that to never decreases and a binary search finds the
// first chunk reaching a time), and lo the earliest start in this chunk
// or any later one (so that a window's scan stops at the first chunk whose
// lo is past it). A rank's calls are in time order thread by thread, not
// across threads: a thread's buffer handed over late puts early calls
// after later ones.
type chunk struct {
	off          int64
	size, n      int32
	from, to, lo int64
}

// Limits of a window answered in detail and of one aggregated by reading
// the calls rather than from the histograms.
const (
	DefaultDetailLimit = 200_000
	DefaultScanLimit   = 2_000_000
)

// histTotalBins bounds the bins of all ranks' histograms together
// (5 int64 each); one rank has at most histMaxBins.
const (
	histMaxBins   = 1 << 16
	histMinBins   = 256
	histTotalBins = 1 << 20
)

// NewStore makes a store spooling to a temporary file in dir ("" the
// system's), which is removed at once (it lives as long as the store is
// open).
func NewStore(dir string) (*Store, error) {
	f, err := os.CreateTemp(dir, "dtpa-view-*.spool")
	if err != nil {
		return nil, fmt.Errorf("view: spool: %w", err)
	}
	os.Remove(f.Name())
	return &Store{f: f, ivIdx: map[string]int{}, detailLimit: DefaultDetailLimit, scanLimit: DefaultScanLimit}, nil
}

// Start sizes the store for the run's ranks (analyzer.TimelineSink).
func (s *Store) Start(size int) {
	chunk := 64 << 10
	for chunk > 4<<10 && chunk*size > 64<<20 {
		chunk /= 2
	}
	bins := histMaxBins
	for bins > histMinBins && bins*size > histTotalBins {
		bins /= 2
	}
	s.chunk, s.ranks, s.hists = chunk, make([]*lane, size), make([]*hist, size)
	for r := range s.ranks {
		h := &hist{bins: make([][nKinds]int64, bins)}
		s.ranks[r] = &lane{h: h}
		s.hists[r] = h
	}
}

// Close removes the spool.
func (s *Store) Close() error { return s.f.Close() }

// SpoolBytes is the size of the spool.
func (s *Store) SpoolBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.off
}

// Kinds in the histograms' columns.
const (
	kP2P = iota
	kColl
	kWait
	kOther
	kLost
	nKinds
)

func kindCol(k string) int {
	switch k {
	case report.KindP2P:
		return kP2P
	case report.KindColl:
		return kColl
	case report.KindWait:
		return kWait
	}
	return kOther
}

// Record flags.
const (
	fLost   = 1 << iota // lost > 0 follows
	fBytes              // bytes > 0 follows
	fPeer               // peer >= 0 follows
	fColl               // 8 bytes of collective instance follow
	fMsgs               // number of messages, then each message, follow
	fThread             // thread > 0 follows (absent: thread 0)
	// fTies: the numbers of TimelineCall.More and Done follow, then their
	// instances (8 bytes each), More's first. Last, so that records
	// without it read as before.
	fTies
)

const maxCallRecord = 1 + 9*binary.MaxVarintLen64 + 8

// Call spools one call (analyzer.TimelineSink).
func (s *Store) Call(rank int, c *analyzer.TimelineCall) {
	if rank < 0 || rank >= len(s.ranks) {
		return
	}
	l := s.ranks[rank]
	l.h.add(c.Entry, c.Exit, c.Lost, kindCol(c.Kind))
	st := &l.calls
	ties := len(c.More) + len(c.Done)
	if len(st.buf)+maxCallRecord+len(c.Msgs)*2*binary.MaxVarintLen64+ties*8+2*binary.MaxVarintLen64 > s.chunk && st.n > 0 {
		s.put(st)
	}
	if st.n == 0 {
		st.from, st.lo, l.prevEntry = c.Entry, c.Entry, c.Entry
		st.to = max(st.to, c.Exit)
	}
	st.lo = min(st.lo, c.Entry)
	var fl byte
	if c.Lost > 0 {
		fl |= fLost
	}
	if c.Bytes > 0 {
		fl |= fBytes
	}
	if c.Peer >= 0 {
		fl |= fPeer
	}
	if c.Coll != 0 {
		fl |= fColl
	}
	if len(c.Msgs) > 0 {
		fl |= fMsgs
	}
	if c.Thread > 0 {
		fl |= fThread
	}
	if ties > 0 {
		fl |= fTies
	}
	b := append(st.buf, fl)
	b = binary.AppendVarint(b, c.Entry-l.prevEntry)
	b = binary.AppendVarint(b, c.Exit-c.Entry)
	b = binary.AppendUvarint(b, uint64(max(0, c.Func)))
	b = binary.AppendUvarint(b, uint64(max(0, c.Site)))
	if fl&fLost != 0 {
		b = binary.AppendUvarint(b, uint64(c.Lost))
	}
	if fl&fBytes != 0 {
		b = binary.AppendUvarint(b, uint64(c.Bytes))
	}
	if fl&fPeer != 0 {
		b = binary.AppendUvarint(b, uint64(c.Peer))
	}
	if fl&fColl != 0 {
		b = binary.LittleEndian.AppendUint64(b, c.Coll)
	}
	if fl&fMsgs != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.Msgs)))
		for _, m := range c.Msgs {
			b = binary.AppendUvarint(b, uint64(max(0, m.Src)))
			b = binary.AppendVarint(b, m.Send-c.Entry)
		}
	}
	if fl&fThread != 0 {
		b = binary.AppendUvarint(b, uint64(c.Thread))
	}
	if fl&fTies != 0 {
		b = binary.AppendUvarint(b, uint64(len(c.More)))
		b = binary.AppendUvarint(b, uint64(len(c.Done)))
		for _, h := range c.More {
			b = binary.LittleEndian.AppendUint64(b, h)
		}
		for _, h := range c.Done {
			b = binary.LittleEndian.AppendUint64(b, h)
		}
	}
	st.buf = b
	st.n++
	l.prevEntry = c.Entry
	st.to = max(st.to, c.Exit)
}

// Span spools one interval execution (analyzer.TimelineSink).
func (s *Store) Span(rank int, sp *analyzer.TimelineSpan) {
	if rank < 0 || rank >= len(s.ranks) {
		return
	}
	s.ivMu.Lock()
	iv, ok := s.ivIdx[sp.Interval]
	if !ok {
		iv = len(s.intervals)
		s.ivIdx[sp.Interval] = iv
		s.intervals = append(s.intervals, sp.Interval)
	}
	s.ivMu.Unlock()
	st := &s.ranks[rank].spans
	if len(st.buf)+4*binary.MaxVarintLen64 > s.chunk/4 && st.n > 0 {
		s.put(st)
	}
	if st.n == 0 {
		st.from = sp.Enter
	}
	st.from = min(st.from, sp.Enter)
	st.lo = st.from
	b := binary.AppendVarint(st.buf, sp.Enter)
	b = binary.AppendUvarint(b, uint64(max(0, sp.Leave-sp.Enter)))
	b = binary.AppendUvarint(b, uint64(iv))
	b = binary.AppendUvarint(b, uint64(max(0, sp.Level)))
	st.buf = b
	st.n++
	st.to = max(st.to, sp.Leave)
}

// put writes st's chunk to the spool.
func (s *Store) put(st *stream) {
	s.mu.Lock()
	if s.err == nil {
		if _, err := s.f.WriteAt(st.buf, s.off); err != nil {
			s.err = fmt.Errorf("view: writing the spool: %w", err)
		}
	}
	c := chunk{off: s.off, size: int32(len(st.buf)), n: st.n, from: st.from, to: st.to, lo: st.lo}
	s.off += int64(len(st.buf))
	s.mu.Unlock()
	st.chunks = append(st.chunks, c)
	st.buf, st.n = st.buf[:0], 0
}

// finish writes what is buffered and takes the timeline's numbering, once
// the analysis is over.
func (s *Store) finish(rec *analyzer.TimelineRecorder, tl *report.Timeline) error {
	if len(tl.Lanes) > len(s.ranks) {
		return errors.New("view: the store saw fewer ranks than the timeline has")
	}
	for _, l := range s.ranks {
		if l.calls.n > 0 {
			s.put(&l.calls)
		}
		if l.spans.n > 0 {
			s.put(&l.spans)
		}
		l.calls.buf, l.spans.buf = nil, nil
		cs := l.calls.chunks
		for i := len(cs) - 2; i >= 0; i-- {
			cs[i].lo = min(cs[i].lo, cs[i+1].lo)
		}
	}
	if s.err != nil {
		return s.err
	}
	s.origin, s.end = tl.Origin, tl.End
	for _, f := range tl.Funcs {
		s.kinds = append(s.kinds, f.Kind)
	}
	s.funcs = make([][]int, len(s.ranks))
	s.sites = make([][]int, len(s.ranks))
	for r := range s.ranks {
		s.funcs[r], s.sites[r] = rec.LaneFuncs(r), rec.LaneSites(r)
	}
	for _, ln := range tl.Lanes {
		s.laneOrder = append(s.laneOrder, ln.Rank)
	}
	s.finished = true
	return nil
}

// window is one decoded call, times relative to the origin.
type wcall struct {
	start, dur, lost, bytes int64
	fn, site, peer, thread  int
	coll                    uint64
	kind                    int
	ties                    []wtie // TimelineCall.More, then Done
}

// wtie is one of TimelineCall.More (done false) or Done.
type wtie struct {
	coll uint64
	done bool
}

type wmsg struct {
	src       int
	send, rcv int64
}

// first returns the index of the first chunk of cs whose range reaches t.
func first(cs []chunk, t int64) int {
	return sort.Search(len(cs), func(i int) bool { return cs[i].to >= t })
}

// count is the number of records in the chunks of cs that overlap [from,
// to] (global clock): an upper bound of the records in the window.
func count(cs []chunk, from, to int64) int64 {
	var n int64
	for i := first(cs, from); i < len(cs) && cs[i].lo <= to; i++ {
		n += int64(cs[i].n)
	}
	return n
}

var errCorrupt = errors.New("view: the spool is damaged")

// calls decodes rank r's calls overlapping [from, to] (global clock) and
// hands each to fn with the messages it received.
func (s *Store) calls(r int, from, to int64, fn func(c *wcall, msgs []wmsg)) error {
	cs := s.ranks[r].calls.chunks
	var c wcall
	var msgs []wmsg
	var ties []wtie
	for i := first(cs, from); i < len(cs) && cs[i].lo <= to; i++ {
		ch := cs[i]
		if cap(s.readBuf) < int(ch.size) {
			s.readBuf = make([]byte, ch.size)
		}
		b := s.readBuf[:ch.size]
		if _, err := s.f.ReadAt(b, ch.off); err != nil {
			return fmt.Errorf("view: reading the spool: %w", err)
		}
		entry := ch.from
		for k := int32(0); k < ch.n; k++ {
			if len(b) == 0 {
				return errCorrupt
			}
			fl := b[0]
			b = b[1:]
			var vals [4]int64
			for j := range vals {
				var v int64
				var n int
				if j < 2 {
					v, n = binary.Varint(b)
				} else {
					var u uint64
					u, n = binary.Uvarint(b)
					v = int64(u)
				}
				if n <= 0 {
					return errCorrupt
				}
				vals[j], b = v, b[n:]
			}
			entry += vals[0]
			c = wcall{start: entry, dur: vals[1], fn: int(vals[2]), site: int(vals[3]), peer: -1}
			uv := func() int64 {
				u, n := binary.Uvarint(b)
				if n <= 0 {
					b = nil
					return 0
				}
				b = b[n:]
				return int64(u)
			}
			if fl&fLost != 0 {
				c.lost = uv()
			}
			if fl&fBytes != 0 {
				c.bytes = uv()
			}
			if fl&fPeer != 0 {
				c.peer = int(uv())
			}
			if fl&fColl != 0 {
				if len(b) < 8 {
					return errCorrupt
				}
				c.coll, b = binary.LittleEndian.Uint64(b), b[8:]
			}
			msgs = msgs[:0]
			if fl&fMsgs != 0 {
				n := uv()
				for ; n > 0 && b != nil; n-- {
					src := uv()
					d, m := binary.Varint(b)
					if m <= 0 {
						return errCorrupt
					}
					b = b[m:]
					msgs = append(msgs, wmsg{src: int(src), send: entry + d, rcv: entry + c.dur})
				}
			}
			if fl&fThread != 0 {
				c.thread = int(uv())
			}
			ties = ties[:0]
			if fl&fTies != 0 {
				more, done := uv(), uv()
				if b == nil || more < 0 || done < 0 || int64(len(b))/8 < more+done {
					return errCorrupt
				}
				for j := range more + done {
					ties = append(ties, wtie{coll: binary.LittleEndian.Uint64(b), done: j >= more})
					b = b[8:]
				}
			}
			c.ties = ties
			if b == nil {
				return errCorrupt
			}
			if c.start > to || c.start+c.dur < from {
				continue
			}
			fns := s.funcs[r]
			c.kind = kOther
			if c.fn < len(fns) && fns[c.fn] < len(s.kinds) {
				c.kind = kindCol(s.kinds[fns[c.fn]])
			}
			fn(&c, msgs)
		}
	}
	return nil
}

// spans decodes rank r's interval executions overlapping [from, to].
// They are spooled as they are left, an inner one before the one around
// it, so chunks are not in time order: each chunk's range is checked.
func (s *Store) spans(r int, from, to int64, fn func(start, dur int64, iv, level int)) error {
	cs := s.ranks[r].spans.chunks
	for i := 0; i < len(cs); i++ {
		ch := cs[i]
		if ch.to < from || ch.from > to {
			continue
		}
		b := make([]byte, ch.size)
		if _, err := s.f.ReadAt(b, ch.off); err != nil {
			return fmt.Errorf("view: reading the spool: %w", err)
		}
		for k := int32(0); k < ch.n; k++ {
			st, n := binary.Varint(b)
			if n <= 0 {
				return errCorrupt
			}
			b = b[n:]
			var v [3]uint64
			for j := range v {
				u, n := binary.Uvarint(b)
				if n <= 0 {
					return errCorrupt
				}
				v[j], b = u, b[n:]
			}
			if st > to || st+int64(v[0]) < from {
				continue
			}
			fn(st, int64(v[0]), int(v[1]), int(v[2]))
		}
	}
	return nil
}

// hist is one rank's time per kind in bins of width ns from origin; when
// a call ends past the last bin, pairs of bins merge and the width
// doubles, so it covers any run in fixed memory.
type hist struct {
	origin, width int64
	bins          [][nKinds]int64
}

func (h *hist) add(entry, exit, lost int64, kind int) {
	if h.width == 0 {
		h.origin, h.width = entry, 100
	}
	entry = max(entry, h.origin)
	exit = max(exit, entry)
	n := int64(len(h.bins))
	for exit-h.origin >= h.width*n && h.width < math.MaxInt64/(4*n) {
		for i := range n / 2 {
			for k := range h.bins[i] {
				h.bins[i][k] = h.bins[2*i][k] + h.bins[2*i+1][k]
			}
		}
		clear(h.bins[n/2:])
		h.width *= 2
	}
	exit = min(exit, h.origin+h.width*n-1)
	entry = min(entry, exit)
	h.spread(entry, exit, kind)
	if lost > 0 {
		h.spread(entry, min(exit, entry+lost), kLost)
	}
}

func (h *hist) spread(from, to int64, k int) {
	for t := from; t < to; {
		i := (t - h.origin) / h.width
		end := min(to, h.origin+(i+1)*h.width)
		h.bins[i][k] += end - t
		t = end
	}
}

// resample spreads the bins over px pixels of [from, to) (global clock),
// each source bin in proportion to how much of it a pixel covers.
func (h *hist) resample(from, to int64, px int, out *[nKinds][]float64) {
	if h.width == 0 || to <= from {
		return
	}
	w := float64(to-from) / float64(px)
	lo := max(0, int((from-h.origin)/h.width))
	for i := lo; i < len(h.bins); i++ {
		bl, bh := h.origin+int64(i)*h.width, h.origin+int64(i+1)*h.width
		if bl >= to {
			break
		}
		if h.bins[i] == ([nKinds]int64{}) {
			continue
		}
		flo, fhi := float64(bl-from), float64(bh-from)
		for j := max(0, int(flo/w)); j < px && float64(j)*w < fhi; j++ {
			a, b := max(flo, float64(j)*w), min(fhi, float64(j+1)*w)
			if b <= a {
				continue
			}
			f := (b - a) / (fhi - flo)
			for k, v := range h.bins[i] {
				out[k][j] += float64(v) * f
			}
		}
	}
}

// binWidth is the width of rank r's histogram bins (0: no calls).
func (s *Store) binWidth(r int) int64 { return s.hists[r].width }
