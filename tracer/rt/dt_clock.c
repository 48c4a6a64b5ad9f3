// Clock: invariant TSC calibrated against CLOCK_MONOTONIC_RAW, else
// CLOCK_MONOTONIC_RAW itself. Synchronization (DESIGN.md): one leader per
// clock (ranks of a host share one), leaders measured along a binomial tree
// by ping-pongs keeping every raw sample; a pair stops when the minimum
// round trip is small and has not improved for a while, or when it stopped
// improving for long, between a floor and a ceiling (rounds and time).
// Only the measuring pair spins: every other rank waits asleep (polled
// nonblocking operations), so that on an oversubscribed host the pair has
// the cores (MPICH ranks blocked in MPI poll without yielding).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_stamp.h"
#include "dt_writer.h"

#include <link.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

dt_clock dt_clk;
int dt_use_tsc;
MPI_Comm dt_priv = MPI_COMM_NULL; // ping-pongs and barriers of the sync (several clocks only)
static int leader_world, *leader_ranks; // this rank's leader; world ranks of the leaders
static int nleaders = 1, my_leader_index = -1;
static int serial; // leaders share a host: one pair measures at a time

static int invariant_tsc(void) {
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f) return 0;
	char line[8192];
	int ok = 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5) == 0) {
			ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	}
	fclose(f);
	return ok;
}

void dt_clock_init(void) {
	uint64_t tsc;
	int64_t ns;
	dt_stamp(&tsc, &ns);
	dt_clock_init_at(tsc, ns);
}

// dt_clock_init_at chooses the clock, with the TSC and CLOCK_MONOTONIC_RAW
// read together at (tsc, ns) as the first point of the TSC's calibration.
void dt_clock_init_at(uint64_t tsc, int64_t ns) {
	const char *force = getenv("DT_CLOCK");
	dt_use_tsc = invariant_tsc() && !(force && strcmp(force, "monotonic_raw") == 0);
	dt_clk.tsc = dt_use_tsc;
	if (dt_use_tsc) dt_clk.raw0 = tsc, dt_clk.ns0 = ns;
	dt_clk.ns_per_tick = 1;
}

// dt_fold_gap is the longest gap, in raw clock units plus one, between a
// query and the one before it at which dt_rec_end_query still folds the
// two: DT_FOLD_GAP_NS (default 1000 ns; 0: queries are never folded).
// A run of queries then has every inner gap below it, so that placing them
// at their mean (the analyzer's gap median) is off by less than it.
uint64_t dt_fold_gap DT_HIDDEN = 1;

static void fold_setup(void) {
	const char *g = getenv("DT_FOLD_GAP_NS");
	double ns = g && *g ? strtod(g, NULL) : 1000;
	if (!(ns > 0)) {
		dt_fold_gap = 0;
		return;
	}
	dt_fold_gap = (uint64_t)(dt_use_tsc ? ns / dt_clk.ns_per_tick : ns) + 1;
}

static void tsc_calibrate(void);

void dt_clock_calibrate(void) {
	tsc_calibrate();
	fold_setup();
}

static void tsc_calibrate(void) {
	if (!dt_use_tsc) return;
	int64_t until = dt_clk.ns0 + 5000000; // 5 ms: frequency error of a few ppm
	do dt_stamp(&dt_clk.raw1, &dt_clk.ns1);
	while (dt_clk.ns1 < until);
	dt_clk.ns_per_tick = (double)(dt_clk.ns1 - dt_clk.ns0) / (double)(dt_clk.raw1 - dt_clk.raw0);
	// DT_CLOCK_SKEW="rank:offset_s:drift_ppm,…" (tests): this rank's share.
	const char *s = getenv("DT_CLOCK_SKEW");
	while (s && *s) {
		int r;
		double off, ppm;
		if (sscanf(s, "%d:%lf:%lf", &r, &off, &ppm) == 3 && r == dt_rank_world) {
			dt_clk.skew_off_ns = (int64_t)(off * 1e9);
			dt_clk.skew_ppm = ppm;
		}
		s = strchr(s, ',');
		if (s) s++;
	}
}

int64_t dt_ns(uint64_t raw) {
	int64_t ns = dt_clk.tsc ? dt_clk.ns0 + (int64_t)((double)(int64_t)(raw - dt_clk.raw0) * dt_clk.ns_per_tick) : (int64_t)raw;
	if (dt_clk.skew_off_ns || dt_clk.skew_ppm != 0)
		ns += dt_clk.skew_off_ns + (int64_t)(dt_clk.skew_ppm * 1e-6 * (double)(ns - dt_clk.ns0));
	return ns;
}

// dt_host_name is this rank's host: DT_HOSTNAME when set (tests give ranks
// of one machine different hosts with it), else gethostname. The clock
// groups and the trace header (dt_cw.c) use it.
void dt_host_name(char *name, size_t n) {
	const char *o = getenv("DT_HOSTNAME");
	memset(name, 0, n);
	if (o && *o) snprintf(name, n, "%s", o);
	else if (gethostname(name, n - 1) != 0) name[0] = 0;
}

// dt_host_hash identifies this rank's host: a 64-bit FNV-1a hash of its
// name (dt_host_name).
static uint64_t dt_host_hash(void) {
	char name[256];
	dt_host_name(name, sizeof name);
	uint64_t h = 14695981039346656037ULL;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211ULL;
	return h;
}

// What each rank tells every other at MPI_Init (dt_clock_groups).
typedef struct {
	uint64_t host;          // dt_host_hash
	uint32_t skewed, pad;   // an injected skew: its own clock
	unsigned char rand[16]; // rank 0's is the run id
} dt_hello;

static const dt_hello *hello_all; // for by_host (MPI_Init is single-threaded)
static int by_host(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	uint64_t hx = hello_all[x].host, hy = hello_all[y].host;
	return hx != hy ? (hx < hy ? -1 : 1) : x - y;
}

static void await_asleep(MPI_Request *r);
static void tree_allgather(const void *mine, void *all, int size, MPI_Comm comm, int tag);
// TAG_HELLO is the tag of dt_clock_groups' exchange on MPI_COMM_WORLD
// (tree_allgather says why the program's messages cannot be confused
// with it); the others are on the tracer's own communicator.
enum { TAG_HELLO = 30571, TAG_GO = 1, TAG_TIME = 2, TAG_TURN = 3, TAG_BARRIER = 4 };

// dt_clock_groups finds the clocks and the run id (rank 0's random bytes).
// Ranks of one host share a clock, led by the host's lowest world rank,
// except ranks with an injected skew, which lead themselves. It takes one
// MPI_Allgather on MPI_COMM_WORLD: at MPI_Init every rank calls it at the
// same point, before the program can use the communicator; a rank that
// arrives early waits for the others asleep (await_asleep), not spinning in
// MPI on a core that a rank still in its MPI_Init needs. Each
// communicator made costs a collective (its context id), and under MPICH,
// whose ranks poll without yielding, the five the tracer used to make
// (a duplicate, a shared-memory split, two splits, with their broadcasts)
// took 0.6 s of MPI_Init at 8 ranks on 2 cores. So the tracer's private
// communicator (its ping-pongs and barriers) is made only when there are
// pairs to measure: more than one clock. The exchange is made of
// point-to-point messages, not a nonblocking collective (tree_allgather).
void dt_clock_groups(unsigned char runid[16]) {
	dt_hello me = {.host = dt_host_hash(), .skewed = dt_clk.skew_off_ns != 0 || dt_clk.skew_ppm != 0};
	if (getrandom(me.rand, sizeof me.rand, 0) != (ssize_t)sizeof me.rand) {
		uint64_t x = dt_now() ^ ((uint64_t)getpid() << 32);
		memcpy(me.rand, &x, 8);
	}
	int n = dt_size_world;
	// One block for the table and its indexes: MPI_Init has just allocated
	// more than this per peer.
	dt_hello *all = malloc((sizeof(dt_hello) + 3 * sizeof(int)) * (size_t)n);
	if (!all) abort(); // no way to take part in the collective without it
	int *idx = (int *)(all + n), *lead = idx + n;
	leader_ranks = lead + n;
	tree_allgather(&me, all, (int)sizeof me, MPI_COMM_WORLD, TAG_HELLO);
	memcpy(runid, all[0].rand, 16);
	hello_all = all;
	for (int r = 0; r < n; r++) idx[r] = r;
	qsort(idx, (size_t)n, sizeof(int), by_host);
	for (int i = 0; i < n;) {
		int j = i, host_leader = -1, leaders_here = 0;
		for (; j < n && all[idx[j]].host == all[idx[i]].host; j++) {
			int r = idx[j];
			if (all[r].skewed) lead[r] = r, leaders_here++;
			else {
				if (host_leader < 0) host_leader = r, leaders_here++;
				lead[r] = host_leader;
			}
		}
		// Leaders on one host (injected skew) would compete for its cores
		// if pairs measured at once: then pairs take turns.
		if (leaders_here > 1) serial = 1;
		i = j;
	}
	nleaders = 0;
	for (int r = 0; r < n; r++)
		if (lead[r] == r) {
			if (r == dt_rank_world) my_leader_index = nleaders;
			leader_ranks[nleaders++] = r;
		}
	leader_world = lead[dt_rank_world];
	if (nleaders > 1) PMPI_Comm_dup(MPI_COMM_WORLD, &dt_priv);
}

// Stopping rule of a pair (measure): at least ROUNDS_MIN round trips; stop
// once the minimum is below RTT_GOOD and has not improved for STALE_GOOD
// rounds; with a larger minimum (a partner waiting for a core), go on until
// it has not improved for STALE_MAX rounds, ROUNDS_MAX rounds or PAIR_NS.
enum { ROUNDS_MIN = 10, ROUNDS_MAX = 200, STALE_GOOD = 20, STALE_MAX = 100 };
#define RTT_GOOD 20000LL   // ns
#define PAIR_NS 50000000LL // ns

// await_asleep completes a nonblocking operation of the tracer's without
// spinning: MPI_Test, then sleep 20 µs doubling up to 1 ms. A rank waiting
// for its turn, or for the others to finish, leaves the cores to the pair
// measuring.
static void await_asleep(MPI_Request *r) {
	long ns = 20000;
	for (;;) {
		int done = 0;
		PMPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (done) return;
		struct timespec ts = {0, ns};
		nanosleep(&ts, NULL);
		if (ns < 1000000) ns *= 2;
	}
}

// tree_allgather gives every rank of comm the size bytes of each (all, in
// rank order; mine is this rank's; size 0: a barrier), by point-to-point
// messages up a binomial tree to rank 0 and back down, waiting asleep
// (await_asleep). Not MPI_Iallgather or MPI_Ibarrier: under Open MPI 4.1
// the first nonblocking collective registers libnbc's progress function for
// the rest of the run, which every MPI call that polls then calls too — a
// 0-byte ping-pong of the program's took ~60 ns more per call (2 ranks,
// bench.c; one MPI_Ibarrier after MPI_Init did the same untraced; MPICH
// is not affected). Each ordered pair of ranks exchanges at most one
// message (a child sends to its parent on the way up, a parent to its
// child on the way down) and a rank returns only once it has received
// all that is sent to it: on MPI_COMM_WORLD, a program's message with the
// same tag from the same rank is sent after this one (non-overtaking) and
// none of these is left for the program's receives.
static void tree_allgather(const void *mine, void *all, int size, MPI_Comm comm, int tag) {
	int n, me;
	PMPI_Comm_size(comm, &n);
	PMPI_Comm_rank(comm, &me);
	static char none;
	char *a = size > 0 ? all : &none; // size 0: every offset is 0
	if (size > 0) memcpy(a + (size_t)me * (size_t)size, mine, (size_t)size);
	// Up: the children me + m (m below me's lowest set bit, or below n for
	// rank 0) send their subtrees' blocks [me + m, me + 2m); me then sends
	// [me, me + its lowest set bit) to its parent.
	int low = me ? me & -me : n;
	MPI_Request r[32];
	int k = 0;
	for (int m = 1; m < low && me + m < n; m <<= 1) {
		int cnt = me + 2 * m <= n ? m : n - me - m;
		PMPI_Irecv(a + (size_t)(me + m) * (size_t)size, cnt * size, MPI_BYTE, me + m, tag, comm, &r[k++]);
	}
	for (int i = 0; i < k; i++) await_asleep(&r[i]);
	if (me != 0) {
		int cnt = me + low <= n ? low : n - me;
		PMPI_Isend(a + (size_t)me * (size_t)size, cnt * size, MPI_BYTE, me - low, tag, comm, &r[0]);
		await_asleep(&r[0]);
		// Down: the whole table from the parent.
		PMPI_Irecv(a, n * size, MPI_BYTE, me - low, tag, comm, &r[0]);
		await_asleep(&r[0]);
	}
	k = 0;
	for (int m = 1; m < low && me + m < n; m <<= 1) PMPI_Isend(a, n * size, MPI_BYTE, me + m, tag, comm, &r[k++]);
	for (int i = 0; i < k; i++) await_asleep(&r[i]);
}

// barrier is an MPI_Barrier on the tracer's communicator that waits asleep.
static void barrier(void) { tree_allgather(NULL, NULL, 0, dt_priv, TAG_BARRIER); }

// pp_recv receives one message of a ping-pong spinning, as MPI would, but
// yields the core every YIELD_NS: a partner descheduled on this core (a
// host with more runnable threads than cores) then answers at once instead
// of after this thread's time slice, while a partner running elsewhere
// answers within the spin.
#define YIELD_NS 5000LL
static void pp_recv(void *buf, MPI_Datatype t, int src, int tag) {
	MPI_Request r;
	PMPI_Irecv(buf, 1, t, src, tag, dt_priv, &r);
	int64_t spin = dt_mono_raw();
	for (;;) {
		int done = 0;
		PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
		if (done) return;
		int64_t now = dt_mono_raw();
		if (now - spin >= YIELD_NS) {
			sched_yield();
			spin = dt_mono_raw();
		}
	}
}

// measure measures this leader's clock against leader ref's (world ranks).
static void measure(int phase, int ref) {
	int64_t snd[ROUNDS_MAX], rem[ROUNDS_MAX], rcv[ROUNDS_MAX];
	int64_t best = INT64_MAX, start = dt_mono_raw();
	int n = 0, last = 0;
	for (; n < ROUNDS_MAX; n++) {
		int go = 1;
		int64_t t1 = dt_ns(dt_now());
		PMPI_Send(&go, 1, MPI_INT, ref, TAG_GO, dt_priv);
		pp_recv(&rem[n], MPI_INT64_T, ref, TAG_TIME);
		int64_t t2 = dt_ns(dt_now());
		snd[n] = t1;
		rcv[n] = t2;
		if (t2 - t1 < best) best = t2 - t1, last = n;
		if (n + 1 < ROUNDS_MIN) continue;
		int stale = n - last;
		if ((best <= RTT_GOOD && stale >= STALE_GOOD) || stale >= STALE_MAX || dt_mono_raw() - start >= PAIR_NS) {
			n++;
			break;
		}
	}
	int stop = 0;
	PMPI_Send(&stop, 1, MPI_INT, ref, TAG_GO, dt_priv);
	dtw_clocksync(phase, ref, 0, snd, rem, rcv, n);
}

// serve answers a child's ping-pongs with its clock. The first message is
// awaited asleep (the child may be waiting for its turn); the others come
// back to back and are received spinning (pp_recv).
static void serve(int child) {
	int go;
	MPI_Request r;
	PMPI_Irecv(&go, 1, MPI_INT, child, TAG_GO, dt_priv, &r);
	await_asleep(&r);
	while (go) {
		int64_t t = dt_ns(dt_now());
		PMPI_Send(&t, 1, MPI_INT64_T, child, TAG_TIME, dt_priv);
		pp_recv(&go, MPI_INT, child, TAG_GO);
	}
}

// dt_clock_sync measures this phase. Every rank takes part in the two
// barriers around the measurements, so that no rank runs (or spins in MPI)
// while pairs measure. The pairs of the binomial tree over leaders: in
// round k, leaders [k, 2k) measure against i-k. When leaders share a host,
// the pairs take turns (leader i measures after leader i-1, which sends it
// the turn); otherwise each round's pairs measure at once.
//
// Cost (MPI_Init and MPI_Finalize each): the barriers, plus per pair at
// most max(PAIR_NS, ROUNDS_MIN round trips) — 50 ms unless round trips
// exceed 5 ms — and ~1 ms of wake-up latency; pairs one after the other
// when serial (leaders - 1 of them), else ceil(log2(leaders)) rounds.
//
// With one clock (one host, no injected skew) there is nothing to measure:
// every rank records that it shares its leader's clock, without a barrier
// or any other communication.
void dt_clock_sync(int phase) {
	if (nleaders <= 1 || dt_priv == MPI_COMM_NULL) { // one clock
		dtw_clocksync(phase, leader_world, 1, NULL, NULL, NULL, 0);
		return;
	}
	barrier();
	int li = my_leader_index, ln = nleaders;
	if (li < 0) {
		dtw_clocksync(phase, leader_world, 1, NULL, NULL, NULL, 0);
		barrier();
		return;
	}
	if (li == 0) dtw_clocksync(phase, dt_rank_world, 1, NULL, NULL, NULL, 0);
	for (int k = 1; k < ln; k <<= 1) {
		if (li < k && li + k < ln) serve(leader_ranks[li + k]);
		else if (li >= k && li < 2 * k) {
			int turn = 0;
			if (serial && li > 1) {
				MPI_Request r;
				PMPI_Irecv(&turn, 1, MPI_INT, leader_ranks[li - 1], TAG_TURN, dt_priv, &r);
				await_asleep(&r);
			}
			measure(phase, leader_ranks[li - k]);
			if (serial && li + 1 < ln) PMPI_Send(&turn, 1, MPI_INT, leader_ranks[li + 1], TAG_TURN, dt_priv);
		}
	}
	barrier();
}

void dt_clock_free(void) {
	if (dt_priv != MPI_COMM_NULL) PMPI_Comm_free(&dt_priv);
}

// ---- loaded modules, for symbolizing call sites later.
static void dt_text_widen(const char *name, uintptr_t lo, uintptr_t hi);
static int module_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	(void)data;
	uint64_t lo = UINT64_MAX, hi = 0;
	const unsigned char *bid = NULL;
	int nbid = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			uint64_t a = info->dlpi_addr + p->p_vaddr;
			if (a < lo) lo = a;
			if (a + p->p_memsz > hi) hi = a + p->p_memsz;
		}
		if (p->p_type == PT_NOTE && !bid) {
			const char *n = (const char *)(info->dlpi_addr + p->p_vaddr), *end = n + p->p_memsz;
			while (n + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
				const char *name = n + sizeof *nh;
				const char *desc = name + ((nh->n_namesz + 3) & ~3u);
				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
					bid = (const unsigned char *)desc;
					nbid = nh->n_descsz;
					break;
				}
				n = desc + ((nh->n_descsz + 3) & ~3u);
			}
		}
	}
	if (hi == 0) return 0;
	dt_text_widen(info->dlpi_name, lo, hi);
	if (data) return 0; // dt_text_update: the range only
	char exe[4096];
	const char *path = info->dlpi_name;
	if (!path || !*path) {
		ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[k > 0 ? k : 0] = 0;
		path = exe;
	}
	dtw_module((char *)path, info->dlpi_addr, lo, hi, (unsigned char *)bid, nbid);
	return 0;
}

void dt_modules(void) { dl_iterate_phdr(module_cb, NULL); }

uintptr_t dt_text_lo, dt_text_span = UINTPTR_MAX; // every address, until dt_modules ran
uint32_t dt_text_gen;

// The code of each loaded module, [text_lo[i], text_hi[i]) sorted by start,
// for dt_in_text (under site_mu once tracing runs; dt_modules fills it at
// MPI_Init, before any call is recorded).
#define TEXT_MAX 512
static uintptr_t text_lo[TEXT_MAX], text_hi[TEXT_MAX];
static int ntext;

// dt_text_widen adds a module's code [lo, hi) to the table and makes the
// span of code (dt_site's walk) cover it. The vDSO is left out: it sits next
// to the stack, and a span reaching it would take stack addresses for code.
static void dt_text_widen(const char *name, uintptr_t lo, uintptr_t hi) {
	static uintptr_t tlo = UINTPTR_MAX, thi;
	if (name && strstr(name, "linux-vdso")) return;
	int i = 0;
	while (i < ntext && text_lo[i] < lo) i++;
	if (i < ntext && text_lo[i] == lo) return; // known
	if (ntext < TEXT_MAX) {
		memmove(text_lo + i + 1, text_lo + i, (size_t)(ntext - i) * sizeof text_lo[0]);
		memmove(text_hi + i + 1, text_hi + i, (size_t)(ntext - i) * sizeof text_hi[0]);
		text_lo[i] = lo, text_hi[i] = hi;
		ntext++;
	}
	if (lo < tlo) tlo = lo;
	if (hi > thi) thi = hi;
	dt_text_lo = tlo;
	dt_text_span = thi - tlo;
	__atomic_add_fetch(&dt_text_gen, 1, __ATOMIC_RELEASE);
}

// dt_in_text tells whether pc is in the code of a loaded module (or the
// table is full or empty: then everything is).
int dt_in_text(uintptr_t pc) {
	if (ntext == 0 || ntext == TEXT_MAX) return 1;
	int lo = 0, hi = ntext;
	while (lo < hi) {
		int m = (lo + hi) / 2;
		if (text_lo[m] <= pc) lo = m + 1;
		else hi = m;
	}
	return lo > 0 && pc < text_hi[lo - 1];
}

// dt_text_update adds the modules loaded since (dt_site_slow, when a call
// comes from outside the span), without defining them to the writer: that
// is done at MPI_Finalize.
void dt_text_update(void) { dl_iterate_phdr(module_cb, (void *)1); }
