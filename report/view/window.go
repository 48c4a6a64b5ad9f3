package view

import (
	"math"

	"github.com/dtpa/dtpa/report"
)

// Window is the answer to a window request: times in ns since the
// timeline's origin. With Detail every call overlapping [From, To] is in
// its lane, with the messages those calls received and the interval
// executions there; without, each lane has its Overview of Bins pixels
// over [From, To).
type Window struct {
	From   int64   `json:"from"`
	To     int64   `json:"to"`
	Detail bool    `json:"detail"`
	Bins   int     `json:"bins"`
	Calls  int64   `json:"calls"` // calls in the window (with Detail exact, else at most)
	Lanes  []WLane `json:"lanes"`
	// Messages received by the window's calls (Detail only).
	Messages report.Messages `json:"messages"`
}

// WLane is one rank's part of a Window, its columns as report.Lane's.
type WLane struct {
	Rank     int              `json:"rank"`
	Start    []int64          `json:"start"`
	Dur      []int64          `json:"dur"`
	Lost     []int64          `json:"lost"`
	Func     []int            `json:"func"`
	Site     []int            `json:"site"`
	Bytes    []int64          `json:"bytes"`
	Peer     []int            `json:"peer"`
	Coll     []int            `json:"coll"`
	Ties     *report.CollTies `json:"ties,omitempty"`
	Thread   []int            `json:"thread,omitempty"` // absent when every call is thread 0's
	Spans    report.Spans     `json:"spans"`
	Overview *report.Overview `json:"overview,omitempty"`
}

func newWLane(rank int) WLane {
	return WLane{Rank: rank, Start: []int64{}, Dur: []int64{}, Lost: []int64{}, Func: []int{}, Site: []int{},
		Bytes: []int64{}, Peer: []int{}, Coll: []int{},
		Spans: report.Spans{Start: []int64{}, Dur: []int64{}, Interval: []int{}, Level: []int{}}}
}

// Window answers the window [from, to] (ns since the origin) for a
// display px pixels wide: in detail when at most the detail limit of
// calls lie in it, else aggregated per pixel, by reading the window's
// calls when there are at most the scan limit, else from the histograms.
func (s *Store) Window(from, to int64, px int) (*Window, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	from, to = max(from, 0), max(to, from+1)
	gf, gt := s.origin+from, s.origin+to
	var bound int64
	for _, r := range s.laneOrder {
		bound += count(s.ranks[r].calls.chunks, gf, gt)
	}
	w := &Window{From: from, To: to, Calls: bound, Lanes: []WLane{},
		Messages: report.Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}}
	if bound <= 2*int64(s.detailLimit) {
		ok, err := s.detail(w, gf, gt)
		if err != nil || ok {
			return w, err
		}
		w.Lanes, w.Messages = []WLane{}, report.Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}
		w.Calls = bound
	}
	return w, s.overview(w, gf, gt, px, bound <= int64(s.scanLimit))
}

// detail fills w with the calls of [gf, gt]; false when there are more
// than the detail limit.
func (s *Store) detail(w *Window, gf, gt int64) (bool, error) {
	colls := map[uint64]int{}
	inst := func(h uint64) int {
		id, ok := colls[h]
		if !ok {
			id = len(colls)
			colls[h] = id
		}
		return id
	}
	var n int64
	for _, r := range s.laneOrder {
		ln := newWLane(r)
		sites := s.sites[r]
		fns := s.funcs[r]
		err := s.calls(r, gf, gt, func(c *wcall, msgs []wmsg) {
			n++
			if n > int64(s.detailLimit) {
				return
			}
			ln.Start = append(ln.Start, c.start-s.origin)
			ln.Dur = append(ln.Dur, c.dur)
			ln.Lost = append(ln.Lost, c.lost)
			f, site := 0, 0
			if c.fn < len(fns) {
				f = fns[c.fn]
			}
			if c.site < len(sites) {
				site = sites[c.site]
			}
			ln.Func = append(ln.Func, f)
			ln.Site = append(ln.Site, site)
			ln.Bytes = append(ln.Bytes, c.bytes)
			ln.Peer = append(ln.Peer, c.peer)
			id := -1
			if c.coll != 0 {
				id = inst(c.coll)
			}
			ln.Coll = append(ln.Coll, id)
			for _, t := range c.ties {
				if ln.Ties == nil {
					ln.Ties = &report.CollTies{Call: []int{}, Coll: []int{}, Done: []bool{}}
				}
				ln.Ties.Call = append(ln.Ties.Call, len(ln.Start)-1)
				ln.Ties.Coll = append(ln.Ties.Coll, inst(t.coll))
				ln.Ties.Done = append(ln.Ties.Done, t.done)
			}
			if c.thread != 0 && ln.Thread == nil {
				ln.Thread = make([]int, len(ln.Start)-1, cap(ln.Start))
			}
			if ln.Thread != nil {
				ln.Thread = append(ln.Thread, c.thread)
			}
			for _, m := range msgs {
				w.Messages.From = append(w.Messages.From, m.src)
				w.Messages.To = append(w.Messages.To, r)
				w.Messages.Send = append(w.Messages.Send, m.send-s.origin)
				w.Messages.Recv = append(w.Messages.Recv, m.rcv-s.origin)
			}
		})
		if err != nil {
			return false, err
		}
		if n > int64(s.detailLimit) {
			return false, nil
		}
		sp := &ln.Spans
		err = s.spans(r, gf, gt, func(start, dur int64, iv, level int) {
			if len(sp.Start) < s.detailLimit {
				sp.Start = append(sp.Start, start-s.origin)
				sp.Dur = append(sp.Dur, dur)
				sp.Interval = append(sp.Interval, iv)
				sp.Level = append(sp.Level, level)
			}
		})
		if err != nil {
			return false, err
		}
		w.Lanes = append(w.Lanes, ln)
	}
	w.Detail, w.Calls = true, n
	return true, nil
}

// overview fills w with each lane's time per kind in px pixels of [gf,
// gt): summed from the calls when scan, else resampled from the
// histogram.
func (s *Store) overview(w *Window, gf, gt int64, px int, scan bool) error {
	w.Bins = px
	pw := float64(gt-gf) / float64(px)
	for _, r := range s.laneOrder {
		var acc [nKinds][]float64
		for k := range acc {
			acc[k] = make([]float64, px)
		}
		// The histogram is as fine as a pixel: use it.
		if !scan || (s.binWidth(r) > 0 && float64(s.binWidth(r)) <= pw/2) {
			s.hists[r].resample(gf, gt, px, &acc)
		} else {
			spread := func(a, b int64, k int) {
				a, b = max(a, gf), min(b, gt)
				for a < b {
					j := int(float64(a-gf) / pw)
					if j >= px {
						j = px - 1
					}
					end := min(b, gf+int64(math.Ceil(float64(j+1)*pw)))
					if end <= a {
						end = b
					}
					acc[k][j] += float64(end - a)
					a = end
				}
			}
			err := s.calls(r, gf, gt, func(c *wcall, _ []wmsg) {
				spread(c.start, c.start+c.dur, c.kind)
				if c.lost > 0 {
					spread(c.start, c.start+min(c.lost, c.dur), kLost)
				}
			})
			if err != nil {
				return err
			}
		}
		var out [nKinds][]int64
		for k := range out {
			out[k] = make([]int64, px)
			for j, v := range acc[k] {
				out[k][j] = int64(math.Round(v))
			}
		}
		ln := newWLane(r)
		ln.Overview = &report.Overview{P2P: out[kP2P], Coll: out[kColl], Wait: out[kWait], Other: out[kOther], Lost: out[kLost]}
		w.Lanes = append(w.Lanes, ln)
	}
	return nil
}
