package e2e

import (
	"testing"
)

// TestMPIAPI traces testdata/apps/mpiapi.c (one MPI API family per
// interval: nonblocking file I/O, a generalized request, MPI_Comm_idup,
// MPI_Ibarrier, MPI_Mprobe with MPI_ANY_SOURCE, persistent point-to-point
// and (MPI 4, MPICH only: Open MPI 4.1 has them as MPIX_ extensions, not
// traced) persistent collectives, a neighbourhood allgather, RMA fences and
// request-based RMA, an intercommunicator, a cancelled receive) under both
// MPIs: every operation must be matched, with no stall and no warning.
func TestMPIAPI(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "mpiapi")
			trace(t, m, dir, []string{"TMPDIR=" + dir}, 4, exe)
			r, stderr := analyse(t, dir, "mpiapi")
			if r.Unmatched != nil {
				t.Errorf("unmatched operations: %+v", *r.Unmatched)
			}
			checkWarnings(t, r, stderr, false)
			checkInvariants(t, r, 4)
			// One interval per family.
			if n := len(r.Intervals); n < 12 {
				t.Errorf("%d intervals, want the whole program and 11 families", n)
			}
		})
	}
}
