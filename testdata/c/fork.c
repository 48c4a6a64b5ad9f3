// The program forks after MPI_Init; the child exits through exit(3) (so
// atexit handlers run) and calls MPI_Comm_rank before: the tracer must step
// aside in the child and trace the parent as usual.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, v;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	pid_t pid = fork();
	if (pid == 0) {
		MPI_Comm_rank(MPI_COMM_WORLD, &v);
		exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) printf("child exited %d\n", WEXITSTATUS(status));
	MPI_Finalize();
	return 0;
}
