package analyzer

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/dtpa/dtpa/report"
)

// unreceived is the messages of one sender, receiver and tag that were
// sent and never received, and the call site of the first of them.
type unreceived struct {
	src, dst, tag int32
	n             int
	site          uint32 // file-local to the sender
}

// maxUnreceivedWarnings bounds the unreceived (sender, receiver, tag)
// triples described one by one; the rest are counted in one line.
const maxUnreceivedWarnings = 10

// unreceivedMsgs lists the messages still queued once every replay has
// finished, by sender, receiver and tag.
func (x *exchange) unreceivedMsgs() []unreceived {
	by := map[p2pKey]*unreceived{}
	for _, rs := range x.ranks {
		for k, f := range rs.inbox {
			n := f.pending()
			if n <= 0 {
				continue
			}
			// The first message not taken: base, unless taken out of
			// order, then the next one.
			m := f.base
			for _, o := range f.ooo {
				if o == m {
					m++
				}
			}
			r := f.ring.Load()
			u := by[p2pKey{src: k.src, dst: k.dst, tag: k.tag}]
			if u == nil {
				u = &unreceived{src: k.src, dst: k.dst, tag: k.tag, site: r.m[m&r.mask].s.site}
				by[p2pKey{src: k.src, dst: k.dst, tag: k.tag}] = u
			}
			u.n += n
		}
	}
	// Messages sent after their receiver's replay had finished come
	// after those still queued for it.
	for k, d := range x.dropped {
		if u := by[k]; u != nil {
			u.n += d.n
		} else {
			by[k] = d
		}
	}
	out := make([]unreceived, 0, len(by))
	for _, u := range by {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b unreceived) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst), cmp.Compare(a.tag, b.tag))
	})
	return out
}

// dropSend counts a message sent to rank k.dst after its replay had
// finished, from call site site of the sender.
func (x *exchange) dropSend(k p2pKey, site uint32) {
	x.droppedSends.Add(1)
	x.dropMu.Lock()
	defer x.dropMu.Unlock()
	if x.dropped == nil {
		x.dropped = map[p2pKey]*unreceived{}
	}
	key := p2pKey{src: k.src, dst: k.dst, tag: k.tag}
	if u := x.dropped[key]; u != nil {
		u.n++
	} else {
		x.dropped[key] = &unreceived{src: k.src, dst: k.dst, tag: k.tag, n: 1, site: site}
	}
}

// undropSend takes back a message dropSend counted, whose send was
// cancelled. The call site named for the key stays that of its first
// message, cancelled or not.
func (x *exchange) undropSend(k p2pKey) {
	x.dropMu.Lock()
	defer x.dropMu.Unlock()
	key := p2pKey{src: k.src, dst: k.dst, tag: k.tag}
	u := x.dropped[key]
	if u == nil {
		return
	}
	x.droppedSends.Add(-1)
	if u.n--; u.n == 0 {
		delete(x.dropped, key)
	}
}

// unreceivedWarnings names, for each sender, receiver and tag, the
// messages never received and the call site of the first, as the report
// lists it (SRC id, function, file:line in the whole program's SRC).
func unreceivedWarnings(us []unreceived, tb *siteTable, rep *report.Report) []string {
	if len(us) == 0 {
		return nil
	}
	where := func(rank int32, site uint32) string {
		id := tb.srcOf(rank, site)
		if id == 0 || len(rep.Intervals) == 0 {
			return ""
		}
		for i := range rep.Intervals[0].SRC {
			s := &rep.Intervals[0].SRC[i]
			if s.ID != id {
				continue
			}
			at := fmt.Sprintf(", sent by %s [SRC %d]", s.Function, id)
			if f, l := report.Position(s); f != "" {
				at = fmt.Sprintf(", sent by %s at %s:%d [SRC %d]", s.Function, filepath.Base(f), l, id)
			}
			return at
		}
		return ""
	}
	var out []string
	rest, restN := 0, 0
	for i, u := range us {
		if i >= maxUnreceivedWarnings {
			rest++
			restN += u.n
			continue
		}
		what := "1 message"
		if u.n > 1 {
			what = fmt.Sprintf("%d messages", u.n)
		}
		out = append(out, fmt.Sprintf("Rank %d: %s to rank %d with tag %d never received in the traces%s.",
			u.src, what, u.dst, u.tag, where(u.src, u.site)))
	}
	if rest > 0 {
		out = append(out, fmt.Sprintf("%d more message(s) between %d other pairs of ranks and tags never received in the traces.", restN, rest))
	}
	return out
}
