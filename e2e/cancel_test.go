package e2e

import (
	"strings"
	"testing"
)

// TestCancelIsendrecv traces testdata/apps/cancel_isendrecv.c at 4 ranks
// under Open MPI and MPICH: a send cancelled before anybody receives it
// (neither installed MPI cancels it: the program then receives it, and the
// analyzer's tests cover a cancellation that succeeds), and MPI_Isendrecv
// where the MPI has it (MPI 4: MPICH). Nothing may be unmatched; with
// MPI_Isendrecv, ranks 2 and 3 each send and receive one message through it.
func TestCancelIsendrecv(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "cancel_isendrecv")
			out := trace(t, m, dir, nil, 4, exe)
			t.Logf("%s", strings.TrimSpace(out))
			r, stderr := analyse(t, dir, "cancel_isendrecv")
			if len(r.Warnings) != 0 || stderr != "" {
				t.Errorf("warnings %q, stderr %q", r.Warnings, stderr)
			}
			if r.Unmatched != nil {
				t.Errorf("unmatched %+v", *r.Unmatched)
			}
			checkInvariants(t, r, 4)
			if strings.Contains(out, "cancel_isendrecv: isendrecv") {
				for _, rk := range []int{2, 3} {
					k := rankOf(t, &r.Intervals[0], rk)
					if k.SendNumber != 1 || k.ReceiveNumber != 1 {
						t.Errorf("rank %d: sends %d, receives %d; want 1, 1 (MPI_Isendrecv)", rk, k.SendNumber, k.ReceiveNumber)
					}
				}
			}
		})
	}
}
