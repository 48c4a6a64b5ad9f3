package analyzer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// A call site's figures in an interval carry its function from the
// site's first call in that interval (charge marks the site used with its
// function there, and not at its later calls): rank 0 calls MPI_Send at
// site s before interval 1, twice in it and once after, and MPI_Barrier
// then MPI_Send at site fp (one site, two functions) in interval 1 only.
func TestSiteFirstCallPerInterval(t *testing.T) {
	run := tracetest.NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	s, fp := tracetest.Site("s", 0x401000), tracetest.Site("fp", 0x401234)
	r0.Init(1*us).Send(1, 5, 8, 10*us, s)
	r0.Pcontrol(100, 1)
	r0.Send(1, 5, 8, 10*us, s).Send(1, 5, 8, 10*us, s)
	r0.Barrier(20*us, fp).Send(1, 6, 8, 10*us, fp)
	r0.Pcontrol(101, 1)
	r0.Send(1, 5, 8, 10*us, s).Finalize(1 * us)
	r1.Init(1*us).Recv(0, 5, 8, 10*us)
	r1.Pcontrol(100, 1)
	r1.Recv(0, 5, 8, 10*us).Recv(0, 5, 8, 10*us)
	r1.Barrier(20*us).Recv(0, 6, 8, 10*us)
	r1.Pcontrol(101, 1)
	r1.Recv(0, 5, 8, 10*us).Finalize(1 * us)
	rep := analyzeRun(t, run)

	// Rank 0's calls by point, as "function:calls", sorted.
	calls := func(path ...int) string {
		var got []string
		for _, p := range find(t, rep, path...).SRC {
			for _, r := range p.Ranks {
				if r.Rank == 0 {
					got = append(got, fmt.Sprintf("%s:%d", p.Function, r.ExeCount))
				}
			}
		}
		slices.Sort(got)
		return strings.Join(got, " ")
	}
	if got, want := calls(1), "MPI_Barrier:1 MPI_Send:1 MPI_Send:2"; got != want {
		t.Errorf("interval 1, rank 0's calls by point: %s, want %s", got, want)
	}
	if got, want := calls(), "MPI_Barrier:1 MPI_Send:1 MPI_Send:4"; got != want {
		t.Errorf("the program, rank 0's calls by point: %s, want %s", got, want)
	}
}
