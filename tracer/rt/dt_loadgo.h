// dt_dlopen_go loads a library with a Go runtime into the traced process:
// the writer's encoder (dt_cw.c).
#ifndef DT_LOADGO_H
#define DT_LOADGO_H

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

// The Go runtime's threads inherit the signal mask of the thread that
// loads it. Blocking every asynchronous signal keeps them off Go's
// threads, so that the kernel delivers the process's signals to the
// program's threads: the tracer's handler of TERM, INT and HUP waits for
// its writer to write the trace, which must not be the thread it
// interrupted, and a handler the program installed without SA_ONSTACK
// (SIGALRM's of a timer, say) would run on the stack of the goroutine it
// interrupted and overwrite what lies below it. The synchronous signals
// stay deliverable (a fault is its thread's), and the runtime unblocks
// SIGPROF and SIGCHLD on its threads whatever their mask (the stub's
// sigaction).
static inline void *dt_dlopen_go(const char *path) {
	sigset_t block, old;
	sigfillset(&block);
	int sync_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	for (unsigned i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++) sigdelset(&block, sync_sigs[i]);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return h;
}

#endif
