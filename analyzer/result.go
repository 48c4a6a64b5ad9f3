package analyzer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
)

// The report is built from results, not from the replays themselves, so
// that several processes can each replay some of the ranks and send what
// they found to one process that builds the report (the distributed
// replay, dist.go): replayResult is everything the report needs from a
// replay once it has finished and been settled (settle), in a form that
// can be marshalled (result_codec.go) and merged (mergeResults).

// replayResult is what one replay process produced: the results of the
// ranks it replayed and its exchange's counts.
type replayResult struct {
	size  int           // the run's ranks
	ranks []*rankResult // by world rank; nil for the ranks not replayed here
	proc  procResult
}

// rankResult is one rank's replay as the report needs it: its interval
// tree with the accumulators, the sections it executed, its counters and
// warnings, and the definitions its call sites and communicators refer
// to.
type rankResult struct {
	rank int32
	// started: the rank's program started (the tree holds something).
	started bool
	root    *rnode
	// defs is nil when the trace could not be opened. Unmarshalled, its
	// call sites are frames and its modules hold their paths and build
	// ids only.
	defs   *traceformat.Definitions
	frames [][]siteFrame // siteKeyer.frames
	// unf are the return addresses of the calls the trace's footer says
	// were in progress (Footer.unfinished), mapped to modules as frames
	// while the definitions hold the modules' addresses.
	unf []siteFrame
	// unfPy are, for the calls in progress that C code below Python made
	// (UnfinishedCall.python_stack), the Python frame each is placed at
	// when its return address has no line (pythonFrame; mod -1: none),
	// by call; nil when there are no calls in progress.
	unfPy []siteFrame
	// crash is the stack of the thread whose fault signal ended the
	// process (Footer.crash), mapped to modules likewise; abort the stack
	// of the call site of its MPI_Abort (nil: none).
	crash, abort []siteFrame
	// exit is the stack from which the process called exit without
	// MPI_Finalize (Footer.exit), past the C library's frames (exitStack).
	exit []siteFrame
	// where is the stack of the thread that took the fatal signal which
	// ended a process that did not crash (Footer.interrupted), as crash.
	where []siteFrame
	// lastSite and lastFn are the call site (as counted) and function of
	// a single-threaded rank's last MPI call, with hasLast: where a crash
	// outside the program's own code (an mpi4py program's, one without
	// debug information) last was in it (report.Crash.LastCall).
	lastSite, lastFn uint32
	hasLast          bool
	// virt maps the virtual sites of the tree to their call sites
	// (siteFns, siteKeyer.virt); nil when there are none.
	virt map[uint32]uint32
	// secRuns and secAgg are replayer's (replay_sections.go): K and the
	// Insufficient Parallelism are computed once every rank's sections
	// are known (insufficientParallelism).
	secRuns []sectionRun
	secAgg  map[secAggKey]int64

	events, otherThreads, parks int64
	finalized                   bool
	last                        int64
	warns                       []string
	pcw                         map[string]uint32 // pcontrolWarnings.sites
	violations, worstViolation  int64
	amortized                   int64
	// unrep are the violations not repaired found on the rank's
	// rankSync, by class (unrSync …): their ranks may be other ranks'.
	unrep                   [unrClasses]unrepaired
	unmatchedRecvs          int64
	unmatchedColls          int64
	unknownReqs, noIcollReq int64
	otherWorld              int64
	// readErr is the sentence describing the error that stopped the
	// replay's reading (damage), "" when it read the trace to its end.
	readErr string
}

// The classes of the clock-condition violations the controlled logical
// clock does not repair (report.ClockViolations).
const (
	unrSync        = iota // a synchronous send completed before its receive was posted
	unrNonblocking        // a nonblocking collective completed before a start it depends on
	unrThreaded           // a multi-threaded process's blocking collective left before an entry it depends on
	unrClasses
)

// siteKeyer is the siteKeyer of the rank's call sites.
func (rr *rankResult) siteKeyer() *siteKeyer {
	k := newSiteKeyer(rr.defs)
	k.frames, k.virt = rr.frames, rr.virt
	return k
}

// procResult is what the report needs from one process's exchange. Each
// count is the process's share: merged results sum them.
type procResult struct {
	// sections counts the processors that completed each section
	// instance (exchange.sections).
	sections        map[sectionKey]int
	sectionOverflow bool
	sectionRuns     int // limits.sectionRuns, for the warning
	stalls          int64
	// unsent counts the messages sent and never received, unreceived
	// lists them by sender, receiver and tag.
	unsent     int64
	unreceived []unreceived
	unmatched  unmatchedColls
	openFiles  int
	reopens    int64
}

// collectResult takes the results of the replays reps (indexed by world
// rank, nil where not replayed) and of their exchange x, once s.run has
// returned and the replays have been settled (settle). The result shares
// the replays' interval trees and the exchange's counts: neither must
// change afterwards.
func collectResult(reps []*replayer, x *exchange) *replayResult {
	res := &replayResult{size: len(reps), ranks: make([]*rankResult, len(reps))}
	for r, rp := range reps {
		if rp == nil {
			continue
		}
		rr := &rankResult{
			rank: rp.rank, started: rp.tr.Started(), root: rp.tr.Root(), defs: rp.defs, virt: rp.sites.sites(),
			secRuns: rp.secRuns, secAgg: rp.secAgg,
			events: rp.events, otherThreads: rp.otherThreads, parks: x.ranks[r].parks,
			finalized: rp.finalized, last: rp.last, warns: rp.warns, pcw: rp.pcw.sites,
			violations: rp.violations, worstViolation: rp.worstViolation, amortized: rp.amortized,
			unmatchedRecvs: rp.unmatchedRecvs, unmatchedColls: rp.unmatchedColls,
			unknownReqs: rp.unknownReqs, noIcollReq: rp.noIcollReq, otherWorld: rp.otherWorld,
		}
		if rp.defs != nil && len(rp.unf) > 0 {
			rr.unf, rr.unfPy = make([]siteFrame, len(rp.unf)), make([]siteFrame, len(rp.unf))
			for i, u := range rp.unf {
				rr.unf[i] = frameOf(rp.defs.Modules, u.ReturnAddress)
				rr.unfPy[i] = pythonFrame(u.PythonStack, rp.defs.Modules)
			}
		}
		if rp.defs != nil && rp.aborted && int(rp.abortSite) < len(rp.defs.CallSites) {
			for _, pc := range rp.defs.CallSites[rp.abortSite] {
				rr.abort = append(rr.abort, frameOf(rp.defs.Modules, pc))
			}
		}
		if rp.defs != nil && rp.events > 0 && !rp.threads {
			rr.lastSite, rr.lastFn, rr.hasLast = rp.evSite, rp.evFn, true
		}
		if rp.defs != nil && rp.crash != nil {
			// The rank's modules gain those its crash brings, which
			// crashes symbolizes the stack with.
			rp.defs.Modules = crashModules(rp.crash, rp.defs.Modules)
			rr.crash = crashStack(rp.crash, rp.defs.Modules)
		}
		if rp.defs != nil && rp.exit != nil {
			rr.exit = exitStack(rp.exit, rp.defs.Modules)
		}
		if rp.defs != nil && rp.where != nil && rp.crash == nil {
			rr.where = crashStack(rp.where, rp.defs.Modules)
		}
		rs := x.ranks[r]
		rr.unrep[unrSync] = rs.unrSsend
		rr.unrep[unrSync].add(rs.unrIss)
		rr.unrep[unrNonblocking], rr.unrep[unrThreaded] = rs.unrNB, rs.unrThr
		if rp.readErr != nil {
			rr.readErr = damage(r, rp.path, rp.readErr)
		}
		res.ranks[r] = rr
	}
	res.proc = procResult{
		sections: x.sections, sectionOverflow: x.sectionOverflow.Load(), sectionRuns: x.lim.sectionRuns,
		stalls: int64(x.stalls), unsent: x.unreceived() + x.droppedSends.Load(), unreceived: x.unreceivedMsgs(),
		unmatched: x.unmatched, openFiles: x.files.peakOpen, reopens: x.files.reopens,
	}
	return res
}

// mergeResults merges the results of processes that replayed disjoint
// sets of the ranks of one run of size ranks: the ranks side by side, the
// exchanges' counts summed (the most files open: the largest). The parts
// are read, not copied: they must not be used afterwards.
func mergeResults(size int, parts ...*replayResult) (*replayResult, error) {
	out := &replayResult{size: size, ranks: make([]*rankResult, size)}
	p := &out.proc
	p.sections = map[sectionKey]int{}
	var described []collWarning
	for i, part := range parts {
		if part == nil {
			return nil, fmt.Errorf("result %d is missing", i)
		}
		if part.size != size || len(part.ranks) != size {
			return nil, fmt.Errorf("result %d is of a run of %d ranks, not %d", i, part.size, size)
		}
		for r, rr := range part.ranks {
			if rr == nil {
				continue
			}
			if out.ranks[r] != nil {
				return nil, fmt.Errorf("rank %d was replayed by two processes", r)
			}
			out.ranks[r] = rr
		}
		q := &part.proc
		for k, n := range q.sections {
			p.sections[k] += n
		}
		p.sectionOverflow = p.sectionOverflow || q.sectionOverflow
		p.sectionRuns = max(p.sectionRuns, q.sectionRuns)
		p.stalls += q.stalls
		p.unsent += q.unsent
		p.unreceived = append(p.unreceived, q.unreceived...)
		described = append(described, q.unmatched.described...)
		p.unmatched.more += q.unmatched.more
		p.openFiles = max(p.openFiles, q.openFiles)
		p.reopens += q.reopens
	}
	// Each part kept its first instances by call number: the first of
	// them all are among them.
	slices.SortFunc(described, collWarning.before)
	if len(described) > maxCollWarnings {
		p.unmatched.more += len(described) - maxCollWarnings
		described = described[:maxCollWarnings]
	}
	p.unmatched.described = described
	p.unreceived = mergeUnreceived(p.unreceived)
	return out, nil
}

// mergeUnreceived sorts us by sender, receiver and tag and sums the
// entries of the same triple (the call site: the first entry's).
func mergeUnreceived(us []unreceived) []unreceived {
	slices.SortStableFunc(us, func(a, b unreceived) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst), cmp.Compare(a.tag, b.tag))
	})
	out := us[:0]
	for _, u := range us {
		if n := len(out); n > 0 && out[n-1].src == u.src && out[n-1].dst == u.dst && out[n-1].tag == u.tag {
			out[n-1].n += u.n
			continue
		}
		out = append(out, u)
	}
	return out
}

// obsFinish finishes the observers of the replay (the timeline, the
// Chrome export) once the report rep is built: siteID numbers the call
// sites as the report's SRC ids, tb has those ids by rank and call site
// (srcIDsOf), hosts are the ranks' host names, ends how the ranks that
// neither crashed nor finalized ended (endLines).
type obsFinish func(rep *report.Report, siteID map[string]int, tb *siteTable, hosts []string, ends map[int]string) error

// replaysFinish is the obsFinish of observers that recorded the replays
// reps of every rank, in this process (nil when opts observe nothing).
func replaysFinish(reps []*replayer, opts Options) obsFinish {
	if opts.Timeline == nil && opts.Chrome == nil {
		return nil
	}
	return func(rep *report.Report, siteID map[string]int, tb *siteTable, hosts []string, ends map[int]string) error {
		src := srcIDsOf(tb, siteID, func(r int) *siteKeyer { return keysOf(reps, r) })
		if opts.Timeline != nil {
			if err := opts.Timeline.finish(src, hosts, ends); err != nil {
				return err
			}
		}
		if opts.Chrome != nil {
			return opts.Chrome.finish(reps, siteID, src, rep, hosts, ends)
		}
		return nil
	}
}

// finishReport builds the report from the results of every rank's
// replay (res, merged over the processes), byRank and model from pass 1,
// the warnings pass 1 gave (warns), and opts; warn (may be nil) receives
// each further warning as it is found. The timeline and the Chrome
// export (opts.Timeline, opts.Chrome) are recorded by the replays
// themselves: fin finishes them (replaysFinish, or a distributed
// analysis's); without it both must be off. It adds the Insufficient
// Parallelism to res's accumulators: res is finished with once it
// returns.
func finishReport(res *replayResult, fin obsFinish, byRank []*rankFile, model *clocks.Model, opts Options, warns []string, warn func(string)) (*report.Report, Stats, error) {
	if fin == nil && (opts.Timeline != nil || opts.Chrome != nil) {
		return nil, Stats{}, fmt.Errorf("a timeline or a Chrome export needs the replays, not only their results")
	}
	size := len(byRank)
	if res.size != size || len(res.ranks) != size {
		return nil, Stats{}, fmt.Errorf("the replay's results are of a run of %d ranks, not %d", res.size, size)
	}
	all := append([]string{}, warns...)
	w := func(s string) {
		all = append(all, s)
		if warn != nil {
			warn(s)
		}
	}
	cv, un := summarize(res, byRank, w)
	rep, siteID, tb := build(res, byRank, opts, w)
	for _, s := range unreceivedWarnings(res.proc.unreceived, tb, rep) {
		w(s)
	}
	ends := rankEnds(res.ranks, byRank, rep.Unfinished, rep.Crashes, opts.Symbolizer, false)
	for _, e := range ends {
		if e.State == "exited" {
			w(exitWarning(e))
		}
	}
	rep.Task = opts.App
	rep.Processors = size
	rep.Warnings = placePcontrolWarnings(all, res.ranks, opts.Symbolizer)
	rep.ClockViolations, rep.Unmatched = cv, un
	rep.RunFacts = runFacts(res.ranks, byRank, model)
	if fin != nil {
		if err := fin(rep, siteID, tb, hostNames(byRank), endLines(ends)); err != nil {
			return nil, Stats{}, err
		}
	}
	st := Stats{OpenFiles: res.proc.openFiles, Reopens: res.proc.reopens}
	for _, rr := range res.ranks {
		if rr != nil {
			st.Events += rr.events
			st.Parks += rr.parks
		}
	}
	return rep, st, nil
}

// roundTrip is what Options.roundTrip asks for: res split by rank into
// parts as separate processes would produce them (the exchange's counts
// shared out among them), each part marshalled and unmarshalled, and the
// parts merged again. Every analyzer test runs the report through it.
func roundTrip(res *replayResult) (*replayResult, error) {
	parts := splitResult(res, 3)
	for i, p := range parts {
		b, err := p.marshal()
		if err != nil {
			return nil, err
		}
		if parts[i], err = unmarshalResult(b); err != nil {
			return nil, err
		}
	}
	return mergeResults(res.size, parts...)
}

// sameReport fails unless got and want are the same report, byte for
// byte as JSON.
func sameReport(got, want *report.Report) error {
	g, err := json.Marshal(got)
	if err != nil {
		return err
	}
	w, err := json.Marshal(want)
	if err != nil {
		return err
	}
	if bytes.Equal(g, w) {
		return nil
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	around := func(b []byte) string { return string(b[max(0, i-200):min(len(b), i+200)]) }
	return fmt.Errorf("the report through marshalled results differs from the direct one at byte %d:\n got …%s…\nwant …%s…", i, around(g), around(w))
}

// splitResult divides res into n parts that mergeResults puts back
// together: rank r in part r mod n, every count shared out.
func splitResult(res *replayResult, n int) []*replayResult {
	share := func(v int64, i int) int64 {
		s := v / int64(n)
		if int64(i) < v%int64(n) {
			s++
		}
		return s
	}
	q := &res.proc
	parts := make([]*replayResult, n)
	for i := range parts {
		p := &replayResult{size: res.size, ranks: make([]*rankResult, len(res.ranks))}
		for r, rr := range res.ranks {
			if r%n == i {
				p.ranks[r] = rr
			}
		}
		pp := &p.proc
		pp.sections = map[sectionKey]int{}
		for k, c := range q.sections {
			if s := share(int64(c), i); s > 0 {
				pp.sections[k] = int(s)
			}
		}
		pp.sectionOverflow = q.sectionOverflow && i == n-1
		pp.sectionRuns = q.sectionRuns
		pp.stalls, pp.unsent, pp.reopens = share(q.stalls, i), share(q.unsent, i), share(q.reopens, i)
		for j, u := range q.unreceived {
			if j%n == i {
				pp.unreceived = append(pp.unreceived, u)
			}
		}
		d := q.unmatched.described
		pp.unmatched.described = d[i*len(d)/n : (i+1)*len(d)/n]
		if i == n-1 {
			pp.unmatched.more = q.unmatched.more
		}
		pp.openFiles = q.openFiles
		parts[i] = p
	}
	return parts
}
