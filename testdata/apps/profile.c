/* profile.c: a program whose profile views (dtpa --json: functions,
 * comm_matrix, comm_matrices, message_sizes, traffic, hosts, and each
 * rank's call_mix, gap_mean, gap_median) are known by construction, for
 * e2e/profile_test.go. Needs 4 ranks.
 *
 * Interval 1 (grain): each rank makes NGAPS calls of MPI_Comm_rank, each
 * after a sleep of (rank + 1) * 10 ms, so that the gaps between its MPI
 * calls are known and different per rank. The program times each gap
 * itself (from the return of the previous call to the call of the next;
 * the first from the return of MPI_Pcontrol) and prints their median and
 * mean, which dtpa's gap_median and gap_mean must match.
 *
 * Interval 2 (ring): NRING rounds of three MPI_Sendrecv: 1000 bytes to the
 * right neighbour on MPI_COMM_WORLD, 4096 bytes to the left on a duplicate
 * of it, 100 ints (400 bytes) to the partner in the halves {0, 2}, {1, 3}
 * split from it.
 *
 * Build: mpicc -g -O0 -o profile profile.c (gt.h next to it). */
#include "gt.h"

#define NGAPS 11
#define NRING 8

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	gt_init(&argc, &argv, "profile");
	MPI_Comm dup, half;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	int hrank;
	MPI_Comm_rank(half, &hrank);
	int right = (rank + 1) % 4, left = (rank + 3) % 4;
	static char sbuf[4096], rbuf[4096];
	MPI_Barrier(MPI_COMM_WORLD);

	double gaps[NGAPS], sum = 0;
	int r;
	MPI_Pcontrol(100, 1);
	double prev = now();
	for (int i = 0; i < NGAPS; i++) {
		nap((rank + 1) * 10);
		double call = now();
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
		double ret = now();
		gaps[i] = call - prev;
		sum += gaps[i];
		prev = ret;
	}
	MPI_Pcontrol(101, 1);

	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Pcontrol(100, 2);
	for (int i = 0; i < NRING; i++) {
		MPI_Sendrecv(sbuf, 1000, MPI_BYTE, right, 1, rbuf, 1000, MPI_BYTE, left, 1,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Sendrecv(sbuf, 4096, MPI_BYTE, left, 2, rbuf, 4096, MPI_BYTE, right, 2,
			     dup, MPI_STATUS_IGNORE);
		MPI_Sendrecv(sbuf, 100, MPI_INT, 1 - hrank, 3, rbuf, 100, MPI_INT, 1 - hrank, 3,
			     half, MPI_STATUS_IGNORE);
	}
	MPI_Pcontrol(101, 2);

	MPI_Barrier(MPI_COMM_WORLD);
	qsort(gaps, NGAPS, sizeof gaps[0], cmpd);
	printf("profile: rank %d: %d gaps, median %.6f s, mean %.6f s\n", rank, NGAPS, gaps[NGAPS / 2], sum / NGAPS);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return 0;
}
