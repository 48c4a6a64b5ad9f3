package analyzer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/report/html"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// The benchmark trace: DTPA_BENCH_RANKS ranks (default 256), each making
// DTPA_BENCH_ITERS iterations (default 131072, about 1e8 calls) of a ring exchange
// (MPI_Irecv from the left, MPI_Isend of benchBytes to the right, MPI_Waitall) with an
// MPI_Allreduce every 16 iterations, inside Pcontrol interval 1. About 3
// calls per iteration and rank. DTPA_BENCH_PATTERN=pairs exchanges between
// rank pairs (r, r^1) instead of around the ring. DTPA_BENCH_DIR keeps the generated files
// between runs (they take longer to write than to analyse).
func benchPairs() bool { return os.Getenv("DTPA_BENCH_PATTERN") == "pairs" }

// benchReverse: DTPA_BENCH_PATTERN=reverse sends around the ring the other
// way (to the left neighbour).
func benchReverse() bool { return os.Getenv("DTPA_BENCH_PATTERN") == "reverse" }

func benchParams() (ranks, iters int, dir string) {
	ranks, iters = 256, 131072
	if v, err := strconv.Atoi(os.Getenv("DTPA_BENCH_RANKS")); err == nil && v > 1 {
		ranks = v
	}
	if v, err := strconv.Atoi(os.Getenv("DTPA_BENCH_ITERS")); err == nil && v > 0 {
		iters = v
	}
	dir = os.Getenv("DTPA_BENCH_DIR")
	if dir != "" && benchPairs() {
		dir = filepath.Join(dir, "pairs")
	}
	if dir != "" && benchReverse() {
		dir = filepath.Join(dir, "reverse")
	}
	return ranks, iters, dir
}

// genBench writes the benchmark trace, streaming (constant memory per
// rank), ranks in parallel. It returns the number of events.
func genBench(dir string, ranks, iters int) (int64, error) {
	var total atomic.Int64
	var firstErr error
	var mu sync.Mutex
	parallel(ranks, runtime.GOMAXPROCS(0), func(r int) {
		n, err := genRank(dir, r, ranks, iters)
		total.Add(n)
		if err != nil {
			mu.Lock()
			firstErr = err
			mu.Unlock()
		}
	})
	return total.Load(), firstErr
}

func genRank(dir string, r, ranks, iters int) (int64, error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("bench.%d.trc", r)))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	hdr := &tracepb.Header{Rank: uint32(r), WorldSize: uint32(ranks), RunId: []byte("benchmark-run-01"),
		Program: "/bench/bench", Clock: &tracepb.Clock{Source: tracepb.Clock_SYNTHETIC}}
	w, err := traceformat.NewWriter(f, hdr, traceformat.WriterOptions{Level: 1})
	if err != nil {
		return 0, err
	}
	names := []string{"MPI_Init", "MPI_Finalize", "MPI_Pcontrol", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce"}
	defs := &tracepb.Definitions{
		Modules: []*tracepb.Module{{Id: 0, Path: "/bench/bench", Start: 0x400000, End: 0x500000}},
		Communicators: []*tracepb.Communicator{
			{Local: 0, Id: 0, Members: worldMembers(ranks)},
			{Local: 1, Id: traceformat.SelfCommID(uint32(r)), Members: []uint32{uint32(r)}},
		},
	}
	for i, n := range names {
		defs.Functions = append(defs.Functions, mpifunc.Function(uint32(i), n))
		defs.CallSites = append(defs.CallSites, &tracepb.CallSite{Id: uint32(i), Pcs: []uint64{0x401000 + uint64(i)*16}})
	}
	if err := w.WriteDefinitions(defs); err != nil {
		return 0, err
	}
	if r != 0 {
		if err := w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, Reference: 0, SameClock: true}); err != nil {
			return 0, err
		}
	}
	left, right := int32((r+ranks-1)%ranks), int32((r+1)%ranks)
	if benchReverse() {
		left, right = right, left
	}
	if benchPairs() {
		// Pairwise exchange (r with r^1): independent pairs between the
		// allreduces, where the ring is one long dependency chain.
		left, right = int32(r^1), int32(r^1)
		if int(left) >= ranks {
			left, right = int32(r), int32(r)
		}
	}
	var b traceformat.Builder
	var n int64
	add := func(e *traceformat.Event) error {
		b.Append(e)
		n++
		if b.Len() == 16384 {
			if err := w.WriteBatch(&b); err != nil {
				return err
			}
			b.Reset()
		}
		return nil
	}
	const period = 10000 // ns per iteration
	t0 := int64(1000)
	evs := []traceformat.Event{
		{Func: 0, Site: 0, Entry: 0, Exit: t0},
		{Func: 2, Site: 2, Entry: t0, Exit: t0, Attr: traceformat.AttrPcontrol, PcLevel: 100, PcArg: 1},
	}
	for i := range evs {
		if err := add(&evs[i]); err != nil {
			return n, err
		}
	}
	st := []traceformat.Status{{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}, {Source: left, Tag: 0}}
	for it := 0; it < iters; it++ {
		base := t0 + int64(it)*period
		rq, sq := uint64(2*it+1), uint64(2*it+2)
		// Rank-dependent compute so that waits are not all zero.
		jit := int64((r*7+it)%13) * 100
		ev := traceformat.Event{Func: 3, Site: 3, Entry: base + 100, Exit: base + 200, Attr: traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrReqs,
			RecvPeer: left, Reqs: []uint64{rq}}
		if err := add(&ev); err != nil {
			return n, err
		}
		ev = traceformat.Event{Func: 4, Site: 4, Entry: base + 300 + jit, Exit: base + 400 + jit,
			Attr:     traceformat.AttrComm | traceformat.AttrSend | traceformat.AttrSendBytes | traceformat.AttrReqs,
			SendPeer: right, SendBytes: benchBytes(r), Reqs: []uint64{sq}}
		if err := add(&ev); err != nil {
			return n, err
		}
		ev = traceformat.Event{Func: 5, Site: 5, Entry: base + 3000, Exit: base + 4000 + jit, Attr: traceformat.AttrReqs | traceformat.AttrStatus,
			Reqs: []uint64{sq, rq}, Status: st}
		if err := add(&ev); err != nil {
			return n, err
		}
		if it%16 == 15 {
			ev = traceformat.Event{Func: 6, Site: 6, Entry: base + 5000 + jit, Exit: base + 7000, Attr: traceformat.AttrComm}
			if err := add(&ev); err != nil {
				return n, err
			}
		}
	}
	end := t0 + int64(iters)*period
	evs = []traceformat.Event{
		{Func: 2, Site: 2, Entry: end, Exit: end, Attr: traceformat.AttrPcontrol, PcLevel: 101, PcArg: 1},
		{Func: 1, Site: 1, Entry: end, Exit: end + 1000},
	}
	for i := range evs {
		if err := add(&evs[i]); err != nil {
			return n, err
		}
	}
	if err := w.WriteBatch(&b); err != nil {
		return n, err
	}
	return n, w.Close(&tracepb.Footer{EventCount: uint64(n), StopReason: tracepb.Footer_FINALIZE, EndLocalNs: end + 1000})
}

// benchBytes is the size of rank r's messages in the benchmark trace:
// 8, 16, 24 or 32 bytes, so that byte counts tell the senders apart.
func benchBytes(r int) uint64 { return 8 * uint64(r%4+1) }

func worldMembers(n int) []uint32 {
	m := make([]uint32, n)
	for i := range m {
		m[i] = uint32(i)
	}
	return m
}

// BenchmarkAnalyze reports calls/s per core (events / (wall s ×
// GOMAXPROCS)), the CPU time per call and the cores actually used (CPU /
// wall: the machine may be shared), the replays' parks (sched.go), the
// peak heap sampled during the analysis and the process's peak RSS.
//
// Measured on the development machine (2 vCPUs, KVM, shared with other
// jobs: load average 2.5–4), 256 ranks, 1.03e8 calls, two runs each:
//
//	GOMAXPROCS=1: 7.5–10.8 M calls/s, 93–100 CPU ns per call, 2.2 M parks
//	GOMAXPROCS=2: 3.9–6.6 M calls/s per core, 108–128 CPU ns per call,
//	              3.2 M parks (1.0–1.7 cores obtained)
//	peak RSS 0.46–0.51 GB (mostly the decoded event batches, ~1.6 MB per
//	rank)
//
// After the replay's own cost was cut (in-place records, inlined lookups,
// one lock round trip per collective call, no false sharing on the
// exchange's lock), old and new binaries alternated, five runs each, on a
// busier machine (load 1.2–6): GOMAXPROCS=1 old 126–214, new 118–135 CPU
// ns per call (83–132 for a build without the last change); GOMAXPROCS=2
// old 163–186, new 107–179 (the new binary was not better in every pair
// at two workers). The old binary alone ranged over 107–214 at
// GOMAXPROCS=1 during that session: the CPU time per call depends mostly
// on what else runs. The profile's split is steadier: the replay
// (everything but reading and decoding the events, coroutine switches
// included) took 1.97 times the decoding's CPU time before and 1.45 times
// after at one worker (2.0–2.1 and 1.48 at two), about a quarter less;
// decoding is 31% of the CPU time before and 38% after. Per-worker CPU
// time at two workers is higher mostly because both vCPUs run at once:
// decoding alone slows down as much or more per core (BenchmarkDecodeOnly,
// 19–21 M calls/s on one core, 12.2–12.5 M per core on two).
//
// One hold of x.mu per collective call and per-shape resolution (fn,
// communicator, matching key) against main before them, alternated, on the
// shared machine. At two workers with 1.4–1.75 cores obtained (load
// 0.9–1.7): old 102–120, new 84–108 CPU ns per call, new better in 4 of 4
// pairs (6.8–8.1 against 8.0–9.8 M calls/s per core); with load 4–7 (0.5–1.8
// cores obtained) 78–102 against 70–124, 2 pairs of 4 each way. At one
// worker the noise hides the difference (old 64–106, new 68–95). Profiles
// of one run each, back to back: CPU time 10.83 → 9.40 s at two workers and
// 7.61 → 6.74 s at one; the function, communicator and peer lookups went
// from 7–8 % of the samples to under 1 %. Parks at two workers stayed at
// 3.1–3.4 M (2.2 M at one), 1.0–1.1 M of them point-to-point waits at the
// block boundaries (0.13 M at one worker); deferring the wakes of a running
// replay until it parks left them unchanged and was dropped. At two
// workers the ranks' inbox locks (send, ticket, receive: three lock round
// trips per ring iteration, uncontended mostly) took about 8 % of the CPU
// time in a profile with 1.7 cores obtained, which one worker does not
// pay; the collectives' lock 1 %, the scheduler's 1 %. Peak RSS 100–117 MB
// either way.
//
// Message queues without a lock (p2p.go) and, with several workers, wakes
// after a collective in rank order (exchange.sortWake), against main before
// them, alternated, on a very busy machine (load 4.8–9.9, 0.24–1.44 cores
// obtained at two workers). At two workers, queues alone: old 116, 81, 73
// against new 69, 77, 70 CPU ns per call; both changes: old 83, 73, 80
// against new 67, 71, 66 (new better in 6 of 6 pairs; 6.0–9.3 M calls/s per
// core against 1.5–6.3, which says more about the load than the binaries).
// Parks at two workers 3.36–3.41 M → 2.36–2.37 M (one worker 2.22 M). At one
// worker, which took no locks before either, no difference beyond the
// noise (old 61–73, new 67–77); cachegrind on 1.6e6 calls: the
// point-to-point functions 121 M → 105 M instructions. Peak RSS 96–121 MB
// either way.
//
// End of session 4 (those changes plus the faster lazy decoding), quiet
// machine (load ~1.5), calls/s/core = calls / (wall × GOMAXPROCS): one
// worker 14.4–17.4 M (64–70 CPU ns per call; session 3's binary 11.6–14.6);
// two workers, 10 runs: 8.1–13.6 M, median 10.2 (1.64–1.79 cores, 19–24 M
// calls/s wall, 2.5 M parks); session 3's binary, 7 runs alternated with
// them: 7.3–10.7 M, median 9.4 (3.1–3.2 M parks). Two single-worker runs
// started together got 13.1–16.6 M each against 15.9–17.4 alone: part of
// the second worker's cost is the VM's, not the replay's (a profile of two
// workers against one: ~15 ns per call spread over each rank's own replay
// code, i.e. slower memory, ~7 ns in collectives, ~2.5 ns idle spinning).
// Peak RSS 100–115 MB.
func BenchmarkAnalyze(b *testing.B) {
	dir := benchTraces(b)
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, _ error) error {
		if fi != nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	runtime.GC()
	b.ResetTimer()
	var events, parks int64
	stopHeap := sampleHeap()
	cpu0 := procstat.CPUTime()
	start := time.Now()
	// DTPA_BENCH_TIMELINE=N also records the timeline with a detail budget
	// of N calls and writes the HTML page (dtpa --html) into memory.
	tlCalls, _ := strconv.Atoi(os.Getenv("DTPA_BENCH_TIMELINE"))
	var htmlBytes int64
	var htmlSecs float64
	for i := 0; i < b.N; i++ {
		var rec *TimelineRecorder
		if tlCalls > 0 {
			rec = &TimelineRecorder{MaxCalls: tlCalls}
		}
		rep, st, err := AnalyzeStats(context.Background(), Options{Dir: dir, App: "bench", MaxLevel: -1, Timeline: rec})
		if err != nil {
			b.Fatal(err)
		}
		if rec != nil {
			t0 := time.Now()
			var buf bytes.Buffer
			if err := html.Write(&buf, rep, rec.Timeline()); err != nil {
				b.Fatal(err)
			}
			htmlSecs += time.Since(t0).Seconds()
			htmlBytes += int64(buf.Len())
		}
		if len(rep.Warnings) != 0 {
			b.Fatalf("warnings: %q", rep.Warnings)
		}
		events += st.Events
		parks += st.Parks
	}
	wall := time.Since(start).Seconds()
	cpu := (procstat.CPUTime() - cpu0).Seconds()
	peakHeap := stopHeap()
	b.ReportMetric(float64(events)/(wall*float64(runtime.GOMAXPROCS(0))), "calls/s/core")
	// On a shared machine the wall-clock figure depends on the other
	// processes; CPU time per call and the cores actually used do less.
	b.ReportMetric(cpu*1e9/float64(events), "cpu-ns/call")
	b.ReportMetric(cpu/wall, "cores-used")
	b.ReportMetric(float64(events)/float64(b.N), "calls/op")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(size)/(1<<20), "trace-MB")
	b.ReportMetric(float64(parks)/float64(b.N), "parks/op")
	if tlCalls > 0 {
		b.ReportMetric(float64(htmlBytes)/float64(b.N)/(1<<20), "html-MB")
		b.ReportMetric(htmlSecs/float64(b.N), "html-write-s")
	}
}

// benchTraces is the directory of the benchmark's traces (benchParams),
// generated unless DTPA_BENCH_DIR already holds them.
func benchTraces(b *testing.B) string {
	ranks, iters, dir := benchParams()
	if dir == "" {
		dir = b.TempDir()
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("r%d-i%d", ranks, iters))
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("bench.%d.trc", ranks-1))); err != nil {
		os.MkdirAll(dir, 0o755)
		start := time.Now()
		n, err := genBench(dir, ranks, iters)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("generated %d events for %d ranks in %v", n, ranks, time.Since(start))
	}
	return dir
}

// BenchmarkDecodeOnly reads the benchmark trace without analysing it, as
// the replay reads it (ReadLazyBatch), one file after the other: the
// reader's share of BenchmarkAnalyze without the cache misses of the
// replay's interleaving of ranks.
func BenchmarkDecodeOnly(b *testing.B) {
	ranks, iters, dir := benchParams()
	if dir == "" {
		b.Skip("set DTPA_BENCH_DIR (and run BenchmarkAnalyze first)")
	}
	dir = filepath.Join(dir, fmt.Sprintf("r%d-i%d", ranks, iters))
	paths, err := discover(dir, "bench")
	if err != nil {
		b.Skip(err)
	}
	b.ResetTimer()
	var events atomic.Int64
	cpu0 := procstat.CPUTime()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		parallel(len(paths), runtime.GOMAXPROCS(0), func(k int) {
			n, err := decodeAll(paths[k])
			if err != nil {
				b.Error(err)
				return
			}
			events.Add(n)
		})
	}
	wall := time.Since(start).Seconds()
	cpu := (procstat.CPUTime() - cpu0).Seconds()
	b.ReportMetric(float64(events.Load())/(wall*float64(runtime.GOMAXPROCS(0))), "calls/s/core")
	// The CPU time per call depends less on what else the machine runs.
	b.ReportMetric(cpu*1e9/float64(events.Load()), "cpu-ns/call")
}

// decodeAll reads every event of a file and returns how many there were.
func decodeAll(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path})
	if err != nil {
		return 0, err
	}
	var n int64
	var e traceformat.Event
	for {
		batch, err := rd.ReadLazyBatch()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		for batch.Next(&e) {
			n++
		}
	}
}

// countingWriter discards what it is given and counts it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkExportChrome analyses the benchmark trace (see BenchmarkAnalyze
// and its DTPA_BENCH_* settings) with a Chrome export (dtpa --export
// chrome) into a writer that counts and discards, the spool in the
// benchmark's temporary directory. It reports calls/s over the whole
// analysis with the export, the seconds of the export's own pass (from
// the end of the replay to the last byte: reading the spool back and
// writing the JSON) with the events it wrote per second then (wall and
// CPU), the JSON's
// and the spool's size per call, and the peak heap and RSS.
//
// Measured on the development machine (2 vCPUs shared by several jobs,
// load average 12–13: wall times are pessimistic, CPU times less so), 256
// ranks, two runs each:
//
//	1.02e7 calls (13000 iterations): 1.83 GB of JSON (188 B per call),
//	spool 15.3 B per call; export pass 8.4–9.6 s wall, 5.4–5.8 M events
//	per CPU second (1.8–2.0 M per wall second; an event is a call, an
//	interval or either end of a message's flow); peak heap 124–129 MB
//	against 83 MB for BenchmarkAnalyze alone on the same trace.
//	3.06e7 calls (39000 iterations): 5.5 GB of JSON; export pass 16.4 s,
//	7.6 M events per CPU second; peak heap 135 MB: memory does not grow
//	with the trace (the spool buffers, 64 KiB per rank, are most of the
//	difference).
func BenchmarkExportChrome(b *testing.B) {
	dir := benchTraces(b)
	spool := b.TempDir()
	runtime.GC()
	b.ResetTimer()
	stopHeap := sampleHeap()
	var calls, events, out, spoolBytes int64
	var exportSecs, exportCPU float64
	start := time.Now()
	for i := 0; i < b.N; i++ {
		w := &countingWriter{}
		// The export's pass starts when the replay has finished: the
		// first byte reaches the writer then. It runs alone, so the
		// process's CPU time then is its own.
		var first time.Time
		var cpuFirst time.Duration
		tw := writerFunc(func(p []byte) (int, error) {
			if first.IsZero() {
				first, cpuFirst = time.Now(), procstat.CPUTime()
			}
			return w.Write(p)
		})
		x := &ChromeExport{W: tw, TempDir: spool}
		_, st, err := AnalyzeStats(context.Background(), Options{Dir: dir, App: "bench", MaxLevel: -1, Chrome: x})
		if err != nil {
			b.Fatal(err)
		}
		exportSecs += time.Since(first).Seconds()
		exportCPU += (procstat.CPUTime() - cpuFirst).Seconds()
		calls += st.Events
		events += x.Calls + 2*x.Messages + x.Spans
		out += w.n
		spoolBytes += x.SpoolBytes
	}
	wall := time.Since(start).Seconds()
	peakHeap := stopHeap()
	b.ReportMetric(float64(calls)/wall, "calls/s")
	b.ReportMetric(exportSecs/float64(b.N), "export-pass-s")
	b.ReportMetric(float64(events)/exportSecs, "json-events/s")
	b.ReportMetric(float64(events)/exportCPU, "json-events/cpu-s")
	b.ReportMetric(float64(out)/float64(calls), "json-B/call")
	b.ReportMetric(float64(spoolBytes)/float64(calls), "spool-B/call")
	b.ReportMetric(float64(out)/float64(b.N)/(1<<20), "json-MB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// sampleHeap samples the heap in use (as runtime.MemStats.HeapInuse: the
// spans holding objects) every 50 ms until the function it returns is
// called; that returns the largest sample. It reads runtime/metrics, which
// unlike runtime.ReadMemStats does not stop the world (twenty times a
// second, in the middle of the replay being measured).
func sampleHeap() func() (peak uint64) {
	var peak uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				metrics.Read(ms)
				if v := ms[0].Value.Uint64() + ms[1].Value.Uint64(); v > peak {
					peak = v
				}
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak
	}
}
