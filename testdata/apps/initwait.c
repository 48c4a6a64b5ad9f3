// initwait: a job that hangs inside MPI_Init, for what dtrun says of a job
// ended before any trace began. The last rank never calls MPI_Init (it
// sleeps), so the others wait inside it for the whole job to join. The job
// runs until it is ended (the test interrupts it as Ctrl-C would).
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	// The rank the launcher gives, before MPI_Init can say it.
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	const char *n = getenv("OMPI_COMM_WORLD_SIZE");
	if (!r) r = getenv("PMI_RANK"), n = getenv("PMI_SIZE");
	if (r && n && atoi(r) == atoi(n) - 1) {
		sleep(600);
		return 0;
	}
	MPI_Init(&argc, &argv);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
