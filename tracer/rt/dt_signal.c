// Fatal signals: ask a watcher thread (through a pipe, the only
// async-signal-safe way in) to have what was recorded written, wait for it a
// bounded time, then chain to the previous handler.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_writer.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/prctl.h>

static int sig_pipe = -1;
static struct sigaction sig_old[65];
static volatile int sig_busy;
volatile int dt_flush_done;
dt_crash_t dt_crash, dt_where;

// note_ctx copies where the thread was from the context of signal sig
// into c, with the C++ exception's type cxx, once: the first signal noted
// there counts (for a crash, a later one may be the launcher's SIGTERM, or
// a second thread faulting on the first one's damage). Plain loads from
// the context and stores: async-signal-safe.
static int note_ctx(dt_crash_t *c, int sig, siginfo_t *si, void *ctx, uintptr_t cxx) {
	if (!ctx || __atomic_exchange_n(&c->taken, 1, __ATOMIC_ACQ_REL)) return 0;
	const ucontext_t *uc = ctx;
	c->sig = sig;
	c->code = si ? si->si_code : 0;
	// si_addr is the fault's only when the kernel raised it (si_code > 0).
	if (si && si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL)) {
		c->addr = (uint64_t)(uintptr_t)si->si_addr;
		c->has_addr = 1;
	}
#if defined(__x86_64__)
	c->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	c->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	c->bp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#else
	(void)uc;
#endif
	c->T = dt_self;
	c->t = dt_now();
	c->py_ts = dt_py_this_ts();
	c->cxx_type = cxx;
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	return 1;
}

// cxa_type is the C++ runtime's __cxa_current_exception_type where the
// program's executable links libstdc++ (cxx_init), else NULL.
static void *(*cxa_type)(void);

// note_crash notes a fault signal or SIGABRT: the crash (dt_crash). For
// SIGABRT it also notes the C++ exception being handled, if any: the
// runtime calls std::terminate, then abort(), for one no handler caught
// (__cxa_current_exception_type reads the thread's exception globals,
// thread-local storage of libstdc++, which cxx_init made sure is static:
// no allocation).
static int note_crash(int sig, siginfo_t *si, void *ctx) {
	if (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL && sig != SIGABRT) return 0;
	return note_ctx(&dt_crash, sig, si, ctx, sig == SIGABRT && cxa_type ? (uintptr_t)cxa_type() : 0);
}

// needs_cxx says whether the object whose dynamic section is dyn (load
// bias base) names libstdc++ among its DT_NEEDED.
static int needs_cxx(ElfW(Addr) base, const ElfW(Dyn) *dyn) {
	const char *strtab = NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB) strtab = (const char *)(d->d_un.d_ptr < base ? base + d->d_un.d_ptr : d->d_un.d_ptr);
	if (!strtab) return 0;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED && strncmp(strtab + d->d_un.d_val, "libstdc++.so", 12) == 0) return 1;
	return 0;
}

static int exe_needs_cxx(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			*(int *)data = needs_cxx(info->dlpi_addr, (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr));
	return 1; // the first object is the executable
}

// cxx_init finds __cxa_current_exception_type for a C++ program: one whose
// executable links libstdc++, so that its thread-local storage is in every
// thread's static block (a libstdc++ loaded later, by dlopen, may have its
// storage allocated at a thread's first use, which a signal handler must
// not do).
static void cxx_init(void) {
	int needed = 0;
	dl_iterate_phdr(exe_needs_cxx, &needed);
	if (needed) cxa_type = (void *(*)(void))dlsym(RTLD_DEFAULT, "__cxa_current_exception_type");
}

static int sig_debug;
static void dbg(const char *what, int sig) {
	if (!sig_debug) return;
	char m[96];
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int n = snprintf(m, sizeof m, "dtpa: rank %d %s sig %d state %d thread %d/%d%s at %ld.%03ld\n", dt_rank_world, what, sig,
		dt_state, (int)gettid(), (int)getpid(), dt_self ? " (MPI)" : "", (long)ts.tv_sec % 1000, ts.tv_nsec / 1000000);
	if (write(2, m, n) < 0) return;
}

static void dt_on_signal(int sig, siginfo_t *si, void *ctx) {
	dbg("handler", sig);
	if (getpid() != dt_pid) { // a forked child: nothing of the tracer works there
		dt_state = DT_ST_FINISHED;
		sig_busy = 0;
		dt_flush_done = 1;
	}
	int late = 0;
	if (dt_state == DT_ST_TRACING || dt_state == DT_ST_STOPPED) {
		dt_stamp_signal();
		// Another fatal signal (the launcher's SIGTERM) ends a process
		// that did not crash: where it was (dt_where) says what it was
		// doing when its job was ended. A process's signal may find a
		// helper thread of the MPI library's, whose place says nothing:
		// only a thread that called MPI notes it.
		if (!note_crash(sig, si, ctx) && !__atomic_load_n(&dt_crash.taken, __ATOMIC_ACQUIRE) && dt_self)
			note_ctx(&dt_where, sig, si, ctx, 0);
	} else if (dt_state == DT_ST_FINISHED && dt_late_ok && getpid() == dt_pid && note_crash(sig, si, ctx)) {
		// A crash after the trace ended (a destructor, an exit handler):
		// the watcher writes it beside the trace (dtw_late_crash).
		dt_crash.late = late = 1;
	}
	// Every thread that takes a fatal signal waits for the one flush: the
	// launcher may signal the process more than once, and the default action
	// of a second signal must not cut the first flush short.
	if (dt_state == DT_ST_TRACING || dt_state == DT_ST_STOPPED || sig_busy || late) {
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
// blocked: it wakes at once when a handler writes, and has the writer
// write the trace.
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
	if (dt_crash.late)
		dtw_late_crash();
	else
		dtw_signal(c);
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
	cxx_init();
	int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = dt_on_signal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		// The others wait while one is handled: two signals arriving
		// together (a terminal's Ctrl-C and the launcher's) would
		// otherwise run the second's handler first, on top of the
		// first's, whose entry it would take for where the thread was.
		sigemptyset(&sa.sa_mask);
		for (unsigned j = 0; j < sizeof sigs / sizeof sigs[0]; j++) sigaddset(&sa.sa_mask, sigs[j]);
		sigaction(sigs[i], &sa, &sig_old[sigs[i]]);
	}
}
