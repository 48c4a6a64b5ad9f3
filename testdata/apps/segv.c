// segv: rank 1 crashes in a known place, built with -O2 (no frame
// pointers: its callers are found from the unwind tables). "segv" writes
// through a null pointer in kernel, called from solve, called from main;
// "abort" calls abort() in check, called from main; "thread" has a thread
// that never calls MPI (as an OpenMP worker) call solve, which crashes in
// kernel; "mpiabort" calls MPI_Abort in giveup, called from main;
// "atexit" lets every rank finish (MPI_Finalize), then rank 1 crashes in
// kernel, called from solve, called from its exit handler cleanup. The
// lines are marked (@kernel …) for the test. In the other modes the other
// ranks wait in MPI_Recv until the launcher ends them.
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void kernel(double *a, int n) {
	for (int i = 0; i < n; i++) a[i] = a[i] * 0.5 + 1.0; // @kernel
}

__attribute__((noinline)) double solve(double *a, int n) {
	kernel(a, n); // @solve
	return a[n - 1];
}

__attribute__((noinline)) void check(int ok) {
	if (!ok) abort(); // @check
}

__attribute__((noinline)) void giveup(int code) {
	MPI_Abort(MPI_COMM_WORLD, code); // @mpi-abort
	fprintf(stderr, "segv: MPI_Abort returned\n"); // (no tail call: giveup keeps its frame)
}

static double *late;

__attribute__((noinline)) void cleanup(void) {
	printf("segv: %g\n", solve(late, 100)); // @cleanup
}

__attribute__((noinline)) void *worker(void *arg) {
	printf("segv: %g\n", solve(arg, 100)); // @worker
	return NULL;
}

int main(int argc, char **argv) {
	int rank, v = 0;
	const char *how = argc > 1 ? argv[1] : "segv";
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (strcmp(how, "atexit") == 0) {
		if (rank == 1) {
			late = getenv("SEGV_NEVER") ? calloc(100, sizeof *late) : NULL;
			atexit(cleanup);
		}
		MPI_Finalize();
		return 0;
	}
	if (rank == 1) {
		double *a = getenv("SEGV_NEVER") ? calloc(100, sizeof *a) : NULL;
		if (strcmp(how, "abort") == 0) {
			check(v == 42); // @main-check
		} else if (strcmp(how, "mpiabort") == 0) {
			giveup(3); // @main-giveup
		} else if (strcmp(how, "thread") == 0) {
			pthread_t th;
			pthread_create(&th, NULL, worker, a);
			pthread_join(th, NULL);
		} else {
			printf("segv: %g\n", solve(a, 100)); // @main-solve
		}
	}
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
