// Rank 0 receives from every other rank with MPI_ANY_SOURCE / MPI_ANY_TAG
// (blocking, nonblocking with MPI_STATUS_IGNORE, and after a probe); the
// others send with tag 10 + rank.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size, v;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int round = 0; round < 3; round++) {
		if (rank == 0) {
			for (int i = 1; i < size; i++) {
				MPI_Status st;
				if (round == 0) {
					MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
				} else if (round == 1) {
					MPI_Request r;
					MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
					MPI_Wait(&r, MPI_STATUS_IGNORE);
				} else {
					int flag = 0;
					while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
					MPI_Probe(st.MPI_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
					MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				}
			}
		} else {
			v = rank;
			MPI_Send(&v, 1, MPI_INT, 0, 10 + rank, MPI_COMM_WORLD);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
