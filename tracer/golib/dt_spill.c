//go:build dtpa_openmpi || dtpa_mpich

// Spill: when dtrun provides a spill directory, the buffers are slots of a
// shared file mapping (tracer/records/spill.go has the layout), so that
// records not yet written survive SIGKILL and dtrun can append them to the
// trace. Each slot starts with a header: seq (order of the buffer's
// records; 0 = nothing to recover), commit (bytes of complete records), tid.
// The slots' allocation is under dt_dt_buf_mu, with the free list (dt_buf.c).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef struct {
	volatile uint64_t seq, commit;
	uint32_t tid;
} dt_slot;
#define SLOT_HDR 64
static char *spill_lo, *spill_hi;
static uint64_t spill_seq;

static inline dt_slot *chunk_of(char *b) {
	return b && b >= spill_lo && b < spill_hi ? (dt_slot *)(b - SLOT_HDR) : NULL;
}

// dt_spill_claim starts a thread's use of buffer b: when b is a slot, its
// header gets the thread and the next sequence number, and the result is
// where the thread publishes its commit offset (NULL when b is not a slot).
volatile uint64_t *dt_spill_claim(char *b, uint32_t tid) {
	dt_slot *ch = chunk_of(b);
	if (!ch) return NULL;
	ch->commit = 0;
	ch->tid = tid;
	ch->seq = __atomic_add_fetch(&spill_seq, 1, __ATOMIC_RELAXED);
	return &ch->commit;
}

// dt_spill_done marks buffer b written (or deliberately dropped), when it is
// a slot: nothing in it is to be recovered. It tells whether b is a slot.
int dt_spill_done(char *b) {
	dt_slot *ch = chunk_of(b);
	if (ch) ch->seq = 0;
	return ch != NULL;
}

static int spill_fd = -1, spill_n, spill_next;
static off_t spill_off; // file offset of the first slot

// dt_spill_setup registers the mapping of n slots at base (first slot
// header), backed by fd from file offset off. Slots are allocated in the
// file when first used (dt_buf_get), so that memory is taken as needed.
void dt_spill_setup(char *base, int n, int fd, long off) {
	pthread_mutex_lock(&dt_buf_mu);
	spill_lo = base + SLOT_HDR;
	spill_hi = base + (size_t)n * (SLOT_HDR + dt_chunk);
	spill_fd = fd;
	spill_n = n;
	spill_off = off;
	pthread_mutex_unlock(&dt_buf_mu);
}

static int spill_ahead = 8;

// dt_spill_left tells whether slots remain that nobody has made yet (under
// dt_dt_buf_mu, or racily).
int dt_spill_left(void) { return spill_next < spill_n; }

// dt_spill_made tells how many slots were made (racily: for the footer).
int dt_spill_made(void) { return spill_next; }

// dt_spill_make allocates the next slot of the spill file, or returns NULL
// (none left, or no space: plain memory from then on). Space is reserved
// with fallocate (tmpfs would otherwise raise SIGBUS when full; ~0.35 ms
// per MB on this VM); with prefault (the aux thread, ahead of need) the pages are
// also faulted in at once (one madvise, about a third cheaper than touching
// each page: ~0.45 ms per MB).
char *dt_spill_make(int prefault) {
	size_t sz = SLOT_HDR + dt_chunk;
	pthread_mutex_lock(&dt_buf_mu);
	int i = spill_next < spill_n ? spill_next++ : -1;
	pthread_mutex_unlock(&dt_buf_mu);
	if (i < 0) return NULL;
	char *s = spill_lo - SLOT_HDR + (size_t)i * sz;
	if (fallocate(spill_fd, 0, spill_off + (off_t)i * (off_t)sz, sz) != 0) {
		pthread_mutex_lock(&dt_buf_mu);
		if (spill_n > i) spill_n = i;
		pthread_mutex_unlock(&dt_buf_mu);
		return NULL;
	}
	uintptr_t lo = ((uintptr_t)s + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)s + sz) & ~(uintptr_t)4095;
	if (prefault && (hi <= lo || madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0)) memset(s, 0, sz);
	return s + SLOT_HDR;
}

// Slots are made ahead of need, but not more than the program has shown it
// needs: at most spill_ahead free, and no more than SPILL_NOW plus
// SPILL_RAMP per buffer taken so far. A program that records little (most
// of the time: a buffer holds thousands of calls) never pays for the 4 MB
// of slots a tight loop of cheap calls wants, and MPI_Init makes only
// SPILL_NOW of them (each 128 KB slot is ~0.1 ms of fallocate and page
// faults: the 32 made at once were ~3 ms of each rank's MPI_Init).
enum { SPILL_NOW = 2, SPILL_RAMP = 2 };

// dt_spill_prepare1 makes one fresh slot if fewer buffers than wanted are
// free, and tells whether it did. The aux thread calls it once per
// wake-up (dt_aux.c), one slot at a time, sleeping between: the program
// keeps its core.
int dt_spill_prepare1(void) {
	if (!spill_n) return 0; // no spill file
	uint64_t want = SPILL_NOW + SPILL_RAMP * (uint64_t)dt_buf_taken();
	if (!dt_buf_reserve(want < (uint64_t)spill_ahead ? (int)want : spill_ahead)) return 0;
	char *b = dt_spill_make(1);
	dt_buf_add(b);
	return b != NULL;
}

// dt_spill_prepare sets how many buffers the aux thread keeps free at most,
// and makes the first SPILL_NOW now (at start, from Go): the program's
// first buffer is a slot.
void dt_spill_prepare(int k) {
	spill_ahead = k;
	for (int i = 0; i < SPILL_NOW && dt_spill_prepare1(); i++) {
	}
}
