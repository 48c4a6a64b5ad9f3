// Call stacks of optimised code (built -O2 -fomit-frame-pointer by
// tracer/stacks_test.go). Ranks exchange in pairs (0-1, 2-3) through a chain
// of helpers, each called from two sites: every MPI_Sendrecv of "deep" has
// one of 16 stacks main > top > mid2 > mid1 > exch, which the tracer must
// tell apart frame by frame. mid2 has a variable-length array, so GCC
// addresses its frame through RBP: a CFA rule on RBP, where the others have
// theirs on RSP. The "// @name" markers give the lines the test expects.
//
// Modes: "deep" (the 16 stacks, 3 times over); "nounw" (exch called through
// nounw_call, in a library built without unwind tables: the stack must end
// there); "storm" (SIGPROF every 20 µs of CPU time and SIGALRM every 50 µs
// while 4000 deep calls run: prints the signals caught and a checksum);
// "kill" (rank 1 runs deep calls until a thread SIGKILLs it after 300 ms);
// "alias" (exch's frame at one address whichever of outer1, outer2 and
// outer3 it is reached through: shim has an RBP-based frame whose alloca
// puts exch's frame there, so that the stack words of one call sit where
// those of another were; prints whether exch's frame was at one address).
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NOIN __attribute__((noinline, noclone))

volatile int sink;
static int peer;
static double sum;
static volatile sig_atomic_t caught;

void nounw_call(void (*f)(int), int x); // libnounw.so

static char *exch_frame;  // where exch's locals were (alias)
static int exch_moved;    // they moved (alias)
static char *shim_target; // where shim puts exch's frame

NOIN void exch(int x) {
	double out[4] = {x, 1, 2, 3}, in[4];
	if (exch_frame && exch_frame != (char *)out) exch_moved = 1;
	exch_frame = (char *)out;
	MPI_Sendrecv(out, 4, MPI_DOUBLE, peer, x, in, 4, MPI_DOUBLE, peer, x, MPI_COMM_WORLD, MPI_STATUS_IGNORE); // @exch
	sum += in[0];
}

NOIN void mid1(int x) {
	exch(x); // @mid1a
	sink++;
	exch(x + 1); // @mid1b
	sink++;
}

NOIN void mid2(int x) {
	volatile char pad[x + 16];
	pad[0] = 1;
	mid1(x); // @mid2a
	sink += pad[0];
	mid1(x + 2); // @mid2b
	sink++;
}

NOIN void top(int x) {
	mid2(x); // @topa
	sink++;
	mid2(x + 4); // @topb
	sink++;
}

// shim's frame is addressed through RBP (alloca), and its alloca ends at
// shim_target whatever its own frame's address: exch's frame is always
// at the same place.
NOIN void shim(int x) {
	char *here = __builtin_frame_address(0);
	if (!shim_target) shim_target = here - 1024;
	volatile char *pad = __builtin_alloca((size_t)(here - shim_target));
	pad[0] = 1;
	exch(x); // @shim
	sink += pad[0];
}

// outer1 and outer3 have frames of one size, outer2 a smaller one: through
// outer2, shim's frame is higher and the words of its frame through outer1
// lie in its alloca, untouched.
NOIN void outer1(int x) {
	volatile char buf[512];
	buf[0] = 1;
	shim(x); // @outer1
	sink += buf[0];
}

NOIN void outer2(int x) {
	volatile char buf[64];
	buf[0] = 2;
	shim(x); // @outer2
	sink += buf[0];
}

NOIN void outer3(int x) {
	volatile char buf[512];
	buf[0] = 3;
	shim(x); // @outer3
	sink += buf[0];
}

NOIN void viacb(int x) {
	exch(x); // @cb
	sink++;
}

static void onsig(int s) {
	(void)s;
	caught++;
}

static void *killer(void *arg) {
	(void)arg;
	usleep(300000);
	kill(getpid(), SIGKILL);
	return NULL;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "deep";
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	peer = rank ^ 1;
	if (strcmp(mode, "deep") == 0) {
		for (int i = 0; i < 3; i++) {
			top(0); // @maina
			sink++;
			top(8); // @mainb
			sink++;
		}
	} else if (strcmp(mode, "nounw") == 0) {
		nounw_call(viacb, 1);
		sink++;
	} else if (strcmp(mode, "storm") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = onsig;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGPROF, &sa, NULL);
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = {{0, 20}, {0, 20}};
		setitimer(ITIMER_PROF, &it, NULL);
		it.it_interval.tv_usec = it.it_value.tv_usec = 50;
		setitimer(ITIMER_REAL, &it, NULL);
		for (int i = 0; i < 250; i++) {
			top(0);
			sink++;
			top(8);
			sink++;
		}
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_PROF, &off, NULL);
		setitimer(ITIMER_REAL, &off, NULL);
		printf("rank %d: signals=%d sum=%.0f\n", rank, (int)caught, sum);
	} else if (strcmp(mode, "alias") == 0) {
		for (int i = 0; i < 3; i++) {
			outer1(i);
			sink++;
			outer2(i);
			sink++;
			outer3(i);
			sink++;
		}
		printf("rank %d: exch frame %s\n", rank, exch_moved ? "moved" : "fixed");
	} else if (strcmp(mode, "kill") == 0) {
		pthread_t th;
		if (rank == 1) pthread_create(&th, NULL, killer, NULL);
		if (rank < 2) for (;;) top(0);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
