/* stencil: a one-dimensional Jacobi halo exchange, the message-heavy shape of
 * many simulation codes, for the analyzer's benchmarks on real traces
 * (analyzer BenchmarkAnalyzeReal, scripts/realtraces.sh).
 *
 * Each rank owns CELLS cells of a periodic ring. Every step it posts
 * MPI_Irecv from both neighbours, MPI_Isend of its edge cells to both,
 * MPI_Waitall on the four requests and relaxes its cells; every tenth step
 * an MPI_Allreduce sums the residual. Five calls per step and rank, plus
 * the allreduce.
 *
 * usage: stencil [STEPS [CELLS]]   (defaults 300000 and 1000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long steps = argc > 1 ? atol(argv[1]) : 300000;
    int cells = argc > 2 ? atoi(argv[2]) : 1000;
    if (steps < 1 || cells < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: stencil [STEPS [CELLS]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    /* u[0] and u[cells+1] are the halo cells. */
    double *u = calloc(cells + 2, sizeof *u), *v = calloc(cells + 2, sizeof *v);
    for (int i = 1; i <= cells; i++)
        u[i] = (double)((rank * cells + i) % 17);
    double sum = 0;
    for (long s = 0; s < steps; s++) {
        MPI_Request rq[4];
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(&u[cells + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(&u[cells], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[3]);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        double res = 0;
        for (int i = 1; i <= cells; i++) {
            v[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
            res += (v[i] - u[i]) * (v[i] - u[i]);
        }
        double *t = u;
        u = v;
        v = t;
        if (s % 10 == 9)
            MPI_Allreduce(&res, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("stencil: %d ranks, %ld steps, %d cells, residual %g\n", size, steps, cells, sum);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
