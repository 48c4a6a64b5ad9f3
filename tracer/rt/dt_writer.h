// The writer's side of the tracer, as the rest of its C calls it: defined
// by dt_cw.c.
#ifndef DT_WRITER_H
#define DT_WRITER_H

#include <stdint.h>
#include "dt_rt.h"

void dtw_params(dt_params *p);
int dtw_init(int rank, int size, int level, char *impl, char *ver, dt_clock *clk, unsigned char *spawn);
void dtw_start(unsigned char *runid);
void dtw_signal(int sig);
void dtw_late_crash(void);
void dtw_module(char *path, uint64_t bias, uint64_t lo, uint64_t hi, unsigned char *bid, int nbid);
void dtw_source_module(char *path, uint64_t base);
void dtw_clocksync(int phase, int ref, int same, int64_t *snd, int64_t *rem, int64_t *rcv, int n);
void dtw_stopped(int reason);
void dtw_exit(void);
void dtw_finish(int reason);

#endif
