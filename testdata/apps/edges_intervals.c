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
 *                             the interval: SIZE_LIMIT); their communicator
 *                             alternates between MPI_COMM_WORLD and
 *                             MPI_COMM_SELF, since the tracer folds a run
 *                             of identical queries into one record and the
 *                             calls must fill the trace record by record
 *
 * Delays are sleeps, never spins (4 ranks share 2 cores); each scenario
 * starts after an MPI_Barrier outside any interval and section, so the
 * ranks start it together and nothing leaks from one scenario into the
 * next. Each rank times its intervals and its sleeps and prints them at the
 * end (gt.h, as groundtruth.c does), for the tests to tell a run disturbed
 * by other load from a wrong figure; a scenario's overshoot covers its
 * sleeps before and after the interval too (scenario_begin, scenario_end).
 *
 *   mpicc -g -O0 -o edges_intervals edges_intervals.c && dtrun -np 4 ./edges_intervals
 */
#include "gt.h"

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
			MPI_Comm_size(i % 2 ? MPI_COMM_SELF : MPI_COMM_WORLD, &size);
	else
		nap(100);
	leave(4);
}

int main(int argc, char **argv)
{
	gt_init(&argc, &argv, "edges_intervals");
	MPI_Barrier(MPI_COMM_WORLD);
	if (argc > 2 && strcmp(argv[1], "cut") == 0) {
		scenario_begin();
		cut(atol(argv[2]));
		scenario_end();
	} else {
		scenario_begin();
		section_into_interval();
		scenario_end();
		MPI_Barrier(MPI_COMM_WORLD);
		scenario_begin();
		section_out_of_interval();
		scenario_end();
		MPI_Barrier(MPI_COMM_WORLD);
		scenario_begin();
		section_of_two();
		scenario_end();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	gt_report("edges_intervals");
	if (rank == 0)
		printf("edges_intervals done\n");
	MPI_Finalize();
	return 0;
}
