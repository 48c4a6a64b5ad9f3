// Aux thread: a thread at the program's priority that makes spill slots
// ahead of need and moves the epoch (periodic hand-over). The writer, at
// nice 10, could not make slots beside a busy rank (the rank then made
// them itself in its hand-overs: stalls of 1-4 ms, measured).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>

static pthread_mutex_t aux_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t aux_cv;
static pthread_t aux_th;
static int aux_run, aux_started; // under aux_mu
static int aux_sleeping; // under aux_mu; read racily by dt_aux_nudge
static int64_t aux_epoch_ns;
// dt_aux_cpu_ns is the aux thread's CPU time over its life, set as it ends
// (the footer's message: slot making and the epoch, on the ranks' cores).
int64_t dt_aux_cpu_ns;
// dt_aux_wakeups counts the aux thread's wake-ups (for the footer).
uint64_t dt_aux_wakeups;

// AUX_WINDOW_NS is the period over which the aux thread counts the buffers
// taken, to keep as many ahead (dt_spill_prepare1): its longest sleep while
// buffers are being taken, so that the margin covers one such sleep.
#define AUX_WINDOW_NS 2000000

static void *aux_main(void *arg) {
	(void)arg;
	prctl(PR_SET_NAME, "dtpa-aux");
	int64_t now = dt_mono_ns(), next_epoch = now + aux_epoch_ns, sleep_ns = 100000, win_from = now;
	unsigned taken = dt_buf_taken(), win_taken = taken, need = 0;
	pthread_mutex_lock(&aux_mu);
	while (aux_run) {
		pthread_mutex_unlock(&aux_mu);
		__atomic_add_fetch(&dt_aux_wakeups, 1, __ATOMIC_RELAXED);
		// need: the buffers taken in the busiest recent window of at least
		// AUX_WINDOW_NS. Without the encoder's batches (dt_q_batch) the
		// thread wakes every AUX_WINDOW_NS while buffers are taken, and a
		// window that began with a long sleep counts all taken in it (a
		// burst after an idle spell is not averaged away); with them it
		// sleeps until the epoch or a nudge, and the count is per
		// AUX_WINDOW_NS, rounded up. It rises at once and falls by a
		// quarter of the difference per window, so that a short lull keeps
		// the margin.
		unsigned t = dt_buf_taken();
		now = dt_mono_ns();
		if (now - win_from >= AUX_WINDOW_NS) {
			unsigned n = t - win_taken;
			if (dt_q_batch) n = (unsigned)(((uint64_t)n * AUX_WINDOW_NS + (uint64_t)(now - win_from) - 1) / (uint64_t)(now - win_from));
			need = n >= need ? n : need - (need - n + 3) / 4;
			win_from = now;
			win_taken = t;
		}
		// One slot per wake-up, then sleep: a program thread waiting for
		// the core gets it (the scheduler does not preempt this thread for
		// it). While more are wanted, every 100 µs; once enough are free,
		// every AUX_WINDOW_NS while buffers are being taken (the margin
		// covers that long), backing off to 100 ms while none is (the
		// encoder keeps up and they come back); when none remain to be
		// made, only the epoch. Every wake-up takes the core from the
		// program: in hpcc's RandomAccess at 4 ranks on 2 cores, 3000
		// wake-ups per rank at 2 ms; a 100 µs pause after every slot made,
		// then doubling, was ~5 wake-ups per buffer of a ping-pong. With
		// the encoder's batches, once enough are free it sleeps until the
		// epoch, or until a thread finds free buffers running low
		// (dt_aux_nudge): ~500 wake-ups a second fewer while a ping-pong
		// hands buffers over.
		int made = dt_spill_prepare1(need);
		int busy = t != taken;
		taken = t;
		if (now >= next_epoch) {
			__atomic_add_fetch(&dt_epoch, 1, __ATOMIC_RELAXED); // a periodic hand-over (dt_rec_end)
			if (dt_q_batch) dt_q_nudge(); // and what is queued reaches the file
			next_epoch += aux_epoch_ns;
			if (next_epoch <= now) next_epoch = now + aux_epoch_ns;
		}
		if (made == 2) sleep_ns = 100000;
		else if (dt_q_batch) sleep_ns = aux_epoch_ns;
		else if (made) sleep_ns = AUX_WINDOW_NS;
		else {
			int64_t cap = busy ? AUX_WINDOW_NS : 100000000;
			sleep_ns = sleep_ns * 2 < cap ? sleep_ns * 2 : cap;
		}
		int64_t until = dt_spill_left() ? now + sleep_ns : next_epoch;
		if (until > next_epoch) until = next_epoch;
		struct timespec ts = {until / 1000000000, until % 1000000000};
		pthread_mutex_lock(&aux_mu);
		if (aux_run) {
			aux_sleeping = 1;
			pthread_cond_timedwait(&aux_cv, &aux_mu, &ts);
			aux_sleeping = 0;
		}
	}
	pthread_mutex_unlock(&aux_mu);
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		dt_aux_cpu_ns = (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
			(int64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
	return NULL;
}

// dt_aux_nudge wakes the aux thread when it sleeps and slots remain to be
// made: a program thread found free buffers running low (dt_buf_get).
void dt_aux_nudge(void) {
	if (!__atomic_load_n(&aux_sleeping, __ATOMIC_RELAXED) || !dt_spill_left()) return;
	pthread_mutex_lock(&aux_mu);
	if (aux_sleeping) pthread_cond_signal(&aux_cv);
	pthread_mutex_unlock(&aux_mu);
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
