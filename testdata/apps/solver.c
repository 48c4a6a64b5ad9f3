/* solver.c: the dtpa demo program. A 1-D Jacobi relaxation split over the
 * ranks: every step exchanges halo cells with both neighbours (nonblocking),
 * relaxes the local cells, and every 10 steps computes the global residual
 * with MPI_Allreduce. The main loop is marked as interval 1 with
 * MPI_Pcontrol(100, 1) / MPI_Pcontrol(101, 1).
 *
 * A deliberate imbalance: the last rank owns four times as many cells as
 * each of the others, so everybody else waits for it in MPI_Waitall and
 * MPI_Allreduce. dtpa shows it as Load Imbalance, Real Sync on the
 * neighbours of the last rank, and Potential Sync in the Allreduce. The
 * imbalance is large on purpose: where ranks share cores (with each other
 * or with other programs), a rank descheduled often takes longer for the
 * same work than its peers, but not four times as long; and a step's work
 * (milliseconds at -O2) outlasts most single deschedulings. So the last
 * rank stays the late one.
 *
 *   mpicc -g -O2 -o solver solver.c && dtrun -np 4 ./solver && dtpa solver
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 200
#define CELLS 50000 /* per rank; the last rank gets four times as many */

static double relax(double *u, double *v, int n)
{
	double res = 0.0;
	for (int sweep = 0; sweep < 20; sweep++) {
		for (int i = 1; i <= n; i++)
			v[i] = 0.5 * (u[i - 1] + u[i + 1]);
		for (int i = 1; i <= n; i++) {
			double d = v[i] - u[i];
			res += d * d;
			u[i] = v[i];
		}
	}
	return res;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	int n = rank == size - 1 ? 4 * CELLS : CELLS;
	double *u = calloc(n + 2, sizeof *u), *v = calloc(n + 2, sizeof *v);
	for (int i = 1; i <= n; i++)
		u[i] = (double)((rank * 7919 + i) % 101);
	int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
	double residual = 0.0;

	MPI_Pcontrol(100, 1); /* interval 1: the main loop */
	for (int step = 0; step < STEPS; step++) {
		MPI_Request req[4];
		MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
		MPI_Irecv(&u[n + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
		MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[2]);
		MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[3]);
		MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
		double local = relax(u, v, n);
		if (step % 10 == 9)
			MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Pcontrol(101, 1);

	if (rank == 0)
		printf("solver: %d ranks, %d steps, residual %.6e\n", size, STEPS, residual);
	free(u);
	free(v);
	MPI_Finalize();
	return 0;
}
