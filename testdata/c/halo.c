// Nonblocking halo exchange on a ring: Irecv/Isend + Waitall, then Waitany,
// Waitsome and Testall variants, then persistent requests (Send_init,
// Recv_init, Startall, Waitall, Request_free). Prints a checksum so that
// results can be compared with and without the tracer.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	double out[2][8], in[2][8];
	long sum = 0;
	MPI_Request rq[4];
	MPI_Status st[4];
	for (int it = 0; it < 3; it++) {
		for (int i = 0; i < 8; i++) out[0][i] = out[1][i] = rank * 100 + it * 10 + i;
		MPI_Irecv(in[0], 8, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(in[1], 8, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]);
		MPI_Isend(out[0], 8, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[2]);
		MPI_Isend(out[1], 8, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rq[3]);
		if (it == 0) {
			MPI_Waitall(4, rq, st);
		} else if (it == 1) {
			for (int k = 0; k < 4; k++) {
				int idx;
				MPI_Waitany(4, rq, &idx, &st[0]);
			}
		} else {
			int done = 0, flag = 0, outc, idx[4];
			while (done < 2) {
				MPI_Waitsome(2, rq, &outc, idx, st);
				if (outc != MPI_UNDEFINED) done += outc;
			}
			while (!flag) MPI_Testall(2, rq + 2, &flag, MPI_STATUSES_IGNORE);
		}
		sum += (long)in[0][3] + (long)in[1][5];
	}
	// Persistent requests.
	MPI_Request pr[2];
	MPI_Recv_init(in[0], 8, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &pr[0]);
	MPI_Send_init(out[0], 8, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &pr[1]);
	for (int it = 0; it < 2; it++) {
		MPI_Startall(2, pr);
		MPI_Waitall(2, pr, st);
		sum += (long)in[0][0];
	}
	MPI_Request_free(&pr[0]);
	MPI_Request_free(&pr[1]);
	printf("rank %d sum %ld\n", rank, sum);
	MPI_Finalize();
	return 0;
}
