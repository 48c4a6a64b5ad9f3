// A library linked with MPI, as a Python extension module is (see localmpi.c).
#include <mpi.h>
#include <stdio.h>
int ext_run(void) {
	int rank, v = 0, s = 0;
	MPI_Init(NULL, NULL);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	v = rank;
	MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) printf("ext sum %d\n", s);
	return MPI_Finalize();
}
