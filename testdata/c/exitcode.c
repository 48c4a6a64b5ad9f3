// Finishes MPI normally and exits with code 7: dtrun must return it.
#include <mpi.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Finalize();
	return 7;
}
