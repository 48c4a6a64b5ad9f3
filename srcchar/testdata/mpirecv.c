// MPI test program for srcchar: rank 0 sends late to every other rank, so
// their MPI_Recv call site has Real Sync; interval 1 holds the exchange.
// The comments mark the lines the test expects in the SRC stacks.
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, size, buf[4] = {0};
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Pcontrol(100, 1); /* INTERVAL */
	for (int i = 0; i < 5; i++) {
		if (rank == 0) {
			usleep(2000);
			for (int r = 1; r < size; r++)
				MPI_Send(buf, 4, MPI_INT, r, i, MPI_COMM_WORLD); /* SEND */
		} else {
			MPI_Recv(buf, 4, MPI_INT, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* RECV */
		}
	}
	MPI_Barrier(MPI_COMM_WORLD); /* BARRIER */
	MPI_Pcontrol(101, 1);
	MPI_Finalize();
	return 0;
}
