package e2e

import (
	"strconv"
	"testing"
)

// TestMPI4PyObjectCollectives traces testdata/apps/objcoll.py (mpi4py's
// collectives of Python objects on intra- and intercommunicators, Debian's
// python3-mpi4py, which links Open MPI) at 2 and 4 ranks: nothing may be
// unmatched and nothing stall. mpi4py runs object reductions as
// point-to-point exchanges on a duplicate of the communicator; the
// duplicate of an intercommunicator once got a different id on each side,
// so that none of its messages matched. No clock-condition violation
// either: intercommunicator collectives once waited for their own group's
// entries too, which an MPI_Alltoall returning early contradicted.
func TestMPI4PyObjectCollectives(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needMPI4Py(t)
	for _, np := range []int{2, 4} {
		t.Run(strconv.Itoa(np), func(t *testing.T) {
			dir := t.TempDir()
			tracePython(t, m, dir, nil, np, "objcoll.py")
			r, stderr := analyse(t, dir, "python3")
			if len(r.Warnings) != 0 || stderr != "" {
				t.Errorf("warnings %q, stderr %q", r.Warnings, stderr)
			}
			if r.Unmatched != nil {
				t.Errorf("unmatched %+v", *r.Unmatched)
			}
			checkInvariants(t, r, np)
		})
	}
}
