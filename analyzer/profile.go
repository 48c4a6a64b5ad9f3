package analyzer

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
)

// The profile views (report.RunFacts, report.Profile): what the replay adds
// per call is a few compares and adds on the call site's accumulator
// (profile) and an array increment per message sent (sent); everything else
// is derived when the report is built.

// profAcc is a processor's profile accumulators of one interval (nil
// until its first message or gap): messages sent by communicator, messages
// received by size, and the gaps between calls.
type profAcc struct {
	comms []*commSent // in order of first message
	last  *commSent   // the communicator of the latest send
	sizes []sizeBin   // by sizeBinOf of the bytes
	gaps  gapHist
}

// maxComms bounds the communicators told apart per processor and
// interval (a program may make a new one every iteration): the messages on
// further ones count under otherComms. Memory stays within maxComms + 1
// times the world matrix's row.
const maxComms = 16

// otherComms stands for the communicators beyond maxComms (no real
// communicator has this id: the top bit marks MPI_COMM_SELF, whose id is
// 1<<63 | rank).
const otherComms = math.MaxUint64

// commSent counts the messages sent on communicator id by destination
// world rank (of n): in to[dst]; past denseSentRanks ranks in sp instead,
// by destination, since a rank sends to few of them and a slice of every
// rank per rank and communicator would grow with the square of the ranks.
type commSent struct {
	id uint64
	n  int
	to []sentPair
	sp map[int32]sentPair
}

// sentPair is the messages sent to one destination and their bytes.
type sentPair struct{ msgs, bytes int64 }

// denseSentRanks is the most ranks whose messages are counted in a
// slice by destination (commSent).
const denseSentRanks = 1024

// add counts msgs messages of bytes bytes to world rank dst.
func (c *commSent) add(dst int32, msgs, bytes int64) {
	if c.to != nil {
		t := &c.to[dst]
		t.msgs += msgs
		t.bytes += bytes
		return
	}
	v := c.sp[dst]
	v.msgs += msgs
	v.bytes += bytes
	c.sp[dst] = v
}

// each calls f with every destination messages were counted to (the
// dense counts' nonzero ones), in no particular order.
func (c *commSent) each(f func(dst int, msgs, bytes int64)) {
	if c.to != nil {
		for d, t := range c.to {
			if t.msgs != 0 || t.bytes != 0 {
				f(d, t.msgs, t.bytes)
			}
		}
		return
	}
	for d, v := range c.sp {
		f(int(d), v.msgs, v.bytes)
	}
}

// sizeBin is the messages received of one size class: how many, their
// bytes, and their summed latency (ns from send entry to the exit of the
// call that received them, on the corrected global clock).
type sizeBin struct {
	n, bytes, lat int64
}

// sizeBinOf is the power-of-two class of a message of b bytes: 0 for
// empty messages, k for 2^(k−1) ≤ b < 2^k.
func sizeBinOf(b uint64) int { return bits.Len64(b) }

// profRank is one rank's profile state during the replay.
type profRank struct {
	// gapFrom is the local exit of the rank's previous call (hasPrev).
	gapFrom int64
	hasPrev bool
	// rcvd are the messages the current call received: send entry,
	// bytes.
	rcvd []rcvMsg
	// pendMsgs are the messages the calls kept for backward amortization
	// received (clc.go), by index in replayer.pend.
	pendMsgs []pendMsg
	gen      uint32 // numbers amortizations (siteAcc.amGen)
	// gaps collects the gaps of interval gapAcc until the rank's calls
	// go to another interval (flushGaps): kept with the rank, it stays in
	// the cache while the rank's calls are replayed.
	gaps   gapHist
	gapAcc *acc
}

type rcvMsg struct {
	t     int64
	bytes uint64
}

type pendMsg struct {
	ev  int32 // index in replayer.pend
	bin int32
}

func (a *acc) profAcc() *profAcc {
	if a.prof == nil {
		a.prof = &profAcc{}
	}
	return a.prof
}

// gapTo adds the gap in local ns between the rank's previous call and e,
// charged to interval a, and makes e the previous call (skipGap for a
// call that is not charged). The gap is taken on the rank's own clock: the
// clock condition's corrections concern times compared across ranks, and
// backward amortization would stretch a gap that the rank's clock
// measured. It runs when the call is charged, not when its replay begins:
// a rank's calls are charged in the order they begin (a call stopped on the
// worker's stack is charged before the next one begins); charge does the
// common case itself. The first call has no gap before it. A folded run
// whose trace gives its inner gaps (traceformat.AttrInnerGaps: a run of
// calls − 1 gaps between its calls, summing to inner) ends calls gaps, not
// one: the gap before its first call is the recorded one minus inner
// (which it included), and n = calls − 1 more gaps sum to inner. Without
// the attribute (traces before format 2.1) a run ends one gap, which holds
// its inner ones.
func (pr *profRank) gapTo(a *acc, e *traceformat.Event) {
	g, inner, n := int64(-1), int64(0), int64(0)
	if pr.hasPrev {
		g = max(0, e.Entry-pr.gapFrom)
	}
	if e.Attr&traceformat.AttrInnerGaps != 0 && e.Calls > 1 {
		n, inner = int64(e.Calls)-1, max(0, e.InnerGaps)
		if g >= 0 {
			// (A consistent trace has inner ≤ g: the run's first call
			// entered after the previous call's exit.)
			inner = min(inner, g)
			g -= inner
		}
	}
	pr.skipGap(e)
	if g < 0 && n == 0 {
		return
	}
	if a != pr.gapAcc {
		pr.flushGaps()
		pr.gapAcc = a
	}
	if g >= 0 && !pr.gaps.tryAdd(g) {
		pr.gaps.add(g, 1)
	}
	if n > 0 {
		pr.gaps.addRun(inner, n)
	}
}

// skipGap makes e the previous call without counting the gap before it
// (a call before the program's start or after its end, or one that
// delimits it, an interval or a section). (max with gapFrom: on a
// multi-threaded rank another thread's call may still be in MPI.) The
// first call sets gapFrom outright: a local clock may read negative times
// (a trace's times are signed), which a max with gapFrom's zero value
// would lose, making every later gap 0.
func (pr *profRank) skipGap(e *traceformat.Event) {
	if !pr.hasPrev {
		pr.gapFrom = e.Entry
	}
	pr.gapFrom, pr.hasPrev = max(pr.gapFrom, e.Entry, e.Exit), true
}

// The profile of a call on its call site (charge does it): the per call
// minimum and maximum (a folded run of polls counts as calls of its mean
// duration) and the recorded send and receive buffer sizes. A call that
// lowers the minimum (or is the site's first) leaves the minimum before it
// for backward amortization (lowerMin).

// lowerMin makes d the shortest call of site s, and leaves the shortest
// before it (math.MaxInt64 for none) for backward amortization, which
// restores it before it applies the moved durations (figMin,
// amortizeProfile): a record for the event about to be kept, dropped with
// the pending records if the event becomes a fixed point instead. At the
// site's first call in the interval (count 0: only charge adds to it) it
// also marks the site used, with fn, its calls' function: a site id has
// one (sitefns.go), so that its later calls need not store them again.
func (rp *replayer) lowerMin(s *siteAcc, d int64, fn uint32) {
	prev := int64(math.MaxInt64)
	if s.count > 0 {
		prev = s.minCall
	} else {
		s.used, s.fn = true, fn
	}
	g := rp.newFig()
	g.ev, g.kind, g.wo, g.v = int32(len(rp.pend)), figMin, false, prev
	s.minCall = d
}

// got notes a message the current call received: its send's entry t and
// recorded bytes.
func (rp *replayer) got(t int64, bytes uint64) {
	rp.pr.rcvd = append(rp.pr.rcvd, rcvMsg{t, bytes})
}

// flushGaps adds the gaps collected to their interval; at every change of
// interval and at the end of the replay.
func (pr *profRank) flushGaps() {
	if pr.gapAcc != nil && len(pr.gaps.c) > 0 {
		pr.gapAcc.profAcc().gaps.merge(&pr.gaps)
	}
	pr.gaps = gapHist{c: pr.gaps.c[:0]}
}

// profileRecvd adds the messages the current call received (rcvd: their
// latency up to its final exit) to interval a and, when the call was kept
// for backward amortization (the last of replayer.pend), notes them for
// amortizeProfile; it empties rcvd.
func (rp *replayer) profileRecvd(a *acc, exit int64, kept bool) {
	p := a.profAcc()
	for _, m := range rp.pr.rcvd {
		b := sizeBinOf(m.bytes)
		for len(p.sizes) <= b {
			p.sizes = append(p.sizes, sizeBin{})
		}
		sb := &p.sizes[b]
		sb.n++
		sb.bytes += int64(m.bytes)
		sb.lat += exit - m.t
		if kept {
			rp.pr.pendMsgs = append(rp.pr.pendMsgs, pendMsg{ev: int32(len(rp.pend) - 1), bin: int32(b)})
		}
	}
	rp.pr.rcvd = rp.pr.rcvd[:0]
}

// amortizeProfile redoes pending event i's profile figures for its moved
// times ne, nx in interval a (clc.go amortize; called for every pending
// event, in order, before p's times change): its site's per-call extremes
// and the latency of the messages it received. Durations only grow under
// amortization, so the maximum takes the new duration; the minimum, which
// amortize restored to what it was before the site's first pending call
// that lowered it (a figMin record), takes the pending calls' new
// durations again.
func (rp *replayer) amortizeProfile(a *acc, i int, p *pendEv, s *siteAcc, ne, nx int64, cur *int) {
	d := nx - ne
	if p.calls > 1 {
		d /= int64(p.calls)
	}
	s.minCall = min(s.minCall, d)
	s.maxCall = max(s.maxCall, d)
	pm := rp.pr.pendMsgs
	for *cur < len(pm) && int(pm[*cur].ev) == i {
		a.prof.sizes[pm[*cur].bin].lat += nx - p.exit
		*cur++
	}
}

// sent counts a message posted on communicator comm to world rank dst in
// interval a; first in its common case (sentLast), a message on the
// communicator of the interval's previous one, counted by destination in
// a slice.
func (rp *replayer) sent(a *acc, comm uint64, dst int32, bytes uint64) {
	if a.sentLast(comm, dst, bytes) {
		return
	}
	p := a.profAcc()
	c := p.last
	if c == nil || c.id != comm {
		c = p.commOf(comm, int(rp.nranks))
	}
	if uint32(dst) < uint32(rp.nranks) {
		c.add(dst, 1, int64(bytes))
	}
}

// sentLast is sent's common case, inlined where a message is posted (the
// call cost more than it): false, counting nothing, when the message is
// not on the communicator of the interval's previous one or not counted
// by destination in a slice.
func (a *acc) sentLast(comm uint64, dst int32, bytes uint64) bool {
	if p := a.prof; p != nil {
		if c := p.last; c != nil && c.id == comm && uint32(dst) < uint32(len(c.to)) {
			t := &c.to[dst]
			t.msgs++
			t.bytes += int64(bytes)
			return true
		}
	}
	return false
}

func (p *profAcc) commOf(id uint64, nranks int) *commSent {
	for _, c := range p.comms {
		if c.id == id {
			p.last = c
			return c
		}
	}
	if len(p.comms) >= maxComms && id != otherComms {
		return p.commOf(otherComms, nranks)
	}
	c := &commSent{id: id, n: nranks}
	if nranks <= denseSentRanks {
		c.to = make([]sentPair, nranks)
	} else {
		c.sp = map[int32]sentPair{}
	}
	p.comms = append(p.comms, c)
	p.last = c
	return c
}

// addProf adds the profile accumulators s to *d.
func addProf(d **profAcc, s *profAcc) {
	if s == nil {
		return
	}
	if *d == nil {
		*d = &profAcc{}
	}
	t := *d
	for _, c := range s.comms {
		dc := t.commOf(c.id, c.n)
		c.each(func(d int, msgs, bytes int64) { dc.add(int32(d), msgs, bytes) })
	}
	for len(t.sizes) < len(s.sizes) {
		t.sizes = append(t.sizes, sizeBin{})
	}
	for i, b := range s.sizes {
		t.sizes[i].n += b.n
		t.sizes[i].bytes += b.bytes
		t.sizes[i].lat += b.lat
	}
	t.gaps.merge(&s.gaps)
}

// mergeProfile adds a call site's per-call extremes and bytes (over count
// calls) to d, before d.count is updated.
func (d *siteTot) mergeProfile(count, minCall, maxCall, bytes int64) {
	d.bytes += bytes
	if count == 0 {
		return
	}
	if d.count == 0 || minCall < d.minCall {
		d.minCall = minCall
	}
	d.maxCall = max(d.maxCall, maxCall)
}

// hostNames is the host of each world rank ("" when its trace is missing).
func hostNames(byRank []*rankFile) []string {
	hosts := make([]string, len(byRank))
	for r, f := range byRank {
		if f != nil && f.hdr != nil {
			hosts[r] = f.hdr.Hostname
		}
	}
	return hosts
}

// runFacts gathers the run's facts from the trace headers, the clock model
// and the replays.
func runFacts(ranks []*rankResult, byRank []*rankFile, model *clocks.Model) report.RunFacts {
	var rf report.RunFacts
	run := &report.Run{Command: []string{}, Ranks: []report.TraceSize{}}
	var clk []string
	hostIdx, progIdx := map[string]int{}, map[string]int{}
	for r, f := range byRank {
		if f == nil || f.hdr == nil {
			continue
		}
		h := f.hdr
		if run.Program == "" && run.TracerVersion == "" {
			run.MPI = mpiName(h.MpiImplementation, h.MpiLibraryVersion)
			run.MPILibraryVersion = h.MpiLibraryVersion
			run.Command = append(run.Command, h.Args...)
			run.Program = h.Program
			if h.StartUnixNs != 0 {
				run.Start = time.Unix(0, h.StartUnixNs).UTC().Format(time.RFC3339)
			}
			run.TracerVersion = h.TracerVersion
			run.BatchJob = h.BatchJob
		}
		if c := h.GetClock().GetSource().String(); !slices.Contains(clk, c) {
			clk = append(clk, c)
		}
		if r < len(model.ErrorNs) {
			run.SyncError = max(run.SyncError, sec(model.ErrorNs[r]))
		}
		ts := report.TraceSize{Rank: r}
		if st, err := os.Stat(f.path); err == nil {
			ts.Bytes = st.Size()
		}
		if rp := ranks[r]; rp != nil {
			ts.Events = rp.events + rp.otherThreads
		}
		run.TraceBytes += ts.Bytes
		run.Events += ts.Events
		run.Ranks = append(run.Ranks, ts)
		i, ok := hostIdx[h.Hostname]
		if !ok {
			i = len(rf.Hosts)
			hostIdx[h.Hostname] = i
			rf.Hosts = append(rf.Hosts, report.Host{Host: h.Hostname, Ranks: []int{}})
		}
		rf.Hosts[i].Ranks = append(rf.Hosts[i].Ranks, r)
		j, ok := progIdx[h.Program]
		if !ok {
			j = len(rf.Programs)
			progIdx[h.Program] = j
			rf.Programs = append(rf.Programs, report.Program{Program: h.Program, Ranks: []int{}})
		}
		rf.Programs[j].Ranks = append(rf.Programs[j].Ranks, r)
	}
	if len(rf.Programs) < 2 {
		rf.Programs = nil
	}
	run.Clock = strings.Join(clk, ", ")
	if run.Events > 0 {
		run.BytesPerEvent = float64(run.TraceBytes) / float64(run.Events)
	}
	rf.Run = run
	return rf
}

// mpiName is a short name of the MPI library: the first line of its
// version string up to the first comma, spaces collapsed ("Open MPI
// v4.1.2", "MPICH Version: 4.0"), prefixed by the implementation's name
// when the line does not start with it.
func mpiName(impl, version string) string {
	line, _, _ := strings.Cut(version, "\n")
	line, _, _ = strings.Cut(line, ",")
	line = strings.Join(strings.Fields(line), " ")
	switch {
	case line == "":
		return impl
	case impl == "" || strings.HasPrefix(line, impl):
		return line
	}
	return impl + " " + line
}

// profileCtx is what the profile views of every interval share: the host
// of each world rank ("" when its trace is missing) and the names of the
// communicators.
type profileCtx struct {
	hosts []string
	comms map[uint64]commLabel
}

func newProfileCtx(ranks []*rankResult, byRank []*rankFile) *profileCtx {
	return &profileCtx{hosts: hostNames(byRank), comms: commNames(ranks)}
}

// commLabel is a communicator's name and world ranks (both groups).
type commLabel struct {
	name  string
	inter bool
	ranks []int
}

// commNames names the communicators of the run from the definitions of
// each one's lowest present rank (docs/report-format.md, comm_matrices):
// every rank that defines a communicator has it by the same global id.
func commNames(ranks []*rankResult) map[uint64]commLabel {
	out := map[uint64]commLabel{}
	for _, rp := range ranks {
		if rp == nil || rp.defs == nil {
			continue
		}
		names := make([]string, len(rp.defs.Comms))
		type madeBy struct{ parent, fn uint32 }
		count := map[madeBy]int{}
		for _, c := range rp.defs.Comms {
			if c != nil && c.Id != 0 && c.Id>>63 == 0 {
				count[madeBy{c.Parent, c.CreatedBy}]++
			}
		}
		seen := map[madeBy]int{}
		for local, c := range rp.defs.Comms {
			if c == nil {
				continue
			}
			switch {
			case c.Id == 0:
				names[local] = "world"
			case c.Id>>63 != 0:
				names[local] = "self"
			default:
				k := madeBy{c.Parent, c.CreatedBy}
				seen[k]++
				fn := "?"
				if f := rp.defs.Function(c.CreatedBy); f != nil {
					fn = f.Name
				}
				fn = strings.TrimPrefix(strings.TrimPrefix(fn, "MPI_"), "Comm_")
				parent := "?"
				if int(c.Parent) < local && names[c.Parent] != "" {
					parent = names[c.Parent]
				}
				n := strings.ToLower(fn)
				if count[k] > 1 {
					n += " #" + strconv.Itoa(seen[k])
				}
				names[local] = n + " of " + parent
			}
			if _, ok := out[c.Id]; ok {
				continue
			}
			var ranks []int
			for _, m := range c.Members {
				if m != traceformat.OtherWorld {
					ranks = append(ranks, int(m))
				}
			}
			for _, m := range c.RemoteMembers {
				if m != traceformat.OtherWorld {
					ranks = append(ranks, int(m))
				}
			}
			slices.Sort(ranks)
			out[c.Id] = commLabel{name: names[local], inter: c.Inter, ranks: slices.Compact(ranks)}
		}
	}
	return out
}

// profileInterval fills an interval's profile view from its processors'
// call sites, messages and gaps.
func profileInterval(iv *report.Interval, g *gnode, pc *profileCtx) {
	ranks := make([]int, 0, len(iv.Ranks))
	for _, rk := range iv.Ranks {
		ranks = append(ranks, rk.Rank)
	}
	iv.Functions = functions(g, ranks)
	// Every processor's call mix in one pass over the functions (each
	// lists every processor: a pass per processor grew with the square
	// of the processors).
	mixes := map[int]*rankMix{}
	for _, f := range iv.Functions {
		for _, fr := range f.Ranks {
			m := mixes[fr.Rank]
			if m == nil {
				m = &rankMix{}
				mixes[fr.Rank] = m
			}
			m.mix = append(m.mix, report.CallMix{Function: f.Function, Calls: fr.Calls, Time: fr.Time})
			m.calls += fr.Calls
			m.time += fr.Time
		}
	}
	for i := range iv.Ranks {
		r := iv.Ranks[i].Rank
		iv.Ranks[i].RankProfile = rankProfile(mixes[r], g.ranks[r])
	}
	hosts := pc.hosts
	n := len(hosts)
	var m *report.CommMatrix
	var tr report.Traffic
	sent := false
	var sizes []sizeBin
	byComm := map[uint64]*report.CommMatrixOn{}
	// pairs are the nonzero cells of a matrix too large to give dense,
	// one per sender, communicator and receiver until merged below.
	var pairs []report.CommPair
	for _, r := range ranks {
		p := g.ranks[r].prof
		if p == nil {
			continue
		}
		for i, b := range p.sizes {
			for len(sizes) <= i {
				sizes = append(sizes, sizeBin{})
			}
			sizes[i].n += b.n
			sizes[i].bytes += b.bytes
			sizes[i].lat += b.lat
		}
		if len(p.comms) == 0 || p.comms[0].n != n {
			continue
		}
		sent = true
		if m == nil && n <= maxMatrixRanks {
			m = &report.CommMatrix{Messages: square(n), Bytes: square(n)}
		}
		for _, c := range p.comms {
			c.each(func(d int, msgs, bytes int64) {
				if m != nil {
					m.Messages[r][d] += msgs
					m.Bytes[r][d] += bytes
				} else {
					pairs = append(pairs, report.CommPair{Sender: r, Receiver: d, Messages: msgs, Bytes: bytes})
				}
				v := &tr.InterNode
				if hosts[r] != "" && hosts[r] == hosts[d] {
					v = &tr.IntraNode
				}
				v.Messages += msgs
				v.Bytes += bytes
			})
			if m != nil {
				commMatrixAdd(byComm, pc.comms, c, r)
			}
		}
	}
	if sent {
		iv.Traffic = &tr
	}
	iv.CommPairs = mergePairs(pairs)
	if m != nil {
		iv.CommMatrix = m
		iv.CommMatrices = make([]report.CommMatrixOn, 0, len(byComm))
		for _, cm := range byComm {
			iv.CommMatrices = append(iv.CommMatrices, *cm)
		}
		sort.Slice(iv.CommMatrices, func(i, j int) bool {
			a, b := &iv.CommMatrices[i], &iv.CommMatrices[j]
			if (a.Comm == "world") != (b.Comm == "world") {
				return a.Comm == "world"
			}
			if a.Comm != b.Comm {
				return a.Comm < b.Comm
			}
			return slices.Compare(a.Ranks, b.Ranks) < 0
		})
	}
	for i, b := range sizes {
		if b.n == 0 {
			continue
		}
		sb := report.SizeBin{Messages: b.n, Bytes: b.bytes, Latency: sec(b.lat) / float64(b.n)}
		if i > 0 {
			sb.MinBytes, sb.MaxBytes = 1<<(i-1), 1<<(i-1)+(1<<(i-1)-1)
		}
		if b.lat > 0 {
			sb.Throughput = float64(b.bytes) / sec(b.lat)
		}
		iv.MessageSizes = append(iv.MessageSizes, sb)
	}
}

// maxMatrixRanks is the most ranks whose interval profiles have
// communication matrices: a matrix has a cell per pair of ranks, and a
// report of a larger run would be mostly zeros (of gigabytes past ten
// thousand ranks). Larger runs get the nonzero cells as pairs
// (CommPairs), not split by communicator; traffic is given whatever the
// ranks.
const maxMatrixRanks = 1024

// mergePairs sorts pairs by sender then receiver and sums the entries of
// the same pair (a sender's messages to one receiver on several
// communicators), in place; nil when there are none.
func mergePairs(pairs []report.CommPair) []report.CommPair {
	if len(pairs) == 0 {
		return nil
	}
	slices.SortFunc(pairs, func(a, b report.CommPair) int {
		if c := cmp.Compare(a.Sender, b.Sender); c != 0 {
			return c
		}
		return cmp.Compare(a.Receiver, b.Receiver)
	})
	out := pairs[:1]
	for _, p := range pairs[1:] {
		last := &out[len(out)-1]
		if p.Sender == last.Sender && p.Receiver == last.Receiver {
			last.Messages += p.Messages
			last.Bytes += p.Bytes
			continue
		}
		out = append(out, p)
	}
	return out
}

func square(n int) [][]int64 {
	v := make([][]int64, n)
	for i := range v {
		v[i] = make([]int64, n)
	}
	return v
}

// commMatrixAdd adds sender r's messages on one communicator c (of c.n world
// ranks) to its matrix in byComm, indexed by the communicator's ranks.
func commMatrixAdd(byComm map[uint64]*report.CommMatrixOn, names map[uint64]commLabel, c *commSent, r int) {
	n := c.n
	cm := byComm[c.id]
	if cm == nil {
		nm, ok := names[c.id]
		if c.id == otherComms {
			nm, ok = commLabel{name: "other communicators"}, false
		}
		if !ok {
			// Beyond maxComms, or not defined in any trace (cannot
			// happen for a message the replay posted): every world rank.
			if nm.name == "" {
				nm.name = fmt.Sprintf("communicator %#x", c.id)
			}
			for d := range n {
				nm.ranks = append(nm.ranks, d)
			}
		}
		k := len(nm.ranks)
		cm = &report.CommMatrixOn{Comm: nm.name, Size: k, Inter: nm.inter, Ranks: nm.ranks, Messages: square(k), Bytes: square(k)}
		byComm[c.id] = cm
	}
	i, ok := slices.BinarySearch(cm.Ranks, r)
	if !ok {
		return
	}
	c.each(func(d int, msgs, bytes int64) {
		if j, ok := slices.BinarySearch(cm.Ranks, d); ok {
			cm.Messages[i][j] += msgs
			cm.Bytes[i][j] += bytes
		}
	})
}

// rankMix is a processor's calls by function, in the order of the
// interval's functions, and their totals.
type rankMix struct {
	mix   []report.CallMix
	calls int64
	time  float64
}

// rankProfile is a processor's (t's) call mix m (nil: none) and grain.
func rankProfile(m *rankMix, t *rankTot) report.RankProfile {
	var rp report.RankProfile
	var calls int64
	var time float64
	if m != nil {
		rp.CallMix, calls, time = m.mix, m.calls, m.time
	}
	for i := range rp.CallMix {
		c := &rp.CallMix[i]
		if calls > 0 {
			c.CallShare = float64(c.Calls) / float64(calls)
		}
		if time > 0 {
			c.TimeShare = c.Time / time
		}
	}
	sort.SliceStable(rp.CallMix, func(i, j int) bool { return rp.CallMix[i].Time > rp.CallMix[j].Time })
	if p := t.prof; p != nil {
		rp.Gaps = p.gaps.count()
		rp.GapMean, rp.GapMedian = p.gaps.mean()/1e9, p.gaps.median()/1e9
	}
	return rp
}

// functions sums an interval's call sites by MPI function, by decreasing
// time (then name).
func functions(g *gnode, ranks []int) []report.Function {
	type fnTot struct {
		f                   report.Function
		min, max, calls, ns int64
	}
	by := map[string]*fnTot{}
	for _, r := range ranks {
		per := map[string]*report.FunctionRank{}
		perNs := map[string]int64{}
		var order []string
		// Sums, minima and maxima: the sites' order does not matter.
		for _, s := range g.ranks[r].sites {
			ft := by[s.fn]
			if ft == nil {
				ft = &fnTot{f: report.Function{Function: s.fn, Ranks: []report.FunctionRank{}}}
				by[s.fn] = ft
			}
			if s.count > 0 {
				if ft.calls == 0 || s.minCall < ft.min {
					ft.min = s.minCall
				}
				ft.max = max(ft.max, s.maxCall)
			}
			ft.calls += s.count
			pr := per[s.fn]
			if pr == nil {
				pr = &report.FunctionRank{Rank: r}
				per[s.fn] = pr
				order = append(order, s.fn)
			}
			pr.Calls += s.count
			perNs[s.fn] += s.time
			pr.Bytes += s.bytes
		}
		for _, fn := range order {
			pr := per[fn]
			ft := by[fn]
			pr.Time = sec(perNs[fn])
			ft.ns += perNs[fn]
			ft.f.Calls += pr.Calls
			ft.f.Bytes += pr.Bytes
			ft.f.Ranks = append(ft.f.Ranks, *pr)
		}
	}
	out := make([]report.Function, 0, len(by))
	for _, ft := range by {
		ft.f.Time, ft.f.Min, ft.f.Max = sec(ft.ns), sec(ft.min), sec(ft.max)
		out = append(out, ft.f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Time != out[j].Time {
			return out[i].Time > out[j].Time
		}
		return out[i].Function < out[j].Function
	})
	return out
}
