package view

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

const us = tracetest.US

// ring is 4 ranks exchanging around a ring iters times (8 bytes, even
// ranks send first), with a barrier every 10 iterations: 2 calls per
// iteration and rank, plus the barriers; rank r computes (r+1)·10 µs
// before each exchange, so that receives wait.
func ring(iters int) *tracetest.Run {
	run := tracetest.NewRun(4)
	for r := 0; r < 4; r++ {
		run.Rank(r).Init(1 * us)
	}
	for it := 0; it < iters; it++ {
		for r := 0; r < 4; r++ {
			k := run.Rank(r)
			k.Compute(int64(r+1) * 10 * us)
			right, left, tag := int32((r+1)%4), int32((r+3)%4), int32(it)
			if r%2 == 0 {
				k.Send(right, tag, 8, 2*us)
				k.Recv(left, tag, 8, 3*us)
			} else {
				k.Recv(left, tag, 8, 3*us)
				k.Send(right, tag, 8, 2*us)
			}
			if it%10 == 9 {
				k.Barrier(5 * us)
			}
		}
	}
	for r := 0; r < 4; r++ {
		run.Rank(r).Finalize(1 * us)
	}
	return run
}

// analyzeBoth analyses run twice: with every call kept in the timeline
// (the reference) and through a Store.
func analyzeBoth(t *testing.T, run *tracetest.Run) (*report.Timeline, *Server, *Store) {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	opts := analyzer.Options{Dir: dir, App: "app", MaxLevel: -1}
	rec := &analyzer.TimelineRecorder{MaxCalls: 1 << 20}
	ro := opts
	ro.Timeline = rec
	if _, err := analyzer.Analyze(context.Background(), ro); err != nil {
		t.Fatal(err)
	}
	srv, st, err := Analyze(context.Background(), opts, t.TempDir(), analyzer.Analyze)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return rec.Timeline(), srv, st
}

// TestWindowDetail: a window in detail holds exactly the calls and
// messages the in-memory timeline records, whole or in part.
func TestWindowDetail(t *testing.T) {
	ref, _, st := analyzeBoth(t, ring(200))
	if ref.Truncated || ref.CallCount != 4*(400+20) {
		t.Fatalf("reference: truncated %v, %d calls; want all 1680", ref.Truncated, ref.CallCount)
	}
	for _, win := range [][2]int64{{0, ref.End}, {ref.End / 3, ref.End / 2}} {
		w, err := st.Window(win[0], win[1], 800)
		if err != nil {
			t.Fatal(err)
		}
		if !w.Detail || len(w.Lanes) != 4 {
			t.Fatalf("window %v: detail %v, %d lanes", win, w.Detail, len(w.Lanes))
		}
		var calls int64
		recvs := map[int64]bool{}
		for j, ln := range ref.Lanes {
			got := w.Lanes[j]
			if got.Rank != ln.Rank {
				t.Fatalf("lane %d is rank %d, want %d", j, got.Rank, ln.Rank)
			}
			k := 0
			for i := range ln.Start {
				if ln.Start[i] > win[1] || ln.Start[i]+ln.Dur[i] < win[0] {
					continue
				}
				if k >= len(got.Start) {
					t.Fatalf("window %v rank %d: %d calls, want more", win, ln.Rank, len(got.Start))
				}
				if got.Start[k] != ln.Start[i] || got.Dur[k] != ln.Dur[i] || got.Lost[k] != ln.Lost[i] || got.Func[k] != ln.Func[i] ||
					got.Site[k] != ln.Site[i] || got.Bytes[k] != ln.Bytes[i] || got.Peer[k] != ln.Peer[i] || (got.Coll[k] < 0) != (ln.Coll[i] < 0) {
					t.Fatalf("window %v rank %d call %d: start %d dur %d lost %d fn %d site %d bytes %d peer %d coll %d; want %d %d %d %d %d %d %d %d",
						win, ln.Rank, i, got.Start[k], got.Dur[k], got.Lost[k], got.Func[k], got.Site[k], got.Bytes[k], got.Peer[k], got.Coll[k],
						ln.Start[i], ln.Dur[i], ln.Lost[i], ln.Func[i], ln.Site[i], ln.Bytes[i], ln.Peer[i], ln.Coll[i])
				}
				if ln.Peer[i] >= 0 && ln.Func[i] >= 0 && strings.Contains(ref.Funcs[ln.Func[i]].Name, "Recv") {
					recvs[int64(ln.Rank)<<40|ln.Start[i]+ln.Dur[i]] = true
				}
				k++
			}
			if k != len(got.Start) {
				t.Errorf("window %v rank %d: %d calls, want %d", win, ln.Rank, len(got.Start), k)
			}
			calls += int64(k)
		}
		if w.Calls != calls {
			t.Errorf("window %v: calls %d, want %d", win, w.Calls, calls)
		}
		// One arrow per receive in the window, to its exit.
		if len(w.Messages.From) != len(recvs) {
			t.Errorf("window %v: %d messages, want %d", win, len(w.Messages.From), len(recvs))
		}
		for i := range w.Messages.From {
			if !recvs[int64(w.Messages.To[i])<<40|w.Messages.Recv[i]] {
				t.Errorf("window %v: message %d→%d received at %d by no receive", win, w.Messages.From[i], w.Messages.To[i], w.Messages.Recv[i])
			}
		}
	}
	// Collective instances: the barriers, one id shared by the 4 ranks.
	w, _ := st.Window(0, ref.End, 800)
	members := map[int]int{}
	for _, ln := range w.Lanes {
		for _, c := range ln.Coll {
			if c >= 0 {
				members[c]++
			}
		}
	}
	if len(members) != 20 {
		t.Errorf("%d collective instances, want 20", len(members))
	}
	for id, n := range members {
		if n != 4 {
			t.Errorf("instance %d has %d members, want 4", id, n)
		}
	}
}

// TestWindowCollTies: the ties of nonblocking and persistent
// collectives' starts and completions to their instances (Coll, Ties)
// come out of the store as the in-memory timeline has them, in a window
// of the whole run and, numbered apart, in one of a part.
func TestWindowCollTies(t *testing.T) {
	run := tracetest.NewRun(3)
	for r := range 3 {
		k := run.Rank(r).Init(us)
		p := k.CollInit("MPI_Barrier_init", -1, us)
		for it := range 5 {
			k.Compute(int64(r+1) * 10 * us)
			a := k.Ibarrier(us)
			b := k.Ibcast(0, 8, us)
			k.Waitall([]tracetest.Req{a, b}, int64(it+1)*1000*us-k.Now())
			k.Start(p, us)
			k.Barrier(us)
			k.Wait(p, us)
		}
		k.RequestFree(p, us).Finalize(us)
	}
	ref, _, st := analyzeBoth(t, run)
	w, err := st.Window(0, ref.End, 800)
	if err != nil {
		t.Fatal(err)
	}
	for j, ln := range ref.Lanes {
		got := w.Lanes[j]
		if ln.Ties == nil || len(ln.Ties.Call) != 15 {
			t.Fatalf("rank %d: reference ties %+v, want 15", ln.Rank, ln.Ties)
		}
		if fmt.Sprint(got.Coll) != fmt.Sprint(ln.Coll) || fmt.Sprintf("%+v", got.Ties) != fmt.Sprintf("%+v", ln.Ties) {
			t.Errorf("rank %d: coll %v ties %+v; want %v %+v", ln.Rank, got.Coll, got.Ties, ln.Coll, ln.Ties)
		}
	}
	// A window of the fourth iteration: its calls' ties, renumbered.
	from, to := int64(3000*us), int64(4000*us)
	w, err = st.Window(from, to, 800)
	if err != nil {
		t.Fatal(err)
	}
	for j, ln := range w.Lanes {
		if ln.Ties == nil || len(ln.Ties.Call) < 3 {
			t.Errorf("lane %d: ties %+v in [%d, %d], want 3 at least", j, ln.Ties, from, to)
			continue
		}
		for k, i := range ln.Ties.Call {
			if i < 0 || i >= len(ln.Start) || !ln.Ties.Done[k] {
				t.Errorf("lane %d: tie %d to call %d of %d (done %v)", j, k, i, len(ln.Start), ln.Ties.Done[k])
			}
		}
	}
}

// TestWindowOverview: over the detail limit a window is aggregated per
// pixel; read from the calls, each lane's time per kind and lost time add
// up to the reference's exactly; from the histograms, within rounding.
func TestWindowOverview(t *testing.T) {
	ref, _, st := analyzeBoth(t, ring(200))
	st.detailLimit = 10
	for _, scan := range []bool{true, false} {
		if !scan {
			st.scanLimit = 0
		}
		const px = 500
		w, err := st.Window(0, ref.End+1, px)
		if err != nil {
			t.Fatal(err)
		}
		if w.Detail || w.Bins != px || len(w.Lanes) != 4 {
			t.Fatalf("scan %v: detail %v bins %d lanes %d", scan, w.Detail, w.Bins, len(w.Lanes))
		}
		for j, ln := range ref.Lanes {
			var busy, lost int64
			for i := range ln.Start {
				busy += ln.Dur[i]
				lost += min(ln.Lost[i], ln.Dur[i])
			}
			ov := w.Lanes[j].Overview
			var gb, gl int64
			for b := 0; b < px; b++ {
				gb += ov.P2P[b] + ov.Coll[b] + ov.Wait[b] + ov.Other[b]
				gl += ov.Lost[b]
			}
			tol := int64(0)
			if !scan {
				tol = 5 * px // rounding per pixel and kind
			}
			if d := gb - busy; d < -tol || d > tol {
				t.Errorf("scan %v rank %d: busy %d ns, want %d", scan, ln.Rank, gb, busy)
			}
			if d := gl - lost; d < -tol || d > tol {
				t.Errorf("scan %v rank %d: lost %d ns, want %d", scan, ln.Rank, gl, lost)
			}
		}
	}
}

// TestServesOnlyTheReport: the page at /, windows at /api/window, and
// nothing else: no files, no listings, no traversal, no other methods,
// no other host names.
func TestServesOnlyTheReport(t *testing.T) {
	_, srv, _ := analyzeBoth(t, ring(5))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	get := func(method, path, host string) (int, string) {
		req, err := http.NewRequest(method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("GET", "/", ""); code != 200 || !strings.Contains(body, `id="dtpa-live">{"window":"/api/window"}`) {
		t.Errorf("GET /: %d, page %.200q", code, body)
	}
	code, body := get("GET", "/api/window?from=0&to=1000000000&px=100", "")
	var w Window
	if code != 200 || json.Unmarshal([]byte(body), &w) != nil || len(w.Lanes) != 4 {
		t.Errorf("GET /api/window: %d %.200q", code, body)
	}
	for _, p := range []string{"/index.html", "/api/", "/api/window/", "/api", "/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
		"/..%2f..%2fetc%2fpasswd", "/report/html/page.js", "/go.mod", "//etc/passwd", "/api/window/../../../etc/passwd", "/.git/config"} {
		if code, body := get("GET", p, ""); code != 404 || strings.Contains(body, "root:") {
			t.Errorf("GET %s: %d %.100q, want 404", p, code, body)
		}
	}
	for _, q := range []string{"", "?from=5&to=1&px=10", "?from=a&to=1&px=10", "?from=0&to=10&px=0"} {
		if code, _ := get("GET", "/api/window"+q, ""); code != 400 {
			t.Errorf("GET /api/window%s: %d, want 400", q, code)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		if code, _ := get(m, "/", ""); code != 405 {
			t.Errorf("%s /: %d, want 405", m, code)
		}
	}
	for _, h := range []string{"evil.example", "evil.example:80", "10.0.0.1"} {
		if code, _ := get("GET", "/", h); code != http.StatusMisdirectedRequest {
			t.Errorf("GET / with Host %s: %d, want 421", h, code)
		}
	}
	if code, _ := get("GET", "/", "localhost:1234"); code != 200 {
		t.Errorf("GET / with Host localhost: %d", code)
	}
}

// TestListenLoopback: the server's socket is on 127.0.0.1.
func TestListenLoopback(t *testing.T) {
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if a := ln.Addr().String(); !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("listening on %s", a)
	}
}

// TestServeStops: Serve returns nil once its context is done.
func TestServeStops(t *testing.T) {
	_, srv, _ := analyzeBoth(t, ring(2))
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestServedInChromium: the served page in headless chromium, opened on
// a zoomed window (#t=), fetches that window in detail from its server:
// the timeline reports the window and its boxes, the script logged no
// error, and every request went to the server on 127.0.0.1.
func TestServedInChromium(t *testing.T) {
	ref, srv, _ := analyzeBoth(t, ring(200))
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
	}()
	// The middle fifth of the run, in seconds.
	a, b := ref.End*2/5, ref.End*3/5
	u := fmt.Sprintf("http://%s/#t=%.9f,%.9f", ln.Addr(), float64(a)/1e9, float64(b)/1e9)
	p := headless.OpenURL(t, u, 10*time.Second)
	headless.CheckPage(t, p, "http://"+ln.Addr().String()+"/")
	asked := false
	for _, r := range p.Requests {
		asked = asked || strings.Contains(r, "/api/window?")
	}
	if !asked {
		t.Errorf("the net log shows no window request: %q", p.Requests)
	}
	tlm := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	attr := func(name string) string {
		m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tlm)
		if m == nil {
			return ""
		}
		return m[1]
	}
	if attr("data-live") != "1" || attr("data-ranks") != "4" || attr("data-messages") != "800" {
		t.Errorf("timeline %s", tlm)
	}
	if attr("data-window-detail") != "1" || attr("data-window-error") != "" {
		t.Fatalf("no detail window arrived: %s", tlm)
	}
	// The boxes of the window the page asked for (it rounds to whole ns).
	w, err := srv.st.Window(a, b, 100)
	if err != nil {
		t.Fatal(err)
	}
	boxes := 0
	for _, l := range w.Lanes {
		boxes += len(l.Start)
	}
	if got, _ := strconv.Atoi(attr("data-window-boxes")); boxes == 0 || got < boxes-8 || got > boxes+8 {
		t.Errorf("window boxes %s, want about %d (%s)", attr("data-window-boxes"), boxes, tlm)
	}
	if n, _ := strconv.Atoi(attr("data-arrows")); n == 0 {
		t.Errorf("no message arrows in the window: %s", tlm)
	}
}

// threaded is 2 ranks of MPI_THREAD_MULTIPLE whose threads 0 and 1 both
// call MPI: on rank 0 thread 1 waits 1 … 201.02 ms for rank 1's thread 1,
// while thread 0 sends to rank 1's thread 0 at 50 ms. Rank 0's thread 1
// calls are recorded after thread 0's MPI_Finalize (a buffer handed over
// late), so the rank's calls are not in time order.
func threaded() *tracetest.Run {
	const ms = 1000 * us
	run := tracetest.NewRun(2)
	run.ThreadLevel = 3
	r0, r1 := run.Rank(0).Init(us), run.Rank(1).Init(us)
	r0.Thread(1).Thread(0)
	r0.At(50*ms).Send(1, 0, 8, 10*us)
	r0.At(300 * ms).Finalize(us)
	r0.Thread(1).At(1*ms).Recv(1, 1, 8, 200*ms+20*us)
	r1.Thread(1).Thread(0)
	r1.At(60*ms).Recv(0, 0, 8, 10*us)
	r1.Thread(1).At(201*ms).Send(0, 1, 8, 10*us)
	r1.Thread(0).At(300 * ms).Finalize(us)
	return run
}

// TestWindowThreads: a window in detail names each call's thread as the
// in-memory timeline does, and the served page's lanes list both threads
// of each rank (the page lays out its sub-lanes from them) without the
// recorder's own detail.
func TestWindowThreads(t *testing.T) {
	ref, srv, st := analyzeBoth(t, threaded())
	w, err := st.Window(0, ref.End, 800)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Detail || len(w.Lanes) != 2 {
		t.Fatalf("detail %v, %d lanes", w.Detail, len(w.Lanes))
	}
	for j, ln := range ref.Lanes {
		got := w.Lanes[j]
		if len(ln.Thread) != len(ln.Start) || len(got.Thread) != len(got.Start) || len(got.Start) != len(ln.Start) {
			t.Fatalf("rank %d: window %d calls %d threads; reference %d calls %d threads", ln.Rank, len(got.Start), len(got.Thread), len(ln.Start), len(ln.Thread))
		}
		ones := 0
		for i := range ln.Start {
			if got.Start[i] != ln.Start[i] || got.Thread[i] != ln.Thread[i] {
				t.Errorf("rank %d call %d: start %d thread %d, want %d %d", ln.Rank, i, got.Start[i], got.Thread[i], ln.Start[i], ln.Thread[i])
			}
			if ln.Thread[i] == 1 {
				ones++
			}
		}
		if ones != 1 {
			t.Errorf("rank %d: %d calls of thread 1, want 1", ln.Rank, ones)
		}
	}
	// At rank 1's receive (59 ms after the origin, rank 0's thread 1
	// entering its receive) rank 0 has its thread 1 receive in the
	// window, rank 1 a call of thread 0 alone: no column.
	at := ref.Lanes[1].Start[0]
	w, err = st.Window(at, at+us, 800)
	if err != nil {
		t.Fatal(err)
	}
	if l := w.Lanes[0]; len(l.Start) != 1 || fmt.Sprint(l.Thread) != "[1]" {
		t.Errorf("rank 0 at %d: %d calls, threads %v; want 1 call of thread 1", at, len(l.Start), l.Thread)
	}
	if l := w.Lanes[1]; len(l.Start) != 1 || l.Thread != nil {
		t.Errorf("rank 1 at %d: %d calls, thread column %v; want 1, none", at, len(l.Start), l.Thread)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="dtpa-timeline">(.*?)</script>`).FindSubmatch(srv.page)
	if m == nil {
		t.Fatal("no timeline in the page")
	}
	var tl report.Timeline
	if err := json.Unmarshal(m[1], &tl); err != nil {
		t.Fatal(err)
	}
	for _, ln := range tl.Lanes {
		if fmt.Sprint(ln.Threads) != "[0 1]" || ln.Thread != nil || len(ln.Start) != 0 {
			t.Errorf("served rank %d: threads %v, thread column %v, %d calls", ln.Rank, ln.Threads, ln.Thread, len(ln.Start))
		}
	}
}

// TestWindowLateThread: a thread's calls spooled after later calls of
// another thread (its buffer handed over late) are found by a window
// however many chunks lie between: thread 0 calls at 0, 1, 2 … µs
// (100 ns each), then thread 1 at 0.5, 1.5, 2.5 … µs, in chunks of a few
// calls.
func TestWindowLateThread(t *testing.T) {
	st, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Start(1)
	st.chunk = 64
	for th := int64(0); th < 2; th++ {
		for i := int64(0); i < 100; i++ {
			e := 1000*i + 500*th
			st.Call(0, &analyzer.TimelineCall{Entry: e, Exit: e + 100, Peer: -1, Kind: report.KindP2P, Thread: int32(th)})
		}
	}
	if err := st.finish(&analyzer.TimelineRecorder{}, &report.Timeline{End: 100_000, Lanes: []report.Lane{{Rank: 0}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(st.ranks[0].calls.chunks); n < 10 {
		t.Fatalf("%d chunks, want many", n)
	}
	w, err := st.Window(50_450, 50_650, 100)
	if err != nil {
		t.Fatal(err)
	}
	if l := w.Lanes[0]; !w.Detail || len(l.Start) != 1 || l.Start[0] != 50_500 || fmt.Sprint(l.Thread) != "[1]" {
		t.Errorf("window 50.45 … 50.65 µs: detail %v, starts %v, threads %v; want thread 1's call at 50.5 µs", w.Detail, l.Start, l.Thread)
	}
}

// TestServedThreadsInChromium: the served page of threaded lays out a
// lane per thread of each rank (4 for 2 ranks) before any window arrives,
// and draws the window's arrows between the threads that sent and
// received: rank 0 thread 0 → rank 1 thread 0 (lanes 0, 2), rank 1
// thread 1 → rank 0 thread 1 (lanes 3, 1).
func TestServedThreadsInChromium(t *testing.T) {
	ref, srv, _ := analyzeBoth(t, threaded())
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
	}()
	u := fmt.Sprintf("http://%s/#t=0,%.9f", ln.Addr(), float64(ref.End)/1e9)
	p := headless.OpenURL(t, u, 10*time.Second)
	headless.CheckPage(t, p, "http://"+ln.Addr().String()+"/")
	tlm := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	attr := func(name string) string {
		m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tlm)
		if m == nil {
			return ""
		}
		return m[1]
	}
	if attr("data-ranks") != "2" || attr("data-lanes") != "4" || attr("data-window-detail") != "1" || attr("data-window-boxes") != "4" {
		t.Fatalf("timeline %s", tlm)
	}
	got := strings.Fields(attr("data-arrow-lanes"))
	sort.Strings(got)
	if strings.Join(got, " ") != "0-2 3-1" {
		t.Errorf("arrows between lanes %q, want 0-2 and 3-1", attr("data-arrow-lanes"))
	}
}
