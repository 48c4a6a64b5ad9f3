// Communicator table: handle → local index, global id, size and rank.
// Global ids agree across ranks without any extra message: they hash the
// parent's id, the parent's count of collective creations (every member
// makes the same creation calls on the parent in the same order) and the
// new member list. Lookups are lock-free (insertions publish the key last);
// insertions take a mutex.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_writer.h"

#include <pthread.h>
#include <stdlib.h>

#define COMM_CAP (1 << 14)
static dt_comm *comm_tab;
static pthread_mutex_t comm_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t comm_next = 2;
static MPI_Group world_group = MPI_GROUP_NULL;
dt_comm dt_world_ent, dt_self_ent; // set by dt_comm_init; dt_a_comm (dt_wrap.h) takes WORLD's without a lookup

// Creation counters for communicators not created collectively over a parent
// (intercommunicators, MPI_Comm_create_group, lazily discovered ones): by key.
static struct { uint64_t key; uint32_t n; } keyed[1024];

static uint32_t keyed_next(uint64_t key) {
	for (int i = 0; i < 1024; i++) {
		if (keyed[i].key == key) return ++keyed[i].n;
		if (keyed[i].key == 0) { keyed[i].key = key; return keyed[i].n = 1; }
	}
	return 0;
}

static inline uint64_t hmix(uint64_t h, uint64_t v) {
	h ^= v;
	h *= 0x100000001b3ull;
	h ^= h >> 31;
	return h;
}

static uint64_t hfinal(uint64_t h) {
	h &= ~(1ull << 63); // ids with the top bit are MPI_COMM_SELF's
	return h ? h : 1;   // 0 is MPI_COMM_WORLD
}

static inline uintptr_t ckey(MPI_Comm c) { return (uintptr_t)c; }

static dt_comm *slot(uintptr_t key, int insert) {
	uint64_t h = ((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 40;
	for (uint32_t i = 0; i < COMM_CAP; i++) {
		dt_comm *e = &comm_tab[(h + i) & (COMM_CAP - 1)];
		uintptr_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
		if (k == key) return e;
		if (k == 0) return insert ? e : NULL;
	}
	return NULL;
}

// members fills the world ranks of a group; a member from outside
// MPI_COMM_WORLD (another world's, after MPI_Comm_spawn or connect) is
// DT_OTHER_WORLD (traceformat.OtherWorld) in its place, so that the
// positions of the others stay their ranks in the group.
#define DT_OTHER_WORLD 0xFFFFFFFFu

static int members(MPI_Group g, uint32_t **out) {
	int n = 0;
	PMPI_Group_size(g, &n);
	int *in = malloc(sizeof(int) * (n + 1)), *tr = malloc(sizeof(int) * (n + 1));
	*out = malloc(sizeof(uint32_t) * (n + 1));
	if (!in || !tr || !*out) { free(in); free(tr); free(*out); *out = NULL; return 0; }
	for (int i = 0; i < n; i++) in[i] = i;
	PMPI_Group_translate_ranks(g, n, in, world_group, tr);
	int k = 0;
	for (int i = 0; i < n; i++)
		(*out)[k++] = tr[i] != MPI_UNDEFINED && tr[i] >= 0 ? (uint32_t)tr[i] : DT_OTHER_WORLD;
	free(in);
	free(tr);
	return k;
}

void dt_comm_init(void) {
	comm_tab = calloc(COMM_CAP, sizeof(dt_comm));
	PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
	dt_world_ent = (dt_comm){.key = ckey(MPI_COMM_WORLD), .local = 0, .size = dt_size_world, .rank = dt_rank_world, .id = 0};
	dt_self_ent = (dt_comm){.key = ckey(MPI_COMM_SELF), .local = 1, .size = 1, .rank = 0,
		.id = (1ull << 63) | (uint64_t)dt_rank_world};
	if (comm_tab) {
		*slot(dt_world_ent.key, 1) = dt_world_ent;
		*slot(dt_self_ent.key, 1) = dt_self_ent;
	}
	uint32_t *all = malloc(sizeof(uint32_t) * dt_size_world);
	for (int i = 0; all && i < dt_size_world; i++) all[i] = i;
	uint32_t me = dt_rank_world;
	dt_q_def_comm(0, 0, all, dt_size_world, NULL, 0, 0, 0, 0);
	dt_q_def_comm(1, dt_self_ent.id, &me, 1, NULL, 0, 0, 0, 0);
	free(all);
}

// reg fills a table entry for c and defines it in the trace. Called with
// comm_mu held.
static dt_comm *reg(MPI_Comm c, int kind, uint64_t parent_id, uint32_t seq, int tag, uint32_t parent_local, int fid) {
	if (!comm_tab) return NULL;
	dt_comm *e = slot(ckey(c), 1);
	if (!e) return NULL;
	int inter = 0;
	PMPI_Comm_test_inter(c, &inter);
	dt_comm n = {0};
	n.inter = inter;
	PMPI_Comm_size(c, &n.size);
	PMPI_Comm_rank(c, &n.rank);
	MPI_Group g;
	uint32_t *mem = NULL, *rem = NULL;
	int nm = 0, nr = 0;
	if (PMPI_Comm_group(c, &g) == MPI_SUCCESS) { nm = members(g, &mem); PMPI_Group_free(&g); }
	if (inter && PMPI_Comm_remote_group(c, &g) == MPI_SUCCESS) { nr = members(g, &rem); PMPI_Group_free(&g); }
	uint64_t h = 0xcbf29ce484222325ull;
	// Both sides of an intercommunicator must agree: the two groups are
	// hashed in the order of their smallest member (an intracommunicator
	// has no remote group: its members come first).
	uint32_t *a = mem, *b = rem;
	int na = nm, nb = nr;
	uint32_t mina = UINT32_MAX, minb = UINT32_MAX;
	for (int i = 0; i < na; i++) if (a[i] < mina) mina = a[i];
	for (int i = 0; i < nb; i++) if (b[i] < minb) minb = b[i];
	if (nb > 0 && minb < mina) { uint32_t *t = a; a = b; b = t; int tn = na; na = nb; nb = tn; }
	switch (kind) {
	case DT_NC_COLL:
		// (MPI_Comm_dup, MPI_Comm_split … of an intercommunicator make
		// one: both groups call them.)
		h = hmix(hmix(h, parent_id), seq);
		for (int i = 0; i < na; i++) h = hmix(h, a[i]);
		for (int i = 0; i < nb; i++) h = hmix(h, b[i] + (1ull << 32));
		break;
	default: {
		h = hmix(hmix(h, kind), (uint64_t)(int64_t)tag);
		if (kind == DT_NC_GROUP) h = hmix(h, parent_id);
		for (int i = 0; i < na; i++) h = hmix(h, a[i]);
		for (int i = 0; i < nb; i++) h = hmix(h, b[i] + (1ull << 32));
		h = hmix(h, keyed_next(h));
	}
	}
	n.id = hfinal(h);
	n.local = comm_next++;
	n.key = ckey(c);
	// Publish: fields first, key last (the slot may already hold the key of a
	// freed communicator whose handle MPI reused).
	e->local = n.local;
	e->size = n.size;
	e->rank = n.rank;
	e->inter = n.inter;
	e->id = n.id;
	e->seq = 0;
	e->pending = 0;
	__atomic_store_n(&e->dead, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->key, n.key, __ATOMIC_RELEASE);
	dt_q_def_comm(n.local, n.id, mem, nm, rem, nr, inter, parent_local, fid);
	free(mem);
	free(rem);
	return e;
}

dt_comm *dt_comm_lookup(MPI_Comm c, int ok) {
	if (!comm_tab || c == MPI_COMM_NULL) return NULL;
	dt_comm *e = slot(ckey(c), 0);
	if (e && !e->pending && !__atomic_load_n(&e->dead, __ATOMIC_ACQUIRE)) return e;
	if (!ok) return NULL; // only a handle the call accepted is safe to query
	pthread_mutex_lock(&comm_mu);
	e = slot(ckey(c), 0);
	if (e && e->pending)
		e = reg(c, DT_NC_COLL, e->pend_parent, e->pend_seq, 0, 0, 0);
	else if (!e || e->dead)
		e = reg(c, DT_NC_GROUP + 100, 0, 0, 0, 0, 0); // discovered: hash of members
	pthread_mutex_unlock(&comm_mu);
	return e;
}

uint32_t dt_comm_created(MPI_Comm c, MPI_Comm parent, int kind, int tag, int fid) {
	dt_comm *p = parent == MPI_COMM_WORLD ? slot(ckey(parent), 0) : dt_comm_lookup(parent, 1);
	pthread_mutex_lock(&comm_mu);
	uint32_t seq = 0;
	if (p && (kind == DT_NC_COLL || kind == DT_NC_PENDING)) seq = ++p->seq;
	uint64_t pid = p ? p->id : 0;
	uint32_t plocal = p ? p->local : 0;
	uint32_t local = DT_COMMNULL;
	if (c == MPI_COMM_NULL) {
		local = kind == DT_NC_PENDING ? DT_NORECORD : DT_COMMNULL;
	} else if (kind == DT_NC_PENDING) {
		// MPI_Comm_idup: usable only after its request completes; registered
		// at first use with the parent and sequence number taken now.
		dt_comm *e = comm_tab ? slot(ckey(c), 1) : NULL;
		if (e) {
			e->pending = 1;
			e->pend_parent = pid;
			e->pend_seq = seq;
			__atomic_store_n(&e->key, ckey(c), __ATOMIC_RELEASE);
		}
		local = DT_NORECORD;
	} else {
		dt_comm *e = reg(c, kind, pid, seq, tag, plocal, fid);
		local = e ? e->local : DT_COMMNULL;
	}
	pthread_mutex_unlock(&comm_mu);
	return local;
}

void dt_comm_forget(MPI_Comm c) {
	if (!comm_tab || c == MPI_COMM_NULL || c == MPI_COMM_WORLD || c == MPI_COMM_SELF) return;
	dt_comm *e = slot(ckey(c), 0);
	if (e) __atomic_store_n(&e->dead, 1, __ATOMIC_RELEASE);
}
