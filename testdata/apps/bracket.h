/* bracket.h: each rank brackets its intervals with its own clock, as gt.h
 * does, for the programs on MPI libraries (fftwmpi.c, pnetcdf.c); found
 * next to them (#include "bracket.h"). dtpa measures an interval from the exit of MPI_Pcontrol(100, n) to the entry
 * of MPI_Pcontrol(101, n), which lie between "inner" (from the return of
 * the first call to the call of the second) and "outer" (from the call of
 * the first to the return of the second); the lines printed at the end
 * have gt.h's format (no overshoot: nothing here is timed by
 * construction). */
#ifndef BRACKET_H
#define BRACKET_H
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double timed_call[3], timed_ret[3], timed_inner[3], timed_outer[3];

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void enter(int n) {
	timed_call[n] = now();
	MPI_Pcontrol(100, n);
	timed_ret[n] = now();
}

static void leave(int n) {
	double call = now();
	MPI_Pcontrol(101, n);
	double ret = now();
	timed_inner[n] = call - timed_ret[n];
	timed_outer[n] = ret - timed_call[n];
}

static void print_timing(const char *prog, int rank) {
	for (int n = 1; n <= 2; n++)
		printf("%s: rank %d: interval %d: inner %.6f s, outer %.6f s, overshoot 0.000000 s, first entry %.6f s\n",
		       prog, rank, n, timed_inner[n], timed_outer[n], timed_call[n]);
}

#endif
