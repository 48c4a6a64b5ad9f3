/* groundtruth.c: MPI scenarios whose dtpa characteristics are known by
 * construction, one scenario per interval (MPI_Pcontrol(100, n) … (101, n)),
 * for the end-to-end tests in e2e/. Needs exactly 4 ranks. The timing
 * machinery (enter, leave, nap, due) is in gt.h.
 *
 * Every delay is a sleep (nanosleep), never a spin: the tests run 4 ranks on
 * 2 cores, where a spinning rank would steal a core from a rank that is
 * supposed to be on time. Every scenario starts after an MPI_Barrier outside
 * any interval, so the ranks enter the interval together (within a
 * scheduler wake-up) and nothing of one scenario leaks into the next.
 *
 * Interval  scenario (see e2e/groundtruth_test.go for the expected figures)
 *   1       late senders, blocking MPI_Recv: 0 sleeps 200 ms then sends to
 *           1; 2 sleeps 100 ms then sends to 3
 *   2       late senders seen through MPI_Wait: 1 posts MPI_Irecv and waits
 *           at once, 0 sends after 200 ms; 3 posts MPI_Irecv, sleeps 50 ms,
 *           waits, 2 sends after 150 ms
 *   3       WaitPatternUp into MPI_Barrier: rank r sleeps r*100 ms first
 *   4       overlap: ring exchange with MPI_Irecv/MPI_Isend, 200 ms of
 *           "compute" (sleep), then MPI_Waitall
 *   5       imbalance without communication: rank r sleeps (r+1)*50 ms
 *   6       MPI_ANY_SOURCE: rank 0 receives 3 messages with ANY_SOURCE and
 *           ANY_TAG; rank 3 sends after 100 ms, rank 1 after 200 ms, rank
 *           2 after 300 ms
 *   7       collectives on split communicators: halves {0,1} and {2,3};
 *           in {0,1} rank 0 enters MPI_Allreduce 100 ms late, in {2,3}
 *           rank 3 enters 200 ms late
 *   8       nested intervals entered many times: 5 times 8/1 (20 ms), and
 *           inside it, on even iterations and ranks 0-2 only, 8/1/2 (10 ms)
 *   9       sequential sections: all ranks run section 1 (100 ms); then
 *           ranks 0 and 1 run section 2 (200 ms) while 2 and 3 compute
 *           200 ms outside any section
 *
 *  10       Time Variation: MPI_Gather on the halves; in {0,1} the root 0
 *           enters 100 ms late (rank 1 sends eagerly and leaves at once),
 *           in {2,3} rank 3 enters 200 ms late (the root 2 waits)
 *  11       MPI_Waitall completing several late receives: rank 0 posts
 *           MPI_Irecv from 1, 2, 3 and waits at once; rank r sends after
 *           r*50 ms
 *  12       MPI_Test polling: rank 1 posts MPI_Irecv from 0 and tests every
 *           10 ms; rank 0 sends after 100 ms; ranks 2 and 3 send to and
 *           receive from MPI_PROC_NULL, then sleep 100 ms

 *  13       MPI_Waitany completing one late receive at a time: rank 0 posts
 *           MPI_Irecv from 1 and 2 and calls MPI_Waitany twice; rank 1
 *           sends after 100 ms, rank 2 after 200 ms; rank 3 sleeps 200 ms
 *  14       MPI_Sendrecv and persistent requests: rank 1 enters
 *           MPI_Sendrecv with 0 after 100 ms (0 enters at once); rank 3
 *           starts a persistent receive and waits at once, rank 2 starts
 *           its persistent send after 150 ms
 *  15       nonblocking barrier: rank r starts MPI_Ibarrier after r*50 ms
 *           and completes it with MPI_Wait at 200 ms

 *  16       a sequential section holding an MPI call: every rank runs
 *           section 3, in which rank r sleeps r*50 ms, enters MPI_Barrier,
 *           then sleeps 50 ms

 *  17       overlap bounded by a late sender: rank 0 posts MPI_Irecv from 1
 *           at 0, rank 1 sends at 100 ms, rank 0 waits at 200 ms; rank 3
 *           starts MPI_Isend to 2 at 0 and waits at 200 ms, rank 2 posts
 *           its MPI_Irecv at 100 ms and waits at 200 ms
 *  18       an interval of some ranks only, entered several times: rank 0
 *           enters it 3 times (30 ms each), rank 1 once, sending to rank 2
 *           after 50 ms; rank 2 receives outside any interval
 *
 *   mpicc -g -O0 -o groundtruth groundtruth.c && dtrun -np 4 ./groundtruth
 */
#include "gt.h"

static void late_sender(void)
{
	int v = rank;
	enter(1);
	switch (rank) {
	case 0: nap(200); MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD); break;
	case 1: MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); break;
	case 2: nap(100); MPI_Send(&v, 1, MPI_INT, 3, 1, MPI_COMM_WORLD); break;
	case 3: MPI_Recv(&v, 1, MPI_INT, 2, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); break;
	}
	leave(1);
}

static void late_sender_wait(void)
{
	int v = rank;
	MPI_Request rq;
	enter(2);
	switch (rank) {
	case 0: nap(200); MPI_Send(&v, 1, MPI_INT, 1, 2, MPI_COMM_WORLD); break;
	case 1:
		MPI_Irecv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &rq);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	case 2: nap(150); MPI_Send(&v, 1, MPI_INT, 3, 2, MPI_COMM_WORLD); break;
	case 3:
		MPI_Irecv(&v, 1, MPI_INT, 2, 2, MPI_COMM_WORLD, &rq);
		nap(50);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	}
	leave(2);
}

static void wait_pattern_up(void)
{
	enter(3);
	nap(100 * rank);
	MPI_Barrier(MPI_COMM_WORLD);
	leave(3);
}

static void overlap(int size)
{
	int out = rank, in = -1;
	MPI_Request rq[2];
	MPI_Status st[2]; /* not MPI_STATUSES_IGNORE: gcc 12 warns on MPICH's */
	enter(4);
	MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 4, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 4, MPI_COMM_WORLD, &rq[1]);
	nap(200);
	MPI_Waitall(2, rq, st);
	leave(4);
}

static void imbalance(void)
{
	enter(5);
	nap(50 * (rank + 1));
	leave(5);
}

static void any_source(void)
{
	static const int delay[4] = {0, 200, 300, 100};
	int v = rank;
	enter(6);
	if (rank == 0) {
		for (int i = 0; i < 3; i++) {
			MPI_Status st;
			MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			due(100 * (i + 1));
		}
	} else {
		nap(delay[rank]);
		MPI_Send(&v, 1, MPI_INT, 0, 60 + rank, MPI_COMM_WORLD);
	}
	leave(6);
}

static void split_collectives(MPI_Comm half)
{
	int v = rank, sum;
	enter(7);
	if (rank == 0)
		nap(100);
	if (rank == 3)
		nap(200);
	MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, half);
	leave(7);
}

static void nested(void)
{
	enter(8);
	for (int i = 0; i < 5; i++) {
		enter(1);
		nap(20);
		if (i % 2 == 0 && rank != 3) {
			enter(2);
			nap(10);
			leave(2);
		}
		leave(1);
	}
	leave(8);
}

static void sections(void)
{
	enter(9);
	MPI_Pcontrol(102, 1);
	nap(100);
	MPI_Pcontrol(103, 1);
	if (rank < 2) {
		MPI_Pcontrol(102, 2);
		nap(200);
		MPI_Pcontrol(103, 2);
	} else {
		nap(200);
	}
	leave(9);
}

static void gather_variation(MPI_Comm half)
{
	int v = rank, all[2];
	enter(10);
	if (rank == 0)
		nap(100);
	if (rank == 3)
		nap(200);
	MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, 0, half);
	leave(10);
}

static void waitall_late(void)
{
	int v[4] = {rank, rank, rank, rank};
	MPI_Request rq[3];
	MPI_Status st[3];
	enter(11);
	if (rank == 0) {
		for (int r = 1; r < 4; r++)
			MPI_Irecv(&v[r], 1, MPI_INT, r, 11, MPI_COMM_WORLD, &rq[r - 1]);
		MPI_Waitall(3, rq, st);
	} else {
		nap(50 * rank);
		MPI_Send(&v[0], 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
	}
	leave(11);
}

static void test_polling(void)
{
	int v = rank, flag = 0;
	MPI_Request rq;
	enter(12);
	switch (rank) {
	case 0: nap(100); MPI_Send(&v, 1, MPI_INT, 1, 12, MPI_COMM_WORLD); break;
	case 1:
		MPI_Irecv(&v, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &rq);
		for (;;) {
			/* A test takes microseconds by construction: one that
			 * lasted longer (the rank lost its core inside it) is
			 * Communications the construction did not intend. */
			double t0 = now();
			MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
			late(now() - t0);
			if (flag)
				break;
			nap(10);
		}
		break;
	default:
		/* Operations with MPI_PROC_NULL complete at once and count as
		 * neither sends nor receives. */
		MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 12, MPI_COMM_WORLD);
		MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		nap(100);
	}
	leave(12);
}

static void waitany_late(void)
{
	int v[2] = {rank, rank}, idx;
	MPI_Request rq[2];
	enter(13);
	switch (rank) {
	case 0:
		MPI_Irecv(&v[0], 1, MPI_INT, 1, 13, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(&v[1], 1, MPI_INT, 2, 13, MPI_COMM_WORLD, &rq[1]);
		MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
		due(100);
		MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
		break;
	case 1: nap(100); MPI_Send(&v[0], 1, MPI_INT, 0, 13, MPI_COMM_WORLD); break;
	case 2: nap(200); MPI_Send(&v[0], 1, MPI_INT, 0, 13, MPI_COMM_WORLD); break;
	default: nap(200);
	}
	leave(13);
}

static void sendrecv_persistent(void)
{
	int out = rank, in = -1;
	MPI_Request rq = MPI_REQUEST_NULL;
	if (rank == 2)
		MPI_Send_init(&out, 1, MPI_INT, 3, 14, MPI_COMM_WORLD, &rq);
	if (rank == 3)
		MPI_Recv_init(&in, 1, MPI_INT, 2, 14, MPI_COMM_WORLD, &rq);
	enter(14);
	switch (rank) {
	case 0:
		MPI_Sendrecv(&out, 1, MPI_INT, 1, 14, &in, 1, MPI_INT, 1, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		break;
	case 1:
		nap(100);
		MPI_Sendrecv(&out, 1, MPI_INT, 0, 14, &in, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		break;
	case 2:
		nap(150);
		MPI_Start(&rq);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	case 3:
		MPI_Start(&rq);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	}
	leave(14);
	if (rq != MPI_REQUEST_NULL)
		MPI_Request_free(&rq);
}

static void ibarrier(void)
{
	MPI_Request rq;
	enter(15);
	nap(50 * rank);
	MPI_Ibarrier(MPI_COMM_WORLD, &rq);
	nap(200 - 50 * rank);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	leave(15);
}

static void section_with_mpi(void)
{
	enter(16);
	MPI_Pcontrol(102, 3);
	nap(50 * rank);
	MPI_Barrier(MPI_COMM_WORLD);
	nap(50);
	MPI_Pcontrol(103, 3);
	leave(16);
}

static void overlap_late_sender(void)
{
	int v = rank;
	MPI_Request rq;
	enter(17);
	switch (rank) {
	case 0:
		MPI_Irecv(&v, 1, MPI_INT, 1, 17, MPI_COMM_WORLD, &rq);
		nap(200);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	case 1: nap(100); MPI_Send(&v, 1, MPI_INT, 0, 17, MPI_COMM_WORLD); nap(100); break;
	case 2:
		nap(100);
		MPI_Irecv(&v, 1, MPI_INT, 3, 17, MPI_COMM_WORLD, &rq);
		nap(100);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	case 3:
		MPI_Isend(&v, 1, MPI_INT, 2, 17, MPI_COMM_WORLD, &rq);
		nap(200);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		break;
	}
	leave(17);
}

static void some_ranks(void)
{
	int v = rank;
	switch (rank) {
	case 0:
		for (int i = 0; i < 3; i++) {
			enter(18);
			nap(30);
			leave(18);
		}
		break;
	case 1:
		enter(18);
		nap(50);
		MPI_Send(&v, 1, MPI_INT, 2, 18, MPI_COMM_WORLD);
		leave(18);
		break;
	case 2: MPI_Recv(&v, 1, MPI_INT, 1, 18, MPI_COMM_WORLD, MPI_STATUS_IGNORE); break;
	}
}

int main(int argc, char **argv)
{
	int size = gt_init(&argc, &argv, "groundtruth");
	MPI_Comm half;
	MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);

	MPI_Barrier(MPI_COMM_WORLD);
	late_sender();
	MPI_Barrier(MPI_COMM_WORLD);
	late_sender_wait();
	MPI_Barrier(MPI_COMM_WORLD);
	wait_pattern_up();
	MPI_Barrier(MPI_COMM_WORLD);
	overlap(size);
	MPI_Barrier(MPI_COMM_WORLD);
	imbalance();
	MPI_Barrier(MPI_COMM_WORLD);
	any_source();
	MPI_Barrier(MPI_COMM_WORLD);
	split_collectives(half);
	MPI_Barrier(MPI_COMM_WORLD);
	nested();
	MPI_Barrier(MPI_COMM_WORLD);
	sections();
	MPI_Barrier(MPI_COMM_WORLD);
	gather_variation(half);
	MPI_Barrier(MPI_COMM_WORLD);
	waitall_late();
	MPI_Barrier(MPI_COMM_WORLD);
	test_polling();
	MPI_Barrier(MPI_COMM_WORLD);
	waitany_late();
	MPI_Barrier(MPI_COMM_WORLD);
	sendrecv_persistent();
	MPI_Barrier(MPI_COMM_WORLD);
	ibarrier();
	MPI_Barrier(MPI_COMM_WORLD);
	section_with_mpi();
	MPI_Barrier(MPI_COMM_WORLD);
	overlap_late_sender();
	MPI_Barrier(MPI_COMM_WORLD);
	some_ranks();
	MPI_Barrier(MPI_COMM_WORLD);

	MPI_Comm_free(&half);
	gt_report("groundtruth");
	MPI_Finalize();
	return 0;
}
