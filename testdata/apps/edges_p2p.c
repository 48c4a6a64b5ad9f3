/* edges_p2p.c: the edges of point-to-point and nonblocking-collective
 * analysis, one scenario per interval (MPI_Pcontrol(100, n) … (101, n)),
 * whose dtpa characteristics are known by construction, for
 * e2e/edges_p2p_test.go (expected figures derived there). Needs exactly 4
 * ranks. Built like groundtruth.c (its timing machinery is repeated here):
 * every delay is a sleep, every scenario starts after an MPI_Barrier.
 *
 * Interval  scenario (docs/characteristics.md names the rules)
 *   1       MPI_Probe waiting for a late sender: rank 0 sleeps 200 ms then
 *           sends to 1, which sat in MPI_Probe(ANY_SOURCE), then calls
 *           MPI_Get_count and MPI_Recv from the status's source; rank 3
 *           sends to 2 at once, rank 2 sleeps 200 ms, finds it with
 *           MPI_Iprobe and receives it
 *   2       nonblocking collective: rank r sleeps r*100 ms, starts
 *           MPI_Iallreduce, ranks 0-2 sleep 20 ms more, then MPI_Wait
 *   3       late receiver: rank 0 MPI_Ssends to 1, which sleeps 200 ms
 *           before MPI_Recv; rank 3 sends a small message to 2 (eager) then
 *           sleeps 100 ms, posts MPI_Irecv of 4 MiB and waits; rank 2 sends
 *           it 4 MiB with MPI_Send (rendezvous) at once, then receives the
 *           small message
 *   4       overlap of requests in flight together: every rank starts
 *           MPI_Isend and MPI_Irecv with both neighbours, sleeps 200 ms,
 *           then MPI_Waitall
 *   5       late receiver of a synchronous nonblocking send: rank 0 starts
 *           MPI_Issend to 1, sleeps 50 ms and waits; rank 1 sleeps 200 ms
 *           before MPI_Recv; rank 2 MPI_Issends to 3 and waits at once,
 *           then sleeps 100 ms; rank 3 posts MPI_Irecv and waits at once
 *           (in MPI: a receiver sleeping outside MPI would not acknowledge
 *           the synchronous send), then sleeps 100 ms
 *
 *   mpicc -g -O0 -o edges_p2p edges_p2p.c && dtrun -np 4 ./edges_p2p
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int rank;

/* Each rank also times its intervals with its own clock and prints the
 * totals per interval path at the end. dtpa measures an interval from the
 * exit of MPI_Pcontrol(100, n) to the entry of MPI_Pcontrol(101, n); the
 * program cannot see those two instants, but brackets them: "inner" runs
 * from the return of the first call to the call of the second, "outer"
 * from the call of the first to the return of the second. dtpa's Execution
 * Time must lie between the two (to clock alignment error). "first entry"
 * is the time of the first entry on CLOCK_MONOTONIC. "overshoot" is
 * the longest delay in the interval the construction did not intend: a
 * sleep lasting beyond what it asked for, or a rank late at a point the
 * construction fixes (see due). The tests compare inner with the durations
 * intended by construction and look at the overshoot: a run that strays
 * from the construction was disturbed by other load (see
 * e2e/groundtruth_test.go). */
#define MAXPATHS 32
static struct {
	char path[32];
	double inner, outer, overshoot;
	double first; /* CLOCK_MONOTONIC at the first entry: one clock for all
	               * ranks of a host, so the tests see how far apart the
	               * ranks entered */
} timed[MAXPATHS + 1]; /* the last entry collects anything beyond MAXPATHS */
static int ntimed;
static char path[32]; /* current interval path, "8/1/2"; "" at level 0 */
static int cur[8];    /* timed[] entry of each open interval */
static double called[8], returned[8]; /* its MPI_Pcontrol(100, n) */
static int depth;

/* enter(n) enters interval n. A macro, so that the MPI_Pcontrol call, and
 * with it the interval's source position in the report, is in the
 * scenario's function. */
#define enter(n)                           \
	do {                               \
		called[depth] = now();     \
		MPI_Pcontrol(100, (n));    \
		entered(n);                \
	} while (0)

static void entered(int n)
{
	returned[depth] = now();
	size_t l = strlen(path);
	snprintf(path + l, sizeof path - l, l ? "/%d" : "%d", n);
	int i;
	for (i = 0; i < ntimed && strcmp(timed[i].path, path) != 0; i++)
		;
	if (i == ntimed && ntimed < MAXPATHS)
		strcpy(timed[ntimed++].path, path);
	if (timed[i].first == 0)
		timed[i].first = returned[depth];
	cur[depth++] = i;
}

static void leave(int n)
{
	double call = now();
	MPI_Pcontrol(101, n);
	double ret = now();
	depth--;
	timed[cur[depth]].inner += call - returned[depth];
	timed[cur[depth]].outer += ret - called[depth];
	char *slash = strrchr(path, '/');
	*(slash ? slash : path) = '\0';
}

/* late notes a delay the construction did not intend, in every open
 * interval. */
static void late(double s)
{
	for (int d = 0; d < depth; d++)
		if (s > timed[cur[d]].overshoot)
			timed[cur[d]].overshoot = s;
}

/* nap sleeps ms milliseconds, resuming after signals, and notes by how
 * much it overslept. */
static void nap(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	double t0 = now();
	while (nanosleep(&ts, &ts) != 0)
		;
	late(now() - t0 - ms * 1e-3);
}

static void probe_late_sender(void)
{
	int v = rank;
	MPI_Status st;
	int n, flag = 0;
	enter(1);
	switch (rank) {
	case 0: nap(200); MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD); break;
	case 1:
		MPI_Probe(MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		MPI_Recv(&v, n, MPI_INT, st.MPI_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		break;
	case 2:
		nap(200);
		MPI_Iprobe(3, 1, MPI_COMM_WORLD, &flag, &st);
		if (!flag) /* sent 200 ms ago: a miss is a failure of the run */
			fprintf(stderr, "edges_p2p: rank 2: MPI_Iprobe found nothing\n");
		MPI_Recv(&v, 1, MPI_INT, 3, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		break;
	case 3: MPI_Send(&v, 1, MPI_INT, 2, 1, MPI_COMM_WORLD); break;
	}
	leave(1);
}

static void iallreduce(void)
{
	int v = rank, sum;
	MPI_Request rq;
	enter(2);
	nap(100 * rank);
	MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
	if (rank < 3)
		nap(20);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	leave(2);
}

#define BIG (1 << 20) /* ints: 4 MiB, far above every eager limit */

static void late_receiver(int *big)
{
	int v = rank;
	MPI_Request rq;
	enter(3);
	switch (rank) {
	case 0: MPI_Ssend(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD); break;
	case 1: nap(200); MPI_Recv(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); break;
	case 2:
		MPI_Send(big, BIG, MPI_INT, 3, 3, MPI_COMM_WORLD);
		MPI_Recv(&v, 1, MPI_INT, 3, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		break;
	case 3:
		MPI_Send(&v, 1, MPI_INT, 2, 4, MPI_COMM_WORLD);
		nap(100);
		MPI_Irecv(big, BIG, MPI_INT, 2, 3, MPI_COMM_WORLD, &rq);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	}
	leave(3);
}

static void overlap_together(int size)
{
	int out = rank, in[2];
	MPI_Request rq[4];
	MPI_Status st[4]; /* not MPI_STATUSES_IGNORE: gcc 12 warns on MPICH's */
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	enter(4);
	MPI_Irecv(&in[0], 1, MPI_INT, left, 4, MPI_COMM_WORLD, &rq[0]);
	MPI_Irecv(&in[1], 1, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[1]);
	MPI_Isend(&out, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &rq[2]);
	MPI_Isend(&out, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[3]);
	nap(200);
	MPI_Waitall(4, rq, st);
	leave(4);
}

static void late_receiver_issend(void)
{
	int v = rank;
	MPI_Request rq;
	enter(5);
	switch (rank) {
	case 0:
		MPI_Issend(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &rq);
		nap(50);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	case 1: nap(200); MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); break;
	case 2:
		MPI_Issend(&v, 1, MPI_INT, 3, 5, MPI_COMM_WORLD, &rq);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		nap(100);
		break;
	case 3:
		MPI_Irecv(&v, 1, MPI_INT, 2, 5, MPI_COMM_WORLD, &rq);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		nap(100);
		break;
	}
	leave(5);
}

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4) {
		if (rank == 0)
			fprintf(stderr, "edges_p2p: needs 4 ranks, not %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int *big = calloc(BIG, sizeof *big);

	MPI_Barrier(MPI_COMM_WORLD);
	probe_late_sender();
	MPI_Barrier(MPI_COMM_WORLD);
	iallreduce();
	MPI_Barrier(MPI_COMM_WORLD);
	late_receiver(big);
	MPI_Barrier(MPI_COMM_WORLD);
	overlap_together(size);
	MPI_Barrier(MPI_COMM_WORLD);
	late_receiver_issend();
	MPI_Barrier(MPI_COMM_WORLD);

	free(big);
	for (int i = 0; i < ntimed; i++)
		printf("edges_p2p: rank %d: interval %s: inner %.6f s, outer %.6f s, overshoot %.6f s, first entry %.6f s\n",
		       rank, timed[i].path, timed[i].inner, timed[i].outer, timed[i].overshoot, timed[i].first);
	MPI_Finalize();
	return 0;
}
