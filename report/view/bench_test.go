package view

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/report/html"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// The benchmark's run: 4 ranks in a ring (MPI_Irecv from the left,
// MPI_Isend to the right, MPI_Waitall), an MPI_Allreduce every 16
// iterations, about 3.06 calls per iteration and rank; DTPA_VIEW_EVENTS
// calls in all (default 4 M; `make bench-view` runs 100 M and 10 M).
// DTPA_VIEW_DIR keeps the generated traces between runs; DTPA_VIEW_STATIC=0
// leaves out the static page.
func viewBenchTraces(b *testing.B) (dir string, events int64) {
	events = 4_000_000
	if v, err := strconv.ParseInt(os.Getenv("DTPA_VIEW_EVENTS"), 10, 64); err == nil && v > 0 {
		events = v
	}
	const ranks = 4
	iters := int(float64(events) / ranks / (3 + 1.0/16))
	if d := os.Getenv("DTPA_VIEW_DIR"); d != "" {
		dir = filepath.Join(d, fmt.Sprintf("ring4-i%d", iters))
	} else {
		dir = b.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "ring.3.trc")); err != nil {
		os.MkdirAll(dir, 0o755)
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, ranks)
		for r := 0; r < ranks; r++ {
			wg.Add(1)
			go func() { defer wg.Done(); errs[r] = genRing(dir, r, ranks, iters) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("generated %d iterations on %d ranks in %v", iters, ranks, time.Since(start))
	}
	return dir, events
}

func genRing(dir string, r, ranks, iters int) error {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("ring.%d.trc", r)))
	if err != nil {
		return err
	}
	defer f.Close()
	hdr := &tracepb.Header{Rank: uint32(r), WorldSize: uint32(ranks), RunId: []byte("view-bench-run01"),
		Program: "/bench/ring", Clock: &tracepb.Clock{Source: tracepb.Clock_SYNTHETIC}}
	w, err := traceformat.NewWriter(f, hdr, traceformat.WriterOptions{Level: 1})
	if err != nil {
		return err
	}
	names := []string{"MPI_Init", "MPI_Finalize", "MPI_Pcontrol", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce"}
	members := make([]uint32, ranks)
	for i := range members {
		members[i] = uint32(i)
	}
	defs := &tracepb.Definitions{
		Modules: []*tracepb.Module{{Id: 0, Path: "/bench/ring", Start: 0x400000, End: 0x500000}},
		Communicators: []*tracepb.Communicator{
			{Local: 0, Id: 0, Members: members},
			{Local: 1, Id: traceformat.SelfCommID(uint32(r)), Members: []uint32{uint32(r)}},
		},
	}
	for i, n := range names {
		defs.Functions = append(defs.Functions, mpifunc.Function(uint32(i), n))
		defs.CallSites = append(defs.CallSites, &tracepb.CallSite{Id: uint32(i), Pcs: []uint64{0x401000 + uint64(i)*16}})
	}
	if err := w.WriteDefinitions(defs); err != nil {
		return err
	}
	if r != 0 {
		if err := w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, Reference: 0, SameClock: true}); err != nil {
			return err
		}
	}
	left, right := int32((r+ranks-1)%ranks), int32((r+1)%ranks)
	var bt traceformat.Builder
	var n int64
	add := func(e *traceformat.Event) error {
		bt.Append(e)
		n++
		if bt.Len() == 16384 {
			if err := w.WriteBatch(&bt); err != nil {
				return err
			}
			bt.Reset()
		}
		return nil
	}
	const period = 10000
	t0 := int64(1000)
	evs := []traceformat.Event{{Func: 0, Site: 0, Entry: 0, Exit: t0}}
	st := []traceformat.Status{{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}, {Source: left, Tag: 0}}
	for i := range evs {
		if err := add(&evs[i]); err != nil {
			return err
		}
	}
	for it := 0; it < iters; it++ {
		base := t0 + int64(it)*period
		rq, sq := uint64(2*it+1), uint64(2*it+2)
		jit := int64((r*7+it)%13) * 100
		evs := [...]traceformat.Event{
			{Func: 3, Site: 3, Entry: base + 100, Exit: base + 200, Attr: traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrReqs, RecvPeer: left, Reqs: []uint64{rq}},
			{Func: 4, Site: 4, Entry: base + 300 + jit, Exit: base + 400 + jit, Attr: traceformat.AttrComm | traceformat.AttrSend | traceformat.AttrReqs, SendPeer: right, Reqs: []uint64{sq}},
			{Func: 5, Site: 5, Entry: base + 3000, Exit: base + 4000 + jit, Attr: traceformat.AttrReqs | traceformat.AttrStatus, Reqs: []uint64{sq, rq}, Status: st},
			{Func: 6, Site: 6, Entry: base + 5000 + jit, Exit: base + 7000, Attr: traceformat.AttrComm},
		}
		k := 3
		if it%16 == 15 {
			k = 4
		}
		for i := 0; i < k; i++ {
			if err := add(&evs[i]); err != nil {
				return err
			}
		}
	}
	end := t0 + int64(iters)*period
	fin := traceformat.Event{Func: 1, Site: 1, Entry: end, Exit: end + 1000}
	if err := add(&fin); err != nil {
		return err
	}
	if err := w.WriteBatch(&bt); err != nil {
		return err
	}
	return w.Close(&tracepb.Footer{EventCount: uint64(n), StopReason: tracepb.Footer_FINALIZE, EndLocalNs: end + 1000})
}

// BenchmarkView measures dtpa view on the benchmark run: the analysis
// with the spool (s, spool bytes per call), the server's requests (a
// window of the whole run at 1600 pixels, from the histograms; a window
// of ~1 M calls aggregated from the spool; a window of ~2000 calls in
// detail), the first paint of the served page in headless chromium
// (overview drawn; first window answered and drawn) and the process's
// peak RSS. It also writes the static page (dtpa --html, 250 k calls of
// detail) of the same run: its size and the time to write it, and its
// first paint from file://. Run it once (-benchtime 1x): the work is one
// analysis.
//
// Measured with make bench-view on the development machine (2 vCPUs
// shared with other jobs, load average 11–16: wall times are
// pessimistic; page times count from the navigation's start in headless
// chromium, the page's parsing and Chart.js included):
//
//	100 M calls (81.6 s of run): analysis with the spool 117 s, spool
//	9.15 B per call (0.9 GB), peak RSS 47 MB; requests: whole run at
//	1600 px from the histograms 4.1 ms, ~1 M calls aggregated from the
//	spool 197 ms, ~2000 calls in detail 1.1 ms; served page 379 KB,
//	overview painted at 1.20 s, first window drawn at 1.29 s, a zoomed
//	page's detail window drawn at 1.23 s.
//	10 M calls: analysis with the spool 30 s, peak RSS 38 MB; static page
//	(250 k calls of detail) 8.6 MB, written in 0.91 s (8.4 s with its
//	analysis), painted at 1.41 s from file://.
func BenchmarkView(b *testing.B) {
	dir, events := viewBenchTraces(b)
	opts := analyzer.Options{Dir: dir, App: "ring", MaxLevel: -1}
	for i := 0; i < b.N; i++ {
		start := time.Now()
		srv, st, err := Analyze(context.Background(), opts, b.TempDir(), analyzer.Analyze)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "analysis+spool-s")
		b.ReportMetric(float64(st.SpoolBytes())/float64(events), "spool-B/call")
		end := st.end
		timed := func(name string, from, to int64, px int, detail bool) {
			t := time.Now()
			w, err := st.Window(from, to, px)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(t).Microseconds())/1000, name+"-ms")
			if w.Detail != detail {
				b.Errorf("%s: detail %v (%d calls)", name, w.Detail, w.Calls)
			}
		}
		// Per rank ~3 calls per 10 µs of the run.
		timed("window-overview-hist", 0, end, 1600, false)
		timed("window-overview-scan", end/2, end/2+1_000_000/4/3*10_000, 1600, false)
		timed("window-detail", end/2, end/2+2000/4/3*10_000, 1600, true)

		ln, err := Listen(0)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- srv.Serve(ctx, ln) }()
		base := "http://" + ln.Addr().String() + "/"
		if resp, err := http.Get(base); err == nil {
			b.ReportMetric(float64(resp.ContentLength)/1024, "served-page-KB")
			resp.Body.Close()
		}
		p := headless.OpenURL(b, base, 20*time.Second)
		headless.CheckPage(b, p, base)
		b.ReportMetric(domMs(b, p.DOM, "data-render-ms"), "served-overview-paint-ms")
		b.ReportMetric(domMs(b, p.DOM, "data-window-ms"), "served-first-window-ms")
		p = headless.OpenURL(b, fmt.Sprintf("%s#t=%.9f,%.9f", base, float64(end/2)/1e9, float64(end/2+2_000_000)/1e9), 20*time.Second)
		headless.CheckPage(b, p, base)
		if !strings.Contains(p.DOM, `data-window-detail="1"`) {
			b.Errorf("zoomed page got no detail")
		}
		b.ReportMetric(domMs(b, p.DOM, "data-window-ms"), "served-detail-window-ms")
		cancel()
		<-done
		st.Close()
		b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")

		if os.Getenv("DTPA_VIEW_STATIC") == "0" {
			continue
		}
		// The static page of the same run.
		start = time.Now()
		rec := &analyzer.TimelineRecorder{MaxCalls: 250_000}
		so := opts
		so.Timeline = rec
		rep, err := analyzer.Analyze(context.Background(), so)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		wstart := time.Now()
		if err := html.Write(&buf, rep, rec.Timeline()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(wstart).Seconds(), "static-write-s")
		b.ReportMetric(time.Since(start).Seconds(), "static-analysis+write-s")
		b.ReportMetric(float64(buf.Len())/(1<<20), "static-page-MB")
		file := filepath.Join(b.TempDir(), "ring.html")
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		p = headless.Open(b, file)
		headless.CheckReport(b, p)
		b.ReportMetric(domMs(b, p.DOM, "data-render-ms"), "static-paint-ms")
	}
}

func domMs(b *testing.B, dom, attr string) float64 {
	m := regexp.MustCompile(attr + `="([0-9]+)"`).FindStringSubmatch(dom)
	if m == nil {
		b.Errorf("the page has no %s", attr)
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
