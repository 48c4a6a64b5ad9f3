// threads.c: threads of an MPI_THREAD_MULTIPLE program exchanging messages
// (e2e/threads_test.go). Ranks pair up (0 with 1, 2 with 3); in each rank
// two threads run besides the main thread:
//   - thread A (tag 1): the even rank receives one message from its
//     partner; rank 1 sleeps 0.2 s before sending it, rank 3 sends at once.
//     So rank 0 waits 0.2 s for a late sender (Real Sync 0.2, or more
//     when the sender wakes late: the receivers print their waits), rank
//     2 does not wait;
//   - thread B (tag 2): the even rank sends ten messages with MPI_Send,
//     the odd one receives them with MPI_Irecv and MPI_Wait, during
//     thread A's wait (so that the even ranks wait in thread A only);
// while the main thread runs an MPI_Allreduce on a duplicate of
// MPI_COMM_WORLD (collectives of one communicator stay in one thread, as
// MPI requires), then joins the threads.
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int rank, partner;

static void sleep_s(double s) {
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

// now is CLOCK_MONOTONIC in seconds, the same clock in every process of
// the host (the test runs every rank on one host).
static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// thread_a: the sender puts the time it enters MPI_Send in the message, so
// that the receiver prints how long it waited for it: the Real Sync the
// analysis must find, however late the loaded machine woke the sender.
static void *thread_a(void *arg) {
	(void)arg;
	double t;
	if (rank % 2 == 0) {
		double t0 = now();
		MPI_Recv(&t, 1, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		printf("threads: rank %d waited %.6f s\n", rank, t > t0 ? t - t0 : 0.0);
	} else {
		if (rank == 1) sleep_s(0.2);
		t = now();
		MPI_Send(&t, 1, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD);
	}
	return NULL;
}

static void *thread_b(void *arg) {
	(void)arg;
	for (int i = 0; i < 10; i++) {
		int v = rank * 100 + i;
		if (rank % 2 == 0) {
			MPI_Send(&v, 1, MPI_INT, partner, 2, MPI_COMM_WORLD);
		} else {
			MPI_Request rq;
			MPI_Irecv(&v, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, &rq);
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
			if (v != partner * 100 + i) {
				fprintf(stderr, "rank %d: got %d, want %d\n", rank, v, partner * 100 + i);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
	}
	return NULL;
}

int main(int argc, char **argv) {
	int provided, size;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (provided != MPI_THREAD_MULTIPLE || size % 2 != 0) {
		fprintf(stderr, "threads: needs MPI_THREAD_MULTIPLE (got %d) and an even number of ranks\n", provided);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	partner = rank ^ 1;
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Barrier(MPI_COMM_WORLD);

	pthread_t a, b;
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_create(&b, NULL, thread_b, NULL);
	int one = 1, sum = 0;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	if (sum != size) {
		fprintf(stderr, "rank %d: allreduce %d, want %d\n", rank, sum, size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	MPI_Comm_free(&dup);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
