// hang: a job that deadlocks, for what dtpa says of a job ended while its
// ranks waited. After a barrier, rank 0 waits in a second barrier that
// the others never reach, and each other rank receives from the next one
// (the last from rank 1), which never sends. The job runs until it is
// ended (the test interrupts it as Ctrl-C would).
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size, v = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("hang: waiting\n");
		fflush(stdout);
		MPI_Barrier(MPI_COMM_WORLD); // hang.c:18
	} else {
		MPI_Recv(&v, 1, MPI_INT, rank % (size - 1) + 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); // hang.c:20
	}
	MPI_Finalize();
	return 0;
}
