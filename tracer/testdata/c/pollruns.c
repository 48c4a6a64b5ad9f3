// Runs of unsuccessful polls and what ends them, for the tracer's folding
// (dt_rec_fold): rank 0 polls a receive that rank 1 satisfies only at the
// end, in runs broken by a plain record, by a success at the same call
// site, by changed attributes, by another call site, and by the periodic
// hand-over (a run longer than the epoch; the short runs come first, right
// after MPI_Init, well within the hand-over's first period). It prints, per run, the calls
// it made, the time they took by its own clock, and what it expects of
// the trace (the events' calls in order, "e" for an event of that run
// that is not a poll).
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long calls;
static double spent;

// T times one call of a test or probe.
#define T(call) do { double t0_ = ns(); call; spent += ns() - t0_; calls++; } while (0)

static void report(const char *run, const char *want) {
	printf("run %s calls %ld ns %.0f want %s\n", run, calls, spent, want);
	calls = 0;
	spent = 0;
}

int main(int argc, char **argv) {
	int rank, v = 0, w = 0, flag = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Request r, q, s;
	MPI_Status st;
	if (rank == 0) {
		MPI_Irecv(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r);

		for (int i = 0; i < 10; i++) T(MPI_Test(&r, &flag, &st));
		report("plain", "10");

		for (int i = 0; i < 10; i++) {
			T(MPI_Test(&r, &flag, &st));
			if (i == 3) MPI_Barrier(MPI_COMM_SELF);
		}
		report("record", "4,e,6");

		// A message to itself, received: its send request is complete,
		// and the sixth test of this site completes it.
		MPI_Irecv(&w, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &q);
		MPI_Isend(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &s);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		int done = 0;
		for (int i = 0; i < 11; i++) {
			T(MPI_Test(i == 5 ? &s : &r, &flag, &st));
			if (i == 5) done = flag;
		}
		if (!done) MPI_Wait(&s, MPI_STATUS_IGNORE);
		report("success", done ? "5,1,5" : "?");

		for (int i = 0; i < 6; i++) T(MPI_Iprobe(1, 100 + i % 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
		for (int i = 0; i < 6; i++) T(MPI_Iprobe(1, i < 3 ? 100 : 101, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
		report("attributes", "1,1,1,1,1,1,3,3");

		for (int i = 0; i < 4; i++) {
			T(MPI_Iprobe(1, 102, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
			T(MPI_Iprobe(1, 102, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
		}
		report("sites", "1,1,1,1,1,1,1,1");

		// Longer than two periods of the hand-over (200 ms): split there.
		double end = ns() + 450e6;
		while (ns() < end) T(MPI_Test(&r, &flag, &st));
		report("epoch", "split");
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
	else MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
