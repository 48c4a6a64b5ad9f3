// Ping-pong between ranks 0 and 1 (others idle in a barrier): blocking
// sends and receives with distinct tags, then a barrier.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size, buf[4] = {0};
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 0; i < 10; i++) {
		if (rank == 0) {
			MPI_Send(buf, 4, MPI_INT, 1, 100 + i, MPI_COMM_WORLD);
			MPI_Recv(buf, 4, MPI_INT, 1, 200 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Status st;
			MPI_Recv(buf, 4, MPI_INT, 0, 100 + i, MPI_COMM_WORLD, &st);
			MPI_Send(buf, 4, MPI_INT, 0, 200 + i, MPI_COMM_WORLD);
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) printf("pingpong done on %d ranks\n", size);
	MPI_Finalize();
	return 0;
}
