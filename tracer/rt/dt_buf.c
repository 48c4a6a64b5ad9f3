// Buffers: a free list shared with the writer, which returns buffers it
// has written (dt_buf_put). The total is bounded by TraceBufSize. A thread that
// fills its buffer when none is free and the budget is spent waits for one
// (README, "When the encoder cannot keep up"): the trace stays complete and
// the wait shows inside the MPI call that filled the buffer. Dropping calls
// instead would keep the program's pace but could make the analyzer pair
// the wrong messages, so it is opt-in: DT_FULL_WAIT_NS=n waits up to n ns,
// then drops the thread's calls (counted, reported in the footer) until a
// buffer is free again (0: drop at once; default -1: wait as long as it
// takes). The encoder's priority is managed here too, since a thread waiting
// for a free buffer waits for the encoder. Fresh buffers are spill slots
// when there is a spill file (dt_spill.c); the per-thread side is dt_thr.c.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>

size_t dt_chunk = 1 << 20;
pthread_mutex_t dt_buf_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t buf_cv;
static void *buf_free[4096];
int dt_buf_nfree, dt_buf_nalloc, dt_buf_max = 16; // under dt_buf_mu; read without it by dt_buf_ready
// buf_taken counts the buffers handed out (dt_buf_get): the aux thread backs
// off further while it does not move. (Under dt_buf_mu; read without it.)
static unsigned buf_taken;
static int buf_waiting; // threads waiting for a free buffer (under dt_buf_mu)
static int64_t buf_limit_mode; // MaxTraceSize == -1: stop when TraceBufSize bytes were traced
static uint64_t buf_total, buf_budget;
static int64_t buf_wait_ns = -1;

size_t dt_buf_chunk(void) { return dt_chunk; }
int dt_buf_slots(void) { return dt_buf_max; }

void dt_buf_setup(size_t chunk, uint64_t total, int64_t max_trace_mb) {
	dt_chunk = chunk;
	dt_buf_max = (int)(total / chunk);
	if (dt_buf_max < 2) dt_buf_max = 2;
	if (dt_buf_max > 4000) dt_buf_max = 4000;
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

// The writer runs at nice 10 (dt_cw.c, writer), so that it takes
// short slices of a core it shares with a computing rank. But a thread
// waiting for a free buffer waits for the encoder, and at nice 10 the
// encoder got ~5 % of a core that other processes also wanted: one buffer's
// encoding (0.3 ms of CPU) took 2-36 ms (tight loop, schedstat of both
// threads). So while a thread waits, the encoder runs at that thread's
// priority, and returns to its own once it frees a buffer that nobody waits
// for. Raising a priority needs CAP_SYS_NICE (or RLIMIT_NICE): without it
// the encoder stays at nice 10. (Under dt_buf_mu.)
static int enc_tid, enc_nice, enc_boosted, enc_boost_ok = 1, enc_final;

// dt_enc_register names the writer's thread and its nice value (on that
// thread).
void dt_enc_register(int nice) {
	// Named, like the tracer's other threads, so that top -H, perf and
	// /proc/PID/task/*/comm tell the tracer's threads from the program's.
	prctl(PR_SET_NAME, "dtpa-encoder");
	pthread_mutex_lock(&dt_buf_mu);
	enc_tid = gettid();
	enc_nice = nice;
	pthread_mutex_unlock(&dt_buf_mu);
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
	pthread_mutex_lock(&dt_buf_mu);
	enc_final = 1;
	if (enc_tid && !enc_boosted && enc_boost_ok) {
		errno = 0;
		int prog = getpriority(PRIO_PROCESS, dt_pid); // the main thread's
		if (errno == 0 && (enc_idle || prog < enc_nice) && enc_set(prog, 0) == 0) enc_boosted = 1;
	}
	pthread_mutex_unlock(&dt_buf_mu);
}

// dt_buf_get returns a free buffer, else a new one while fewer than dt_buf_max
// exist, else NULL — at once, or after waiting buf_wait_ns when wait is 1.
// With wait 2 it waits (up to 5 s, or as long as buf_wait_ns says when that
// is longer) even when DT_FULL_WAIT_NS says to drop: for the records that
// end a thread's trace (MPI_Finalize, MPI_Abort), which a dropping mode
// would otherwise lose at the very end, where waiting costs nothing.
// The aux thread keeps spill slots ready (dt_spill_prepare1); when it falls
// behind, the program thread makes one itself but only reserves its space
// (~0.05 ms for 128 KB) and takes the page faults while recording, rather
// than all of it in one stall. (Dropping calls there instead lost 2-20 % of a ping-pong's
// events while the budget was far from spent.)
char *dt_buf_get(int wait) {
	pthread_mutex_lock(&dt_buf_mu);
	if (dt_buf_nfree == 0 && dt_buf_nalloc >= dt_buf_max && wait && (buf_wait_ns != 0 || wait == 2)) {
		dt_q_wake(); // the encoder may be asleep with full buffers queued
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t w = buf_wait_ns > 0 ? buf_wait_ns : 3600 * (int64_t)1000000000;
		if (wait == 2 && buf_wait_ns >= 0 && w < 5 * (int64_t)1000000000) w = 5 * (int64_t)1000000000;
		ts.tv_sec += w / 1000000000;
		ts.tv_nsec += w % 1000000000;
		if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
		buf_waiting++;
		enc_boost();
		while (dt_buf_nfree == 0 && pthread_cond_timedwait(&buf_cv, &dt_buf_mu, &ts) == 0) {
		}
		buf_waiting--;
		// The last waiter takes the lent priority back at once: under
		// SCHED_IDLE the encoder then gives way to this thread.
		if (enc_idle && enc_boosted && buf_waiting == 0 && !enc_final && enc_set(enc_nice, 1) == 0) enc_boosted = 0;
	}
	char *b = NULL;
	int fresh = 0;
	buf_taken++;
	if (dt_buf_nfree > 0) b = buf_free[--dt_buf_nfree];
	else if (dt_buf_nalloc < dt_buf_max) {
		fresh = 1;
		dt_buf_nalloc++;
	}
	int low = dt_buf_nfree <= 1;
	pthread_mutex_unlock(&dt_buf_mu);
	// Free buffers run low before the encoder's batch is complete, or
	// before the aux thread's next turn (dt_q_batch): wake them now.
	if (low && dt_q_batch) {
		dt_q_nudge();
		dt_aux_nudge();
	}
	if (fresh) {
		if ((b = dt_spill_make(0)) == NULL) b = malloc(dt_chunk); // no spill file, or no space left in it
		if (b == NULL) __atomic_sub_fetch(&dt_buf_nalloc, 1, __ATOMIC_RELAXED);
	}
	return b;
}

// dt_buf_put returns buffer b to the free list (a plain one is freed when
// the list is full).
void dt_buf_put(void *b) {
	int slot = dt_spill_done(b); // written (or deliberately dropped): nothing to recover
	pthread_mutex_lock(&dt_buf_mu);
	if (dt_buf_nfree < (int)(sizeof buf_free / sizeof buf_free[0])) {
		buf_free[dt_buf_nfree++] = b;
		b = NULL;
	}
	pthread_cond_signal(&buf_cv);
	pthread_mutex_unlock(&dt_buf_mu);
	if (b && !slot) free(b);
}

// dt_buf_reserve counts one more buffer for a spill slot about to be made
// ahead of need, if fewer than ahead buffers are free or queued for the
// encoder (which frees them), slots remain to be made and the total allows
// one more (dt_spill_prepare1). The slot then goes to the free list with
// dt_buf_add.
int dt_buf_reserve(int ahead) {
	pthread_mutex_lock(&dt_buf_mu);
	int go = dt_buf_nfree + (int)dt_q_buffers() < ahead && dt_spill_left() && dt_buf_nalloc < dt_buf_max;
	if (go) dt_buf_nalloc++;
	pthread_mutex_unlock(&dt_buf_mu);
	return go;
}

// dt_buf_add puts the buffer reserved by dt_buf_reserve on the free list,
// or gives the reservation back when b is NULL (no slot could be made).
void dt_buf_add(char *b) {
	pthread_mutex_lock(&dt_buf_mu);
	if (b) {
		buf_free[dt_buf_nfree++] = b;
		pthread_cond_signal(&buf_cv);
	} else {
		dt_buf_nalloc--;
	}
	pthread_mutex_unlock(&dt_buf_mu);
}

unsigned dt_buf_taken(void) { return __atomic_load_n(&buf_taken, __ATOMIC_RELAXED); }

// dt_buf_spend counts n bytes handed over against the budget when
// MaxTraceSize is -1, and tells whether tracing must stop: the budget is
// spent, or the thread got no free buffer (none means the trace buffer is
// full). Always 0 otherwise.
int dt_buf_spend(size_t n, int none) {
	if (!buf_limit_mode) return 0;
	buf_total += n;
	return buf_total >= buf_budget || none;
}

// dt_buf_done returns a buffer the writer has written, then
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
static int64_t enc_ran_from; // when the encoder last slept or yielded (its thread only)
static int64_t enc_yield_ns = -2; // -2: not read yet

void dt_buf_done(void *b) {
	pthread_mutex_lock(&dt_buf_mu);
	int waiting = buf_waiting;
	if (enc_boosted && !waiting && !enc_final) {
		enc_set(enc_nice, enc_idle);
		enc_boosted = 0;
	}
	pthread_mutex_unlock(&dt_buf_mu);
	dt_buf_put(b);
	if (enc_yield_ns == -2) {
		const char *y = getenv("DT_ENC_YIELD_NS");
		enc_yield_ns = y && *y ? strtoll(y, NULL, 10) : -1;
	}
	if (waiting || (enc_yield_ns >= 0 && dt_mono_ns() - enc_ran_from >= enc_yield_ns)) {
		sched_yield();
		enc_ran_from = dt_mono_ns();
	}
}

// dt_enc_slept notes that the encoder just slept (dt_q_pop).
void dt_enc_slept(void) { enc_ran_from = dt_mono_ns(); }
