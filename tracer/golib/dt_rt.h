// Declarations shared by the tracer's C runtime files (not by the generated
// wrappers, which only need dt_wrap.h).
#ifndef DT_RT_H
#define DT_RT_H

#include <stddef.h>
#include <stdint.h>

// Footer.StopReason values.
enum {
	DT_STOP_FINALIZE = 1, DT_STOP_SIZE_LIMIT = 2, DT_STOP_WRITE_ERROR = 3, DT_STOP_ABORT = 4,
	DT_STOP_SIGNAL = 5, DT_STOP_BUFFER_FULL = 6, DT_STOP_EXIT = 7,
};

// Parameters and clock conversion shared with Go.
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
extern uint64_t dt_max_stall_ticks, dt_stall_ticks, dt_flushes, dt_drop_gaps;
extern volatile int dt_flush_done;

// DT_Q_COPY: records in a malloc'd copy (free it); DT_Q_GO: a job queued on the Go side (dt_q_kick).
enum { DT_Q_BUF = 0, DT_Q_SITE = 1, DT_Q_COMM = 2, DT_Q_COPY = 3, DT_Q_GO = 4 };
void dt_q_def_comm(uint32_t local, uint64_t id, const uint32_t *mem, int nm, const uint32_t *rem, int nr, int inter,
	uint32_t parent, int fid);
void dt_buf_setup(size_t chunk, uint64_t total, int64_t max_trace_mb);
void dt_buf_put(void *b);
void dt_room_wait(dt_thr *T, size_t need);
void dt_enc_hurry(void);
void dt_stop(int reason);
void dt_collect(void);
uint64_t dt_dropped(void);
void dt_install_signals(void);
void dt_comm_init(void);
void dt_clock_init(void);
void dt_clock_calibrate(void);
int64_t dt_ns(uint64_t raw);
void dt_clock_groups(void);
void dt_clock_sync(int phase);
void dt_clock_free(void);
void dt_modules(void);

#endif
