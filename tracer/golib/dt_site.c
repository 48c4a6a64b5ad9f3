//go:build dtpa_openmpi || dtpa_mpich

// Call sites: a global table under a mutex; the per-thread cache in dt_site
// (dt_wrap.h) makes the lock rare. A new call site is defined to Go through
// the hand-over queue (dt_q_def_site).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <pthread.h>
#include <stdlib.h>

int dt_depth = 4; // UserStackSize (dt_start)
#define SITE_CAP (1 << 15)
static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;
static dt_site_ent *site_tab;
static uint32_t site_next = 1; // 0 = empty stack, defined at init

uint32_t dt_site_slow(dt_thr *T, const uintptr_t *pcs, int n, uint64_t h, uint64_t *t1) {
	uint32_t id = 0;
	int defined = 0;
	pthread_mutex_lock(&site_mu);
	// A call from a module loaded since MPI_Init: its callers' frames would
	// be cut off by the span of code; widen it (dt_site). Rare: once per
	// call site first seen from outside the span.
	if (n > 0 && pcs[0] - dt_text_lo >= dt_text_span) dt_text_update();
	// A new stack: its frames beyond the first must be in some module's
	// code, not merely in the span between the lowest and the highest
	// (dt_site checks only that): a "return address" read from a caller's
	// locals can fall there (MPICH's use-mpi Fortran, a loop counter in the
	// high half). The walk ends at the first that is not. Such a stack
	// misses the thread's cache at every call and comes here, but it is
	// one call site: no new definition, and polls fold.
	for (int i = 1; i < n; i++) {
		if (!dt_in_text(pcs[i])) {
			n = i;
			h = dt_site_hash(pcs, n);
			break;
		}
	}
	if (!site_tab) site_tab = calloc(SITE_CAP, sizeof(dt_site_ent));
	if (site_tab) {
		for (uint32_t i = 0; i < SITE_CAP; i++) {
			dt_site_ent *e = &site_tab[(h + i) & (SITE_CAP - 1)];
			if (e->n == 0 && e->hash == 0) {
				if (site_next >= SITE_CAP * 3 / 4) break; // full: empty stack
				e->hash = h;
				e->n = n;
				memcpy(e->pcs, pcs, n * sizeof(uintptr_t));
				e->id = id = site_next++;
				dt_q_def_site(id, pcs, n);
				defined = 1;
				break;
			}
			if (e->hash == h && e->n == (uint32_t)n && memcmp(e->pcs, pcs, n * sizeof(uintptr_t)) == 0) {
				id = e->id;
				break;
			}
		}
	}
	pthread_mutex_unlock(&site_mu);
	dt_site_ent *c = &T->sites[h & (DT_SITE_CACHE - 1)];
	c->hash = h;
	c->n = n;
	memcpy(c->pcs, pcs, n * sizeof(uintptr_t));
	c->id = id;
	if (defined && t1) *t1 = dt_now(); // the hand-over is part of the call
	return id;
}
