package mpifunc

import (
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

func TestClassify(t *testing.T) {
	const (
		P = tracepb.Function_POINT_TO_POINT
		C = tracepb.Function_COLLECTIVE
		S = tracepb.Function_SYSTEM
	)
	for _, c := range []struct {
		name  string
		class tracepb.Function_Class
		shape tracepb.Function_Collective
		nb    bool
	}{
		{"MPI_Send", P, 0, false},
		{"MPI_Isend", P, 0, true},
		{"PMPI_Irecv", P, 0, true},
		{"mpi_irecv_", P, 0, true},
		{"MPI_IRECV", P, 0, true},
		{"mpi_waitall_f08", P, 0, false},
		{"MPI_Recv_init", P, 0, true},
		{"MPI_Sendrecv_replace", P, 0, false},
		{"MPI_Barrier", C, tracepb.Function_ALL_TO_ALL, false},
		{"MPI_Ibarrier", C, tracepb.Function_ALL_TO_ALL, true},
		{"MPI_Iallreduce", C, tracepb.Function_ALL_TO_ALL, true},
		{"MPI_Bcast", C, tracepb.Function_ONE_TO_ALL, false},
		{"MPI_Reduce", C, tracepb.Function_ALL_TO_ONE, false},
		{"MPI_Exscan", C, tracepb.Function_PREFIX, false},
		{"MPI_Bcast_init", C, tracepb.Function_ONE_TO_ALL, true},
		{"MPI_Neighbor_alltoall", C, tracepb.Function_NEIGHBOR, false},
		{"MPI_Ineighbor_alltoall", C, tracepb.Function_NEIGHBOR, true},
		{"mpi_reduce_scatter_block_", C, tracepb.Function_ALL_TO_ALL, false},
		{"MPI_Comm_split", S, 0, false},
		{"MPI_Init", S, 0, false},
		{"MPI_Pcontrol", S, 0, false},
		{"MPI_Reduce_local", S, 0, false},
		{"MPI_Info_create", S, 0, false},
		{"MPI_Send_c", P, 0, false},
		{"MPI_Isend_c", P, 0, true},
		{"MPI_Allreduce_c", C, tracepb.Function_ALL_TO_ALL, false},
		{"MPI_Bcast_init_c", C, tracepb.Function_ONE_TO_ALL, true},
		{"mpi_send_c_", P, 0, false},
		{"MPI_Type_size_c", S, 0, false},
		// Names a damaged or hostile definition may give (FuzzUnfinished
		// found that "" crashed Base).
		{"", S, 0, false},
		{"MPI_", S, 0, false},
		{"_", S, 0, false},
	} {
		Base(c.name)
		got := Classify(c.name)
		if got.Class != c.class || got.Collective != c.shape || got.Nonblocking != c.nb {
			t.Errorf("Classify(%q) = %+v, want class %v shape %v nonblocking %v", c.name, got, c.class, c.shape, c.nb)
		}
	}
}

// TestOneCase compares oneCase with the strings it stands for.
func TestOneCase(t *testing.T) {
	for _, s := range []string{"", "_", "isend", "ISEND", "Isend", "I", "i", "waitall_f08", "WAITALL_F08", "Waitall_F08",
		"x1_", "É", "é", "ÉA", "éa", "Éa", "Straße", "STRASSE", "ǅ", "\xff", "a\xff", "A\xff", "aA\xff"} {
		if got, want := oneCase(s), s == strings.ToLower(s) || s == strings.ToUpper(s); got != want {
			t.Errorf("oneCase(%q) = %v, want %v", s, got, want)
		}
	}
	for c := range 256 {
		for _, s := range []string{string(rune(c)), "a" + string(byte(c)), "A" + string(byte(c))} {
			if got, want := oneCase(s), s == strings.ToLower(s) || s == strings.ToUpper(s); got != want {
				t.Errorf("oneCase(%q) = %v, want %v", s, got, want)
			}
		}
	}
}
