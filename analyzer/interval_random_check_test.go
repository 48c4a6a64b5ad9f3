package analyzer

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/report"
)

// The comparisons of TestRandomIntervals: a report's intervals against
// the model (ivlModel) of the program that made the traces.

// checkIntervals compares every interval of rep (analyzed with MaxLevel
// level) with the model: the intervals reported, and per interval each
// processor's figures, the main characteristics (sums over processors,
// Execution Time the maximum, Collective Number the instances) and the
// comparative ones.
func checkIntervals(t *testing.T, name string, rep *report.Report, m *ivlModel, level int, tol float64) {
	t.Helper()
	expect := func(t *testing.T, what string, got, want float64) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s = %.9f s, want %.9f s", what, got, want)
		}
	}
	near := func(a, b float64) bool { return a >= b-tol && a <= b+tol }
	var want []string
	for key := range m.stats {
		if lv := strings.Count(key, "/") + 1; key == "" || level < 0 || lv <= level {
			want = append(want, key)
		}
	}
	var got []string
	for i := range rep.Intervals {
		got = append(got, intervals.PathKey(rep.Intervals[i].Path))
	}
	slices.Sort(want)
	if g := slices.Sorted(slices.Values(got)); !slices.Equal(g, want) {
		t.Errorf("%s: intervals %q, want %q", name, g, want)
		return
	}
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	for i := range rep.Intervals {
		iv := &rep.Intervals[i]
		key := got[i]
		what := func(f string) string { return fmt.Sprintf("%s: interval %q %s", name, key, f) }
		if iv.Level != len(iv.Path) || (len(iv.Path) > 0 && iv.Number != iv.Path[len(iv.Path)-1]) {
			t.Errorf("%s level %d number %d", what("path"), iv.Level, iv.Number)
		}
		st := m.stats[key]
		var ranks []int
		maxExec, maxExe := int64(0), 0
		for r, s := range st {
			if s != nil {
				ranks = append(ranks, r)
				maxExec, maxExe = max(maxExec, s.exec), max(maxExe, s.exe)
			}
		}
		var gotRanks []int
		for _, rk := range iv.Ranks {
			gotRanks = append(gotRanks, rk.Rank)
		}
		if !slices.Equal(gotRanks, ranks) {
			t.Errorf("%s ranks %v, want %v", what(""), gotRanks, ranks)
			continue
		}
		if iv.ExeCount != maxExe {
			t.Errorf("%s ExeCount %d, want %d", what(""), iv.ExeCount, maxExe)
		}
		checkMessages(t, what(""), iv, st, tol)
		// Derived figures (§3.7–3.11), in ns.
		prod := map[int]float64{}
		maxProd := math.Inf(-1)
		for _, r := range ranks {
			s := st[r]
			prod[r] = float64(s.exec-(s.sendrecv+s.coll+s.sys)) - s.ip
			maxProd = max(maxProd, prod[r])
		}
		var sum ivlStat
		var sumProd, sumLost, sumLI, sumIP float64
		var sumIdle int64
		vals := map[string]map[int]float64{}
		keep := func(f string, r int, v float64) {
			if vals[f] == nil {
				vals[f] = map[int]float64{}
			}
			vals[f][r] = v
		}
		for k, rk := range iv.Ranks {
			r, s := ranks[k], st[ranks[k]]
			comm := s.sendrecv + s.coll + s.sys
			idle := maxExec - s.exec
			lost := float64(comm+idle) + s.ip
			if rk.ExeCount != s.exe {
				t.Errorf("%s rank %d ExeCount %d, want %d", what(""), r, rk.ExeCount, s.exe)
			}
			for _, c := range []struct {
				f         string
				got, want float64
			}{
				{"Execution Time", rk.ExecutionTime, sec(s.exec)},
				{"SendRecv Time", rk.SendRecvTime, sec(s.sendrecv)},
				{"Collective Time", rk.CollectiveTime, sec(s.coll)},
				{"System Time", rk.SystemTime, sec(s.sys)},
				{"Communications", rk.Communications, sec(comm)},
				{"Real Sync", rk.RealSync, sec(s.rs)},
				{"Late receiver", rk.LateReceiver, sec(s.lr)},
				{"Potential Sync", rk.PotentialSync, sec(s.ps)},
				{"Time Variation", rk.TimeVariation, sec(s.tv)},
				{"Overlap", rk.Overlap, sec(s.ov)},
				{"Idle Time", rk.IdleTime, sec(idle)},
				{"Lost Time", rk.LostTime, lost / 1e9},
				{"Productive Time", rk.ProductiveTime, prod[r] / 1e9},
				{"Load Imbalance", rk.LoadImbalance, (maxProd - prod[r]) / 1e9},
				{"Insufficient Parallelism", rk.InsufficientParallelism, s.ip / 1e9},
			} {
				expect(t, what(fmt.Sprintf("rank %d %s", r, c.f)), c.got, c.want)
				keep(c.f, r, c.want)
			}
			for _, c := range []struct {
				f         string
				got, want int64
			}{
				{"Send Number", rk.SendNumber, s.send},
				{"Receive Number", rk.ReceiveNumber, s.recv},
				{"Wait Number", rk.WaitNumber, s.wait},
				{"Collective Number", rk.CollectiveNumber, s.colln},
				{"System Number", rk.SystemNumber, s.sysn},
			} {
				if c.got != c.want {
					t.Errorf("%s rank %d %s %d, want %d", what(""), r, c.f, c.got, c.want)
				}
			}
			checkGapsMix(t, what(fmt.Sprintf("rank %d", r)), &rk.RankProfile, s, tol)
			sum.sendrecv, sum.coll, sum.sys = sum.sendrecv+s.sendrecv, sum.coll+s.coll, sum.sys+s.sys
			sum.rs, sum.lr, sum.ps, sum.tv, sum.ov = sum.rs+s.rs, sum.lr+s.lr, sum.ps+s.ps, sum.tv+s.tv, sum.ov+s.ov
			sum.send, sum.recv, sum.wait, sum.sysn = sum.send+s.send, sum.recv+s.recv, sum.wait+s.wait, sum.sysn+s.sysn
			sumProd, sumLost, sumIdle, sumLI, sumIP = sumProd+prod[r], sumLost+lost, sumIdle+idle, sumLI+maxProd-prod[r], sumIP+s.ip
		}
		mn := &iv.Main
		total := sec(maxExec) * float64(len(ranks))
		for _, c := range []struct {
			f         string
			got, want float64
		}{
			{"Execution Time", mn.ExecutionTime, sec(maxExec)},
			{"Total Time", mn.TotalTime, total},
			{"Productive Time", mn.ProductiveTime, sumProd / 1e9},
			{"Lost Time", mn.LostTime, sumLost / 1e9},
			{"Communications", mn.Communications, sec(sum.sendrecv + sum.coll + sum.sys)},
			{"SendRecv Time", mn.SendRecvTime, sec(sum.sendrecv)},
			{"Collective Time", mn.CollectiveTime, sec(sum.coll)},
			{"System Time", mn.SystemTime, sec(sum.sys)},
			{"Real Sync", mn.RealSync, sec(sum.rs)},
			{"Late receiver", mn.LateReceiver, sec(sum.lr)},
			{"Idle Time", mn.IdleTime, sec(sumIdle)},
			{"Load Imbalance", mn.LoadImbalance, sumLI / 1e9},
			{"Potential Sync", mn.PotentialSync, sec(sum.ps)},
			{"Time Variation", mn.TimeVariation, sec(sum.tv)},
			{"Overlap", mn.Overlap, sec(sum.ov)},
			{"Insufficient Parallelism", mn.InsufficientParallelism, sumIP / 1e9},
		} {
			expect(t, what("Main "+c.f), c.got, c.want)
		}
		if total > 0 {
			if e := sumProd / 1e9 / total; mn.Efficiency < e-1e-4 || mn.Efficiency > e+1e-4 {
				t.Errorf("%s Main efficiency %g, want %g", what(""), mn.Efficiency, e)
			}
		}
		if mn.Processors != len(ranks) {
			t.Errorf("%s Main Processors %d, want %d", what(""), mn.Processors, len(ranks))
		}
		for _, c := range []struct {
			f         string
			got, want int64
		}{
			{"Send Number", mn.SendNumber, sum.send},
			{"Receive Number", mn.ReceiveNumber, sum.recv},
			{"Wait Number", mn.WaitNumber, sum.wait},
			{"Collective Number", mn.CollectiveNumber, m.mainColl[key]},
			{"System Number", mn.SystemNumber, sum.sysn},
		} {
			if c.got != c.want {
				t.Errorf("%s Main %s %d, want %d", what(""), c.f, c.got, c.want)
			}
		}
		// §4: minimum and maximum, each on the first processor where it
		// occurs, and the mean.
		cp := &iv.Comparative
		for _, c := range []struct {
			f  string
			st report.Stat
		}{
			{"Execution Time", cp.ExecutionTime}, {"Productive Time", cp.ProductiveTime},
			{"Lost Time", cp.LostTime}, {"Idle Time", cp.IdleTime}, {"Communications", cp.Communications},
			{"Insufficient Parallelism", cp.InsufficientParallelism}, {"Real Sync", cp.RealSync},
			{"Load Imbalance", cp.LoadImbalance}, {"Potential Sync", cp.PotentialSync},
			{"Time Variation", cp.TimeVariation}, {"Overlap", cp.Overlap},
		} {
			v := vals[c.f]
			lo, hi, mean := v[ranks[0]], v[ranks[0]], 0.0
			for _, r := range ranks {
				lo, hi, mean = min(lo, v[r]), max(hi, v[r]), mean+v[r]/float64(len(ranks))
			}
			expect(t, what("Comparative "+c.f+" min"), c.st.Min, lo)
			expect(t, what("Comparative "+c.f+" max"), c.st.Max, hi)
			expect(t, what("Comparative "+c.f+" mean"), c.st.Mean, mean)
			// The first processor where the extreme occurs (report.Derive
			// rounds the derived figures to the ns, so that two
			// processors whose Productive Time is the same number of ns,
			// 198 − 38 µs and 170 − 10 µs, tie exactly). With a drifting
			// clock, any within tol of it. A processor whose figure is
			// the extreme exactly comes before one within tol of it
			// (1 589 968 and 1 589 970 ns: the second is the maximum).
			onProc := func(p int, x float64) bool {
				for _, r := range ranks {
					if v[r] == x {
						return p == r || tol > 1e-8 && near(v[p], x)
					}
				}
				for _, r := range ranks {
					if near(v[r], x) {
						return p == r || tol > 1e-8 && near(v[p], x)
					}
				}
				return false
			}
			if !onProc(c.st.MinProc, lo) {
				t.Errorf("%s min on processor %d, want the first with %.9f s", what("Comparative "+c.f), c.st.MinProc, lo)
			}
			if !onProc(c.st.MaxProc, hi) {
				t.Errorf("%s max on processor %d, want the first with %.9f s", what("Comparative "+c.f), c.st.MaxProc, hi)
			}
		}
	}
}

// checkMessages compares an interval's comm_matrix and message_sizes
// with the model's messages (report-format.md).
func checkMessages(t *testing.T, what string, iv *report.Interval, st []*ivlStat, tol float64) {
	t.Helper()
	n := len(st)
	msgs, bytes := make([][]int64, n), make([][]int64, n)
	var sent, rcvd, lat int64
	for r := range n {
		msgs[r], bytes[r] = make([]int64, n), make([]int64, n)
		if st[r] == nil {
			continue
		}
		for d, k := range st[r].to {
			msgs[r][d], bytes[r][d] = k, 8*k
			sent += k
		}
		rcvd, lat = rcvd+st[r].rcvd, lat+st[r].lat
	}
	switch cm := iv.CommMatrix; {
	case sent == 0 && cm != nil:
		t.Errorf("%s comm_matrix %v, want none", what, cm.Messages)
	case sent > 0 && (cm == nil || !slices.EqualFunc(cm.Messages, msgs, slices.Equal) || !slices.EqualFunc(cm.Bytes, bytes, slices.Equal)):
		t.Errorf("%s comm_matrix %+v, want messages %v", what, cm, msgs)
	}
	switch ms := iv.MessageSizes; {
	case rcvd == 0 && len(ms) > 0:
		t.Errorf("%s message_sizes %+v, want none", what, ms)
	case rcvd > 0 && (len(ms) != 1 || ms[0].MinBytes != 8 || ms[0].MaxBytes != 15 || ms[0].Messages != rcvd || ms[0].Bytes != 8*rcvd):
		t.Errorf("%s message_sizes %+v, want %d messages of 8 bytes", what, ms, rcvd)
	case rcvd > 0:
		if want := float64(lat) / float64(rcvd) / 1e9; ms[0].Latency < want-tol || ms[0].Latency > want+tol {
			t.Errorf("%s message latency %.9f s, want %.9f s", what, ms[0].Latency, want)
		}
	}
}

// checkGapsMix compares a processor's gaps and call mix in an interval
// with the model's: the count and the mean exactly (to tol), the median
// within 1/32 of the exact one (report-format.md, Rank).
func checkGapsMix(t *testing.T, what string, rp *report.RankProfile, s *ivlStat, tol float64) {
	t.Helper()
	if rp.Gaps != int64(len(s.gaps)) {
		t.Errorf("%s: %d gaps, want %d", what, rp.Gaps, len(s.gaps))
	} else if len(s.gaps) > 0 {
		g := slices.Sorted(slices.Values(s.gaps))
		sum := int64(0)
		for _, x := range g {
			sum += x
		}
		mean := float64(sum) / float64(len(g)) / 1e9
		med := float64(g[len(g)/2]) / 1e9
		if len(g)%2 == 0 {
			med = float64(g[len(g)/2-1]+g[len(g)/2]) / 2e9
		}
		if rp.GapMean < mean-tol || rp.GapMean > mean+tol {
			t.Errorf("%s: gap mean %.9f s, want %.9f s", what, rp.GapMean, mean)
		}
		if d := rp.GapMedian - med; d > med/32+tol || d < -med/32-tol {
			t.Errorf("%s: gap median %.9f s, want %.9f s within 1/32", what, rp.GapMedian, med)
		}
	}
	got := map[string][2]float64{}
	for _, c := range rp.CallMix {
		got[c.Function] = [2]float64{float64(c.Calls), c.Time}
	}
	want := map[string][2]float64{}
	for fn, v := range s.fns {
		want[fn] = [2]float64{float64(v[0]), float64(v[1]) / 1e9}
	}
	for fn, w := range want {
		if g, ok := got[fn]; !ok || g[0] != w[0] || g[1] < w[1]-tol || g[1] > w[1]+tol {
			t.Errorf("%s: call mix of %s %v (calls, s), want %v", what, fn, g, w)
		}
	}
	for fn, g := range got {
		if _, ok := want[fn]; !ok {
			t.Errorf("%s: call mix of %s %v (calls, s), want none", what, fn, g)
		}
	}
}
