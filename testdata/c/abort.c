// Rank 1 calls MPI_Abort after a few calls while the others wait in a
// receive that never completes.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, v = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		for (int i = 0; i < 5; i++) MPI_Comm_rank(MPI_COMM_WORLD, &v);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
