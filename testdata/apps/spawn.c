// spawn.c: a job that starts more processes, for dtpa's end-to-end tests.
// The parents (run with -np 2) call MPI_Comm_spawn for 2 children of the
// same program, which compute 100 ms, send their rank to the parents'
// rank 0, and join the parents in one communicator (MPI_Intercomm_merge:
// the parents are its ranks 0 and 1, the children 2 and 3). There child 1
// sends to child 0 after 50 ms, and all four reduce their ranks in it.
// The children's MPI_COMM_WORLD numbers them 0 and 1 again, in the
// parents' working directory.
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm parent, children, merged;
	MPI_Comm_get_parent(&parent);
	int rank, mrank, sum;
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
		MPI_Intercomm_merge(children, 0, &merged);
		MPI_Comm_rank(merged, &mrank);
		MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged);
		if (rank == 0)
			printf("spawn: merged ranks sum to %d\n", sum);
		MPI_Comm_free(&merged);
		MPI_Comm_disconnect(&children);
	} else {
		usleep(100000);
		MPI_Send(&rank, 1, MPI_INT, 0, 0, parent);
		MPI_Intercomm_merge(parent, 1, &merged);
		MPI_Comm_rank(merged, &mrank);
		int x;
		if (rank == 1) {
			usleep(50000);
			MPI_Send(&rank, 1, MPI_INT, 2, 1, merged);
		} else {
			MPI_Recv(&x, 1, MPI_INT, 3, 1, merged, MPI_STATUS_IGNORE);
		}
		MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged);
		MPI_Comm_free(&merged);
		MPI_Comm_disconnect(&parent);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
