// Per-thread buffers: each thread records into a buffer of its own
// (dt_wrap.h) and hands it over to the writer when it is full, when the epoch moved
// (periodic flush) or when the thread ends; the tracing state (dt_state);
// the list of threads, whose records are collected at the end of tracing.
// The free list the buffers come from is dt_buf.c.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_writer.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(offsetof(dt_thr, tid) <= 64, "dt_thr: the per-call fields must fit one cache line");

__thread dt_thr *dt_self __attribute__((tls_model("initial-exec")));
volatile int dt_state; // DT_ST_*
volatile uint64_t dt_epoch;
uint64_t dt_max_stall_ticks, dt_stall_ticks, dt_flushes;
uint64_t dt_drop_gaps; // (atomic) times a thread started dropping calls for want of a free buffer

static pthread_mutex_t thr_mu = PTHREAD_MUTEX_INITIALIZER;
static dt_thr *thr_list;
static uint32_t thr_next;

// dt_thr_attach_buf gives thread T buffer b (NULL: none) to record into.
// T publishes its calls there from now on (DT_PUB_*): where it did, no
// call is in progress any more (a hand-over happens after the call
// returned).
static void dt_thr_attach_buf(dt_thr *T, char *b) {
	if (T->chunk_commit) T->chunk_commit[DT_PUB_FID] = 0;
	T->buf = T->pos = T->commit = b;
	T->poll = T->poll_next = NULL;
	T->end = b ? b + dt_chunk : b;
	volatile uint64_t *c = dt_spill_claim(b, T->tid);
	T->chunk_commit = c ? c : T->commit_sink;
}

// dt_submit hands the thread's committed records to the writer, which owns the buffer
// from then on, and gives the thread a fresh one (dt_buf_get's wait).
static void dt_submit_w(dt_thr *T, int wait) {
	if (T->buf == NULL) return;
	size_t n = T->commit - T->buf;
	if (n == 0) return;
	uint64_t t0 = dt_now();
	char *old = T->buf;
	dt_thr_attach_buf(T, NULL);
	dt_q_push(old, n, T->tid, 0, DT_Q_BUF);
	dt_thr_attach_buf(T, dt_buf_get(wait));
	if (T->buf == NULL) __atomic_add_fetch(&dt_drop_gaps, 1, __ATOMIC_RELAXED);
	uint64_t d = dt_now() - t0;
	if (d > dt_max_stall_ticks) dt_max_stall_ticks = d;
	dt_stall_ticks += d;
	dt_flushes++;
	if (dt_buf_spend(n, T->buf == NULL)) dt_stop(DT_STOP_BUFFER_FULL);
}

static void dt_submit(dt_thr *T) { dt_submit_w(T, 1); }

// dt_room_wait makes room for a record of need bytes before the last record
// of a thread's trace (MPI_Finalize, MPI_Abort), waiting for a free buffer
// whatever DT_FULL_WAIT_NS says (dt_buf_get, wait 2).
void dt_room_wait(dt_thr *T, size_t need) {
	if (dt_state != DT_ST_TRACING || need > dt_chunk || (T->buf != NULL && T->pos + need <= T->end)) return;
	if (T->buf != NULL) dt_submit_w(T, 2);
	else dt_thr_attach_buf(T, dt_buf_get(2));
}

// dt_make_room is the slow path of dt_rec_begin: the buffer is full (hand
// it over), or the thread has none since no buffer was free (take one if
// there is one now, without waiting). 0: the call is not recorded, and is
// counted as dropped.
int dt_make_room(dt_thr *T, size_t need) {
	if (need <= dt_chunk && dt_state == DT_ST_TRACING) {
		if (T->buf != NULL) dt_submit(T);
		else if (dt_buf_ready()) dt_thr_attach_buf(T, dt_buf_get(0));
		if (T->buf != NULL && dt_state == DT_ST_TRACING) return 1;
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
	if (dt_state != DT_ST_TRACING || T->buf == NULL || rec == T->buf || rec < T->buf || rec > T->pos) return;
	size_t len = T->pos - rec;
	char small[512], *tmp = len <= sizeof small ? small : malloc(len);
	if (tmp == NULL) { // cannot move it: hand it over with the rest
		dt_submit(T);
		return;
	}
	memcpy(tmp, rec, len);
	T->pos = T->commit = rec; // uncommit it
	*T->chunk_commit = (uint64_t)(rec - T->buf);
	dt_submit(T);
	if (T->buf != NULL && T->pos == T->commit && len + 4 <= (size_t)(T->end - T->pos)) {
		dt_hdr *H = (dt_hdr *)T->pos;
		memcpy(T->pos, tmp, len);
		T->pos += len;
		if (len >= sizeof(dt_hdr)) dt_rec_exit(T, H, dt_now());
		T->commit = T->pos;
		*T->chunk_commit = (uint64_t)(T->pos - T->buf);
	} else if (len > 0) {
		T->dropped++;
	}
	if (tmp != small) free(tmp);
}

// dt_rec_long sets the exit of the record H being written (its attributes
// end at T->pos) to t1, out of line: a duration that does not fit the
// header's 32 bits, or a header that already has A_LONG, has the upper half
// after the header, the attributes written so far moved up by 4 bytes (a
// record reserves DT_HDR_MAX for its header, so there is room).
void dt_rec_long(dt_thr *T, dt_hdr *H, uint64_t t1) {
	uint64_t d = t1 - H->t0;
	char *a = (char *)(H + 1);
	if (!(H->attr & A_LONG)) {
		if (d <= UINT32_MAX) {
			H->dur = (uint32_t)d;
			return;
		}
		memmove(a + 4, a, (size_t)(T->pos - a));
		T->pos += 4;
		H->attr |= A_LONG;
	}
	H->dur = (uint32_t)d;
	uint32_t hi = (uint32_t)(d >> 32);
	memcpy(a, &hi, 4);
}

// dt_sbytes_wide writes a send byte count that does not fit 32 bits, as a
// u64 (A_WIDE).
void dt_sbytes_wide(dt_thr *T, dt_hdr *H, uint64_t v) {
	H->attr |= A_SBYTES | A_WIDE;
	dt_put64(T, v);
}

// dt_rbytes_wide writes a receive byte count as a u64 (A_WIDE): this one
// does not fit 32 bits, or the send count did not. A send count written
// as a u32 just before (SBYTES precedes RBYTES) is widened first.
void dt_rbytes_wide(dt_thr *T, dt_hdr *H, uint64_t v) {
	H->attr |= A_RBYTES;
	if (!(H->attr & A_WIDE)) {
		H->attr |= A_WIDE;
		if (H->attr & A_SBYTES) {
			uint32_t s;
			memcpy(&s, T->pos - 4, 4);
			T->pos -= 4;
			dt_put64(T, s);
		}
	}
	dt_put64(T, v);
}

void dt_stop(int reason) {
	int tracing = DT_ST_TRACING;
	if (__atomic_compare_exchange_n(&dt_state, &tracing, DT_ST_STOPPED, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		dtw_stopped(reason);
}

dt_thr *dt_enter_slow(void) {
	if (dt_state == DT_ST_STOPPED) {
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
	T->chunk_commit = T->commit_sink;
	T->poll = T->poll_next = NULL;
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
	if (dt_state == DT_ST_TRACING || dt_state == DT_ST_STOPPED) {
		if (c) dt_q_push(c, n, T->tid, 0, DT_Q_COPY);
		else if (b && n > 0) dt_q_push(b, n, T->tid, 0, DT_Q_BUF), b = NULL;
	} else {
		free(c);
	}
	if (b) dt_buf_put(b);
	// The small struct stays listed (its dropped count); the rest goes. A
	// later MPI call from this thread (another key's destructor) finds T
	// busy and is not recorded: dt_make_room would otherwise give it a
	// fresh buffer, and its call site a walk without cache or memo.
	T->busy = 1;
	free(T->sites);
	free(T->memo);
	free(T->rscratch);
	free(T->sscratch);
	T->sites = NULL;
	T->memo = NULL;
	T->rscratch = NULL;
	T->sscratch = NULL;
	T->nrscratch = T->nsscratch = 0;
}

static void thr_key_init(void) { pthread_key_create(&thr_key, dt_thr_exit); }

// main_stack gives the main thread's stack bounds without
// pthread_getattr_np, which for the main thread reads and parses
// /proc/self/maps (~0.8 M instructions and 50-400 µs in an MPI process):
// the stack ends at the page holding __libc_stack_end (argc, argv and the
// environment above it are on the same mapping) and may grow down to the
// stack limit. Its other threads ask pthread_getattr_np, cheap for them.
extern void *__libc_stack_end;
static int main_stack(uintptr_t *lo, uintptr_t *hi) {
	if (getpid() != (pid_t)syscall(SYS_gettid) || !__libc_stack_end) return 0;
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) != 0) return 0;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t h = ((uintptr_t)__libc_stack_end + pg) & ~(pg - 1);
	uintptr_t sz = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= h ? h / 2 : (uintptr_t)rl.rlim_cur;
	*lo = h - sz;
	*hi = h;
	return 1;
}

dt_thr *dt_thr_new(void) {
	pthread_once(&thr_key_once, thr_key_init);
	// T's hot fields share one cache line; a memo entry, its size a power
	// of two, starts at a line (or, 32 bytes at depth 1, fills half of one):
	// its words (depth 4: 128 bytes) take the fewest lines, and the
	// probe's index is a shift.
	dt_thr *T = aligned_alloc(64, (sizeof *T + 63) & ~(size_t)63);
	if (!T) return NULL;
	memset(T, 0, sizeof *T);
	T->chunk_commit = T->commit_sink;
	T->sites = calloc(DT_SITE_CACHE, sizeof(dt_site_ent));
	size_t msz = sizeof(dt_memo) + DT_MEMO_WORDS(dt_depth) * sizeof(dt_word);
	while (((size_t)1 << T->memo_shift) < msz) T->memo_shift++;
	T->memo = aligned_alloc(64, (size_t)DT_MEMO << T->memo_shift);
	if (T->memo) memset(T->memo, 0, (size_t)DT_MEMO << T->memo_shift);
	if (!T->sites || !T->memo) {
		free(T->sites);
		free(T->memo);
		free(T);
		return NULL;
	}
	pthread_attr_t a;
	if (!main_stack(&T->stk_lo, &T->stk_hi) && pthread_getattr_np(pthread_self(), &a) == 0) {
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
	pthread_mutex_lock(&thr_mu);
	T->next = thr_list;
	thr_list = T;
	pthread_mutex_unlock(&thr_mu);
	dt_self = T;
	pthread_setspecific(thr_key, T);
	return T;
}

// dt_collect hands the writer every thread's unsubmitted records at the end of
// tracing (finalize, abort, signal). Other threads may still run in a crash:
// their records up to the last complete one are taken.
void dt_collect(void) {
	pthread_mutex_lock(&thr_mu);
	for (dt_thr *T = thr_list; T; T = T->next) {
		if (T->buf && T->commit > T->buf) {
			char *old = T->buf;
			size_t n = T->commit - T->buf;
			T->buf = T->pos = T->commit = T->end = NULL;
			dt_q_push(old, n, T->tid, 0, DT_Q_BUF);
		}
	}
	pthread_mutex_unlock(&thr_mu);
}

// dt_unfinished lists, in out (at most max), the threads' MPI calls in
// progress (DT_PUB_*): those a fatal signal interrupted, or that waited
// while it arrived. The other threads may run on meanwhile: what they
// publish is read as it is.
int dt_unfinished(dt_unf *out, int max) {
	int n = 0;
	pthread_mutex_lock(&thr_mu);
	for (dt_thr *T = thr_list; T && n < max; T = T->next) {
		volatile uint64_t *p = T->chunk_commit;
		uint64_t f = p ? p[DT_PUB_FID] : 0;
		if (f == 0) continue;
		dt_unf *u = &out[n++];
		u->tid = T->tid, u->fid = (uint32_t)(f - 1), u->t0 = p[DT_PUB_T0], u->pc = (uintptr_t)p[DT_PUB_PC];
		u->py_ts = T->py_ts;
	}
	pthread_mutex_unlock(&thr_mu);
	return n;
}

// dt_stamp_signal publishes, for every thread, that a fatal signal
// arrived now (DT_PUB_END): should the process be killed before its
// footer is written, dtrun still knows how long its calls in progress had
// run. Async-signal-safe: the list is read without its lock (threads are
// only ever prepended, and a thread's struct outlives it).
void dt_stamp_signal(void) {
	uint64_t now = dt_now();
	for (dt_thr *T = __atomic_load_n(&thr_list, __ATOMIC_ACQUIRE); T; T = T->next) {
		volatile uint64_t *p = T->chunk_commit;
		if (p) p[DT_PUB_END] = now;
	}
}

uint64_t dt_dropped(void) {
	uint64_t d = 0;
	for (dt_thr *T = thr_list; T; T = T->next) d += T->dropped;
	return d;
}


// dt_finish_state ends tracing (from the writer, at a fatal signal).
void dt_finish_state(void) { dt_state = DT_ST_FINISHED; }
