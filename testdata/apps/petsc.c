/* petsc: a Poisson solve with PETSc, as PDE codes are written on it: a 2-D
 * structured grid distributed by DMDA, the 5-point Laplacian assembled in
 * parallel, and conjugate gradients with a Jacobi preconditioner (KSP).
 * PETSc calls MPI itself: the ghost exchange of every matrix-vector
 * product through its star forest (PetscSF: persistent MPI_Send_init /
 * MPI_Recv_init started with MPI_Startall, completed with MPI_Waitall),
 * MPI_Allreduce for every dot product and norm (with PETSc's own
 * reduction operations), communicators duplicated and cached as
 * attributes.
 *
 * b = A x for x = 1, so the solution is known: rank 0 prints "petsc: ok"
 * when the solve converged and every value is within 1e-6 of 1, and the
 * program exits 1 otherwise. Interval 1 (MPI_Pcontrol) is the solve,
 * repeated REPS times.
 *
 * Build: mpicc petsc.c $(pkg-config --cflags --libs PETSc) (Debian's
 * petsc-dev, built with Open MPI). */
#include <petscdmda.h>
#include <petscksp.h>

#define M 96
#define REPS 2

int main(int argc, char **argv) {
	PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
	DM da;
	PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, M, M,
	                       PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
	PetscCall(DMSetFromOptions(da));
	PetscCall(DMSetUp(da));

	Mat A;
	PetscCall(DMCreateMatrix(da, &A));
	PetscInt xs, ys, xm, ym;
	PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
	for (PetscInt j = ys; j < ys + ym; j++)
		for (PetscInt i = xs; i < xs + xm; i++) {
			MatStencil row = {.i = i, .j = j}, col[5];
			PetscScalar v[5];
			PetscInt n = 0;
			col[n] = row;
			v[n++] = 4;
			if (i > 0) col[n] = (MatStencil){.i = i - 1, .j = j}, v[n++] = -1;
			if (i < M - 1) col[n] = (MatStencil){.i = i + 1, .j = j}, v[n++] = -1;
			if (j > 0) col[n] = (MatStencil){.i = i, .j = j - 1}, v[n++] = -1;
			if (j < M - 1) col[n] = (MatStencil){.i = i, .j = j + 1}, v[n++] = -1;
			PetscCall(MatSetValuesStencil(A, 1, &row, n, col, v, INSERT_VALUES));
		}
	PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
	PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));

	Vec x, b, one;
	PetscCall(DMCreateGlobalVector(da, &x));
	PetscCall(VecDuplicate(x, &b));
	PetscCall(VecDuplicate(x, &one));
	PetscCall(VecSet(one, 1.0));
	PetscCall(MatMult(A, one, b));

	KSP ksp;
	PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
	PetscCall(KSPSetOperators(ksp, A, A));
	PetscCall(KSPSetType(ksp, KSPCG));
	PC pc;
	PetscCall(KSPGetPC(ksp, &pc));
	PetscCall(PCSetType(pc, PCJACOBI));
	PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 10000));
	PetscCall(KSPSetFromOptions(ksp));

	int bad = 0;
	MPI_Pcontrol(100, 1);
	for (int rep = 0; rep < REPS; rep++) {
		PetscCall(VecSet(x, 0.0));
		PetscCall(KSPSolve(ksp, b, x));
		KSPConvergedReason why;
		PetscCall(KSPGetConvergedReason(ksp, &why));
		PetscCall(VecAXPY(x, -1.0, one));
		PetscReal err;
		PetscCall(VecNorm(x, NORM_INFINITY, &err));
		if (why <= 0 || err > 1e-6) {
			PetscCall(PetscPrintf(PETSC_COMM_WORLD, "petsc: not solved (reason %d, error %g)\n", (int)why, (double)err));
			bad = 1;
		}
	}
	MPI_Pcontrol(101, 1);
	if (!bad)
		PetscCall(PetscPrintf(PETSC_COMM_WORLD, "petsc: ok\n"));

	PetscCall(KSPDestroy(&ksp));
	PetscCall(VecDestroy(&x));
	PetscCall(VecDestroy(&b));
	PetscCall(VecDestroy(&one));
	PetscCall(MatDestroy(&A));
	PetscCall(DMDestroy(&da));
	PetscCall(PetscFinalize());
	return bad;
}
