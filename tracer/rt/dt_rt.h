// Declarations shared by the tracer's C runtime files (not by the generated
// wrappers, which only need dt_wrap.h), grouped by the file defining them.
// Everything here is off the per-call path, which is inline in dt_wrap.h.
#ifndef DT_RT_H
#define DT_RT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

// Footer.StopReason values.
enum {
	DT_STOP_FINALIZE = 1, DT_STOP_SIZE_LIMIT = 2, DT_STOP_WRITE_ERROR = 3, DT_STOP_ABORT = 4,
	DT_STOP_SIGNAL = 5, DT_STOP_BUFFER_FULL = 6, DT_STOP_EXIT = 7,
};

// Parameters and clock conversion shared with the writer.
typedef struct {
	int user_stack_size;
	int64_t max_trace_mb;
	uint64_t trace_buf_size;
} dt_params;

typedef struct {
	int tsc;             // 1: raw readings are TSC ticks
	double ns_per_tick;  // for TSC
	uint64_t raw0;       // calibration point: raw reading …
	int64_t ns0;         // … and CLOCK_MONOTONIC_RAW at the same moment
	uint64_t raw1;       // second calibration point
	int64_t ns1;
	int64_t skew_off_ns; // DT_CLOCK_SKEW for this rank
	double skew_ppm;
} dt_clock;

extern dt_clock dt_clk;
extern int dt_rank_world, dt_size_world;
extern pid_t dt_pid; // the traced process: a forked child must not touch the tracer
extern uint64_t dt_max_stall_ticks, dt_stall_ticks, dt_flushes, dt_drop_gaps;
extern volatile int dt_flush_done;

// dt_thr.c: per-thread buffers and the tracing state.
void dt_room_wait(dt_thr *T, size_t need);
void dt_stop(int reason);
void dt_collect(void);
uint64_t dt_dropped(void);
// An MPI call in progress (dt_entry), as dt_unfinished found it.
#define DT_UNF_PY 8
typedef struct {
	uint32_t tid, fid;
	uint64_t t0;  // raw clock at entry
	uintptr_t pc; // the wrapper's return address, 0 when unknown
	uintptr_t py_ts; // the thread's Python thread state (dt_thr.py_ts), 0: none
	// For a call from C code below Python: the thread's Python frames
	// (dtw_signal), npy of them.
	uint64_t py[DT_UNF_PY];
	int npy;
} dt_unf;
int dt_unfinished(dt_unf *out, int max);
void dt_stamp_signal(void);

// dt_signal.c: where the thread that took the first fault signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL) or SIGABRT was, which its handler copies from
// the signal's context for the footer (dtw_signal).
typedef struct {
	int taken; // a handler took it (it fills the rest, then sets ready)
	int ready; // filled (release; readers acquire)
	int sig, code;
	int has_addr;
	uint64_t addr;
	uintptr_t pc, sp, bp; // the interrupted instruction and its frame's registers
	dt_thr *T;            // the thread's, NULL for one that never called MPI
	uint64_t t;           // raw clock when the signal arrived
	int late;             // after the trace ended (dt_late_ok): for dtw_late_crash
	uintptr_t py_ts;      // the thread's Python thread state (dt_py_this_ts), 0: none
	uintptr_t cxx_type;   // SIGABRT: the std::type_info of the C++ exception being handled, 0: none
} dt_crash_t;
extern dt_crash_t dt_crash DT_HIDDEN;
// dt_signal.c: where the thread that took the first other fatal signal
// (SIGTERM, SIGINT …) while tracing was, noted as a crash is (dt_crash's
// fields but late), for Footer.interrupted.
extern dt_crash_t dt_where DT_HIDDEN;
// dt_cw.c: the trace's footer is written and the trace did not end with
// MPI_Abort or a fatal signal: a fault signal now (a destructor, an exit
// handler) crashes the process after its trace ended (dtw_late_crash).
extern volatile int dt_late_ok DT_HIDDEN;
// dt_site.c: the crashed thread's stack, innermost first, into pcs (at
// most max): dt_crash.pc, then the return addresses its unwind tables
// lead to, every read within its stack. Run by the signal watcher while
// the crashed thread waits in its handler.
#define DT_CRASH_DEPTH 32
int dt_crash_stack(const dt_crash_t *c, uintptr_t *pcs, int max);
int dt_here_stack(dt_thr *T, void *fp, uintptr_t *pcs, int max);
// dt_cw.c: how the process exits without MPI_Finalize (Footer.exit): the
// status passed to exit, and the stack of the thread that called it
// (pcs, n frames; T NULL for a thread that never called MPI).
void dtw_exit_call(int status, const uintptr_t *pcs, int n, dt_thr *T);

// dt_buf.c: the free list of buffers, and the encoder's priority. The
// counts are read without the lock by dt_buf_ready; dt_buf_mu also guards
// the spill slots' allocation (dt_spill.c).
extern pthread_mutex_t dt_buf_mu DT_HIDDEN;
extern int dt_buf_nfree DT_HIDDEN, dt_buf_nalloc DT_HIDDEN, dt_buf_max DT_HIDDEN;
void dt_buf_setup(size_t chunk, uint64_t total, int64_t max_trace_mb);
char *dt_buf_get(int wait);
void dt_buf_put(void *b);
int dt_buf_reserve(int ahead);
void dt_buf_add(char *b);
unsigned dt_buf_taken(void);
int dt_buf_spend(size_t n, int none);
void dt_enc_hurry(void);
void dt_enc_slept(void);

// dt_buf_ready tells, without a lock, whether dt_buf_get(0) may succeed.
static inline int dt_buf_ready(void) {
	return __atomic_load_n(&dt_buf_nfree, __ATOMIC_RELAXED) > 0 ||
		__atomic_load_n(&dt_buf_nalloc, __ATOMIC_RELAXED) < dt_buf_max;
}

// dt_spill.c: buffers that are slots of the spill file.
char *dt_spill_make(int prefault);
volatile uint64_t *dt_spill_claim(char *b, uint32_t tid);
int dt_spill_done(char *b);
int dt_spill_left(void);
int dt_spill_prepare1(unsigned need);
int dt_spill_made(void);
int dt_spill_made_by_threads(void);

// dt_queue.c: the hand-over queue to the writer.
// DT_Q_COPY: records in a malloc'd copy (free it); DT_Q_GO: a job of the writer's own (dt_q_kick).
void dt_q_nudge(void);
unsigned dt_q_buffers(void);
extern unsigned dt_q_batch DT_HIDDEN;
void dt_aux_nudge(void);
enum { DT_Q_BUF = 0, DT_Q_SITE = 1, DT_Q_COMM = 2, DT_Q_COPY = 3, DT_Q_GO = 4 };
void dt_q_push(void *buf, size_t n, uint32_t tid, int fin, int kind);
void dt_q_wake(void);
void dt_q_def_site(uint32_t id, const uintptr_t *pcs, int n);
void dt_q_def_comm(uint32_t local, uint64_t id, const uint32_t *mem, int nm, const uint32_t *rem, int nr, int inter,
	uint32_t parent, int fid);

// What the writer uses (dt_cw.c): the queue's end, the buffers
// it frees, the spill slots and the aux thread it starts, and the counts
// its footer reports.
int dt_q_pop(void **buf, size_t *n, uint32_t *tid, int *fin, int *kind);
void dt_q_fin(int reason);
extern uint64_t dt_q_waits, dt_q_idle;
void dt_buf_done(void *b);
size_t dt_buf_chunk(void);
int dt_buf_slots(void);
void dt_enc_register(int nice);
int dt_enc_idle(void);
void dt_spill_setup(char *base, int n, int fd, long off);
void dt_spill_prepare(int k);
void dt_aux_start(int64_t epoch_ns);
void dt_aux_stop(void);
extern int64_t dt_aux_cpu_ns;
extern uint64_t dt_aux_wakeups;
void dt_finish_state(void);

// dt_site.c
uint32_t dt_site_src(dt_thr *T, const uintptr_t *pcs, int n, dt_hdr *rec);

// dt_py.c
void dt_py_init(void);
uintptr_t dt_py_this_ts(void);
int dt_py_crash_stack(uintptr_t ts, uint64_t *out, int max, int define);
int dt_py_late_files(const char **names, uint64_t *bases, int max);
// An uncaught Python exception, as the interpreter's audit event
// "sys.excepthook" showed it before the interpreter printed it and exited
// (dt_py.c, py_audit): its type and message (Crash.exception), its
// traceback innermost first as dt_py_crash_stack's frames, the thread and
// the time. Filled once, then taken is set (release); the footer's writer
// reads it after an acquiring load.
typedef struct {
	int taken;
	char type[256], msg[512];
	uint64_t py[DT_CRASH_DEPTH];
	int npy;
	dt_thr *T; // the thread's, NULL for one that never called MPI
	uint64_t t; // raw clock
} dt_pyexc_t;
extern dt_pyexc_t dt_pyexc DT_HIDDEN;

// dt_signal.c
void dt_install_signals(void);

// dt_cw.c: dt_pyexc after the trace's footer was written (dt_late_ok), into
// the file beside the trace as a crash after its end.
void dtw_late_exception(void);

// dt_comm.c
void dt_comm_init(void);

// dt_clock.c
void dt_clock_init(void);
void dt_host_name(char *name, size_t n);
void dt_clock_init_at(uint64_t tsc, int64_t ns);
void dt_clock_calibrate(void);
int64_t dt_ns(uint64_t raw);
void dt_clock_groups(unsigned char runid[16]);
void dt_clock_sync(int phase);
void dt_clock_free(void);
void dt_modules(void);
void dt_text_update(void);
int dt_in_text(uintptr_t pc);

// dt_mono_ns reads CLOCK_MONOTONIC (the runtime's own waits and periods).
static inline int64_t dt_mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
