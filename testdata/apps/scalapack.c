/* scalapack: a dense linear solve with ScaLAPACK (pdgesv: LU with partial
 * pivoting, block-cyclic over a 2-D process grid of BLACS), as dense
 * solvers and electronic-structure codes call it. BLACS and ScaLAPACK call
 * MPI themselves: communicators made from groups and splits (the grid's
 * rows and columns), derived datatypes for the blocks, point-to-point trees
 * and user-defined reduction operations for the pivot search, broadcasts
 * along rows and columns.
 *
 * A is diagonally dominant (a_ij = 1/(1+|i-j|), plus n on the diagonal) and
 * b = A x for x_i = 1 + i mod 7, so the solution is known: rank 0 prints
 * "scalapack: ok" when every rank's part of it is right to 1e-9 and the
 * program exits 1 otherwise. Interval 1 (MPI_Pcontrol) is the
 * factorisation and solve, repeated REPS times.
 *
 * Build: mpicc scalapack.c -lscalapack-<mpi> (Debian's libscalapack-openmpi,
 * libscalapack-mpich; BLACS is part of it), 4 ranks (a 2 x 2 grid). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256
#define NB 32
#define REPS 2

void Cblacs_pinfo(int *me, int *np);
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
               const int *icsrc, const int *ctxt, const int *lld, int *info);
void pdgesv_(const int *n, const int *nrhs, double *a, const int *ia, const int *ja, const int *desca, int *ipiv,
             double *b, const int *ib, const int *jb, const int *descb, int *info);

/* global is the global 0-based index of local index l of a block-cyclic
 * distribution over p processes in which this one is number me. */
static int global(int l, int me, int p) {
	return ((l / NB) * p + me) * NB + l % NB;
}

static double a_of(int i, int j) {
	return 1.0 / (1.0 + abs(i - j)) + (i == j ? N : 0);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int me, np;
	Cblacs_pinfo(&me, &np);
	int nprow = 2, npcol = np / 2;
	if (np % 2 != 0) {
		nprow = 1;
		npcol = np;
	}
	int ctxt;
	Cblacs_get(-1, 0, &ctxt);
	Cblacs_gridinit(&ctxt, "Row", nprow, npcol);
	int myrow, mycol;
	Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

	const int n = N, nb = NB, zero = 0, one = 1;
	int mloc = numroc_(&n, &nb, &myrow, &zero, &nprow);
	int nloc = numroc_(&n, &nb, &mycol, &zero, &npcol);
	int lld = mloc > 1 ? mloc : 1, info;
	int desca[9], descb[9];
	descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
	descinit_(descb, &n, &one, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);

	double *a = malloc(sizeof(double) * (size_t)lld * (nloc > 0 ? nloc : 1));
	double *b = malloc(sizeof(double) * (size_t)lld);
	int *ipiv = malloc(sizeof(int) * (size_t)(mloc + NB));
	int bad = 0;
	MPI_Pcontrol(100, 1);
	for (int rep = 0; rep < REPS; rep++) {
		for (int jl = 0; jl < nloc; jl++)
			for (int il = 0; il < mloc; il++)
				a[(size_t)jl * lld + il] = a_of(global(il, myrow, nprow), global(jl, mycol, npcol));
		/* b lives in process column 0. */
		if (mycol == 0)
			for (int il = 0; il < mloc; il++) {
				int i = global(il, myrow, nprow);
				double s = 0;
				for (int j = 0; j < N; j++)
					s += a_of(i, j) * (1 + j % 7);
				b[il] = s;
			}
		pdgesv_(&n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
		if (info != 0) {
			fprintf(stderr, "scalapack: pdgesv info %d\n", info);
			bad = 1;
		}
		if (mycol == 0)
			for (int il = 0; il < mloc; il++) {
				int i = global(il, myrow, nprow);
				if (fabs(b[il] - (1 + i % 7)) > 1e-9) {
					fprintf(stderr, "scalapack: x[%d] = %g, want %d\n", i, b[il], 1 + i % 7);
					bad = 1;
					break;
				}
			}
	}
	MPI_Pcontrol(101, 1);
	int all;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (me == 0 && !all)
		printf("scalapack: ok\n");
	Cblacs_gridexit(ctxt);
	free(a);
	free(b);
	free(ipiv);
	MPI_Finalize();
	return all ? 1 : 0;
}
