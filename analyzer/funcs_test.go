package analyzer

import (
	"strings"
	"testing"
	"unique"
	"unsafe"

	"github.com/dtpa/dtpa/traceformat/mpifunc"
)

// The replay treats a call alike whatever its spelling (PMPI_, Fortran,
// large-count), as mpifunc classifies it.
func TestClassifySpellings(t *testing.T) {
	for _, n := range []string{"Send", "Bsend", "Irecv", "Issend", "Waitall", "Testany", "Ssend_init", "Start",
		"Improbe", "Mrecv", "Request_free", "Barrier", "Ibcast", "Init_thread", "Finalize", "Pcontrol", "Comm_rank"} {
		want := classify(mpifunc.Function(1, "MPI_"+n))
		want.name, want.nameH = "", unique.Handle[string]{}
		for _, s := range []string{"PMPI_" + n, "mpi_" + strings.ToLower(n) + "_", "MPI_" + n + "_c"} {
			got := classify(mpifunc.Function(1, s))
			got.name, got.nameH = "", unique.Handle[string]{}
			if got != want {
				t.Errorf("%s: %+v, MPI_%s: %+v", s, got, n, want)
			}
		}
	}
}

// Every definition of a function shares its name's bytes (fnInfo.nameH),
// whichever trace it was read from: sameFn compares them by pointer.
func TestClassifyNameShared(t *testing.T) {
	a := classify(mpifunc.Function(1, "MPI_"+strings.ToUpper("a")+"lltoall"))
	b := classify(mpifunc.Function(7, "MPI_Alltoall"))
	if a.name != "MPI_Alltoall" || unsafe.StringData(a.name) != unsafe.StringData(b.name) {
		t.Errorf("names %q at %p and %q at %p: want one copy", a.name, unsafe.StringData(a.name), b.name, unsafe.StringData(b.name))
	}
	if !sameFn(a.name, b.name) || sameFn(a.name, "MPI_Alltoallv") || !sameFn("MPI_Bcast", strings.Clone("MPI_Bcast")) {
		t.Error("sameFn disagrees with ==")
	}
}
