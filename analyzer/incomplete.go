package analyzer

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// rankState says whether a rank's trace covers its whole program. A trace
// that ends early (tracing stopped at MaxTraceSize or a full buffer, a
// killed or aborted process, a cut file) ends the rank's program at its
// last event: the intervals still open then lack what came after, and the
// other ranks' Idle Time in them is measured against a short Execution
// Time. Such figures are marked incomplete (report.Interval.Incomplete,
// report.Rank.Incomplete), never silently shown as if whole.
type rankState struct {
	missing bool   // no trace, or no event in it: the rank is in no interval
	cut     bool   // the trace ends before MPI_Finalize
	end     int64  // with cut: global time of its last event
	dropped int64  // events the tracer dropped although the trace reached MPI_Finalize
	why     string // with cut: why the trace ended, for the reason sentences
}

// stopReasons explains the footer's stop reasons other than FINALIZE.
var stopReasons = map[tracepb.Footer_StopReason]string{
	tracepb.Footer_SIZE_LIMIT:  "SIZE_LIMIT: tracing stopped at MaxTraceSize",
	tracepb.Footer_BUFFER_FULL: "BUFFER_FULL: tracing stopped when the trace buffer filled up, MaxTraceSize = -1",
	tracepb.Footer_WRITE_ERROR: "WRITE_ERROR: a trace write failed",
	tracepb.Footer_ABORT:       "ABORT: the program called MPI_Abort",
	tracepb.Footer_SIGNAL:      "SIGNAL: the process received a fatal signal",
	tracepb.Footer_EXIT:        "EXIT: the process exited without MPI_Finalize",
}

// rankStates tells, rank by rank, whether the traces are complete.
func rankStates(ranks []*rankResult, byRank []*rankFile) []rankState {
	st := make([]rankState, len(ranks))
	for r, rp := range ranks {
		s := &st[r]
		f := byRank[r]
		if rp == nil || f == nil || !rp.started {
			s.missing = true
			continue
		}
		if !rp.finalized {
			s.cut, s.end = true, rp.last
			switch {
			case f.footer != nil && stopReasons[f.footer.StopReason] != "":
				s.why = stopReasons[f.footer.StopReason]
			case f.err != nil || rp.readErr != "" || f.footer == nil:
				s.why = "the trace file is cut or damaged"
			default:
				s.why = "the trace holds no MPI_Finalize"
			}
		} else if f.footer != nil && f.footer.DroppedEvents > 0 {
			s.dropped = int64(f.footer.DroppedEvents)
		}
	}
	return st
}

// markIncomplete marks the ranks of iv (merged from g) whose figures lack
// events, and iv itself when some rank's do or when a rank without a
// complete trace may have executed it unseen: its trace is missing, or it
// ended while the interval still ran on another rank.
func markIncomplete(iv *report.Interval, g *gnode, states []rankState) {
	byReason := map[string][]int32{}
	var latest int64 // the interval's latest exit over the ranks that executed it
	for _, t := range g.ranks {
		latest = max(latest, t.lastExit)
	}
	for i := range iv.Ranks {
		rk := &iv.Ranks[i]
		s := states[rk.Rank]
		switch {
		case s.cut && g.ranks[rk.Rank].openAtEnd:
			rk.Incomplete = true
			rk.IncompleteReason = fmt.Sprintf("its trace ends inside this interval (%s)", s.why)
		case s.dropped > 0:
			rk.Incomplete = true
			rk.IncompleteReason = fmt.Sprintf("the tracer dropped %d of its events, the figures are approximate", s.dropped)
		}
		if rk.Incomplete {
			byReason[rk.IncompleteReason] = append(byReason[rk.IncompleteReason], int32(rk.Rank))
		}
	}
	for r, s := range states {
		if _, in := g.ranks[r]; in {
			continue
		}
		switch {
		case s.missing:
			byReason["no events of it were analysed (missing or empty trace)"] = append(byReason["no events of it were analysed (missing or empty trace)"], int32(r))
		case s.cut && s.end < latest:
			why := fmt.Sprintf("its trace ends before this interval ended on the others (%s): it may have executed it afterwards", s.why)
			byReason[why] = append(byReason[why], int32(r))
		}
	}
	if len(byReason) == 0 {
		return
	}
	var parts []string
	for why, ranks := range byReason {
		parts = append(parts, fmt.Sprintf("rank(s) %s: %s", rankList(ranks), why))
	}
	sort.Strings(parts)
	iv.Incomplete = true
	iv.IncompleteReason = "Figures incomplete: " + strings.Join(parts, "; ") + "."
}

// unfinishedCalls lists the calls the ranks' footers say were in progress
// when their processes ended, with the program's line of each (the first
// frame of its return address that has a file: frames inside MPI are not
// the program's).
func unfinishedCalls(ranks []*rankResult, byRank []*rankFile, sym Symbolizer) []report.UnfinishedCall {
	var out []report.UnfinishedCall
	for r, f := range byRank {
		if f == nil {
			continue
		}
		for i, c := range footerCalls(r, f.footer) {
			if r < len(ranks) && ranks[r] != nil && i < len(ranks[r].unf) && sym != nil && f.footer.Unfinished[i].ReturnAddress != 0 {
				mods := ranks[r].defs.Modules
				fr := ranks[r].unf[i]
				path := ""
				if fr.mod >= 0 && int(fr.mod) < len(mods) {
					path = mods[fr.mod].Path
				}
				for _, x := range sym.Symbolize(path, fr.off) {
					if x.File != "" {
						c.File, c.Line = x.File, x.Line
						break
					}
				}
				if py := ranks[r].unfPy; c.File == "" && i < len(py) && py[i].mod >= 0 && int(py[i].mod) < len(mods) {
					for _, x := range sym.Symbolize(mods[py[i].mod].Path, py[i].off) {
						if x.File != "" {
							c.File, c.Line = x.File, x.Line
							break
						}
					}
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// pythonFrame is the frame of the Python frames py (a call in progress
// that C code below Python made, UnfinishedCall.python_stack) that the
// call is placed at: the first that is the program's own (its source file
// outside Python's library and installed packages), else the first; mod
// -1 when none is a source file's.
func pythonFrame(py []uint64, mods []*tracepb.Module) siteFrame {
	first := siteFrame{mod: -1}
	for _, pc := range py {
		f := frameOf(mods, pc)
		if f.mod < 0 {
			continue
		}
		file, ok := strings.CutPrefix(mods[f.mod].Path, traceformat.SourceModulePrefix)
		if !ok {
			continue
		}
		if !pyLibraryRE.MatchString(file) {
			return f
		}
		if first.mod < 0 {
			first = f
		}
	}
	return first
}

// elsewhere says where the ranks in none of the calls in progress unf nor
// among the crashes were (report.Report.Elsewhere), when there are calls
// in progress: how their traces ended, as their footers say (ranks
// without one, or whose tracing stopped for another reason, are left
// out), and their last MPI calls.
func elsewhere(ranks []*rankResult, byRank []*rankFile, unf []report.UnfinishedCall, crashes []report.Crash, sym Symbolizer) []report.RankElsewhere {
	if len(unf) == 0 {
		return nil
	}
	return rankEnds(ranks, byRank, unf, crashes, sym, true)
}

// rankEnds says how the ranks in none of the calls in progress unf nor
// among the crashes ended, as elsewhere does; with all, also those that
// called MPI_Finalize, and every one's last MPI call; else only those that
// exited without it or that a signal found in no MPI call, without their
// last calls (the pictures' words, endLines).
func rankEnds(ranks []*rankResult, byRank []*rankFile, unf []report.UnfinishedCall, crashes []report.Crash, sym Symbolizer, all bool) []report.RankElsewhere {
	busy := map[int]bool{}
	for _, c := range unf {
		busy[c.Rank] = true
	}
	for _, c := range crashes {
		busy[c.Rank] = true
	}
	var out []report.RankElsewhere
	for r, f := range byRank {
		if f == nil || f.footer == nil || busy[r] {
			continue
		}
		e := report.RankElsewhere{Rank: r}
		switch f.footer.StopReason {
		case tracepb.Footer_FINALIZE:
			if !all {
				continue
			}
			e.State = "finalized"
		case tracepb.Footer_EXIT:
			e.State = "exited"
		case tracepb.Footer_SIGNAL:
			e.State = "outside"
		default:
			continue
		}
		var exit, where []siteFrame
		var mods []*tracepb.Module
		if r < len(ranks) && ranks[r] != nil && ranks[r].defs != nil {
			if all {
				e.LastCall = lastCall(ranks[r], f.hdr.GetProgram(), sym)
			}
			exit, where, mods = ranks[r].exit, ranks[r].where, ranks[r].defs.Modules
		}
		endHow(&e, f.footer.GetExit(), exit, where, mods, f.hdr.GetProgram(), sym)
		out = append(out, e)
	}
	return out
}

// exitWarning is the report's warning for rank e (as rankEnds gives it),
// which exited without MPI_Finalize: how, and where from.
func exitWarning(e report.RankElsewhere) string {
	how := ""
	if h := e.ExitHow(); h != "" {
		how = " (" + h + ")"
	}
	return fmt.Sprintf("Rank %d: the process exited without MPI_Finalize%s; its figures end at its last MPI call.", e.Rank, how)
}

// endLines is the line of report.ElsewhereLines for each rank of es (as
// rankEnds gives them, without last calls), by rank: the words the
// pictures of the run (timeline, Chrome export) give its end.
func endLines(es []report.RankElsewhere) map[int]string {
	out := map[int]string{}
	for _, e := range es {
		out[e.Rank] = report.ElsewhereLines([]report.RankElsewhere{e})[0]
	}
	return out
}

// EndOf says how rank r's process ended when its trace (its header hdr,
// footer f, modules mods, symbolized with sym) records neither a crash
// nor MPI_Finalize, as the report's line of the other ranks says it
// (report.ElsewhereLines, without the last call): "rank 1: had exited
// without MPI_Finalize (exit(5) from leave at early.c:13)", or, for one a
// signal ended in no MPI call, "rank 1: in no MPI call (in spin at
// early.c:19)"; with the thread (nil: unknown) and the local time (0:
// unknown); "" when the trace says neither. For the exports, which read
// traces without replaying them (OTF2).
func EndOf(r int, hdr *tracepb.Header, f *tracepb.Footer, mods []*tracepb.Module, sym Symbolizer) (string, *int, int64) {
	state, at, th := endMoment(f)
	e := report.RankElsewhere{Rank: r, State: state}
	switch state {
	case "exited":
		endHow(&e, f.GetExit(), exitStack(f.GetExit(), mods), nil, mods, hdr.GetProgram(), sym)
	case "outside":
		w := f.GetInterrupted()
		mods = crashModules(w, mods)
		if endHow(&e, nil, nil, crashStack(w, mods), mods, hdr.GetProgram(), sym); e.Where == nil {
			return "", nil, 0
		}
	default:
		return "", nil, 0
	}
	var thread *int
	if th >= 0 {
		t := int(th)
		thread = &t
	}
	return report.ElsewhereLines([]report.RankElsewhere{e})[0], thread, at
}

// endMoment says how the process of a rank whose footer f records
// neither a crash nor MPI_Finalize ended, and when (its local time; 0:
// unknown) on which thread (-1: unknown): "exited" at its exit without
// MPI_Finalize, "outside" at the signal that found it in no MPI call; ""
// when f says neither.
func endMoment(f *tracepb.Footer) (state string, local, thread int64) {
	switch x, w := f.GetExit(), f.GetInterrupted(); {
	case f.GetCrash() != nil:
	case f.GetStopReason() == tracepb.Footer_EXIT && x != nil:
		thread = -1
		if x.HasThread {
			thread = int64(x.Thread)
		}
		return "exited", f.EndLocalNs, thread
	case f.GetStopReason() == tracepb.Footer_SIGNAL && w != nil && len(f.Unfinished) == 0:
		thread = -1
		if w.HasThread {
			thread = int64(w.Thread)
		}
		return "outside", w.LocalNs, thread
	}
	return "", 0, -1
}

// endHow fills in how rank e's process ended, by its state: for
// "exited", the status of its exit call x and where it called exit from
// (its stack exit, exitStack); for "outside", where the signal that ended
// it found it (its stack where, crashStack): the program's own line, none
// when the signal found a thread with no frame of the program's (a
// library's helper thread). Stacks are symbolized with sym on mods.
func endHow(e *report.RankElsewhere, x *tracepb.ExitCall, exit, where []siteFrame, mods []*tracepb.Module, program string, sym Symbolizer) {
	switch e.State {
	case "exited":
		if x.GetHasStatus() {
			s := int(x.Status)
			e.ExitStatus = &s
		}
		e.Exit, e.MainReturned = exitPlace(exit, mods, program, sym)
	case "outside":
		if fr, at := crashFrames(where, mods, program, sym, true); at >= 0 {
			e.Where = placeOf(fr[at])
		}
	}
}

// exitStack is exit call x's stack mapped to the modules mods, past the C
// library's frames (exit and its handlers'); nil when nothing is left.
func exitStack(x *tracepb.ExitCall, mods []*tracepb.Module) []siteFrame {
	var st []siteFrame
	for _, pc := range x.GetStack()[:min(len(x.GetStack()), maxCrashFrames)] {
		f := frameOf(mods, pc)
		if len(st) == 0 && f.mod >= 0 && int(f.mod) < len(mods) && libcRE.MatchString(filepath.Base(mods[f.mod].Path)) {
			continue
		}
		st = append(st, f)
	}
	return st
}

// exitPlace is where the process called exit, from its stack st
// (exitStack) symbolized with sym on modules mods
// (report.RankElsewhere.Exit): the program's innermost frame with a file
// (as a crash's At), else the innermost with a file, else the innermost.
// returned says that no frame is left but the C start-up code's: main
// returned. Nil and false when st is empty (unknown).
func exitPlace(st []siteFrame, mods []*tracepb.Module, program string, sym Symbolizer) (p *report.CallPlace, returned bool) {
	if len(st) == 0 {
		return nil, false
	}
	fr, at := crashFrames(st, mods, program, sym, false)
	if len(fr) == 0 {
		return nil, true
	}
	if at < 0 {
		at = max(0, slices.IndexFunc(fr, func(f report.Frame) bool { return f.File != "" }))
	}
	return placeOf(fr[at]), false
}

// placeOf is frame f as a place in the program.
func placeOf(f report.Frame) *report.CallPlace {
	return &report.CallPlace{Function: cmp.Or(f.Function, "??"), File: f.File, Line: f.Line}
}

// libcRE matches the base names of the C library (glibc's).
var libcRE = regexp.MustCompile(`^libc\.so`)

// footerCalls are the calls in progress that rank r's footer f lists,
// without their place in the program, and for how long each had run when
// the footer says when the process ended.
func footerCalls(r int, f *tracepb.Footer) []report.UnfinishedCall {
	if f == nil || len(f.Unfinished) == 0 {
		return nil
	}
	// A process makes at most one call per thread; more is damage, of
	// which the first are kept.
	out := make([]report.UnfinishedCall, min(len(f.Unfinished), maxUnfinished))
	for i := range out {
		u := f.Unfinished[i]
		out[i] = report.UnfinishedCall{Rank: r, Thread: int(u.Thread), Function: cmp.Or(u.Name, unknownFunction)}
		// Local clocks read positive nanoseconds; a damaged pair must
		// not overflow into a plausible duration.
		if d := f.EndLocalNs - u.EntryLocalNs; f.EndLocalNs > 0 && u.EntryLocalNs > 0 && d >= 0 {
			s := sec(d)
			out[i].Seconds = &s
		} else if d := f.InterruptedLocalNs - u.EntryLocalNs; f.EndLocalNs <= 0 && f.InterruptedLocalNs > 0 && u.EntryLocalNs > 0 && d >= 0 {
			// The process was alive at the interrupt and died later, when
			// nothing noted: the call ran at least this long.
			s := sec(d)
			out[i].Seconds, out[i].AtLeast = &s, true
		}
	}
	return out
}

// OpenCall is a call in progress when its process ended, as the page and
// the exports draw it, on the rank's local clock: its place in the
// footer's list (Index), its thread, function id and name (Name
// unknownFunction when the footer gives none), its return address (and,
// for a call that C code below Python made, the thread's Python frames,
// PythonStack), its entry, and End, the process's end (0: unknown), when
// the job was interrupted if AtLeast (the process outlived it).
type OpenCall struct {
	Index         int
	Thread        uint32
	Function      uint32
	Name          string
	ReturnAddress uint64
	PythonStack   []uint64
	Entry, End    int64
	AtLeast       bool
}

// OpenCalls are the calls in progress of footer f that can be drawn,
// tracing having started at local time start (openCalls).
func OpenCalls(f *tracepb.Footer, start int64) []OpenCall {
	end, atLeast := footerEnd(f)
	return openCalls(f.GetUnfinished(), start, end, atLeast)
}

// footerEnd is when the process of footer f ended, on its local clock,
// for its calls in progress: when tracing stopped, else when the job was
// interrupted (atLeast: the process outlived it); 0 when unknown.
func footerEnd(f *tracepb.Footer) (end int64, atLeast bool) {
	if end = f.GetEndLocalNs(); end > 0 {
		return end, false
	}
	return f.GetInterruptedLocalNs(), true
}

// openCalls are the calls in progress unf that can be drawn (the first
// maxUnfinished), of a process whose tracing started at local time start
// and that ended at end (footerEnd). Local clocks read positive
// nanoseconds; a call cannot start before tracing did, nor (but in a
// damaged footer) months after; an end before the entry or months after
// it is unknown.
func openCalls(unf []*tracepb.UnfinishedCall, start, end int64, atLeast bool) []OpenCall {
	var out []OpenCall
	for i, u := range unf[:min(len(unf), maxUnfinished)] {
		if e := u.EntryLocalNs; e <= 0 || e < start || e-start > maxOpenSpan {
			continue
		}
		c := OpenCall{Index: i, Thread: u.Thread, Function: u.Function, Name: cmp.Or(u.Name, unknownFunction),
			ReturnAddress: u.ReturnAddress, PythonStack: u.PythonStack, Entry: u.EntryLocalNs}
		if d := end - u.EntryLocalNs; end > 0 && d >= 0 && d <= maxOpenSpan {
			c.End, c.AtLeast = end, atLeast
		}
		out = append(out, c)
	}
	return out
}

// unknownFunction names a call in progress whose footer gives no name (a
// damaged one).
const unknownFunction = "(unknown MPI function)"

// maxUnfinished bounds the calls in progress taken from one footer.
const maxUnfinished = 1 << 12
