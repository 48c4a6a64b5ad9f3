package html_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/html"
	"github.com/dtpa/dtpa/report/reporttest"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

const (
	evilFile = `<img src=x onerror=alert(1)>.c`
	evilFunc = `<b>MPI_Evil</b>`
	evilWarn = `</script><script>alert(2)</script>`
)

// evilReport is reporttest.Full with names a hostile trace could carry,
// and one loss made the biggest by construction: rank 1 waits 2.5 s in
// MPI_Waitall (SRC 2) in interval 1/2, and so in its enclosing intervals
// (the same call site) — everything else is below 1 s.
func evilReport() *report.Report {
	r := reporttest.Full()
	r.Task = `<img src=x onerror=alert(3)>`
	r.Warnings = append(r.Warnings, evilWarn)
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		src := make([]report.SRC, len(iv.SRC))
		for j, p := range iv.SRC {
			p.Stack = append([]report.Frame(nil), p.Stack...)
			p.Ranks = append([]report.SRCRank(nil), p.Ranks...)
			if p.ID == 2 {
				for k := range p.Ranks {
					if p.Ranks[k].Rank == 1 {
						p.Ranks[k].RealSync = 2.5
					}
				}
			}
			if p.ID == 4 {
				p.Function = evilFunc
				p.Stack = []report.Frame{{Function: evilFunc, File: evilFile, Line: 7}}
			}
			src[j] = p
		}
		iv.SRC = src
		// A function and a communicator named like markup in the profile.
		if len(iv.Functions) > 0 {
			iv.Functions = append([]report.Function(nil), iv.Functions...)
			iv.Functions[len(iv.Functions)-1].Function = evilFunc
			iv.CommMatrices = append([]report.CommMatrixOn(nil), iv.CommMatrices...)
			iv.CommMatrices[len(iv.CommMatrices)-1].Comm = evilFile
			for k := range iv.Ranks {
				rk := &iv.Ranks[k]
				rk.CallMix = append([]report.CallMix(nil), rk.CallMix...)
				for j := range rk.CallMix {
					if rk.CallMix[j].Function == "MPI_Isend" {
						rk.CallMix[j].Function = evilFunc
					}
				}
			}
		}
	}
	return r
}

func write(t *testing.T, r *report.Report, tl *report.Timeline) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := html.Write(&b, r, tl); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

// TestDataIsData: names from the traces reach the page only inside the
// JSON data, escaped so that they cannot end the element; the data reads
// back as the report.
func TestDataIsData(t *testing.T) {
	r := evilReport()
	_, page := write(t, r, nil)
	for _, s := range []string{"<img", "<b>", "alert(2)</script>"} {
		if bytes.Contains(page, []byte(s)) {
			t.Errorf("the page holds %q as written", s)
		}
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="dtpa-report">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no report data in the page")
	}
	var back report.Report
	if err := json.Unmarshal(m[1], &back); err != nil {
		t.Fatal(err)
	}
	if back.Task != r.Task || back.Warnings[len(back.Warnings)-1] != evilWarn {
		t.Errorf("data read back: task %q, warnings %q", back.Task, back.Warnings)
	}
	if !bytes.Contains(page, []byte("Content-Security-Policy")) || !bytes.Contains(page, []byte("default-src 'none'")) {
		t.Error("no Content-Security-Policy forbidding requests")
	}
}

// TestChartLibrary: the page carries the chart library make build
// embedded (Chart.js from web/), allowed by its hash, and the library's
// text cannot end its script element.
func TestChartLibrary(t *testing.T) {
	js, err := html.ChartJS()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js[:200], "Chart.js v4") || strings.Contains(strings.ToLower(js), "</script") {
		t.Errorf("the embedded library is not Chart.js 4 or holds </script: %.80q", js)
	}
	_, page := write(t, reporttest.Full(), nil)
	sum := sha256.Sum256([]byte(js))
	if !bytes.Contains(page, []byte(js)) || !bytes.Contains(page, []byte("'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")) {
		t.Error("the page lacks the library or its hash in the policy")
	}
	if bytes.Contains(page, []byte("connect-src")) {
		t.Error("the static page allows requests")
	}
}

// attrRE matches serialized attribute values, which may hold < and >.
var attrRE = regexp.MustCompile(`="[^"]*"`)

// TestBrowser opens the page of evilReport in headless chromium: the
// scripts ran without error and fetched nothing, the summary names the
// biggest loss, the hostile names are text, and the page is not blank.
func TestBrowser(t *testing.T) {
	path, _ := write(t, evilReport(), nil)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	// The findings are report.FindingsOf's: the verdict about interval
	// 1/2 and its three largest losses, the first rank 1's 2.5 s of Real
	// Sync in MPI_Waitall at jacobi.c:95, linked to its SRC row (interval
	// 1/2 is the page's third interval).
	fd := report.FindingsOf(evilReport())
	if !strings.Contains(p.DOM, `<p id="verdict" data-interval="1/2">`+fd.Verdict+`</p>`) {
		t.Errorf("the page lacks the verdict %q:\n%s", fd.Verdict, regexp.MustCompile(`<p id="verdict"[^<]*`).FindString(p.DOM))
	}
	li := firstLoss(t, p.DOM)
	for _, want := range []string{`data-rank-order="1"`, `data-kind="real_sync"`, `data-rank="1"`, `data-function="MPI_Waitall"`, `data-file="jacobi.c"`,
		`data-line="95"`, `data-interval="1/2"`, `data-seconds="2.5"`} {
		if !strings.Contains(li, want) {
			t.Errorf("the biggest loss lacks %s: %s", want, li)
		}
	}
	losses := regexp.MustCompile(`<li data-rank-order="(\d)" data-kind="([a-z_]+)" data-rank="(\d+)"`).FindAllStringSubmatch(p.DOM, -1)
	if len(losses) != len(fd.Losses) {
		t.Fatalf("%d losses on the page, want the findings' %d", len(losses), len(fd.Losses))
	}
	for k, l := range fd.Losses {
		if losses[k][2] != l.Kind || losses[k][3] != strconv.Itoa(l.Rank) {
			t.Errorf("loss %d: %s on rank %s, want %s on rank %d", k+1, losses[k][2], losses[k][3], l.Kind, l.Rank)
		}
	}
	if !regexp.MustCompile(`data-seconds="2.5"[^>]*>.*?<a href="#src-2-2">`).MatchString(p.DOM) || !strings.Contains(p.DOM, `<tr id="src-2-2"`) {
		t.Error("the biggest loss does not link to its SRC row")
	}
	checkProfile(t, p.DOM)
	dom := attrRE.ReplaceAllString(p.DOM, `=""`)
	for _, s := range []string{"<img", "<b>MPI_Evil"} {
		if strings.Contains(dom, s) {
			t.Errorf("the DOM has an element %s from a trace name", s)
		}
	}
	for _, s := range []string{"&lt;b&gt;MPI_Evil&lt;/b&gt;", "&lt;img src=x onerror=alert(1)&gt;.c", "&lt;/script&gt;&lt;script&gt;alert(2)"} {
		if !strings.Contains(p.DOM, s) {
			t.Errorf("the DOM does not show %s as text", s)
		}
	}
	// The run facts name the batch job.
	if !regexp.MustCompile(`<div id="run">[^<]* · job slurm 4242\.0 · `).MatchString(p.DOM) {
		t.Errorf("the run facts lack the batch job: %s", regexp.MustCompile(`<div id="run">[^<]*`).FindString(p.DOM))
	}
	// The charts were drawn by the embedded Chart.js: a bar per rank.
	for _, want := range []string{`<canvas [^>]*data-chart="main"[^>]*data-drawn="1"`,
		`<canvas [^>]*id="exec-chart-0" data-chart="execution" data-bars="4"[^>]*data-drawn="1"`} {
		if !regexp.MustCompile(want).MatchString(p.DOM) {
			t.Errorf("the DOM lacks the chart %s:\n%s", want, regexp.MustCompile(`<canvas[^>]*>`).FindAllString(p.DOM, 3))
		}
	}
	if n := regexp.MustCompile(`<canvas [^>]*data-drawn="1"`).FindAllStringIndex(p.DOM, -1); len(n) < 2*len(evilReport().Intervals) {
		t.Errorf("%d charts drawn, want 2 per interval", len(n))
	}
	if n := headless.Colours(headless.Screenshot(t, path, 1200, 900)); n < 16 {
		t.Errorf("the screenshot has %d colours: blank?", n)
	}
}

// TestBrowserTimelineCollLinks: the timeline ties each start of a
// nonblocking or persistent collective to the call that completed it,
// on every rank: MPI_Ibarrier and MPI_Ibcast to their MPI_Waitall,
// MPI_Start to its MPI_Wait (3 links on each of 3 ranks); the blocking
// MPI_Barrier has none.
func TestBrowserTimelineCollLinks(t *testing.T) {
	const us = tracetest.US
	run := tracetest.NewRun(3)
	for r := range 3 {
		k := run.Rank(r).Init(us)
		k.Compute(int64(r) * 10 * us)
		a, b := k.Ibarrier(us), k.Ibcast(0, 8, us)
		k.Waitall([]tracetest.Req{a, b}, 100*us-k.Now())
		k.Barrier(us)
		p := k.CollInit("MPI_Barrier_init", -1, us)
		k.Start(p, us)
		k.Wait(p, 200*us-k.Now())
		k.RequestFree(p, us).Finalize(us)
	}
	rep, rec := analyzeTimeline(t, run)
	path, _ := write(t, rep, rec.Timeline())
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	if !strings.Contains(tlDiv, `data-coll-links="9"`) {
		t.Errorf("timeline element %s lacks data-coll-links=\"9\"", tlDiv)
	}
}

// TestBrowserTimeline: the timeline of a three-rank run with two messages
// (tracetest.TwoMessages, analyzer's timelineRun) draws three lanes and counts two
// messages, with the detail complete and cut to one call per rank.
func TestBrowserTimeline(t *testing.T) {
	run := tracetest.TwoMessages()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{0, 3} {
		rec := &analyzer.TimelineRecorder{MaxCalls: budget}
		rep, err := analyzer.Analyze(context.Background(), analyzer.Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: rec})
		if err != nil {
			t.Fatal(err)
		}
		path, _ := write(t, rep, rec.Timeline())
		p := headless.Open(t, path)
		headless.CheckReport(t, p)
		tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
		// With a budget of one call per rank, rank 1's Wait is left out
		// and with it the arrow from rank 2; the count stays.
		arrows, truncated := `data-arrows="2"`, false
		if budget == 3 {
			arrows, truncated = `data-arrows="1"`, true
		}
		for _, want := range []string{`data-ranks="3"`, `data-lanes="3"`, `data-messages="2"`, arrows} {
			if !strings.Contains(tlDiv, want) {
				t.Errorf("budget %d: timeline element %s lacks %s", budget, tlDiv, want)
			}
		}
		if got := strings.Contains(p.DOM, `id="truncated"`); got != truncated {
			t.Errorf("budget %d: says detail truncated: %v, want %v", budget, got, truncated)
		}
		// Rank 1 waits 100 ms in MPI_Recv for rank 0's send: its biggest
		// loss at a call site (its Load Imbalance, not at a call site, is
		// bigger).
		if !regexp.MustCompile(`<li [^>]*data-kind="real_sync" data-rank="1" data-interval=""[^>]*data-function="MPI_Recv"`).MatchString(p.DOM) {
			t.Errorf("the summary does not list rank 1's Real Sync in MPI_Recv:\n%s", regexp.MustCompile(`(?s)<ol class="losses".*?</ol>`).FindString(p.DOM))
		}
	}
}

func firstLoss(t *testing.T, dom string) string {
	t.Helper()
	li := regexp.MustCompile(`<ol class="losses" id="losses"><li [^>]*>`).FindString(dom)
	if li == "" {
		t.Fatalf("no loss in the summary")
	}
	return li
}

// TestBrowserTimelineSpans: interval executions are drawn on the lanes
// (two ranks, intervals 1 and 1/2 on each) and lanes name their hosts,
// even hosts named like markup.
func TestBrowserTimelineSpans(t *testing.T) {
	const us = tracetest.US
	run := tracetest.NewRun(2)
	for i := 0; i < 2; i++ {
		r := run.Rank(i)
		r.Init(1*us).Pcontrol(100, 1).Compute(10*us).Pcontrol(100, 2).Barrier(5*us).Pcontrol(101, 2)
		r.Compute(4*us).Pcontrol(101, 1).Finalize(1 * us)
	}
	rep, rec := analyzeTimeline(t, run)
	tl := rec.Timeline()
	if tl.Lanes[0].Host != "testhost" {
		t.Errorf("host %q, want the trace header's testhost", tl.Lanes[0].Host)
	}
	tl.Lanes[0].Host = evilFile
	path, _ := write(t, rep, tl)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="2"`, `data-spans="4"`, `data-hosts="2"`} {
		if !strings.Contains(tlDiv, want) {
			t.Errorf("timeline element %s lacks %s", tlDiv, want)
		}
	}
	if strings.Contains(attrRE.ReplaceAllString(p.DOM, `=""`), "<img") {
		t.Error("a host name became an element")
	}
}

// TestBrowserTimelineThreads: rank 0 (MPI_THREAD_MULTIPLE) calls MPI from
// threads 0 and 1, rank 1 from its main thread alone: three lanes, rank
// 0 thread 0, rank 0 thread 1 and rank 1, for two ranks. Thread 0 sends
// to rank 1 at 50 ms; thread 1 waits 1 … 201.02 ms for rank 1's send at
// 201 ms, and its calls are recorded after thread 0's MPI_Finalize. The
// arrows run from lane 0 to lane 2 and from lane 2 to lane 1.
func TestBrowserTimelineThreads(t *testing.T) {
	const us, ms = tracetest.US, 1000 * tracetest.US
	run := tracetest.NewRun(2)
	run.ThreadLevel = 3
	r0, r1 := run.Rank(0).Init(us), run.Rank(1).Init(us)
	r0.Thread(1).Thread(0)
	r0.At(50*ms).Send(1, 0, 8, 10*us)
	r0.At(300 * ms).Finalize(us)
	r0.Thread(1).At(1*ms).Recv(1, 1, 8, 200*ms+20*us)
	r1.At(60*ms).Recv(0, 0, 8, 10*us)
	r1.At(201*ms).Send(0, 1, 8, 10*us)
	r1.At(300 * ms).Finalize(us)
	rep, rec := analyzeTimeline(t, run)
	if len(rep.Warnings) > 0 || rep.Unmatched != nil {
		t.Fatalf("warnings %q, unmatched %+v", rep.Warnings, rep.Unmatched)
	}
	tl := rec.Timeline()
	if len(tl.Lanes) != 2 || len(tl.Lanes[0].Threads) != 2 || tl.Lanes[1].Threads != nil {
		t.Fatalf("lanes %d, threads %v and %v", len(tl.Lanes), tl.Lanes[0].Threads, tl.Lanes[1].Threads)
	}
	path, _ := write(t, rep, tl)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="2"`, `data-lanes="3"`, `data-messages="2"`, `data-arrows="2"`} {
		if !strings.Contains(tlDiv, want) {
			t.Errorf("timeline element %s lacks %s", tlDiv, want)
		}
	}
	m := regexp.MustCompile(`data-arrow-lanes="([^"]*)"`).FindStringSubmatch(tlDiv)
	if m == nil {
		t.Fatalf("timeline element %s names no arrow lanes", tlDiv)
	}
	got := strings.Fields(m[1])
	sort.Strings(got)
	if strings.Join(got, " ") != "0-2 2-1" {
		t.Errorf("arrows between lanes %q, want 0-2 and 2-1", m[1])
	}
}

// TestBrowserTimelineUnfinished: the calls in progress when the processes
// ended are drawn in the timeline, hatched and outlined in dark red, in
// the row of their thread: rank 1's MPI_Recv from 3 ms after the run's
// first call (the barrier all ranks enter at once) for the 300 ms until
// its process ended, rank 2's thread 1's MPI_Wait from 2 ms, open (its
// process's end unknown), rank 3's MPI_Send from 4 ms, at least 100 ms
// (the job was interrupted then), open past them. A page without them
// has no dark red.
func TestBrowserTimelineUnfinished(t *testing.T) {
	const us, ms = tracetest.US, 1000 * tracetest.US
	build := func(hang bool) *tracetest.Run {
		run := tracetest.NewRun(4)
		for i := range 4 {
			run.Rank(i).Init(us).Compute(10 * ms).Barrier(1 * ms)
		}
		run.Rank(0).Compute(5 * ms).Finalize(us)
		if !hang {
			for i := 1; i < 4; i++ {
				run.Rank(i).Compute(5 * ms).Finalize(us)
			}
			return run
		}
		r3 := run.Rank(3)
		r3.Compute(3*ms).Unfinished(0, "MPI_Send", r3.Now(), 0).InterruptedAt(r3.Now() + 100*ms).StopReason(tracepb.Footer_SIGNAL)
		r1 := run.Rank(1).Skew(7*ms, 50)
		r1.Compute(2*ms).Unfinished(0, "MPI_Recv", r1.Now(), 0).Compute(300 * ms).StopReason(tracepb.Footer_SIGNAL)
		r2 := run.Rank(2)
		r2.Compute(1*ms).Unfinished(1, "MPI_Wait", r2.Now(), 0).NoEndTime().StopReason(tracepb.Footer_SIGNAL)
		return run
	}
	darkRed := func(path string) int {
		return pixels(t, path, func(r, g, b uint32) bool { return r >= 110 && r <= 160 && g < 40 && b < 40 })
	}
	rep, rec := analyzeTimeline(t, build(true))
	path, _ := write(t, rep, rec.Timeline())
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-lanes="5"`, `data-unfinished="3"`, `data-unfinished-open="2"`,
		`data-unfinished-tips="MPI_Recv (p2p): never returned; rank 1; start 3.000 ms, in progress for 300.000 ms when its process ended | ` +
			`MPI_Wait (wait): never returned; rank 2 thread 1; start 2.000 ms, in progress when its process ended, at a time its trace does not hold | ` +
			`MPI_Send (p2p): never returned; rank 3; start 4.000 ms, in progress for at least 100.000 ms: the job was interrupted then, and its process ended later"`} {
		if !strings.Contains(tlDiv, want) {
			t.Errorf("timeline element %s lacks %s", tlDiv, want)
		}
	}
	if n := darkRed(path); n < 50 {
		t.Errorf("%d dark red pixels: the calls that never returned are not drawn", n)
	}
	// Each line of the list under the warnings links to the timeline's
	// window of its calls, a tenth wider on each side: rank 1's from 3 to
	// 303 ms, rank 2's from 2 ms to the run's end (rank 1's, 303 ms), rank
	// 3's from 4 to 104 ms (its interrupt).
	links := regexp.MustCompile(`<li class="warn">([^<]*) <a class="tl-link" href="#t=([0-9.]+),([0-9.]+)">show in the timeline</a></li>`).FindAllStringSubmatch(p.DOM, -1)
	wantWin := map[string][2]float64{"MPI_Recv": {0, 0.333}, "MPI_Wait": {0, 0.3331}, "MPI_Send": {0, 0.114}}
	if len(links) != len(wantWin) {
		t.Errorf("%d lines link to the timeline, want %d:\n%s", len(links), len(wantWin), regexp.MustCompile(`<ul id="unfinished">.*?</ul>`).FindString(p.DOM))
	}
	for _, m := range links {
		fn, _, _ := strings.Cut(m[1], ":")
		fn, _, _ = strings.Cut(fn, " ")
		from, _ := strconv.ParseFloat(m[2], 64)
		to, _ := strconv.ParseFloat(m[3], 64)
		if w, ok := wantWin[fn]; !ok || math.Abs(from-w[0]) > 1e-8 || math.Abs(to-w[1]) > 1e-8 {
			t.Errorf("%q links to #t=%s,%s, want %v", m[1], m[2], m[3], w)
		}
	}
	rep, rec = analyzeTimeline(t, build(false))
	path, _ = write(t, rep, rec.Timeline())
	if p := headless.Open(t, path); !strings.Contains(p.DOM, `data-unfinished="0"`) {
		t.Error("a run whose calls all returned has calls that never returned")
	}
	if n := darkRed(path); n != 0 {
		t.Errorf("%d dark red pixels on a page without calls that never returned", n)
	}
}

// TestBrowserTimelineCrash: the moment a rank crashed is a red cross on
// the timeline, on its crashed thread's row (rank 1's, 20 ms after the
// barrier it left, 21 ms after the run's first call, on a clock 7 ms
// ahead), whose tip says where (the report's crash lines) and when; a page
// without crashes has none.
func TestBrowserTimelineCrash(t *testing.T) {
	const ms = 1000 * tracetest.US
	build := func(crash bool) *tracetest.Run {
		return endedRun(crash, func(r1 *tracetest.Rank) {
			r1.Skew(7*ms, 50).CrashedAt(r1.Now()+20*ms, &tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true})
		})
	}
	red := func(path string) int {
		return pixels(t, path, func(r, g, b uint32) bool { return r >= 180 && g < 40 && b < 40 })
	}
	rep, rec := analyzeTimeline(t, build(true))
	if len(rep.Crashes) != 1 {
		t.Fatalf("crashes %+v", rep.Crashes)
	}
	path, _ := write(t, rep, rec.Timeline())
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	if m := regexp.MustCompile(`data-crashes="1@(\d+)"`).FindStringSubmatch(tlDiv); m == nil {
		t.Errorf("timeline element %s has no crash of rank 1", tlDiv)
	} else if at, _ := strconv.ParseInt(m[1], 10, 64); at < 21*ms-2 || at > 21*ms+2 {
		t.Errorf("rank 1 crashed at %d ns, want 21 ms ± 2 ns (the skewed clock's rounding)", at)
	}
	// (No frame of the program's: the rank's last MPI call says where it
	// was last, report.Crash.LastCall.)
	if want := `data-crash-tips="rank 1 crashed: SIGSEGV (Segmentation fault), address not mapped (0x0); (its stack is unknown); after its last MPI call, MPI_Barrier; at 21.000 ms"`; !strings.Contains(tlDiv, want) {
		t.Errorf("timeline element %s lacks %s", tlDiv, want)
	}
	withCross := red(path)
	rep, rec = analyzeTimeline(t, build(false))
	path, _ = write(t, rep, rec.Timeline())
	if p := headless.Open(t, path); !strings.Contains(p.DOM, `data-crashes=""`) {
		t.Error("a run without crashes has crash marks")
	}
	if without := red(path); withCross < without+20 {
		t.Errorf("%d red pixels with the crash, %d without: the cross is not drawn", withCross, without)
	}
}

// TestBrowserTimelineEnd: the moment a rank exited without MPI_Finalize
// is an orange bar on the timeline, on its thread's row (rank 1's, 20 ms
// after the barrier it left, 21 ms after the run's first call, on a clock
// 7 ms ahead), whose tip says how (report.LaneEnd.How) and when; a page of
// ranks that all finalized has none.
func TestBrowserTimelineEnd(t *testing.T) {
	const ms = 1000 * tracetest.US
	build := func(exit bool) *tracetest.Run {
		return endedRun(exit, func(r1 *tracetest.Rank) {
			r1.Skew(7*ms, 50).Compute(20 * ms).Exited(&tracepb.ExitCall{Status: 3, HasStatus: true, HasThread: true})
		})
	}
	orange := func(path string) int {
		return pixels(t, path, func(r, g, b uint32) bool { return r >= 190 && g >= 70 && g <= 120 && b < 40 })
	}
	rep, rec := analyzeTimeline(t, build(true))
	path, _ := write(t, rep, rec.Timeline())
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	tlDiv := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	if m := regexp.MustCompile(`data-ends="1@(\d+)"`).FindStringSubmatch(tlDiv); m == nil {
		t.Errorf("timeline element %s has no end of rank 1", tlDiv)
	} else if at, _ := strconv.ParseInt(m[1], 10, 64); at < 21*ms-2 || at > 21*ms+2 {
		t.Errorf("rank 1 ended at %d ns, want 21 ms ± 2 ns (the skewed clock's rounding)", at)
	}
	if want := `data-end-tips="rank 1: had exited without MPI_Finalize (status 3); exited at 21.000 ms"`; !strings.Contains(tlDiv, want) {
		t.Errorf("timeline element %s lacks %s", tlDiv, want)
	}
	withBar := orange(path)
	rep, rec = analyzeTimeline(t, build(false))
	path, _ = write(t, rep, rec.Timeline())
	if p := headless.Open(t, path); !strings.Contains(p.DOM, `data-ends=""`) {
		t.Error("a run whose ranks all finalized has end marks")
	}
	if without := orange(path); withBar < without+10 {
		t.Errorf("%d orange pixels with the end, %d without: the bar is not drawn", withBar, without)
	}
}

// endedRun is a run of 2 ranks that pass a barrier 10 ms in; rank 0 then
// finalizes 40 ms later, and rank 1 too, or, with early, ends as end
// makes it.
func endedRun(early bool, end func(r1 *tracetest.Rank)) *tracetest.Run {
	const us, ms = tracetest.US, 1000 * tracetest.US
	run := tracetest.NewRun(2)
	for i := range 2 {
		run.Rank(i).Init(us).Compute(10 * ms).Barrier(1 * ms)
	}
	run.Rank(0).Compute(40 * ms).Finalize(us)
	if early {
		end(run.Rank(1))
	} else {
		run.Rank(1).Compute(40 * ms).Finalize(us)
	}
	return run
}

// pixels counts the pixels of the page at path, as headless chromium
// draws it 1200 px wide, whose 8-bit colour satisfies of.
func pixels(t *testing.T, path string, of func(r, g, b uint32) bool) int {
	t.Helper()
	img := headless.Screenshot(t, path, 1200, 1400)
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if of(r>>8, g>>8, bl>>8) {
				n++
			}
		}
	}
	return n
}

// analyzeTimeline analyses run's traces with a timeline recorder.
func analyzeTimeline(t *testing.T, run *tracetest.Run) (*report.Report, *analyzer.TimelineRecorder) {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rec := &analyzer.TimelineRecorder{}
	rep, err := analyzer.Analyze(context.Background(), analyzer.Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: rec})
	if err != nil {
		t.Fatal(err)
	}
	return rep, rec
}

// TestBrowserClockViolations: the page says how many clock-condition
// violations were repaired and how many were not, with the worst of each,
// above the warnings; a page of a report without them says nothing.
func TestBrowserClockViolations(t *testing.T) {
	rep := evilReport()
	rep.ClockViolations = &report.ClockViolations{Count: 2, Worst: 0.000042, WorstRank: 3, Repaired: true, Amortized: 1,
		Unrepaired: 3, UnrepairedWorst: 0.0000125, UnrepairedWorstRank: 1, UnrepairedSyncSends: 2, UnrepairedNonblocking: 1}
	path, _ := write(t, rep, nil)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	want := `<p id="clock-violations" data-repaired="2" data-unrepaired="3">Clock-condition violations: 2 repaired (worst 42.000 µs on processor 3, ` +
		`1 amortized backward); 3 not repaired (synchronous sends 2, nonblocking collectives 1, threaded collectives 0; worst 12.500 µs on processor 1).</p>`
	if !strings.Contains(p.DOM, want) {
		t.Errorf("the page lacks %s:\n%s", want, regexp.MustCompile(`<section id="warnings">.{0,600}`).FindString(p.DOM))
	}
	rep.ClockViolations = nil
	path, _ = write(t, rep, nil)
	if p := headless.Open(t, path); strings.Contains(p.DOM, `<p id="clock-violations"`) {
		t.Error("a page without clock-condition violations mentions them")
	}
}

// TestBrowserUnfinished: the calls in progress when the processes ended
// are listed under the warnings, grouped as the text report groups them
// (report.UnfinishedLines), then where the other ranks were
// (report.ElsewhereLines); a page of a report without them lists none.
func TestBrowserUnfinished(t *testing.T) {
	rep := evilReport()
	s1, s2 := 3.877, 3.8801
	rep.Unfinished = []report.UnfinishedCall{
		{Rank: 0, Function: "MPI_Barrier", File: "/src/hang.c", Line: 18},
		{Rank: 3, Function: "MPI_Recv", File: "/src/hang.c", Line: 20, Seconds: &s2},
		{Rank: 1, Function: "MPI_Recv", File: "/src/hang.c", Line: 20, Seconds: &s1},
		{Rank: 2, Function: "MPI_Recv", File: "/src/hang.c", Line: 20},
		{Rank: 5, Thread: 2, Function: "<MPI_Wait>&", Seconds: &s1},
	}
	rep.Elsewhere = []report.RankElsewhere{
		{Rank: 4, State: "finalized", LastCall: &report.CallPlace{Function: "MPI_Finalize", File: "/src/<hang>.c", Line: 30}},
		{Rank: 6, State: "outside"},
	}
	path, _ := write(t, rep, nil)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	var want strings.Builder
	want.WriteString(`<ul id="unfinished">`)
	for _, l := range report.UnfinishedLines(rep.Unfinished) {
		want.WriteString(`<li class="warn">` + esc.Replace(l) + `</li>`)
	}
	// Then where the other ranks were.
	want.WriteString(`</ul><p>In no MPI call then:</p><ul id="elsewhere">`)
	for _, l := range report.ElsewhereLines(rep.Elsewhere) {
		want.WriteString(`<li>` + esc.Replace(l) + `</li>`)
	}
	want.WriteString(`</ul>`)
	if !strings.Contains(p.DOM, want.String()) {
		t.Errorf("the page lacks %s:\n%s", want.String(), regexp.MustCompile(`<section id="warnings">.{0,1000}`).FindString(p.DOM))
	}
	rep.Unfinished, rep.Elsewhere = nil, nil
	path, _ = write(t, rep, nil)
	if p := headless.Open(t, path); strings.Contains(p.DOM, `id="unfinished"`) {
		t.Error("a page without unfinished calls lists them")
	}
}

// TestBrowserCrashes: where a crashed rank crashed is shown with the
// warnings, its headline, then a frame per line (report.Crash.Lines), the
// trace's strings as text; the findings open with it.
func TestBrowserCrashes(t *testing.T) {
	rep := evilReport()
	rep.Crashes = []report.Crash{{Rank: 1, Signal: "SIGABRT (Aborted)", SignalNumber: 6, Cause: "abort() called", At: 1,
		Frames: []report.Frame{{Function: "abort"}, {Function: "<check>&", File: "/src/a&b.c", Line: 22}, {Function: "main", File: "/src/a&b.c", Line: 34}}}}
	path, _ := write(t, rep, nil)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	lines := rep.Crashes[0].Lines()
	var want strings.Builder
	want.WriteString(`<div class="crash"><p class="warn">` + esc(lines[0]) + `</p><ol class="crash-stack">`)
	for _, l := range lines[1:] {
		want.WriteString(`<li>` + esc(l) + `</li>`)
	}
	want.WriteString(`</ol></div>`)
	if !strings.Contains(p.DOM, want.String()) {
		t.Errorf("the page lacks %s:\n%s", want.String(), regexp.MustCompile(`<section id="warnings">.{0,1000}`).FindString(p.DOM))
	}
	if !regexp.MustCompile(`<p id="verdict"[^>]*>` + regexp.QuoteMeta(esc("Rank 1 crashed: SIGABRT (Aborted), abort() called, called from <check>& at a&b.c:22. "))).MatchString(p.DOM) {
		t.Errorf("the findings do not open with the crash: %s", regexp.MustCompile(`<p id="verdict">.{0,300}`).FindString(p.DOM))
	}
	rep.Crashes = nil
	path, _ = write(t, rep, nil)
	if p := headless.Open(t, path); strings.Contains(p.DOM, `class="crash"`) {
		t.Error("a page without crashes shows one")
	}
}

// TestBrowserMPMD: an MPMD job's programs are named in the run facts with
// their ranks, as text.
func TestBrowserMPMD(t *testing.T) {
	rep := evilReport()
	rep.Programs = []report.Program{{Program: "/run/ocean", Ranks: []int{0, 1}}, {Program: "/run/<img src=x onerror=alert(3)>atmos", Ranks: []int{2, 3, 5}}}
	path, _ := write(t, rep, nil)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	if want := "MPMD: ocean (ranks 0-1), &lt;img src=x onerror=alert(3)&gt;atmos (ranks 2-3, 5)"; !strings.Contains(p.DOM, want) {
		t.Errorf("the run facts lack %q:\n%s", want, regexp.MustCompile(`<div id="run"[^<]*`).FindString(p.DOM))
	}
}

// TestBrowserNoLines: when no call site of an interval has a file and
// line, the page says why and what to do; a loss there reads as at a call
// site without source line. A page with lines says nothing of it.
func TestBrowserNoLines(t *testing.T) {
	rep := evilReport()
	path, _ := write(t, rep, nil)
	if p := headless.Open(t, path); strings.Contains(p.DOM, `id="no-lines-`) {
		t.Error("a page whose call sites have lines says they have none")
	}
	for i := range rep.Intervals {
		for j := range rep.Intervals[i].SRC {
			for k := range rep.Intervals[i].SRC[j].Stack {
				fr := &rep.Intervals[i].SRC[j].Stack[k]
				fr.File, fr.Line = "", 0
			}
		}
	}
	rep.Findings = report.FindingsOf(rep)
	path, _ = write(t, rep, nil)
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	for i := range rep.Intervals {
		if !strings.Contains(p.DOM, `<div class="note" id="no-lines-`+strconv.Itoa(i)+`">No call site has a source file and line`) {
			t.Errorf("interval %d: the page does not say its call sites have no lines", i)
		}
	}
	// Without a line the loss names the function it was called from.
	if li := regexp.MustCompile(`<ol class="losses" id="losses"><li .*?</li>`).FindString(p.DOM); !strings.Contains(li, " from <code>") || !strings.Contains(li, `data-caller="`) {
		t.Errorf("the biggest loss: %s", li)
	}
}
