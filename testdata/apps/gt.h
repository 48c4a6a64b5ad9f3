/* gt.h: the self-timing of the programs whose dtpa characteristics are
 * known by construction (groundtruth.c, edges_p2p.c, edges_intervals.c),
 * for the end-to-end tests in e2e/. Included by exactly one file of each
 * program; found next to it (#include "gt.h"), so the programs build with a
 * plain `mpicc -g -O0 -o x x.c`.
 *
 * Delays are sleeps (nap), never spins: the tests run 4 ranks on 2 cores,
 * where a spinning rank would steal a core from a rank that is supposed to
 * be on time.
 *
 * Each rank times its intervals with its own clock and prints the totals
 * per interval path at the end (gt_finish). dtpa measures an interval from
 * the exit of MPI_Pcontrol(100, n) to the entry of MPI_Pcontrol(101, n);
 * the program cannot see those two instants, but brackets them: "inner"
 * runs from the return of the first call to the call of the second,
 * "outer" from the call of the first to the return of the second. dtpa's
 * Execution Time must lie between the two (to clock alignment error).
 * "first entry" is the time of the first entry on CLOCK_MONOTONIC, one
 * clock for all ranks of a host, so the tests see how far apart the ranks
 * entered. "overshoot" is the longest delay in the interval the
 * construction did not intend: a sleep lasting beyond what it asked for,
 * or a rank late at a point the construction fixes (see due); between
 * scenario_begin and scenario_end, the longest of the whole scenario, the
 * sleeps before and after its intervals included. The tests compare inner
 * with the durations intended by construction and look at the overshoot:
 * a run that strays from the construction was disturbed by other load (see
 * e2e/groundtruth_test.go).
 *
 * The functions are static inline: each program uses only some of them. */
#ifndef GT_H
#define GT_H

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int rank;

#define MAXPATHS 32
static struct {
	char path[32];
	double inner, outer, overshoot, first;
} timed[MAXPATHS + 1]; /* the last entry collects anything beyond MAXPATHS */
static int ntimed;
static char path[32]; /* current interval path, "8/1/2"; "" at level 0 */
static int cur[8];    /* timed[] entry of each open interval */
static double called[8], returned[8]; /* its MPI_Pcontrol(100, n) */
static int depth;
static int scenario;  /* first timed[] entry of the open scenario */
static double worst;  /* the open scenario's longest overshoot */

/* enter(n) enters interval n. A macro, so that the MPI_Pcontrol call, and
 * with it the interval's source position in the report, is in the
 * scenario's function. */
#define enter(n)                           \
	do {                               \
		called[depth] = now();     \
		MPI_Pcontrol(100, (n));    \
		entered(n);                \
	} while (0)

static inline void entered(int n)
{
	returned[depth] = now();
	size_t l = strlen(path);
	snprintf(path + l, sizeof path - l, l ? "/%d" : "%d", n);
	int i;
	for (i = 0; i < ntimed && strcmp(timed[i].path, path) != 0; i++)
		;
	if (i == ntimed && ntimed < MAXPATHS)
		strcpy(timed[ntimed++].path, path);
	if (timed[i].first == 0)
		timed[i].first = returned[depth];
	cur[depth++] = i;
}

static inline void leave(int n)
{
	double call = now();
	MPI_Pcontrol(101, n);
	double ret = now();
	depth--;
	timed[cur[depth]].inner += call - returned[depth];
	timed[cur[depth]].outer += ret - called[depth];
	char *slash = strrchr(path, '/');
	*(slash ? slash : path) = '\0';
}

/* late notes a delay the construction did not intend, in every open
 * interval and in the open scenario. */
static inline void late(double s)
{
	for (int d = 0; d < depth; d++)
		if (s > timed[cur[d]].overshoot)
			timed[cur[d]].overshoot = s;
	if (s > worst)
		worst = s;
}

/* scenario_begin opens a scenario whose intervals take the longest
 * overshoot of the whole scenario; scenario_end gives it to them. For
 * scenarios whose sections start before an interval or end after it: such
 * a section contributes its whole length to the figures of the whole
 * program, and a late wake-up anywhere in it moves them. */
static inline void scenario_begin(void)
{
	scenario = ntimed;
	worst = 0;
}

static inline void scenario_end(void)
{
	for (int i = scenario; i < ntimed; i++)
		if (worst > timed[i].overshoot)
			timed[i].overshoot = worst;
}

/* nap sleeps ms milliseconds, resuming after signals, and notes by how
 * much it overslept. */
static inline void nap(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	double t0 = now();
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	late(now() - t0 - ms * 1e-3);
}

/* due notes how late the rank is at a point the construction puts ms
 * milliseconds after its entry into the current interval: a blocking call
 * that returned late (the rank got no core when its message came) delays
 * the next call, and with it what dtpa measures from that call's entry. */
static inline void due(int ms)
{
	late(now() - returned[depth - 1] - ms * 1e-3);
}

/* gt_init initializes MPI, sets rank and makes sure the job has the 4 ranks
 * the scenarios are built for; prog names the program in the message. It
 * returns the size of MPI_COMM_WORLD. */
static inline int gt_init(int *argc, char ***argv, const char *prog)
{
	int size;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4) {
		if (rank == 0)
			fprintf(stderr, "%s: needs 4 ranks, not %d\n", prog, size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return size;
}

/* gt_report prints the rank's own timing of each interval path, one line
 * each, prefixed with prog (the tests read them, see timedRE in
 * e2e/groundtruth_test.go). */
static inline void gt_report(const char *prog)
{
	for (int i = 0; i < ntimed; i++)
		printf("%s: rank %d: interval %s: inner %.6f s, outer %.6f s, overshoot %.6f s, first entry %.6f s\n",
		       prog, rank, timed[i].path, timed[i].inner, timed[i].outer, timed[i].overshoot, timed[i].first);
}

#endif
