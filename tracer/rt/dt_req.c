// Requests: scratch copies of the wrappers' request and status arrays (MPI
// nulls completed handles), the kind of each pending request (only
// receives report a status) and the request attributes of a record.
#include "dt_wrap.h"

#include <pthread.h>
#include <stdlib.h>

MPI_Request *dt_req_scratch_slow(dt_thr *T, int n, const MPI_Request *r) {
	if (n <= 0 || r == NULL) return T->rscratch;
	if (n > T->nrscratch) {
		MPI_Request *p = realloc(T->rscratch, n * sizeof *p);
		if (!p) return NULL;
		T->rscratch = p;
		T->nrscratch = n;
	}
	memcpy(T->rscratch, r, n * sizeof *r);
	return T->rscratch;
}

MPI_Status *dt_status_scratch(dt_thr *T, int n) {
	if (n <= 0) return MPI_STATUSES_IGNORE;
	if (n > T->nsscratch) {
		MPI_Status *p = realloc(T->sscratch, n * sizeof *p);
		if (!p) return MPI_STATUSES_IGNORE;
		T->sscratch = p;
		T->nsscratch = n;
	}
	return T->sscratch;
}

#define RK_CAP (1 << 16)
static pthread_mutex_t rk_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uint64_t key; int kind; } rk_tab[RK_CAP];
static int rk_used;
#define RK_TOMB 1ull

static inline uint64_t dt_reqid(MPI_Request r) {
#ifdef OPEN_MPI
	return (uint64_t)(uintptr_t)r;
#else
	return (uint64_t)(uint32_t)r;
#endif
}

static void rk_set(uint64_t key, int kind) {
	pthread_mutex_lock(&rk_mu);
	if (rk_used > RK_CAP * 3 / 4) { // rebuild without tombstones
		static struct { uint64_t key; int kind; } live[RK_CAP];
		int n = 0;
		for (int i = 0; i < RK_CAP; i++)
			if (rk_tab[i].key > RK_TOMB) live[n].key = rk_tab[i].key, live[n++].kind = rk_tab[i].kind;
		memset(rk_tab, 0, sizeof rk_tab);
		rk_used = 0;
		for (int i = 0; i < n && i < RK_CAP / 2; i++) {
			uint64_t h = (live[i].key * 0x9E3779B97F4A7C15ull) >> 48;
			for (uint32_t j = 0;; j++) {
				int s = (h + j) & (RK_CAP - 1);
				if (rk_tab[s].key == 0) { rk_tab[s].key = live[i].key; rk_tab[s].kind = live[i].kind; rk_used++; break; }
			}
		}
	}
	uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 48;
	int tomb = -1;
	for (uint32_t j = 0; j < RK_CAP; j++) {
		int s = (h + j) & (RK_CAP - 1);
		if (rk_tab[s].key == key) {
			if (kind) rk_tab[s].kind = kind;
			else rk_tab[s].key = RK_TOMB;
			break;
		}
		if (rk_tab[s].key == RK_TOMB && tomb < 0) tomb = s;
		if (rk_tab[s].key == 0) {
			if (kind) {
				if (tomb < 0) { tomb = s; rk_used++; }
				rk_tab[tomb].key = key;
				rk_tab[tomb].kind = kind;
			}
			break;
		}
	}
	pthread_mutex_unlock(&rk_mu);
}

static int rk_get(uint64_t key) {
	int kind = 0;
	pthread_mutex_lock(&rk_mu);
	uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 48;
	for (uint32_t j = 0; j < RK_CAP; j++) {
		int s = (h + j) & (RK_CAP - 1);
		if (rk_tab[s].key == key) { kind = rk_tab[s].kind; break; }
		if (rk_tab[s].key == 0) break;
	}
	pthread_mutex_unlock(&rk_mu);
	return kind;
}

void dt_a_reqcreated(dt_thr *T, dt_hdr *H, MPI_Request r, int kind) {
	H->attr |= A_REQS;
	dt_put32(T, 1);
	dt_put64(T, dt_reqid(r));
	if (kind) rk_set(dt_reqid(r), kind);
}

void dt_a_reqlist(dt_thr *T, dt_hdr *H, int n, const MPI_Request *rs) {
	int max = (int)((dt_need_reqs(n) - 64) / 16), k = 0;
	H->attr |= A_REQS;
	char *np = T->pos;
	dt_put32(T, 0);
	for (int i = 0; i < n && k < max; i++)
		if (rs[i] != MPI_REQUEST_NULL) dt_put64(T, dt_reqid(rs[i])), k++;
	memcpy(np, &k, 4);
}

void dt_a_reqfree(dt_thr *T, dt_hdr *H, MPI_Request r) {
	if (r == MPI_REQUEST_NULL) return;
	H->attr |= A_REQS;
	dt_put32(T, 1);
	dt_put64(T, dt_reqid(r));
	rk_set(dt_reqid(r), 0);
}

// dt_status gives the status pair of a completed request: the actual source
// and tag for receives, NO_STATUS for everything else and for cancelled
// receives, and tag -5 (traceformat.Cancelled) for other requests whose
// cancellation succeeded (a send's message was never sent). A completed
// non-persistent receive is forgotten.
static void dt_status_of(MPI_Request r, MPI_Status *st, int32_t *src, int32_t *tag) {
	*src = *tag = -4;
	uint64_t id = dt_reqid(r);
	int kind = rk_get(id);
	if (kind == DT_RK_RECV) rk_set(id, 0);
	if (st == NULL || st == MPI_STATUS_IGNORE) return;
	int c = 0;
	PMPI_Test_cancelled(st, &c);
	if (c) {
		if (!kind) *tag = -5;
		return;
	}
	if (!kind) return;
	*src = dt_rank(st->MPI_SOURCE);
	*tag = st->MPI_TAG;
}

void dt_a_done1(dt_thr *T, dt_hdr *H, MPI_Request r, MPI_Status *st) {
	if (r == MPI_REQUEST_NULL) return;
	int32_t s, t;
	dt_status_of(r, st, &s, &t);
	H->attr |= A_REQS | A_STATUS;
	dt_put32(T, 1);
	dt_put64(T, dt_reqid(r));
	dt_put32(T, s);
	dt_put32(T, t);
}

static void dt_done_list(dt_thr *T, dt_hdr *H, int n, const int *idx, const MPI_Request *rs, MPI_Status *sts) {
	if (rs == NULL || n <= 0) return;
	int max = (int)((dt_need_reqs(n) - 64) / 16), k = 0;
	H->attr |= A_REQS | A_STATUS;
	char *np = T->pos;
	dt_put32(T, 0);
	int32_t pairs[2 * 64];
	char *stpos;
	// ids first, then the status pairs (trace layout); statuses are computed
	// in the first pass because dt_status_of forgets completed receives.
	int32_t *sp = n <= 64 ? pairs : malloc(sizeof(int32_t) * 2 * n);
	if (!sp) sp = pairs, n = n > 64 ? 64 : n;
	for (int i = 0; i < n && k < max; i++) {
		int j = idx ? idx[i] : i;
		MPI_Request r = rs[j];
		if (r == MPI_REQUEST_NULL) continue;
		MPI_Status *st = (sts == MPI_STATUSES_IGNORE) ? NULL : &sts[idx ? i : j];
		dt_status_of(r, st, &sp[2 * k], &sp[2 * k + 1]);
		dt_put64(T, dt_reqid(r));
		k++;
	}
	memcpy(np, &k, 4);
	stpos = T->pos;
	memcpy(stpos, sp, 8 * (size_t)k);
	T->pos += 8 * (size_t)k;
	if (sp != pairs) free(sp);
}

void dt_a_doneall(dt_thr *T, dt_hdr *H, int n, const MPI_Request *rs, MPI_Status *sts) {
	dt_done_list(T, H, n, NULL, rs, sts);
}

void dt_a_donesome(dt_thr *T, dt_hdr *H, int n, const int *idx, const MPI_Request *rs, MPI_Status *sts) {
	dt_done_list(T, H, n, idx, rs, sts);
}
