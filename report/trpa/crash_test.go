package trpa

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/reporttest"
)

// TestCrashes: each crash is listed under "Crashes" after the run's
// warnings, its headline, then a frame per line, and the findings open
// with the first; a report without crashes has no such section.
func TestCrashes(t *testing.T) {
	r := reporttest.Full()
	addr, th := uint64(0), 0
	r.Crashes = []report.Crash{{Rank: 2, Thread: &th, Signal: "SIGSEGV (Segmentation fault)", SignalNumber: 11, Cause: "address not mapped", Address: &addr,
		Frames: []report.Frame{{Function: "kernel", File: "/src/jacobi.c", Line: 40}, {Function: "main", File: "/src/jacobi.c", Line: 90}}}}
	r.Findings = report.FindingsOf(r) // (as dtpa sets them)
	var b bytes.Buffer
	if err := Render(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "\nCrashes:\n  - rank 2 crashed: SIGSEGV (Segmentation fault), address not mapped (0x0)\n      in kernel at jacobi.c:40\n      called from main at jacobi.c:90\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "Findings:\n  Rank 2 crashed: SIGSEGV (Segmentation fault), address not mapped (0x0), in kernel at jacobi.c:40. ") {
		t.Errorf("the report lacks %q or its findings do not open with it:\n%s", want, out)
	}
	b.Reset()
	r = reporttest.Full()
	r.Findings = report.FindingsOf(r)
	if err := Render(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Crashes:") || strings.Contains(b.String(), "crashed") {
		t.Error("a report without crashes lists some")
	}
}
