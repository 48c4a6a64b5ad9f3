/* edges_p2p.c: the edges of point-to-point and nonblocking-collective
 * analysis, one scenario per interval (MPI_Pcontrol(100, n) … (101, n)),
 * whose dtpa characteristics are known by construction, for
 * e2e/edges_p2p_test.go (expected figures derived there). Needs exactly 4
 * ranks. Built like groundtruth.c, on the same timing (gt.h): every delay
 * is a sleep, every scenario starts after an MPI_Barrier.
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
#include "gt.h"

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
	int size = gt_init(&argc, &argv, "edges_p2p");
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
	gt_report("edges_p2p");
	MPI_Finalize();
	return 0;
}
