// Request functions not in halo.c: MPI_Cancel of a receive that never
// matches, MPI_Testany and MPI_Testsome loops. Pairs (0,1) and (2,3).
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, peer, a = 0, b[2] = {0, 0}, flag = 0, idx, outc, ids[2];
	MPI_Request r, rq[2];
	MPI_Status st, sts[2];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	peer = rank ^ 1;
	MPI_Irecv(&a, 1, MPI_INT, peer, 50, MPI_COMM_WORLD, &r);
	MPI_Cancel(&r);
	MPI_Wait(&r, &st);
	MPI_Test_cancelled(&st, &flag);
	printf("rank %d cancelled %d\n", rank, flag);
	for (int round = 0; round < 2; round++) {
		MPI_Irecv(&b[0], 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(&b[1], 1, MPI_INT, peer, 61, MPI_COMM_WORLD, &rq[1]);
		MPI_Send(&rank, 1, MPI_INT, peer, 60, MPI_COMM_WORLD);
		MPI_Send(&rank, 1, MPI_INT, peer, 61, MPI_COMM_WORLD);
		int done = 0;
		while (done < 2) {
			if (round == 0) {
				MPI_Testany(2, rq, &idx, &flag, &st);
				if (flag && idx != MPI_UNDEFINED) done++;
			} else {
				MPI_Testsome(2, rq, &outc, ids, sts);
				if (outc != MPI_UNDEFINED) done += outc;
			}
		}
	}
	MPI_Finalize();
	return 0;
}
