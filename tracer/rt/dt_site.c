// Call sites: a global table under a mutex; the per-thread memo of walks
// (dt_site, dt_wrap.h) and cache of stacks (dt_site_walk) make the lock
// rare. A new call site is defined to the writer through the hand-over queue
// (dt_q_def_site).
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

int dt_depth = 4; // UserStackSize (dt_start)

// ---- Unwinding (README "Call sites")
//
// Optimised code keeps no frame pointers, so a caller's frame is found from
// the binaries' unwind tables (.eh_frame CFI). libunwind reads them, but a
// full unwind per MPI call costs 120-270 ns at depth 2-8 (unw_backtrace, its
// fast path) and its unw_step loop microseconds. What a frame needs is one
// rule per return address — the caller's CFA is RSP or RBP plus a constant,
// its return address at CFA-8, its RBP unchanged or saved at CFA plus a
// constant — so each thread keeps those rules in a small table: libunwind is
// asked once per return address (dt_rule_learn), and every later walk is a
// table probe and two loads per frame. A return address without a usable
// rule (no unwind table, a signal frame, an exotic rule) ends the stack.
enum { DT_R_END = 0, DT_R_SP = 1, DT_R_BP = 2 };
#define DT_NOSAVE INT16_MIN
typedef struct {
	uintptr_t pc;   // the return address the rule is for; 0 = empty slot
	int32_t cfa;    // the caller's CFA = (RSP or RBP in this frame) + cfa
	int16_t rbp;    // the caller's RBP is at CFA + rbp, or DT_NOSAVE: unchanged
	uint8_t kind;   // DT_R_*
} dt_rule;
#define DT_RULES 2048 // per thread: 32 KB, sets of DT_WAYS (a hot pair colliding
#define DT_WAYS 4     // in a direct-mapped table would relearn at every call)
static __thread dt_rule *dt_rules __attribute__((tls_model("initial-exec")));
static pthread_key_t rules_key;
static pthread_once_t rules_once = PTHREAD_ONCE_INIT;

static void rules_init(void) {
	pthread_key_create(&rules_key, free);
	// libunwind's own caches (the FDE lookups of dt_rule_learn) without a
	// lock shared by the threads.
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static dt_rule *rules_new(void) {
	pthread_once(&rules_once, rules_init);
	dt_rule *t = calloc(DT_RULES, sizeof *t);
	if (t) pthread_setspecific(rules_key, t);
	return dt_rules = t;
}

// rule_find returns pc's rule, or the slot to learn it into: a free one of
// its set, else one chosen by the return address's low bits.
static inline dt_rule *rule_find(dt_rule *tab, uintptr_t pc) {
	dt_rule *set = &tab[((pc * 0x9E3779B97F4A7C15ull) >> 53) & (DT_RULES - DT_WAYS)];
	for (int i = 0; i < DT_WAYS; i++) {
		if (__builtin_expect(set[i].pc == pc, 1)) return &set[i];
		if (set[i].pc == 0) return &set[i];
	}
	return &set[(pc >> 1) & (DT_WAYS - 1)];
}

// dt_rule_learn fills r with the rule for the frame that will return to pc,
// whose stack pointer is sp and frame-pointer register bp (a value that is
// not a frame pointer when the function uses RBP as an ordinary register),
// on a stack that ends at hi.
// libunwind steps from a context made of just those three registers, twice,
// with two values of RBP: a CFA that follows RBP is RBP-based, one that stays
// is RSP-based. Its reads stay in the thread's stack for any correct unwind
// table: RBP is replaced by an address just above sp when it does not point
// into the stack above sp, and a return address without an unwind table is
// never stepped (libunwind would then follow RBP as a frame pointer).
static __attribute__((noinline, cold)) void dt_rule_learn(uintptr_t hi, dt_rule *r, uintptr_t pc, uintptr_t sp, uintptr_t bp) {
	r->pc = pc;
	r->kind = DT_R_END;
	if (bp < sp + 16 || bp + 16 > hi) bp = sp + 16;
	uintptr_t bps[2] = {bp, bp - 8};
	unw_word_t cfa[2];
	uintptr_t rbp_at = 0;
	for (int k = 0; k < 2; k++) {
		unw_context_t uc;
		memset(&uc, 0, sizeof uc);
		uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
		uc.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
		uc.uc_mcontext.gregs[REG_RBP] = (greg_t)bps[k];
		unw_cursor_t c;
		if (unw_init_local(&c, &uc) < 0) return;
		if (k == 0) {
			// Without an unwind table libunwind reports a one-byte
			// procedure starting at pc itself; a real one contains the
			// call, pc - 1.
			unw_proc_info_t pi;
			if (unw_get_proc_info(&c, &pi) < 0 || pi.start_ip >= pc || pi.end_ip < pc) return;
			if (unw_is_signal_frame(&c) > 0) return;
		}
		if (unw_step(&c) <= 0) return; // the outermost frame
		if (unw_get_reg(&c, UNW_REG_SP, &cfa[k]) < 0) return;
		if (k == 0) {
			unw_save_loc_t loc;
			// The return address must be at CFA-8, as for every call.
			if (unw_get_save_loc(&c, UNW_X86_64_RIP, &loc) < 0 || loc.type != UNW_SLT_MEMORY ||
				loc.u.addr != cfa[0] - 8)
				return;
			// A saved RBP lies in the frame; an unchanged one is still
			// where the context held it (uc, below sp).
			if (unw_get_save_loc(&c, UNW_X86_64_RBP, &loc) == 0 && loc.type == UNW_SLT_MEMORY &&
				loc.u.addr >= sp && loc.u.addr < cfa[0])
				rbp_at = loc.u.addr;
		}
	}
	intptr_t off;
	if (cfa[0] == cfa[1]) {
		r->kind = DT_R_SP;
		off = (intptr_t)(cfa[0] - sp);
	} else if (cfa[0] - cfa[1] == 8) {
		r->kind = DT_R_BP;
		off = (intptr_t)(cfa[0] - bps[0]);
	} else {
		return;
	}
	intptr_t ro = rbp_at ? (intptr_t)rbp_at - (intptr_t)cfa[0] : DT_NOSAVE;
	if (cfa[0] <= sp || off < INT32_MIN || off > INT32_MAX || (rbp_at && ro <= DT_NOSAVE)) {
		r->kind = DT_R_END;
		return;
	}
	r->cfa = (int32_t)off;
	r->rbp = (int16_t)ro;
}

// dt_step moves a walk one frame up by rule r (not DT_R_END): from the
// frame's sp and bp to its caller's, its return address into *pc and,
// where r says the frame saved it, the caller's RBP, whose address goes to
// *bp_at; every read below hi. 0: the walk ends here; 2: RBP was restored.
static inline __attribute__((always_inline)) int dt_step(const dt_rule *r, uintptr_t hi, uintptr_t *pc, uintptr_t *sp,
	uintptr_t *bp, uintptr_t *bp_at) {
	uintptr_t cfa = (r->kind == DT_R_SP ? *sp : *bp) + (intptr_t)r->cfa;
	if (cfa <= *sp || cfa > hi || (cfa & 7)) return 0;
	int restored = 1;
	if (r->rbp != DT_NOSAVE) {
		uintptr_t at = cfa + (intptr_t)r->rbp;
		if (at < *sp || at + 8 > hi) return 0;
		*bp = *(const uintptr_t *)at;
		*bp_at = at;
		restored = 2;
	}
	*pc = ((const uintptr_t *)cfa)[-1];
	*sp = cfa;
	return restored;
}

// dt_unwind returns the call stack of the wrapper whose frame is fp (the
// wrapper keeps a frame pointer: fp[1] is its return address, fp[0] its
// caller's RBP, fp + 16 its caller's stack pointer): up to dt_depth return
// addresses, innermost first. Every read is inside the thread's stack; a
// CFA outside it, or a return address outside the span of the loaded
// modules' code, ends the stack. The stack words the result depends on
// besides fp[1] go to s (*k of them, at most DT_MEMO_WORDS(dt_depth)):
// every return address read, and the word each RBP a rule based on RBP
// starts from was read from. (Other saved RBPs are read, but only an
// RBP-based CFA uses the value.)
static int dt_unwind(dt_thr *T, void *fp, uintptr_t *pcs, dt_word *s, uint32_t *k) {
	uintptr_t a = (uintptr_t)fp;
	*k = 0;
	if (dt_depth <= 0 || a < T->stk_lo || a + 16 > T->stk_hi || (a & 7)) return 0;
	const uintptr_t *f = fp;
	uintptr_t pc = f[1], sp = a + 16, bp = f[0];
	uintptr_t bp_at = a; // where bp was read
	int bp_kept = 0;     // bp is in s
	int n = 0;
	uint32_t nk = 0;
	pcs[n++] = pc;
	dt_rule *tab = dt_rules;
	if (__builtin_expect(!tab, 0) && !(tab = rules_new())) return n;
	while (n < dt_depth) {
		dt_rule *r = rule_find(tab, pc);
		if (__builtin_expect(r->pc != pc, 0)) dt_rule_learn(T->stk_hi, r, pc, sp, bp);
		if (r->kind == DT_R_END) break;
		if (r->kind == DT_R_BP && !bp_kept) {
			s[nk++] = (dt_word){bp_at, bp};
			bp_kept = 1;
		}
		int st = dt_step(r, T->stk_hi, &pc, &sp, &bp, &bp_at);
		if (st == 0) break;
		if (st == 2) bp_kept = 0;
		s[nk++] = (dt_word){sp - 8, pc};
		if (pc - dt_text_lo >= dt_text_span) break;
		pcs[n++] = pc;
	}
	*k = nk;
	return n;
}

// mapping_of finds the writable mapping of the process that holds address
// a (/proc/self/maps): a thread's stack. Not async-signal-safe (stdio):
// the signal watcher's.
static int mapping_of(uintptr_t a, uintptr_t *lo, uintptr_t *hi) {
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f) return 0;
	char line[512];
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long s, e;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3 && a >= s && a < e && perms[0] == 'r' && perms[1] == 'w') {
			*lo = (uintptr_t)s, *hi = (uintptr_t)e;
			found = 1;
		}
	}
	fclose(f);
	return found;
}

// walk_on goes on with a walk whose pcs[n-1] is pc, the frame's stack
// pointer sp and RBP bp (read from bp_at), every read below hi, up to max
// frames, with the call sites' rules learnt into the calling thread's
// table; it returns the frames in pcs.
static int walk_on(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t bp_at, uintptr_t hi, uintptr_t *pcs, int n, int max) {
	dt_rule *tab = dt_rules;
	if (!tab && !(tab = rules_new())) return n;
	while (n < max) {
		dt_rule *r = rule_find(tab, pc);
		if (r->pc != pc) dt_rule_learn(hi, r, pc, sp, bp);
		if (r->kind == DT_R_END) break;
		if (!dt_step(r, hi, &pc, &sp, &bp, &bp_at)) break;
		if (pc - dt_text_lo >= dt_text_span) break;
		pcs[n++] = pc;
	}
	return n;
}

// dt_crash_stack walks the crashed thread's stack from the registers its
// signal's context held (c: dt_crash, or dt_where), with the rules and steps dt_unwind uses, learnt
// into a table of the calling thread (the signal watcher's). The first
// frame is the interrupted instruction itself; a jump to an address
// outside the modules' code (a call through a bad function pointer)
// left its return address at the stack pointer, from which the walk goes
// on. Every read is inside the crashed thread's stack: its bounds as the
// tracer knows them, or, for a thread that never called MPI (an OpenMP
// worker), the writable mapping holding its stack pointer.
int dt_crash_stack(const dt_crash_t *c, uintptr_t *pcs, int max) {
	dt_thr *T = c->T;
	uintptr_t pc = c->pc, sp = c->sp, bp = c->bp, bp_at = 0, lo, hi;
	int n = 0;
	if (max <= 0 || !__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE)) return 0;
	pcs[n++] = pc;
	if (T) {
		lo = T->stk_lo, hi = T->stk_hi;
	} else if (!mapping_of(sp, &lo, &hi)) {
		return n;
	}
	if (sp < lo || sp + 8 > hi || (sp & 7)) return n;
	if (pc - dt_text_lo >= dt_text_span) {
		pc = *(const uintptr_t *)sp;
		sp += 8;
		if (pc - dt_text_lo >= dt_text_span || n >= max) return n;
		pcs[n++] = pc;
	}
	return walk_on(pc, sp, bp, bp_at, hi, pcs, n, max);
}

// dt_here_stack walks the calling thread's stack from frame fp of a
// function built with frame pointers (the tracer's exit handler), as
// dt_crash_stack walks a crashed thread's: fp's return address, then
// theirs, into pcs (at most max), every read within the stack of T (the
// thread's, NULL for one that never called MPI: the writable mapping
// holding fp).
int dt_here_stack(dt_thr *T, void *fp, uintptr_t *pcs, int max) {
	uintptr_t a = (uintptr_t)fp, lo, hi;
	if (max <= 0) return 0;
	if (T) {
		lo = T->stk_lo, hi = T->stk_hi;
	} else if (!mapping_of(a, &lo, &hi)) {
		return 0;
	}
	if (a < lo || a + 16 > hi || (a & 7)) return 0;
	const uintptr_t *f = fp;
	uintptr_t pc = f[1];
	if (pc - dt_text_lo >= dt_text_span) return 0;
	pcs[0] = pc;
	return walk_on(pc, a + 16, f[0], a, hi, pcs, 1, max);
}

static uint64_t dt_site_hash(const uintptr_t *pcs, int n) {
	uint64_t h = 0x9E3779B97F4A7C15ull * (uint64_t)(n + 1);
	for (int i = 0; i < n; i++) h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static uint32_t dt_site_slow(dt_thr *T, const uintptr_t *pcs, int n, uint64_t h, dt_hdr *rec, int code);

// dt_site_walk is dt_site's path for a call its memo does not know: the
// walk, then the call site from the thread's cache of stacks (keyed by a
// hash of the whole stack) or the global table (dt_site_slow); the walk
// and its site are remembered in e. text_gen is read before the walk:
// a span widened during it (by another thread, or by dt_site_slow for this
// call) leaves an entry that the next call finds out of date.
uint32_t dt_site_walk(dt_thr *T, void *fp, dt_memo *e, dt_hdr *rec) {
	uint32_t gen = __atomic_load_n(&dt_text_gen, __ATOMIC_ACQUIRE);
	uintptr_t pcs[DT_MAXDEPTH];
	uint32_t k;
	e->fp = 0;
	int n = dt_unwind(T, fp, pcs, e->s, &k);
	uint64_t h = dt_site_hash(pcs, n);
	dt_site_ent *c = &T->sites[h & (DT_SITE_CACHE - 1)];
	uint32_t id;
	if (c->hash == h && c->n == (uint32_t)n && memcmp(c->pcs, pcs, n * sizeof(uintptr_t)) == 0) id = c->id;
	else id = dt_site_slow(T, pcs, n, h, rec, 1);
	// A walk cut short for want of a rule table is not remembered: the
	// next one may get the table.
	if (dt_rules || dt_depth <= 1) {
		e->pc = ((const uintptr_t *)fp)[1];
		e->gen = gen;
		e->k = k;
		e->site = id;
		e->fp = (uintptr_t)fp;
	}
	return id;
}

#define SITE_CAP (1 << 15)
static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;
static dt_site_ent *site_tab;
static dt_site_ent **site_by_id; // site_tab's entries by id
static uint32_t site_next = 1;   // 0 = empty stack, defined at init

int dt_site_pcs(uint32_t id, uintptr_t *pcs) {
	int n = 0;
	pthread_mutex_lock(&site_mu);
	if (site_by_id && id < SITE_CAP && site_by_id[id]) {
		n = (int)site_by_id[id]->n;
		memcpy(pcs, site_by_id[id]->pcs, (size_t)n * sizeof(uintptr_t));
	}
	pthread_mutex_unlock(&site_mu);
	return n;
}

// dt_site_src is the call site of pcs[0 … n), addresses in the source-file
// modules of dt_py.c (no code to check): from the thread's cache of stacks
// or the global table.
uint32_t dt_site_src(dt_thr *T, const uintptr_t *pcs, int n, dt_hdr *rec) {
	uint64_t h = dt_site_hash(pcs, n);
	dt_site_ent *c = &T->sites[h & (DT_SITE_CACHE - 1)];
	if (c->hash == h && c->n == (uint32_t)n && memcmp(c->pcs, pcs, n * sizeof(uintptr_t)) == 0) return c->id;
	return dt_site_slow(T, pcs, n, h, rec, 0);
}

// dt_site_slow finds or defines the call site of pcs[0 … n); code: they
// are return addresses, to be checked against the modules' code.
static uint32_t dt_site_slow(dt_thr *T, const uintptr_t *pcs, int n, uint64_t h, dt_hdr *rec, int code) {
	uint32_t id = 0;
	int defined = 0;
	pthread_mutex_lock(&site_mu);
	// A call from a module loaded since MPI_Init: its callers' frames would
	// be cut off by the span of code; widen it (dt_site). Rare: once per
	// call site first seen from outside the span.
	if (code && n > 0 && pcs[0] - dt_text_lo >= dt_text_span) dt_text_update();
	// A new stack: its frames beyond the first must be in some module's
	// code, not merely in the span between the lowest and the highest
	// (dt_site checks only that): a "return address" read from a caller's
	// locals can fall there (MPICH's use-mpi Fortran, a loop counter in the
	// high half). The walk ends at the first that is not. Such a stack
	// misses the thread's cache at every call and comes here, but it is
	// one call site: no new definition, and polls fold.
	for (int i = 1; code && i < n; i++) {
		if (!dt_in_text(pcs[i])) {
			n = i;
			h = dt_site_hash(pcs, n);
			break;
		}
	}
	if (!site_tab) {
		site_tab = calloc(SITE_CAP, sizeof(dt_site_ent));
		site_by_id = calloc(SITE_CAP, sizeof(dt_site_ent *));
	}
	if (site_tab) {
		for (uint32_t i = 0; i < SITE_CAP; i++) {
			dt_site_ent *e = &site_tab[(h + i) & (SITE_CAP - 1)];
			if (e->n == 0 && e->hash == 0) {
				if (site_next >= SITE_CAP * 3 / 4) break; // full: empty stack
				e->hash = h;
				e->n = n;
				memcpy(e->pcs, pcs, n * sizeof(uintptr_t));
				e->id = id = site_next++;
				if (site_by_id) site_by_id[id] = e;
				dt_q_def_site(id, pcs, n);
				defined = 1;
				break;
			}
			if (e->hash == h && e->n == (uint32_t)n && memcmp(e->pcs, pcs, n * sizeof(uintptr_t)) == 0) {
				id = e->id;
				break;
			}
		}
	}
	pthread_mutex_unlock(&site_mu);
	dt_site_ent *c = &T->sites[h & (DT_SITE_CACHE - 1)];
	c->hash = h;
	c->n = n;
	memcpy(c->pcs, pcs, n * sizeof(uintptr_t));
	c->id = id;
	if (defined && rec) dt_rec_long(T, rec, dt_now()); // the hand-over is part of the call
	return id;
}
