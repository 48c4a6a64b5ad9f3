package report

import (
	"errors"
	"fmt"
	"math"
)

// Check verifies what holds in every report, whatever the program: the
// identities of docs/characteristics.md §3–§5 as Derive reads them (written out here
// independently of Derive, so that a mistake in one shows in the other),
// the comparative characteristics agreeing with the per-processor ones,
// the call sites adding up to their interval, no negative time, efficiency
// in [0, 1], nested intervals inside their parents, and the incomplete
// marks consistent. It returns one error per broken rule (nil when none);
// the analyzer's tests, the fixtures' tests and the end-to-end tests run it
// on every report they produce.
func Check(r *Report) []error {
	var errs []error
	fail := func(iv *Interval, format string, a ...any) {
		errs = append(errs, fmt.Errorf("interval %s: %s", PathString(iv.Path), fmt.Sprintf(format, a...)))
	}
	if r.Schema != Schema {
		errs = append(errs, fmt.Errorf("schema %q, want %q", r.Schema, Schema))
	}
	if len(r.Intervals) > 0 && len(r.Intervals[0].Path) != 0 {
		errs = append(errs, fmt.Errorf("the first interval is %s, not the whole program", PathString(r.Intervals[0].Path)))
	}
	byPath := map[string]*Interval{}
	// children sums, per parent and processor, the execution times of the
	// nested intervals.
	type childKey struct {
		path string
		rank int
	}
	children := map[childKey]float64{}
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		key := PathString(iv.Path)
		byPath[key] = iv
		if iv.Level != len(iv.Path) {
			fail(iv, "level %d for a path of length %d", iv.Level, len(iv.Path))
		}
		if len(iv.Path) > 0 && iv.Number != iv.Path[len(iv.Path)-1] {
			fail(iv, "number %d", iv.Number)
		}
		checkInterval(iv, r.Processors, fail)
		checkSRC(iv, fail)
		checkWaits(iv, fail)
		if len(iv.Path) > 0 {
			pkey := PathString(iv.Path[:len(iv.Path)-1])
			parent := byPath[pkey]
			if parent == nil {
				fail(iv, "listed before its parent")
				continue
			}
			inParent := map[int]bool{}
			for _, rk := range parent.Ranks {
				inParent[rk.Rank] = true
			}
			for _, rk := range iv.Ranks {
				if !inParent[rk.Rank] {
					fail(iv, "rank %d executes it but not its parent", rk.Rank)
				}
				children[childKey{pkey, rk.Rank}] += rk.ExecutionTime
			}
		}
	}
	// A rank elsewhere is in no call in progress, has not crashed, and is
	// listed once, only beside calls in progress.
	if len(r.Elsewhere) > 0 && len(r.Unfinished) == 0 {
		errs = append(errs, errors.New("ranks elsewhere without calls in progress"))
	}
	busy := map[int]string{}
	for _, c := range r.Unfinished {
		busy[c.Rank] = "has a call in progress"
	}
	for _, c := range r.Crashes {
		busy[c.Rank] = "crashed"
		if c.Exception != "" && (c.Address != nil || c.Abort) {
			errs = append(errs, fmt.Errorf("rank %d: an uncaught exception with an address or MPI_Abort", c.Rank))
		}
	}
	for _, e := range r.Elsewhere {
		if why, ok := busy[e.Rank]; ok {
			errs = append(errs, fmt.Errorf("rank %d is elsewhere, yet %s", e.Rank, why))
		}
		busy[e.Rank] = "is elsewhere twice"
		if e.State != "exited" && (e.ExitStatus != nil || e.Exit != nil || e.MainReturned) {
			errs = append(errs, fmt.Errorf("rank %d is %q, yet says how it exited", e.Rank, e.State))
		}
		if e.Where != nil && e.State != "outside" {
			errs = append(errs, fmt.Errorf("rank %d is %q, yet says where a signal found it", e.Rank, e.State))
		}
		if e.Exit != nil && e.MainReturned {
			errs = append(errs, fmt.Errorf("rank %d called exit and returned from main", e.Rank))
		}
		if e.State != "finalized" && e.State != "exited" && e.State != "outside" {
			errs = append(errs, fmt.Errorf("rank %d is elsewhere in state %q", e.Rank, e.State))
		}
	}
	// Nested intervals are disjoint parts of their parent: per processor,
	// their execution times add up to at most the parent's.
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		for _, rk := range iv.Ranks {
			if c := children[childKey{PathString(iv.Path), rk.Rank}]; c > rk.ExecutionTime+tolerance(c, rk.ExecutionTime) {
				fail(iv, "rank %d: nested intervals last %v s, more than the interval's %v s", rk.Rank, c, rk.ExecutionTime)
			}
		}
	}
	return errs
}

// tolerance is the float rounding allowed when comparing a and b: the
// identities hold exactly by definition, so anything larger is a bug.
func tolerance(a, b float64) float64 {
	return 1e-9 * max(1, math.Abs(a), math.Abs(b))
}

func differ(a, b float64) bool { return math.Abs(a-b) > tolerance(a, b) }

func checkInterval(iv *Interval, processors int, fail func(*Interval, string, ...any)) {
	m := &iv.Main
	if m.Processors != len(iv.Ranks) || len(iv.Ranks) == 0 {
		fail(iv, "main processors %d, %d ranks listed", m.Processors, len(iv.Ranks))
		return
	}
	var maxExec, maxProd float64
	maxCount := 0
	incomplete := false
	for i, rk := range iv.Ranks {
		maxExec = max(maxExec, rk.ExecutionTime)
		if i == 0 || rk.ProductiveTime > maxProd {
			maxProd = rk.ProductiveTime
		}
		maxCount = max(maxCount, rk.ExeCount)
		incomplete = incomplete || rk.Incomplete
	}
	if incomplete && !iv.Incomplete {
		fail(iv, "a rank is marked incomplete but the interval is not")
	}
	if iv.Incomplete != (iv.IncompleteReason != "") {
		fail(iv, "incomplete %v with reason %q", iv.Incomplete, iv.IncompleteReason)
	}
	var sum Main
	var calls int64
	clamped := false
	prev := -1
	for _, rk := range iv.Ranks {
		rk := rk
		who := func(format string, a ...any) {
			fail(iv, "rank %d: %s", rk.Rank, fmt.Sprintf(format, a...))
		}
		if rk.Rank <= prev || rk.Rank < 0 || (processors > 0 && rk.Rank >= processors) {
			who("out of order or out of range (after %d, %d processors)", prev, processors)
		}
		prev = rk.Rank
		if rk.Incomplete != (rk.IncompleteReason != "") {
			who("incomplete %v with reason %q", rk.Incomplete, rk.IncompleteReason)
		}
		for _, f := range rankTimes(&rk) {
			if f.v < 0 {
				who("%s %v s < 0", f.name, f.v)
			}
		}
		if differ(rk.Communications, rk.SendRecvTime+rk.CollectiveTime+rk.SystemTime) {
			who("communications %v ≠ sendrecv %v + collective %v + system %v", rk.Communications, rk.SendRecvTime, rk.CollectiveTime, rk.SystemTime)
		}
		if differ(rk.IdleTime, maxExec-rk.ExecutionTime) {
			who("idle %v ≠ max execution %v − own %v", rk.IdleTime, maxExec, rk.ExecutionTime)
		}
		if differ(rk.LostTime, rk.Communications+rk.IdleTime+rk.InsufficientParallelism) {
			who("lost %v ≠ communications %v + idle %v + insufficient parallelism %v", rk.LostTime, rk.Communications, rk.IdleTime, rk.InsufficientParallelism)
		}
		// Productive = max Execution − Lost, shown as 0 (with a warning)
		// were it ever negative.
		if want := max(0, maxExec-rk.LostTime); differ(rk.ProductiveTime, want) {
			who("productive %v ≠ max execution %v − lost %v", rk.ProductiveTime, maxExec, rk.LostTime)
		}
		clamped = clamped || maxExec-rk.LostTime < 0
		if differ(rk.LoadImbalance, maxProd-rk.ProductiveTime) {
			who("load imbalance %v ≠ max productive %v − own %v", rk.LoadImbalance, maxProd, rk.ProductiveTime)
		}
		if rk.RealSync > rk.SendRecvTime+tolerance(rk.RealSync, rk.SendRecvTime) {
			who("real sync %v > sendrecv time %v", rk.RealSync, rk.SendRecvTime)
		}
		if rk.LateReceiver < 0 || rk.LateReceiver > rk.RealSync+tolerance(rk.LateReceiver, rk.RealSync) {
			who("late receiver %v outside [0, real sync %v]", rk.LateReceiver, rk.RealSync)
		}
		if rk.Communications > rk.ExecutionTime+tolerance(rk.Communications, rk.ExecutionTime) {
			who("communications %v > execution %v", rk.Communications, rk.ExecutionTime)
		}
		if rk.SendNumber < 0 || rk.ReceiveNumber < 0 || rk.WaitNumber < 0 || rk.CollectiveNumber < 0 || rk.SystemNumber < 0 || rk.ExeCount < 0 {
			who("negative count")
		}
		sum.ProductiveTime += rk.ProductiveTime
		sum.LostTime += rk.LostTime
		sum.InsufficientParallelism += rk.InsufficientParallelism
		sum.Communications += rk.Communications
		sum.SendRecvTime += rk.SendRecvTime
		sum.RealSync += rk.RealSync
		sum.LateReceiver += rk.LateReceiver
		sum.SendNumber += rk.SendNumber
		sum.ReceiveNumber += rk.ReceiveNumber
		sum.WaitNumber += rk.WaitNumber
		sum.CollectiveTime += rk.CollectiveTime
		sum.SystemTime += rk.SystemTime
		sum.SystemNumber += rk.SystemNumber
		sum.IdleTime += rk.IdleTime
		sum.LoadImbalance += rk.LoadImbalance
		sum.PotentialSync += rk.PotentialSync
		sum.TimeVariation += rk.TimeVariation
		sum.Overlap += rk.Overlap
		calls += rk.CollectiveNumber
	}
	if differ(m.ExecutionTime, maxExec) || iv.ExeCount != maxCount {
		fail(iv, "main execution %v / exe count %d; max over ranks %v / %d", m.ExecutionTime, iv.ExeCount, maxExec, maxCount)
	}
	if differ(m.TotalTime, maxExec*float64(m.Processors)) {
		fail(iv, "total time %v ≠ %v × %d", m.TotalTime, maxExec, m.Processors)
	}
	// Main sums the processors, except execution time (max), processors,
	// total time, efficiency and collective number (instances).
	for _, f := range []struct {
		name      string
		main, sum float64
	}{
		{"productive time", m.ProductiveTime, sum.ProductiveTime},
		{"lost time", m.LostTime, sum.LostTime},
		{"insufficient parallelism", m.InsufficientParallelism, sum.InsufficientParallelism},
		{"communications", m.Communications, sum.Communications},
		{"sendrecv time", m.SendRecvTime, sum.SendRecvTime},
		{"real sync", m.RealSync, sum.RealSync},
		{"late receiver", m.LateReceiver, sum.LateReceiver},
		{"collective time", m.CollectiveTime, sum.CollectiveTime},
		{"system time", m.SystemTime, sum.SystemTime},
		{"idle time", m.IdleTime, sum.IdleTime},
		{"load imbalance", m.LoadImbalance, sum.LoadImbalance},
		{"potential sync", m.PotentialSync, sum.PotentialSync},
		{"time variation", m.TimeVariation, sum.TimeVariation},
		{"overlap", m.Overlap, sum.Overlap},
	} {
		if differ(f.main, f.sum) {
			fail(iv, "main %s %v, sum over ranks %v", f.name, f.main, f.sum)
		}
	}
	if m.SendNumber != sum.SendNumber || m.ReceiveNumber != sum.ReceiveNumber || m.WaitNumber != sum.WaitNumber || m.SystemNumber != sum.SystemNumber {
		fail(iv, "main counts send %d receive %d wait %d system %d, sums over ranks %d %d %d %d",
			m.SendNumber, m.ReceiveNumber, m.WaitNumber, m.SystemNumber, sum.SendNumber, sum.ReceiveNumber, sum.WaitNumber, sum.SystemNumber)
	}
	if m.CollectiveNumber < 0 || m.CollectiveNumber > calls {
		fail(iv, "main collective number %d, %d collective calls", m.CollectiveNumber, calls)
	}
	if !clamped && differ(m.ProductiveTime+m.LostTime, m.TotalTime) {
		fail(iv, "main productive %v + lost %v ≠ total %v", m.ProductiveTime, m.LostTime, m.TotalTime)
	}
	if m.Efficiency < 0 || m.Efficiency > 1 {
		fail(iv, "efficiency %v outside [0, 1]", m.Efficiency)
	}
	if m.TotalTime > 0 && differ(m.Efficiency, m.ProductiveTime/m.TotalTime) {
		fail(iv, "efficiency %v ≠ productive %v / total %v", m.Efficiency, m.ProductiveTime, m.TotalTime)
	}
	for _, f := range comparativeFields {
		got, want := *f.stat(&iv.Comparative), StatOf(iv.Ranks, f.value)
		if differ(got.Min, want.Min) || differ(got.Max, want.Max) || differ(got.Mean, want.Mean) {
			fail(iv, "comparative %s %+v; ranks give min %v max %v mean %v", f.name, got, want.Min, want.Max, want.Mean)
		}
		if !holds(iv.Ranks, got.MinProc, got.Min, f.value) || !holds(iv.Ranks, got.MaxProc, got.Max, f.value) {
			fail(iv, "comparative %s %+v: the processors named do not hold the minimum and maximum", f.name, got)
		}
	}
}

// holds says whether processor p's value is v.
func holds(ranks []Rank, p int, v float64, value func(*Rank) float64) bool {
	for i := range ranks {
		if ranks[i].Rank == p {
			return !differ(value(&ranks[i]), v)
		}
	}
	return false
}

type namedTime struct {
	name string
	v    float64
}

func rankTimes(r *Rank) []namedTime {
	return []namedTime{
		{"execution time", r.ExecutionTime}, {"productive time", r.ProductiveTime}, {"lost time", r.LostTime},
		{"insufficient parallelism", r.InsufficientParallelism}, {"idle time", r.IdleTime},
		{"communications", r.Communications}, {"sendrecv time", r.SendRecvTime}, {"collective time", r.CollectiveTime},
		{"system time", r.SystemTime}, {"real sync", r.RealSync}, {"late receiver", r.LateReceiver}, {"load imbalance", r.LoadImbalance},
		{"potential sync", r.PotentialSync}, {"time variation", r.TimeVariation}, {"overlap", r.Overlap},
	}
}

// checkSRC checks that the call sites account for the interval: each
// site's figures are the sums of its per-processor ones, and summed over
// sites they are the interval's (per processor for the time in MPI).
func checkSRC(iv *Interval, fail func(*Interval, string, ...any)) {
	var comm, rs, lr, ps, tv, ov float64
	perRank := map[int]float64{}
	for _, p := range iv.SRC {
		comm, rs, lr, ps, tv, ov = comm+p.Comm, rs+p.RealSync, lr+p.LateReceiver, ps+p.PotentialSync, tv+p.TimeVariation, ov+p.Overlap
		var c, r, l, pt, v, o float64
		for _, x := range p.Ranks {
			if x.ExeTime < 0 || x.RealSync < 0 || x.LateReceiver < 0 || x.PotentialSync < 0 || x.TimeVariation < 0 || x.Overlap < 0 || x.ExeCount < 0 {
				fail(iv, "SRC %d (%s) rank %d: negative figure %+v", p.ID, p.Function, x.Rank, x)
			}
			c, r, l, pt, v, o = c+x.ExeTime, r+x.RealSync, l+x.LateReceiver, pt+x.PotentialSync, v+x.TimeVariation, o+x.Overlap
			perRank[x.Rank] += x.ExeTime
		}
		for _, d := range []struct {
			name      string
			site, sum float64
		}{{"comm", p.Comm, c}, {"real sync", p.RealSync, r}, {"late receiver", p.LateReceiver, l}, {"potential sync", p.PotentialSync, pt}, {"time variation", p.TimeVariation, v}, {"overlap", p.Overlap, o}} {
			if differ(d.site, d.sum) {
				fail(iv, "SRC %d (%s): %s %v, its processors sum to %v", p.ID, p.Function, d.name, d.site, d.sum)
			}
		}
	}
	m := iv.Main
	for _, d := range []struct {
		name      string
		main, sum float64
	}{{"communications", m.Communications, comm}, {"real sync", m.RealSync, rs}, {"late receiver", m.LateReceiver, lr}, {"potential sync", m.PotentialSync, ps}, {"time variation", m.TimeVariation, tv}, {"overlap", m.Overlap, ov}} {
		if differ(d.main, d.sum) {
			fail(iv, "main %s %v, its call sites sum to %v", d.name, d.main, d.sum)
		}
	}
	for _, rk := range iv.Ranks {
		if differ(perRank[rk.Rank], rk.Communications) {
			fail(iv, "rank %d: communications %v, its call sites sum to %v", rk.Rank, rk.Communications, perRank[rk.Rank])
		}
	}
}
