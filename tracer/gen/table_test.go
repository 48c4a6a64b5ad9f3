package main

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestFoldable: the queries whose runs are folded are system calls with no
// special record (a special one records requests, communicators, messages
// or intervals, which a folded record would lose), and their template folds
// (dt_rec_end_query), as that of their large-count variant does.
func TestFoldable(t *testing.T) {
	sp := special()
	for name := range foldable {
		if c := mpifunc.Classify(name); c.Class != tracepb.Function_SYSTEM || c.Nonblocking {
			t.Errorf("%s: class %v, nonblocking %v; a folded call must be a system call", name, c.Class, c.Nonblocking)
		}
		if _, ok := sp[name]; ok {
			t.Errorf("%s: has a special record, must not be folded", name)
		}
		for _, n := range []string{name, name + "_c"} {
			if got := withFold(n, tmpl{post: "CM(a0) "}).recEnd(); got != "dt_rec_end_query(T, H, dt_ok);" {
				t.Errorf("%s ends its record with %q", n, got)
			}
		}
	}
	if got := withFold("MPI_Comm_dup", tmpl{}).recEnd(); got != "dt_rec_end(T);" {
		t.Errorf("MPI_Comm_dup ends its record with %q", got)
	}
}
