// Polling loops, for the tracer's folding of unsuccessful tests and probes:
// odd ranks sleep 20 ms before each send, even ranks poll for it with each
// test or probe function in turn and print, per function, how many calls
// they made and how long those calls took by their own clock (around each
// call, so it bounds the tracer's in-call times from above). Under MPI 4
// (MPICH) the last loop polls MPI_Parrived for a partitioned receive.
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void nap(void) {
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
}

static int rank;
static long calls;
static double spent;

static void report(const char *fn) {
	printf("rank %d %s calls %ld ns %.0f\n", rank, fn, calls, spent);
	calls = 0;
	spent = 0;
}

// T times one call of a test or probe.
#define T(call) do { double t0_ = ns(); call; spent += ns() - t0_; calls++; } while (0)

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int peer = rank ^ 1, v = rank, in[2], flag, idx, outc, ix[2];
	MPI_Request r[2];
	MPI_Status st[2];
	if (rank % 2) {
		for (int tag = 1; tag <= 11; tag++) {
			nap();
			MPI_Send(&v, 1, MPI_INT, peer, tag, MPI_COMM_WORLD);
			if (tag == 3 || tag == 5 || tag == 7) { // the second request of a pair
				MPI_Send(&v, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD);
				tag++;
			}
		}
#if MPI_VERSION >= 4
		// A partitioned send of one partition, marked ready after a nap.
		MPI_Psend_init(&v, 1, 1, MPI_INT, peer, 13, MPI_COMM_WORLD, MPI_INFO_NULL, r);
		MPI_Start(r);
		nap();
		MPI_Pready(0, r[0]);
		MPI_Wait(r, MPI_STATUS_IGNORE);
		MPI_Request_free(r);
#endif
	} else {
		MPI_Irecv(in, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, r);
		do T(MPI_Test(r, &flag, MPI_STATUS_IGNORE)); while (!flag);
		report("MPI_Test");

		do T(MPI_Iprobe(peer, 2, MPI_COMM_WORLD, &flag, st)); while (!flag);
		report("MPI_Iprobe");
		MPI_Recv(in, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

		MPI_Irecv(in, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, r);
		MPI_Irecv(in + 1, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, r + 1);
		for (int done = 0; done < 2;) {
			T(MPI_Testany(2, r, &idx, &flag, st));
			done += flag;
		}
		report("MPI_Testany");

		MPI_Irecv(in, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, r);
		MPI_Irecv(in + 1, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, r + 1);
		for (int done = 0; done < 2;) {
			T(MPI_Testsome(2, r, &outc, ix, st));
			done += outc;
		}
		report("MPI_Testsome");

		MPI_Irecv(in, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, r);
		MPI_Irecv(in + 1, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, r + 1);
		do T(MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE)); while (!flag);
		report("MPI_Testall");

		MPI_Irecv(in, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, r);
		do T(MPI_Request_get_status(r[0], &flag, st)); while (!flag);
		report("MPI_Request_get_status");
		MPI_Wait(r, MPI_STATUS_IGNORE);

		// Runs broken by another call every third test: folded in threes.
		MPI_Irecv(in, 1, MPI_INT, peer, 10, MPI_COMM_WORLD, r);
		for (long i = 1;; i++) {
			T(MPI_Test(r, &flag, MPI_STATUS_IGNORE));
			if (flag) break;
			if (i % 3 == 0) MPI_Comm_rank(MPI_COMM_WORLD, &v);
		}
		report("MPI_Test/broken");

		// Two call sites in turn: nothing to fold.
		for (;;) {
			T(MPI_Iprobe(peer, 12, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
			T(MPI_Iprobe(peer, 11, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
			if (flag) break;
		}
		report("MPI_Iprobe/alternating");
		MPI_Recv(in, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#if MPI_VERSION >= 4
		// MPI 4 partitioned receive (MPICH; Open MPI 4.1 has MPIX_ only):
		// poll until the one partition arrived.
		MPI_Precv_init(in, 1, 1, MPI_INT, peer, 13, MPI_COMM_WORLD, MPI_INFO_NULL, r);
		MPI_Start(r);
		do T(MPI_Parrived(r[0], 0, &flag)); while (!flag);
		report("MPI_Parrived");
		MPI_Wait(r, MPI_STATUS_IGNORE);
		MPI_Request_free(r);
#endif
	}
	MPI_Finalize();
	return 0;
}
