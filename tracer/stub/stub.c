// dtpa preload stub (lib/libdtpa_preload.so). Depends on libc only, so that
// every process started under dtrun can load it harmlessly: shells, the
// launcher and other non-MPI processes never call MPI_Init and are left
// untouched (no Go runtime, no unresolved MPI symbols).
//
// It exports every MPI_ function of the installed implementations, and every
// Fortran spelling of them (mpi_send_, mpi_send_f08_ …), as a trampoline
// (stub_gen.c) jumping through dt_tab. A slot is filled at its first call
// with MPI's definition (dt_lazy_slot); MPI_Init and MPI_Init_thread detect
// the implementation, dlopen the matching tracer library
// (lib/libdtpa_<impl>.so next to this file) and point dt_tab at its
// wrappers, then call its MPI_Init wrapper.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../rt/dt_initmark.h"
#include "../rt/dt_stamp.h"
#include "stub_gen.c"

static int loaded;

static void (*start_loaded)(const dt_stamps *, int thread, int level, void *fp);

// find_mpi looks for a loaded library defining PMPI_Init that is not in the
// global scope (a Python extension loaded RTLD_LOCAL and linked with MPI):
// RTLD_NEXT cannot see it, its handle can.
static void *mpi_handle;
static int find_mpi_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	(void)data;
	if (!info->dlpi_name || !*info->dlpi_name) return 0;
	void *h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
	if (!h) return 0;
	if (dlsym(h, "PMPI_Init")) {
		mpi_handle = h;
		return 1;
	}
	dlclose(h);
	return 0;
}

// next_of returns MPI's definition of name: the next one after the stub
// when MPI is in the global scope, else the one of the library find_mpi
// finds. Names are looked up one at a time, when needed: asking the
// dynamic linker for all ~2800 names the stub exports (most of them absent
// from the one MPI loaded, and a miss costs the linker an error message)
// costs ~10 M instructions, 3 ms of CPU per process.
static void *next_of(const char *name) {
	if (!mpi_handle) {
		void *f = dlsym(RTLD_NEXT, name);
		if (f || dlsym(RTLD_NEXT, "PMPI_Init") || !dl_iterate_phdr(find_mpi_cb, NULL)) return f;
	}
	return dlsym(mpi_handle, name);
}

// fortran_loaded says whether a Fortran binding of MPI is loaded: each
// defines some spelling of MPI_Init.
static int fortran_loaded(void) {
	for (size_t k = 0; k < sizeof dt_finit_idx / sizeof dt_finit_idx[0]; k++)
		if (dt_finit_idx[k] >= 0 && next_of(dt_names[dt_finit_idx[k]])) return 1;
	return 0;
}

// dt_lazy_slot serves a call made through an empty slot: the first call of
// a function not wrapped by the tracer (or made before MPI_Init, or with
// the tracer disabled), including those of a program that loads MPI after
// the stub (mpi4py dlopens it) and calls MPI_Initialized or
// MPI_Get_version before MPI_Init. It finds the function and returns it to
// jump to, keeping it in the slot.
__attribute__((visibility("hidden"), used)) void *dt_lazy_slot(unsigned i) {
	if (i >= DT_NSYMS) abort();
	void *f = __atomic_load_n(&dt_tab[i], __ATOMIC_ACQUIRE);
	if ((char *)f >= dt_lz_lo && (char *)f < dt_lz_hi) { // empty: its dt_lz_<i> (stub_gen.c)
		f = next_of(dt_names[i]);
		if (f) __atomic_store_n(&dt_tab[i], f, __ATOMIC_RELEASE);
	}
	if (!f) {
		fprintf(stderr, "dtpa: %s called, but no loaded MPI library defines it\n", dt_names[i]);
		abort();
	}
	return f;
}

static void load_tracer(void);

// dt_finit_slot serves the Fortran spellings of MPI_Init and
// MPI_Init_thread (mpi_init_, mpi_init_f08_ …): like the C ones, they load
// the tracer first, then go on to its wrapper (or to MPI).
__attribute__((visibility("hidden"), used)) void *dt_finit_slot(unsigned i) {
	load_tracer();
	return dt_lazy_slot(i);
}

// dt_lazy is where an empty slot's trampoline jumps, with the slot index in
// r11; dt_finit where a Fortran MPI_Init's does. They keep every argument
// register (rdi rsi rdx rcx r8 r9, xmm0-7 and al, the vector count of a
// variadic call) across the slot function, then jump to the function it
// returns as if the program had called it directly.
#define DT_TRAMPOLINE(name, slotfn) \
	".text\n" \
	".globl " name "\n.hidden " name "\n.type " name ",@function\n" name ":\n" \
	"\tpushq %rbp\n\tmovq %rsp, %rbp\n\tsubq $192, %rsp\n" \
	"\tmovq %rdi, 0(%rsp)\n\tmovq %rsi, 8(%rsp)\n\tmovq %rdx, 16(%rsp)\n\tmovq %rcx, 24(%rsp)\n" \
	"\tmovq %r8, 32(%rsp)\n\tmovq %r9, 40(%rsp)\n\tmovq %rax, 48(%rsp)\n" \
	"\tmovdqu %xmm0, 64(%rsp)\n\tmovdqu %xmm1, 80(%rsp)\n\tmovdqu %xmm2, 96(%rsp)\n\tmovdqu %xmm3, 112(%rsp)\n" \
	"\tmovdqu %xmm4, 128(%rsp)\n\tmovdqu %xmm5, 144(%rsp)\n\tmovdqu %xmm6, 160(%rsp)\n\tmovdqu %xmm7, 176(%rsp)\n" \
	"\tmovl %r11d, %edi\n\tcall " slotfn "\n\tmovq %rax, %r11\n" \
	"\tmovq 0(%rsp), %rdi\n\tmovq 8(%rsp), %rsi\n\tmovq 16(%rsp), %rdx\n\tmovq 24(%rsp), %rcx\n" \
	"\tmovq 32(%rsp), %r8\n\tmovq 40(%rsp), %r9\n\tmovq 48(%rsp), %rax\n" \
	"\tmovdqu 64(%rsp), %xmm0\n\tmovdqu 80(%rsp), %xmm1\n\tmovdqu 96(%rsp), %xmm2\n\tmovdqu 112(%rsp), %xmm3\n" \
	"\tmovdqu 128(%rsp), %xmm4\n\tmovdqu 144(%rsp), %xmm5\n\tmovdqu 160(%rsp), %xmm6\n\tmovdqu 176(%rsp), %xmm7\n" \
	"\tleave\n\tjmp *%r11\n" \
	".size " name ",.-" name "\n"
__asm__(DT_TRAMPOLINE("dt_lazy", "dt_lazy_slot"));
__asm__(DT_TRAMPOLINE("dt_finit", "dt_finit_slot"));

static const char *impl_name(void) {
	if (dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world")) return "openmpi";
	if (dlsym(RTLD_DEFAULT, "MPII_Version_string")) return "mpich";
	return NULL;
}

static void load_tracer(void) {
	if (loaded) return;
	loaded = 1;
	if (!dlsym(RTLD_NEXT, "PMPI_Init")) dl_iterate_phdr(find_mpi_cb, NULL);
	const char *off = getenv("DT_DISABLE");
	if (off && *off && strcmp(off, "0") != 0) return;
	const char *impl = impl_name();
	if (!impl && mpi_handle) {
		// MPI is loaded locally: make it global, so that the tracer library
		// (which links it) and the detection below see the same one.
		Dl_info di;
		if (dladdr(dlsym(mpi_handle, "PMPI_Init"), &di) && di.dli_fname)
			dlopen(di.dli_fname, RTLD_NOLOAD | RTLD_LAZY | RTLD_GLOBAL);
		impl = impl_name();
	}
	if (!impl) {
		fprintf(stderr, "dtpa: unknown MPI implementation; running untraced\n");
		return;
	}
	Dl_info info;
	if (!dladdr((void *)load_tracer, &info) || !info.dli_fname) return;
	char self[4096], path[4200];
	snprintf(self, sizeof self, "%s", info.dli_fname);
	const char *dir = dirname(self);
	snprintf(path, sizeof path, "%s/libdtpa_%s.so", dir, impl);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dtpa: cannot load the tracer: %s; running untraced\n", dlerror());
		return;
	}
	void (*install)(const char *const *, void **, int, void *(*)(const char *), int) =
		(void (*)(const char *const *, void **, int, void *(*)(const char *), int))dlsym(h, "dt_install");
	if (install) install(dt_names, dt_tab, DT_NSYMS, next_of, fortran_loaded());
	start_loaded = (void (*)(const dt_stamps *, int, int, void *))dlsym(h, "dt_start_loaded");
}

// sigaction and signal add SA_ONSTACK to the handlers a program installs
// for SIGPROF and SIGCHLD. The Go runtime of the tracer's encoder
// (lib/libdtpa_enc.so, which the writer loads when it needs one) keeps
// those two unblocked on its threads whatever their inherited mask (the runtime's
// _SigUnblock signals), so the kernel may deliver the process's profiling
// timer or a child's end to one of them; a handler without SA_ONSTACK then
// runs on the stack of the goroutine it interrupted, a few kilobytes with
// another goroutine's stack or the heap below it, which the signal frame
// overwrites (Go's documentation requires SA_ONSTACK of handlers of non-Go
// code for that reason; a program profiling itself with setitimer crashed
// the tracer's compaction so). With it the handler runs on the thread's
// alternate signal stack, which every Go thread has; on the program's own
// threads, which have none unless it made one, nothing changes. The other
// asynchronous signals are blocked on the Go threads (dt_loadgo.h). Not
// covered: handlers installed through sigset,
// sysv_signal or glibc's internal calls (profil, used by gprof's -pg).
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static int onstack_signal(int sig) { return sig == SIGPROF || sig == SIGCHLD; }

__attribute__((constructor)) static void stub_init(void) {
	real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (!real_sigaction) stub_init();
	if (!real_sigaction) return -1;
	if (act && onstack_signal(sig) && !(act->sa_flags & SA_ONSTACK) && act->sa_handler != SIG_DFL &&
	    act->sa_handler != SIG_IGN) {
		struct sigaction a = *act;
		a.sa_flags |= SA_ONSTACK;
		return real_sigaction(sig, &a, old);
	}
	return real_sigaction(sig, act, old);
}

// signal goes through sigaction for those two signals with glibc's
// semantics (the handler stays installed, interrupted calls restart, the
// signal is blocked while its handler runs); glibc's own signal would not
// call the sigaction above.
sighandler_t signal(int sig, sighandler_t h) {
	static sighandler_t (*real_signal)(int, sighandler_t);
	if (!onstack_signal(sig) || h == SIG_DFL || h == SIG_IGN || h == SIG_ERR) {
		if (!real_signal) real_signal = (sighandler_t (*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
		return real_signal ? real_signal(sig, h) : SIG_ERR;
	}
	struct sigaction a, o;
	memset(&a, 0, sizeof a);
	a.sa_handler = h;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, sig);
	a.sa_flags = SA_RESTART;
	if (sigaction(sig, &a, &o) < 0) return SIG_ERR;
	return o.sa_handler;
}

// The C MPI_Init and MPI_Init_thread load the tracer after the MPI
// library's MPI_Init: the tracer then starts while the ranks that are done
// wait asleep in its MPI_Init collective, not while the MPI library's
// MPI_Init runs on every core (MPICH's ranks spin there). A call
// made once the tracer is loaded (MPICH's Fortran MPI_INIT calls the C
// one) goes to the tracer's wrapper, as every other call.
__attribute__((noinline)) int MPI_Init(int *argc, char ***argv) {
	if (loaded) return ((int (*)(int *, char ***))dt_lazy_slot(DT_IDX_Init))(argc, argv);
	dt_stamps st;
	dt_stamp(&st.tsc0, &st.ns0);
	char mark[PATH_MAX];
	int mk = dt_init_mark(st.ns0, mark);
	int r = ((int (*)(int *, char ***))next_of("PMPI_Init"))(argc, argv);
	dt_stamp(&st.tsc1, &st.ns1);
	dt_init_unmark(mk, mark);
	load_tracer();
	if (r == 0 && start_loaded) start_loaded(&st, 0, 0, __builtin_frame_address(0));
	return r;
}

__attribute__((noinline)) int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
	if (loaded)
		return ((int (*)(int *, char ***, int, int *))dt_lazy_slot(DT_IDX_Init_thread))(argc, argv, required, provided);
	dt_stamps st;
	dt_stamp(&st.tsc0, &st.ns0);
	char mark[PATH_MAX];
	int mk = dt_init_mark(st.ns0, mark);
	int r = ((int (*)(int *, char ***, int, int *))next_of("PMPI_Init_thread"))(argc, argv, required, provided);
	dt_stamp(&st.tsc1, &st.ns1);
	dt_init_unmark(mk, mark);
	load_tracer();
	if (r == 0 && start_loaded) start_loaded(&st, 1, *provided, __builtin_frame_address(0));
	return r;
}
