// MPI_THREAD_MULTIPLE: two threads per rank exchange messages with the same
// thread of the partner rank (tags tell the threads apart).
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

static int rank, size;

static void *work(void *arg) {
	int t = (int)(long)arg, peer = rank ^ 1, v = 0;
	for (int i = 0; i < 200; i++) {
		if (rank < peer) {
			MPI_Send(&i, 1, MPI_INT, peer, t, MPI_COMM_WORLD);
			MPI_Recv(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD);
		}
	}
	return NULL;
}

int main(int argc, char **argv) {
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (provided < MPI_THREAD_MULTIPLE) {
		if (rank == 0) printf("no MPI_THREAD_MULTIPLE\n");
		MPI_Finalize();
		return 0;
	}
	pthread_t th[2];
	for (long t = 0; t < 2; t++) pthread_create(&th[t], NULL, work, (void *)t);
	for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	printf("rank %d threads done\n", rank);
	MPI_Finalize();
	return 0;
}
