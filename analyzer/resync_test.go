package analyzer

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// lostCollective: 4 ranks make 1000 collective calls on MPI_COMM_WORLD,
// cycling through MPI_Barrier, MPI_Allreduce and MPI_Bcast, every call
// entered 1 ms after the previous one's exit; rank 1's trace lacks call
// number lost (as when the tracer dropped it).
func lostCollective(lost int) *tracetest.Run {
	run, ranks := start(4)
	for i := 0; i < 1000; i++ {
		for r, k := range ranks {
			k.Compute(ms)
			if r == 1 && i == lost {
				k.Compute(10 * us)
				continue
			}
			switch i % 3 {
			case 0:
				k.Barrier(10 * us)
			case 1:
				k.Allreduce(8, 10*us)
			default:
				k.Bcast(0, 8, 10*us)
			}
		}
	}
	finish(run)
	return run
}

// One call lost in the middle of 1000 costs the instance it belonged to,
// nothing else: one warning naming rank 1, no stall, and the other 999
// instances matched in the right places (every rank enters each at the
// same time, so a call matched one instance off would show 1 ms of
// Potential Sync). The instance lacking rank 1 counts its members' calls
// unmatched when they waited for rank 1 (MPI_Barrier, MPI_Allreduce: 3);
// a broadcast's members wait for the root only (0).
func TestLostCollectiveResync(t *testing.T) {
	for _, c := range []struct {
		lost    int
		fn      string
		unmatch int64
	}{{498, "MPI_Barrier", 3}, {499, "MPI_Allreduce", 3}, {500, "MPI_Bcast", 0}} {
		t.Run(c.fn, func(t *testing.T) {
			rep := analyzeRun(t, lostCollective(c.lost))
			want := 1
			if c.unmatch > 0 {
				want++ // "3 collective call(s) could not be matched …"
			}
			if len(rep.Warnings) != want || !hasWarning(rep, "Collective "+c.fn+" (call "+itoa(c.lost+1)+" on MPI_COMM_WORLD) lacks rank(s) 1 ") {
				t.Errorf("warnings %q", rep.Warnings)
			}
			var un, stalls int64
			if u := rep.Unmatched; u != nil {
				un, stalls = u.Collectives, u.Stalls
			}
			if un != c.unmatch || stalls != 0 {
				t.Errorf("unmatched collectives %d, stalls %d; want %d, 0", un, stalls, c.unmatch)
			}
			iv := find(t, rep)
			expect(t, "Potential Sync", iv.Main.PotentialSync, 0)
			if iv.Main.CollectiveNumber != 1000 {
				t.Errorf("collective number %d", iv.Main.CollectiveNumber)
			}
		})
	}
}
