package trpa

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dtpa/dtpa/report"
)

// maxWaitRows is how many waits an interval's waits section lists.
const maxWaitRows = 10

// waitRow is one line of the waits section: a report.Wait, or with
// NoPerProcessor the waits of one kind between two call sites summed over
// processors (ranks -1).
type waitRow struct {
	kind              string
	waiting, late     int
	seconds           float64
	count             int64
	waitingSRC, lateS int
}

// waitRows are the longest waits of iv, at most maxWaitRows, and how many
// there are in all.
func waitRows(iv *report.Interval, opts Options) (rows []waitRow, total int) {
	if !opts.NoPerProcessor {
		for _, w := range iv.Waits {
			rows = append(rows, waitRow{w.Kind, w.WaitingRank, w.LateRank, w.Seconds, w.Count, w.WaitingSRC, w.LateSRC})
		}
	} else {
		type key struct {
			kind      string
			src, lsrc int
		}
		by := map[key]*waitRow{}
		for _, w := range iv.Waits {
			k := key{w.Kind, w.WaitingSRC, w.LateSRC}
			r := by[k]
			if r == nil {
				r = &waitRow{kind: w.Kind, waiting: -1, late: -1, waitingSRC: w.WaitingSRC, lateS: w.LateSRC}
				by[k] = r
			}
			r.seconds += w.Seconds
			r.count += w.Count
		}
		for _, r := range by {
			rows = append(rows, *r)
		}
		slices.SortFunc(rows, func(a, b waitRow) int {
			return cmp.Or(cmp.Compare(b.seconds, a.seconds), cmp.Compare(a.kind, b.kind),
				cmp.Compare(a.waitingSRC, b.waitingSRC), cmp.Compare(a.lateS, b.lateS))
		})
	}
	total = len(rows)
	if len(rows) > maxWaitRows {
		rows = rows[:maxWaitRows]
	}
	return rows, total
}

// waits prints the interval's longest waits with the partners that caused
// them (docs/characteristics.md §9): kind, who waited where, and whose
// call came late where.
func (p *printer) waits(r *report.Report, iv *report.Interval) {
	rows, total := waitRows(iv, p.opts)
	if total == 0 {
		return
	}
	p.printf("\n--- Waits and their causes (%d of %d) ---\n", len(rows), total)
	procs := !p.opts.NoPerProcessor
	if procs {
		p.printf("  %10s %8s  %-30s %7s %5s  %-34s  %s\n", "Seconds", "Count", "Kind", "Waiting", "Late", "waiting call", "late call")
	} else {
		p.printf("  %10s %8s  %-30s  %-34s  %s\n", "Seconds", "Count", "Kind", "waiting call", "late call")
	}
	for _, w := range rows {
		ws, ls := callSite(r, iv, w.waitingSRC), callSite(r, iv, w.lateS)
		if procs {
			p.printf("  %10s %8d  %-30s %7d %5d  %-34s  %s\n", seconds(w.seconds), w.count, w.kind, w.waiting, w.late, ws, ls)
		} else {
			p.printf("  %10s %8d  %-30s  %-34s  %s\n", seconds(w.seconds), w.count, w.kind, ws, ls)
		}
	}
	p.causes(r, iv)
}

// maxCauseRows is how many causes an interval's waits section lists.
const maxCauseRows = 5

// causes prints the interval's causes of waits, the longest delay first
// (docs/characteristics.md §9, "Causes"): whose code, between which two
// calls, made others wait, and how much longer it computed than they did.
func (p *printer) causes(r *report.Report, iv *report.Interval) {
	if len(iv.Causes) == 0 {
		return
	}
	rows := iv.Causes
	if len(rows) > maxCauseRows {
		rows = rows[:maxCauseRows]
	}
	p.printf("\n--- Causes: the late partners' computation (%d of %d) ---\n", len(rows), len(iv.Causes))
	p.printf("  %10s %10s %8s %5s  %10s %10s  %s\n", "Delay", "Waits", "Count", "Late", "its comp", "waiters'", "code from call … to late call")
	for _, c := range rows {
		from := "program start"
		if c.FromSRC != 0 {
			from = callSite(r, iv, c.FromSRC)
		}
		n := float64(max(c.Count, 1))
		p.printf("  %10s %10s %8d %5d  %10s %10s  %s … %s\n", seconds(c.Delay), seconds(c.Waits), c.Count, c.LateRank,
			seconds(c.LateComputation/n), seconds(c.WaitingComputation/n), from, callSite(r, iv, c.ToSRC))
	}
}

// maxSRCWaits is how many partners an SRC point lists as having made it
// wait.
const maxSRCWaits = 3

// srcWaits prints, under SRC point s, who made it wait: its waits merged
// by kind, late rank and late call, the longest first.
func (p *printer) srcWaits(r *report.Report, iv *report.Interval, s *report.SRC) {
	type key struct {
		kind       string
		late, lsrc int
	}
	by := map[key]float64{}
	for _, w := range iv.Waits {
		if w.WaitingSRC == s.ID {
			by[key{w.Kind, w.LateRank, w.LateSRC}] += w.Seconds
		}
	}
	if len(by) == 0 {
		return
	}
	keys := make([]key, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a.kind, b.kind), cmp.Compare(a.late, b.late), cmp.Compare(a.lsrc, b.lsrc))
	})
	p.printf("  Made it wait (%d of %d):\n", min(len(keys), maxSRCWaits), len(keys))
	for _, k := range keys[:min(len(keys), maxSRCWaits)] {
		p.printf("    %10s  %-30s rank %d at %s\n", seconds(by[k]), k.kind, k.late, callSite(r, iv, k.lsrc))
	}
}

// callSite describes SRC point id: its function, id and source position.
// The late partner's call may lie outside iv: it is then looked up in the
// whole program's interval.
func callSite(r *report.Report, iv *report.Interval, id int) string {
	s := srcByID(iv, id)
	if s == nil && len(r.Intervals) > 0 {
		s = srcByID(&r.Intervals[0], id)
	}
	if s == nil {
		return fmt.Sprintf("[%d]", id)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%d]", s.Function, id)
	if f, l, ok := sourcePos(s); ok {
		fmt.Fprintf(&b, " %s:%d", shortFile(f), l)
	}
	return b.String()
}

// srcByID finds SRC point id in iv (a linear search: the report does not
// promise an order of iv.SRC, and few lines are printed).
func srcByID(iv *report.Interval, id int) *report.SRC {
	i := slices.IndexFunc(iv.SRC, func(s report.SRC) bool { return s.ID == id })
	if i < 0 {
		return nil
	}
	return &iv.SRC[i]
}

// shortFile is a source file's base name: the full path is in the SRC
// listing.
func shortFile(f string) string {
	if i := strings.LastIndexByte(f, '/'); i >= 0 {
		return f[i+1:]
	}
	return f
}
