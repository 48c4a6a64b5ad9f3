// Fortran wrappers (tracer/gen/fortran.go writes zz_*_fort_gen.c): helpers
// that give the record code of the C wrappers (dt_wrap.h, gen/table.go) the
// C form of Fortran arguments, and the hand-written wrappers' macros.
#ifndef DT_FORTRAN_H
#define DT_FORTRAN_H

#include "dt_wrap.h"

// Fortran statuses are read as C statuses: both implementations lay out the
// Fortran status (MPI_STATUS_SIZE integers, or mpi_f08's TYPE(MPI_Status))
// exactly as the C struct, which is what their MPI_Status_f2c copies.
_Static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0, "Fortran status layout");
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is int");

extern void *dt_fnext[]; // the real Fortran functions, by wrapper index
extern __thread int dt_fnest __attribute__((tls_model("initial-exec"))) DT_HIDDEN;

void *dt_fbuf(void *f, int kind);
MPI_Fint *dt_fstatus(void *f, MPI_Status *own);
MPI_Fint *dt_fstatuses(dt_thr *T, int n, void *f);
MPI_Status *dt_fstatuses_c(MPI_Fint *f);
MPI_Request *dt_freqs(dt_thr *T, int n, const MPI_Fint *f);
const int *dt_fidx(dt_thr *T, int n, const int *idx);
int64_t dt_fsumw(dt_thr *T, dt_comm *C, const int *counts, void *ftypes);

void dt_finit_call(int j, int thread, MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr, void *fp);
void dt_ffinalize(int j, MPI_Fint *ierr, void *fp);
void dt_fabort(int j, MPI_Fint *comm, MPI_Fint *code, MPI_Fint *ierr, void *fp);
void dt_fpcontrol(int j, int fid, MPI_Fint *level, uintptr_t x0, uintptr_t x1, void *fp);

// The hand-written wrappers pass their own frame, whose return address is
// the program's call site; the empty asm after the call keeps the compiler
// from turning it into a tail call, which would pop that frame first.
#define DT_FW_KEEP __asm__ volatile("" ::: "memory")
#define DT_FW_INIT(sym, j, fid) \
	void sym(MPI_Fint *ierr) { dt_finit_call(j, 0, NULL, NULL, ierr, __builtin_frame_address(0)); DT_FW_KEEP; }
#define DT_FW_INIT_THREAD(sym, j, fid) \
	void sym(MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr) { \
		dt_finit_call(j, 1, req, prov, ierr, __builtin_frame_address(0)); DT_FW_KEEP; }
#define DT_FW_FINALIZE(sym, j, fid) \
	void sym(MPI_Fint *ierr) { dt_ffinalize(j, ierr, __builtin_frame_address(0)); DT_FW_KEEP; }
#define DT_FW_ABORT(sym, j, fid) \
	void sym(MPI_Fint *comm, MPI_Fint *code, MPI_Fint *ierr) { \
		dt_fabort(j, comm, code, ierr, __builtin_frame_address(0)); DT_FW_KEEP; }
// MPI_PCONTROL(LEVEL) has no second argument in Fortran, and no ierror in
// the standard; MPICH's mpi_f08 one takes an optional ierror all the same:
// the next two argument registers are passed on untouched.
#define DT_FW_PCONTROL(sym, j, fid) \
	void sym(MPI_Fint *level, uintptr_t x0, uintptr_t x1) { \
		dt_fpcontrol(j, fid, level, x0, x1, __builtin_frame_address(0)); DT_FW_KEEP; }

#endif
