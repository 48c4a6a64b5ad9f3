package report

import (
	"fmt"
	"math"
	"sort"
)

// This file is the one derivation of the characteristics that follow from
// others (docs/characteristics.md §3.7, §3.9–§3.11, §4, §5). The analyzer measures the
// additive per-processor figures; Derive computes everything else from
// them, and so do the test fixtures (report/reporttest), so that a report
// holds only figures the analyzer can produce. Check (check.go) verifies
// the same identities on a finished report.
//
// The reading of the identities of docs/characteristics.md (analyzer package doc): Productive
// Time = Execution Time − Lost Time takes the interval's execution time
// (the maximum over processors), so that Idle Time is subtracted once:
//
//	Communications = SendRecv + Collective + System
//	Idle           = max Execution − Execution
//	Lost           = Communications + Idle + Insufficient Parallelism
//	Productive     = max Execution − Lost  (= Execution − Communications − Insufficient Parallelism)
//	Load Imbalance = max Productive − Productive
//
// and in Main, Productive + Lost = Total Time = max Execution × Processors.

// Derive completes interval iv from the measured per-processor figures in
// iv.Ranks: Rank, ExeCount, ExecutionTime, SendRecvTime, CollectiveTime,
// SystemTime, InsufficientParallelism, RealSync, LateReceiver, PotentialSync,
// TimeVariation, Overlap and the counts. It sorts the ranks, fills every
// rank's Communications, IdleTime, LostTime, ProductiveTime and
// LoadImbalance, iv.ExeCount, all of Main except CollectiveNumber (the
// instances counted once, which the ranks' figures do not tell; set it
// before or after) and Comparative.
//
// A Productive Time below zero cannot come from consistent measurements
// (every part of Lost Time but Idle Time lies inside the processor's own
// Execution Time); should one occur it is shown as 0 and Derive returns a
// warning saying so, with the figures involved.
func Derive(iv *Interval) (warnings []string) {
	sort.Slice(iv.Ranks, func(i, j int) bool { return iv.Ranks[i].Rank < iv.Ranks[j].Rank })
	var maxExec float64
	iv.ExeCount = 0
	for i := range iv.Ranks {
		rk := &iv.Ranks[i]
		maxExec = max(maxExec, rk.ExecutionTime)
		iv.ExeCount = max(iv.ExeCount, rk.ExeCount)
	}
	var maxProd float64
	for i := range iv.Ranks {
		rk := &iv.Ranks[i]
		rk.Communications = toNs(rk.SendRecvTime + rk.CollectiveTime + rk.SystemTime)
		rk.IdleTime = toNs(maxExec - rk.ExecutionTime)
		rk.LostTime = toNs(rk.Communications + rk.IdleTime + rk.InsufficientParallelism)
		rk.ProductiveTime = toNs(maxExec - rk.LostTime)
		if rk.ProductiveTime < 0 {
			if rk.ProductiveTime < -negligible {
				warnings = append(warnings, fmt.Sprintf(
					"Internal inconsistency (a bug in dtpa, please report it): interval %s, rank %d: Productive time %.9f s computed "+
						"(execution %.9f s, communications %.9f s, insufficient parallelism %.9f s); shown as 0.",
					PathString(iv.Path), rk.Rank, rk.ProductiveTime, rk.ExecutionTime, rk.Communications, rk.InsufficientParallelism))
			}
			rk.ProductiveTime = 0
		}
		if i == 0 || rk.ProductiveTime > maxProd {
			maxProd = rk.ProductiveTime
		}
	}
	m := &iv.Main
	coll := m.CollectiveNumber
	*m = Main{CollectiveNumber: coll}
	for i := range iv.Ranks {
		rk := &iv.Ranks[i]
		rk.LoadImbalance = toNs(maxProd - rk.ProductiveTime)
		m.ProductiveTime += rk.ProductiveTime
		m.LostTime += rk.LostTime
		m.InsufficientParallelism += rk.InsufficientParallelism
		m.Communications += rk.Communications
		m.SendRecvTime += rk.SendRecvTime
		m.RealSync += rk.RealSync
		m.LateReceiver += rk.LateReceiver
		m.SendNumber += rk.SendNumber
		m.ReceiveNumber += rk.ReceiveNumber
		m.WaitNumber += rk.WaitNumber
		m.CollectiveTime += rk.CollectiveTime
		m.SystemTime += rk.SystemTime
		m.SystemNumber += rk.SystemNumber
		m.IdleTime += rk.IdleTime
		m.LoadImbalance += rk.LoadImbalance
		m.PotentialSync += rk.PotentialSync
		m.TimeVariation += rk.TimeVariation
		m.Overlap += rk.Overlap
	}
	for _, v := range []*float64{&m.ProductiveTime, &m.LostTime, &m.InsufficientParallelism, &m.Communications,
		&m.SendRecvTime, &m.RealSync, &m.LateReceiver, &m.CollectiveTime, &m.SystemTime, &m.IdleTime,
		&m.LoadImbalance, &m.PotentialSync, &m.TimeVariation, &m.Overlap} {
		*v = toNs(*v)
	}
	m.ExecutionTime = maxExec
	m.Processors = len(iv.Ranks)
	m.TotalTime = maxExec * float64(m.Processors)
	if m.TotalTime > 0 {
		m.Efficiency = min(1, max(0, m.ProductiveTime/m.TotalTime))
	}
	c := &iv.Comparative
	for _, f := range comparativeFields {
		*f.stat(c) = StatOf(iv.Ranks, f.value)
	}
	return warnings
}

// toNs rounds a derived time to the nanosecond, the resolution of the
// times it is derived from: float sums and differences of them carry
// rounding (1e-20 s), which would make two processors whose figures are
// the same number of ns differ, so that the comparative characteristics
// named the wrong one of them (§4: the first) and Load Imbalance showed
// 2.7e-20 s where it is 0. The main characteristics' sums are rounded
// too, so that they read as the ns they are.
func toNs(v float64) float64 { return math.Round(v*1e9) / 1e9 }

// negligible is the magnitude, in seconds, below which a negative
// Productive Time is float rounding rather than an inconsistency.
const negligible = 1e-9

// StatOf is the comparative characteristic of value over ranks: minimum
// and maximum with the first processor holding them, and the mean.
func StatOf(ranks []Rank, value func(*Rank) float64) Stat {
	var s Stat
	for i := range ranks {
		v := value(&ranks[i])
		if i == 0 || v < s.Min {
			s.Min, s.MinProc = v, ranks[i].Rank
		}
		if i == 0 || v > s.Max {
			s.Max, s.MaxProc = v, ranks[i].Rank
		}
		s.Mean += v
	}
	if len(ranks) > 0 {
		s.Mean /= float64(len(ranks))
	}
	return s
}

// comparativeField ties a Comparative statistic to its per-processor
// characteristic.
type comparativeField struct {
	name  string
	stat  func(*Comparative) *Stat
	value func(*Rank) float64
}

// comparativeFields lists the characteristics of docs/characteristics.md §4.
var comparativeFields = []comparativeField{
	{"execution time", func(c *Comparative) *Stat { return &c.ExecutionTime }, func(r *Rank) float64 { return r.ExecutionTime }},
	{"productive time", func(c *Comparative) *Stat { return &c.ProductiveTime }, func(r *Rank) float64 { return r.ProductiveTime }},
	{"lost time", func(c *Comparative) *Stat { return &c.LostTime }, func(r *Rank) float64 { return r.LostTime }},
	{"idle time", func(c *Comparative) *Stat { return &c.IdleTime }, func(r *Rank) float64 { return r.IdleTime }},
	{"communications", func(c *Comparative) *Stat { return &c.Communications }, func(r *Rank) float64 { return r.Communications }},
	{"insufficient parallelism", func(c *Comparative) *Stat { return &c.InsufficientParallelism }, func(r *Rank) float64 { return r.InsufficientParallelism }},
	{"real sync", func(c *Comparative) *Stat { return &c.RealSync }, func(r *Rank) float64 { return r.RealSync }},
	{"load imbalance", func(c *Comparative) *Stat { return &c.LoadImbalance }, func(r *Rank) float64 { return r.LoadImbalance }},
	{"potential sync", func(c *Comparative) *Stat { return &c.PotentialSync }, func(r *Rank) float64 { return r.PotentialSync }},
	{"time variation", func(c *Comparative) *Stat { return &c.TimeVariation }, func(r *Rank) float64 { return r.TimeVariation }},
	{"overlap", func(c *Comparative) *Stat { return &c.Overlap }, func(r *Rank) float64 { return r.Overlap }},
}

// DeriveSRC completes a call site from its per-processor figures: the
// ranks sorted, Comm and the other totals summed over them.
func DeriveSRC(s *SRC) {
	sort.Slice(s.Ranks, func(i, j int) bool { return s.Ranks[i].Rank < s.Ranks[j].Rank })
	s.Comm, s.RealSync, s.LateReceiver, s.PotentialSync, s.TimeVariation, s.Overlap = 0, 0, 0, 0, 0, 0
	for _, r := range s.Ranks {
		s.Comm += r.ExeTime
		s.RealSync += r.RealSync
		s.LateReceiver += r.LateReceiver
		s.PotentialSync += r.PotentialSync
		s.TimeVariation += r.TimeVariation
		s.Overlap += r.Overlap
	}
}

// PathString names an interval path as the reports do: "0" for the whole
// program, "1/2" for interval 2 inside interval 1.
func PathString(p []int) string {
	if len(p) == 0 {
		return "0"
	}
	s := ""
	for i, x := range p {
		if i > 0 {
			s += "/"
		}
		s += fmt.Sprint(x)
	}
	return s
}
