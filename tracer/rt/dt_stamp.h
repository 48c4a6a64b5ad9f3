// Reading the TSC and CLOCK_MONOTONIC_RAW together: the tracer's calibration
// (dt_clock.c) and the preload stub, which times the MPI library's MPI_Init
// before the tracer is loaded (tracer/stub/stub.c), both need it. libc only.
#ifndef DT_STAMP_H
#define DT_STAMP_H

#include <stdint.h>
#include <time.h>
#include <x86intrin.h>

static inline int64_t dt_mono_raw(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// dt_stamp reads the TSC and CLOCK_MONOTONIC_RAW at (nearly) the same
// moment: of 5 tries, the one whose two TSC reads around the clock read
// are closest, the TSC taken midway between them.
static inline void dt_stamp(uint64_t *tsc, int64_t *ns) {
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t a = __rdtsc();
		int64_t m = dt_mono_raw();
		uint64_t b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = m;
		}
	}
}

// The clocks around the MPI library's MPI_Init, which the stub passes to
// the tracer it loads after it (dt_start_loaded): the TSC and
// CLOCK_MONOTONIC_RAW, read together before (also the first point of the
// TSC's calibration) and after.
typedef struct {
	uint64_t tsc0, tsc1;
	int64_t ns0, ns1;
} dt_stamps;

#endif
