//go:build dtpa_openmpi || dtpa_mpich

// Tracer runtime in C: thread buffers and their free list, call-site and
// communicator tables, request kinds, MPI_Init/Finalize/Abort, fatal-signal
// flushing. Clock setup and synchronization are in dt_clock.c.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "_cgo_export.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

__thread dt_thr *dt_self __attribute__((tls_model("initial-exec")));
volatile int dt_state;
volatile uint64_t dt_epoch;
volatile uint64_t dt_type_gen = 1;
int dt_depth = 4;
size_t dt_chunk = 1 << 20;
dt_comm dt_world_ent, dt_self_ent;
int dt_rank_world, dt_size_world;
uint64_t dt_max_stall_ticks, dt_stall_ticks, dt_flushes;

static pthread_mutex_t thr_mu = PTHREAD_MUTEX_INITIALIZER;
static dt_thr *thr_list;
static uint32_t thr_next;

// ---- buffers: a free list shared with Go, which returns buffers it has
// encoded (dt_buf_put). The total is bounded by TraceBufSize. A thread that
// fills its buffer when none is free and the budget is spent waits for one
// (README, "When the encoder cannot keep up"): the trace stays complete and
// the wait shows inside the MPI call that filled the buffer. Dropping calls
// instead would keep the program's pace but could make the analyzer pair
// the wrong messages, so it is opt-in: DT_FULL_WAIT_NS=n waits up to n ns,
// then drops the thread's calls (counted, reported in the footer) until a
// buffer is free again (0: drop at once; default -1: wait as long as it
// takes).
static pthread_mutex_t buf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t buf_cv;
static void *buf_free[4096];
static int buf_nfree, buf_nalloc, buf_max = 16;
// buf_taken counts the buffers handed out (dt_buf_get): the aux thread backs
// off further while it does not move. (Under buf_mu; read without it.)
static unsigned buf_taken;
static int buf_waiting; // threads waiting for a free buffer (under buf_mu)
static int64_t buf_limit_mode; // MaxTraceSize == -1: stop when TraceBufSize bytes were traced
static uint64_t buf_total, buf_budget;
static int64_t buf_wait_ns = -1;
uint64_t dt_drop_gaps; // (atomic) times a thread started dropping calls for want of a free buffer

static void q_wake(void);

void dt_buf_setup(size_t chunk, uint64_t total, int64_t max_trace_mb) {
	dt_chunk = chunk;
	buf_max = (int)(total / chunk);
	if (buf_max < 2) buf_max = 2;
	if (buf_max > 4000) buf_max = 4000;
	buf_limit_mode = max_trace_mb == -1;
	buf_budget = total;
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&buf_cv, &a);
	pthread_condattr_destroy(&a);
	const char *w = getenv("DT_FULL_WAIT_NS");
	if (w && *w) buf_wait_ns = strtoll(w, NULL, 10);
}

// spill_pending tells whether spill slots remain that nobody has made yet
// (under buf_mu, or racily).
static inline int spill_pending(void);
static char *spill_make(int prefault);

// The encoder runs at nice 10 (tracer.go, lowPriority), so that it takes
// short slices of a core it shares with a computing rank. But a thread
// waiting for a free buffer waits for the encoder, and at nice 10 the
// encoder got ~5 % of a core that other processes also wanted: one buffer's
// encoding (0.3 ms of CPU) took 2-36 ms (tight loop, schedstat of both
// threads). So while a thread waits, the encoder runs at that thread's
// priority, and returns to its own once it frees a buffer that nobody waits
// for. Raising a priority needs CAP_SYS_NICE (or RLIMIT_NICE): without it
// the encoder stays at nice 10. (Under buf_mu.)
static int enc_tid, enc_nice, enc_boosted, enc_boost_ok = 1, enc_final;

// dt_enc_register names the encoder's thread and its nice value (from Go,
// on that thread).
void dt_enc_register(int nice) {
	// Named, like the tracer's other threads, so that top -H, perf and
	// /proc/PID/task/*/comm tell the tracer's threads from the program's.
	prctl(PR_SET_NAME, "dtpa-encoder");
	pthread_mutex_lock(&buf_mu);
	enc_tid = gettid();
	enc_nice = nice;
	pthread_mutex_unlock(&buf_mu);
}

static int enc_idle; // the encoder runs under SCHED_IDLE (dt_enc_idle)

// enc_set gives the encoder nice value nice under SCHED_OTHER, or puts it
// back under SCHED_IDLE (idle).
static int enc_set(int nice, int idle) {
	struct sched_param sp = {0};
	if (idle) return sched_setscheduler(enc_tid, SCHED_IDLE, &sp);
	if (enc_idle && sched_setscheduler(enc_tid, SCHED_OTHER, &sp) != 0) return -1;
	return setpriority(PRIO_PROCESS, enc_tid, nice);
}

// dt_enc_idle puts the calling thread, the encoder, under SCHED_IDLE.
int dt_enc_idle(void) {
	struct sched_param sp = {0};
	if (sched_setscheduler(0, SCHED_IDLE, &sp) != 0) return 0;
	enc_idle = 1;
	return 1;
}

static void enc_boost(void) {
	if (!enc_tid || enc_boosted || !enc_boost_ok) return;
	errno = 0;
	int mine = getpriority(PRIO_PROCESS, 0); // the calling thread's
	if (errno != 0 || (!enc_idle && mine >= enc_nice)) return;
	if (enc_set(mine, 0) == 0) enc_boosted = 1;
	else enc_boost_ok = 0;
}

// dt_enc_hurry gives the encoder the program's priority for good, at the
// end of tracing (finalize, abort, fatal signal): what is left must be
// written before the process ends, and after a signal the launcher kills
// the process if it takes too long (Open MPI: SIGKILL 1 s after SIGTERM),
// while the other ranks may still be busy on this core.
void dt_enc_hurry(void) {
	extern pid_t dt_pid;
	pthread_mutex_lock(&buf_mu);
	enc_final = 1;
	if (enc_tid && !enc_boosted && enc_boost_ok) {
		errno = 0;
		int prog = getpriority(PRIO_PROCESS, dt_pid); // the main thread's
		if (errno == 0 && (enc_idle || prog < enc_nice) && enc_set(prog, 0) == 0) enc_boosted = 1;
	}
	pthread_mutex_unlock(&buf_mu);
}

// dt_buf_get returns a free buffer, else a new one while fewer than buf_max
// exist, else NULL — at once, or after waiting buf_wait_ns when wait is 1.
// With wait 2 it waits (up to 5 s, or as long as buf_wait_ns says when that
// is longer) even when DT_FULL_WAIT_NS says to drop: for the records that
// end a thread's trace (MPI_Finalize, MPI_Abort), which a dropping mode
// would otherwise lose at the very end, where waiting costs nothing.
// The aux thread keeps spill_ahead spill slots ready; when it falls behind, the
// program thread makes one itself but only reserves its space (~0.05 ms for
// 128 KB) and takes the page faults while recording, rather than all of it
// in one stall. (Dropping calls there instead lost 2-20 % of a ping-pong's
// events while the budget was far from spent.)
static char *dt_buf_get(int wait) {
	pthread_mutex_lock(&buf_mu);
	if (buf_nfree == 0 && buf_nalloc >= buf_max && wait && (buf_wait_ns != 0 || wait == 2)) {
		q_wake(); // the encoder may be asleep with full buffers queued
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t w = buf_wait_ns > 0 ? buf_wait_ns : 3600 * (int64_t)1000000000;
		if (wait == 2 && buf_wait_ns >= 0 && w < 5 * (int64_t)1000000000) w = 5 * (int64_t)1000000000;
		ts.tv_sec += w / 1000000000;
		ts.tv_nsec += w % 1000000000;
		if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
		buf_waiting++;
		enc_boost();
		while (buf_nfree == 0 && pthread_cond_timedwait(&buf_cv, &buf_mu, &ts) == 0) {
		}
		buf_waiting--;
		// The last waiter takes the lent priority back at once: under
		// SCHED_IDLE the encoder then gives way to this thread.
		if (enc_idle && enc_boosted && buf_waiting == 0 && !enc_final && enc_set(enc_nice, 1) == 0) enc_boosted = 0;
	}
	char *b = NULL;
	int fresh = 0;
	buf_taken++;
	if (buf_nfree > 0) b = buf_free[--buf_nfree];
	else if (buf_nalloc < buf_max) {
		fresh = 1;
		buf_nalloc++;
	}
	pthread_mutex_unlock(&buf_mu);
	if (fresh) {
		if ((b = spill_make(0)) == NULL) b = malloc(dt_chunk); // no spill file, or no space left in it
		if (b == NULL) __atomic_sub_fetch(&buf_nalloc, 1, __ATOMIC_RELAXED);
	}
	return b;
}

// dt_buf_ready tells, without a lock, whether dt_buf_get(0) may succeed.
static inline int dt_buf_ready(void) {
	return __atomic_load_n(&buf_nfree, __ATOMIC_RELAXED) > 0 || __atomic_load_n(&buf_nalloc, __ATOMIC_RELAXED) < buf_max;
}

// ---- spill: when dtrun provides a spill directory, the buffers are slots
// of a shared file mapping (tracer/records/spill.go has the layout), so that
// records not yet written survive SIGKILL and dtrun can append them to the
// trace. Each slot starts with a header: seq (order of the buffer's
// records; 0 = nothing to recover), commit (bytes of complete records), tid.
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

size_t dt_buf_chunk(void) { return dt_chunk; }
int dt_buf_slots(void) { return buf_max; }

static int spill_fd = -1, spill_n, spill_next;
static off_t spill_off; // file offset of the first slot

// dt_spill_setup registers the mapping of n slots at base (first slot
// header), backed by fd from file offset off. Slots are allocated in the
// file when first used (dt_buf_get), so that memory is taken as needed.
void dt_spill_setup(char *base, int n, int fd, long off) {
	pthread_mutex_lock(&buf_mu);
	spill_lo = base + SLOT_HDR;
	spill_hi = base + (size_t)n * (SLOT_HDR + dt_chunk);
	spill_fd = fd;
	spill_n = n;
	spill_off = off;
	pthread_mutex_unlock(&buf_mu);
}

static int spill_ahead = 8;

static inline int spill_pending(void) { return spill_next < spill_n; }

// spill_make allocates the next slot of the spill file, or returns NULL
// (none left, or no space: plain memory from then on). Space is reserved
// with fallocate (tmpfs would otherwise raise SIGBUS when full; ~0.35 ms
// per MB on this VM); with prefault (the aux thread, ahead of need) the pages are
// also faulted in at once (one madvise, about a third cheaper than touching
// each page: ~0.45 ms per MB).
static char *spill_make(int prefault) {
	size_t sz = SLOT_HDR + dt_chunk;
	pthread_mutex_lock(&buf_mu);
	int i = spill_next < spill_n ? spill_next++ : -1;
	pthread_mutex_unlock(&buf_mu);
	if (i < 0) return NULL;
	char *s = spill_lo - SLOT_HDR + (size_t)i * sz;
	if (fallocate(spill_fd, 0, spill_off + (off_t)i * (off_t)sz, sz) != 0) {
		pthread_mutex_lock(&buf_mu);
		if (spill_n > i) spill_n = i;
		pthread_mutex_unlock(&buf_mu);
		return NULL;
	}
	uintptr_t lo = ((uintptr_t)s + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)s + sz) & ~(uintptr_t)4095;
	if (prefault && (hi <= lo || madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) != 0)) memset(s, 0, sz);
	return s + SLOT_HDR;
}

// spill_prepare1 makes one fresh slot if fewer than spill_ahead buffers are
// free, and tells whether it did. The aux thread calls it once per wake-up
// (aux_main), one slot at a time, sleeping between: the program keeps its
// core.
static int spill_prepare1(void) {
	pthread_mutex_lock(&buf_mu);
	int go = buf_nfree < spill_ahead && spill_next < spill_n && buf_nalloc < buf_max;
	if (go) buf_nalloc++;
	pthread_mutex_unlock(&buf_mu);
	if (!go) return 0;
	char *b = spill_make(1);
	pthread_mutex_lock(&buf_mu);
	if (b) {
		buf_free[buf_nfree++] = b;
		pthread_cond_signal(&buf_cv);
	} else {
		buf_nalloc--;
	}
	pthread_mutex_unlock(&buf_mu);
	return b != NULL;
}

// dt_spill_prepare sets how many buffers the aux thread keeps free and prepares
// them now (at start, from Go).
void dt_spill_prepare(int k) {
	spill_ahead = k;
	while (spill_prepare1()) {
	}
}

void dt_buf_put(void *b) {
	dt_slot *ch = chunk_of(b);
	if (ch) ch->seq = 0; // written (or deliberately dropped): nothing to recover
	pthread_mutex_lock(&buf_mu);
	if (buf_nfree < (int)(sizeof buf_free / sizeof buf_free[0])) {
		buf_free[buf_nfree++] = b;
		b = NULL;
	}
	pthread_cond_signal(&buf_cv);
	pthread_mutex_unlock(&buf_mu);
	if (b && !chunk_of(b)) free(b);
}

// dt_buf_done returns a buffer the encoder has written (from Go), then
// yields the encoder's core once it has run enc_yield_ns since it last slept
// or yielded (DT_ENC_YIELD_NS; 0: after every buffer, 0.15-0.3 ms of work;
// default -1: only when a thread waits for a buffer). Why: under EEVDF (kernel
// 6.6+) a nice value changes how often a thread runs, not how long: once
// picked, the encoder at nice 10 kept the core for a whole slice, which ends
// at the next 4 ms tick, while the rank it had preempted waited (tight loop:
// hand-overs of 2-4.5 ms with the rank runnable and the encoder running,
// schedstat of both threads; perf sched timehist showed the encoder running
// 4.0 ms from one tick to the next). A yield hands the core back to the
// rank, which at nice 0 against 10 is eligible again after ~0.1 ms of the
// encoder's run. When a thread waits for the buffer, the yield also lets it
// run at once (without, the scheduler often let the encoder free 5-20 more
// first: 0.6-2.6 ms). A yield when nothing else is runnable returns at once.
// Not the default: yielding after every buffer cut the tight loop's longest
// stall (1.1-2.0 ms against 1.4-5.8) but a traced MPI_Allreduce cost more in
// each of the last 6 alternated comparisons, and in the first round's range
// at depth 4 (tracer/README.md).
static int64_t mono_ns(void);
static int64_t enc_ran_from; // when the encoder last slept or yielded (its thread only)
static int64_t enc_yield_ns = -2; // -2: not read yet

void dt_buf_done(void *b) {
	pthread_mutex_lock(&buf_mu);
	int waiting = buf_waiting;
	if (enc_boosted && !waiting && !enc_final) {
		enc_set(enc_nice, enc_idle);
		enc_boosted = 0;
	}
	pthread_mutex_unlock(&buf_mu);
	dt_buf_put(b);
	if (enc_yield_ns == -2) {
		const char *y = getenv("DT_ENC_YIELD_NS");
		enc_yield_ns = y && *y ? strtoll(y, NULL, 10) : -1;
	}
	if (waiting || (enc_yield_ns >= 0 && mono_ns() - enc_ran_from >= enc_yield_ns)) {
		sched_yield();
		enc_ran_from = mono_ns();
	}
}

// ---- hand-over queue: full buffers go to Go through a C queue that the
// encoder goroutine drains itself (dt_q_pop blocks in C). A cgo call into
// Go per buffer would have to wait for a Go P, which under core binding
// (one CPU) the encoder holds for milliseconds: the program would stall.
// No other goroutine runs in steady state: a second one (a pump feeding the
// encoder through a channel) made every buffer wait for a P hand-over, which
// with one P happens only when sysmon retakes the P from a goroutine in C
// (up to 10 ms; tight loop stalls of 3.4-19 ms). The work that must keep the
// program's priority (spill slots, the epoch tick) is a C thread (aux_main).
typedef struct {
	void *buf;
	size_t n;
	uint32_t tid;
	int fin; // > 0: end of tracing with this stop reason, after the buffers before it
	int kind; // DT_Q_*
} dt_qent;
#define Q_CAP 8192
static dt_qent q_ent[Q_CAP];
static unsigned q_head, q_tail; // under q_mu
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static int q_sleeping; // the encoder waits on q_cv (under q_mu)

// q_wake wakes the encoder. A program thread calls it only where it is about
// to sleep anyway (waiting for a free buffer) or at the end of tracing: a
// wake-up at every hand-over let the woken threads preempt the program in
// the middle of it (stalls of 1-50 ms in a ping-pong, measured).
static void q_wake(void) {
	pthread_mutex_lock(&q_mu);
	if (q_sleeping) pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

static void q_push_kind(void *buf, size_t n, uint32_t tid, int fin, int kind) {
	pthread_mutex_lock(&q_mu);
	while (q_tail - q_head >= Q_CAP) { // cannot happen: fewer buffers than slots
		pthread_mutex_unlock(&q_mu);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		pthread_mutex_lock(&q_mu);
	}
	q_ent[q_tail++ % Q_CAP] = (dt_qent){buf, n, tid, fin, kind};
	if ((fin || kind == DT_Q_GO) && q_sleeping) pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

static void q_push(void *buf, size_t n, uint32_t tid, int fin) { q_push_kind(buf, n, tid, fin, DT_Q_BUF); }

// dt_q_kick tells the encoder that Go queued a job of its own (clock-sync
// samples), in order with the buffers handed over before.
void dt_q_kick(void) { q_push_kind(NULL, 0, 0, 0, DT_Q_GO); }

// Definitions travel through the same queue, ahead of the buffers holding
// events that use them, so that defining a call site or a communicator
// costs the program no call into Go (which may have to wait for a P).
void dt_q_def_site(uint32_t id, const uintptr_t *pcs, int n) {
	uint64_t *p = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
	if (!p) return;
	for (int i = 0; i < n; i++) p[i] = pcs[i];
	q_push_kind(p, (size_t)n, id, 0, DT_Q_SITE);
}

void dt_q_def_comm(uint32_t local, uint64_t id, const uint32_t *mem, int nm, const uint32_t *rem, int nr, int inter,
	uint32_t parent, int fid) {
	// Layout read by Go (tracer.go, commDef): u32 local, u32 nm, u32 nr, u32 inter, u32 parent, u32 fid,
	// u64 id, nm + nr × u32.
	uint32_t *p = malloc(32 + 4 * (size_t)(nm + nr));
	if (!p) return;
	p[0] = local, p[1] = nm, p[2] = nr, p[3] = inter, p[4] = parent, p[5] = fid;
	memcpy(p + 6, &id, 8);
	if (nm) memcpy(p + 8, mem, 4 * (size_t)nm);
	if (nr) memcpy(p + 8 + nm, rem, 4 * (size_t)nr);
	q_push_kind(p, 0, 0, 0, DT_Q_COMM);
}

// dt_q_pop waits for the next entry and tells whether more are queued
// behind it (called by the encoder goroutine, in C so that it asks the Go
// scheduler for nothing while it waits). Nobody wakes it at a hand-over: it
// polls, every 100 µs while entries keep coming, backing off to 50 ms when
// idle, and is woken only at the end of tracing, by a Go job (dt_q_kick), or
// by a thread about to wait for a free buffer. Buffers that arrive while it
// sleeps wait in the queue, which costs only free buffers (a thread that
// runs out wakes it); each wake-up costs the program its core for a moment
// (5 ms: 2000 wake-ups per rank in hpcc at 4 ranks on 2 cores).
int dt_q_pop(void **buf, size_t *n, uint32_t *tid, int *fin, int *kind) {
	static int64_t sleep_ns = 100000;
	pthread_mutex_lock(&q_mu);
	while (q_head == q_tail) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += sleep_ns;
		if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
		q_sleeping = 1;
		pthread_cond_timedwait(&q_cv, &q_mu, &ts);
		q_sleeping = 0;
		enc_ran_from = mono_ns();
		if (q_head == q_tail && sleep_ns < 50000000) sleep_ns *= 2;
	}
	dt_qent e = q_ent[q_head++ % Q_CAP];
	int more = q_head != q_tail;
	sleep_ns = 100000;
	pthread_mutex_unlock(&q_mu);
	*buf = e.buf;
	*n = e.n;
	*tid = e.tid;
	*fin = e.fin;
	*kind = e.kind;
	return more;
}

// ---- aux thread: a plain C thread at the program's priority (it holds no
// Go P and asks the Go scheduler for nothing) that makes spill slots ahead
// of need and moves the epoch (periodic hand-over). The encoder, at nice 10,
// could not make slots beside a busy rank (the rank then made them itself
// in its hand-overs: stalls of 1-4 ms, measured); a Go ticker goroutine
// would need the encoder's P every period.
static pthread_mutex_t aux_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t aux_cv;
static pthread_t aux_th;
static int aux_run, aux_started; // under aux_mu
static int64_t aux_epoch_ns;

static int64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void dt_bump_epoch(void);

static void *aux_main(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "dtpa-aux");
	int64_t next_epoch = mono_ns() + aux_epoch_ns, sleep_ns = 100000;
	unsigned taken = 0;
	pthread_mutex_lock(&aux_mu);
	while (aux_run) {
		pthread_mutex_unlock(&aux_mu);
		// One slot per wake-up, then sleep: a program thread waiting for
		// the core gets it (the scheduler does not preempt this thread for
		// it). While slots are made, every 100 µs; when enough are free,
		// backing off to 2 ms while buffers are being taken, to 100 ms
		// while none is (the encoder keeps up and they come back: every
		// wake-up takes the core from the program, which in hpcc's
		// RandomAccess at 4 ranks on 2 cores were 3000 wake-ups per rank
		// at 2 ms); when none remain to be made, only the epoch.
		int made = spill_n ? spill_prepare1() : 0;
		unsigned t = __atomic_load_n(&buf_taken, __ATOMIC_RELAXED);
		int busy = t != taken;
		taken = t;
		int64_t now = mono_ns();
		if (now >= next_epoch) {
			dt_bump_epoch();
			next_epoch += aux_epoch_ns;
			if (next_epoch <= now) next_epoch = now + aux_epoch_ns;
		}
		if (made) sleep_ns = 100000;
		else {
			int64_t cap = busy ? 2000000 : 100000000;
			sleep_ns = sleep_ns * 2 < cap ? sleep_ns * 2 : cap;
		}
		int64_t until = spill_n && spill_pending() ? now + sleep_ns : next_epoch;
		if (until > next_epoch) until = next_epoch;
		struct timespec ts = {until / 1000000000, until % 1000000000};
		pthread_mutex_lock(&aux_mu);
		if (aux_run) pthread_cond_timedwait(&aux_cv, &aux_mu, &ts);
	}
	pthread_mutex_unlock(&aux_mu);
	return NULL;
}

// dt_aux_start starts the aux thread with every signal blocked (the
// program's asynchronous signals must reach the program's threads).
void dt_aux_start(int64_t epoch_ns) {
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&aux_cv, &a);
	pthread_condattr_destroy(&a);
	aux_epoch_ns = epoch_ns > 0 ? epoch_ns : 200000000;
	sigset_t all, old;
	sigfillset(&all);
	pthread_mutex_lock(&aux_mu);
	aux_run = 1;
	pthread_sigmask(SIG_SETMASK, &all, &old);
	aux_started = pthread_create(&aux_th, NULL, aux_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&aux_mu);
}

// dt_aux_stop stops the aux thread at the end of tracing (finalize, abort,
// signal, exit). The join is bounded: a thread stuck in a fatal signal's
// handler must not hang the flush that the handler waits for.
void dt_aux_stop(void) {
	pthread_mutex_lock(&aux_mu);
	int started = aux_started;
	aux_started = 0;
	aux_run = 0;
	if (started) pthread_cond_signal(&aux_cv);
	pthread_mutex_unlock(&aux_mu);
	if (!started || pthread_equal(aux_th, pthread_self())) return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 1;
	if (pthread_timedjoin_np(aux_th, NULL, &ts) != 0) pthread_detach(aux_th);
}

// dt_q_fin queues the end of tracing behind every buffer handed over so far.
void dt_q_fin(int reason) { q_push(NULL, 0, 0, reason); }

static void dt_thr_attach_buf(dt_thr *T, char *b) {
	T->buf = T->pos = T->commit = b;
	T->poll = NULL;
	T->end = b ? b + dt_chunk : b;
	dt_slot *ch = chunk_of(b);
	T->chunk_commit = ch ? &ch->commit : NULL;
	if (ch) {
		ch->commit = 0;
		ch->tid = T->tid;
		ch->seq = __atomic_add_fetch(&spill_seq, 1, __ATOMIC_RELAXED);
	}
}

// dt_submit hands the thread's committed records to Go, which owns the buffer
// from then on, and gives the thread a fresh one (dt_buf_get's wait).
static void dt_submit_w(dt_thr *T, int wait) {
	if (T->buf == NULL) return;
	size_t n = T->commit - T->buf;
	if (n == 0) return;
	uint64_t t0 = dt_now();
	char *old = T->buf;
	dt_thr_attach_buf(T, NULL);
	q_push(old, n, T->tid, 0);
	dt_thr_attach_buf(T, dt_buf_get(wait));
	if (T->buf == NULL) __atomic_add_fetch(&dt_drop_gaps, 1, __ATOMIC_RELAXED);
	uint64_t d = dt_now() - t0;
	if (d > dt_max_stall_ticks) dt_max_stall_ticks = d;
	dt_stall_ticks += d;
	dt_flushes++;
	if (buf_limit_mode) { // MaxTraceSize -1: no free buffer means the trace buffer is full
		buf_total += n;
		if (buf_total >= buf_budget || T->buf == NULL) dt_stop(DT_STOP_BUFFER_FULL);
	}
}

static void dt_submit(dt_thr *T) { dt_submit_w(T, 1); }

// dt_room_wait makes room for a record of need bytes before the last record
// of a thread's trace (MPI_Finalize, MPI_Abort), waiting for a free buffer
// whatever DT_FULL_WAIT_NS says (dt_buf_get, wait 2).
void dt_room_wait(dt_thr *T, size_t need) {
	if (dt_state != 1 || need > dt_chunk || (T->buf != NULL && T->pos + need <= T->end)) return;
	if (T->buf != NULL) dt_submit_w(T, 2);
	else dt_thr_attach_buf(T, dt_buf_get(2));
}

// dt_make_room is the slow path of dt_rec_begin: the buffer is full (hand
// it over), or the thread has none since no buffer was free (take one if
// there is one now, without waiting). 0: the call is not recorded, and is
// counted as dropped.
int dt_make_room(dt_thr *T, size_t need) {
	if (need <= dt_chunk && dt_state == 1) {
		if (T->buf != NULL) dt_submit(T);
		else if (dt_buf_ready()) dt_thr_attach_buf(T, dt_buf_get(0));
		if (T->buf != NULL && dt_state == 1) return 1;
	}
	T->dropped++;
	return 0;
}

// dt_epoch_flush runs at the end of dt_rec_end when the epoch moved: it
// hands over the records before the one just committed, [rec, T->pos), and
// moves that one to the fresh buffer with its exit time taken now, after
// the hand-over, so that the flush is counted in the call that triggered it.
// (The record is saved first: once handed over, the old buffer may be
// reused at any time.)
void dt_epoch_flush(dt_thr *T, char *rec) {
	T->epoch = dt_epoch;
	if (dt_state != 1 || T->buf == NULL || rec == T->buf || rec < T->buf || rec > T->pos) return;
	size_t len = T->pos - rec;
	char small[512], *tmp = len <= sizeof small ? small : malloc(len);
	if (tmp == NULL) { // cannot move it: hand it over with the rest
		dt_submit(T);
		return;
	}
	memcpy(tmp, rec, len);
	T->pos = T->commit = rec; // uncommit it
	if (T->chunk_commit) *T->chunk_commit = (uint64_t)(rec - T->buf);
	dt_submit(T);
	if (T->buf != NULL && T->pos == T->commit && len <= (size_t)(T->end - T->pos)) {
		memcpy(T->pos, tmp, len);
		if (len >= sizeof(dt_hdr)) {
			uint64_t t1 = dt_now();
			memcpy(T->pos + offsetof(dt_hdr, t1), &t1, sizeof t1);
		}
		T->pos += len;
		T->commit = T->pos;
		if (T->chunk_commit) *T->chunk_commit = (uint64_t)(T->pos - T->buf);
	} else if (len > 0) {
		T->dropped++;
	}
	if (tmp != small) free(tmp);
}

void dt_stop(int reason) {
	int one = 1;
	if (__atomic_compare_exchange_n(&dt_state, &one, 2, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		dtgo_stopped(reason);
}

dt_thr *dt_enter_slow(void) {
	if (dt_state == 2) {
		dt_thr *T = dt_self;
		if (T && !T->busy) T->dropped++;
	}
	return NULL;
}

// dt_thr_exit hands over the buffer of a thread that ends, so that programs
// creating many threads do not run out of buffers.
static pthread_key_t thr_key;
static pthread_once_t thr_key_once = PTHREAD_ONCE_INIT;

static void dt_thr_exit(void *p) {
	dt_thr *T = p;
	pthread_mutex_lock(&thr_mu);
	char *b = T->buf;
	size_t n = T->commit - T->buf;
	T->buf = T->pos = T->commit = T->end = NULL;
	T->chunk_commit = NULL;
	T->poll = NULL;
	pthread_mutex_unlock(&thr_mu);
	// A few records are copied out and the buffer goes straight back to the
	// free list: a program starting threads one after another must not
	// find every buffer queued behind the encoder (its new threads would
	// drop their calls).
	char *c = b && n > 0 && n <= 16384 ? malloc(n) : NULL;
	if (c) {
		memcpy(c, b, n);
		dt_buf_put(b);
		b = NULL;
	}
	if (dt_state >= 1 && dt_state <= 2) {
		if (c) q_push_kind(c, n, T->tid, 0, DT_Q_COPY);
		else if (b && n > 0) q_push(b, n, T->tid, 0), b = NULL;
	} else {
		free(c);
	}
	if (b) dt_buf_put(b);
	// The small struct stays listed (its dropped count); the rest goes. A
	// later MPI call from this thread (another key's destructor) finds no
	// buffer and records nothing.
	free(T->sites);
	free(T->rscratch);
	free(T->sscratch);
	T->sites = NULL;
	T->rscratch = NULL;
	T->sscratch = NULL;
	T->nrscratch = T->nsscratch = 0;
}

static void thr_key_init(void) { pthread_key_create(&thr_key, dt_thr_exit); }

dt_thr *dt_thr_new(void) {
	pthread_once(&thr_key_once, thr_key_init);
	dt_thr *T = calloc(1, sizeof *T);
	if (!T) return NULL;
	T->sites = calloc(DT_SITE_CACHE, sizeof(dt_site_ent));
	pthread_attr_t a;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		void *lo;
		size_t sz;
		if (pthread_attr_getstack(&a, &lo, &sz) == 0) {
			T->stk_lo = (uintptr_t)lo;
			T->stk_hi = (uintptr_t)lo + sz;
		}
		pthread_attr_destroy(&a);
	}
	T->epoch = dt_epoch;
	T->tid = __atomic_fetch_add(&thr_next, 1, __ATOMIC_RELAXED);
	dt_thr_attach_buf(T, dt_buf_get(1)); // none free: the thread starts by dropping (dt_make_room)
	if (!T->sites) {
		free(T);
		return NULL;
	}
	pthread_mutex_lock(&thr_mu);
	T->next = thr_list;
	thr_list = T;
	pthread_mutex_unlock(&thr_mu);
	dt_self = T;
	pthread_setspecific(thr_key, T);
	return T;
}

// dt_collect hands Go every thread's unsubmitted records at the end of
// tracing (finalize, abort, signal). Other threads may still run in a crash:
// their records up to the last complete one are taken.
void dt_collect(void) {
	pthread_mutex_lock(&thr_mu);
	for (dt_thr *T = thr_list; T; T = T->next) {
		if (T->buf && T->commit > T->buf) {
			char *old = T->buf;
			size_t n = T->commit - T->buf;
			T->buf = T->pos = T->commit = T->end = NULL;
			q_push(old, n, T->tid, 0);
		}
	}
	pthread_mutex_unlock(&thr_mu);
}

uint64_t dt_dropped(void) {
	uint64_t d = 0;
	for (dt_thr *T = thr_list; T; T = T->next) d += T->dropped;
	return d;
}

// ---- call sites: a global table under a mutex; the per-thread cache in
// dt_site makes the lock rare.
#define SITE_CAP (1 << 15)
static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;
static dt_site_ent *site_tab;
static uint32_t site_next = 1; // 0 = empty stack, defined at init

void dt_text_update(void);
int dt_in_text(uintptr_t pc);

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

// ---- datatypes
int dt_tsize_slow(dt_thr *T, MPI_Datatype t) {
	int sz = 0;
	if (t != MPI_DATATYPE_NULL) PMPI_Type_size(t, &sz);
	T->tc_type = t;
	T->tc_size = sz;
	T->tc_gen = dt_type_gen;
	return sz;
}

// ---- requests: scratch copies (MPI nulls completed handles) and kinds.
MPI_Request *dt_req_scratch(dt_thr *T, int n, const MPI_Request *r) {
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
// receives. A completed non-persistent receive is forgotten.
static void dt_status_of(MPI_Request r, MPI_Status *st, int32_t *src, int32_t *tag) {
	*src = *tag = -4;
	uint64_t id = dt_reqid(r);
	int kind = rk_get(id);
	if (!kind) return;
	if (kind == DT_RK_RECV) rk_set(id, 0);
	if (st == NULL || st == MPI_STATUS_IGNORE) return;
	int c = 0;
	PMPI_Test_cancelled(st, &c);
	if (c) return;
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

// ---- fatal signals: ask a Go goroutine (through a pipe, the only
// async-signal-safe way in) to write what was recorded, wait for it a
// bounded time, then chain to the previous handler.
static int sig_pipe = -1;
static struct sigaction sig_old[65];
static volatile int sig_busy;
volatile int dt_flush_done;

static int sig_debug;
static void dbg(const char *what, int sig) {
	if (!sig_debug) return;
	char m[96];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int n = snprintf(m, sizeof m, "dtpa: rank %d %s sig %d state %d at %ld.%03ld\n", dt_rank_world, what, sig, dt_state,
		(long)ts.tv_sec % 1000, ts.tv_nsec / 1000000);
	if (write(2, m, n) < 0) return;
}

extern pid_t dt_pid;

static void dt_on_signal(int sig, siginfo_t *si, void *ctx) {
	dbg("handler", sig);
	if (getpid() != dt_pid) { // a forked child: nothing of the tracer works there
		dt_state = 3;
		sig_busy = 0;
		dt_flush_done = 1;
	}
	// Every thread that takes a fatal signal waits for the one flush: the
	// launcher may signal the process more than once, and the default action
	// of a second signal must not cut the first flush short.
	if (dt_state >= 1 && dt_state <= 2 || sig_busy) {
		if (__atomic_exchange_n(&sig_busy, 1, __ATOMIC_SEQ_CST) == 0) {
			unsigned char c = (unsigned char)sig;
			if (write(sig_pipe, &c, 1) != 1) dt_flush_done = 1;
		}
		struct timespec ms = {0, 1000000};
		for (int i = 0; i < 5000 && !dt_flush_done; i++) nanosleep(&ms, NULL);
	}
	struct sigaction *o = &sig_old[sig];
	if ((o->sa_flags & SA_SIGINFO) && o->sa_sigaction) {
		sigaction(sig, o, NULL);
		o->sa_sigaction(sig, si, ctx);
		return;
	}
	if (o->sa_handler == SIG_IGN) return;
	if (o->sa_handler != SIG_DFL && o->sa_handler) {
		sigaction(sig, o, NULL);
		o->sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGABRT) raise(sig);
	// synchronous signals: returning re-executes the fault under SIG_DFL
}

// The watcher is a plain thread blocked in read(2), with every signal
// blocked: it wakes at once when a handler writes, whatever the Go
// scheduler is doing, and calls into Go to write the trace.
static void *sig_watcher(void *arg) {
	prctl(PR_SET_NAME, "dtpa-signals");
	int fd = (int)(intptr_t)arg;
	unsigned char c;
	for (;;) {
		ssize_t n = read(fd, &c, 1);
		if (n == 1) break;
		if (n == 0 || (n < 0 && errno != EINTR)) return NULL;
	}
	dbg("watcher", c);
	dtgo_signal();
	dt_flush_done = 1;
	dbg("flushed", c);
	return NULL;
}

void dt_install_signals(void) {
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	int err = pthread_create(&th, NULL, sig_watcher, (void *)(intptr_t)p[0]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) return;
	pthread_detach(th);
	sig_pipe = p[1];
	sig_debug = getenv("DT_DEBUG") != NULL;
	int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = dt_on_signal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, &sig_old[sigs[i]]);
	}
}

void dt_bump_epoch(void) { __atomic_add_fetch(&dt_epoch, 1, __ATOMIC_RELAXED); }
void dt_finish_state(void) { dt_state = 3; }
