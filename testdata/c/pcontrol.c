// Pcontrol intervals: 100/101 enter and leave intervals (nested), 102/103
// mark a sequential section, other levels pass through.
#include <mpi.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Pcontrol(100, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Pcontrol(100, 2);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Pcontrol(101, 2);
	MPI_Pcontrol(101, 1);
	MPI_Pcontrol(102, 7);
	MPI_Pcontrol(103, 7);
	MPI_Pcontrol(100003); /* the one-argument spelling (Fortran, ctypes): (100, 3) */
	MPI_Pcontrol(101003);
	MPI_Pcontrol(1);
	MPI_Finalize();
	return 0;
}
