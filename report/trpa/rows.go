package trpa

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/report"
)

// This file is the rows step: it turns a report.Report and the Options into
// what is printed (which intervals, which call sites in which order, the
// shares of totals), with raw numbers. render.go only formats rows; neither
// recomputes a characteristic.

// intervalRows is one interval ready to print.
type intervalRows struct {
	iv   *report.Interval
	path string // "1/2"; "" for the whole program
	main []mainRow
	comp []compRow
	// exec is nil when per-processor output is off or nobody executed the
	// interval.
	exec []execRow
	src  []srcListing
}

// mainRow is one line of the main characteristics.
type mainRow struct {
	depth   int // indentation: 0 total, 1 component, 2 sub-component
	name    string
	value   float64
	count   bool    // value is a count, not seconds
	share   float64 // value / Total time, when hasShare
	detail  []detail
	eff     bool // the efficiency line: a fraction shown with its percentage
	noShare bool
}

// detail is a number printed beside a main characteristic ("Real sync 0.4").
type detail struct {
	name  string
	value float64
	count bool
}

// compRow is one line of the comparative characteristics.
type compRow struct {
	name string
	stat report.Stat
}

// execRow is one per-processor characteristic, with one value per entry of
// interval.Ranks.
type execRow struct {
	name   string
	short  string // header when processors are rows
	count  bool
	values []float64
}

// srcListing is one ordering of an interval's call sites after the cut.
type srcListing struct {
	listing SRCListing
	total   int // call sites in the interval
	points  []srcRow
}

// srcRow is one call site with its share of the interval's Communications.
type srcRow struct {
	src   *report.SRC
	share float64 // Comm / Main.Communications; 0 when that is 0
}

// buildRows selects and orders what Render prints.
func buildRows(r *report.Report, opts Options) []intervalRows {
	var out []intervalRows
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		ir := intervalRows{iv: iv, path: pathString(iv.Path)}
		ir.main = mainRows(&iv.Main)
		ir.comp = compRows(&iv.Comparative)
		if !opts.NoPerProcessor && len(iv.Ranks) > 0 {
			ir.exec = execRows(iv.Ranks)
		}
		listings := opts.SRC
		if len(listings) == 0 {
			listings = []SRCListing{{Order: ByComm}}
		}
		if len(iv.SRC) > 0 {
			for _, l := range listings {
				ir.src = append(ir.src, srcRows(iv, l))
			}
		}
		out = append(out, ir)
	}
	return out
}

func pathString(path []int) string {
	s := make([]string, len(path))
	for i, n := range path {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, "/")
}

func share(v, total float64) float64 {
	if total == 0 {
		return 0
	}
	return v / total
}

// mainRows lays out characteristics.md §5: totals, then Lost Time with its components
// nested under it. Zero Insufficient Parallelism (no sequential sections
// marked) and MPI classes that were never called are left out.
func mainRows(m *report.Main) []mainRow {
	tot := m.TotalTime
	row := func(depth int, name string, v float64, d ...detail) mainRow {
		return mainRow{depth: depth, name: name, value: v, share: share(v, tot), detail: d}
	}
	rows := []mainRow{
		{name: "Parallelization efficiency", value: m.Efficiency, eff: true},
		{name: "Execution time", value: m.ExecutionTime, noShare: true},
		{name: "Processors", value: float64(m.Processors), count: true, noShare: true},
		{name: "Total time", value: m.TotalTime, noShare: true},
		row(0, "Productive time", m.ProductiveTime),
		row(0, "Lost time", m.LostTime),
	}
	if m.InsufficientParallelism != 0 {
		rows = append(rows, row(1, "Insufficient parallelism", m.InsufficientParallelism))
	}
	rows = append(rows, row(1, "Communications", m.Communications))
	if m.SendRecvTime != 0 || m.SendNumber+m.ReceiveNumber+m.WaitNumber != 0 {
		d := []detail{{name: "Real sync", value: m.RealSync}}
		if m.LateReceiver != 0 {
			// The part of Real Sync lost by sends to late receivers.
			d = append(d, detail{name: "Late receiver", value: m.LateReceiver})
		}
		d = append(d,
			detail{name: "Send", value: float64(m.SendNumber), count: true},
			detail{name: "Receive", value: float64(m.ReceiveNumber), count: true},
			detail{name: "Wait", value: float64(m.WaitNumber), count: true})
		rows = append(rows, row(2, "SendRecv time", m.SendRecvTime, d...))
	}
	if m.CollectiveTime != 0 || m.CollectiveNumber != 0 {
		rows = append(rows, row(2, "Collective time", m.CollectiveTime,
			detail{name: "Number", value: float64(m.CollectiveNumber), count: true}))
	}
	if m.SystemTime != 0 || m.SystemNumber != 0 {
		rows = append(rows, row(2, "System time", m.SystemTime,
			detail{name: "Number", value: float64(m.SystemNumber), count: true}))
	}
	rows = append(rows,
		row(1, "Idle time", m.IdleTime),
		row(0, "Load imbalance", m.LoadImbalance),
		row(0, "Potential sync", m.PotentialSync),
		row(0, "Time variation", m.TimeVariation),
		row(0, "Overlap", m.Overlap),
	)
	return rows
}

// compRows follows the order of characteristics.md §4, leaving out Insufficient
// Parallelism when no processor has any.
func compRows(c *report.Comparative) []compRow {
	rows := []compRow{
		{"Execution time", c.ExecutionTime},
		{"Productive time", c.ProductiveTime},
		{"Lost time", c.LostTime},
		{"Idle time", c.IdleTime},
		{"Communications", c.Communications},
		{"Insufficient parallelism", c.InsufficientParallelism},
		{"Real sync", c.RealSync},
		{"Load imbalance", c.LoadImbalance},
		{"Potential sync", c.PotentialSync},
		{"Time variation", c.TimeVariation},
		{"Overlap", c.Overlap},
	}
	return slices.DeleteFunc(rows, func(r compRow) bool {
		return r.name == "Insufficient parallelism" && r.stat.Min == 0 && r.stat.Max == 0
	})
}

// execRows lists the per-processor characteristics in the order of the
// main characteristics, then the counts.
func execRows(rs []report.Rank) []execRow {
	col := func(name, short string, count bool, f func(*report.Rank) float64) execRow {
		v := make([]float64, len(rs))
		for i := range rs {
			v[i] = f(&rs[i])
		}
		return execRow{name: name, short: short, count: count, values: v}
	}
	rows := []execRow{
		col("Exe count", "ExeCount", true, func(r *report.Rank) float64 { return float64(r.ExeCount) }),
		col("Execution time", "Execution", false, func(r *report.Rank) float64 { return r.ExecutionTime }),
		col("Productive time", "Productive", false, func(r *report.Rank) float64 { return r.ProductiveTime }),
		col("Lost time", "Lost", false, func(r *report.Rank) float64 { return r.LostTime }),
		col("Insufficient parallelism", "InsufPar", false, func(r *report.Rank) float64 { return r.InsufficientParallelism }),
		col("Communications", "Comm", false, func(r *report.Rank) float64 { return r.Communications }),
		col("SendRecv time", "SendRecv", false, func(r *report.Rank) float64 { return r.SendRecvTime }),
		col("Real sync", "RealSync", false, func(r *report.Rank) float64 { return r.RealSync }),
		col("  Late receiver", "LateRecv", false, func(r *report.Rank) float64 { return r.LateReceiver }),
		col("Collective time", "Collective", false, func(r *report.Rank) float64 { return r.CollectiveTime }),
		col("System time", "System", false, func(r *report.Rank) float64 { return r.SystemTime }),
		col("Idle time", "Idle", false, func(r *report.Rank) float64 { return r.IdleTime }),
		col("Load imbalance", "LoadImb", false, func(r *report.Rank) float64 { return r.LoadImbalance }),
		col("Potential sync", "PotSync", false, func(r *report.Rank) float64 { return r.PotentialSync }),
		col("Time variation", "TimeVar", false, func(r *report.Rank) float64 { return r.TimeVariation }),
		col("Overlap", "Overlap", false, func(r *report.Rank) float64 { return r.Overlap }),
		col("Send number", "Send#", true, func(r *report.Rank) float64 { return float64(r.SendNumber) }),
		col("Receive number", "Recv#", true, func(r *report.Rank) float64 { return float64(r.ReceiveNumber) }),
		col("Wait number", "Wait#", true, func(r *report.Rank) float64 { return float64(r.WaitNumber) }),
		col("Collective number", "Coll#", true, func(r *report.Rank) float64 { return float64(r.CollectiveNumber) }),
		col("System number", "Sys#", true, func(r *report.Rank) float64 { return float64(r.SystemNumber) }),
	}
	// Same rule as the main characteristics: no sequential sections (no
	// late receivers), no row.
	return slices.DeleteFunc(rows, func(r execRow) bool {
		return (r.name == "Insufficient parallelism" || r.name == "  Late receiver") &&
			!slices.ContainsFunc(r.values, func(v float64) bool { return v != 0 })
	})
}

// srcRows applies one SRC listing: points by decreasing Comm (ties by id),
// cut at the first point whose Comm is below Cut % of the interval's
// Communications, then, for BySource, the kept points in source order.
func srcRows(iv *report.Interval, l SRCListing) srcListing {
	comm := iv.Main.Communications
	rows := make([]srcRow, len(iv.SRC))
	for i := range iv.SRC {
		rows[i] = srcRow{src: &iv.SRC[i], share: share(iv.SRC[i].Comm, comm)}
	}
	slices.SortStableFunc(rows, func(a, b srcRow) int {
		if c := cmp.Compare(b.src.Comm, a.src.Comm); c != 0 {
			return c
		}
		return cmp.Compare(a.src.ID, b.src.ID)
	})
	if l.Cut > 0 {
		n := 0
		// A point with no time at all never reaches a positive cut, even
		// when the interval has no communications (0 ≥ 0 would keep it).
		for n < len(rows) && rows[n].src.Comm > 0 && rows[n].src.Comm*100 >= l.Cut*comm {
			n++
		}
		rows = rows[:n]
	}
	if l.Order == BySource {
		slices.SortStableFunc(rows, func(a, b srcRow) int { return compareSource(a.src, b.src) })
	}
	return srcListing{listing: l, total: len(iv.SRC), points: rows}
}

// sourcePos is the innermost frame that has a file: where the user's code
// made the call. ok is false when no frame has one.
func sourcePos(s *report.SRC) (file string, line int, ok bool) {
	for _, f := range s.Stack {
		if f.File != "" {
			return f.File, f.Line, true
		}
	}
	return "", 0, false
}

// compareSource orders call sites by file, line, then id; sites without
// source information come last.
func compareSource(a, b *report.SRC) int {
	af, al, aok := sourcePos(a)
	bf, bl, bok := sourcePos(b)
	if aok != bok {
		if aok {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(af, bf); c != 0 {
		return c
	}
	if c := cmp.Compare(al, bl); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
