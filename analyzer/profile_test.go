package analyzer

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// The profile views of a run of three ranks on two hosts (ranks 0 and 1 on
// host a, rank 2 on host b): the run facts, the functions with their calls,
// bytes and per-call extremes, the communication matrix and the node
// traffic, all known by construction.
func TestProfileViews(t *testing.T) {
	run := tracetest.NewRun(3)
	r0, r1, r2 := run.Rank(0).Host("a"), run.Rank(1).Host("a"), run.Rank(2).Host("b")
	// Rank 0 sends 100 bytes to rank 1 (10 µs), 200 bytes to rank 2
	// (20 µs), then 50 bytes to rank 2 with MPI_Isend (5 µs) and its
	// MPI_Wait (5 µs).
	r0.Init(1 * us)
	r0.Send(1, 1, 100, 10*us)
	r0.Send(2, 1, 200, 20*us)
	q := r0.Isend(2, 2, 50, 5*us)
	r0.Wait(q, 5*us)
	r0.Finalize(1 * us)
	// Rank 1 polls 500 times with MPI_Iprobe, folded into one event of
	// 1 ms (2 µs a call), then receives rank 0's message, sent long
	// before (no wait, no repair), in 10 µs.
	r1.Init(1 * us).Compute(1 * ms)
	r1.Call("MPI_Iprobe", 1*ms, traceformat.Event{Attr: traceformat.AttrRecv | traceformat.AttrFlag, RecvPeer: 0, RecvTag: 5},
		tracetest.Folded(500))
	r1.Recv(0, 1, 100, 10*us)
	r1.Finalize(1 * us)
	// Rank 2 receives its two messages after 1 ms: MPI_Recv 30 µs,
	// MPI_Irecv 5 µs, MPI_Wait 5 µs.
	r2.Init(1 * us).Compute(1 * ms)
	r2.Recv(0, 1, 200, 30*us)
	q2 := r2.Irecv(0, 2, 64, 5*us)
	r2.Wait(q2, 5*us)
	r2.Finalize(1 * us)

	run.BatchJob = "slurm 4242.0"
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep := analyzeDir(t, dir)

	// Run facts, from the headers tracetest writes.
	ru := rep.Run
	if ru == nil {
		t.Fatal("no run facts")
	}
	if ru.MPI != "synthetic" || ru.Start != "2026-01-01T00:00:00Z" || ru.Clock != "SYNTHETIC" ||
		ru.TracerVersion != "tracetest" || !reflect.DeepEqual(ru.Command, []string{"/tmp/app"}) || ru.Program != "/tmp/app" ||
		ru.BatchJob != "slurm 4242.0" {
		t.Errorf("run facts %+v", ru)
	}
	if ru.SyncError < 0 {
		t.Errorf("sync error %g < 0", ru.SyncError)
	}
	// Events per rank: 6, 4 and 5 calls (Init … Finalize).
	var total int64
	wantEvents := []int64{6, 4, 5}
	for r, ts := range ru.Ranks {
		st, err := os.Stat(filepath.Join(dir, "app."+itoa(r)+".trc"))
		if err != nil {
			t.Fatal(err)
		}
		if ts.Rank != r || ts.Bytes != st.Size() || ts.Events != wantEvents[r] {
			t.Errorf("rank %d trace size %+v, want %d bytes, %d events", r, ts, st.Size(), wantEvents[r])
		}
		total += st.Size()
	}
	if ru.TraceBytes != total || ru.Events != 15 || !near(ru.BytesPerEvent, float64(total)/15) {
		t.Errorf("trace sizes %d bytes, %d events, %g B/event; want %d, 15, %g", ru.TraceBytes, ru.Events, ru.BytesPerEvent, total, float64(total)/15)
	}
	wantHosts := []report.Host{{Host: "a", Ranks: []int{0, 1}}, {Host: "b", Ranks: []int{2}}}
	if !reflect.DeepEqual(rep.Hosts, wantHosts) {
		t.Errorf("hosts %+v, want %+v", rep.Hosts, wantHosts)
	}

	iv := find(t, rep)
	fns := map[string]report.Function{}
	for _, f := range iv.Functions {
		fns[f.Function] = f
	}
	type want struct {
		calls, bytes   int64
		time, min, max float64
		ranks          []report.FunctionRank
	}
	// MPI_Send: 10 + 20 µs, 100 + 200 bytes. MPI_Recv: rank 1 10 µs
	// 100 bytes, rank 2 30 µs 200 bytes. MPI_Iprobe: 500 calls in 1 ms.
	// MPI_Wait: 5 µs on ranks 0 and 2, no bytes. MPI_Isend 50 bytes,
	// MPI_Irecv 64 (the buffer it posted).
	for name, w := range map[string]want{
		"MPI_Send":   {2, 300, 30 * 1e-6, 10e-6, 20e-6, []report.FunctionRank{{Rank: 0, Calls: 2, Time: 30e-6, Bytes: 300}}},
		"MPI_Recv":   {2, 300, 40e-6, 10e-6, 30e-6, []report.FunctionRank{{Rank: 1, Calls: 1, Time: 10e-6, Bytes: 100}, {Rank: 2, Calls: 1, Time: 30e-6, Bytes: 200}}},
		"MPI_Iprobe": {500, 0, 1e-3, 2e-6, 2e-6, []report.FunctionRank{{Rank: 1, Calls: 500, Time: 1e-3}}},
		"MPI_Wait":   {2, 0, 10e-6, 5e-6, 5e-6, []report.FunctionRank{{Rank: 0, Calls: 1, Time: 5e-6}, {Rank: 2, Calls: 1, Time: 5e-6}}},
		"MPI_Isend":  {1, 50, 5e-6, 5e-6, 5e-6, []report.FunctionRank{{Rank: 0, Calls: 1, Time: 5e-6, Bytes: 50}}},
		"MPI_Irecv":  {1, 64, 5e-6, 5e-6, 5e-6, []report.FunctionRank{{Rank: 2, Calls: 1, Time: 5e-6, Bytes: 64}}},
	} {
		f, ok := fns[name]
		if !ok {
			t.Errorf("no function %s in %+v", name, iv.Functions)
			continue
		}
		if f.Calls != w.calls || f.Bytes != w.bytes || !near(f.Time, w.time) || !near(f.Min, w.min) || !near(f.Max, w.max) {
			t.Errorf("%s: %d calls, %d bytes, %.9f s, min %.9f, max %.9f; want %d, %d, %.9f, %.9f, %.9f",
				name, f.Calls, f.Bytes, f.Time, f.Min, f.Max, w.calls, w.bytes, w.time, w.min, w.max)
		}
		if len(f.Ranks) != len(w.ranks) {
			t.Errorf("%s ranks %+v, want %+v", name, f.Ranks, w.ranks)
			continue
		}
		for i, g := range f.Ranks {
			x := w.ranks[i]
			if g.Rank != x.Rank || g.Calls != x.Calls || g.Bytes != x.Bytes || !near(g.Time, x.Time) {
				t.Errorf("%s rank %+v, want %+v", name, g, x)
			}
		}
	}
	// Sorted by time: MPI_Iprobe (1 ms) first.
	if len(iv.Functions) == 0 || iv.Functions[0].Function != "MPI_Iprobe" {
		t.Errorf("functions not by decreasing time: %+v", iv.Functions)
	}

	// The matrix: rank 0 sent one message (100 bytes) to rank 1 and two
	// (250 bytes) to rank 2. Ranks 0 and 1 share host a: 1 message
	// intra-node, 2 inter-node.
	wm := &report.CommMatrix{
		Messages: [][]int64{{0, 1, 2}, {0, 0, 0}, {0, 0, 0}},
		Bytes:    [][]int64{{0, 100, 250}, {0, 0, 0}, {0, 0, 0}},
	}
	if !reflect.DeepEqual(iv.CommMatrix, wm) {
		t.Errorf("comm matrix %+v, want %+v", iv.CommMatrix, wm)
	}
	wt := &report.Traffic{IntraNode: report.Volume{Messages: 1, Bytes: 100}, InterNode: report.Volume{Messages: 2, Bytes: 250}}
	if !reflect.DeepEqual(iv.Traffic, wt) {
		t.Errorf("traffic %+v, want %+v", iv.Traffic, wt)
	}
}

// The gaps go to the interval of the call that ends them, whether the
// replay adds them in its common case (a gap after the previous call's
// exit, in a bin of the interval's histogram) or not: the first gap of an
// interval, one into a new bin, one before a call that entered before the
// previous one exited (0), and none before or after MPI_Pcontrol. Times in
// ns, one rank: Init 0–1000, then MPI_Comm_rank (100 each) after gaps of
// 500, 500 and 510, 300, Pcontrol(enter 1), 2000, 2000, −50 (entered 50
// before the previous exit), 300, Pcontrol(leave 1), 700, Finalize.
//
// Interval 1: 2000, 2000, 0: 3 gaps, 4000 ns; median 2000's bin middle
// (2015.5, [1984, 2047]). The whole program holds them too: 500, 500, 510,
// 700 and those three, 7 gaps, 6210 ns; median 510's bin middle (503.5,
// [496, 511], 500's bin).
func TestProfileGapsIntervals(t *testing.T) {
	checkProfileGapsIntervals(t, 0)
}

// The same gaps on a clock that reads negative times (a trace's times are
// signed: base_ns is an int64): the gap before a call is not measured from
// time 0.
func TestProfileGapsNegativeClock(t *testing.T) {
	checkProfileGapsIntervals(t, -s)
}

func checkProfileGapsIntervals(t *testing.T, offset int64) {
	run := tracetest.NewRun(1)
	r := run.Rank(0).Skew(offset, 0)
	r.Init(1000)
	for _, g := range []int64{500, 500, 510} {
		r.Compute(g).System("MPI_Comm_rank", 100)
	}
	r.Compute(300).Pcontrol(100, 1)
	for _, g := range []int64{2000, 2000, -50} {
		r.Compute(g).System("MPI_Comm_rank", 100)
	}
	r.Compute(300).Pcontrol(101, 1)
	r.Compute(700).System("MPI_Comm_rank", 100).Finalize(1000)
	rep := analyzeRun(t, run)
	for _, w := range []struct {
		path         []int
		gaps         int64
		mean, median float64
	}{
		{nil, 7, 6210e-9 / 7, 503.5e-9},
		{[]int{1}, 3, 4000e-9 / 3, 2015.5e-9},
	} {
		p := rank(t, find(t, rep, w.path...), 0).RankProfile
		if p.Gaps != w.gaps || !near(p.GapMean, w.mean) || !near(p.GapMedian, w.median) {
			t.Errorf("interval %v: gaps %d, mean %.12f, median %.12f; want %d, %.12f, %.12f", w.path, p.Gaps, p.GapMean, p.GapMedian, w.gaps, w.mean, w.median)
		}
	}
}

// A persistent send counts a message at each start, with the bytes of its
// MPI_Send_init; messages are counted in the sender's interval, nested
// intervals included in the enclosing one.
func TestProfileMatrixPersistentNested(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * us)
	ps := r0.SendInit(1, 3, 16, 1*us)
	r0.Pcontrol(100, 1)
	r0.Start(ps, 1*us).Wait(ps, 1*us)
	r0.Start(ps, 1*us).Wait(ps, 1*us)
	r0.Pcontrol(101, 1)
	r0.Finalize(1 * us)
	r1.Init(1 * us).Compute(1 * ms)
	r1.Pcontrol(100, 1)
	r1.Recv(0, 3, 16, 1*us).Recv(0, 3, 16, 1*us)
	r1.Pcontrol(101, 1)
	r1.Finalize(1 * us)
	rep := analyzeRun(t, run)
	for _, p := range [][]int{{}, {1}} {
		iv := find(t, rep, p...)
		wm := &report.CommMatrix{Messages: [][]int64{{0, 2}, {0, 0}}, Bytes: [][]int64{{0, 32}, {0, 0}}}
		if !reflect.DeepEqual(iv.CommMatrix, wm) {
			t.Errorf("interval %v: comm matrix %+v, want %+v", p, iv.CommMatrix, wm)
		}
		wt := &report.Traffic{IntraNode: report.Volume{Messages: 2, Bytes: 32}}
		if !reflect.DeepEqual(iv.Traffic, wt) {
			t.Errorf("interval %v: traffic %+v, want %+v (one host)", p, iv.Traffic, wt)
		}
	}
}

// The per-communicator matrices, the message sizes with their latency, the
// call mix and the gaps of a run of three ranks whose figures are known by
// construction (times in µs):
//
//	rank 0: Init 0–1, Comm_split(c) 10–11, Send(1, world, 100 B) 20–22,
//	        Send(comm-rank 1 of c = world 2, 1000 B) 30–32, Finalize 40–41
//	rank 1: Init 0–1, Comm_split(d) 10–11, Recv(0, 100 B) 50–55, Finalize
//	rank 2: Init 0–1, Comm_split(c) 10–11, Recv(comm-rank 0 of c, 1000 B)
//	        80–90, Finalize
//
// c = {0, 2} and d = {1} are split from world. Latency: 55 − 20 = 35 µs
// for the 100 B message (class 64–127), 90 − 30 = 60 µs for the 1000 B one
// (class 512–1023). Rank 0's gaps end at Comm_split, the two Sends (the
// one before Finalize ends no gap of the interval): 9, 9, 8 µs, mean
// 26/3 µs; the median 9 µs = 9000 ns lies in [8704, 9215] (2^13 split in
// 16 bins of 512 ns), whose middle 8959.5 ns is the estimate.
func TestProfileCommsSizesMix(t *testing.T) {
	run := tracetest.NewRun(3)
	c, d := run.NewComm(0, 2), run.NewComm(1)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	for _, r := range []*tracetest.Rank{r0, r1, r2} {
		r.Init(us).Compute(9 * us)
	}
	r0.CommSplit(nil, c, us).Compute(9*us).Send(1, 1, 100, 2*us)
	r0.Compute(8*us).Send(1, 2, 1000, 2*us, tracetest.On(c)).Compute(8 * us)
	r1.CommSplit(nil, d, us).Compute(39*us).Recv(0, 1, 100, 5*us)
	r2.CommSplit(nil, c, us).Compute(69*us).Recv(0, 2, 1000, 10*us, tracetest.On(c))
	finish(run)
	rep := analyzeClean(t, run)
	iv := find(t, rep)

	wm := []report.CommMatrixOn{
		{Comm: "world", Size: 3, Ranks: []int{0, 1, 2},
			Messages: [][]int64{{0, 1, 0}, {0, 0, 0}, {0, 0, 0}}, Bytes: [][]int64{{0, 100, 0}, {0, 0, 0}, {0, 0, 0}}},
		{Comm: "split of world", Size: 2, Ranks: []int{0, 2},
			Messages: [][]int64{{0, 1}, {0, 0}}, Bytes: [][]int64{{0, 1000}, {0, 0}}},
	}
	if !reflect.DeepEqual(iv.CommMatrices, wm) {
		t.Errorf("comm matrices %+v, want %+v", iv.CommMatrices, wm)
	}
	if w := [][]int64{{0, 1, 1}, {0, 0, 0}, {0, 0, 0}}; iv.CommMatrix == nil || !reflect.DeepEqual(iv.CommMatrix.Messages, w) {
		t.Errorf("comm matrix %+v, want messages %v (the sum over communicators)", iv.CommMatrix, w)
	}

	ws := []report.SizeBin{
		{MinBytes: 64, MaxBytes: 127, Messages: 1, Bytes: 100, Latency: 35e-6, Throughput: 100 / 35e-6},
		{MinBytes: 512, MaxBytes: 1023, Messages: 1, Bytes: 1000, Latency: 60e-6, Throughput: 1000 / 60e-6},
	}
	checkSizes(t, iv.MessageSizes, ws)

	r0p := rank(t, iv, 0).RankProfile
	wmix := []report.CallMix{
		{Function: "MPI_Send", Calls: 2, Time: 4e-6, CallShare: 2.0 / 3, TimeShare: 0.8},
		{Function: "MPI_Comm_split", Calls: 1, Time: 1e-6, CallShare: 1.0 / 3, TimeShare: 0.2},
	}
	checkMix(t, r0p.CallMix, wmix)
	if r0p.Gaps != 3 || !near(r0p.GapMean, 26e-6/3) || !near(r0p.GapMedian, 8959.5e-9) {
		t.Errorf("rank 0 gaps %d, mean %.9f, median %.9f; want 3, %.9f, %.9f", r0p.Gaps, r0p.GapMean, r0p.GapMedian, 26e-6/3, 8959.5e-9)
	}
	if math.Abs(r0p.GapMedian-9e-6) > 9e-6*gapMedianRelErr {
		t.Errorf("rank 0 median %.9f beyond the bound of 9 µs", r0p.GapMedian)
	}
	// Rank 2: gaps 9 and 69 µs, mean 39 µs; the median, the mean of the
	// two, is that of their bins' middles: 9 µs → 8959.5 ns, 69 µs in
	// [65536, 69631] (2^16 in bins of 4096 ns) → 67583.5 ns.
	r2p := rank(t, iv, 2).RankProfile
	if r2p.Gaps != 2 || !near(r2p.GapMean, 39e-6) || !near(r2p.GapMedian, (8959.5e-9+67583.5e-9)/2) {
		t.Errorf("rank 2 gaps %d, mean %.9f, median %.9f; want 2, 39 µs, %.9f", r2p.Gaps, r2p.GapMean, r2p.GapMedian, (8959.5e-9+67583.5e-9)/2)
	}
}

// Folded runs with their inner gaps (format 2.1) end one gap per call: the
// one before the run's first call and calls − 1 between its calls, placed
// at their mean in the histogram; a run without them (older traces) ends
// one gap. Their MPI time and counts are the runs'. Times in ns:
//
//	rank 0: Init 0–1000, 9000 + 899 100 of computation, a folded run of
//	        1000 MPI_Comm_rank (100 000 in MPI, 999 gaps of 900 between
//	        them), 20 000, Send 2000, 1000, 3 MPI_Wtime whose recorded inner
//	        gaps (5000) exceed the gap before the event (1000), Finalize.
//	rank 1: Init 0–1000, 5000 + 3000, 4 MPI_Iprobe folded (4000 in MPI,
//	        3 gaps of 1000), 1 100 000, Recv 1000, 4000, 3 MPI_Comm_size
//	        folded without inner gaps (3000 in MPI), 2000, Finalize.
//
// Rank 0: gaps 9000, 999 × 900, 20 000, and the Wtime's 1000 split into 0
// (before its first call: the inner gaps are clamped to the recorded gap)
// and two of 500: 1004 gaps, 929 100 ns; the two middle ones are 900, in
// [896, 927] (2^9 in bins of 32): median 911.5. Rank 1: 5000, 3 × 1000,
// 1 100 000, 4000: 6 gaps, 1 112 000 ns; median the mean of 1000's bin middle
// (1007.5, [992, 1023]) and 4000's (4031.5, [3968, 4095]). (Rank 1's
// receive starts after rank 0's send: no clock-condition repair.)
func TestProfileFoldedInnerGaps(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1000).Compute(9000 + 899_100)
	r0.System("MPI_Comm_rank", 100_000, tracetest.FoldedGaps(1000, 899_100))
	r0.Compute(20_000).Send(1, 5, 8, 2000).Compute(1000)
	r0.System("MPI_Wtime", 300, tracetest.FoldedGaps(3, 5000)).Finalize(1000)
	r1.Init(1000).Compute(5000 + 3000)
	r1.Call("MPI_Iprobe", 4000, traceformat.Event{Attr: traceformat.AttrRecv | traceformat.AttrFlag, RecvPeer: 0, RecvTag: 5},
		tracetest.FoldedGaps(4, 3000))
	r1.Compute(1_100_000).Recv(0, 5, 8, 1000).Compute(4000)
	r1.System("MPI_Comm_size", 3000, tracetest.Folded(3)).Compute(2000).Finalize(1000)
	finish(run)
	rep := analyzeClean(t, run)
	iv := find(t, rep)

	r0p := rank(t, iv, 0).RankProfile
	if mean := 929_100e-9 / 1004; r0p.Gaps != 1004 || !near(r0p.GapMean, mean) || !near(r0p.GapMedian, 911.5e-9) {
		t.Errorf("rank 0 gaps %d, mean %.12f, median %.12f; want 1004, %.12f, 911.5 ns", r0p.Gaps, r0p.GapMean, r0p.GapMedian, mean)
	}
	r1p := rank(t, iv, 1).RankProfile
	if median := (1007.5e-9 + 4031.5e-9) / 2; r1p.Gaps != 6 || !near(r1p.GapMean, 1_112_000e-9/6) || !near(r1p.GapMedian, median) {
		t.Errorf("rank 1 gaps %d, mean %.12f, median %.12f; want 6, %.12f, %.12f", r1p.Gaps, r1p.GapMean, r1p.GapMedian, 1_112_000e-9/6, median)
	}
	for _, w := range []struct {
		fn    string
		rank  int
		calls int64
		time  float64
	}{{"MPI_Comm_rank", 0, 1000, 100e-6}, {"MPI_Wtime", 0, 3, 300e-9}, {"MPI_Iprobe", 1, 4, 4e-6}, {"MPI_Comm_size", 1, 3, 3e-6}} {
		p := point(t, iv, w.fn)
		if len(p.Ranks) != 1 || p.Ranks[0].Rank != w.rank || p.Ranks[0].ExeCount != w.calls || !near(p.Ranks[0].ExeTime, w.time) {
			t.Errorf("%s point ranks %+v, want rank %d with %d calls in %g s", w.fn, p.Ranks, w.rank, w.calls, w.time)
		}
	}
	// MPI time: the runs' own; Execution from Init's exit to Finalize's
	// entry, rank 0: 1000 … 1 032 400.
	rk0 := rank(t, iv, 0)
	expect(t, "rank 0 Execution", rk0.ExecutionTime, 1_031_400e-9)
	expect(t, "rank 0 Productive", rk0.ProductiveTime, (1_031_400-100_000-2000-300)*1e-9)
}

func checkSizes(t *testing.T, got, want []report.SizeBin) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("message sizes %+v, want %+v", got, want)
		return
	}
	for i, g := range got {
		w := want[i]
		if g.MinBytes != w.MinBytes || g.MaxBytes != w.MaxBytes || g.Messages != w.Messages || g.Bytes != w.Bytes ||
			!near(g.Latency, w.Latency) || math.Abs(g.Throughput-w.Throughput) > 1e-6*w.Throughput {
			t.Errorf("message size class %d: %+v, want %+v", i, g, w)
		}
	}
}

func checkMix(t *testing.T, got, want []report.CallMix) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("call mix %+v, want %+v", got, want)
		return
	}
	for i, g := range got {
		w := want[i]
		if g.Function != w.Function || g.Calls != w.Calls || !near(g.Time, w.Time) || !near(g.CallShare, w.CallShare) || !near(g.TimeShare, w.TimeShare) {
			t.Errorf("call mix %d: %+v, want %+v", i, g, w)
		}
	}
}

// Backward amortization moves the calls of a stretch (clc.go): the per
// call extremes of the functions view and the message latencies follow the
// moved times, as every other figure does. Times in ms:
//
//	rank 0: Init 0–0.001, Send(tag 5, 64 B) 0.001–0.011,
//	        Send(tag 1, 8 B) 100.001–100.011
//	rank 1: Init 0–0.001 (the fixed point), Comm_rank A 10.001–20.001,
//	        Recv(tag 5) 30.001–30.002, Comm_rank B 40.001–45.001,
//	        Recv(tag 1) 50.001–60.001: ends before its send entered, jump
//	        d = 40 to 100.001
//
// Stretch t_a = 0.001 to t_r = 50.001, factor 1 + 40/50 = 1.8:
// A 18.001–36.001 (18 ms), Recv(tag 5) 54.001–54.0028, B 72.001–81.001
// (9 ms), Recv(tag 1) 90.001–100.001. MPI_Comm_rank: min 9, max 18 ms
// (as recorded 5 and 10). The 64 B message's latency is 54.0028 − 0.001 =
// 54.0018 ms (as recorded 30.001); the 8 B one's 100.001 − 100.001 = 0.
// The gaps stay those of rank 1's clock: 10, 10, 9.999 and 5 ms.
func TestProfileAmortized(t *testing.T) {
	run, r0, r1 := pair()
	r0.Send(1, 5, 64, 10*us).Compute(99990*us).Send(1, 1, 8, 10*us)
	r1.Compute(10*ms).System("MPI_Comm_rank", 10*ms)
	r1.Compute(10*ms).Recv(0, 5, 64, us)
	r1.Compute(9999*us).System("MPI_Comm_rank", 5*ms)
	r1.Compute(5*ms).Recv(0, 1, 8, 10*ms)
	finish(run)
	rep := analyzeRun(t, run)
	if cv := rep.ClockViolations; cv == nil || cv.Count != 1 || cv.Amortized != 1 {
		t.Fatalf("clock violations %+v, want one, amortized", cv)
	}
	iv := find(t, rep)
	fns := map[string]report.Function{}
	for _, f := range iv.Functions {
		fns[f.Function] = f
	}
	if f := fns["MPI_Comm_rank"]; !near(f.Time, 0.027) || !near(f.Min, 0.009) || !near(f.Max, 0.018) {
		t.Errorf("MPI_Comm_rank time %.9f min %.9f max %.9f, want 0.027, 0.009, 0.018", f.Time, f.Min, f.Max)
	}
	if f := fns["MPI_Recv"]; !near(f.Time, 0.0100018) || !near(f.Min, 1.8e-6) || !near(f.Max, 0.010) {
		t.Errorf("MPI_Recv time %.9f min %.9f max %.9f, want 0.0100018, 0.0000018, 0.010", f.Time, f.Min, f.Max)
	}
	checkSizes(t, iv.MessageSizes, []report.SizeBin{
		{MinBytes: 8, MaxBytes: 15, Messages: 1, Bytes: 8},
		{MinBytes: 64, MaxBytes: 127, Messages: 1, Bytes: 64, Latency: 0.0540018, Throughput: 64 / 0.0540018},
	})
	r1p := rank(t, iv, 1).RankProfile
	if r1p.Gaps != 4 || !near(r1p.GapMean, 0.034999/4) {
		t.Errorf("rank 1 gaps %d mean %.9f, want 4, %.9f (own clock)", r1p.Gaps, r1p.GapMean, 0.034999/4)
	}
}

// The gap median's estimate stays within gapMedianRelErr of the exact
// median, whatever the gaps; every bin holds the values gapBinRange says;
// merging histograms equals adding the gaps to one.
func TestGapHistBound(t *testing.T) {
	for b := 0; b < gapBins; b++ {
		lo, w := gapBinRange(b)
		if gapBin(lo) != b || gapBin(lo+w-1) != b || (b > 0 && gapBin(lo-1) != b-1) {
			t.Fatalf("bin %d: [%d, %d] maps to %d, %d", b, lo, lo+w-1, gapBin(lo), gapBin(lo+w-1))
		}
	}
	if gapBin(math.MaxInt64) != gapBins-1 {
		t.Fatalf("largest gap in bin %d, want %d", gapBin(math.MaxInt64), gapBins-1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + rng.IntN(50)
		vals := make([]int64, n)
		var h, h1, h2 gapHist
		for i := range vals {
			vals[i] = int64(math.Exp(rng.Float64() * 40)) // 1 ns … 235 s
			h.add(vals[i], 1)
			if i%2 == 0 {
				h1.add(vals[i], 1)
			} else {
				h2.add(vals[i], 1)
			}
		}
		slices.Sort(vals)
		exact := float64(vals[n/2])
		if n%2 == 0 {
			exact = float64(vals[n/2-1]+vals[n/2]) / 2
		}
		if got := h.median(); math.Abs(got-exact) > exact*gapMedianRelErr {
			t.Fatalf("trial %d: median %g, exact %g: beyond %g relative", trial, got, exact, gapMedianRelErr)
		}
		h1.merge(&h2)
		if h1.count() != h.count() || h1.sum != h.sum || h1.median() != h.median() {
			t.Fatalf("trial %d: merged %d gaps sum %d median %g, want %d, %d, %g", trial, h1.count(), h1.sum, h1.median(), h.count(), h.sum, h.median())
		}
	}
}

// A processor tells at most maxComms communicators apart per interval:
// rank 0 sends one message on each of 18 communicators split from world,
// the first 16 get a matrix each ("split #k of world"), the last two count
// under "other communicators"; the totals stay exact.
func TestProfileCommsBounded(t *testing.T) {
	run, r0, r1 := pair()
	var cs []*tracetest.Comm
	for range maxComms + 2 {
		c := run.NewComm(0, 1)
		r0.CommSplit(nil, c, us)
		r1.CommSplit(nil, c, us)
		cs = append(cs, c)
	}
	for _, c := range cs {
		r0.Send(1, 1, 8, us, tracetest.On(c))
	}
	r1.Compute(ms)
	for _, c := range cs {
		r1.Recv(0, 1, 8, us, tracetest.On(c))
	}
	finish(run)
	iv := find(t, analyzeClean(t, run))
	if len(iv.CommMatrices) != maxComms+1 {
		t.Fatalf("%d comm matrices, want %d", len(iv.CommMatrices), maxComms+1)
	}
	names := map[string]int64{}
	var total int64
	for _, cm := range iv.CommMatrices {
		names[cm.Comm] = cm.Messages[0][1]
		total += cm.Messages[0][1]
	}
	for k := 1; k <= maxComms; k++ {
		if n := names["split #"+itoa(k)+" of world"]; n != 1 {
			t.Errorf("split #%d of world: %d messages, want 1", k, n)
		}
	}
	if names["other communicators"] != 2 || total != maxComms+2 || iv.CommMatrix.Messages[0][1] != maxComms+2 {
		t.Errorf("other communicators %d messages, total %d, matrix %v; want 2, %d", names["other communicators"], total, iv.CommMatrix.Messages, maxComms+2)
	}
}
