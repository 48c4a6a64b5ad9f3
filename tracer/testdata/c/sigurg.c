/* sigurg: a program that handles SIGURG itself, as PETSc does (its
 * PetscInitialize, after MPI_Init, installs one handler for SIGURG and a
 * dozen other signals, which reports "Caught signal" and aborts the job).
 * The tracer runs the Go runtime inside the process, which by default
 * preempts its goroutines by sending SIGURG to its own threads; the
 * program's handler would then run on them. The handler here writes
 * "sigurg: caught on thread <tid>" and counts.
 *
 * After MPI_Init each rank sends ITERS messages to itself (MPI_Sendrecv:
 * events enough for the tracer's writer to work during the run and for the
 * compaction of the trace, after MPI_Finalize, to run longer than the Go
 * runtime lets a goroutine run unpreempted, and to collect garbage; to
 * itself, so that ranks polling on shared cores do not wait for each
 * other), computes between them, and after MPI_Finalize waits 0.5 s for
 * the compaction. Rank 0 prints "sigurg: done". */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ITERS 150000

static void on_urg(int sig) {
	(void)sig;
	char m[64];
	int n = snprintf(m, sizeof m, "sigurg: caught on thread %ld\n", (long)syscall(SYS_gettid));
	if (write(2, m, n) < 0) return;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_urg;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGURG, &sa, NULL);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	volatile double x = 0;
	for (int i = 0; i < ITERS; i++) {
		int out = i, in;
		MPI_Sendrecv(&out, 1, MPI_INT, rank, 0, &in, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (int k = 0; k < 50; k++) x += k * 1e-9;
	}
	MPI_Finalize();
	struct timespec ts = {0, 500000000};
	nanosleep(&ts, NULL);
	if (rank == 0) printf("sigurg: done\n");
	return 0;
}
