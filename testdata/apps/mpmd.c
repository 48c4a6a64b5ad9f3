// mpmd.c: one program of an MPMD job, for dtpa's end-to-end tests. Built
// once and run under two names (mpirun -np 2 ./ocean : -np 2 ./atmos), each
// rank acts by its application context (MPI_APPNUM: 0 for the first
// program, 1 for the second). The ocean's ranks compute 200 ms, then send
// to the atmosphere's, which wait for them from the start: Real Sync 0.2 s
// on each atmosphere rank. Then a barrier. Half the ranks in each program.
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size, flag, *appnum;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
	if (!flag) {
		fprintf(stderr, "mpmd: no MPI_APPNUM: run as an MPMD job\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int half = size / 2, x = rank;
	if (*appnum == 0) {
		usleep(200000);
		MPI_Send(&x, 1, MPI_INT, rank + half, 0, MPI_COMM_WORLD);
	} else {
		MPI_Recv(&x, 1, MPI_INT, rank - half, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
