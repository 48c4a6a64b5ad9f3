package trpa

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report/reporttest"
)

// An interval whose figures lack events says so before any figure, with
// the processors concerned.
func TestIncompleteInterval(t *testing.T) {
	r := reporttest.Minimal()
	iv := &r.Intervals[0]
	iv.Incomplete, iv.IncompleteReason = true, "Figures incomplete: rank(s) 1: its trace ends inside this interval (SIZE_LIMIT: tracing stopped at MaxTraceSize)."
	iv.Ranks[1].Incomplete, iv.Ranks[1].IncompleteReason = true, "its trace ends inside this interval (SIZE_LIMIT: tracing stopped at MaxTraceSize)"
	var b bytes.Buffer
	if err := Render(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i, j := strings.Index(out, "INCOMPLETE  Figures incomplete: rank(s) 1: its trace ends inside"), strings.Index(out, "--- The main characteristics ---")
	if i < 0 || j < i || !strings.Contains(out, "\n  processor 1: its trace ends inside this interval (SIZE_LIMIT") {
		t.Errorf("no incomplete note before the figures:\n%s", out)
	}
	var c bytes.Buffer
	Render(&c, reporttest.Minimal(), Options{})
	if strings.Contains(c.String(), "INCOMPLETE") {
		t.Error("a complete interval marked incomplete")
	}
}
