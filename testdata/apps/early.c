// early: rank 1 leaves the job early right after a barrier (@last),
// without MPI_Finalize: main returns 3, or, with the argument "exit",
// leave calls exit(5) (@exit). The other ranks wait in MPI_Recv (@wait)
// for the message it never sends. The launcher ends the job (Open MPI's
// at once, a process having exited without MPI_Finalize), or the test
// interrupts it. With the argument "spin", rank 1 computes forever in
// spin (@spin) instead, until the test interrupts the job.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void leave(void) {
	exit(5); // @exit
}

static volatile double acc;

static void spin(void) {
	for (;;) acc += 1.0; // @spin (one line: wherever the signal finds the loop)
}

int main(int argc, char **argv) {
	int rank, v = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD); // @last
	if (rank == 1) {
		if (argc > 1 && argv[1][0] == 's')
			spin();
		if (argc > 1)
			leave();
		return 3;
	}
	if (rank == 0) {
		printf("early: waiting\n");
		fflush(stdout);
	}
	MPI_Recv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); // @wait
	MPI_Finalize();
	return 0;
}
