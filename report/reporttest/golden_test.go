package reporttest

import (
	"strings"
	"testing"
)

// TestDiff: a changed line shows as - golden / + got with its context, far
// away lines are elided.
func TestDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\n5\n6\n7\nEIGHT\n9\n10\n"
	got := Diff(a, b)
	want := "@@ line 5\n  5\n  6\n  7\n- 8\n+ EIGHT\n  9\n  10\n  \n"
	if got != want {
		t.Errorf("Diff =\n%s\nwant\n%s", got, want)
	}
	if d := Diff("x\n", "x\n"); strings.ContainsAny(d, "+-") {
		t.Errorf("equal inputs: %q", d)
	}
}
