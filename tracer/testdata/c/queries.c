// Hot loops of queries, for the tracer's folding of runs of identical calls
// that complete nothing (dt_rec_end_query, dt_rec_end_poll): every rank
// runs each loop in turn and prints, per loop, how many calls it made, how
// long they took by its own clock (around each call: it bounds the
// tracer's in-call times from above), the summed time between consecutive
// calls (from one call's return to the next one's call: it bounds the
// trace's inner gaps from above), the loop's span (from before its first
// call to after its last) and how long its first and last calls took.
//
//   rank R LOOP calls N inside NS between NS span NS ends NS
//
// Loops: MPI_Comm_rank and MPI_Wtime back to back (folded), MPI_Test of a
// request completed before (MPI_REQUEST_NULL: flag true, nothing
// completed; folded whatever the gaps), MPI_Comm_size on MPI_COMM_WORLD and
// MPI_COMM_SELF in turn (different attributes: nothing to fold) and
// MPI_Comm_rank 20 µs apart (longer than DT_FOLD_GAP_NS's default: nothing
// to fold).
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 20000
#define SPACED 200

static double ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int rank;
static long calls;
static double inside, between, first, last, start, prev;

static void report(const char *loop) {
	printf("rank %d %s calls %ld inside %.0f between %.0f span %.0f ends %.0f\n", rank, loop, calls, inside, between,
		prev - start, first + last);
	calls = 0;
	inside = between = 0;
}

// T times one call: the first starts the loop's span, each later one adds
// the time since the previous one returned.
#define T(call) do { \
	double t0_ = ns(); \
	call; \
	double t1_ = ns(); \
	if (calls == 0) start = t0_, first = t1_ - t0_; \
	else between += t0_ - prev; \
	inside += t1_ - t0_; \
	last = t1_ - t0_; \
	prev = t1_; \
	calls++; \
} while (0)

static void spin(double d) {
	double until = ns() + d;
	while (ns() < until) {
	}
}

int main(int argc, char **argv) {
	int v, flag;
	double w = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);

	for (int i = 0; i < N; i++) T(MPI_Comm_rank(MPI_COMM_WORLD, &v));
	report("MPI_Comm_rank");
	MPI_Barrier(MPI_COMM_WORLD);

	for (int i = 0; i < N; i++) T(w += MPI_Wtime());
	report("MPI_Wtime");
	MPI_Barrier(MPI_COMM_WORLD);

	MPI_Request r;
	MPI_Irecv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	for (int i = 0; i < N; i++) T(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
	report("MPI_Test");
	MPI_Barrier(MPI_COMM_WORLD);

	for (int i = 0; i < N; i++) T(MPI_Comm_size(i % 2 ? MPI_COMM_SELF : MPI_COMM_WORLD, &v));
	report("MPI_Comm_size");
	MPI_Barrier(MPI_COMM_WORLD);

	for (int i = 0; i < SPACED; i++) {
		T(MPI_Comm_rank(MPI_COMM_WORLD, &v));
		spin(20000);
	}
	report("MPI_Comm_rank/spaced");

	MPI_Finalize();
	return w < 0;
}
