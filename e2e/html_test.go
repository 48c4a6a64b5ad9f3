package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/headless"
)

// TestHTMLSolver traces the demo program under Open MPI, writes its HTML
// page with dtpa --html and opens it in headless chromium, as a person
// would open it: the scripts run without error and request nothing, the
// timeline draws the 4 ranks and counts the run's 1200 messages (200 steps,
// 6 halo messages each: the edge ranks' other neighbour is MPI_PROC_NULL),
// the page opens with the findings of the JSON report of the same traces
// (the verdict naming MPI_Waitall at its line of solver.c and rank 3, the
// largest loss with its kind, rank, function and line), the whole
// program's communication matrix holds the 1200 messages and the JSON's
// bytes, and the screenshot is not blank.
func TestHTMLSolver(t *testing.T) {
	_, r, page := exportSolver(t, "solver.html", "--html")
	p := headless.Open(t, page)
	headless.CheckReport(t, p)
	tl := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="4"`, `data-messages="1200"`, `data-arrows="1200"`} {
		if !strings.Contains(tl, want) {
			t.Errorf("timeline element %s lacks %s", tl, want)
		}
	}
	fd := r.Findings
	if fd == nil || len(fd.Losses) == 0 {
		t.Fatal("the report has no findings")
	}
	waitallLine := sourceLine(t, filepath.Join(root, "testdata", "apps", "solver.c"), "MPI_Waitall(")
	verdict := regexp.MustCompile(`<p id="verdict"[^>]*>([^<]*)</p>`).FindStringSubmatch(p.DOM)
	if verdict == nil || verdict[1] != fd.Verdict {
		t.Errorf("the page's verdict %q, want the report's %q", verdict, fd.Verdict)
	}
	for _, s := range []string{fmt.Sprintf(" in MPI_Waitall at solver.c:%d", waitallLine), "rank 3 has the most productive work"} {
		if !strings.Contains(fd.Verdict, s) {
			t.Errorf("the verdict %q does not say %q", fd.Verdict, s)
		}
	}
	li := regexp.MustCompile(`<ol class="losses" id="losses"><li [^>]*>`).FindString(p.DOM)
	l := fd.Losses[0]
	attrs := []string{fmt.Sprintf(`data-kind="%s"`, l.Kind), fmt.Sprintf(`data-rank="%d"`, l.Rank)}
	if l.Function != "" {
		attrs = append(attrs, fmt.Sprintf(`data-function="%s"`, l.Function), fmt.Sprintf(`data-line="%d"`, l.Line))
	}
	for _, a := range attrs {
		if !strings.Contains(li, a) {
			t.Errorf("the first loss %s lacks %s", li, a)
		}
	}
	var msgs, bytes int64
	for _, row := range r.Intervals[0].CommMatrix.Messages {
		for _, x := range row {
			msgs += x
		}
	}
	for _, row := range r.Intervals[0].CommMatrix.Bytes {
		for _, x := range row {
			bytes += x
		}
	}
	m := regexp.MustCompile(`<canvas id="matrix-0"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="4"`, `data-messages="1200"`, fmt.Sprintf(`data-messages="%d"`, msgs), fmt.Sprintf(`data-bytes="%d"`, bytes)} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix element %s lacks %s", m, want)
		}
	}
	if n := headless.Colours(headless.Screenshot(t, page, 1280, 1000)); n < 16 {
		t.Errorf("the screenshot has %d colours: blank?", n)
	}
	if st, err := os.Stat(page); err == nil {
		t.Logf("page %d bytes", st.Size())
	}
}
