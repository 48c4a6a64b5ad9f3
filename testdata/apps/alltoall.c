/* alltoall: every rank talks to every other, for the analyzer's benchmarks
 * on real traces (analyzer BenchmarkAnalyzeReal, scripts/realtraces.sh).
 *
 * Each step: an MPI_Alltoall of one int per pair, then every rank sends one
 * int to every other rank with MPI_Isend and receives as many with
 * MPI_Recv from MPI_ANY_SOURCE (in whatever order they come), and waits for
 * its sends with MPI_Waitall. 2 × size calls per step and rank.
 *
 * usage: alltoall [STEPS]   (default 100000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long steps = argc > 1 ? atol(argv[1]) : 100000;
    if (steps < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: alltoall [STEPS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *out = malloc(size * sizeof *out), *in = malloc(size * sizeof *in);
    MPI_Request *rq = malloc(size * sizeof *rq);
    long total = 0;
    for (long s = 0; s < steps; s++) {
        for (int p = 0; p < size; p++)
            out[p] = (int)((rank * 31 + p * 7 + s) % 101);
        MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
        int n = 0;
        for (int p = 0; p < size; p++)
            if (p != rank)
                MPI_Isend(&out[p], 1, MPI_INT, p, 0, MPI_COMM_WORLD, &rq[n++]);
        for (int k = 0; k < size - 1; k++) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += x;
        }
        MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++)
            total += in[p];
    }
    if (rank == 0)
        printf("alltoall: %d ranks, %ld steps, checksum %ld\n", size, steps, total);
    free(out);
    free(in);
    free(rq);
    MPI_Finalize();
    return 0;
}
