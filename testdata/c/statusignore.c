// Statuses the program asked for, and those it ignored: prints every status
// it sees and what it received, so that a run with and without the tracer
// must print the same. Pairs (0,1) and (2,3) exchange.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int peer = rank ^ 1, a = rank * 7, b = -1, c[2];
	MPI_Status st;
	MPI_Request r[2];
	st.MPI_SOURCE = -99;
	st.MPI_TAG = -99;
	MPI_Sendrecv(&a, 1, MPI_INT, peer, 5, &b, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &st);
	printf("rank %d sendrecv got %d from %d tag %d\n", rank, b, st.MPI_SOURCE, st.MPI_TAG);
	MPI_Sendrecv(&a, 1, MPI_INT, peer, 6, &b, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	a = rank;
	MPI_Sendrecv_replace(&a, 1, MPI_INT, peer, 8, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	printf("rank %d replace got %d\n", rank, a);
	MPI_Irecv(&c[0], 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &r[0]);
	MPI_Isend(&rank, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &r[1]);
	MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
	printf("rank %d waitall got %d, requests null: %d %d\n", rank, c[0], r[0] == MPI_REQUEST_NULL, r[1] == MPI_REQUEST_NULL);
	int flag = 0;
	MPI_Irecv(&c[1], 1, MPI_INT, peer, 11, MPI_COMM_WORLD, &r[0]);
	MPI_Send(&rank, 1, MPI_INT, peer, 11, MPI_COMM_WORLD);
	while (!flag) MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
	printf("rank %d test got %d\n", rank, c[1]);
	MPI_Recv(&b, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
	printf("rank %d procnull source %d tag %d\n", rank, st.MPI_SOURCE == MPI_PROC_NULL, st.MPI_TAG == MPI_ANY_TAG);
	MPI_Finalize();
	return 0;
}
