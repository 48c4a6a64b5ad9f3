package analyzer

import (
	"math"
	"sort"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// The timeline recorder watches the replay: every replayed call, on the
// global clock after alignment and the controlled logical clock's forward
// repairs, with the message each receive took (its sender and send entry)
// and the instance each collective call joined. The replay calls it at a
// few points (replayer.obs); disabled, each point is a nil check.
//
// The times are those the replay computed when it replayed the call: the
// backward amortization of a repair (clc.go), which moves earlier calls of
// the rank after the fact for Overlap, is not reflected in the boxes.

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

	ranks []*rankObs
	tl    *report.Timeline
}

// Timeline is the recorded timeline, once Analyze returned (nil before or
// when the analysis failed). Lane.Site numbers are the report's SRC ids.
func (t *TimelineRecorder) Timeline() *report.Timeline { return t.tl }

// rank sets up the recording of one rank (nil when t is nil).
func (t *TimelineRecorder) rank(rp *replayer, size int) *rankObs {
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
	o := &rankObs{rp: rp, budget: max / size, fnIdx: map[*fnInfo]int{}, hist: hist{bins: make([][nKinds]int64, bins)}}
	if o.budget < 1 {
		o.budget = 1
	}
	if t.ranks == nil {
		t.ranks = make([]*rankObs, size)
	}
	t.ranks[rp.rank] = o
	return o
}

// tlBox is one call kept in detail.
type tlBox struct {
	entry, exit, lost, bytes int64
	site, fn                 uint32 // trace ids, for the SRC id
	fidx, peer               int32
}

type tlMsg struct {
	src  int32
	send int64
	box  int32 // the receiving call's box
}

type tlColl struct {
	box int32
	key collKey
}

// rankObs records one rank. Only that rank's replay touches it.
type rankObs struct {
	rp     *replayer
	budget int
	boxes  []tlBox
	msgs   []tlMsg
	colls  []tlColl

	// Of the call being replayed: the messages it received and the
	// collective instance it joined.
	pend             []tlMsg
	collKey          collKey
	inColl, collHas  bool
	collLatest       int64
	calls, received  int64
	truncated        bool
	detailEnd        int64
	started          bool
	first, last      int64
	fnIdx            map[*fnInfo]int
	fnNames, fnKinds []string
	hist             hist
}

// recv notes that the call being replayed received the message rank src
// sent at global time send (ok false: nothing was received).
func (o *rankObs) recv(src int32, send int64, ok bool) {
	if o != nil && ok {
		o.pend = append(o.pend, tlMsg{src: src, send: send})
	}
}

// coll notes the collective instance the call being replayed joined and
// the latest entry it waited for (has: it waited for one).
func (o *rankObs) coll(k collKey, latest int64, has bool) {
	if o != nil {
		o.collKey, o.inColl, o.collLatest, o.collHas = k, true, latest, has
	}
}

// call records the call just replayed: global entry and exit, and its Real
// Sync.
func (o *rankObs) call(e *traceformat.Event, fi *fnInfo, entry, exit, realSync int64) {
	if o != nil {
		o.record(e, fi, entry, exit, realSync)
	}
}

func (o *rankObs) record(e *traceformat.Event, fi *fnInfo, entry, exit, lost int64) {
	if !o.started {
		o.started, o.first = true, entry
	}
	o.last = max(o.last, exit)
	kind := kindOf(fi)
	if o.inColl && o.collHas && fi.op == opColl {
		lost = max(0, min(o.collLatest, exit)-entry)
	}
	o.hist.add(entry, exit, lost, kind)
	o.calls++
	o.received += int64(len(o.pend))
	if !o.truncated && len(o.boxes) >= o.budget {
		o.truncated, o.detailEnd = true, entry
	}
	if !o.truncated {
		b := tlBox{entry: entry, exit: exit, lost: lost, site: e.Site, fn: e.Func, fidx: int32(o.fnIndex(fi, kind)), peer: -1}
		if e.Attr&traceformat.AttrSendBytes != 0 {
			b.bytes += int64(e.SendBytes)
		}
		if e.Attr&traceformat.AttrRecvBytes != 0 {
			b.bytes += int64(e.RecvBytes)
		}
		if len(o.pend) > 0 {
			b.peer = o.pend[0].src
		} else if e.Attr&traceformat.AttrSend != 0 {
			if c := o.rp.eventComm(e); c != nil {
				if w, ok := c.peerWorld(e.SendPeer); ok {
					b.peer = w
				}
			}
		}
		i := int32(len(o.boxes))
		o.boxes = append(o.boxes, b)
		for _, m := range o.pend {
			m.box = i
			o.msgs = append(o.msgs, m)
		}
		if o.inColl {
			o.colls = append(o.colls, tlColl{box: i, key: o.collKey})
		}
	}
	o.pend = o.pend[:0]
	o.inColl = false
}

func (o *rankObs) fnIndex(fi *fnInfo, kind int) int {
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

// finish builds t's Timeline once the replay is over; siteID numbers call
// sites as the report's SRC ids do (the keys of siteKeyer).
func (t *TimelineRecorder) finish(reps []*replayer, siteID map[string]int) {
	tl := &report.Timeline{Funcs: []report.TimelineFunc{}, Lanes: []report.Lane{}, Bins: overviewBins,
		Messages: report.Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}}
	t.tl = tl
	tl.MaxCalls = t.MaxCalls
	if tl.MaxCalls <= 0 {
		tl.MaxCalls = DefaultTimelineCalls
	}
	first := true
	var last int64
	for _, o := range t.ranks {
		if o == nil || !o.started {
			continue
		}
		if first || o.first < tl.Origin {
			tl.Origin = o.first
		}
		first = false
		last = max(last, o.last)
	}
	tl.End = max(0, last-tl.Origin)
	funcs := map[report.TimelineFunc]int{}
	insts := map[collKey]int{}
	for r, o := range t.ranks {
		if o == nil || !o.started {
			continue
		}
		ln := report.Lane{Rank: r, Calls: o.calls, Truncated: o.truncated, DetailEnd: tl.End}
		if o.truncated {
			ln.DetailEnd = o.detailEnd - tl.Origin
			tl.Truncated = true
		}
		tl.CallCount += o.calls
		tl.MessageCount += o.received
		gf := make([]int, len(o.fnNames))
		for i, name := range o.fnNames {
			f := report.TimelineFunc{Name: name, Kind: o.fnKinds[i]}
			j, ok := funcs[f]
			if !ok {
				j = len(tl.Funcs)
				funcs[f] = j
				tl.Funcs = append(tl.Funcs, f)
			}
			gf[i] = j
		}
		keys := &siteKeyer{rp: reps[r], cache: map[[2]uint32]string{}, refs: map[string]siteRef{}}
		n := len(o.boxes)
		ln.Start, ln.Dur, ln.Lost = make([]int64, n), make([]int64, n), make([]int64, n)
		ln.Func, ln.Site, ln.Bytes = make([]int, n), make([]int, n), make([]int64, n)
		ln.Peer, ln.Coll = make([]int, n), make([]int, n)
		for i, b := range o.boxes {
			ln.Start[i], ln.Dur[i], ln.Lost[i] = b.entry-tl.Origin, b.exit-b.entry, b.lost
			ln.Func[i], ln.Bytes[i], ln.Peer[i], ln.Coll[i] = gf[b.fidx], b.bytes, int(b.peer), -1
			if reps[r].defs != nil {
				ln.Site[i] = siteID[keys.key(b.site, b.fn)]
			}
		}
		for _, c := range o.colls {
			id, ok := insts[c.key]
			if !ok {
				id = len(insts)
				insts[c.key] = id
			}
			ln.Coll[c.box] = id
		}
		ln.Overview = o.hist.resample(tl.Origin, tl.End, o.first, o.last)
		tl.Lanes = append(tl.Lanes, ln)
	}
	// Arrows whose send lies within the sender's detail.
	for r, o := range t.ranks {
		if o == nil {
			continue
		}
		for _, m := range o.msgs {
			s := t.ranks[m.src]
			if s == nil || (s.truncated && m.send >= s.detailEnd) {
				continue
			}
			b := o.boxes[m.box]
			tl.Messages.From = append(tl.Messages.From, int(m.src))
			tl.Messages.To = append(tl.Messages.To, r)
			tl.Messages.Send = append(tl.Messages.Send, m.send-tl.Origin)
			tl.Messages.Recv = append(tl.Messages.Recv, b.exit-tl.Origin)
		}
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

// reportSiteIDs numbers call sites as build does for the SRC ids: by key,
// over every call site used on any rank (level 0 holds them all).
func reportSiteIDs(reps []*replayer) map[string]int {
	all := map[string]bool{}
	for _, rp := range reps {
		if rp == nil || rp.defs == nil {
			continue
		}
		keys := &siteKeyer{rp: rp, cache: map[[2]uint32]string{}, refs: map[string]siteRef{}}
		rp.tr.Root().Walk(func(n *rnode) {
			for id := range n.Value.sites {
				if s := &n.Value.sites[id]; s.used {
					all[keys.key(uint32(id), s.fn)] = true
				}
			}
			for id, s := range n.Value.bigSites {
				all[keys.key(id, s.fn)] = true
			}
		})
	}
	ks := make([]string, 0, len(all))
	for k := range all {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	ids := make(map[string]int, len(ks))
	for i, k := range ks {
		ids[k] = i + 1
	}
	return ids
}
