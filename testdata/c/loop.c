// A tight loop of a cheap MPI call (MPI_Comm_rank), N iterations (argv[1]),
// for the size limit and buffer tests; then, with argv[2], that many
// seconds asleep before MPI_Finalize (a job to kill). The communicator alternates, so that
// no two consecutive calls are alike: the tracer folds runs of identical
// queries, and the loop must fill buffers with one record per call.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, v;
	MPI_Init(&argc, &argv);
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (long i = 0; i < n; i++) MPI_Comm_rank(i % 2 ? MPI_COMM_SELF : MPI_COMM_WORLD, &v);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) printf("loop done\n");
	if (argc > 2) {
		fflush(stdout);
		sleep((unsigned)atoi(argv[2]));
	}
	MPI_Finalize();
	return 0;
}
