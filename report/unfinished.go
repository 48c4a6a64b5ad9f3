package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// UnfinishedLines says which ranks were inside which MPI call when their
// processes ended, one line per function, place and thread (the thread
// named when it is not the main one), in order of first appearance, with
// how long the calls had run where that is known, or at least (until the
// job was interrupted, UnfinishedCall.AtLeast):
//
//	MPI_Recv at crash.c:49: ranks 0, 2, 3, for 1.007–1.008 s
//	MPI_Recv at hang.c:20: ranks 1-3, for at least 1.311–1.331 s (until the job was interrupted)
//
// A job of many ranks that hung in one place is one line.
func UnfinishedLines(cs []UnfinishedCall) []string {
	gs := UnfinishedGroups(cs)
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Line
	}
	return out
}

// UnfinishedGroup is one line of UnfinishedLines and the calls it says.
type UnfinishedGroup struct {
	Line string `json:"line"`
	// Calls are the line's calls as [rank, thread] pairs, in the order
	// of Report.Unfinished: what a page finds them by in the timeline.
	Calls [][2]int `json:"calls"`
}

// UnfinishedGroups is UnfinishedLines with the calls of each line.
func UnfinishedGroups(cs []UnfinishedCall) []UnfinishedGroup {
	type group struct {
		key      string
		ranks    []int
		calls    [][2]int
		lo, hi   float64
		timed    int
		untimedN int
		boundN   int // timed calls whose time is a lower bound
	}
	var groups []*group
	by := map[string]*group{}
	for _, c := range cs {
		key := c.Function
		if c.File != "" {
			key += fmt.Sprintf(" at %s:%d", filepath.Base(c.File), c.Line)
		}
		if c.Thread != 0 {
			key += fmt.Sprintf(" (thread %d)", c.Thread)
		}
		g := by[key]
		if g == nil {
			g = &group{key: key}
			by[key] = g
			groups = append(groups, g)
		}
		g.ranks = append(g.ranks, c.Rank)
		g.calls = append(g.calls, [2]int{c.Rank, c.Thread})
		if c.Seconds == nil {
			g.untimedN++
			continue
		}
		if g.timed == 0 || *c.Seconds < g.lo {
			g.lo = *c.Seconds
		}
		if g.timed == 0 || *c.Seconds > g.hi {
			g.hi = *c.Seconds
		}
		g.timed++
		if c.AtLeast {
			g.boundN++
		}
	}
	out := make([]UnfinishedGroup, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g.ranks)
		g.ranks = slices.Compact(g.ranks)
		var b strings.Builder
		b.WriteString(g.key)
		b.WriteString(": " + RanksOf(g.ranks))
		var notes []string
		if g.timed > 0 {
			b.WriteString(", for ")
			if g.boundN == g.timed {
				b.WriteString("at least ")
				notes = append(notes, "until the job was interrupted")
			} else if g.boundN > 0 {
				notes = append(notes, fmt.Sprintf("%d of them at least, until the job was interrupted", g.boundN))
			}
			if lo, hi := fmt.Sprintf("%.3f", g.lo), fmt.Sprintf("%.3f", g.hi); lo == hi {
				fmt.Fprintf(&b, "%s s", lo)
			} else {
				fmt.Fprintf(&b, "%s–%s s", lo, hi)
			}
			if g.untimedN > 0 {
				notes = append(notes, fmt.Sprintf("%d of them for an unknown time", g.untimedN))
			}
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
		}
		out = append(out, UnfinishedGroup{Line: b.String(), Calls: g.calls})
	}
	return out
}

// ElsewhereLines says where the ranks of es were, one line per state and
// last call, in order of first appearance:
//
//	rank 1: had called MPI_Finalize at exc.c:30
//	ranks 2, 3: had exited without MPI_Finalize, after MPI_Send at app.c:40
//	rank 4: in no MPI call, after MPI_Recv at app.c:52
//	rank 7: in no MPI call (in spin at app.c:60), after MPI_Recv at app.c:52
//	rank 5: had exited without MPI_Finalize (exit(3) from check at app.c:20), after MPI_Barrier at app.c:13
//	rank 6: had exited without MPI_Finalize (main returned 1), after MPI_Barrier at app.c:13
func ElsewhereLines(es []RankElsewhere) []string {
	var keys []string
	ranks := map[string][]int{}
	for _, e := range es {
		var k string
		switch e.State {
		case "finalized":
			k = "had called MPI_Finalize"
			if e.LastCall != nil && e.LastCall.Function == "MPI_Finalize" {
				k = "had called " + e.LastCall.String()
			}
		case "exited":
			k = "had exited without MPI_Finalize"
			if d := e.ExitHow(); d != "" {
				k += " (" + d + ")"
			}
		default:
			k = "in no MPI call"
			if e.Where != nil {
				k += " (in " + e.Where.String() + ")"
			}
		}
		if e.LastCall != nil && e.State != "finalized" {
			k += ", after " + e.LastCall.String()
		}
		if _, ok := ranks[k]; !ok {
			keys = append(keys, k)
		}
		ranks[k] = append(ranks[k], e.Rank)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		rs := ranks[k]
		slices.Sort(rs)
		out[i] = RanksOf(slices.Compact(rs)) + ": " + k
	}
	return out
}

// ExitHow says how an "exited" rank exited: "exit(3) from check at
// app.c:20", "main returned 1", "status 3"; "" when unknown.
func (e *RankElsewhere) ExitHow() string {
	st := ""
	if e.ExitStatus != nil {
		st = strconv.Itoa(*e.ExitStatus)
	}
	switch {
	case e.MainReturned:
		return strings.TrimSpace("main returned " + st)
	case e.Exit != nil && st != "":
		return fmt.Sprintf("exit(%s) from %s", st, e.Exit)
	case e.Exit != nil:
		return "exit from " + e.Exit.String()
	case st != "":
		return "status " + st
	}
	return ""
}
