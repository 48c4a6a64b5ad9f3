// Runtime of the Fortran wrappers (see dt_fortran.h and tracer/gen/fortran.go):
// the sentinels of the Fortran bindings, conversions of Fortran arguments,
// and MPI_Init, MPI_Init_thread, MPI_Finalize, MPI_Abort and MPI_Pcontrol
// from Fortran.
#define _GNU_SOURCE
#include "dt_fortran.h"
#include "dt_rt.h"
#include "dt_initmark.h"
#include "dt_stamp.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

// dt_fnest is set while a Fortran wrapper runs the real MPI_Init,
// MPI_Finalize or MPI_Abort of the binding: MPICH's call the C functions,
// whose wrappers (dt_init.c) must then leave everything to the Fortran one.
__thread int dt_fnest __attribute__((tls_model("initial-exec")));

extern const char *const dt_ffnames[];
extern void *const dt_ffwraps[];
extern const int dt_nffuncs;
extern const int DT_FID_Init, DT_FID_Init_thread, DT_FID_Finalize;

void dt_start(uint64_t t0, uint64_t t1, int fid, int level, void *fp);
int dt_finalize(int (*fin)(void *), void *arg, void *fp);
void dt_abort_record(MPI_Comm comm, void *fp);

static int cmpname(const void *key, const void *elem) { return strcmp(key, *(const char *const *)elem); }

// dt_fwrapper returns this library's wrapper of a Fortran symbol, for the
// preload stub's table, and keeps the definition it forwards to, which
// next_of (the stub's) finds; none when MPI does not define the name.
void *dt_fwrapper(const char *name, void *(*next_of)(const char *)) {
	if (dt_nffuncs == 0) return NULL;
	const char *const *p = bsearch(name, dt_ffnames, dt_nffuncs, sizeof dt_ffnames[0], cmpname);
	if (!p) return NULL;
	void *next = next_of(name);
	if (next == NULL) return NULL;
	int j = (int)(p - dt_ffnames);
	dt_fnext[j] = next;
	return dt_ffwraps[j];
}

// ---- sentinels: the addresses that stand for MPI_STATUS_IGNORE,
// MPI_STATUSES_IGNORE and MPI_IN_PLACE in Fortran. Each binding has its
// own: Open MPI's are common blocks (one name per spelling), MPICH's mpif.h
// ones are registered at its Fortran MPI_Init in C pointer variables, its
// mpi_f08 ones are objects of libmpich (and MPI_F_STATUS(ES)_IGNORE are the
// standard's C names). Resolved once, after MPI_Init; pointer variables are
// read at each use.
enum { S_STATUS, S_STATUSES, S_INPLACE, S_N };
#define S_MAX 8
static void *sent_obj[S_N][S_MAX];
static void **sent_ptr[S_N][S_MAX];
static pthread_once_t sent_once = PTHREAD_ONCE_INIT;

static void sent_add(int k, const char *name, int isptr) {
	void *a = dlsym(RTLD_DEFAULT, name);
	if (!a) return;
	for (int i = 0; i < S_MAX; i++) {
		if (isptr && !sent_ptr[k][i]) { sent_ptr[k][i] = a; return; }
		if (!isptr && !sent_obj[k][i]) { sent_obj[k][i] = a; return; }
	}
}

static void sent_init(void) {
	static const char *const obj[S_N][6] = {
		{"mpi_fortran_status_ignore_", "mpi_fortran_status_ignore", "mpi_fortran_status_ignore__",
			"MPI_FORTRAN_STATUS_IGNORE", "MPIR_F08_MPI_STATUS_IGNORE_OBJ", NULL},
		{"mpi_fortran_statuses_ignore_", "mpi_fortran_statuses_ignore", "mpi_fortran_statuses_ignore__",
			"MPI_FORTRAN_STATUSES_IGNORE", "MPIR_F08_MPI_STATUSES_IGNORE_OBJ", NULL},
		{"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE",
			"MPIR_F08_MPI_IN_PLACE", NULL},
	};
	static const char *const ptr[S_N][3] = {
		{"MPI_F_STATUS_IGNORE", "MPI_F08_STATUS_IGNORE", NULL},
		{"MPI_F_STATUSES_IGNORE", "MPI_F08_STATUSES_IGNORE", NULL},
		{"MPIR_F_MPI_IN_PLACE", NULL, NULL},
	};
	for (int k = 0; k < S_N; k++) {
		for (int i = 0; obj[k][i]; i++) sent_add(k, obj[k][i], 0);
		for (int i = 0; ptr[k][i]; i++) sent_add(k, ptr[k][i], 1);
	}
}

static int is_sent(int k, const void *f) {
	pthread_once(&sent_once, sent_init);
	if (f == NULL) return 0;
	for (int i = 0; i < S_MAX && sent_obj[k][i]; i++)
		if (f == sent_obj[k][i]) return 1;
	for (int i = 0; i < S_MAX && sent_ptr[k][i]; i++)
		if (f == *sent_ptr[k][i]) return 1;
	return 0;
}

// dt_fbuf gives the C view of a choice buffer: its address (kind 2: MPICH's
// mpi_f08 passes a C descriptor, whose first member is the address), or
// MPI_IN_PLACE for the binding's MPI_IN_PLACE.
void *dt_fbuf(void *f, int kind) {
	void *a = (kind == 2 && f) ? *(void **)f : f;
	return is_sent(S_INPLACE, a) ? MPI_IN_PLACE : a;
}

// dt_fstatus substitutes the wrapper's own status for MPI_STATUS_IGNORE, so
// that the actual source and tag are recorded; the program still sees
// exactly what it asked for.
MPI_Fint *dt_fstatus(void *f, MPI_Status *own) { return is_sent(S_STATUS, f) ? (MPI_Fint *)own : f; }

MPI_Fint *dt_fstatuses(dt_thr *T, int n, void *f) {
	if (n <= 0 || !is_sent(S_STATUSES, f)) return f;
	MPI_Status *s = dt_status_scratch(T, n);
	return s == MPI_STATUSES_IGNORE ? f : (MPI_Fint *)s;
}

MPI_Status *dt_fstatuses_c(MPI_Fint *f) { return is_sent(S_STATUSES, f) ? MPI_STATUSES_IGNORE : (MPI_Status *)f; }

// dt_freqs copies requests in their C form before the call, which sets
// completed ones to MPI_REQUEST_NULL.
MPI_Request *dt_freqs(dt_thr *T, int n, const MPI_Fint *f) {
	if (n <= 0 || f == NULL) return T->rscratch;
	if (n > T->nrscratch) {
		MPI_Request *p = realloc(T->rscratch, n * sizeof *p);
		if (!p) return NULL;
		T->rscratch = p;
		T->nrscratch = n;
	}
	for (int i = 0; i < n; i++) T->rscratch[i] = PMPI_Request_f2c(f[i]);
	return T->rscratch;
}

// dt_fidx gives Fortran's 1-based indices (MPI_Waitsome) 0-based.
static __thread int *fidx;
static __thread int nfidx;
const int *dt_fidx(dt_thr *T, int n, const int *idx) {
	(void)T;
	if (n <= 0 || idx == NULL) return idx;
	if (n > nfidx) {
		int *p = realloc(fidx, n * sizeof *p);
		if (!p) return NULL;
		fidx = p;
		nfidx = n;
	}
	for (int i = 0; i < n; i++) fidx[i] = idx[i] - 1;
	return fidx;
}

// dt_fsumw is MPI_Alltoallw's byte count with Fortran datatype handles.
int64_t dt_fsumw(dt_thr *T, dt_comm *C, const int *counts, void *ftypes) {
	const MPI_Fint *ft = ftypes;
	int64_t s = 0;
	if (!counts || !ft || !C) return 0;
	for (int i = 0; i < C->size; i++) s += (int64_t)counts[i] * dt_tsize(T, PMPI_Type_f2c(ft[i]));
	return s;
}

// ---- start and end of tracing from Fortran.
void dt_finit_call(int j, int thread, MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr, void *fp) {
	dt_clock_init();
	uint64_t t0 = dt_now();
	char mark[PATH_MAX];
	int mk = dt_init_mark(dt_mono_raw(), mark);
	dt_fnest++;
	if (thread) ((void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))dt_fnext[j])(req, prov, ierr);
	else ((void (*)(MPI_Fint *))dt_fnext[j])(ierr);
	dt_fnest--;
	dt_init_unmark(mk, mark);
	uint64_t t1 = dt_now();
	if (ierr == NULL || *ierr == MPI_SUCCESS)
		dt_start(t0, t1, thread ? DT_FID_Init_thread : DT_FID_Init, thread && prov ? *prov : 0, fp);
}

struct ffin {
	int j;
	MPI_Fint *ierr;
};

static int ffin_real(void *arg) {
	struct ffin *a = arg;
	dt_fnest++;
	((void (*)(MPI_Fint *))dt_fnext[a->j])(a->ierr);
	dt_fnest--;
	return a->ierr ? *a->ierr : MPI_SUCCESS;
}

void dt_ffinalize(int j, MPI_Fint *ierr, void *fp) {
	struct ffin a = {j, ierr};
	dt_finalize(ffin_real, &a, fp);
}

void dt_fabort(int j, MPI_Fint *comm, MPI_Fint *code, MPI_Fint *ierr, void *fp) {
	dt_abort_record(PMPI_Comm_f2c(*comm), fp);
	dt_fnest++;
	((void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *))dt_fnext[j])(comm, code, ierr);
	dt_fnest--;
}

// dt_fpcontrol: Fortran's MPI_PCONTROL has only the level, so the interval
// number travels in it: level 100000 + n enters interval n, 101000 + n
// leaves it, 102000 + k / 103000 + k mark sequential section k (n, k ≤ 999).
// Levels 100…103 alone are recorded with number 0 (which dtpa reports).
void dt_fpcontrol(int j, int fid, MPI_Fint *level, uintptr_t x0, uintptr_t x1, void *fp) {
	void (*real)(MPI_Fint *, uintptr_t, uintptr_t) = (void (*)(MPI_Fint *, uintptr_t, uintptr_t))dt_fnext[j];
	dt_thr *T = dt_enter();
	if (T == NULL) {
		real(level, x0, x1);
		return;
	}
	int lv = level ? *level : 0, kind = 0;
	int64_t n = 0;
	if (lv >= 100 && lv <= 103) kind = lv;
	else if (lv >= 100000 && lv < 104000) kind = lv / 1000, n = lv % 1000;
	uint64_t t0 = dt_now();
	real(level, x0, x1);
	uint64_t t1 = dt_now();
	dt_hdr *H = dt_rec_begin(T, fid, t0, t1, fp, 64);
	if (H && kind) PC(kind, n)
	dt_rec_end(T);
}
