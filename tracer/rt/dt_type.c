// Datatypes: the size of a datatype, cached per thread (dt_tsize in
// dt_wrap.h) until a datatype is freed (dt_type_gen, bumped by the
// MPI_Type_free wrapper: a handle may be reused for another type).
#include "dt_wrap.h"

volatile uint64_t dt_type_gen = 1;

int dt_tsize_slow(dt_thr *T, MPI_Datatype t) {
	int sz = 0;
	if (t != MPI_DATATYPE_NULL) PMPI_Type_size(t, &sz);
	T->tc_type = t;
	T->tc_size = sz;
	T->tc_gen = dt_type_gen;
	return sz;
}
