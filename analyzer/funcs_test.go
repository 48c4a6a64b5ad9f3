package analyzer

import (
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/mpifunc"
)

// The replay treats a call alike whatever its spelling (PMPI_, Fortran,
// large-count), as mpifunc classifies it.
func TestClassifySpellings(t *testing.T) {
	for _, n := range []string{"Send", "Bsend", "Irecv", "Issend", "Waitall", "Testany", "Ssend_init", "Start",
		"Improbe", "Mrecv", "Request_free", "Barrier", "Ibcast", "Init_thread", "Finalize", "Pcontrol", "Comm_rank"} {
		want := classify(mpifunc.Function(1, "MPI_"+n))
		want.name = ""
		for _, s := range []string{"PMPI_" + n, "mpi_" + strings.ToLower(n) + "_", "MPI_" + n + "_c"} {
			got := classify(mpifunc.Function(1, s))
			got.name = ""
			if got != want {
				t.Errorf("%s: %+v, MPI_%s: %+v", s, got, n, want)
			}
		}
	}
}
