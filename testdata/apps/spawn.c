// spawn.c: a job that starts more processes, for dtpa's end-to-end tests.
// The parents (run with -np 2) call MPI_Comm_spawn for 2 children of the
// same program, which compute 100 ms, send their rank to the parents'
// rank 0 and disconnect. The children's MPI_COMM_WORLD numbers them 0
// and 1 again, in the parents' working directory.
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm parent, children;
	MPI_Comm_get_parent(&parent);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (parent == MPI_COMM_NULL) {
		MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, MPI_ERRCODES_IGNORE);
		if (rank == 0) {
			int x, sum = 0;
			for (int c = 0; c < 2; c++) {
				MPI_Recv(&x, 1, MPI_INT, c, 0, children, MPI_STATUS_IGNORE);
				sum += x;
			}
			printf("spawn: children's ranks sum to %d\n", sum);
		}
		MPI_Comm_disconnect(&children);
	} else {
		usleep(100000);
		MPI_Send(&rank, 1, MPI_INT, 0, 0, parent);
		MPI_Comm_disconnect(&parent);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
