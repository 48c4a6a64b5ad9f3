// cancel_isendrecv.c: a send cancelled before anybody receives it, and
// MPI_Isendrecv (MPI 4, where the MPI has it), for e2e/cancel_test.go.
// Rank 0 sends rank 1 a message with a tag nobody receives and cancels it;
// whether the cancellation succeeded (MPI_Test_cancelled) is sent to rank
// 1, which receives the message only if it was not cancelled, so that the
// program is correct either way: the analysis must find nothing
// unmatched. Then every rank exchanges with its partner (rank ^ 1) with
// MPI_Isendrecv and MPI_Wait.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int v = 42, cancelled = 0;
	if (rank == 0) {
		MPI_Request rq;
		MPI_Status st;
		MPI_Isend(&v, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &rq);
		MPI_Cancel(&rq);
		MPI_Wait(&rq, &st);
		MPI_Test_cancelled(&st, &cancelled);
		printf("cancel_isendrecv: send cancelled %d\n", cancelled);
		MPI_Send(&cancelled, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
	} else if (rank == 1) {
		MPI_Recv(&cancelled, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (!cancelled) MPI_Recv(&v, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
#if MPI_VERSION >= 4
	int out = rank, in = -1;
	MPI_Request rq;
	MPI_Isendrecv(&out, 1, MPI_INT, rank ^ 1, 5, &in, 1, MPI_INT, rank ^ 1, 5, MPI_COMM_WORLD, &rq);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	if (in != (rank ^ 1)) {
		fprintf(stderr, "rank %d: got %d\n", rank, in);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0) printf("cancel_isendrecv: isendrecv\n");
#endif
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
