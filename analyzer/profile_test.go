package analyzer

import (
	"os"
	"path/filepath"
	"reflect"
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
		ru.TracerVersion != "tracetest" || !reflect.DeepEqual(ru.Command, []string{"/tmp/app"}) || ru.Program != "/tmp/app" {
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
