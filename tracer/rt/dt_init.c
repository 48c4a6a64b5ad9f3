// Start and end of tracing: MPI_Init, MPI_Init_thread, MPI_Finalize and
// MPI_Abort are written by hand because they bracket everything else.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_stamp.h"
#include "dt_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>

extern const char *const dt_fnames[];
extern const int dt_nfuncs;
extern void *const dt_wrapfns[];
extern const int DT_FID_Init, DT_FID_Init_thread, DT_FID_Finalize, DT_FID_Abort;
void *dt_fwrapper(const char *name, void *(*next_of)(const char *)); // dt_fortran.c
extern __thread int dt_fnest __attribute__((tls_model("initial-exec"))); // dt_fortran.c

static int byname_cmp(const void *a, const void *b) {
	return strcmp(dt_fnames[*(const int *)a], dt_fnames[*(const int *)b]);
}
static int byname_key(const void *key, const void *b) { return strcmp(key, dt_fnames[*(const int *)b]); }

// handwritten returns the wrappers written by hand (this file), which the
// generated table lacks.
static void *handwritten(const char *name) {
	if (strcmp(name, "MPI_Init") == 0) return (void *)MPI_Init;
	if (strcmp(name, "MPI_Init_thread") == 0) return (void *)MPI_Init_thread;
	if (strcmp(name, "MPI_Finalize") == 0) return (void *)MPI_Finalize;
	if (strcmp(name, "MPI_Abort") == 0) return (void *)MPI_Abort;
	return NULL;
}

// dt_install points the preload stub's table (tab, n slots named names, in
// strcmp order) at this library's wrappers, inside MPI_Init. The names are
// walked side by side with the wrappers' own sorted names: one pass, where
// a binary search per name costs ~1.5 M instructions for the ~2800 names.
// Names out of order (a stub of another build) are looked up one by one.
// A Fortran wrapper forwards to MPI's definition of its name, which next_of
// (the stub's) finds; with fortran 0 (no Fortran binding loaded) the
// Fortran names are left alone. Slots without a wrapper keep their value.
void dt_install(const char *const *names, void **tab, int n, void *(*next_of)(const char *), int fortran) {
	int *byname = malloc(sizeof(int) * (size_t)dt_nfuncs);
	if (!byname) return;
	for (int i = 0; i < dt_nfuncs; i++) byname[i] = i;
	qsort(byname, (size_t)dt_nfuncs, sizeof(int), byname_cmp);
	int c = 0, sorted = 1;
	for (int i = 0; i < n; i++) {
		if (i > 0 && strcmp(names[i - 1], names[i]) >= 0) sorted = 0;
		void *w = NULL;
		if (sorted) {
			while (c < dt_nfuncs && strcmp(dt_fnames[byname[c]], names[i]) < 0) c++;
			if (c < dt_nfuncs && strcmp(dt_fnames[byname[c]], names[i]) == 0) w = dt_wrapfns[byname[c]];
		} else {
			const int *p = bsearch(names[i], byname, (size_t)dt_nfuncs, sizeof(int), byname_key);
			if (p) w = dt_wrapfns[*p];
		}
		if (!w) w = handwritten(names[i]);
		if (!w && fortran) w = dt_fwrapper(names[i], next_of);
		if (w) tab[i] = w;
	}
	free(byname);
}

static int dt_sync_ready; // the clock groups are known: MPI_Finalize must sync
pid_t dt_pid; // the traced process: a forked child must not touch the tracer
int dt_rank_world, dt_size_world;

// dt_forked runs in the child of a fork: it has none of the tracer's threads
// and no trace of its own, so the tracer steps aside there.
static void dt_forked(void) { dt_state = DT_ST_FINISHED; }

// dt_atexit ends the trace of a program that exits without MPI_Finalize,
// with the status and where exit was called from (an exit handler runs
// on the thread that called exit, below it), and waits for the rank's
// compaction of its trace (dtw_exit). on_exit (glibc) passes the status.
static __attribute__((noinline)) void dt_atexit(int status, void *arg) {
	(void)arg;
	if (getpid() != dt_pid) return; // a forked child exiting: it has no writer
	if (dt_state == DT_ST_TRACING || dt_state == DT_ST_STOPPED) {
		uintptr_t pcs[DT_CRASH_DEPTH];
		dt_thr *T = dt_self;
		dtw_exit_call(status, pcs, dt_here_stack(T, __builtin_frame_address(0), pcs, DT_CRASH_DEPTH), T);
		dt_state = DT_ST_FINISHED;
		dt_collect();
		dtw_finish(DT_STOP_EXIT);
	}
	dtw_exit();
}

// test_stop_in_init serves DT_TEST_INIT_STOP=rank:path (tests): that rank
// writes its pid to path and stops itself (SIGSTOP) inside MPI_Init, after
// the trace and its spill file are created and before the header, for the
// test to kill it there, as a rank killed inside MPI_Init's collective.
static void test_stop_in_init(void) {
	const char *v = getenv("DT_TEST_INIT_STOP");
	const char *colon = v ? strchr(v, ':') : NULL;
	if (!colon || atoi(v) != dt_rank_world) return;
	FILE *f = fopen(colon + 1, "w");
	if (!f) return;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	raise(SIGSTOP);
}

// dt_start also serves the Fortran MPI_Init wrappers (dt_fortran.c).
void dt_start(uint64_t t0, uint64_t t1, int fid, int level, void *fp) {
	if (dt_state != DT_ST_OFF) return;
	int inited = 0;
	PMPI_Initialized(&inited);
	if (!inited) return;
	PMPI_Comm_rank(MPI_COMM_WORLD, &dt_rank_world);
	PMPI_Comm_size(MPI_COMM_WORLD, &dt_size_world);
	dt_params p = {4, 500, 64 << 20};
	dtw_params(&p);
	dt_depth = p.user_stack_size < 0 ? 0 : p.user_stack_size > DT_MAXDEPTH ? DT_MAXDEPTH : p.user_stack_size;
	// 128 KB buffers (≥ 4 of them, ≥ 64 KB, ≤ 4000): a fresh one costs
	// ~0.1 ms to make (fallocate and faulting its pages in: ~0.8 ms per MB
	// on this VM), and a thread waiting for the encoder to free one waits
	// for the encoding of 128 KB of records: 0.15-0.25 ms (tight loop of
	// BenchmarkOverhead; 0.3-0.6 ms with 256 KB buffers, whose waits passed
	// 1 ms whenever other processes shared the core).
	size_t chunk = 128 << 10;
	while (chunk > 64 << 10 && chunk * 4 > p.trace_buf_size) chunk >>= 1;
	while (p.trace_buf_size / chunk > 4000) chunk <<= 1;
	// DT_BUF_CHUNK (bytes, 4 KB to 1 MB) overrides the size for tests
	// that need a small program's trace split into many batches (one per
	// buffer handed over), such as cutting a trace between batches.
	const char *ck = getenv("DT_BUF_CHUNK");
	if (ck && *ck) {
		size_t v = (size_t)strtoull(ck, NULL, 10) & ~(size_t)4095;
		if (v >= 4096 && v <= 1 << 20) chunk = v;
	}
	dt_buf_setup(chunk, p.trace_buf_size, p.max_trace_mb);
	dt_clock_calibrate();
	char ver[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
	int vlen = 0;
	PMPI_Get_library_version(ver, &vlen);
#ifdef OPEN_MPI
	const char *impl = "Open MPI";
#else
	const char *impl = "MPICH";
#endif
	// Everything before the one collective of MPI_Init (dt_clock_groups):
	// a rank that arrives there early waits asleep, leaving the core to
	// ranks still at work; once it completes, every rank returns to the
	// program as soon as it can, and a rank still creating its trace then
	// would share the cores with ranks that poll in their next MPI call.
	dt_thr *T = NULL;
	// A world started by MPI_Comm_spawn numbers its ranks from 0 again, in
	// the same directory as its parents' (and may share their spill
	// directory): its traces are named after the run id its collective
	// agrees on, so there that collective comes first.
	unsigned char runid[16];
	MPI_Comm parent = MPI_COMM_NULL;
	PMPI_Comm_get_parent(&parent);
	int spawned = parent != MPI_COMM_NULL;
	if (spawned) dt_clock_groups(runid);
	int ok = dtw_init(dt_rank_world, dt_size_world, level, (char *)impl, ver, &dt_clk, spawned ? runid : NULL);
	if (ok) {
		T = dt_self ? dt_self : dt_thr_new();
		dt_comm_init();
		dt_modules();
		dt_py_init();
		// The handlers act once tracing runs (dt_state): until then they
		// pass every signal on.
		dt_pid = getpid();
		pthread_atfork(NULL, NULL, dt_forked);
		dt_install_signals();
		on_exit(dt_atexit, NULL);
	}
	if (!spawned) dt_clock_groups(runid);
	dt_sync_ready = 1;
	if (ok) test_stop_in_init();
	if (!ok) {
		// Could not open the trace: the program runs untraced, but this rank
		// still takes its part in the clock synchronization, which the
		// others may be waiting for.
		dt_clock_sync(1);
		return;
	}
	dtw_start(runid);
	dt_clock_sync(1);
	if (!T) return; // no memory for the thread's tables: a trace with its header and no events
	dt_state = DT_ST_TRACING;
	T->busy = 1;
	dt_hdr *H = dt_rec_begin(T, fid, t0, t1, fp, 64);
	(void)H;
	dt_rec_end(T);
	// DT_BENCH_BARE=1 (benchmarks): from here on every wrapper takes the
	// path of stopped recording (dt_enter_slow counts the call as dropped
	// and the wrapper calls the MPI library): what the wrappers' presence
	// alone costs a program, the floor of any tool that intercepts MPI,
	// measured on the machine state at hand. The trace ends as usual.
	const char *bare = getenv("DT_BENCH_BARE");
	if (bare && strcmp(bare, "1") == 0) dt_state = DT_ST_STOPPED;
}

// Under dt_fnest a Fortran wrapper is the outer call (MPICH's Fortran
// bindings call the C functions): it records and starts or ends tracing.
int MPI_Init(int *argc, char ***argv) {
	if (dt_fnest) return PMPI_Init(argc, argv);
	dt_clock_init();
	uint64_t t0 = dt_now();
	int r = PMPI_Init(argc, argv);
	uint64_t t1 = dt_now();
	if (r == MPI_SUCCESS) dt_start(t0, t1, DT_FID_Init, 0, __builtin_frame_address(0));
	return r;
}

// dt_start_loaded starts tracing when the stub loaded the tracer after the
// MPI library's MPI_Init (thread: MPI_Init_thread, giving level), which
// it recorded on both clocks (s, dt_stamp.h); fp is the
// frame of the stub's MPI_Init.
void dt_start_loaded(const dt_stamps *s, int thread, int level, void *fp) {
	dt_clock_init_at(s->tsc0, s->ns0);
	uint64_t t0 = dt_use_tsc ? s->tsc0 : (uint64_t)s->ns0, t1 = dt_use_tsc ? s->tsc1 : (uint64_t)s->ns1;
	dt_start(t0, t1, thread ? DT_FID_Init_thread : DT_FID_Init, level, fp);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
	if (dt_fnest) return PMPI_Init_thread(argc, argv, required, provided);
	dt_clock_init();
	uint64_t t0 = dt_now();
	int r = PMPI_Init_thread(argc, argv, required, provided);
	uint64_t t1 = dt_now();
	if (r == MPI_SUCCESS) dt_start(t0, t1, DT_FID_Init_thread, *provided, __builtin_frame_address(0));
	return r;
}

// dt_finalize ends tracing around fin (PMPI_Finalize when NULL; the real
// Fortran MPI_FINALIZE for the Fortran wrappers), recording the call with
// the call site of frame fp.
int dt_finalize(int (*fin)(void *), void *arg, void *fp) {
	dt_thr *T = dt_enter();
	if (!dt_sync_ready) return fin ? fin(arg) : PMPI_Finalize(); // the tracer never started
	dt_sync_ready = 0;
	uint64_t t0 = T ? dt_entry(T, DT_FID_Finalize, ((void **)fp)[1]) : dt_now();
	dt_clock_sync(2);
	dt_clock_free();
	int r = fin ? fin(arg) : PMPI_Finalize();
	if (T) dt_room_wait(T, 64 + DT_HDR_MAX); // the last record is never dropped (charged to the call)
	uint64_t t1 = dt_now();
	if (T) {
		dt_rec_begin(T, DT_FID_Finalize, t0, t1, fp, 64);
		dt_rec_end(T);
	}
	if (dt_state != DT_ST_TRACING && dt_state != DT_ST_STOPPED) return r; // untraced, or already finished (abort, signal)
	dt_state = DT_ST_FINISHED;
	dt_modules(); // libraries loaded since MPI_Init
	dt_collect();
	dtw_finish(DT_STOP_FINALIZE);
	return r;
}

int MPI_Finalize(void) {
	if (dt_fnest) return PMPI_Finalize();
	int r = dt_finalize(NULL, NULL, __builtin_frame_address(0));
	__asm__ volatile("" ::: "memory"); // not a tail call: dt_finalize reads this frame
	return r;
}

// dt_abort_record records MPI_Abort (call site of frame fp) and writes the
// trace before the program is aborted.
void dt_abort_record(MPI_Comm comm, void *fp) {
	dt_thr *T = dt_enter();
	if (T) {
		dt_room_wait(T, 64 + DT_HDR_MAX);
		uint64_t t = dt_now();
		dt_hdr *H = dt_rec_begin(T, DT_FID_Abort, t, t, fp, 64);
		if (H) {
			int dt_ok = 1;
			CM(comm)
		}
		dt_rec_end(T);
	}
	if (dt_state == DT_ST_TRACING || dt_state == DT_ST_STOPPED) {
		dt_state = DT_ST_FINISHED;
		dt_collect();
		dtw_finish(DT_STOP_ABORT);
	}
}

int MPI_Abort(MPI_Comm comm, int code) {
	if (!dt_fnest) dt_abort_record(comm, __builtin_frame_address(0));
	return PMPI_Abort(comm, code);
}
