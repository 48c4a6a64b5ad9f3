package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Findings are what a report says first: the reading recipe of
// docs/characteristics.md §7 applied to the report's figures, so that a
// reader starts where the time is lost. They are derived from the other
// figures of the report (FindingsOf), never measured.
type Findings struct {
	// Interval is the path of the interval the verdict is about: the
	// deepest one holding most of the program's lost time (the main loop,
	// usually).
	Interval []int `json:"interval"`
	// Verdict is the recipe's reading in one sentence: the share of lost
	// time, the part of it that dominates and the call site where it is
	// lost, and the processor with the most productive work when the load
	// is unbalanced.
	Verdict string `json:"verdict"`
	// Losses are the largest single losses of that interval, the largest
	// first (at most MaxLosses).
	Losses []Loss `json:"losses"`
}

// Loss is one processor's loss of one kind, at one call site where it has
// one.
type Loss struct {
	// Kind is real_sync (waiting for a late partner in point-to-point
	// calls), potential_sync (waiting for the last to enter a
	// collective), communication (the rest of the time in MPI calls), idle
	// or insufficient_parallelism.
	Kind    string  `json:"kind"`
	Rank    int     `json:"rank"`
	Seconds float64 `json:"seconds"`
	// Share is Seconds over the interval's Total time.
	Share float64 `json:"share"`
	// SRC is the call site's id and Function, File, Line its MPI function
	// and innermost source position; 0 and empty for idle and
	// insufficient_parallelism, which lie at no call site.
	SRC      int    `json:"src,omitempty"`
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Caller is the function the call was made from, when no frame has a
	// file (a program or library built without -g, as distributions ship
	// them): Caller names the place where File and Line cannot.
	Caller string `json:"caller,omitempty"`
	// LateRank is the partner whose late call caused most of a real_sync
	// or potential_sync loss (from Interval.Waits); -1 when unknown.
	LateRank int `json:"late_rank"`
}

// Loss kinds.
const (
	LossRealSync      = "real_sync"
	LossPotentialSync = "potential_sync"
	LossCommunication = "communication"
	LossIdle          = "idle"
	LossInsufficient  = "insufficient_parallelism"
)

// MaxLosses is how many losses Findings lists.
const MaxLosses = 3

// imbalanceShown is the Load Imbalance, as a share of Total time, from which
// the verdict names the processor with the most productive work (the
// usual cause of waits, docs/characteristics.md §7); below it the verdict
// calls the load balanced.
const imbalanceShown = 0.01

// FindingsOf reads r by the recipe of docs/characteristics.md §7; nil
// when r has no interval or no time.
func FindingsOf(r *Report) *Findings {
	iv := focus(r.Intervals)
	if iv == nil || iv.Main.TotalTime <= 0 {
		return nil
	}
	v := verdict(iv)
	if len(r.Unfinished) > 0 {
		// A job that hung and was ended: where it waited comes first,
		// since no figure holds that time.
		lines := UnfinishedLines(r.Unfinished)
		more := ""
		if len(lines) > maxUnfinishedShown {
			more = fmt.Sprintf("; and %d more", len(lines)-maxUnfinishedShown)
			lines = lines[:maxUnfinishedShown]
		}
		none := ""
		if ls := ElsewhereLines(r.Elsewhere); len(ls) > 0 {
			if len(ls) > maxUnfinishedShown {
				ls = append(ls[:maxUnfinishedShown], fmt.Sprintf("and %d more", len(ls)-maxUnfinishedShown))
			}
			none = " In none then: " + strings.Join(ls, "; ") + "."
		}
		v = "The processes ended inside MPI calls that never returned, whose time no figure holds (" +
			strings.Join(lines, "; ") + more + ")." + none + " " + v
	}
	if len(r.Crashes) > 0 {
		// Why the job ended comes before how it ran.
		c := r.Crashes[0].Where()
		more := ""
		if n := len(r.Crashes) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more crashes)", n)
		}
		v = strings.ToUpper(c[:1]) + c[1:] + more + ". " + v
	}
	return &Findings{
		Interval: append([]int{}, iv.Path...),
		Verdict:  v,
		Losses:   losses(iv),
	}
}

// maxUnfinishedShown bounds the calls in progress the verdict names (the
// report lists them all).
const maxUnfinishedShown = 3

// focus is the interval the findings are about: starting from the whole
// program, the child interval with the most lost time, as long as it holds
// at least half of its parent's.
func focus(ivs []Interval) *Interval {
	if len(ivs) == 0 {
		return nil
	}
	cur := &ivs[0]
	for {
		var best *Interval
		for i := range ivs {
			c := &ivs[i]
			if len(c.Path) == len(cur.Path)+1 && slices.Equal(c.Path[:len(cur.Path)], cur.Path) &&
				(best == nil || c.Main.LostTime > best.Main.LostTime) {
				best = c
			}
		}
		if best == nil || best.Main.LostTime < cur.Main.LostTime/2 || best.Main.LostTime <= 0 {
			return cur
		}
		cur = best
	}
}

// verdict is the one-sentence reading of iv.
func verdict(iv *Interval) string {
	m := &iv.Main
	var b strings.Builder
	fmt.Fprintf(&b, "Lost time is %s of total", pct(m.LostTime/m.TotalTime))
	if iv.Level > 0 {
		fmt.Fprintf(&b, " in interval %s", PathString(iv.Path))
		if iv.SourceFile != "" && iv.Line > 0 {
			fmt.Fprintf(&b, " (%s:%d)", filepath.Base(iv.SourceFile), iv.Line)
		}
	}
	if m.LostTime > 0 {
		b.WriteString(", mostly ")
		b.WriteString(dominant(iv))
	}
	if li := m.LoadImbalance / m.TotalTime; len(iv.Ranks) > 1 && li >= imbalanceShown {
		fmt.Fprintf(&b, "; rank %d has the most productive work (Load imbalance %s of total)",
			iv.Comparative.ProductiveTime.MaxProc, pct(li))
	} else if len(iv.Ranks) > 1 {
		fmt.Fprintf(&b, "; the load is balanced (Load imbalance %s of total)", pct(li))
	}
	b.WriteString(".")
	return b.String()
}

// dominant names the largest part of iv's Lost time and where it is lost:
// the recipe's "which part dominates", with Real Sync and Potential Sync
// named when they are most of their part.
func dominant(iv *Interval) string {
	m := &iv.Main
	parts := []struct {
		v    float64
		name string
	}{
		{m.SendRecvTime, "SendRecv time"},
		{m.CollectiveTime, "Collective time"},
		{m.SystemTime, "System time"},
		{m.IdleTime, "Idle time"},
		{m.InsufficientParallelism, "Insufficient parallelism"},
	}
	top := 0
	for i, p := range parts {
		if p.v > parts[top].v {
			top = i
		}
	}
	name := parts[top].name
	var site *SRC
	switch top {
	case 0:
		if m.RealSync >= m.SendRecvTime/2 {
			name = "Real Sync"
			site = largestSRC(iv, func(s *SRC) float64 { return s.RealSync })
		} else {
			site = largestComm(iv, tracepb.Function_POINT_TO_POINT)
		}
	case 1:
		if m.PotentialSync >= m.CollectiveTime/2 {
			name = "Potential Sync"
			site = largestSRC(iv, func(s *SRC) float64 { return s.PotentialSync })
		} else {
			site = largestComm(iv, tracepb.Function_COLLECTIVE)
		}
	case 2:
		site = largestComm(iv, tracepb.Function_SYSTEM)
	case 3:
		return fmt.Sprintf("%s: rank %d runs longest and the others wait for it to finish",
			name, iv.Comparative.ExecutionTime.MaxProc)
	}
	if site == nil {
		return name
	}
	s := name + " in " + site.Function
	if f, l := Position(site); f != "" {
		s += fmt.Sprintf(" at %s:%d", filepath.Base(f), l)
	} else if c := callerName(site); c != "" {
		s += " from " + c
	}
	return s
}

// largestComm is iv's call site of class c with the largest positive
// Comm; nil if none. A function is classified only when its site's Comm
// would be the largest so far.
func largestComm(iv *Interval, c tracepb.Function_Class) *SRC {
	var best *SRC
	for i := range iv.SRC {
		s := &iv.SRC[i]
		if s.Comm > 0 && (best == nil || s.Comm > best.Comm) && mpifunc.Classify(s.Function).Class == c {
			best = s
		}
	}
	return best
}

// largestSRC is iv's call site with the largest positive v; nil if none.
func largestSRC(iv *Interval, v func(*SRC) float64) *SRC {
	var best *SRC
	var most float64
	for i := range iv.SRC {
		s := &iv.SRC[i]
		if x := v(s); x > 0 && (best == nil || x > most) {
			best, most = s, x
		}
	}
	return best
}

// Position is a call site's source position: the innermost frame that has
// a file; "" when none has.
func Position(s *SRC) (file string, line int) {
	for _, f := range s.Stack {
		if f.File != "" {
			return f.File, f.Line
		}
	}
	return "", 0
}

// Caller is the function a call site's call was made from, when no frame
// has a file (Position): its innermost frame's function, without the
// offset a frame named from the symbol table carries
// (LAMMPS_NS::CommBrick::reverse_comm for
// LAMMPS_NS::CommBrick::reverse_comm+0x2bb); "" when a frame has a file,
// or none a function.
func Caller(s *SRC) string {
	if f, _ := Position(s); f != "" {
		return ""
	}
	return callerName(s)
}

// callerName is Caller for a call site whose frames have no file.
func callerName(s *SRC) string {
	if len(s.Stack) == 0 {
		return ""
	}
	fn := s.Stack[0].Function
	if i := strings.LastIndex(fn, "+0x"); i > 0 {
		fn = fn[:i]
	}
	return fn
}

// losses are iv's largest losses: per processor and call site its Real
// Sync, its Potential Sync and the rest of its time in the call; per
// processor its Idle time and Insufficient parallelism.
func losses(iv *Interval) []Loss {
	// The MaxLosses largest, kept in order as they come (a processor and
	// call site each add three): sorting them all, tens of thousands in
	// a large run, to keep three cost more than the rest of the findings.
	out := make([]Loss, 0, MaxLosses+1)
	// place is where a loss of these seconds, rank and call site goes
	// in out, −1 when it is not among the largest: after the last one it
	// does not precede, the order of a stable sort, whose ties keep the
	// order added.
	place := func(sec float64, rank, src int) int {
		if sec <= 0 {
			return -1
		}
		l := Loss{Seconds: sec, Rank: rank, SRC: src}
		i := len(out)
		for i > 0 && lossBefore(&l, &out[i-1]) {
			i--
		}
		if i >= MaxLosses {
			return -1
		}
		return i
	}
	insert := func(i int, l Loss) {
		l.Share = l.Seconds / iv.Main.TotalTime
		out = slices.Insert(out, i, l)
		if len(out) > MaxLosses {
			out = out[:MaxLosses]
		}
	}
	add := func(l Loss) {
		if i := place(l.Seconds, l.Rank, l.SRC); i >= 0 {
			insert(i, l)
		}
	}
	// A call site's losses are made (its position) only
	// when they are among the largest so far.
	for i := range iv.SRC {
		s := &iv.SRC[i]
		for _, sr := range s.Ranks {
			site := func(kind string, sec float64) Loss {
				l := Loss{Kind: kind, Seconds: sec, Rank: sr.Rank, SRC: s.ID, Function: s.Function, LateRank: -1}
				if l.File, l.Line = Position(s); l.File == "" {
					l.Caller = callerName(s)
				}
				return l
			}
			if j := place(sr.RealSync, sr.Rank, s.ID); j >= 0 {
				insert(j, site(LossRealSync, sr.RealSync))
			}
			if j := place(sr.PotentialSync, sr.Rank, s.ID); j >= 0 {
				insert(j, site(LossPotentialSync, sr.PotentialSync))
			}
			co := sr.ExeTime - sr.RealSync - sr.PotentialSync
			if j := place(co, sr.Rank, s.ID); j >= 0 {
				insert(j, site(LossCommunication, co))
			}
		}
	}
	for _, rk := range iv.Ranks {
		add(Loss{Kind: LossIdle, Rank: rk.Rank, Seconds: rk.IdleTime, LateRank: -1})
		add(Loss{Kind: LossInsufficient, Rank: rk.Rank, Seconds: rk.InsufficientParallelism, LateRank: -1})
	}
	if len(out) == 0 {
		return nil
	}
	lateRanks(out, iv.Waits)
	return out
}

// lossBefore orders losses: the largest first, then by rank and call site.
func lossBefore(a, b *Loss) bool {
	if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
		return c < 0
	}
	if a.Rank != b.Rank {
		return a.Rank < b.Rank
	}
	return a.SRC < b.SRC
}

// lateRanks sets the LateRank of the Real Sync and Potential Sync losses
// of ls: the partner that caused most of the loss's processor's waits at
// its call site, of point-to-point kinds for Real Sync and collective
// ones for Potential Sync; -1 when the waits do not say. They are summed
// by late rank for these few losses only, in one pass, once the largest
// are known: summing every processor's and call site's waits by late rank
// cost a map per processor and call site, most of the findings' cost.
func lateRanks(ls []Loss, waits []Wait) {
	var by [MaxLosses]map[int]float64
	n := 0
	for i := range ls {
		if k := ls[i].Kind; k == LossRealSync || k == LossPotentialSync {
			by[i] = map[int]float64{}
			n++
		}
	}
	if n == 0 {
		return
	}
	for j := range waits {
		w := &waits[j]
		var p2p, known bool
		for i := range ls {
			if by[i] == nil || ls[i].Rank != w.WaitingRank || ls[i].SRC != w.WaitingSRC {
				continue
			}
			if !known {
				p2p, known = IsP2PWait(w.Kind), true
			}
			if p2p == (ls[i].Kind == LossRealSync) {
				by[i][w.LateRank] += w.Seconds
			}
		}
	}
	for i := range ls {
		if by[i] != nil {
			ls[i].LateRank = lateRank(by[i])
		}
	}
}

// lateRank is the partner that caused most of a processor's waits at a
// call site, given their seconds by late rank; -1 when they do not say.
func lateRank(by map[int]float64) int {
	best, most := -1, 0.0
	for r, s := range by {
		if s > most || (s == most && r < best) {
			best, most = r, s
		}
	}
	return best
}

// pct formats a share as a percentage with one decimal.
func pct(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) }
