// Forty short-lived threads, one after the other, each making MPI calls:
// with a small TraceBufSize, buffers must come back when threads end.
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg) {
	int v;
	(void)arg;
	MPI_Comm_rank(MPI_COMM_WORLD, &v);
	MPI_Comm_size(MPI_COMM_WORLD, &v);
	return NULL;
}

int main(int argc, char **argv) {
	int provided, rank;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	for (int i = 0; i < 40; i++) {
		pthread_t th;
		pthread_create(&th, NULL, work, NULL);
		pthread_join(th, NULL);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) printf("threads done\n");
	MPI_Finalize();
	return 0;
}
