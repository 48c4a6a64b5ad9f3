/* flushgap.c: many cheap MPI calls in a tight loop, timed by the program
 * itself, so that a test can tell from the trace where the tracer's buffer
 * hand-overs were charged (tracer/flush_test.go). With a small TraceBufSize
 * the loop fills a buffer every few thousand calls and, the encoder being
 * slower than the loop, waits for a free one: flushes of up to milliseconds.
 *
 * Each rank writes flushgap.<rank>.times: per call of MPI_Comm_size in the
 * loop, two int64 (CLOCK_MONOTONIC_RAW ns): just before the call and just
 * after it returned. Between calls the program spins `gap` ns (argv[2]).
 * The communicator alternates between MPI_COMM_WORLD and MPI_COMM_SELF, so
 * that no two consecutive calls are alike: the tracer folds runs of
 * identical queries, and the loop must fill buffers call by call.
 *
 *   flushgap [calls [gap_ns]]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30000;
	int64_t gap = argc > 2 ? atoll(argv[2]) : 0;
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int64_t *t = malloc(sizeof(int64_t) * 2 * n);
	if (!t) MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		t[2 * i] = now();
		MPI_Comm_size(i % 2 ? MPI_COMM_SELF : MPI_COMM_WORLD, &size);
		t[2 * i + 1] = now();
		if (gap > 0)
			while (now() < t[2 * i + 1] + gap) {
			}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	char name[64];
	snprintf(name, sizeof name, "flushgap.%d.times", rank);
	FILE *f = fopen(name, "wb");
	if (!f || fwrite(t, sizeof(int64_t), 2 * (size_t)n, f) != 2 * (size_t)n || fclose(f) != 0) {
		fprintf(stderr, "flushgap: writing %s failed\n", name);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Finalize();
	if (rank == 0) printf("flushgap done\n");
	return 0;
}
