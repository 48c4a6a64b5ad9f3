// Package analyzer turns the per-rank traces of one run into a
// report.Report: it aligns clocks, matches messages and collectives, builds
// the interval tree and accumulates the characteristics of docs/characteristics.md §3–§5.
//
// # How it works
//
// Two passes over the files, both streaming:
//
//  1. A scan of every file (Options.Workers at a time) reads its header,
//     clock-sync samples and footer, seeking over the event batches
//     (files.go). Traces of different runs are refused, missing ranks and
//     damaged files reported, and package clocks builds each rank's map from
//     local to global time (piecewise linear between the synchronization
//     phases, composed along the reference tree).
//  2. A replay: one coroutine per rank reads its events forward, converts
//     every time to global time and accumulates the characteristics of the
//     interval current at that moment; Options.Workers goroutines run the
//     coroutines (sched.go; by default one per 128 ranks,
//     replayWorkers). Ranks meet only in the exchange (exchange.go,
//     p2p.go): a send posts its entry time, a receive takes the message
//     its place in MPI's matching order gives it (p2p.go explains the
//     tickets), and the k-th collective call of each member of a
//     communicator forms one instance whose entry and exit times every
//     member sees. A replay waits (parks its coroutine; with one worker
//     it mostly runs on the worker's stack and stops there, step.go) only
//     where the program itself had to wait, so a complete, consistent run cannot
//     deadlock; a missing or cut rank, or traces that disagree, are
//     detected and reported (exchange.go, sched.go).
//
// The report is then built from what the replays found, taken out of them
// as a replayResult (result.go): the same whether one process replayed
// every rank or several processes each replayed some and sent their
// results, marshalled, to the one that builds the report (dist.go).
//
// Memory is bounded by the ranks (each reader holds one batch), the
// messages, receives and collectives in flight, and the interval and
// call-site tables, never by the length of the traces. What could grow with
// it is bounded explicitly: a replay running far ahead of its partners
// waits for them past maxPending messages of one key or maxPendingColls
// collective instances of one communicator (flow control that gives way
// whenever it would stall the replay), idle message queues of ever new
// tags are swept, and sequential-section executions are capped.
//
// Work spreads over the cores because the replays run concurrently, as far
// as the program's dependencies allow: a tightly coupled program (a ring
// exchange) replays mostly as a chain of replays waking each other, which
// the scheduler keeps cheap (a coroutine switch, no thread wake-up) and
// rare (replays resume in the order their messages flow). Measured figures
// are in bench_test.go.
//
// Clock-condition violations are repaired while replaying, before any wait
// is computed, with the controlled logical clock (Becker et al. 2009; clc.go):
// when a receive (or a collective exit) would end before the send (or the
// entries it depends on) started, its end is moved to that bound plus
// minLatencyNs and all later events of the rank are shifted by the same
// amount (the forward pass, which keeps every local interval after the
// repaired event); the jump is also amortized backward, linearly over the
// rank's events since its last send, collective, MPI_Pcontrol or receive
// whose posting a send's late-receiver charge used, when the repaired call
// published nothing itself.
//
// # Definitions where the DVM method leaves a choice
//
//   - Level 0 runs from the exit of MPI_Init to the entry of MPI_Finalize:
//     the two calls themselves (start-up, clock synchronization, trace
//     flushing) are not part of the program's execution. Without MPI_Init
//     the first event starts it; without MPI_Finalize (a cut trace) the
//     last event ends it.
//   - An interval starts at the exit of MPI_Pcontrol(100, n) and ends at the
//     entry of MPI_Pcontrol(101, n). MPI_Pcontrol calls count in no
//     characteristic.
//   - Productive Time = Execution Time − Lost Time reads Execution Time as
//     the interval's execution time (the maximum over processors), so that
//     Idle Time is subtracted once: per processor Productive =
//     Execution(own) − Communications − Insufficient Parallelism, and
//     Productive + Lost = max Execution; in Main, Productive + Lost = Total.
//   - Insufficient Parallelism: the j-th execution of sequential section k
//     on every processor is one instance; K is the number of processors
//     that executed it. Each processor's Tseq is its own duration of the
//     section minus its time in MPI calls inside (already in
//     Communications), and it loses Tseq·(K−1)/K. A section need not nest
//     with the intervals: each interval, and so each level (the whole
//     program included), gets the part of the section that lies inside
//     it, Tseq_inside·(K−1)/K, where Tseq_inside is the section's time
//     inside the interval minus the MPI time in that part (package
//     intervals splits executions at interval boundaries). To keep memory
//     bounded, past maxSectionRuns pieces of executions on a processor K
//     becomes the number of processors that executed the section number
//     at all (with a warning).
//   - Wait Number counts Wait-family calls and Test-family calls that
//     completed at least one request.
//   - An event standing for a folded run of calls (traceformat.AttrCalls:
//     tests and probes that completed or found nothing, hot loops of
//     queries) counts as its Calls calls in a point's ExeCount (and the
//     System Number, were such a call a system call); it completed
//     nothing, so Wait Number does not change. Its duration is the run's
//     time in MPI, so the times need nothing special. It ends Calls gaps of
//     the profile when the trace gives its inner gaps (AttrInnerGaps,
//     profile.go: gapTo). Collective Number counts events (instances):
//     folded calls are never collectives.
//   - Collective Number of a processor counts its collective calls; Main's
//     counts instances once, on the member of rank 0 in the communicator.
//   - Nonblocking collectives (docs/characteristics.md, "Nonblocking
//     collectives"): the starts form instances but wait for nobody and get
//     no Potential Sync or Time Variation. A Wait/Test call that completes
//     only nonblocking collectives is Collective time; its Potential Sync
//     is the latest start over the participants − its entry, when
//     positive, at most its own time (added once the instance is
//     complete). Time Variation of a nonblocking collective is 0: its
//     completing calls' exits say when the program chose to wait, not how
//     unevenly the operation ended. A call completing point-to-point
//     requests too stays SendRecv time and gets no Potential Sync.
//   - Probes ("Probes"): a blocking MPI_Probe gets Real Sync as a receive
//     would (matched message's send entry − its entry); it peeks the
//     message of its key's next ticket (p2p.go) without taking it, so the
//     receive that follows gets that message, once, and no Real Sync (it
//     is entered after the send). Its status resolves ANY_SOURCE/ANY_TAG.
//     A successful MPI_Iprobe counts its time only; a probe is not a
//     receive (Receive Number).
//   - Late receiver ("Late receiver"): a blocking MPI_Send, MPI_Ssend or
//     MPI_Rsend (not MPI_Bsend) gets Real Sync = posting time of its
//     receive − its entry when it was still in the call at that posting
//     (entry < posting < exit), so that an eager send that returned at
//     once gets nothing; MPI_Ssend, which cannot return before the
//     posting, counts a posting at or after its exit (an alignment error)
//     as at its exit. Reported apart as Late receiver. The receiver
//     computes it when it matches the message (the send posts its exit and
//     attribution, lateInfo) and hands it back to the sender's figures once
//     every replay has finished: a send never waits for its receive. The
//     Wait/Test call completing an MPI_Issend (or a started
//     MPI_Ssend_init) gets posting − its entry when the posting falls
//     after the call's entry, at its exit at the latest (the latest, for
//     several; none when it also
//     completed receives), paired in the exchange whichever side comes
//     first (issendPosted, issendWaited). Not for standard-mode
//     nonblocking sends or MPI_Sendrecv.
//   - Overlap ("Overlap") is the time covered by the windows the DVM method adds up
//     (their union per processor), clipped to the entry of the interval
//     where they are completed, so that it never exceeds the processor's
//     execution time there; each Wait/Test call gets the part of its
//     windows not counted before (overlapCover).
//   - Every thread's calls are replayed when the program asked for
//     MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE, merged into one
//     sequence per process; a call's time and Real Sync count where no
//     other thread's call already covers them, so that the process's time
//     in MPI is the union of its threads' (threads.go). Below that level
//     only thread 0 (the thread that called MPI_Init) is replayed.
//   - A collective instance lacking some members of its communicator
//     (missing or cut traces, calls that disagree) is counted over the
//     members present: their Potential Sync and Time Variation are lower
//     bounds of the true ones. A present member's call waits for the
//     entries of every other present member it depends on, so that they
//     do not depend on which replay reached the instance first. A
//     warning names the instance and the missing ranks (unmatched.go).
//   - A trace that ends before MPI_Finalize ends its rank's program at its
//     last event; the intervals it had open then, and those that ran on
//     after it elsewhere, are marked incomplete, as is every interval of
//     a missing rank or a rank whose tracer dropped events
//     (incomplete.go).
//   - Productive Time is never negative; were it ever computed so (a
//     bug), it is shown as 0 with an "Internal inconsistency" warning
//     (report.Derive).
package analyzer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Options say what to analyse.
type Options struct {
	Dir      string // directory holding <App>.<rank>.trc
	App      string // application name
	MaxLevel int    // deepest interval level reported; -1 = all
	Workers  int    // goroutines; 0 = GOMAXPROCS for the scan, replayWorkers for the replay
	Exe      string // dtpa --exe, for the record: the Symbolizer is what reads it
	// Symbolizer, when set, fills SRC stacks and the intervals' source
	// positions; without it stacks stay empty and intervals name the
	// program.
	Symbolizer Symbolizer
	// Warn, when set, receives each warning as it is found (dtpa prints
	// them on stderr); they are also listed in Report.Warnings.
	Warn func(string)
	// Timeline, when set, records the run call by call for drawing
	// (observe.go); its Timeline is filled when Analyze returns.
	Timeline *TimelineRecorder
	// Chrome, when set, gets the run written as Chrome trace-event JSON
	// (export.go) before Analyze returns.
	Chrome *ChromeExport
	// Progress, when set, counts the events replayed (progress.go).
	Progress *Progress
	// Flow, when set, changes the bound of flow control and receives
	// how it went (for diagnosis and tests).
	Flow *FlowControl

	limits *limits // tests: bounds other than defaultLimits
	// roundTrip (tests) builds the report from the replay's results
	// split by rank, marshalled, unmarshalled and merged again, as a
	// distributed replay would (roundTrip in result.go), and fails unless
	// it is the report built from the results directly.
	roundTrip bool
	// noStep (tests): a single worker replays every event in the
	// replays' coroutines, without replayer.step.
	noStep bool
	// copies holds the compacted copies of deferred traces that cannot
	// be compacted in place (scanCompacting); nil, none are made.
	copies *copies
}

// Symbolizer turns a return address, given as a module path and an offset
// in the module's ELF address space, into stack frames (innermost first);
// none for a frame to leave out (inside MPI or the tracer). Package srcchar
// provides one. It is called once per distinct address of the report, from
// one goroutine.
type Symbolizer interface {
	Symbolize(module string, offset uint64) []report.Frame
}

// Module is a loaded object as the traces recorded it.
type Module struct {
	Path    string
	BuildID []byte // NT_GNU_BUILD_ID, when recorded
	// Executable is true for the program itself (the module named by the
	// trace header, else the first one recorded).
	Executable bool
}

// ModuleNoter is implemented by symbolizers that want to know the recorded
// modules (to check build ids, or to find a moved executable) before the
// first Symbolize call. Each distinct path is noted once.
type ModuleNoter interface {
	NoteModules(mods []Module)
}

// FlowControl sets the bound of flow control (a sender waits once this
// many of its messages of one key are not yet received, until half of
// them are: exchange.throttle, distX.throttle) and says how it went in
// one process of a distributed analysis (dtpa-mpi's DTPA_MPI_FLOW,
// docs/distributed.md).
type FlowControl struct {
	Bound int // 0: the default, 65 536
	// Set when AnalyzeDist returns: the most messages of one key from
	// another process this process held at once, and how often its
	// senders waited for a receiver of another process.
	MaxHeld, Waits int64
}

// Stats describe the work done (for benchmarks and verbose output).
type Stats struct {
	Events int64 // events replayed
	Parks  int64 // times a replay waited for another (see sched.go)
	// OpenFiles is the most trace files the replay held open at once,
	// Reopens how often it reopened one that it had closed to stay
	// within its bound (filePool).
	OpenFiles int
	Reopens   int64
}

// Analyze reads the traces and computes the report.
func Analyze(ctx context.Context, opts Options) (*report.Report, error) {
	rep, _, err := AnalyzeStats(ctx, opts)
	return rep, err
}

// AnalyzeStats is Analyze that also says how much work it did.
func AnalyzeStats(ctx context.Context, opts Options) (rep *report.Report, stats Stats, err error) {
	defer func() {
		// Input must never crash dtpa; a panic here is a bug, reported as
		// such rather than as a crash.
		if p := recover(); p != nil {
			rep, stats, err = nil, Stats{}, fmt.Errorf("internal error: analysing %s: %v", opts.App, p)
		}
	}()
	warns, warn := warnings(opts)
	opts.copies = &copies{}
	defer opts.copies.release()
	sc, err := scanRun(ctx, opts, warn)
	if err != nil {
		return nil, Stats{}, err
	}
	size, byRank, model := sc.size, sc.byRank, sc.model
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	// Pass 2: the replay.
	if err := opts.Chrome.start(size); err != nil {
		return nil, Stats{}, err
	}
	defer opts.Chrome.cleanup()
	x, s, reps := newReplay(ctx, opts, sc, nil)
	if opts.Workers <= 0 {
		workers = replayWorkers(size, workers)
	}
	if err := s.run(workers); err != nil {
		return nil, Stats{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, Stats{}, err
	}
	settle(reps, x)
	res := collectResult(reps, x)
	var direct *report.Report
	if opts.roundTrip {
		// The report through the results split, marshalled and merged,
		// checked against the report from the results themselves (the
		// same replay's).
		merged, err := roundTrip(res)
		if err != nil {
			return nil, Stats{}, err
		}
		o := opts
		o.Timeline, o.Chrome = nil, nil
		if direct, _, err = finishReport(res, nil, byRank, model, o, *warns, nil); err != nil {
			return nil, Stats{}, err
		}
		res = merged
	}
	// The warnings so far are in warns; finishReport lists them with its
	// own, which it gives to opts.Warn as it finds them.
	rep, stats, err = finishReport(res, replaysFinish(reps, opts), byRank, model, opts, *warns, opts.Warn)
	if err == nil && direct != nil {
		err = sameReport(rep, direct)
	}
	return rep, stats, err
}

// warnings collects the warnings of an analysis in order, passing each
// to opts.Warn as it is found.
func warnings(opts Options) (*[]string, func(string)) {
	var warns []string
	return &warns, func(s string) {
		warns = append(warns, s)
		if opts.Warn != nil {
			opts.Warn(s)
		}
	}
}

// runScan is what pass 1 finds: the run's size, each rank's file (nil
// when missing or unreadable), and the clock model.
type runScan struct {
	size    int
	byRank  []*rankFile
	present []bool
	model   *clocks.Model
}

// scanRun is pass 1: every file's header, clock samples and damage, the
// run they belong to, and the clock model; warn receives what it finds.
func scanRun(ctx context.Context, opts Options, warn func(string)) (*runScan, error) {
	paths, err := discover(opts.Dir, opts.App)
	if err != nil {
		return nil, err
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = scanWorkers(len(paths), runtime.GOMAXPROCS(0))
	}

	// Pass 1: headers, clock samples, damage.
	scanned := make([]*rankFile, len(paths))
	errs := make([]error, len(paths))
	notes := make([]string, len(paths))
	parallel(len(paths), workers, func(i int) {
		scanned[i], notes[i], errs[i] = scanCompacting(paths[i], rankOf(paths[i], opts.App), opts.copies)
	})
	var files []*rankFile
	for i, e := range errs {
		if notes[i] != "" {
			warn(notes[i])
		}
		if e != nil {
			if isVersionError(e) {
				return nil, e
			}
			warn(leftOut(paths[i], rankOf(paths[i], opts.App), e))
			continue
		}
		files = append(files, scanned[i])
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no readable traces of %q in %s", opts.App, dirName(opts.Dir))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files, size, err := checkRuns(opts.Dir, opts.App, files, workers, warn)
	if err != nil {
		return nil, err
	}
	files = withCompanions(opts.Dir, opts.App, files, size, workers)
	byRank := make([]*rankFile, size)
	for _, f := range files {
		r := int(f.hdr.Rank)
		if byRank[r] != nil {
			warn(fmt.Sprintf("%s and %s both hold rank %d; the second is left out.", byRank[r].path, f.path, r))
			continue
		}
		byRank[r] = f
	}
	present := make([]bool, size)
	syncs := make([][]*tracepb.ClockSync, size)
	clks := make([]*tracepb.Clock, size)
	for r, f := range byRank {
		if f == nil {
			continue
		}
		present[r] = true
		syncs[r] = f.syncs
		if f.hdr != nil {
			clks[r] = f.hdr.Clock
		}
		if f.err != nil {
			warn(damage(r, f.path, f.err))
		} else if f.footer != nil && f.footer.StopReason != tracepb.Footer_FINALIZE && f.footer.StopReason != tracepb.Footer_STOP_UNSPECIFIED &&
			f.footer.StopReason != tracepb.Footer_EXIT { // exitWarning says how, once the replay is over
			warn(fmt.Sprintf("Rank %d: tracing stopped early (%s%s); later events are missing.", r, f.footer.StopReason, detail(f.footer.Message)))
		}
		if f.footer != nil && f.footer.DroppedEvents > 0 {
			warn(fmt.Sprintf("Rank %d: the tracer dropped %d events.", r, f.footer.DroppedEvents))
		}
		if f.lateErr != "" {
			warn(fmt.Sprintf("Rank %d: %s", r, f.lateErr))
		}
	}
	if m := missingRanks(present); m != "" {
		warn(fmt.Sprintf("The run had %d processes but traces of rank(s) %s are missing; operations with them are reported unmatched.", size, m))
	}
	model := clocks.Build(syncs, clks, present)
	for _, w := range model.Warnings {
		warn(w)
	}

	return &runScan{size: size, byRank: byRank, present: present, model: model}, nil
}

// newReplay prepares the replay of the ranks of sc that own selects (nil:
// all of them).
func newReplay(ctx context.Context, opts Options, sc *runScan, own func(int) bool) (*exchange, *sched, []*replayer) {
	lim := defaultLimits()
	if opts.limits != nil {
		lim = *opts.limits
	}
	if opts.Flow != nil && opts.Flow.Bound > 0 {
		lim.pending = opts.Flow.Bound
	}
	x := newExchange(sc.size, sc.present, lim)
	x.progress = opts.Progress
	mine := sc.byRank
	if own != nil {
		// The progress of a distributed replay is this process's.
		mine = make([]*rankFile, len(sc.byRank))
		for r, f := range sc.byRank {
			if own(r) {
				mine[r] = f
			}
		}
	}
	opts.Progress.announce(mine)
	s := newSched(ctx, x)
	s.noStep = opts.noStep
	x.s = s
	reps := make([]*replayer, sc.size)
	for r, f := range sc.byRank {
		if f == nil || (own != nil && !own(r)) {
			continue
		}
		rp := newReplayer(int32(r), f.path, x, sc.model.Maps[r].Clone())
		rp.unf, rp.unfStart = f.footer.GetUnfinished(), f.hdr.GetStartLocalNs()
		rp.unfEnd, rp.unfAtLeast = footerEnd(f.footer)
		rp.crash, rp.exit, rp.where = f.footer.GetCrash(), f.footer.GetExit(), f.footer.GetInterrupted()
		rp.endState, rp.endAt, rp.endThread = endMoment(f.footer)
		rp.ctx = ctx
		rp.obs = newRankObs(rp, opts.Timeline.rank(rp, sc.size), opts.Chrome.rank(rp))
		reps[r] = rp
		s.addReplay(rp)
	}
	return x, s, reps
}

// settle adds to each replay what reached it after it finished: the
// contributions of instances completed later and the late receivers'
// charges to its sends.
func settle(reps []*replayer, x *exchange) {
	for r, rp := range reps {
		if rp == nil {
			continue
		}
		rp.obs.flush()
		rp.obs.ended()
		rp.contrib = append(rp.contrib[:0], x.ranks[r].deferred...)
		x.ranks[r].deferred = nil
		rp.applyContrib()
		rp.applyLate(&x.ranks[r].late)
		x.ranks[r].late = lateTable{}
	}
}

// summarize turns the replays' counters into warnings, rank by rank, and
// into the report's structured counts (nil when zero).
func summarize(res *replayResult, byRank []*rankFile, warn func(string)) (*report.ClockViolations, *report.Unmatched) {
	var viol, worst, amortized, unRecv, unColl, unReq, unSent, other int64
	var worstRank int32
	var unrep [unrClasses]unrepaired
	x := &res.proc
	for r, rp := range res.ranks {
		if rp == nil {
			continue
		}
		for _, w := range rp.warns {
			warn(w)
		}
		if rp.otherThreads > 0 {
			warn(fmt.Sprintf("Rank %d: %d calls made by threads other than the one that called MPI_Init are not analysed: the program asked for less than MPI_THREAD_SERIALIZED.", r, rp.otherThreads))
		}
		if rp.noIcollReq > 0 {
			warn(fmt.Sprintf("Rank %d: %d nonblocking collective call(s) carry no request, so nothing says when they complete; each is taken as complete when started, and the Potential Sync of its completion is not counted.", r, rp.noIcollReq))
		}
		if rp.readErr != "" && byRank[r].err == nil {
			warn(rp.readErr)
		}
		viol += rp.violations
		amortized += rp.amortized
		if rp.worstViolation > worst {
			worst, worstRank = rp.worstViolation, rp.rank
		}
		unRecv += rp.unmatchedRecvs
		unColl += rp.unmatchedColls
		unReq += rp.unknownReqs
		other += rp.otherWorld
		for c, u := range rp.unrep {
			unrep[c].add(u)
		}
	}
	unSent += x.unsent
	if viol > 0 {
		warn(fmt.Sprintf("%d clock-condition violation(s) found after clock alignment (the worst, %.9f s, on rank %d); repaired with a controlled logical clock before computing waits.",
			viol, float64(worst)/1e9, worstRank))
	}
	var unr unrepaired
	for _, u := range unrep {
		unr.add(u)
	}
	if unr.n > 0 {
		warn(unrepairedWarning(unr, unrep))
	}
	if unRecv > 0 {
		warn(fmt.Sprintf("%d receive(s) found no matching send (a missing or cut trace, or inconsistent traces); their Real Sync is not counted.", unRecv))
	}
	if unSent > 0 {
		warn(fmt.Sprintf("%d message(s) sent were never received in the traces.", unSent))
	}
	for _, w := range x.unmatched.warnings() {
		warn(w)
	}
	if unColl > 0 {
		warn(fmt.Sprintf("%d collective call(s) could not be matched with all participants of their communicator.", unColl))
	}
	if unReq > 0 {
		warn(fmt.Sprintf("%d request(s) were waited for, started or tested without having been created in the trace.", unReq))
	}
	if other > 0 {
		warn(fmt.Sprintf("%d call(s) communicated with processes of another MPI world (joined by MPI_Comm_spawn, MPI_Comm_connect/accept or MPI_Comm_join), whose traces are another task's: they are analysed without their partners (no Real Sync, Potential Sync or Time Variation from them).", other))
	}
	if x.sectionOverflow {
		warn(fmt.Sprintf("More than %d sequential sections were executed on a processor: Insufficient Parallelism counts, for each section number, K = the processors that executed it at all.", x.sectionRuns))
	}
	if x.stalls > 0 {
		warn(fmt.Sprintf("The replay stalled %d time(s) because the traces disagree on which operations match; each time one waiting operation was given up and is reported unmatched.", x.stalls))
	}
	var cv *report.ClockViolations
	if viol > 0 || unr.n > 0 {
		cv = &report.ClockViolations{Count: viol, Worst: sec(worst), WorstRank: int(worstRank), Repaired: true, Amortized: amortized,
			Unrepaired: unr.n, UnrepairedWorst: sec(unr.worst), UnrepairedWorstRank: int(unr.rank),
			UnrepairedSyncSends: unrep[unrSync].n, UnrepairedNonblocking: unrep[unrNonblocking].n, UnrepairedThreaded: unrep[unrThreaded].n}
	}
	var un *report.Unmatched
	if unRecv+unSent+unColl+unReq > 0 || x.stalls > 0 {
		un = &report.Unmatched{Receives: unRecv, Sends: unSent, Collectives: unColl, Requests: unReq, Stalls: x.stalls}
	}
	return cv, un
}

// unrepairedWarning describes the clock-condition violations not
// repaired, all (u) and by class (by), in one sentence that begins as the
// repaired ones' does.
func unrepairedWarning(u unrepaired, by [unrClasses]unrepaired) string {
	var kinds []string
	for c, what := range [unrClasses]string{
		unrSync:        "synchronous send(s) that returned before the receive was posted",
		unrNonblocking: "call(s) completing a nonblocking collective before a start it depends on",
		unrThreaded:    "blocking collective(s) of a multi-threaded process left before an entry they depend on",
	} {
		if n := by[c].n; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, what))
		}
	}
	return fmt.Sprintf("%d clock-condition violation(s) found after clock alignment (the worst, %.9f s, on rank %d) are not repaired: %s; there the aligned clocks err by at least that much, or the MPI library did not wait for a call MPI's rules make it wait for, and the figures near them are less exact.",
		u.n, float64(u.worst)/1e9, u.rank, strings.Join(kinds, ", "))
}

// damage describes a damaged file in one sentence.
func damage(r int, path string, err error) string {
	var ce *traceformat.CorruptError
	if errors.As(err, &ce) {
		return fmt.Sprintf("Rank %d: %s: %s at byte offset %d (%v); the events before it are analysed.",
			r, path, ce.Reason, ce.Offset, ce.Err)
	}
	return fmt.Sprintf("Rank %d: %s: %v; the events read before the error are analysed.", r, path, err)
}

// detail is a footer's message for a warning, without the tracer's flush
// statistics ("max flush stall …", for the tracer's benchmarks, not for
// users).
func detail(s string) string {
	// What follows is the writer's account of its own cost (the C
	// writer's starts with "C writer;"), not why tracing stopped.
	for _, mark := range []string{"C writer;", "max flush stall"} {
		if i := strings.Index(s, mark); i >= 0 {
			s = s[:i]
		}
	}
	s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), ";"))
	if s == "" {
		return ""
	}
	return ": " + s
}

func dirName(d string) string {
	if d == "" {
		return "."
	}
	return d
}

// replayWorkers is the default number of workers of the replay of a run
// of ranks ranks on a machine of cpus cores: one per ranksPerWorker ranks,
// up to cpus. A second worker costs more than it brings on runs of a few
// dozen ranks: the replays must then take the exchange's locks, idle
// workers spin, and the ranks a worker could run while the other runs are
// few, so that the workers mostly wait for each other (real traces of 4
// and 32 ranks took 1.2 to 1.9 times the CPU time per call at two
// workers as at one, in no less wall time; docs/performance.md).
func replayWorkers(ranks, cpus int) int {
	return max(1, min(cpus, ranks/ranksPerWorker))
}

// scanWorkers is the default number of workers of the scan of files
// trace files on a machine of cpus cores: one per filesPerScanWorker
// files, up to cpus. A file's scan takes tens of microseconds; a second
// worker costs more than it saves on a few files: its thread is woken and
// its processor allocates from spans of its own, fresh memory the
// collector then sweeps (two workers over LAMMPS's 4 files cost the whole
// analysis several percent more CPU time; docs/performance.md, "The
// first pass with one worker").
func scanWorkers(files, cpus int) int {
	return max(1, min(cpus, files/filesPerScanWorker))
}

const filesPerScanWorker = 64

// ranksPerWorker is how many ranks make a further replay worker worth it:
// at 256 ranks two workers took about the CPU time per call of one, and
// less wall time.
const ranksPerWorker = 128

// parallel runs f(0…n-1) on at most workers goroutines. With one worker
// (or one item) it runs them in order on the calling goroutine: a worker
// goroutine fed by a channel made every item a hand-over between two
// goroutines, which on a machine with an idle processor woke a thread to
// run the worker and parked it again after each item. A panic of an item
// reaches the caller either way (AnalyzeStats turns it into an internal
// error): the workers finish the other items, and the first panic is
// raised again once they are done.
func parallel(n, workers int, f func(int)) {
	if workers <= 1 || n <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first any // the first item's panic (never nil: panic(nil) recovers as a *runtime.PanicNilError)
	)
	run := func(i int) {
		defer func() {
			if p := recover(); p != nil {
				mu.Lock()
				if first == nil {
					first = p
				}
				mu.Unlock()
			}
		}()
		f(i)
	}
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				run(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		panic(first)
	}
}
