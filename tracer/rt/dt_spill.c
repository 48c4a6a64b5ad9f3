// Spill: when dtrun provides a spill directory, the buffers are slots of a
// shared file mapping (tracer/records/spill.go has the layout), so that
// records not yet written survive SIGKILL and dtrun can append them to the
// trace. Each slot starts with a header: seq (order of the buffer's
// records; 0 = nothing to recover), commit (bytes of complete records), tid,
// and what the thread publishes of its call in progress (DT_PUB_*).
// The slots' allocation is under dt_dt_buf_mu, with the free list (dt_buf.c).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef struct {
	volatile uint64_t seq, commit;
	uint32_t tid, pad;
	volatile uint64_t t0, pc, fid, end; // DT_PUB_T0 … DT_PUB_END from commit
} dt_slot;
_Static_assert(offsetof(dt_slot, fid) - offsetof(dt_slot, commit) == DT_PUB_FID * 8, "the published words");
_Static_assert(offsetof(dt_slot, end) - offsetof(dt_slot, commit) == DT_PUB_END * 8, "the published words");
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
	ch->fid = 0;
	ch->end = 0;
	ch->tid = tid;
	ch->seq = __atomic_add_fetch(&spill_seq, 1, __ATOMIC_RELAXED);
	return &ch->commit;
}

// dt_spill_done marks buffer b written (or deliberately dropped), when it is
// a slot: none of its records is to be recovered. It tells whether b is a
// slot. A slot its thread still publishes a call in progress in (one a
// fatal signal interrupted, whose buffer the handler had written) keeps
// its place in the order, so that dtrun still finds that call should the
// process be killed before its footer is written.
int dt_spill_done(char *b) {
	dt_slot *ch = chunk_of(b);
	if (ch && ch->fid) ch->commit = 0;
	else if (ch) ch->seq = 0;
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

// spill_by_threads counts the slots that program threads made in their
// hand-overs, the aux thread having fallen behind (for the footer).
static int spill_by_threads;
int dt_spill_made_by_threads(void) { return __atomic_load_n(&spill_by_threads, __ATOMIC_RELAXED); }

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
	if (!prefault) __atomic_add_fetch(&spill_by_threads, 1, __ATOMIC_RELAXED);
	return s + SLOT_HDR;
}

// Slots are made ahead of need, but only as many as the program's recent
// pace of hand-overs needs: SPILL_NOW free, plus the encoder's batch
// (dt_q_batch: buffers queued for it count as free), plus twice the buffers
// taken per aux period in the busiest recent one (need, from dt_aux.c), at
// most spill_ahead.
// The free list is a stack, so that a buffer the encoder has just written
// (its pages mapped, its lines perhaps still cached) is the next one taken,
// and a slot is made only when none is free: the slots made are the
// program's peak of buffers in use (its own and the encoder's backlog, each
// of which must be a slot to survive a kill) plus this margin. Why: a fresh
// slot is ~80-110 µs of CPU (fallocate and the page faults of 128 KB of
// tmpfs, this VM), more than writing the buffer's records, and under core
// binding it is taken from the rank's core; a ping-pong that takes a
// buffer every ~1.5 ms needs 2-4 ahead, not the 32 a tight loop of cheap
// calls can take in a few ms. MPI_Init makes only SPILL_NOW.
enum { SPILL_NOW = 2 };

// dt_spill_prepare1 makes one fresh slot if fewer buffers are free or
// queued than SPILL_NOW + dt_q_batch + 2 * need (need: buffers taken per
// aux period in the busiest recent one), and tells whether it did: 0 not,
// 1 made and enough are free, 2 made and more are wanted. The aux thread
// calls it once per wake-up (dt_aux.c), one slot at a time, sleeping
// between: the program keeps its core.
int dt_spill_prepare1(unsigned need) {
	if (!spill_n) return 0; // no spill file
	uint64_t want = SPILL_NOW + dt_q_batch + 2 * (uint64_t)need;
	int ahead = want < (uint64_t)spill_ahead ? (int)want : spill_ahead;
	if (!dt_buf_reserve(ahead)) return 0;
	char *b = dt_spill_make(1);
	dt_buf_add(b);
	if (!b) return 0;
	return __atomic_load_n(&dt_buf_nfree, __ATOMIC_RELAXED) + (int)dt_q_buffers() < ahead && dt_spill_left() ? 2 : 1;
}

// Q_BATCH is the encoder's batch with spill slots (dt_q_batch), unless
// DT_Q_BATCH says otherwise: 8 buffers of 128 KB; 16 and 32 measured the
// same in a ping-pong.
enum { Q_BATCH = 8 };

// dt_spill_prepare sets how many buffers the aux thread keeps free at most,
// and makes the first SPILL_NOW now (at start): the program's first
// buffer is a slot. With slots, the writer writes buffers in
// batches (dt_q_batch).
void dt_spill_prepare(int k) {
	spill_ahead = k;
	const char *b = getenv("DT_Q_BATCH");
	int batch = b && *b ? atoi(b) : Q_BATCH;
	dt_q_batch = batch > 0 ? (unsigned)(batch < k ? batch : k) : 0;
	for (int i = 0; i < SPILL_NOW && dt_spill_prepare1(0); i++) {
	}
}
