// Package mpifunc classifies MPI functions by name: point-to-point,
// collective (with its shape) or system, and whether the call starts an
// operation that a wait/test completes. It is the one source of truth shared
// by the tracer's wrapper generator, the test fixture builder and the
// analyzer, so that all three split Communications (docs/characteristics.md §3.2) alike.
package mpifunc

import (
	"strings"
	"unicode/utf8"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Info is what the analyzer needs to know about an MPI function.
type Info struct {
	Class       tracepb.Function_Class
	Collective  tracepb.Function_Collective
	Nonblocking bool // starts an operation completed later, or creates a persistent request
}

// Function returns a tracepb.Function for name with the given id.
func Function(id uint32, name string) *tracepb.Function {
	in := Classify(name)
	return &tracepb.Function{Id: id, Name: name, Class: in.Class, Collective: in.Collective, Nonblocking: in.Nonblocking}
}

// Table is the function table the tracer writes, as a Definitions
// message: names[i] has id i (its wrapper's index), large-count variants
// (MPI_Send_c) classified as their base function, and the empty call
// stack, call site 0. tracer/gen encodes it when it generates the
// wrappers, so that a traced rank only copies its bytes.
func Table(names []string) *tracepb.Definitions {
	d := &tracepb.Definitions{CallSites: []*tracepb.CallSite{{Id: 0}}}
	for i, name := range names {
		f := Function(uint32(i), strings.TrimSuffix(name, "_c"))
		f.Name = name
		d.Functions = append(d.Functions, f)
	}
	return d
}

var p2p = set(
	"Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend",
	"Recv", "Irecv", "Sendrecv", "Sendrecv_replace", "Isendrecv", "Isendrecv_replace",
	"Send_init", "Bsend_init", "Ssend_init", "Rsend_init", "Recv_init",
	"Psend_init", "Precv_init", "Pready", "Pready_range", "Pready_list", "Parrived",
	"Start", "Startall",
	"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome",
	"Probe", "Iprobe", "Mprobe", "Improbe", "Mrecv", "Imrecv",
	"Request_free", "Cancel", "Request_get_status", "Test_cancelled",
)

var p2pNonblocking = set(
	"Isend", "Ibsend", "Issend", "Irsend", "Irecv", "Isendrecv", "Isendrecv_replace", "Imrecv",
	"Send_init", "Bsend_init", "Ssend_init", "Rsend_init", "Recv_init", "Psend_init", "Precv_init",
)

// Collective shapes by base name (without the I prefix or _init suffix).
var collectives = map[string]tracepb.Function_Collective{
	"Barrier":              tracepb.Function_ALL_TO_ALL,
	"Allreduce":            tracepb.Function_ALL_TO_ALL,
	"Allgather":            tracepb.Function_ALL_TO_ALL,
	"Allgatherv":           tracepb.Function_ALL_TO_ALL,
	"Alltoall":             tracepb.Function_ALL_TO_ALL,
	"Alltoallv":            tracepb.Function_ALL_TO_ALL,
	"Alltoallw":            tracepb.Function_ALL_TO_ALL,
	"Reduce_scatter":       tracepb.Function_ALL_TO_ALL,
	"Reduce_scatter_block": tracepb.Function_ALL_TO_ALL,
	"Bcast":                tracepb.Function_ONE_TO_ALL,
	"Scatter":              tracepb.Function_ONE_TO_ALL,
	"Scatterv":             tracepb.Function_ONE_TO_ALL,
	"Gather":               tracepb.Function_ALL_TO_ONE,
	"Gatherv":              tracepb.Function_ALL_TO_ONE,
	"Reduce":               tracepb.Function_ALL_TO_ONE,
	"Scan":                 tracepb.Function_PREFIX,
	"Exscan":               tracepb.Function_PREFIX,
	"Neighbor_allgather":   tracepb.Function_NEIGHBOR,
	"Neighbor_allgatherv":  tracepb.Function_NEIGHBOR,
	"Neighbor_alltoall":    tracepb.Function_NEIGHBOR,
	"Neighbor_alltoallv":   tracepb.Function_NEIGHBOR,
	"Neighbor_alltoallw":   tracepb.Function_NEIGHBOR,
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Classify returns the class of an MPI function given its C name
// ("MPI_Isend"; "PMPI_" and Fortran spellings such as "mpi_isend_" are
// accepted too). Unknown names are SYSTEM: docs/characteristics.md §3.2 puts every call that is
// neither point-to-point nor collective into System Time.
func Classify(name string) Info {
	base := canonical(name)
	if p2p[base] {
		return Info{Class: tracepb.Function_POINT_TO_POINT, Nonblocking: p2pNonblocking[base]}
	}
	if shape, ok := collectives[base]; ok {
		return Info{Class: tracepb.Function_COLLECTIVE, Collective: shape}
	}
	// Nonblocking (MPI_Ibarrier) and persistent (MPI_Barrier_init)
	// collectives: the shape of the blocking one, completed by a wait/test.
	if strings.HasSuffix(base, "_init") {
		if shape, ok := collectives[strings.TrimSuffix(base, "_init")]; ok {
			return Info{Class: tracepb.Function_COLLECTIVE, Collective: shape, Nonblocking: true}
		}
	}
	if len(base) > 1 && base[0] == 'I' {
		rest := strings.ToUpper(base[1:2]) + base[2:]
		if shape, ok := collectives[rest]; ok {
			return Info{Class: tracepb.Function_COLLECTIVE, Collective: shape, Nonblocking: true}
		}
		if strings.HasPrefix(base, "Ineighbor_") {
			if shape, ok := collectives["N"+strings.TrimPrefix(base, "In")]; ok {
				return Info{Class: tracepb.Function_COLLECTIVE, Collective: shape, Nonblocking: true}
			}
		}
	}
	return Info{Class: tracepb.Function_SYSTEM}
}

// Base is the name Classify goes by: "Isend" for "MPI_Isend", "PMPI_Isend",
// "mpi_isend_" or "MPI_Isend_c". The analyzer tells the calls of a class
// apart by it, so that it names them as Classify does.
func Base(name string) string { return canonical(name) }

// canonical turns "MPI_Isend", "PMPI_Isend", "mpi_isend_", "MPI_ISEND" or
// "mpi_isend_f08" into "Isend".
func canonical(name string) string {
	n := name
	for _, p := range []string{"PMPI_", "MPI_", "pmpi_", "mpi_"} {
		if len(n) > len(p) && strings.EqualFold(n[:len(p)], p) {
			n = n[len(p):]
			break
		}
	}
	for _, s := range []string{"_f08ts", "_f08", "__", "_"} {
		if strings.HasSuffix(n, s) && len(n) > len(s) {
			n = strings.TrimSuffix(n, s)
			break
		}
	}
	if n != "" && oneCase(n) {
		// Fortran spellings lose case: restore the C spelling "Xxx_yyy".
		n = strings.ToUpper(n[:1]) + strings.ToLower(n[1:])
	}
	// MPI 4 large-count variants (MPI_Send_c, MPI_Allreduce_init_c …)
	// behave as the functions they extend.
	if strings.HasSuffix(n, "_c") && len(n) > 2 {
		n = strings.TrimSuffix(n, "_c")
	}
	return n
}

// oneCase tells whether s is strings.ToLower(s) or strings.ToUpper(s),
// without building either when s is ASCII: an ASCII string is its lower
// case when it has no upper-case letter and its upper case when it has no
// lower-case one. The findings classify a call site's function at every
// site whose time would be the largest so far, and the two strings cost
// most of that.
func oneCase(s string) bool {
	var upper, lower bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return s == strings.ToLower(s) || s == strings.ToUpper(s)
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		}
	}
	return !upper || !lower
}
