// Package diff compares the reports of two runs of a program (dtpa
// --diff): their main characteristics side by side per interval, the
// intervals matched by their path, and the call sites whose Comm changed
// most. The runs may have different processor counts: comparing a run
// with its one-process run is the comparison docs/characteristics.md §7
// suggests.
//
// Call sites are matched by their function and call stack (function,
// file, line per frame), which are the same in two runs of one build; SRC
// ids are numbered per report and are not compared.
package diff

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/report"
)

// Diff is the comparison of run A with run B.
type Diff struct {
	A         Run        `json:"a"`
	B         Run        `json:"b"`
	Intervals []Interval `json:"intervals"` // A's intervals in order, then those only B has
}

// Run names one side.
type Run struct {
	Task       string `json:"task"`
	Processors int    `json:"processors"`
}

// Interval is one interval path and its main characteristics in each run;
// nil on the side that has no such interval.
type Interval struct {
	Path       []int        `json:"path"`
	SourceFile string       `json:"source_file"`
	Line       int          `json:"line"`
	A          *report.Main `json:"a"`
	B          *report.Main `json:"b"`
	// SRC are the call sites whose Comm changed most, by decreasing
	// change (at most MaxSRC); a site absent from one run has Comm 0
	// there.
	SRC []SRC `json:"src"`
}

// SRC is one call site in both runs.
type SRC struct {
	Function string  `json:"function"`
	File     string  `json:"file"`
	Line     int     `json:"line"`
	CommA    float64 `json:"comm_a"`
	CommB    float64 `json:"comm_b"`
	// IDA and IDB are the site's SRC ids in each report; 0 where absent.
	IDA int `json:"id_a"`
	IDB int `json:"id_b"`
}

// MaxSRC is how many call sites an interval's comparison lists.
const MaxSRC = 5

// Compare compares report a with report b.
func Compare(a, b *report.Report) *Diff {
	d := &Diff{A: Run{a.Task, a.Processors}, B: Run{b.Task, b.Processors}}
	bi := map[string]*report.Interval{}
	for i := range b.Intervals {
		bi[report.PathString(b.Intervals[i].Path)] = &b.Intervals[i]
	}
	seen := map[string]bool{}
	for i := range a.Intervals {
		ia := &a.Intervals[i]
		k := report.PathString(ia.Path)
		seen[k] = true
		d.Intervals = append(d.Intervals, pair(ia, bi[k]))
	}
	for i := range b.Intervals {
		ib := &b.Intervals[i]
		if !seen[report.PathString(ib.Path)] {
			d.Intervals = append(d.Intervals, pair(nil, ib))
		}
	}
	return d
}

// pair compares one interval of each run (either may be nil).
func pair(a, b *report.Interval) Interval {
	var iv Interval
	for _, x := range []*report.Interval{b, a} {
		if x != nil {
			iv.Path = append([]int{}, x.Path...)
			if x.SourceFile != "" {
				iv.SourceFile, iv.Line = x.SourceFile, x.Line
			}
		}
	}
	type both struct{ a, b *report.SRC }
	sites := map[string]*both{}
	var keys []string
	add := func(x *report.Interval, side func(*both, *report.SRC)) {
		if x == nil {
			return
		}
		for i := range x.SRC {
			s := &x.SRC[i]
			k := siteKey(s)
			p := sites[k]
			if p == nil {
				p = &both{}
				sites[k] = p
				keys = append(keys, k)
			}
			side(p, s)
		}
	}
	if a != nil {
		m := a.Main
		iv.A = &m
	}
	if b != nil {
		m := b.Main
		iv.B = &m
	}
	add(a, func(p *both, s *report.SRC) { p.a = s })
	add(b, func(p *both, s *report.SRC) { p.b = s })
	for _, k := range keys {
		p := sites[k]
		var s SRC
		for _, x := range []*report.SRC{p.b, p.a} {
			if x != nil {
				s.Function = x.Function
				s.File, s.Line = report.Position(x)
			}
		}
		if p.a != nil {
			s.CommA, s.IDA = p.a.Comm, p.a.ID
		}
		if p.b != nil {
			s.CommB, s.IDB = p.b.Comm, p.b.ID
		}
		if s.CommA != s.CommB {
			iv.SRC = append(iv.SRC, s)
		}
	}
	slices.SortStableFunc(iv.SRC, func(x, y SRC) int {
		return cmp.Or(cmp.Compare(math.Abs(y.CommB-y.CommA), math.Abs(x.CommB-x.CommA)),
			cmp.Compare(x.File, y.File), cmp.Compare(x.Line, y.Line), cmp.Compare(x.Function, y.Function))
	})
	if len(iv.SRC) > MaxSRC {
		iv.SRC = iv.SRC[:MaxSRC]
	}
	if iv.SRC == nil {
		iv.SRC = []SRC{}
	}
	return iv
}

// siteKey identifies a call site across runs: its function and stack.
func siteKey(s *report.SRC) string {
	var b strings.Builder
	b.WriteString(s.Function)
	for _, f := range s.Stack {
		b.WriteString("|" + f.Function + "@" + f.File + ":" + strconv.Itoa(f.Line))
	}
	return b.String()
}
