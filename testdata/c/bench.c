// Per-call cost of MPI calls, for the tracer overhead benchmark:
//   bench pingpong|barrier|allreduce|cheap|poll|testany|test ITERATIONS
// (poll: an MPI_Iprobe that never finds a message, as a program polling
// for one makes: the tracer folds such calls into one record per run;
// testany and test: MPI_Testany of one request, as hpcc's RandomAccess
// polls, and MPI_Test, on a receive that stays pending until the loops end)
// Repeats the loop 5 times and prints, on rank 0, the best time per MPI call
// (ns), measured with clock_gettime so that the measurement itself makes no
// MPI call, and how long its MPI_Finalize took (what a tracer leaves for
// the end shows there). With BENCH_WORK=k in the environment, each rank of
// the ping-pong runs k steps of dependent stores and loads (a few ns each)
// right before each of its sends, or right after them with
// BENCH_WORK_AFTER=1: what a tool's work costs at those two places of the
// critical path, untraced (BenchmarkCriticalPath). It also prints what two
// reads of the TSC cost here, both ranks reading at once (clock_pair_ns):
// the tracer reads it at a call's entry and exit, so that no tracer adds
// less per call.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// clockPair is the best time of two back-to-back TSC reads, over 5 loops
// of 1 M; 0 where there is no TSC.
static double clockPair(void) {
#if defined(__x86_64__)
	double best = 1e300;
	volatile unsigned long long sink = 0;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now();
		for (int i = 0; i < 1000000; i++) {
			unsigned long long a = __rdtsc();
			sink += __rdtsc() - a;
		}
		double t = (now() - t0) / 1e6;
		if (t < best) best = t;
	}
	return best;
#else
	return 0;
#endif
}

// The loops run four calls deep, so that UserStackSize 4 walks four frames.
static double loops(int rank, const char *mode, long n);
__attribute__((noinline)) static double depth3(int rank, const char *mode, long n) { return loops(rank, mode, n); }
__attribute__((noinline)) static double depth2(int rank, const char *mode, long n) { return depth3(rank, mode, n) + 0; }
__attribute__((noinline)) static double depth1(int rank, const char *mode, long n) { return depth2(rank, mode, n) + 0; }

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *mode = argc > 1 ? argv[1] : "cheap";
	long n = argc > 2 ? atol(argv[2]) : 100000;
	double best = depth1(rank, mode, n);
	MPI_Barrier(MPI_COMM_WORLD);
	double pair = clockPair();
	if (rank == 0) printf("ns_per_call=%.2f\nclock_pair_ns=%.2f\n", best, pair);
	fflush(stdout);
	double f0 = now();
	MPI_Finalize();
	if (rank == 0) printf("finalize_ns=%.0f\n", now() - f0);
	return 0;
}

// work stands for a tool's work around a send: k read-modify-writes of
// memory, each depending on the one before.
static long work_steps;
static int work_after;
static __thread volatile long work_sink[8];
static inline void work(int after) {
	if (after != work_after) return;
	for (long i = 0; i < work_steps; i++) work_sink[i & 7] += i;
}

static double loops(int rank, const char *mode, long n) {
	int v = 1, w, idx, size;
	work_steps = getenv("BENCH_WORK") ? atol(getenv("BENCH_WORK")) : 0;
	work_after = getenv("BENCH_WORK_AFTER") && strcmp(getenv("BENCH_WORK_AFTER"), "1") == 0;
	double best = 1e300;
	int calls = 1;
	MPI_Request req = MPI_REQUEST_NULL;
	MPI_Status st;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int pending = strcmp(mode, "testany") == 0 || strcmp(mode, "test") == 0;
	if (pending) MPI_Irecv(&v, 1, MPI_INT, (rank + 1) % size, 78, MPI_COMM_WORLD, &req);
	for (int rep = 0; rep < 5; rep++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = now();
		if (strcmp(mode, "pingpong") == 0 && work_steps == 0) {
			calls = 2;
			for (long i = 0; i < n; i++) {
				if (rank == 0) {
					MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
					MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else if (rank == 1) {
					MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
				}
			}
		} else if (strcmp(mode, "pingpong") == 0) { // with work around the sends
			calls = 2;
			for (long i = 0; i < n; i++) {
				if (rank == 0) {
					work(0);
					MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
					work(1);
					MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else if (rank == 1) {
					MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					work(0);
					MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
					work(1);
				}
			}
		} else if (strcmp(mode, "barrier") == 0) {
			for (long i = 0; i < n; i++) MPI_Barrier(MPI_COMM_WORLD);
		} else if (strcmp(mode, "allreduce") == 0) {
			for (long i = 0; i < n; i++) MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		} else if (strcmp(mode, "poll") == 0) {
			for (long i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &w, MPI_STATUS_IGNORE);
		} else if (strcmp(mode, "testany") == 0) {
			for (long i = 0; i < n; i++) MPI_Testany(1, &req, &idx, &w, &st);
		} else if (strcmp(mode, "test") == 0) {
			for (long i = 0; i < n; i++) MPI_Test(&req, &w, &st);
		} else {
			for (long i = 0; i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &w);
		}
		double t = (now() - t0) / ((double)n * calls);
		if (t < best) best = t;
	}
	if (pending) { // each rank's pending receive is matched by its left neighbour's send
		MPI_Send(&w, 1, MPI_INT, (rank + size - 1) % size, 78, MPI_COMM_WORLD);
		MPI_Wait(&req, MPI_STATUS_IGNORE);
	}
	return best;
}
