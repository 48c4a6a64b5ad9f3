package diff

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/report"
)

// row is one line of an interval's comparison: a characteristic of
// report.Main, indented under the one it is part of.
type row struct {
	name  string
	depth int
	value func(*report.Main) float64
	kind  int // seconds, count or fraction
}

const (
	secs = iota
	count
	fraction
)

// rows are the main characteristics compared, in the order and nesting of
// the .trpa report's main characteristics.
var rows = []row{
	{"Parallelization efficiency", 0, func(m *report.Main) float64 { return m.Efficiency }, fraction},
	{"Execution time", 0, func(m *report.Main) float64 { return m.ExecutionTime }, secs},
	{"Processors", 0, func(m *report.Main) float64 { return float64(m.Processors) }, count},
	{"Total time", 0, func(m *report.Main) float64 { return m.TotalTime }, secs},
	{"Productive time", 0, func(m *report.Main) float64 { return m.ProductiveTime }, secs},
	{"Lost time", 0, func(m *report.Main) float64 { return m.LostTime }, secs},
	{"Insufficient parallelism", 1, func(m *report.Main) float64 { return m.InsufficientParallelism }, secs},
	{"Communications", 1, func(m *report.Main) float64 { return m.Communications }, secs},
	{"SendRecv time", 2, func(m *report.Main) float64 { return m.SendRecvTime }, secs},
	{"Real sync", 3, func(m *report.Main) float64 { return m.RealSync }, secs},
	{"Collective time", 2, func(m *report.Main) float64 { return m.CollectiveTime }, secs},
	{"System time", 2, func(m *report.Main) float64 { return m.SystemTime }, secs},
	{"Idle time", 1, func(m *report.Main) float64 { return m.IdleTime }, secs},
	{"Load imbalance", 0, func(m *report.Main) float64 { return m.LoadImbalance }, secs},
	{"Potential sync", 0, func(m *report.Main) float64 { return m.PotentialSync }, secs},
	{"Time variation", 0, func(m *report.Main) float64 { return m.TimeVariation }, secs},
	{"Overlap", 0, func(m *report.Main) float64 { return m.Overlap }, secs},
	{"Send number", 0, func(m *report.Main) float64 { return float64(m.SendNumber) }, count},
	{"Receive number", 0, func(m *report.Main) float64 { return float64(m.ReceiveNumber) }, count},
	{"Collective number", 0, func(m *report.Main) float64 { return float64(m.CollectiveNumber) }, count},
}

const rule = "================================================================================"

// Write prints d as text: per interval, run A and run B side by side with
// the difference B − A and the ratio B / A, then the call sites whose
// Comm changed most.
func Write(w io.Writer, d *Diff) error {
	bw := bufio.NewWriter(w)
	// Every line without trailing blanks (an empty ratio column).
	p := func(format string, a ...any) {
		s := fmt.Sprintf(format, a...)
		if t, ok := strings.CutSuffix(s, "\n"); ok {
			s = strings.TrimRight(t, " ") + "\n"
		}
		bw.WriteString(s)
	}
	p("dtpa comparison of two runs\n")
	p("A: %s, %d processors\n", d.A.Task, d.A.Processors)
	p("B: %s, %d processors\n", d.B.Task, d.B.Processors)
	for _, iv := range d.Intervals {
		p("\n%s\n", rule)
		if len(iv.Path) == 0 {
			p("INTERVAL (whole program)\n")
		} else {
			p("INTERVAL %s", report.PathString(iv.Path))
			if iv.SourceFile != "" && iv.Line > 0 {
				p("  SOURCE=%s  LINE=%d", iv.SourceFile, iv.Line)
			}
			p("\n")
		}
		p("%s\n", rule)
		switch {
		case iv.A == nil:
			p("(only in run B)\n")
		case iv.B == nil:
			p("(only in run A)\n")
		}
		p("%-30s %12s %12s %12s %8s\n", "", "A", "B", "B - A", "B / A")
		for _, r := range rows {
			name := fmt.Sprintf("%*s%s", 2*r.depth, "", r.name)
			var a, b float64
			va, vb := "-", "-"
			if iv.A != nil {
				a = r.value(iv.A)
				va = format(a, r.kind)
			}
			if iv.B != nil {
				b = r.value(iv.B)
				vb = format(b, r.kind)
			}
			delta, ratio := "", ""
			if iv.A != nil && iv.B != nil {
				delta = format(b-a, r.kind)
				if a != 0 {
					ratio = strconv.FormatFloat(b/a, 'f', 3, 64)
				}
			}
			p("%-30s %12s %12s %12s %8s\n", name, va, vb, delta, ratio)
		}
		if len(iv.SRC) > 0 {
			p("\nCall sites whose Comm changed most (seconds; [SRC id in A / in B]):\n")
			p("  %12s %12s %12s\n", "A", "B", "B - A")
			for _, s := range iv.SRC {
				at := s.Function
				if s.File != "" {
					at += fmt.Sprintf(" at %s:%d", filepath.Base(s.File), s.Line)
				}
				p("  %12s %12s %12s  %s [%s / %s]\n", format(s.CommA, secs), format(s.CommB, secs),
					format(s.CommB-s.CommA, secs), at, id(s.IDA), id(s.IDB))
			}
		}
	}
	return bw.Flush()
}

func id(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func format(v float64, kind int) string {
	switch kind {
	case count:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case fraction:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}
