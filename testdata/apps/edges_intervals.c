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
 * next.
 *
 *   mpicc -g -O0 -o edges_intervals edges_intervals.c && dtrun -np 4 ./edges_intervals
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank;

/* nap sleeps ms milliseconds, resuming after signals. */
static void nap(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void section_into_interval(void)
{
	MPI_Pcontrol(102, 1);
	nap(500);
	MPI_Pcontrol(100, 1);
	nap(100);
	MPI_Pcontrol(103, 1);
	nap(50);
	MPI_Pcontrol(101, 1);
}

static void section_out_of_interval(void)
{
	MPI_Pcontrol(100, 2);
	nap(50);
	MPI_Pcontrol(102, 2);
	nap(100);
	MPI_Pcontrol(101, 2);
	nap(500);
	MPI_Pcontrol(103, 2);
}

static void section_of_two(void)
{
	if (rank < 2)
		MPI_Pcontrol(102, 3);
	nap(200);
	MPI_Pcontrol(100, 3);
	nap(200);
	if (rank < 2)
		MPI_Pcontrol(103, 3);
	nap(100);
	MPI_Pcontrol(101, 3);
}

static void cut(long calls)
{
	int size;
	MPI_Pcontrol(100, 4);
	if (rank == 3)
		for (long i = 0; i < calls; i++)
			MPI_Comm_size(MPI_COMM_WORLD, &size);
	else
		nap(100);
	MPI_Pcontrol(101, 4);
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
		cut(atol(argv[2]));
	} else {
		section_into_interval();
		MPI_Barrier(MPI_COMM_WORLD);
		section_out_of_interval();
		MPI_Barrier(MPI_COMM_WORLD);
		section_of_two();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("edges_intervals done\n");
	MPI_Finalize();
	return 0;
}
