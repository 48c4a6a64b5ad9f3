// early: rank 1 leaves the job early, returning from main without
// MPI_Finalize right after a barrier (@last), while the other ranks wait
// in MPI_Recv (@wait) for the message it never sends. The launcher ends
// the job (Open MPI's at once, a process having exited without
// MPI_Finalize), or the test interrupts it.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, v = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD); // @last
	if (rank == 1)
		return 0;
	if (rank == 0) {
		printf("early: waiting\n");
		fflush(stdout);
	}
	MPI_Recv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); // @wait
	MPI_Finalize();
	return 0;
}
