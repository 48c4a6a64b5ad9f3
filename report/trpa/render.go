// Package trpa renders a report.Report as the .trpa text report, laid out
// after DVM's PPPA: per interval an information line, then the main,
// comparative, execution (per-processor) and SRC (call site)
// characteristics.
//
// Rendering is two steps, as in pprof's report package: rows.go decides
// what is shown and in which order (and computes shares such as "% of
// Total time"), render.go formats those rows. Neither recomputes a
// characteristic; every number comes from the report.
//
// Precision is fixed so that reports diff well: seconds with 6 decimals,
// percentages with 2, counts as integers, the efficiency as a fraction with
// 4 decimals followed by its percentage.
package trpa

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/dtpa/dtpa/report"
)

// SRCOrder is how one SRC listing orders the call sites it keeps.
type SRCOrder int

const (
	// ByComm lists call sites by decreasing Comm (dtpa -src).
	ByComm SRCOrder = iota
	// BySource lists call sites by source position: file and line of the
	// innermost frame that has a file, then id (dtpa -srct).
	BySource
)

// SRCListing is one SRC listing per interval.
type SRCListing struct {
	Order SRCOrder
	// Cut, in percent of the interval's Communications: call sites are
	// taken by decreasing Comm up to the first one whose Comm is below Cut
	// % (so 100 keeps at most the sites that alone account for all of it).
	// 0 keeps every site.
	Cut float64
}

// DefaultRankColumns is the largest number of processors printed one
// column each in the execution characteristics; beyond it processors are
// rows, which stays readable at hundreds of ranks.
const DefaultRankColumns = 8

// Options select what Render prints.
type Options struct {
	// NoPerProcessor (dtpa -wp) leaves out the execution characteristics
	// and the per-processor lines of the SRC characteristics.
	NoPerProcessor bool
	// SRC lists the SRC listings printed in each interval, in order. Empty
	// means one listing of every call site by decreasing Comm.
	SRC []SRCListing
	// RankColumns overrides DefaultRankColumns when positive.
	RankColumns int
}

// Render writes the .trpa report of r to w.
func Render(w io.Writer, r *report.Report, opts Options) error {
	bw := bufio.NewWriter(w)
	p := &printer{w: bw, opts: opts}
	p.header(r)
	for _, ir := range buildRows(r, opts) {
		p.interval(r, &ir)
	}
	return bw.Flush()
}

type printer struct {
	w    *bufio.Writer
	opts Options
}

func (p *printer) printf(format string, a ...any) { fmt.Fprintf(p.w, format, a...) }

const rule = "================================================================================"

func (p *printer) header(r *report.Report) {
	p.printf("dtpa performance report\n")
	p.printf("Task: %s    Processors: %d    Intervals: %d\n", r.Task, r.Processors, len(r.Intervals))
	p.findings(r)
	p.runFacts(r)
	if len(r.Warnings) > 0 {
		p.printf("\nWarnings (%d):\n", len(r.Warnings))
		for _, w := range r.Warnings {
			p.printf("  - %s\n", w)
		}
	}
	if cv := r.ClockViolations; cv != nil {
		if cv.Count > 0 || cv.Unrepaired == 0 {
			how := "not repaired"
			if cv.Repaired {
				how = fmt.Sprintf("repaired (%d amortized backward)", cv.Amortized)
			}
			p.printf("\nClock-condition violations: %d, worst %.9f s on processor %d, %s\n", cv.Count, cv.Worst, cv.WorstRank, how)
		} else {
			p.printf("\n")
		}
		if cv.Unrepaired > 0 {
			p.printf("Clock-condition violations not repaired: %d (synchronous sends %d, nonblocking collectives %d, threaded collectives %d), worst %.9f s on processor %d\n",
				cv.Unrepaired, cv.UnrepairedSyncSends, cv.UnrepairedNonblocking, cv.UnrepairedThreaded, cv.UnrepairedWorst, cv.UnrepairedWorstRank)
		}
	}
	if u := r.Unmatched; u != nil {
		if cv := r.ClockViolations; cv == nil {
			p.printf("\n")
		}
		p.printf("Unmatched operations: receives %d, sends %d, collectives %d, requests %d; replay stalls %d\n",
			u.Receives, u.Sends, u.Collectives, u.Requests, u.Stalls)
	}
	if len(r.Unfinished) > 0 {
		p.printf("\nMPI calls in progress when the processes ended (not in the figures):\n")
		for _, l := range report.UnfinishedLines(r.Unfinished) {
			p.printf("  - %s\n", l)
		}
		if ls := report.ElsewhereLines(r.Elsewhere); len(ls) > 0 {
			p.printf("  In no MPI call then:\n")
			for _, l := range ls {
				p.printf("  - %s\n", l)
			}
		}
	}
	for i, c := range r.Crashes {
		if i == 0 {
			p.printf("\n%s:\n", report.CrashesHeading(r.Crashes))
		}
		for j, l := range c.Lines() {
			if j == 0 {
				p.printf("  - %s\n", l)
			} else {
				p.printf("      %s\n", l)
			}
		}
	}
}

func (p *printer) interval(r *report.Report, ir *intervalRows) {
	iv := ir.iv
	p.printf("\n%s\n", rule)
	if iv.Level == 0 {
		p.printf("INTERVAL (whole program)  LEVEL=0  PROGRAM=%s  EXE_CNT=%d\n", orUnknown(iv.SourceFile), iv.ExeCount)
	} else {
		p.printf("INTERVAL %s  LEVEL=%d  NUMBER=%d  SOURCE=%s  LINE=%d  EXE_CNT=%d\n",
			ir.path, iv.Level, iv.Number, orUnknown(iv.SourceFile), iv.Line, iv.ExeCount)
	}
	p.printf("%s\n", rule)
	if iv.Incomplete {
		// Before any figure: they lack events (a trace cut short).
		p.printf("INCOMPLETE  %s\n", iv.IncompleteReason)
		for _, rk := range iv.Ranks {
			if rk.Incomplete {
				p.printf("  processor %d: %s\n", rk.Rank, rk.IncompleteReason)
			}
		}
		p.printf("\n")
	}

	p.printf("--- The main characteristics ---\n")
	p.mainTable(ir.main)

	p.printf("\n--- The comparative characteristics ---\n")
	p.compTable(ir.comp)

	if ir.exec != nil {
		p.printf("\n--- The execution characteristics ---\n")
		p.execTables(iv.Ranks, ir.exec)
	}
	p.waits(r, iv)
	for _, l := range ir.src {
		p.srcListing(r, iv, &l)
	}
	p.profile(iv)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func orUnknown(s string) string {
	if s == "" {
		return "??"
	}
	return s
}

// seconds formats a time; every time in the report uses it.
func seconds(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" }

func count(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func value(v float64, isCount bool) string {
	if isCount {
		return count(v)
	}
	return seconds(v)
}

// emit prints a rendered table with every line indented.
func (p *printer) emit(t *textTable, indent string) {
	for _, line := range strings.Split(t.Render(), "\n") {
		p.w.WriteString(indent)
		p.w.WriteString(strings.TrimRight(line, " "))
		p.w.WriteByte('\n')
	}
}

func rightAligned(from, to int) []table.ColumnConfig {
	var cc []table.ColumnConfig
	for n := from; n <= to; n++ {
		cc = append(cc, table.ColumnConfig{Number: n, Align: text.AlignRight, AlignHeader: text.AlignRight})
	}
	return cc
}

// mainTable prints the main characteristics: name (indented under its
// total), value, share of Total time, and details such as counts.
func (p *printer) mainTable(rows []mainRow) {
	t := newTable()
	t.separateHeader = false
	for _, r := range rows {
		name := strings.Repeat("  ", r.depth) + r.name
		var val, sh string
		switch {
		case r.eff:
			val, sh = strconv.FormatFloat(r.value, 'f', 4, 64), "("+percent(r.value)+")"
		case r.noShare:
			val = value(r.value, r.count)
		default:
			val, sh = seconds(r.value), percent(r.share)
		}
		var ds []string
		for _, d := range r.detail {
			ds = append(ds, d.name+" "+value(d.value, d.count))
		}
		t.AppendRow(table.Row{name, val, sh, strings.Join(ds, "  ")})
	}
	t.SetColumnConfigs(rightAligned(2, 3))
	p.emit(t, "")
	p.printf("(percentages are of Total time)\n")
}

func (p *printer) compTable(rows []compRow) {
	t := newTable()
	t.AppendHeader(table.Row{"", "Tmin", "Nproc", "Tmax", "Nproc", "Tmid"})
	for _, r := range rows {
		s := r.stat
		t.AppendRow(table.Row{r.name, seconds(s.Min), s.MinProc, seconds(s.Max), s.MaxProc, seconds(s.Mean)})
	}
	t.SetColumnConfigs(rightAligned(2, 6))
	p.emit(t, "")
}

// execTables prints one column per processor when they fit, else one row
// per processor split into a times table and a components-and-counts table
// so that neither gets wider than a wide terminal.
func (p *printer) execTables(ranks []report.Rank, rows []execRow) {
	maxCols := p.opts.RankColumns
	if maxCols <= 0 {
		maxCols = DefaultRankColumns
	}
	if len(ranks) <= maxCols {
		t := newTable()
		hdr := table.Row{"Processor"}
		for _, r := range ranks {
			hdr = append(hdr, r.Rank)
		}
		t.AppendHeader(hdr)
		for _, er := range rows {
			row := table.Row{er.name}
			for _, v := range er.values {
				row = append(row, value(v, er.count))
			}
			t.AppendRow(row)
		}
		t.SetColumnConfigs(rightAligned(2, len(ranks)+1))
		p.emit(t, "")
		return
	}
	byName := map[string]execRow{}
	for _, er := range rows {
		byName[er.name] = er
	}
	times := []string{"Exe count", "Execution time", "Productive time", "Lost time", "Idle time",
		"Communications", "Real sync", "Load imbalance", "Potential sync", "Time variation", "Overlap"}
	parts := []string{"Insufficient parallelism", "SendRecv time", "Collective time", "System time",
		"Send number", "Receive number", "Wait number", "Collective number", "System number"}
	for i, names := range [][]string{times, parts} {
		if i > 0 {
			p.printf("\n")
		}
		t := newTable()
		hdr := table.Row{"Proc"}
		var cols []execRow
		for _, n := range names {
			if er, ok := byName[n]; ok {
				cols = append(cols, er)
				hdr = append(hdr, er.short)
			}
		}
		t.AppendHeader(hdr)
		for j, r := range ranks {
			row := table.Row{r.Rank}
			for _, er := range cols {
				row = append(row, value(er.values[j], er.count))
			}
			t.AppendRow(row)
		}
		t.SetColumnConfigs(rightAligned(1, len(cols)+1))
		p.emit(t, "")
	}
}

func (p *printer) srcListing(r *report.Report, iv *report.Interval, l *srcListing) {
	order := "by decreasing Comm"
	if l.listing.Order == BySource {
		order = "by source position"
	}
	p.printf("\n--- The SRC characteristics ---\n")
	if l.listing.Cut > 0 {
		p.printf("(%d of %s, %s; cut below %s%% of Communications %s)\n",
			len(l.points), plural(l.total, "point"), order, strconv.FormatFloat(l.listing.Cut, 'f', -1, 64), seconds(iv.Main.Communications))
	} else {
		p.printf("(%s, %s)\n", plural(l.total, "point"), order)
	}
	for _, sr := range l.points {
		p.srcPoint(r, iv, &sr)
	}
}

func (p *printer) srcPoint(r *report.Report, iv *report.Interval, sr *srcRow) {
	s := sr.src
	p.printf("\nSRC %d  %s\n", s.ID, s.Function)
	t := newTable()
	t.separateHeader = false
	t.AppendRow(table.Row{"Comm", seconds(s.Comm), percent(sr.share) + " of Communications"})
	if s.RealSync != 0 {
		t.AppendRow(table.Row{"Real sync", seconds(s.RealSync)})
	}
	if s.LateReceiver != 0 {
		t.AppendRow(table.Row{"  Late receiver", seconds(s.LateReceiver)})
	}
	t.AppendRow(table.Row{"Potential sync", seconds(s.PotentialSync)})
	t.AppendRow(table.Row{"Time variation", seconds(s.TimeVariation)})
	t.AppendRow(table.Row{"Overlap", seconds(s.Overlap)})
	t.SetColumnConfigs(rightAligned(2, 2))
	p.emit(t, "  ")

	if len(s.Stack) == 0 {
		// UserStackSize 0, or every recorded frame was inside MPI or the
		// tracer (a Fortran binding without frame pointers, for one).
		p.printf("  Stack: (no frame recorded outside MPI)\n")
	} else {
		p.printf("  Stack (innermost first):\n")
		t := newTable()
		t.separateHeader = false
		for i, f := range s.Stack {
			line := ""
			if f.Line > 0 {
				line = strconv.Itoa(f.Line)
			}
			t.AppendRow(table.Row{"#" + strconv.Itoa(i), orUnknown(f.Function), orUnknown(f.File), line})
		}
		t.SetColumnConfigs(rightAligned(4, 4))
		p.emit(t, "    ")
	}
	p.srcWaits(r, iv, s)

	if p.opts.NoPerProcessor || len(s.Ranks) == 0 {
		return
	}
	t = newTable()
	t.AppendHeader(table.Row{"Proc", "ExeCount", "ExeTime", "RealSync", "PotSync", "TimeVar", "Overlap"})
	for _, r := range s.Ranks {
		t.AppendRow(table.Row{r.Rank, r.ExeCount, seconds(r.ExeTime), seconds(r.RealSync),
			seconds(r.PotentialSync), seconds(r.TimeVariation), seconds(r.Overlap)})
	}
	t.SetColumnConfigs(rightAligned(1, 7))
	p.emit(t, "  ")
}
