/* Values that do not fit the tracer's 32-bit record fields (tracer/records,
 * RawLong and RawWide): byte counts above 4 GiB on MPI_COMM_SELF, where the
 * MPI moves no data (a broadcast from its root, a reduction in place), and a
 * receive that waits SLEEP seconds (argv[1], default 3) for the partner, more
 * than 2^32 ticks of a TSC below 1.4 GHz. Rank 0 prints the receive's
 * duration by its own clock. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int secs = argc > 1 ? atoi(argv[1]) : 3;
    static double buf[4];
    MPI_Bcast(buf, 1 << 30, MPI_DOUBLE, 0, MPI_COMM_SELF);                          /* 8 GiB sent */
    MPI_Reduce(MPI_IN_PLACE, buf, 3 << 29, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_SELF); /* 12 GiB received */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t0 = MPI_Wtime();
        MPI_Recv(buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double t1 = MPI_Wtime();
        printf("recv_ns=%.0f\n", (t1 - t0) * 1e9);
    } else if (rank == 1) {
        sleep(secs);
        MPI_Send(buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
