package html_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/reporttest"
)

// checkProfile checks the profile views of interval 1/2 of evilReport
// (the page's third interval, index 2) against reporttest.Full's figures:
// 50 messages of 8192 bytes (409600 bytes), 30 of them to or from rank 3
// over world and 20 between ranks 0 and 1 over a duplicate of world,
// four functions, one size class, 20 messages inside node1 and 30
// between the nodes, and the grain of each processor.
func checkProfile(t *testing.T, dom string) {
	t.Helper()
	m := regexp.MustCompile(`<canvas id="matrix-2"[^>]*>`).FindString(dom)
	for _, want := range []string{`data-comm="all communicators"`, `data-ranks="4"`, `data-block="1"`, `data-cells="4"`,
		`data-messages="50"`, `data-bytes="409600"`, `data-measure="messages"`} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix element %s lacks %s", m, want)
		}
	}
	// Communicator "dup of world" is named like markup in evilReport.
	for _, want := range []string{`<option value="1">world: 30 messages</option>`,
		`<option value="2">&lt;img src=x onerror=alert(1)&gt;.c: 20 messages</option>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the communicator choice lacks %s", want)
		}
	}
	fns := regexp.MustCompile(`<tr class="fnrow" data-function="([^"]*)"><td class="l">[^<]*</td><td data-v="(\d+)">`).FindAllStringSubmatch(dom, -1)
	// Only interval 1/2 has functions in the fixture.
	want := [][2]string{{"MPI_Waitall", "50"}, {"MPI_Allreduce", "30"}, {"MPI_Irecv", "50"}, {"&lt;b&gt;MPI_Evil&lt;/b&gt;", "50"}}
	if len(fns) != len(want) {
		t.Fatalf("%d function rows, want %d: %q", len(fns), len(want), fns)
	}
	for k, w := range want {
		if fns[k][1] != w[0] || fns[k][2] != w[1] {
			t.Errorf("function row %d: %s with %s calls, want %s with %s", k, fns[k][1], fns[k][2], w[0], w[1])
		}
	}
	// Per processor: rank 1's 20 Waitall calls, 0.5 s.
	if !strings.Contains(dom, `<tr><td>1</td><td>20</td><td>500.000 ms</td><td>0 B</td></tr>`) {
		t.Error("no per-processor row of MPI_Waitall on rank 1")
	}
	if !regexp.MustCompile(`<canvas [^>]*id="sizes-chart-2" data-chart="sizes" data-bars="1" data-messages="50"[^>]*data-drawn="1"`).MatchString(dom) {
		t.Errorf("no message-size chart of one class and 50 messages: %s", regexp.MustCompile(`<canvas [^>]*id="sizes-chart-2"[^>]*>`).FindString(dom))
	}
	if !strings.Contains(dom, `<td class="l">8 KiB to 16 KiB (excl.)</td><td>50</td><td>400 KiB</td><td>400.000 µs</td><td>20.5 MB/s</td>`) {
		t.Errorf("no size-class row with latency and throughput:\n%s", regexp.MustCompile(`(?s)<table class="sizes">.*?</table>`).FindString(dom))
	}
	if !strings.Contains(dom, `data-intra-messages="20" data-inter-messages="30"`) {
		t.Error("no node traffic of 20 messages inside and 30 between nodes")
	}
	if !regexp.MustCompile(`<canvas [^>]*id="mix-chart-2" data-chart="callmix" data-bars="3" data-datasets="4"[^>]*data-drawn="1"`).MatchString(dom) {
		t.Errorf("no call-mix chart of 3 ranks and 4 functions: %s", regexp.MustCompile(`<canvas [^>]*id="mix-chart-2"[^>]*>`).FindString(dom))
	}
	// reporttest.Full: the i-th processor's gap mean 0.03·(i+1) s,
	// median 0.025·(i+1) s; rank 3 is the third processor of 1/2.
	if !strings.Contains(dom, `<tr class="mixrow" data-rank="3" data-gap-mean="0.09" data-gap-median="0.075`) {
		t.Errorf("no grain row of rank 3:\n%s", regexp.MustCompile(`<tr class="mixrow"[^>]*>`).FindAllString(dom, -1))
	}
}

// TestMatrixAggregated: the matrix of a 1000-rank run is drawn in blocks of
// 16 ranks (63 cells per side), keeps its totals, says so, and the page
// stays small (the 1000×1000 matrices alone would be megabytes).
func TestMatrixAggregated(t *testing.T) {
	const n = 1000
	r := reporttest.Minimal()
	msgs, bytes := make([][]int64, n), make([][]int64, n)
	var total int64
	for s := range n {
		msgs[s], bytes[s] = make([]int64, n), make([]int64, n)
		// A ring: s sends s+1 messages of 8 bytes to s+1.
		msgs[s][(s+1)%n] = int64(s + 1)
		bytes[s][(s+1)%n] = 8 * int64(s+1)
		total += int64(s + 1)
	}
	iv := &r.Intervals[0]
	iv.CommMatrix = &report.CommMatrix{Messages: msgs, Bytes: bytes}
	path, page := write(t, r, nil)
	if len(page) > 1<<20 {
		t.Errorf("page of %d bytes", len(page))
	}
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	m := regexp.MustCompile(`<canvas id="matrix-0"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="1000"`, `data-block="16"`, `data-cells="63"`,
		fmt.Sprintf(`data-messages="%d"`, total), fmt.Sprintf(`data-bytes="%d"`, 8*total)} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix element %s lacks %s", m, want)
		}
	}
	if !strings.Contains(p.DOM, "1000 processors are too many to draw one by one: each cell sums a block of 16 consecutive processors.") {
		t.Error("the page does not say the matrix is aggregated")
	}
}

// TestMatrixFromPairs: a run past the dense matrix (2000 ranks, the ring
// of TestMatrixAggregated as comm_pairs) gets its matrix drawn from the
// pairs, in blocks of 32 ranks (63 cells per side), with its totals.
func TestMatrixFromPairs(t *testing.T) {
	const n = 2000
	r := reporttest.Minimal()
	r.Processors = n
	iv := &r.Intervals[0]
	var total int64
	for s := range n {
		iv.CommPairs = append(iv.CommPairs, report.CommPair{Sender: s, Receiver: (s + 1) % n, Messages: int64(s + 1), Bytes: 8 * int64(s+1)})
		total += int64(s + 1)
	}
	path, page := write(t, r, nil)
	if strings.Contains(string(page), `"comm_pairs"`) {
		t.Error("the page embeds the pairs")
	}
	p := headless.Open(t, path)
	headless.CheckReport(t, p)
	m := regexp.MustCompile(`<canvas id="matrix-0"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="2000"`, `data-block="32"`, `data-cells="63"`,
		fmt.Sprintf(`data-messages="%d"`, total), fmt.Sprintf(`data-bytes="%d"`, 8*total)} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix element %s lacks %s", m, want)
		}
	}
}
