// Hand-over queue: full buffers, definitions and the writer's own jobs go
// to the writer's thread (dt_cw.c) through this queue, which it drains
// (dt_q_pop). The work that must keep the program's priority (spill
// slots, the epoch tick) is a thread of its own (dt_aux.c).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <pthread.h>
#include <stdlib.h>

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
static unsigned q_nbuf; // buffers queued (under q_mu; read racily by dt_q_buffers)

// dt_q_batch, when not 0, is how many buffers wait in the queue before a
// hand-over wakes the encoder, which then writes them all in one turn on
// the core (dt_spill_prepare sets it when buffers are spill slots, whose
// records survive a kill unwritten). 0: the encoder polls (dt_q_pop).
// Why: on a core that the rank keeps busy (both ranks of a ping-pong
// spin in MPI), each turn of the writer is a preemption of the rank:
// polling every 100 µs while buffers came made ~1260 preemptions of each
// rank per million calls of a 0-byte ping-pong (sched_switch events),
// ~60 ns per call of its time.
unsigned dt_q_batch DT_HIDDEN;

// dt_q_wake wakes the encoder. A program thread calls it only where it is
// about to sleep anyway (waiting for a free buffer) or at the end of
// tracing: a wake-up at every hand-over let the woken threads preempt the
// program in the middle of it (stalls of 1-50 ms in a ping-pong, measured).
void dt_q_wake(void) {
	pthread_mutex_lock(&q_mu);
	if (q_sleeping) pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

// dt_q_nudge wakes the encoder if it sleeps with entries queued: free
// buffers run low before a batch is complete (dt_buf_get), or the epoch
// moves (dt_aux.c), so that what was handed over before reaches the file
// within an epoch.
void dt_q_nudge(void) {
	if (!__atomic_load_n(&q_sleeping, __ATOMIC_RELAXED)) return;
	pthread_mutex_lock(&q_mu);
	if (q_sleeping && q_head != q_tail) pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

// dt_q_buffers tells how many buffers are queued (racily).
unsigned dt_q_buffers(void) { return __atomic_load_n(&q_nbuf, __ATOMIC_RELAXED); }

static inline int q_isbuf(int fin, int kind) { return !fin && (kind == DT_Q_BUF || kind == DT_Q_COPY); }

// dt_q_push queues an entry of a kind (DT_Q_*), or the end of tracing (fin).
void dt_q_push(void *buf, size_t n, uint32_t tid, int fin, int kind) {
	pthread_mutex_lock(&q_mu);
	while (q_tail - q_head >= Q_CAP) { // cannot happen: fewer buffers than slots
		pthread_mutex_unlock(&q_mu);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		pthread_mutex_lock(&q_mu);
	}
	q_ent[q_tail++ % Q_CAP] = (dt_qent){buf, n, tid, fin, kind};
	int batch = 0;
	if (q_isbuf(fin, kind)) batch = ++q_nbuf >= dt_q_batch && dt_q_batch;
	if ((fin || kind == DT_Q_GO || batch) && q_sleeping) pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

// dt_q_kick tells the writer that it has a job of its own queued
// (clock-sync samples), in order with the buffers handed over before.
void dt_q_kick(void) { dt_q_push(NULL, 0, 0, 0, DT_Q_GO); }

// Definitions travel through the same queue, ahead of the buffers holding
// events that use them, so that defining a call site or a communicator
// costs the program no wait for the writer.
void dt_q_def_site(uint32_t id, const uintptr_t *pcs, int n) {
	uint64_t *p = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
	if (!p) return;
	for (int i = 0; i < n; i++) p[i] = pcs[i];
	dt_q_push(p, (size_t)n, id, 0, DT_Q_SITE);
}

void dt_q_def_comm(uint32_t local, uint64_t id, const uint32_t *mem, int nm, const uint32_t *rem, int nr, int inter,
	uint32_t parent, int fid) {
	// Layout read by the writer (dt_cw.c): u32 local, u32 nm, u32 nr, u32 inter, u32 parent, u32 fid,
	// u64 id, nm + nr × u32.
	uint32_t *p = malloc(32 + 4 * (size_t)(nm + nr));
	if (!p) return;
	p[0] = local, p[1] = nm, p[2] = nr, p[3] = inter, p[4] = parent, p[5] = fid;
	memcpy(p + 6, &id, 8);
	if (nm) memcpy(p + 8, mem, 4 * (size_t)nm);
	if (nr) memcpy(p + 8 + nm, rem, 4 * (size_t)nr);
	dt_q_push(p, 0, 0, 0, DT_Q_COMM);
}

// dt_q_pop waits for the next entry and tells whether more are queued
// behind it (called by the writer). With dt_q_batch it sleeps until a
// batch of buffers is queued, free buffers run low, the epoch moves
// (dt_q_nudge), a thread waits for a free buffer, a job of the writer's comes
// (dt_q_kick) or tracing ends; at most a second. Without (no spill slots:
// a buffer is safe only once written), it polls, every 100 µs while
// entries keep coming, backing off to 50 ms when idle, and is woken only
// by the last four. Buffers that arrive while it sleeps wait in the queue,
// which costs only free buffers (a thread that runs out wakes it); each
// wake-up costs the program its core for a moment (5 ms: 2000 wake-ups per
// rank in hpcc at 4 ranks on 2 cores, when it polled).
//
// dt_q_waits counts its sleeps, dt_q_idle those after which the queue was
// still empty (the footer's message; under q_mu, read after the end).
uint64_t dt_q_waits, dt_q_idle;
int dt_q_pop(void **buf, size_t *n, uint32_t *tid, int *fin, int *kind) {
	static int64_t sleep_ns = 100000;
	pthread_mutex_lock(&q_mu);
	while (q_head == q_tail) {
		dt_q_waits++;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		if (dt_q_batch) ts.tv_sec++;
		else ts.tv_nsec += sleep_ns;
		if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
		q_sleeping = 1;
		pthread_cond_timedwait(&q_cv, &q_mu, &ts);
		q_sleeping = 0;
		dt_enc_slept();
		if (q_head == q_tail) {
			dt_q_idle++;
			if (sleep_ns < 50000000) sleep_ns *= 2;
		}
	}
	dt_qent e = q_ent[q_head++ % Q_CAP];
	if (q_isbuf(e.fin, e.kind)) q_nbuf--;
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


// dt_q_fin queues the end of tracing behind every buffer handed over so far.
void dt_q_fin(int reason) { dt_q_push(NULL, 0, 0, reason, DT_Q_BUF); }
