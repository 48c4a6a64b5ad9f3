/* stress.c: a long, varied program for e2e/stress_test.go that mixes
 * every family of the MPI API dtpa understands, round after round, so
 * that hundreds of communicators are created and freed and every kind of
 * operation meets every other: dtpa must match every operation (no
 * unmatched receive, send, collective or request, no stall, no warning).
 * The figures are not checked. Needs exactly 4 ranks.
 *
 * Each of ROUNDS rounds (argv[1], default 24) runs, with parameters that
 * vary with the round (colours, roots, tags, sizes, directions):
 *   - communicators: MPI_Comm_split, MPI_Comm_dup, MPI_Comm_idup,
 *     MPI_Comm_create (a group without one rank: that rank gets
 *     MPI_COMM_NULL), MPI_Comm_create_group (pairs),
 *     MPI_Comm_split_type, collectives on each, all freed;
 *   - topologies: a periodic 2x2 Cartesian communicator (MPI_Cart_shift +
 *     MPI_Sendrecv, MPI_Neighbor_allgather, MPI_Ineighbor_alltoall,
 *     MPI_Cart_sub and collectives on the row), an
 *     MPI_Graph_create ring and an MPI_Dist_graph_create_adjacent ring
 *     (neighbourhood collectives, blocking and not);
 *   - an intercommunicator (MPI_Intercomm_create) between two halves that
 *     change with the round: Send/Recv and Isend/Irecv across, MPI_Bcast
 *     with MPI_ROOT / MPI_PROC_NULL, MPI_Allreduce, MPI_Barrier,
 *     MPI_Allgather, MPI_Alltoall, a rooted MPI_Gather, MPI_Iallreduce
 *     and MPI_Ibarrier, then
 *     MPI_Intercomm_merge and a collective on the merged communicator;
 *   - point-to-point: a ring with MPI_Isend/MPI_Irecv and MPI_Waitall,
 *     MPI_ANY_SOURCE receives, MPI_Mprobe/MPI_Mrecv, MPI_Issend completed
 *     by an MPI_Test loop, persistent MPI_Send_init/MPI_Recv_init,
 *     MPI_Sendrecv_replace, MPI_Probe + MPI_Recv, MPI_Ssend, MPI_Bsend,
 *     MPI_Rsend, MPI_Iprobe + MPI_Improbe + MPI_Imrecv, completions by
 *     MPI_Waitany, MPI_Waitsome, MPI_Testany and MPI_Testall;
 *   - collectives: blocking (rooted, all-to-all, scans, v-variants),
 *     nonblocking (MPI_Waitall over several);
 *   - the less common calls (extras): MPI_Ibsend and MPI_Irsend completed
 *     by MPI_Testsome, MPI_Ssend_init, MPI_Request_get_status, MPI_Waitany
 *     over a null request, MPI_Iscan, MPI_Iexscan, MPI_Ireduce_scatter,
 *     MPI_Igatherv, MPI_Ialltoallv, MPI_Iscatter, the v-variants of the
 *     neighbourhood collectives, MPI_Comm_idup of an intercommunicator
 *     with MPI_Ibcast (MPI_ROOT / MPI_PROC_NULL), MPI_Ialltoall and
 *     MPI_Iallgather across, MPI_Comm_split of an intercommunicator,
 *     MPI_Raccumulate under MPI_Win_lock_all;
 *   - MPI 4 (MPICH; Open MPI 4.1 has them as MPIX_ extensions, not
 *     traced): persistent collectives, partitioned point-to-point
 *     (MPI_Psend_init, MPI_Precv_init, MPI_Pready, MPI_Parrived),
 *     MPI_Isendrecv, MPI_Isendrecv_replace, MPI_Comm_idup_with_info and a
 *     persistent MPI_Neighbor_allgather_init;
 *   - every third round: nonblocking file I/O (MPI_File_iwrite_at +
 *     MPI_Wait, MPI_File_iread_at_all + MPI_Wait) on a temporary file in
 *     $TMPDIR, a generalized request, RMA (fences around MPI_Put, MPI_Get
 *     and MPI_Accumulate; MPI_Rput/MPI_Rget in a passive epoch).
 *
 *   mpicc -g -O0 -o stress stress.c && dtrun -np 4 ./stress [ROUNDS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, ncomms;

static void check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: %s failed (%d)\n", rank, what, rc);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static void freecomm(MPI_Comm *c)
{
	MPI_Comm_free(c);
	ncomms++;
}

/* colls runs a mix of blocking and nonblocking collectives on c. */
static void colls(MPI_Comm c, int round)
{
	int n, me;
	MPI_Comm_size(c, &n);
	MPI_Comm_rank(c, &me);
	int root = round % n;
	int x = me + round, s = 0, all[8], cnt[8], dsp[8], in[8];
	for (int i = 0; i < n; i++) {
		cnt[i] = 1;
		dsp[i] = i;
		in[i] = me * 10 + i;
	}
	MPI_Bcast(&x, 1, MPI_INT, root, c);
	MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_MAX, c);
	switch (round % 4) {
	case 0:
		MPI_Reduce(&x, &s, 1, MPI_INT, MPI_SUM, root, c);
		MPI_Gather(&x, 1, MPI_INT, all, 1, MPI_INT, root, c);
		MPI_Scatter(in, 1, MPI_INT, &x, 1, MPI_INT, root, c);
		break;
	case 1:
		MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, c);
		MPI_Alltoall(in, 1, MPI_INT, all, 1, MPI_INT, c);
		MPI_Scan(&x, &s, 1, MPI_INT, MPI_SUM, c);
		break;
	case 2:
		MPI_Gatherv(&x, 1, MPI_INT, all, cnt, dsp, MPI_INT, root, c);
		MPI_Scatterv(in, cnt, dsp, MPI_INT, &x, 1, MPI_INT, root, c);
		MPI_Allgatherv(&x, 1, MPI_INT, all, cnt, dsp, MPI_INT, c);
		MPI_Exscan(&x, &s, 1, MPI_INT, MPI_SUM, c);
		break;
	default:
		MPI_Alltoallv(in, cnt, dsp, MPI_INT, all, cnt, dsp, MPI_INT, c);
		MPI_Reduce_scatter_block(in, &s, 1, MPI_INT, MPI_SUM, c);
		MPI_Barrier(c);
		break;
	}
	MPI_Request r[4];
	int y = 0, z = 0, g[8];
	MPI_Ibcast(&x, 1, MPI_INT, (root + 1) % n, c, &r[0]);
	MPI_Iallreduce(&me, &y, 1, MPI_INT, MPI_SUM, c, &r[1]);
	MPI_Iallgather(&me, 1, MPI_INT, g, 1, MPI_INT, c, &r[2]);
	MPI_Ireduce(&me, &z, 1, MPI_INT, MPI_SUM, root, c, &r[3]);
	if (round % 2)
		MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
	else
		for (int i = 3; i >= 0; i--)
			MPI_Wait(&r[i], MPI_STATUS_IGNORE);
	MPI_Ibarrier(c, &r[0]);
	int done = 0;
	while (!done)
		MPI_Test(&r[0], &done, MPI_STATUS_IGNORE);
}

static void communicators(int round)
{
	MPI_Comm a, b, d, e;
	MPI_Comm_split(MPI_COMM_WORLD, (rank + round) % 2, size - rank, &a);
	colls(a, round);
	MPI_Comm_dup(a, &b);
	colls(b, round + 1);
	MPI_Request r;
	MPI_Comm_idup(MPI_COMM_WORLD, &d, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	colls(d, round + 2);
	/* MPI_Comm_create_group: only the members call it. */
	MPI_Group wg0, pair;
	MPI_Comm_group(MPI_COMM_WORLD, &wg0);
	int two[2] = {rank & ~1, rank | 1};
	MPI_Group_incl(wg0, 2, two, &pair);
	MPI_Comm cg;
	MPI_Comm_create_group(MPI_COMM_WORLD, pair, 30 + round, &cg);
	colls(cg, round);
	freecomm(&cg);
	MPI_Group_free(&pair);
	MPI_Group_free(&wg0);
	MPI_Comm node;
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
	MPI_Barrier(node);
	freecomm(&node);
	/* A group without rank round%4: that rank gets MPI_COMM_NULL. */
	MPI_Group wg, sub;
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	int out = round % size;
	MPI_Group_excl(wg, 1, &out, &sub);
	MPI_Comm_create(MPI_COMM_WORLD, sub, &e);
	if (e != MPI_COMM_NULL) {
		colls(e, round + 3);
		freecomm(&e);
	}
	MPI_Group_free(&sub);
	MPI_Group_free(&wg);
	freecomm(&d);
	freecomm(&b);
	freecomm(&a);
}

static void topologies(int round)
{
	int dims[2] = {2, 2}, periods[2] = {1, 1};
	MPI_Comm cart;
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, round % 2, &cart);
	int cr, src, dst, v, w = -1;
	MPI_Comm_rank(cart, &cr);
	MPI_Cart_shift(cart, round % 2, 1, &src, &dst);
	v = cr;
	MPI_Sendrecv(&v, 1, MPI_INT, dst, round, &w, 1, MPI_INT, src, round, cart, MPI_STATUS_IGNORE);
	int in[4], out[4] = {cr, cr + 1, cr + 2, cr + 3}, got[4];
	MPI_Neighbor_allgather(&cr, 1, MPI_INT, in, 1, MPI_INT, cart);
	MPI_Request r;
	MPI_Ineighbor_alltoall(out, 1, MPI_INT, got, 1, MPI_INT, cart, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	/* A row of the grid. */
	int keep[2] = {round % 2, 1 - round % 2};
	MPI_Comm row;
	MPI_Cart_sub(cart, keep, &row);
	colls(row, round);
	freecomm(&row);
	freecomm(&cart);

	/* A ring as a graph: node i's neighbours are i-1 and i+1. */
	int index[4], edges[8];
	for (int i = 0; i < 4; i++) {
		index[i] = 2 * (i + 1);
		edges[2 * i] = (i + 3) % 4;
		edges[2 * i + 1] = (i + 1) % 4;
	}
	MPI_Comm graph;
	MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, 0, &graph);
	int gin[2];
	MPI_Neighbor_allgather(&rank, 1, MPI_INT, gin, 1, MPI_INT, graph);
	MPI_Neighbor_alltoall(out, 1, MPI_INT, got, 1, MPI_INT, graph);
	freecomm(&graph);

	/* A directed ring: receive from the left, send to the right (or the
	 * other way round on odd rounds). */
	int left = (rank + 3) % 4, right = (rank + 1) % 4;
	if (round % 2) {
		int t = left;
		left = right;
		right = t;
	}
	MPI_Comm dg;
	MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right, MPI_UNWEIGHTED,
		MPI_INFO_NULL, 0, &dg);
	int one;
	MPI_Neighbor_alltoall(&rank, 1, MPI_INT, &one, 1, MPI_INT, dg);
	MPI_Ineighbor_allgather(&rank, 1, MPI_INT, &one, 1, MPI_INT, dg, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	freecomm(&dg);
}

static void intercomm(int round)
{
	/* Halves {0,1}|{2,3} on even rounds, {0,2}|{1,3} on odd ones. */
	int low = round % 2 ? rank % 2 == 0 : rank < 2;
	int remote = round % 2 ? (low ? 1 : 0) : (low ? 2 : 0);
	MPI_Comm local, inter, merged;
	MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local);
	MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote, 40 + round, &inter);
	int lr;
	MPI_Comm_rank(local, &lr);
	int v = rank, w = -1, t = round % 7;
	if (low) {
		MPI_Send(&v, 1, MPI_INT, lr, t, inter);
		MPI_Recv(&w, 1, MPI_INT, lr, t, inter, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(&w, 1, MPI_INT, MPI_ANY_SOURCE, t, inter, MPI_STATUS_IGNORE);
		MPI_Send(&v, 1, MPI_INT, lr, t, inter);
	}
	MPI_Request r[2];
	MPI_Irecv(&w, 1, MPI_INT, 1 - lr, t + 1, inter, &r[0]);
	MPI_Isend(&v, 1, MPI_INT, 1 - lr, t + 1, inter, &r[1]);
	MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
	/* A Bcast rooted in one group, the root varying with the round. */
	int b = rank, rootgrp = round % 2 == 0, root = (round / 2) % 2;
	if (low == rootgrp)
		MPI_Bcast(&b, 1, MPI_INT, lr == root ? MPI_ROOT : MPI_PROC_NULL, inter);
	else
		MPI_Bcast(&b, 1, MPI_INT, root, inter);
	int s = 0;
	MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, inter);
	MPI_Barrier(inter);
	/* Collectives across: all-to-all ones span both groups, rooted ones
	 * are rooted in one group. */
	int ag[2], aa[2] = {v, v + 1}, ab[2];
	MPI_Allgather(&v, 1, MPI_INT, ag, 1, MPI_INT, inter);
	MPI_Alltoall(aa, 1, MPI_INT, ab, 1, MPI_INT, inter);
	if (low == rootgrp)
		MPI_Gather(NULL, 0, MPI_INT, ag, 1, MPI_INT, lr == root ? MPI_ROOT : MPI_PROC_NULL, inter);
	else
		MPI_Gather(&v, 1, MPI_INT, NULL, 0, MPI_INT, root, inter);
	MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, inter, &r[0]);
	MPI_Ibarrier(inter, &r[1]);
	MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
	MPI_Intercomm_merge(inter, !low, &merged);
	colls(merged, round);
	freecomm(&merged);
	freecomm(&inter);
	freecomm(&local);
}

static void p2p(int round)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	if (round % 2) {
		int t = next;
		next = prev;
		prev = t;
	}
	/* A ring, nonblocking. */
	int out[16], in[16];
	int n = 1 + round % 16;
	for (int i = 0; i < n; i++)
		out[i] = rank + i;
	MPI_Request r[4];
	MPI_Irecv(in, n, MPI_INT, prev, 1, MPI_COMM_WORLD, &r[0]);
	MPI_Isend(out, n, MPI_INT, next, 1, MPI_COMM_WORLD, &r[1]);
	MPI_Waitall(2, r, MPI_STATUSES_IGNORE);

	/* Everyone sends to a root that receives from MPI_ANY_SOURCE, half
	 * with MPI_Recv, half with MPI_Mprobe + MPI_Mrecv. */
	int root = round % size, v = rank, x;
	if (rank == root) {
		for (int i = 1; i < size; i++) {
			if (i % 2) {
				MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Message m;
				MPI_Mprobe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
				MPI_Mrecv(&x, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
			}
		}
	} else {
		MPI_Send(&v, 1, MPI_INT, root, 2, MPI_COMM_WORLD);
	}

	/* MPI_Issend completed by a test loop; the receive is posted after
	 * a probe. */
	int done = 0;
	MPI_Issend(&v, 1, MPI_INT, next, 3, MPI_COMM_WORLD, &r[0]);
	MPI_Status st;
	MPI_Probe(prev, 3, MPI_COMM_WORLD, &st);
	MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	while (!done)
		MPI_Test(&r[0], &done, MPI_STATUS_IGNORE);

	/* Persistent requests, started twice. */
	MPI_Send_init(out, n, MPI_INT, next, 4, MPI_COMM_WORLD, &r[0]);
	MPI_Recv_init(in, n, MPI_INT, prev, 4, MPI_COMM_WORLD, &r[1]);
	for (int i = 0; i < 2; i++) {
		MPI_Startall(2, r);
		if (i)
			MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
		else {
			int idx;
			MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
			MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
		}
	}
	MPI_Request_free(&r[0]);
	MPI_Request_free(&r[1]);

	/* Sendrecv_replace and a synchronous send in pairs. */
	MPI_Sendrecv_replace(out, n, MPI_INT, next, 5, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	int partner = rank ^ 1;
	if (rank % 2) {
		MPI_Ssend(&v, 1, MPI_INT, partner, 6, MPI_COMM_WORLD);
	} else {
		MPI_Irecv(&x, 1, MPI_INT, partner, 6, MPI_COMM_WORLD, &r[0]);
		int idx, flag = 0;
		while (!flag)
			MPI_Testany(1, r, &idx, &flag, MPI_STATUS_IGNORE);
	}

	/* A buffered send, a ready send into a posted receive (the
	 * barrier orders them), MPI_Improbe + MPI_Imrecv after an MPI_Iprobe
	 * loop, completed by MPI_Waitsome and MPI_Testall. */
	char bbuf[MPI_BSEND_OVERHEAD + 64];
	void *bp;
	int bsz;
	MPI_Buffer_attach(bbuf, sizeof bbuf);
	MPI_Irecv(&x, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &r[0]);
	MPI_Irecv(in, 1, MPI_INT, prev, 8, MPI_COMM_WORLD, &r[1]);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Bsend(&v, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
	MPI_Rsend(&v, 1, MPI_INT, next, 8, MPI_COMM_WORLD);
	int nd = 0, idxs[2];
	while (nd < 2) {
		int k;
		MPI_Waitsome(2, r, &k, idxs, MPI_STATUSES_IGNORE);
		nd += k;
	}
	MPI_Buffer_detach(&bp, &bsz);
	MPI_Isend(&v, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &r[0]);
	int flag = 0;
	while (!flag)
		MPI_Iprobe(prev, 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	MPI_Message m;
	flag = 0;
	MPI_Improbe(prev, 9, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE);
	if (!flag)
		MPI_Mprobe(prev, 9, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
	MPI_Imrecv(&x, 1, MPI_INT, &m, &r[1]);
	flag = 0;
	while (!flag)
		MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
}

/* extras: the less common calls of each family. */
static void extras(int round)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int v = rank + round, x = -1, y[4], z[4], cnt[4] = {1, 1, 1, 1}, dsp[4] = {0, 1, 2, 3};
	MPI_Request r[6];
	/* Nonblocking sends of every mode, completed by MPI_Testsome. */
	char bbuf[MPI_BSEND_OVERHEAD + 16];
	void *bp;
	int bsz;
	MPI_Buffer_attach(bbuf, sizeof bbuf);
	MPI_Irecv(&y[0], 1, MPI_INT, prev, 50, MPI_COMM_WORLD, &r[0]);
	MPI_Irecv(&y[1], 1, MPI_INT, prev, 51, MPI_COMM_WORLD, &r[1]);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Ibsend(&v, 1, MPI_INT, next, 50, MPI_COMM_WORLD, &r[2]);
	MPI_Irsend(&v, 1, MPI_INT, next, 51, MPI_COMM_WORLD, &r[3]);
	int nd = 0, idx[4];
	while (nd < 4) {
		int k;
		MPI_Testsome(4, r, &k, idx, MPI_STATUSES_IGNORE);
		if (k != MPI_UNDEFINED)
			nd += k;
	}
	MPI_Buffer_detach(&bp, &bsz);
	/* Persistent synchronous send; MPI_Request_get_status before the
	 * wait; MPI_Waitany with a null request among the others. */
	MPI_Ssend_init(&v, 1, MPI_INT, next, 52, MPI_COMM_WORLD, &r[0]);
	MPI_Recv_init(&x, 1, MPI_INT, prev, 52, MPI_COMM_WORLD, &r[1]);
	MPI_Startall(2, r);
	int flag = 0;
	MPI_Request_get_status(r[1], &flag, MPI_STATUS_IGNORE);
	MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
	MPI_Request_free(&r[0]);
	MPI_Request_free(&r[1]);
	r[0] = MPI_REQUEST_NULL;
	MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 53, MPI_COMM_WORLD, &r[1]);
	MPI_Isend(&v, 1, MPI_INT, next, 53, MPI_COMM_WORLD, &r[2]);
	for (int i = 0; i < 2; i++) {
		int k;
		MPI_Waitany(3, r, &k, MPI_STATUS_IGNORE);
	}
	/* More nonblocking collectives. */
	int sc = 0, ex = 0, rs = 0;
	MPI_Iscan(&v, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
	MPI_Iexscan(&v, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
	MPI_Ireduce_scatter(z, &rs, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[2]);
	MPI_Igatherv(&v, 1, MPI_INT, y, cnt, dsp, MPI_INT, round % size, MPI_COMM_WORLD, &r[3]);
	MPI_Ialltoallv(z, cnt, dsp, MPI_INT, y, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &r[4]);
	MPI_Iscatter(z, 1, MPI_INT, &x, 1, MPI_INT, (round + 1) % size, MPI_COMM_WORLD, &r[5]);
	MPI_Waitall(6, r, MPI_STATUSES_IGNORE);
	/* v-variants of the neighbourhood collectives on a ring. */
	int left = prev, right = next;
	MPI_Comm dg;
	int src[2] = {left, right};
	MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, src, MPI_UNWEIGHTED,
		MPI_INFO_NULL, 0, &dg);
	MPI_Neighbor_allgatherv(&v, 1, MPI_INT, y, cnt, dsp, MPI_INT, dg);
	MPI_Neighbor_alltoallv(z, cnt, dsp, MPI_INT, y, cnt, dsp, MPI_INT, dg);
	MPI_Ineighbor_alltoallv(z, cnt, dsp, MPI_INT, y, cnt, dsp, MPI_INT, dg, &r[0]);
	MPI_Wait(&r[0], MPI_STATUS_IGNORE);
	freecomm(&dg);
	/* An intercommunicator made from MPI_COMM_WORLD's halves, copied by
	 * MPI_Comm_idup, with nonblocking collectives across. */
	int low = rank < 2;
	MPI_Comm local, inter, copy;
	MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local);
	MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? 2 : 0, 60 + round, &inter);
	MPI_Comm_idup(inter, &copy, &r[0]);
	MPI_Wait(&r[0], MPI_STATUS_IGNORE);
	int lr;
	MPI_Comm_rank(local, &lr);
	int root = round % 2;
	if (low)
		MPI_Ibcast(&v, 1, MPI_INT, lr == root ? MPI_ROOT : MPI_PROC_NULL, copy, &r[0]);
	else
		MPI_Ibcast(&x, 1, MPI_INT, root, copy, &r[0]);
	MPI_Ialltoall(z, 1, MPI_INT, y, 1, MPI_INT, copy, &r[1]);
	MPI_Iallgather(&v, 1, MPI_INT, y, 1, MPI_INT, copy, &r[2]);
	MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
	MPI_Comm sub;
	MPI_Comm_split(copy, lr, 0, &sub); /* an intercommunicator split */
	if (sub != MPI_COMM_NULL) {
		MPI_Allreduce(&v, &x, 1, MPI_INT, MPI_SUM, sub);
		freecomm(&sub);
	}
	freecomm(&copy);
	freecomm(&inter);
	freecomm(&local);
	/* MPI_Raccumulate in a passive epoch on every rank at once. */
	int *base;
	MPI_Win win;
	MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	*base = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, win);
	MPI_Raccumulate(&v, 1, MPI_INT, next, 0, 1, MPI_INT, MPI_SUM, win, &r[0]);
	MPI_Wait(&r[0], MPI_STATUS_IGNORE);
	MPI_Win_unlock_all(win);
	MPI_Win_free(&win);
}

static void pcolls(int round)
{
#if MPI_VERSION >= 4
	int x = rank + round, s = 0, g[4];
	MPI_Request rs[3];
	MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]);
	MPI_Allreduce_init(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]);
	MPI_Allgather_init(&x, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[2]);
	for (int i = 0; i < 2; i++) {
		MPI_Start(&rs[0]);
		MPI_Wait(&rs[0], MPI_STATUS_IGNORE);
		MPI_Startall(2, &rs[1]);
		MPI_Waitall(2, &rs[1], MPI_STATUSES_IGNORE);
	}
	for (int i = 0; i < 3; i++)
		MPI_Request_free(&rs[i]);
	/* Partitioned point-to-point on a ring, two partitions. */
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int out[2] = {rank, round}, in[2];
	MPI_Request p[2];
	MPI_Psend_init(out, 2, 1, MPI_INT, next, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]);
	MPI_Precv_init(in, 2, 1, MPI_INT, prev, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &p[1]);
	MPI_Startall(2, p);
	MPI_Pready(0, p[0]);
	MPI_Pready(1, p[0]);
	MPI_Wait(&p[0], MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD); /* every partition has been sent */
	int arrived = 0;
	MPI_Parrived(p[1], 1, &arrived);
	MPI_Wait(&p[1], MPI_STATUS_IGNORE);
	MPI_Request_free(&p[0]);
	MPI_Request_free(&p[1]);
	/* MPI_Isendrecv and MPI_Isendrecv_replace; a persistent
	 * neighbourhood collective on a copy made by MPI_Comm_idup_with_info. */
	MPI_Isendrecv(&out[0], 1, MPI_INT, next, 71, &in[0], 1, MPI_INT, prev, 71, MPI_COMM_WORLD, &p[0]);
	MPI_Wait(&p[0], MPI_STATUS_IGNORE);
	MPI_Isendrecv_replace(out, 2, MPI_INT, prev, 72, next, 72, MPI_COMM_WORLD, &p[0]);
	MPI_Wait(&p[0], MPI_STATUS_IGNORE);
	int dims[2] = {2, 2}, periods[2] = {1, 1}, nb[4];
	MPI_Comm cart, copy;
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
	MPI_Comm_idup_with_info(cart, MPI_INFO_NULL, &copy, &p[0]);
	MPI_Wait(&p[0], MPI_STATUS_IGNORE);
	MPI_Neighbor_allgather_init(&rank, 1, MPI_INT, nb, 1, MPI_INT, copy, MPI_INFO_NULL, &p[1]);
	for (int i = 0; i < 2; i++) {
		MPI_Start(&p[1]);
		MPI_Wait(&p[1], MPI_STATUS_IGNORE);
	}
	MPI_Request_free(&p[1]);
	freecomm(&copy);
	freecomm(&cart);
#else
	(void)round;
#endif
}

static void fileio(int round)
{
	char path[256];
	const char *tmp = getenv("TMPDIR");
	if (rank == 0)
		snprintf(path, sizeof path, "%s/stress.%d.%d.dat", tmp ? tmp : "/tmp", (int)getpid(), round);
	MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
	MPI_File fh;
	check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
		MPI_INFO_NULL, &fh), "MPI_File_open");
	int buf[32], in[32];
	for (int i = 0; i < 32; i++)
		buf[i] = rank * 32 + i + round;
	MPI_Request r;
	MPI_Offset off = (MPI_Offset)rank * sizeof buf;
	check(MPI_File_iwrite_at(fh, off, buf, 32, MPI_INT, &r), "MPI_File_iwrite_at");
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_File_sync(fh);
	off = (MPI_Offset)((rank + 1 + round) % size) * sizeof buf;
	check(MPI_File_iread_at_all(fh, off, in, 32, MPI_INT, &r), "MPI_File_iread_at_all");
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	if (in[0] != ((rank + 1 + round) % size) * 32 + round)
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
	MPI_Request r[2];
	int v = rank, w;
	MPI_Grequest_start(gq_query, gq_free, gq_cancel, NULL, &r[0]);
	MPI_Irecv(&w, 1, MPI_INT, (rank + size - 1) % size, 20, MPI_COMM_WORLD, &r[1]);
	MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 20, MPI_COMM_WORLD);
	MPI_Grequest_complete(r[0]);
	MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
}

static void rma(int round)
{
	int *base;
	MPI_Win win;
	MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	for (int i = 0; i < 4; i++)
		base[i] = 0;
	int target = (rank + 1 + round) % size, got = -1, one = 1;
	MPI_Win_fence(0, win);
	MPI_Put(&rank, 1, MPI_INT, target, rank, 1, MPI_INT, win);
	MPI_Win_fence(0, win);
	MPI_Get(&got, 1, MPI_INT, target, (rank + 2) % size, 1, MPI_INT, win);
	MPI_Accumulate(&one, 1, MPI_INT, target, 0, 1, MPI_INT, MPI_SUM, win);
	MPI_Win_fence(0, win);
	MPI_Request r[2];
	MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
	MPI_Rget(&got, 1, MPI_INT, target, 1, 1, MPI_INT, win, &r[0]);
	MPI_Wait(&r[0], MPI_STATUS_IGNORE);
	MPI_Win_unlock(target, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
	MPI_Rput(&rank, 1, MPI_INT, target, 2, 1, MPI_INT, win, &r[1]);
	MPI_Wait(&r[1], MPI_STATUS_IGNORE);
	MPI_Win_unlock(target, win);
	MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 4) {
		if (rank == 0)
			fprintf(stderr, "stress needs 4 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	int rounds = argc > 1 ? atoi(argv[1]) : 24;
	for (int round = 0; round < rounds; round++) {
		MPI_Pcontrol(100, 1 + round % 3);
		communicators(round);
		topologies(round);
		intercomm(round);
		p2p(round);
		extras(round);
		pcolls(round);
		if (round % 3 == 0) {
			fileio(round);
			grequest();
			rma(round);
		}
		MPI_Pcontrol(101, 1 + round % 3);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	int total = 0;
	MPI_Reduce(&ncomms, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("stress: done, %d rounds, %d communicators freed\n", rounds, total);
	MPI_Finalize();
	return 0;
}
