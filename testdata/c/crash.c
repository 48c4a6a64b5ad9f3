// Rank 1 dies abnormally after a few calls: "segv" dereferences NULL,
// "term" raises SIGTERM, "kill" sleeps long enough for a periodic flush and
// then SIGKILLs itself, "exit" exits without MPI_Finalize; "segvlate N"
// makes N more MPI_Comm_rank and MPI_Comm_size calls first and sleeps 0.5
// s (the tracer's writer has written them all), then dereferences NULL. The other ranks
// wait in a receive that never completes (or, for "exit", finish).
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, v = 0;
	const char *how = argc > 1 ? argv[1] : "segv";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		for (int i = 0; i < 5; i++) MPI_Comm_rank(MPI_COMM_WORLD, &v);
		if (strcmp(how, "segvlate") == 0) {
			long n = argc > 2 ? atol(argv[2]) : 0;
			for (long i = 0; i < n; i++) { // alternated: a run of one call would be folded into one record
				MPI_Comm_rank(MPI_COMM_WORLD, &v);
				MPI_Comm_size(MPI_COMM_WORLD, &v);
			}
			usleep(500000);
			how = "segv";
		}
		if (strcmp(how, "segv") == 0) {
			volatile int *p = NULL;
			*p = 1;
		} else if (strcmp(how, "term") == 0) {
			raise(SIGTERM);
		} else if (strcmp(how, "kill") == 0) {
			usleep(700000);
			MPI_Comm_size(MPI_COMM_WORLD, &v); // the periodic flush happens here
			usleep(300000);
			kill(getpid(), SIGKILL);
		} else {
			exit(0);
		}
	}
	if (strcmp(how, "exit") == 0) {
		MPI_Finalize();
		return 0;
	}
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
