/* mpiapi.c: one family of the MPI API per interval (MPI_Pcontrol(100, n)
 * … (101, n)), for e2e/mpiapi_test.go: dtpa must match every operation
 * (no unmatched receive, send, collective or request, no stall, no
 * warning). The figures are not checked: only that every call is
 * understood. Needs exactly 4 ranks.
 *
 * Interval  family
 *   1       nonblocking file I/O: MPI_File_iwrite_at + MPI_Wait, then
 *           MPI_File_iread_at_all + MPI_Wait, on a temporary file
 *   2       a generalized request: MPI_Grequest_start, _complete, MPI_Wait
 *   3       MPI_Comm_idup + MPI_Wait, then an MPI_Allreduce on the copy
 *   4       MPI_Ibarrier + MPI_Wait
 *   5       MPI_Mprobe(ANY_SOURCE) + MPI_Mrecv: every rank sends to rank 0
 *   6       persistent send/receive on a ring, started three times
 *   7       persistent collectives (MPI 4: MPI_Barrier_init,
 *           MPI_Allreduce_init), started three times
 *   8       MPI_Neighbor_allgather on a periodic 2x2 Cartesian communicator
 *   9       RMA: MPI_Win_fence epochs around MPI_Put, then MPI_Rput and
 *           MPI_Rget completed by MPI_Wait in an MPI_Win_lock epoch
 *   10      intercommunicator between ranks {0,1} and {2,3}: Send/Recv
 *           across, MPI_Bcast rooted in each group (MPI_ROOT /
 *           MPI_PROC_NULL), MPI_Allreduce
 *   11      MPI_Cancel of an MPI_Irecv no send matches, MPI_Wait, and
 *           MPI_Test_cancelled
 *
 *   mpicc -g -O0 -o mpiapi mpiapi.c && dtrun -np 4 ./mpiapi
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

static void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: %s failed (%d)\n", rank, what, rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static void fileio(void)
{
	char path[256];
	const char *tmp = getenv("TMPDIR");
	if (rank == 0)
		snprintf(path, sizeof path, "%s/mpiapi.%d.dat", tmp ? tmp : "/tmp", (int)getpid());
	MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
	MPI_File fh;
	check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
		MPI_INFO_NULL, &fh), "MPI_File_open");
	int buf[64], in[64];
	for (int i = 0; i < 64; i++)
		buf[i] = rank * 64 + i;
	MPI_Request r;
	MPI_Offset off = (MPI_Offset)rank * sizeof buf;
	check(MPI_File_iwrite_at(fh, off, buf, 64, MPI_INT, &r), "MPI_File_iwrite_at");
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_File_sync(fh);
	off = (MPI_Offset)((rank + 1) % size) * sizeof buf;
	check(MPI_File_iread_at_all(fh, off, in, 64, MPI_INT, &r), "MPI_File_iread_at_all");
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	if (in[0] != ((rank + 1) % size) * 64)
		fprintf(stderr, "rank %d: read %d\n", rank, in[0]);
	MPI_File_close(&fh);
}

static int gq_query(void *extra, MPI_Status *st)
{
	(void)extra;
	MPI_Status_set_elements(st, MPI_BYTE, 0);
	MPI_Status_set_cancelled(st, 0);
	st->MPI_SOURCE = MPI_UNDEFINED;
	st->MPI_TAG = MPI_UNDEFINED;
	return MPI_SUCCESS;
}
static int gq_free(void *extra) { (void)extra; return MPI_SUCCESS; }
static int gq_cancel(void *extra, int done) { (void)extra; (void)done; return MPI_SUCCESS; }

static void grequest(void)
{
	MPI_Request r;
	MPI_Grequest_start(gq_query, gq_free, gq_cancel, NULL, &r);
	MPI_Grequest_complete(r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void commidup(void)
{
	MPI_Comm c;
	MPI_Request r;
	MPI_Comm_idup(MPI_COMM_WORLD, &c, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	int x = rank, s;
	MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, c);
	MPI_Comm_free(&c);
}

static void ibarrier(void)
{
	MPI_Request r;
	MPI_Ibarrier(MPI_COMM_WORLD, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void mprobe(void)
{
	if (rank == 0) {
		for (int i = 1; i < size; i++) {
			MPI_Message m;
			MPI_Status st;
			int v;
			MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m, &st);
			MPI_Mrecv(&v, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
		}
	} else {
		MPI_Send(&rank, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
	}
}

static void persistent(void)
{
	int out = rank, in = -1;
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	MPI_Request rs[2];
	MPI_Send_init(&out, 1, MPI_INT, next, 8, MPI_COMM_WORLD, &rs[0]);
	MPI_Recv_init(&in, 1, MPI_INT, prev, 8, MPI_COMM_WORLD, &rs[1]);
	for (int i = 0; i < 3; i++) {
		MPI_Startall(2, rs);
		MPI_Waitall(2, rs, MPI_STATUSES_IGNORE);
	}
	MPI_Request_free(&rs[0]);
	MPI_Request_free(&rs[1]);
}

static void pcoll(void)
{
#if MPI_VERSION >= 4
	int x = rank, s = 0;
	MPI_Request rs[2];
	MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]);
	MPI_Allreduce_init(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]);
	for (int i = 0; i < 3; i++) {
		MPI_Start(&rs[0]);
		MPI_Wait(&rs[0], MPI_STATUS_IGNORE);
		MPI_Start(&rs[1]);
		MPI_Wait(&rs[1], MPI_STATUS_IGNORE);
	}
	MPI_Request_free(&rs[0]);
	MPI_Request_free(&rs[1]);
#endif
}

static void neighbor(void)
{
	int dims[2] = {2, 2}, periods[2] = {1, 1};
	MPI_Comm cart;
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
	int in[4];
	MPI_Neighbor_allgather(&rank, 1, MPI_INT, in, 1, MPI_INT, cart);
	MPI_Comm_free(&cart);
}

static void rma(void)
{
	int *base;
	MPI_Win win;
	MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	for (int i = 0; i < 4; i++)
		base[i] = -1;
	MPI_Win_fence(0, win);
	MPI_Put(&rank, 1, MPI_INT, (rank + 1) % size, rank, 1, MPI_INT, win);
	MPI_Win_fence(0, win);
	MPI_Win_fence(0, win);
	int target = (rank + 1) % size, got = -1;
	MPI_Request r;
	MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
	MPI_Rget(&got, 1, MPI_INT, target, (rank + size - 1) % size, 1, MPI_INT, win, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Win_unlock(target, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
	MPI_Rput(&rank, 1, MPI_INT, target, rank, 1, MPI_INT, win, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Win_unlock(target, win);
	MPI_Win_free(&win);
}

static void intercomm(void)
{
	int low = rank < 2;
	MPI_Comm local, inter;
	MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local);
	MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? 2 : 0, 9, &inter);
	int lr;
	MPI_Comm_rank(local, &lr);
	/* Point-to-point: rank i of one group with rank i of the other. */
	int v = rank, w = -1;
	if (low) {
		MPI_Send(&v, 1, MPI_INT, lr, 10, inter);
		MPI_Recv(&w, 1, MPI_INT, lr, 11, inter, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(&w, 1, MPI_INT, lr, 10, inter, MPI_STATUS_IGNORE);
		MPI_Send(&v, 1, MPI_INT, lr, 11, inter);
	}
	/* Bcast from rank 0 of the low group, then from rank 1 of the high
	 * group. */
	int b = rank;
	if (low)
		MPI_Bcast(&b, 1, MPI_INT, lr == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
	else
		MPI_Bcast(&b, 1, MPI_INT, 0, inter);
	if (low)
		MPI_Bcast(&b, 1, MPI_INT, 1, inter);
	else
		MPI_Bcast(&b, 1, MPI_INT, lr == 1 ? MPI_ROOT : MPI_PROC_NULL, inter);
	int s = 0;
	MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, inter);
	MPI_Comm_free(&inter);
	MPI_Comm_free(&local);
}

static void cancel(void)
{
	int v;
	MPI_Request r;
	MPI_Status st;
	MPI_Irecv(&v, 1, MPI_INT, (rank + 1) % size, 99, MPI_COMM_WORLD, &r);
	MPI_Cancel(&r);
	MPI_Wait(&r, &st);
	int c = 0;
	MPI_Test_cancelled(&st, &c);
	if (!c)
		fprintf(stderr, "rank %d: receive not cancelled\n", rank);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4) {
		if (rank == 0)
			fprintf(stderr, "mpiapi needs 4 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	void (*fam[])(void) = {fileio, grequest, commidup, ibarrier, mprobe, persistent,
		pcoll, neighbor, rma, intercomm, cancel};
	for (int n = 1; n <= (int)(sizeof fam / sizeof fam[0]); n++) {
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Pcontrol(100, n);
		fam[n - 1]();
		MPI_Pcontrol(101, n);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpiapi: done\n");
	MPI_Finalize();
	return 0;
}
