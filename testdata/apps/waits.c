/* waits.c: one scenario per kind of wait (docs/characteristics.md §9), one
 * interval each (MPI_Pcontrol(100, n) … (101, n)), whose waiting rank, late
 * rank, seconds and both call sites are known by construction, for
 * e2e/waits_test.go (expected waits listed there). Needs exactly 4 ranks.
 * Built like groundtruth.c, on the same timing (gt.h): every delay is a
 * sleep, every scenario starts after an MPI_Barrier and ends when its
 * rank's clock says so (until), so that every rank's interval lasts the
 * same whatever the MPI library's algorithms do after the waits.
 *
 * The MPI calls whose sites the test checks carry a marker comment
 * (@name): the test finds their lines by it. Every delay is a sleep
 * right after the MPI_Barrier before the scenario (@sync): the causes of
 * the waits (the late rank's computation since its last call that could
 * wait) are those sleeps.
 *
 * Interval  scenario
 *   1       late sender: rank 0 sleeps 200 ms then sends to 1, which sat in
 *           MPI_Recv; rank 2 sleeps 100 ms then sends to 3
 *   2       late receiver: rank 0 MPI_Ssends to 1, which sleeps 200 ms
 *           before MPI_Recv; rank 2 MPI_Ssends to 3, which sleeps 100 ms
 *           before MPI_Irecv and MPI_Wait
 *   3       staggered arrivals at MPI_Barrier: ranks sleep 100, 300, 0,
 *           200 ms (rank 1 last)
 *   4       staggered arrivals at MPI_Allreduce: ranks sleep 200, 0, 300,
 *           100 ms (rank 2 last)
 *   5       late broadcast root: root 2 sleeps 200 ms before MPI_Bcast
 *   6       early reduce root: root 1 enters MPI_Reduce at once, ranks 0,
 *           2, 3 after 100, 150, 250 ms
 *   7       messages in wrong order: rank 1 sends to 3 at once (tag 2);
 *           rank 0 sleeps 200 ms then sends to 3 (tag 1); rank 3 receives
 *           rank 0's first, then rank 1's
 *   8       nonblocking collective completed late: rank 2 sleeps 200 ms
 *           then starts MPI_Iallreduce and waits; the others start it at
 *           once, sleep 50 ms and wait
 *
 *   mpicc -g -O0 -o waits waits.c && dtrun -np 4 ./waits
 */
#include "gt.h"

/* until sleeps until ms milliseconds after the entry into the current
 * interval, noting how late the rank already is if that time has passed. */
static void until(int ms)
{
	double left = returned[depth - 1] + ms * 1e-3 - now();
	if (left <= 0) {
		late(-left);
		return;
	}
	struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
	double t0 = now();
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	late(now() - t0 - left);
}

static void late_sender(void)
{
	int v = rank;
	enter(1);
	switch (rank) {
	case 0: nap(200); MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD); /* @ls_send0 */ break;
	case 1: MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @ls_recv1 */ break;
	case 2: nap(100); MPI_Send(&v, 1, MPI_INT, 3, 1, MPI_COMM_WORLD); /* @ls_send2 */ break;
	case 3: MPI_Recv(&v, 1, MPI_INT, 2, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @ls_recv3 */ break;
	}
	until(250);
	leave(1);
}

static void late_receiver(void)
{
	int v = rank;
	MPI_Request q;
	enter(2);
	switch (rank) {
	case 0: MPI_Ssend(&v, 1, MPI_INT, 1, 2, MPI_COMM_WORLD); /* @lr_ssend0 */ break;
	case 1: nap(200); MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @lr_recv1 */ break;
	case 2: MPI_Ssend(&v, 1, MPI_INT, 3, 2, MPI_COMM_WORLD); /* @lr_ssend2 */ break;
	case 3:
		nap(100);
		MPI_Irecv(&v, 1, MPI_INT, 2, 2, MPI_COMM_WORLD, &q); /* @lr_irecv3 */
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		break;
	}
	until(250);
	leave(2);
}

static void barrier(void)
{
	static const int d[4] = {100, 300, 0, 200};
	enter(3);
	nap(d[rank]);
	MPI_Barrier(MPI_COMM_WORLD); /* @bar */
	until(350);
	leave(3);
}

static void allreduce(void)
{
	static const int d[4] = {200, 0, 300, 100};
	int v = rank, s;
	enter(4);
	nap(d[rank]);
	MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @allreduce */
	until(350);
	leave(4);
}

static void late_broadcast(void)
{
	int v = rank;
	enter(5);
	if (rank == 2)
		nap(200);
	MPI_Bcast(&v, 1, MPI_INT, 2, MPI_COMM_WORLD); /* @bcast */
	until(250);
	leave(5);
}

static void early_reduce(void)
{
	static const int d[4] = {100, 0, 150, 250};
	int v = rank, s;
	enter(6);
	nap(d[rank]);
	MPI_Reduce(&v, &s, 1, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD); /* @reduce */
	until(300);
	leave(6);
}

static void wrong_order(void)
{
	int v = rank;
	enter(7);
	switch (rank) {
	case 0: nap(200); MPI_Send(&v, 1, MPI_INT, 3, 1, MPI_COMM_WORLD); /* @wo_send0 */ break;
	case 1: MPI_Send(&v, 1, MPI_INT, 3, 2, MPI_COMM_WORLD); /* @wo_send1 */ break;
	case 3:
		MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @wo_recv0 */
		MPI_Recv(&v, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @wo_recv1 */
		break;
	}
	until(250);
	leave(7);
}

static void nonblocking_collective(void)
{
	int v = rank, s;
	MPI_Request q;
	enter(8);
	if (rank == 2)
		nap(200);
	MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q); /* @iallreduce */
	if (rank != 2)
		nap(50);
	MPI_Wait(&q, MPI_STATUS_IGNORE); /* @iwait */
	until(250);
	leave(8);
}

int main(int argc, char **argv)
{
	gt_init(&argc, &argv, "waits");
	void (*scen[])(void) = {late_sender, late_receiver, barrier, allreduce, late_broadcast,
				early_reduce, wrong_order, nonblocking_collective};
	for (size_t i = 0; i < sizeof scen / sizeof scen[0]; i++) {
		MPI_Barrier(MPI_COMM_WORLD); /* @sync */
		scen[i]();
	}
	MPI_Barrier(MPI_COMM_WORLD);
	gt_report("waits");
	MPI_Finalize();
	return 0;
}
