package analyzer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/realtraces"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// resultRunDir writes a run of 4 ranks whose report has every part a
// result carries, and removes rank 3's trace: ranks 0 and 1 execute
// section 1 (K = 2) inside interval 1, rank 1 waits 80 ms there for
// rank 0's message (a late sender, caused by rank 0's computation), rank
// 2's first message to rank 0 is never received, and the final barrier lacks
// rank 3 (an unmatched collective).
func resultRunDir(t testing.TB) string {
	run, ranks := start(4)
	r0, r1, r2 := ranks[0], ranks[1], ranks[2]
	r0.Pcontrol(100, 1).Pcontrol(102, 1).Compute(100*ms).Pcontrol(103, 1)
	r0.Send(1, 1, 1024, 10*us).Pcontrol(101, 1).Recv(2, 8, 8, 10*us)
	r1.Pcontrol(100, 1).Pcontrol(102, 1).Compute(20*ms).Pcontrol(103, 1)
	r1.Recv(0, 1, 1024, 90*ms).Pcontrol(101, 1)
	// (Then a message rank 0 receives: rank 0 cannot finish before
	// the first is sent, which would leave it out of the unreceived
	// messages named.)
	r2.Send(0, 9, 64, 5*us).Send(0, 8, 8, 5*us).Compute(10 * ms)
	for i, r := range ranks {
		var o []tracetest.Opt
		if i == 2 {
			// The sends' call site reached with a second function: a
			// virtual site (sitefns.go) in the result.
			o = append(o, tracetest.Site("MPI_Send"))
		}
		r.Barrier(200*ms-r.Now(), o...).Finalize(us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "app.3.trc")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// replayed is a replay of opts, settled, with pass 1's findings.
type replayed struct {
	sc    *runScan
	warns []string
	reps  []*replayer
	x     *exchange
}

func replayForResult(t testing.TB, opts Options) *replayed {
	t.Helper()
	ctx := context.Background()
	rp := &replayed{}
	sc, err := scanRun(ctx, opts, func(s string) { rp.warns = append(rp.warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	x, s, reps := newReplay(ctx, opts, sc, nil)
	if err := s.run(1); err != nil {
		t.Fatal(err)
	}
	settle(reps, x)
	rp.sc, rp.reps, rp.x = sc, reps, x
	return rp
}

// splitMerge splits res into n parts, each marshalled and unmarshalled,
// and merges them.
func splitMerge(t *testing.T, res *replayResult, n int) *replayResult {
	t.Helper()
	parts := splitResult(res, n)
	for i, p := range parts {
		b, err := p.marshal()
		if err != nil {
			t.Fatal(err)
		}
		if parts[i], err = unmarshalResult(b); err != nil {
			t.Fatal(err)
		}
	}
	m, err := mergeResults(res.size, parts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestResultSplitMerge: the result of a replay split by rank into 1 to 4
// parts, each marshalled and unmarshalled, merges into the same result
// (the same bytes), and the report built from it is the report built
// from the replay directly, with its sections, waits, causes, profile,
// unreceived messages and unmatched collective.
func TestResultSplitMerge(t *testing.T) {
	opts := Options{Dir: resultRunDir(t), App: "app", MaxLevel: -1}
	rp := replayForResult(t, opts)
	whole, err := collectResult(rp.reps, rp.x).marshal()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes for %d ranks", len(whole), 3)
	for n := 1; n <= 4; n++ {
		res, err := unmarshalResult(whole)
		if err != nil {
			t.Fatal(err)
		}
		got, err := splitMerge(t, res, n).marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, whole) {
			t.Errorf("%d parts: the merged result differs from the whole one", n)
		}
	}

	want, wantSt, err := finishReport(collectResult(rp.reps, rp.x), replaysFinish(rp.reps, opts), rp.sc.byRank, rp.sc.model, opts, rp.warns, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := unmarshalResult(whole)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	got, gotSt, err := finishReport(splitMerge(t, res, 3), nil, rp.sc.byRank, rp.sc.model, opts, rp.warns, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatal(err)
	}
	if gotSt != wantSt {
		t.Errorf("stats %+v, want %+v", gotSt, wantSt)
	}
	if strings.Join(append(append([]string{}, rp.warns...), warned...), "\n") != strings.Join(got.Warnings, "\n") {
		t.Errorf("warn received %q after %q, the report lists %q", warned, rp.warns, got.Warnings)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("report from the merged result:\n%s\nwant\n%s", g, w)
	}

	// What the run is meant to exercise is there.
	iv := find(t, got, 1)
	expect(t, "rank 0 Insufficient Parallelism", rank(t, iv, 0).InsufficientParallelism, 0.100/2)
	expect(t, "rank 1 Insufficient Parallelism", rank(t, iv, 1).InsufficientParallelism, 0.020/2)
	if len(iv.Waits) == 0 || iv.Waits[0].Kind != "late_sender" || iv.Waits[0].WaitingRank != 1 {
		t.Errorf("waits %+v", iv.Waits)
	} else {
		expect(t, "late sender", iv.Waits[0].Seconds, 0.080)
	}
	if len(iv.Causes) == 0 || iv.Causes[0].LateRank != 0 {
		t.Errorf("causes %+v", iv.Causes)
	}
	top := find(t, got)
	if top.CommMatrix == nil || top.CommMatrix.Messages[0][1] != 1 || top.CommMatrix.Messages[2][0] != 2 || len(top.MessageSizes) == 0 {
		t.Errorf("profile: matrix %+v, sizes %+v", top.CommMatrix, top.MessageSizes)
	}
	for _, sub := range []string{"Rank 2: 1 message to rank 0 with tag 9 never received", "Collective MPI_Barrier (call 1 on MPI_COMM_WORLD) lacks rank(s) 3"} {
		if !hasWarning(got, sub) {
			t.Errorf("no warning %q in %q", sub, got.Warnings)
		}
	}
	if got.Unmatched == nil || got.Unmatched.Sends != 1 || got.Unmatched.Collectives == 0 {
		t.Errorf("unmatched %+v", got.Unmatched)
	}
}

// TestMergeResultsRefuses: results of different runs, or replaying the
// same rank twice, do not merge; a report with a timeline needs the
// replays.
func TestMergeResultsRefuses(t *testing.T) {
	opts := Options{Dir: resultRunDir(t), App: "app", MaxLevel: -1}
	rp := replayForResult(t, opts)
	res := collectResult(rp.reps, rp.x)
	if _, err := mergeResults(res.size, res, res); err == nil || !strings.Contains(err.Error(), "replayed by two processes") {
		t.Errorf("the same ranks twice: %v", err)
	}
	if _, err := mergeResults(res.size+1, res); err == nil {
		t.Error("results of a run of another size merged")
	}
	opts.Timeline = &TimelineRecorder{}
	if _, _, err := finishReport(res, nil, rp.sc.byRank, rp.sc.model, opts, nil, nil); err == nil {
		t.Error("a timeline without the replays")
	}
}

// FuzzUnmarshalResult: bad bytes give an error, never a panic; what
// decodes marshals again to bytes that decode to the same.
func FuzzUnmarshalResult(f *testing.F) {
	opts := Options{Dir: resultRunDir(f), App: "app", MaxLevel: -1}
	rp := replayForResult(f, opts)
	res := collectResult(rp.reps, rp.x)
	for _, p := range append(splitResult(res, 2), res) {
		b, err := p.marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(resultMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := unmarshalResult(b)
		if err != nil {
			return
		}
		b2, err := res.marshal()
		if err != nil {
			t.Fatal(err)
		}
		res2, err := unmarshalResult(b2)
		if err != nil {
			t.Fatalf("a marshalled result does not decode: %v", err)
		}
		b3, err := res2.marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b2, b3) {
			t.Error("marshal, unmarshal and marshal again give other bytes")
		}
	})
}

// BenchmarkResultReal measures, on the traces of real programs that
// BenchmarkAnalyzeReal reads, what the results cost: the replay (pass 1
// and 2), building the report from the result (finishReport), marshal
// and unmarshal, and the marshalled bytes per replayed rank; the report
// from the result split in three, marshalled and merged must be the
// direct one to the byte.
//
//	go test -run '^$' -bench ResultReal -benchtime 3x ./analyzer/
func BenchmarkResultReal(b *testing.B) {
	for _, name := range realtraces.Names {
		b.Run(name, func(b *testing.B) {
			dir, app := realtraces.Need(b, name)
			opts := Options{Dir: dir, App: app, MaxLevel: -1}
			var replay, finish, enc, dec time.Duration
			var size, ranks int
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				rp := replayForResult(b, opts)
				t1 := time.Now()
				res := collectResult(rp.reps, rp.x)
				want, _, err := finishReport(res, replaysFinish(rp.reps, opts), rp.sc.byRank, rp.sc.model, opts, rp.warns, nil)
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				// (A fresh result: finishReport added the Insufficient
				// Parallelism to this one.)
				rp = replayForResult(b, opts)
				t3 := time.Now()
				bs, err := collectResult(rp.reps, rp.x).marshal()
				if err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				res, err = unmarshalResult(bs)
				if err != nil {
					b.Fatal(err)
				}
				t5 := time.Now()
				replay += t1.Sub(t0)
				finish += t2.Sub(t1)
				enc += t4.Sub(t3)
				dec += t5.Sub(t4)
				size, ranks = len(bs), 0
				for _, rr := range res.ranks {
					if rr != nil {
						ranks++
					}
				}
				if i > 0 {
					continue
				}
				parts := splitResult(res, 3)
				for j, p := range parts {
					pb, err := p.marshal()
					if err != nil {
						b.Fatal(err)
					}
					if parts[j], err = unmarshalResult(pb); err != nil {
						b.Fatal(err)
					}
				}
				merged, err := mergeResults(res.size, parts...)
				if err != nil {
					b.Fatal(err)
				}
				got, _, err := finishReport(merged, nil, rp.sc.byRank, rp.sc.model, opts, rp.warns, nil)
				if err != nil {
					b.Fatal(err)
				}
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if !bytes.Equal(g, w) {
					b.Fatal("the report from the merged result differs from the direct one")
				}
			}
			n := float64(b.N)
			b.ReportMetric(replay.Seconds()*1e3/n, "replay-ms/op")
			b.ReportMetric(finish.Seconds()*1e3/n, "finish-ms/op")
			b.ReportMetric(enc.Seconds()*1e3/n, "marshal-ms/op")
			b.ReportMetric(dec.Seconds()*1e3/n, "unmarshal-ms/op")
			b.ReportMetric(float64(size)/float64(max(ranks, 1)), "result-B/rank")
		})
	}
}
