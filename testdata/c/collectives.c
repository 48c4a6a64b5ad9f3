// Collectives on WORLD and on split, duplicated and created communicators,
// plus a nonblocking barrier and an intercommunicator between the halves.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm half, dup, inter, created;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	MPI_Comm_dup(half, &dup);
	int hr, v = rank + 1, s = 0, buf[64] = {0}, all[64] = {0};
	MPI_Comm_rank(half, &hr);
	MPI_Bcast(&v, 1, MPI_INT, 0, half);
	MPI_Reduce(&rank, &s, 1, MPI_INT, MPI_SUM, 1, half);
	MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, dup);
	MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Scatter(all, 1, MPI_INT, &v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	MPI_Alltoall(all, 2, MPI_INT, buf, 2, MPI_INT, half);
	MPI_Request r;
	MPI_Ibarrier(dup, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	// Group-based creation: ranks 0 and 1 of WORLD.
	MPI_Group wg, g01;
	int two[2] = {0, 1};
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Group_incl(wg, 2, two, &g01);
	MPI_Comm_create(MPI_COMM_WORLD, g01, &created);
	if (created != MPI_COMM_NULL) {
		MPI_Barrier(created);
		MPI_Comm_free(&created);
	}
	// Nonblocking duplication: the new communicator is usable after the wait.
	MPI_Comm idup;
	MPI_Comm_idup(half, &idup, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Barrier(idup);
	MPI_Comm_free(&idup);
	MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 99, &inter);
	MPI_Barrier(inter);
	MPI_Comm_free(&inter);
	MPI_Group_free(&g01);
	MPI_Group_free(&wg);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&half);
	printf("rank %d v %d s %d\n", rank, v, s);
	MPI_Finalize();
	return 0;
}
