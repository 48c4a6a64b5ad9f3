package analyzer

import (
	"os"
	"slices"
	"sort"
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

// profile notes one call's duration and bytes on its call site: the per
// call minimum and maximum (a folded run of polls counts as calls of its
// mean duration) and the recorded send and receive buffer sizes.
func (s *siteAcc) profile(e *traceformat.Event, dur int64) {
	d := dur
	if e.Calls > 1 {
		d /= int64(e.Calls)
	}
	if s.count == 0 || d < s.minCall {
		s.minCall = d
	}
	if d > s.maxCall {
		s.maxCall = d
	}
	s.bytes += int64(e.SendBytes + e.RecvBytes)
}

// sent counts a message posted to world rank dst in interval a: the
// message in a.sentTo[dst], its bytes in a.sentTo[nranks+dst].
func (rp *replayer) sent(a *acc, dst int32, bytes uint64) {
	if a.sentTo == nil {
		a.sentTo = make([]int64, 2*int(rp.nranks))
	}
	if uint32(dst) < uint32(rp.nranks) {
		a.sentTo[dst]++
		a.sentTo[rp.nranks+dst] += int64(bytes)
	}
}

// addSent adds the message counts s to *d.
func addSent(d *[]int64, s []int64) {
	if s == nil {
		return
	}
	if *d == nil {
		*d = make([]int64, len(s))
	}
	for i, v := range s {
		(*d)[i] += v
	}
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
func runFacts(reps []*replayer, byRank []*rankFile, model *clocks.Model) report.RunFacts {
	var rf report.RunFacts
	run := &report.Run{Command: []string{}, Ranks: []report.TraceSize{}}
	var clk []string
	hostIdx := map[string]int{}
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
		if rp := reps[r]; rp != nil {
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

// profileInterval fills an interval's profile view from its processors'
// call sites and messages; hosts is the host of each world rank.
func profileInterval(iv *report.Interval, g *gnode, hosts []string) {
	ranks := make([]int, 0, len(iv.Ranks))
	for _, rk := range iv.Ranks {
		ranks = append(ranks, rk.Rank)
	}
	iv.Functions = functions(g, ranks)
	n := len(hosts)
	var m *report.CommMatrix
	var tr report.Traffic
	for _, r := range ranks {
		s := g.ranks[r].sentTo
		if len(s) != 2*n {
			continue
		}
		if m == nil {
			m = &report.CommMatrix{Messages: make([][]int64, n), Bytes: make([][]int64, n)}
			for i := range n {
				m.Messages[i], m.Bytes[i] = make([]int64, n), make([]int64, n)
			}
		}
		copy(m.Messages[r], s[:n])
		copy(m.Bytes[r], s[n:])
		for d := range n {
			v := &tr.InterNode
			if hosts[r] != "" && hosts[r] == hosts[d] {
				v = &tr.IntraNode
			}
			v.Messages += s[d]
			v.Bytes += s[n+d]
		}
	}
	if m != nil {
		iv.CommMatrix, iv.Traffic = m, &tr
	}
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
		for _, k := range sortedKeys(g.ranks[r].sites) {
			s := g.ranks[r].sites[k]
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
