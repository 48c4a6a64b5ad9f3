// initcost: how long MPI_Init and MPI_Finalize take, wall clock and CPU
// time of the process (all its threads), the longest over the ranks
// (BenchmarkInit). Times are read with clock_gettime: MPI_Wtime is not
// usable before MPI_Init nor after MPI_Finalize. Rank 0 prints MPI_Init's
// maxima; MPI_Finalize's times are known only after it, so each rank
// appends them to <dir>/fin.<rank> (argv[1]) for the benchmark to read.
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double clk(clockid_t id) {
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + 1e-6 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
	double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
	MPI_Init(&argc, &argv);
	double in[2] = {clk(CLOCK_MONOTONIC) - w0, clk(CLOCK_PROCESS_CPUTIME_ID) - c0}, max[2];
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Reduce(in, max, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0) printf("init_ms=%.3f init_cpu_ms=%.3f\n", max[0], max[1]);
	fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);
	w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
	MPI_Finalize();
	double fw = clk(CLOCK_MONOTONIC) - w0, fc = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (argc > 1) {
		char path[4096];
		snprintf(path, sizeof path, "%s/fin.%d", argv[1], rank);
		FILE *f = fopen(path, "w");
		if (f) {
			fprintf(f, "%.3f %.3f\n", fw, fc);
			fclose(f);
		}
	}
	return 0;
}
