// mpmd.c: one program of an MPMD job, for dtpa's end-to-end tests. Built
// once and run under two names (mpirun -np 2 ./ocean : -np 2 ./atmos, or
// srun --multi-prog), each rank acts by the name it was run under (not by
// MPI_APPNUM, which srun --multi-prog does not set apart). The ocean's
// ranks compute 200 ms, then send to the atmosphere's, which wait for them
// from the start: Real Sync 0.2 s on each atmosphere rank. Then a barrier.
// Half the ranks in each program.
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int half = size / 2, x = rank;
	if (strcmp(name, "ocean") == 0) {
		usleep(200000);
		MPI_Send(&x, 1, MPI_INT, rank + half, 0, MPI_COMM_WORLD);
	} else if (strcmp(name, "atmos") == 0) {
		MPI_Recv(&x, 1, MPI_INT, rank - half, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		fprintf(stderr, "mpmd: run as ocean or atmos, not %s\n", name);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
