package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/report"
)

// TestHTMLSolver traces the demo program under Open MPI, writes its HTML
// page with dtpa --html and opens it in headless chromium, as a person
// would open it: the scripts run without error and request nothing, the
// timeline draws the 4 ranks and counts the run's 1200 messages (200 steps,
// 6 halo messages each: the edge ranks' other neighbour is MPI_PROC_NULL),
// the summary's first line is the biggest loss of the JSON report of the
// same traces (its characteristic, rank, function and source line), and
// the screenshot is not blank.
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
	li := regexp.MustCompile(`<ol class="losses" id="losses"><li [^>]*>`).FindString(p.DOM)
	want := biggestLoss(r)
	if want == nil {
		t.Fatal("the report has no loss")
	}
	attrs := []string{fmt.Sprintf(`data-characteristic="%s"`, want.label), fmt.Sprintf(`data-rank="%d"`, want.rank)}
	if want.src != nil {
		attrs = append(attrs, fmt.Sprintf(`data-function="%s"`, want.src.Function))
		if len(want.src.Stack) > 0 {
			attrs = append(attrs, fmt.Sprintf(`data-line="%d"`, want.src.Stack[0].Line))
		}
	}
	for _, a := range attrs {
		if !strings.Contains(li, a) {
			t.Errorf("the summary's first loss %s lacks %s", li, a)
		}
	}
	if n := headless.Colours(headless.Screenshot(t, page, 1280, 1000)); n < 16 {
		t.Errorf("the screenshot has %d colours: blank?", n)
	}
	if st, err := os.Stat(page); err == nil {
		t.Logf("page %d bytes", st.Size())
	}
}

type loss struct {
	v     float64
	level int
	label string
	rank  int
	src   *report.SRC
}

// biggestLoss is the largest per-processor loss of the report: Real Sync,
// Potential Sync or Time Variation of a call site, or Load Imbalance, Idle
// Time or Insufficient Parallelism of an interval; of equal figures, the
// one of the deepest interval.
func biggestLoss(r *report.Report) *loss {
	var best *loss
	consider := func(l loss) {
		if l.v > 0 && (best == nil || l.v > best.v || (l.v == best.v && l.level > best.level)) {
			best = &l
		}
	}
	for _, iv := range r.Intervals {
		for j := range iv.SRC {
			p := &iv.SRC[j]
			for _, rk := range p.Ranks {
				consider(loss{rk.RealSync, iv.Level, "Real sync", rk.Rank, p})
				consider(loss{rk.PotentialSync, iv.Level, "Potential sync", rk.Rank, p})
				consider(loss{rk.TimeVariation, iv.Level, "Time variation", rk.Rank, p})
			}
		}
		for _, rk := range iv.Ranks {
			consider(loss{rk.LoadImbalance, iv.Level, "Load imbalance", rk.Rank, nil})
			consider(loss{rk.IdleTime, iv.Level, "Idle time", rk.Rank, nil})
			consider(loss{rk.InsufficientParallelism, iv.Level, "Insufficient parallelism", rk.Rank, nil})
		}
	}
	return best
}
