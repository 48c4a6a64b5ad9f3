// The writer's side of the tracer, as the rest of its C calls it: defined
// by dt_cw.c.
#ifndef DT_GO_H
#define DT_GO_H

#include <stdint.h>
#include "dt_rt.h"

void dtgo_params(dt_params *p);
int dtgo_init(int rank, int size, int level, char *impl, char *ver, dt_clock *clk, unsigned char *spawn);
void dtgo_start(unsigned char *runid);
void dtgo_signal(void);
void dtgo_module(char *path, uint64_t bias, uint64_t lo, uint64_t hi, unsigned char *bid, int nbid);
void dtgo_source_module(char *path, uint64_t base);
void dtgo_clocksync(int phase, int ref, int same, int64_t *snd, int64_t *rem, int64_t *rcv, int n);
void dtgo_stopped(int reason);
void dtgo_exit(void);
void dtgo_finish(int reason);

#endif
