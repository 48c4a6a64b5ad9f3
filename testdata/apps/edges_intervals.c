/* edges_intervals.c: interval edge cases whose dtpa characteristics are
 * known by construction, for e2e/edges_intervals_test.go (which derives the
 * expected figures by hand). Needs exactly 4 ranks.
 *
 *   edges_intervals           sequential sections crossing interval
 *                             boundaries:
 *     interval 1   section 1 starts 500 ms before the interval and ends
 *                  100 ms into it; the interval lasts 50 ms more (every
 *                  rank: K = 4)
 *     interval 2   the reverse: section 2 starts 50 ms into the interval,
 *                  the interval ends 100 ms later, the section 500 ms
 *                  after that (K = 4)
 *     interval 3   ranks 0 and 1 only run section 3 (K = 2): it starts
 *                  200 ms before the interval and ends 200 ms into it; the
 *                  interval lasts 100 ms more
 *   edges_intervals cut N     a trace cut short: interval 4, in which
 *                             ranks 0-2 sleep 100 ms and rank 3 makes N
 *                             MPI_Comm_size calls (run with a small
 *                             MaxTraceSize, rank 3's tracing stops inside
 *                             the interval: SIZE_LIMIT)
 *
 * Delays are sleeps, never spins (4 ranks share 2 cores); each scenario
 * starts after an MPI_Barrier outside any interval and section, so the
 * ranks start it together and nothing leaks from one scenario into the
 * next. Each rank times its intervals and its sleeps and prints them at the
 * end, as groundtruth.c does (its timing machinery is repeated here), for
 * the tests to tell a run disturbed by other load from a wrong figure.
 *
 *   mpicc -g -O0 -o edges_intervals edges_intervals.c && dtrun -np 4 ./edges_intervals
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int rank;

/* The program's own timing, per interval path, printed at the end in the
 * format of groundtruth.c. dtpa measures an interval from the exit of
 * MPI_Pcontrol(100, n) to the entry of MPI_Pcontrol(101, n); "inner" runs
 * from the return of the first call to the call of the second, "outer"
 * from the call of the first to the return of the second: dtpa's Execution
 * Time lies between the two. "first entry" is the time of the first entry
 * on CLOCK_MONOTONIC, which all ranks of a host share. "overshoot" is the
 * longest any sleep of the interval's scenario lasted beyond what it asked
 * for, the sleeps before and after the interval included: a section that
 * starts before the interval or ends after it contributes its whole length
 * to the figures of the whole program, and a late wake-up anywhere in it
 * moves them (see e2e/edges_intervals_test.go). */
#define MAXPATHS 8
static struct {
	char path[32];
	double inner, outer, overshoot, first;
} timed[MAXPATHS + 1]; /* the last entry collects anything beyond MAXPATHS */
static int ntimed;
static int cur;                 /* timed[] entry of the open interval */
static double called, returned; /* its MPI_Pcontrol(100, n) */
static int scenario;            /* timed[] entries from here on are the current scenario's */
static double worst;            /* the current scenario's longest overshoot */

/* enter(n) enters interval n. A macro, so that the MPI_Pcontrol call, and
 * with it the interval's source position in the report, is in the
 * scenario's function. */
#define enter(n)                        \
	do {                            \
		called = now();         \
		MPI_Pcontrol(100, (n)); \
		entered(n);             \
	} while (0)

static void entered(int n)
{
	returned = now();
	char path[32];
	snprintf(path, sizeof path, "%d", n);
	for (cur = 0; cur < ntimed && strcmp(timed[cur].path, path) != 0; cur++)
		;
	if (cur == ntimed && ntimed < MAXPATHS)
		strcpy(timed[ntimed++].path, path);
	if (timed[cur].first == 0)
		timed[cur].first = returned;
}

static void leave(int n)
{
	double call = now();
	MPI_Pcontrol(101, n);
	double ret = now();
	timed[cur].inner += call - returned;
	timed[cur].outer += ret - called;
}

/* begin starts a scenario, end gives its worst overshoot to the intervals
 * it entered. */
static void begin(void)
{
	scenario = ntimed;
	worst = 0;
}

static void end(void)
{
	for (int i = scenario; i < ntimed; i++)
		timed[i].overshoot = worst;
}

/* nap sleeps ms milliseconds, resuming after signals, and notes by how
 * much it overslept. */
static void nap(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	double t0 = now();
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	double over = now() - t0 - ms * 1e-3;
	if (over > worst)
		worst = over;
}

static void section_into_interval(void)
{
	MPI_Pcontrol(102, 1);
	nap(500);
	enter(1);
	nap(100);
	MPI_Pcontrol(103, 1);
	nap(50);
	leave(1);
}

static void section_out_of_interval(void)
{
	enter(2);
	nap(50);
	MPI_Pcontrol(102, 2);
	nap(100);
	leave(2);
	nap(500);
	MPI_Pcontrol(103, 2);
}

static void section_of_two(void)
{
	if (rank < 2)
		MPI_Pcontrol(102, 3);
	nap(200);
	enter(3);
	nap(200);
	if (rank < 2)
		MPI_Pcontrol(103, 3);
	nap(100);
	leave(3);
}

static void cut(long calls)
{
	int size;
	enter(4);
	if (rank == 3)
		for (long i = 0; i < calls; i++)
			MPI_Comm_size(MPI_COMM_WORLD, &size);
	else
		nap(100);
	leave(4);
}

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4) {
		if (rank == 0)
			fprintf(stderr, "edges_intervals: needs 4 ranks, not %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (argc > 2 && strcmp(argv[1], "cut") == 0) {
		begin();
		cut(atol(argv[2]));
		end();
	} else {
		begin();
		section_into_interval();
		end();
		MPI_Barrier(MPI_COMM_WORLD);
		begin();
		section_out_of_interval();
		end();
		MPI_Barrier(MPI_COMM_WORLD);
		begin();
		section_of_two();
		end();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < ntimed; i++)
		printf("edges_intervals: rank %d: interval %s: inner %.6f s, outer %.6f s, overshoot %.6f s, first entry %.6f s\n",
		       rank, timed[i].path, timed[i].inner, timed[i].outer, timed[i].overshoot, timed[i].first);
	if (rank == 0)
		printf("edges_intervals done\n");
	MPI_Finalize();
	return 0;
}
