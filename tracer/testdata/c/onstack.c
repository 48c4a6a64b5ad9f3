// onstack: the handlers a program installs for SIGPROF (sigaction, without
// SA_ONSTACK) and SIGCHLD (signal) after MPI_Init, read back. Under dtrun
// the preload stub adds SA_ONSTACK (tracer/stub/stub.c); the handlers then
// run, a child's end and a profiling storm included, and the program's
// results are untouched.
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t prof, chld;
static void onprof(int s) { (void)s; prof++; }
static void onchld(int s) { (void)s; chld++; }

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = onprof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	signal(SIGCHLD, onchld);
	struct sigaction p, c;
	sigaction(SIGPROF, NULL, &p);
	sigaction(SIGCHLD, NULL, &c);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_PROF, &it, NULL);
	double sum = 0;
	for (int i = 0; i < 200; i++) {
		double v = i, r;
		MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		sum += r;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	pid_t pid = fork();
	if (pid == 0) _exit(0);
	waitpid(pid, NULL, 0);
	printf("rank %d: prof_onstack=%d chld_onstack=%d chld_handler=%d sum=%.0f\n", rank, (p.sa_flags & SA_ONSTACK) != 0,
	       (c.sa_flags & SA_ONSTACK) != 0, c.sa_handler == onchld, sum);
	MPI_Finalize();
	return 0;
}
