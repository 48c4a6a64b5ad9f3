// Per-call recording path of the tracer, included by the generated wrappers
// (zz_*_gen.c) and by the runtime's C files (dt_*.c). Everything a wrapper does on each MPI call is
// inline here: two timestamps, a call-site lookup in a per-thread cache and a
// compact record appended to the calling thread's buffer. The writer is
// handed a buffer only when it is full (see dt_make_room), never per call.
#ifndef DT_WRAP_H
#define DT_WRAP_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

// dt_state (dt_thr.c): DT_ST_OFF before MPI_Init (and for good when the
// trace could not be opened), DT_ST_TRACING while calls are recorded,
// DT_ST_STOPPED once recording stopped early (dt_stop: size limit, write
// error, full trace buffer; calls are counted as dropped until the trace is
// finished), DT_ST_FINISHED once the trace is finished (MPI_Finalize,
// MPI_Abort, fatal signal, exit) and in a forked child.
enum { DT_ST_OFF = 0, DT_ST_TRACING = 1, DT_ST_STOPPED = 2, DT_ST_FINISHED = 3 };

#define DT_MAXDEPTH 16
#define DT_SITE_CACHE 512

// Record header: 20 bytes, the exit as a duration from the entry (raw
// clock units, modulo 2^64). Attributes follow in Attr bit order; their
// presence is given by attr, so the record needs no length field. Two
// bits of attr are not attributes but escapes, so that nothing is lost
// when a value does not fit its usual 32 bits: A_LONG, the duration's
// upper 32 bits follow the header (a 24-byte header: dur is then a u64,
// low half first); A_WIDE, the byte counts (A_SBYTES, A_RBYTES) are u64
// rather than u32. Records stay 4-byte aligned.
typedef struct __attribute__((packed, aligned(4))) {
	uint16_t func, attr;
	uint32_t site;
	uint64_t t0; // raw clock reading (TSC ticks or ns) at entry
	uint32_t dur; // exit - t0, low 32 bits
} dt_hdr;

// DT_HDR_MAX is the largest header (with A_LONG), the room a record
// reserves for it.
#define DT_HDR_MAX 24

enum {
	A_COMM = 1, A_SEND = 2, A_RECV = 4, A_SBYTES = 8, A_RBYTES = 16, A_ROOT = 32,
	A_REQS = 64, A_STATUS = 128, A_NEWCOMM = 256, A_PCONTROL = 512, A_FLAG = 1024, A_CALLS = 2048, A_INNER = 4096,
};
// The escape bits (above; records.RawLong, records.RawWide).
enum { A_LONG = 8192, A_WIDE = 16384 };

// Request kinds remembered between creation and completion, so that only
// receives report a status (trace.proto: NO_STATUS otherwise).
enum { DT_RK_RECV = 1, DT_RK_PRECV = 2 };
// How a communicator was created (dt_comm_created).
enum { DT_NC_COLL = 1, DT_NC_INTER = 2, DT_NC_GROUP = 3, DT_NC_PENDING = 4 };
#define DT_NORECORD 0xFFFFFFFEu
#define DT_COMMNULL 0xFFFFFFFFu

typedef struct dt_comm {
	uintptr_t key;   // the handle; 0 = empty slot
	uint32_t local;  // Communicator.local
	int32_t size, rank;
	uint8_t inter, pending, dead;
	uint64_t id;     // global id
	uint32_t seq;    // collective creations seen on this communicator (parent role)
	uint64_t pend_parent;
	uint32_t pend_seq;
} dt_comm;

typedef struct {
	uint64_t hash;
	uint32_t id, n;
	uintptr_t pcs[DT_MAXDEPTH];
} dt_site_ent;

// A stack word a walk read: its address and the value read (dt_memo).
typedef struct {
	uintptr_t at, v;
} dt_word;

// dt_memo remembers one stack walk and its call site (dt_site). A walk
// (dt_unwind) is a function of the wrapper's frame address, of the stack
// words it reads (the return address of each frame; the saved RBP a frame
// rule based on RBP starts from), of the per-thread unwind rules (a function
// of the return address) and of the span of code (text_gen). An entry holds
// the frame address, the wrapper's return address, text_gen and the other
// words read with their values: when they are all unchanged the walk would
// read and compute exactly the same, so its call site is the entry's.
typedef struct {
	uintptr_t fp, pc; // the wrapper's frame and its return address; fp 0: empty
	uint32_t site, gen;
	uint32_t k, pad; // k words in s
	dt_word s[];     // at most 2 * (dt_depth - 1): DT_MEMO_WORDS
} dt_memo;
#define DT_MEMO_BITS 8 // 256 entries per thread, direct-mapped by (fp, pc)
#define DT_MEMO (1 << DT_MEMO_BITS)
#define DT_MEMO_WORDS(depth) ((depth) > 1 ? 2 * ((depth) - 1) : 0)

// What a thread publishes, in words from its commit offset on (the
// spill slot's header, records/spill.go, where dtrun reads it after the
// process was killed; or the thread's commit_sink without a slot): [0]
// the commit offset, [1] the slot's thread, and the MPI call in progress
// (dt_entry): its entry time, its return address and its function + 1 (0:
// none); then when a fatal signal arrived (dt_stamp_signal; 0: none). A
// job killed while a rank waits in a call, or a crash inside one, thus
// says which call it was and for how long it had run (dt_unfinished,
// records.Recover).
enum { DT_PUB_T0 = 2, DT_PUB_PC = 3, DT_PUB_FID = 4, DT_PUB_END = 5, DT_PUB_WORDS = 6 };

typedef struct dt_thr {
	// What every call reads or writes, in T's first cache line (T is
	// 64-byte aligned, dt_thr_new): the buffer, the commit offset's place,
	// the epoch, the memo and the busy flag.
	char *buf, *pos, *commit, *end;
	// In the slot's header of the spill mapping when the buffer is a slot,
	// else commit_sink: never NULL, so the commit is one store, untested.
	// The words from it on are what the thread publishes (DT_PUB_*).
	volatile uint64_t *chunk_commit;
	uint64_t epoch;
	char *memo;          // DT_MEMO entries of 1 << memo_shift bytes (64-byte aligned)
	int busy;
	uint32_t memo_shift;
	uint32_t tid;
	uintptr_t stk_lo, stk_hi;
	MPI_Request *rscratch;
	int nrscratch;
	MPI_Status *sscratch;
	int nsscratch;
	MPI_Datatype tc_type;
	int tc_size;
	uint64_t tc_gen;
	uint64_t dropped;
	// The last committed record when it may be folded (dt_rec_fold:
	// a test or probe that completed nothing, a query), the length of
	// its attributes before A_CALLS, and where a record directly after it
	// begins (the end of what is committed then; NULL: none may be folded):
	// the next identical one is folded into it. Reset with the buffer.
	char *poll, *poll_next;
	uint32_t poll_len;
	dt_site_ent *sites;
	uintptr_t py_ts; // the thread's Python thread state, from its last call in a Python program (dt_py_call_site)
	uint64_t commit_sink[DT_PUB_WORDS]; // chunk_commit's target without a spill slot
	struct dt_thr *next;
} dt_thr;

// The per-call helpers below must be inlined into every wrapper: with ~400
// wrappers in one file GCC's heuristics otherwise keep them as out-of-line
// calls (four calls per MPI call, measured ~8 ns at depth 1).
#define DT_INLINE static inline __attribute__((always_inline))

// Hidden: the per-call path reaches them without a GOT indirection.
#define DT_HIDDEN __attribute__((visibility("hidden")))
extern __thread dt_thr *dt_self __attribute__((tls_model("initial-exec"))) DT_HIDDEN;
extern volatile int dt_state DT_HIDDEN; // a DT_ST_* value
extern volatile uint64_t dt_epoch DT_HIDDEN;
extern volatile uint64_t dt_type_gen DT_HIDDEN;
extern int dt_use_tsc DT_HIDDEN, dt_depth DT_HIDDEN;
// The span of the loaded modules' code (dt_clock.c, module_cb): return
// addresses outside it end a stack walk.
extern uintptr_t dt_text_lo DT_HIDDEN, dt_text_span DT_HIDDEN;
// Moves whenever the span or the table of modules' code changes (dt_memo).
extern uint32_t dt_text_gen DT_HIDDEN;
extern size_t dt_chunk DT_HIDDEN;
extern uint64_t dt_fold_gap DT_HIDDEN; // dt_rec_end_query (dt_clock.c)
extern dt_comm dt_world_ent DT_HIDDEN, dt_self_ent DT_HIDDEN;

dt_thr *dt_enter_slow(void);
dt_thr *dt_thr_new(void);
int dt_make_room(dt_thr *T, size_t need);
void dt_epoch_flush(dt_thr *T, char *rec);
void dt_rec_long(dt_thr *T, dt_hdr *H, uint64_t t1);
void dt_sbytes_wide(dt_thr *T, dt_hdr *H, uint64_t v);
void dt_rbytes_wide(dt_thr *T, dt_hdr *H, uint64_t v);
uint32_t dt_site_walk(dt_thr *T, void *fp, dt_memo *e, dt_hdr *rec);
dt_comm *dt_comm_lookup(MPI_Comm c, int ok);
uint32_t dt_comm_created(MPI_Comm c, MPI_Comm parent, int kind, int tag, int fid);
void dt_comm_forget(MPI_Comm c);
int dt_tsize_slow(dt_thr *T, MPI_Datatype t);
MPI_Request *dt_req_scratch_slow(dt_thr *T, int n, const MPI_Request *r);
MPI_Status *dt_status_scratch(dt_thr *T, int n);
void dt_a_done1(dt_thr *T, dt_hdr *H, MPI_Request r, MPI_Status *st);
void dt_a_doneall(dt_thr *T, dt_hdr *H, int n, const MPI_Request *rs, MPI_Status *sts);
void dt_a_donesome(dt_thr *T, dt_hdr *H, int n, const int *idx, const MPI_Request *rs, MPI_Status *sts);
void dt_a_reqcreated(dt_thr *T, dt_hdr *H, MPI_Request r, int kind);
void dt_a_reqlist(dt_thr *T, dt_hdr *H, int n, const MPI_Request *rs);
void dt_a_reqfree(dt_thr *T, dt_hdr *H, MPI_Request r);

DT_INLINE uint64_t dt_now(void) {
	if (__builtin_expect(dt_use_tsc, 1)) return __rdtsc();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

DT_INLINE dt_thr *dt_enter(void) {
	if (__builtin_expect(dt_state != DT_ST_TRACING, 0)) return dt_enter_slow();
	dt_thr *T = dt_self;
	if (__builtin_expect(T == NULL, 0)) T = dt_thr_new();
	if (T == NULL || T->busy) return NULL; // nested MPI call: recorded by the outer one
	T->busy = 1;
	return T;
}

// dt_entry reads the entry time of a call of function fid that returns to
// pc, and publishes the call as in progress (DT_PUB_*): three stores into
// the cache line of the commit offset, which the call's end writes anyway
// (and clears the function there: a fourth).
DT_INLINE uint64_t dt_entry(dt_thr *T, int fid, void *pc) {
	uint64_t t0 = dt_now();
	volatile uint64_t *p = T->chunk_commit;
	p[DT_PUB_T0] = t0;
	p[DT_PUB_PC] = (uintptr_t)pc;
	p[DT_PUB_FID] = (uint64_t)fid + 1;
	return t0;
}

// dt_req_scratch is the wrapper's copy of the n requests of r, taken before
// a test or wait completes (and nulls) them: the thread's scratch array,
// copied inline for a few requests (a program polling one request, as
// hpcc's MPI_Testany does, pays no call of memcpy per poll), else by
// dt_req_scratch_slow, which also grows the array.
#define DT_REQ_INLINE 4
DT_INLINE MPI_Request *dt_req_scratch(dt_thr *T, int n, const MPI_Request *r) {
	if (__builtin_expect(n > 0 && n <= DT_REQ_INLINE && n <= T->nrscratch && r != NULL, 1)) {
		MPI_Request *s = T->rscratch;
		for (int i = 0; i < n; i++) s[i] = r[i];
		return s;
	}
	return dt_req_scratch_slow(T, n, r);
}

// Normalized special ranks (trace.proto): ANY_SOURCE -1, PROC_NULL -2, ROOT -3.
// Written as selects, so that a value the MPI already gives (Open MPI's
// ANY_SOURCE and PROC_NULL, MPICH's ROOT) costs no compare.
DT_INLINE int32_t dt_rank(int r) {
	if (r >= 0) return r;
	int32_t v = r;
	if (r == MPI_ANY_SOURCE) v = -1;
	if (r == MPI_PROC_NULL) v = -2;
	if (r == MPI_ROOT) v = -3;
	return v;
}

// Attribute words are stored as unaligned integers, not with memcpy: a
// store through a char pointer may alias anything, T->pos included, so
// that T->pos would be read again after every store. An integer store
// cannot (strict aliasing, on at -O2), and T->pos stays in a register
// across the record's attributes.
typedef uint32_t dt_u32 __attribute__((aligned(1)));
typedef uint64_t dt_u64 __attribute__((aligned(1)));
DT_INLINE void dt_put32(dt_thr *T, uint32_t v) { *(dt_u32 *)T->pos = v; T->pos += 4; }
DT_INLINE void dt_put64(dt_thr *T, uint64_t v) { *(dt_u64 *)T->pos = v; T->pos += 8; }

// The code of mpi4py's extension module (dt_py.c) when the program's
// Python frames are recorded (dt_py_span is 0 otherwise): the thread state
// of a call whose wrapper returns there is noted for the footer
// (dt_cw.c).
extern uintptr_t dt_py_lo DT_HIDDEN, dt_py_span DT_HIDDEN;
// The return addresses whose call sites dt_py_call_site gives (dt_py.c):
// none (span 0), or every one in a Python program whose frames the tracer
// reads, so that dt_site tests for Python with the one compare it makes.
extern uintptr_t dt_py_gate_lo DT_HIDDEN, dt_py_gate_span DT_HIDDEN;
// dt_py_call_site is the call site of a call in a Python program: the
// Python frames of a call from mpi4py; for a call from elsewhere (a C
// extension, ctypes, PETSc under petsc4py) made while its thread runs
// Python code, its C frames up to the interpreter, then the Python
// frames; else the C stack.
uint32_t dt_py_call_site(dt_thr *T, void *fp, dt_hdr *rec);
// dt_site_pcs copies the frames of call site id into pcs (DT_MAXDEPTH of
// room) and returns how many.
int dt_site_pcs(uint32_t id, uintptr_t *pcs);

// dt_site_c is the call site of the C stack: a walk of the unwind tables
// (dt_site_walk, dt_site.c) gives the return addresses, and a new call site
// is handed to the writer, after which the exit of rec, the record being written
// (its header ends at T->pos), is moved past the hand-over (dt_rec_long). A call from the same frame and return address as a remembered
// walk, whose stack words read are unchanged, has that walk's call site
// (dt_memo): one compare per word instead of a rule lookup per frame and a
// probe of the call-site cache.
DT_INLINE uint32_t dt_site_c(dt_thr *T, void *fp, dt_hdr *rec) {
	uintptr_t a = (uintptr_t)fp, pc = ((const uintptr_t *)fp)[1];
	size_t i = (size_t)(((a ^ pc) * 0x9E3779B97F4A7C15ull) >> (64 - DT_MEMO_BITS));
	dt_memo *e = (dt_memo *)(T->memo + (i << T->memo_shift));
	if (__builtin_expect(e->fp == a && e->pc == pc && e->gen == dt_text_gen, 1)) {
		uint32_t j = 0, k = e->k;
		while (j < k && *(const uintptr_t *)e->s[j].at == e->s[j].v) j++;
		if (__builtin_expect(j == k, 1)) return e->site;
	}
	return dt_site_walk(T, fp, e, rec);
}

// dt_site is the call site of the wrapper whose frame is fp: in a Python
// program whose frames the tracer reads, dt_py_call_site's (one compare
// elsewhere), else the C stack.
DT_INLINE uint32_t dt_site(dt_thr *T, void *fp, dt_hdr *rec) {
	if (__builtin_expect(((const uintptr_t *)fp)[1] - dt_py_gate_lo < dt_py_gate_span, 0)) return dt_py_call_site(T, fp, rec);
	return dt_site_c(T, fp, rec);
}

// Hand-overs to the writer (a full buffer here, a new call site in dt_site, the
// periodic flush in dt_rec_end) happen inside the call that triggered them:
// each moves the record's exit time past itself, so that the tracer's cost
// is seen as time in that MPI call, never as the program's own time after it
// (README: "Flushes"). The common path is unchanged: the exit time is only
// read again on those slow paths.
//
// A duration that does not fit 32 bits (a call of more than ~1.5 s at
// 3 GHz, or an exit reading before the entry) takes dt_rec_long, out of
// line: the common path adds one compare. The duration is stored before
// the call site is looked up, and a new site's hand-over rewrites it
// (dt_site_slow), so that the exit reading need not stay in memory for
// that slow path.
DT_INLINE dt_hdr *dt_rec_begin(dt_thr *T, int fid, uint64_t t0, uint64_t t1, void *fp, size_t need) {
	if (__builtin_expect(T->pos + need + DT_HDR_MAX > T->end, 0)) {
		if (!dt_make_room(T, need + DT_HDR_MAX)) return NULL;
		t1 = dt_now();
	}
	dt_hdr *H = (dt_hdr *)T->pos;
	H->func = (uint16_t)fid;
	H->attr = 0;
	H->t0 = t0;
	uint64_t d = t1 - t0;
	H->dur = (uint32_t)d;
	T->pos += sizeof(dt_hdr);
	if (__builtin_expect(d > UINT32_MAX, 0)) dt_rec_long(T, H, t1);
	H->site = dt_site(T, fp, H);
	return H;
}

// dt_rec_exit sets the exit of the record H, the one being written (its
// attributes end at T->pos), to t1: a hand-over inside the call moved it.
DT_INLINE void dt_rec_exit(dt_thr *T, dt_hdr *H, uint64_t t1) {
	if (__builtin_expect(t1 - H->t0 > UINT32_MAX || (H->attr & A_LONG), 0)) dt_rec_long(T, H, t1);
	else H->dur = (uint32_t)(t1 - H->t0);
}

// dt_rec_end commits the record begun at T->commit. A periodic flush is
// due when the epoch moved: dt_epoch_flush hands over the records before
// this one (rec), which moves to the fresh buffer with its exit time taken
// after the hand-over. (The check stays last, a tail call, as before.)
DT_INLINE void dt_rec_end(dt_thr *T) {
	char *rec = T->commit;
	T->commit = T->pos;
	*T->chunk_commit = (uint64_t)(T->pos - T->buf);
	T->chunk_commit[DT_PUB_FID] = 0;
	T->busy = 0;
	if (__builtin_expect(T->epoch != dt_epoch, 0)) dt_epoch_flush(T, rec);
}

// dt_rec_fold ends the record of a call that may be folded: a test or
// probe that completed nothing (or found no message), or a query
// (MPI_Comm_rank, MPI_Wtime, …: tracer/gen, foldable); fold says whether
// this call qualifies. Consecutive such calls of one call site with equal
// attribute bytes, each entered (when bounded) less than maxgap (raw clock
// units) after the previous one's exit, are folded into the first one's record: it gets A_CALLS,
// their number, and A_INNER, the summed time between them (from one call's
// exit to the next one's entry), and t0 is moved so that t1 - t0 stays
// their summed time inside MPI while t1 is the last one's exit (a run
// whose summed time would not fit the header's 32-bit duration, or a call
// whose own does not, A_LONG, starts a new record). So MPI time
// and counts stay exact, and the gap before the record is the one before
// the first call plus A_INNER (records/records.go). A program polling for a
// message (hpcc's RandomAccess: ~1 M MPI_Testany per rank) or asking its
// rank in a loop then costs a few bytes per run instead of 24 per call, and
// the encoder and the hand-overs nothing per call. Extrae folds failed
// MPI_Test/MPI_Iprobe likewise. Not folded: after the epoch moved (the next
// record hands the buffer over), across a buffer (dt_thr_attach_buf
// resets T->poll_next), or past another record (it moved T->pos past
// T->poll_next).
DT_INLINE void dt_rec_fold(dt_thr *T, dt_hdr *H, int fold, int bounded, uint64_t maxgap) {
	if (H && fold) {
		char *end = T->pos;
		uint32_t len = (uint32_t)(end - (char *)(H + 1));
		// H directly follows the foldable record P (nothing recorded in
		// between, same buffer: poll_next is reset with the buffer), with
		// as many attribute bytes, in the same epoch.
		if ((char *)H == T->poll_next && len == T->poll_len && T->epoch == dt_epoch) {
			dt_hdr *P = (dt_hdr *)T->poll;
			// H's header fields are read one by one (volatile): just written by
			// separate stores, a merged 8-byte load of them would wait for the
			// stores to retire (a failed store forwarding) at every call.
			uint16_t hf = *(volatile uint16_t *)&H->func, ha = *(volatile uint16_t *)&H->attr;
			uint32_t hs = *(volatile uint32_t *)&H->site;
			uint16_t pa = P->attr;
			uint64_t t0 = H->t0;
			uint32_t hd = H->dur, pd = P->dur;
			// pt1 is the previous call's exit. (An entry reading before
			// it, which an unordered rdtsc might give, is no gap.)
			uint64_t pt1 = P->t0 + pd;
			uint64_t gap = t0 > pt1 ? t0 - pt1 : 0;
			if (P->func == hf && P->site == hs && (pa & ~(A_CALLS | A_INNER)) == ha && (!bounded || gap < maxgap) &&
			    (uint64_t)pd + hd <= UINT32_MAX) {
				// The attributes (whole 32-bit words), their differences
				// OR-ed: no branch per word.
				const uint32_t *x = (const uint32_t *)(P + 1), *y = (const uint32_t *)(H + 1);
				uint32_t words = len / 4, d = 0;
				for (uint32_t i = 0; i < words; i++) d |= x[i] ^ y[i];
				if (d == 0) {
					if (pa & A_CALLS) {
						// P's count and summed gaps are the 12 bytes before H,
						// the end of what is committed: the call's own record
						// is dropped and nothing new is committed.
						*(dt_u32 *)((char *)H - 12) += 1;
						*(dt_u64 *)((char *)H - 8) += gap;
						T->pos = (char *)H;
					} else {
						// H's fields were read above; the two values take 12
						// of its 20 bytes. Committed first, then marked: a
						// crash in between leaves P as it was, followed by
						// 12 bytes that recovery drops.
						uint32_t n = 2;
						memcpy(H, &n, 4);
						memcpy((char *)H + 4, &gap, 8);
						T->pos = T->commit = T->poll_next = (char *)H + 12;
						*T->chunk_commit = (uint64_t)(T->pos - T->buf);
						__atomic_signal_fence(__ATOMIC_SEQ_CST);
						P->attr = pa | A_CALLS | A_INNER;
					}
					// P's time inside MPI grows by H's and it ends at H's
					// exit: its entry is that exit, t0 + hd, minus pd + hd.
					P->dur = pd + hd;
					P->t0 = t0 - pd;
					T->chunk_commit[DT_PUB_FID] = 0;
					T->busy = 0;
					return;
				}
			}
		}
		T->poll = (char *)H;
		T->poll_len = len;
		T->poll_next = H->attr & A_LONG ? NULL : end;
	} else {
		T->poll_next = NULL;
	}
	dt_rec_end(T);
}

// dt_allnull tells whether the n requests of rs (the wrapper's copy from
// before the call) were all null, so that an MPI_Testall that returned a
// true flag completed nothing (and may be folded).
DT_INLINE int dt_allnull(int n, const MPI_Request *rs) {
	if (rs == NULL) return 0;
	for (int i = 0; i < n; i++)
		if (rs[i] != MPI_REQUEST_NULL) return 0;
	return 1;
}

// dt_rec_end_poll ends the record of a test or probe: unsucc, it completed
// nothing (found no message). Such runs are folded whatever the gaps
// between their calls (a program polls for a message while it computes).
DT_INLINE void dt_rec_end_poll(dt_thr *T, dt_hdr *H, int unsucc) { dt_rec_fold(T, H, unsucc, 0, 0); }

// dt_rec_end_query ends the record of a query (tracer/gen, foldable): a
// successful one (ok) is folded into the previous record when that is the
// same query and this one entered less than dt_fold_gap after its exit.
// Only hot loops are folded: a query per µs or more costs a few per cent
// recorded, and keeps its own gap.
DT_INLINE void dt_rec_end_query(dt_thr *T, dt_hdr *H, int ok) { dt_rec_fold(T, H, ok, 1, dt_fold_gap); }

DT_INLINE int dt_tsize(dt_thr *T, MPI_Datatype t) {
	if (t == T->tc_type && T->tc_gen == dt_type_gen) return T->tc_size;
	return dt_tsize_slow(T, t);
}

DT_INLINE dt_comm *dt_a_comm(dt_thr *T, dt_hdr *H, MPI_Comm c, int ok) {
	dt_comm *C = (c == MPI_COMM_WORLD) ? &dt_world_ent : dt_comm_lookup(c, ok);
	if (C) {
		H->attr |= A_COMM;
		dt_put32(T, C->local);
	}
	return C;
}

DT_INLINE int dt_isroot(dt_comm *C, int root) {
	if (!C) return 0;
	return C->inter ? root == MPI_ROOT : root == C->rank;
}

// (For up to 64 requests the need, at most 1088 bytes, is below the
// smallest dt_chunk / 2, 2 KB: no load of dt_chunk, no compare.)
DT_INLINE size_t dt_need_reqs(int n) {
	if (__builtin_expect((unsigned)n <= 64, 1)) return 64 + 16 * (size_t)n;
	size_t need = 64 + 16 * (size_t)(n > 0 ? n : 0);
	return need > dt_chunk / 2 ? dt_chunk / 2 : need;
}

// Record macros used by the generated wrappers (tracer/gen/table.go).
#define CM(c) dt_comm *C = dt_a_comm(T, H, (c), dt_ok); (void)C;
#define SEND(p, t) do { H->attr |= A_SEND; dt_put32(T, dt_rank(p)); dt_put32(T, (uint32_t)(t)); } while (0);
#define RECV(p, t) do { H->attr |= A_RECV; dt_put32(T, dt_rank(p)); dt_put32(T, (uint32_t)(t)); } while (0);
#define SZ(ty) ((int64_t)dt_tsize(T, (ty)))
#define SB(n, ty) SBN((n) > 0 ? (int64_t)(n) * SZ(ty) : 0)
#define RB(n, ty) RBN((n) > 0 ? (int64_t)(n) * SZ(ty) : 0)
// Byte counts are u32 unless one does not fit (A_WIDE: both are u64, out
// of line). The send count comes first (bit order): a receive count that
// does not fit widens it (dt_rbytes_wide), and one after a wide send count
// is wide. dt_wide says the send count was: a wrapper that records one
// declares its own (tracer/gen), which SBN sets; elsewhere this constant
// folds RBN's test away (a test of H->attr would be a load per receive).
static const int dt_wide __attribute__((unused)) = 0;
#define SBN(v) do { uint64_t v_ = (uint64_t)(v); if (__builtin_expect(v_ > UINT32_MAX, 0)) { dt_sbytes_wide(T, H, v_); dt_wide = 1; } \
	else { H->attr |= A_SBYTES; dt_put32(T, (uint32_t)v_); } } while (0);
#define RBN(v) do { uint64_t v_ = (uint64_t)(v); if (__builtin_expect(v_ > UINT32_MAX || dt_wide, 0)) dt_rbytes_wide(T, H, v_); \
	else { H->attr |= A_RBYTES; dt_put32(T, (uint32_t)v_); } } while (0);
#define ROOT(r) do { H->attr |= A_ROOT; dt_put32(T, dt_rank(r)); } while (0);
#define CSIZE ((int64_t)(C ? C->size : 0))
#define ISROOT(r) dt_isroot(C, (r))
#define SUM(a) ({ int64_t s_ = 0; if (a) for (int i_ = 0; i_ < CSIZE; i_++) s_ += (int64_t)(a)[i_]; s_; })
#define SUMW(a, ty) ({ int64_t s_ = 0; if ((a) && (ty)) for (int i_ = 0; i_ < CSIZE; i_++) s_ += (int64_t)(a)[i_] * SZ((ty)[i_]); s_; })
#define REQC(h, kind) if (dt_ok) dt_a_reqcreated(T, H, (h), (kind));
#define REQLIST(n, rs) if (dt_ok) dt_a_reqlist(T, H, (n), (rs));
#define REQFREE(r) if (dt_ok) dt_a_reqfree(T, H, (r));
#define DONE1(r, st) dt_a_done1(T, H, (r), (st));
#define DONEALL(n, rs, sts) dt_a_doneall(T, H, (n), (rs), (sts));
#define DONESOME(n, idx, rs, sts) if ((n) != MPI_UNDEFINED) dt_a_donesome(T, H, (n), (idx), (rs), (sts));
#define STAT(sp) if (dt_ok) { H->attr |= A_STATUS; dt_put32(T, dt_rank((sp)->MPI_SOURCE)); dt_put32(T, (uint32_t)(sp)->MPI_TAG); }
// A new communicator's definition is handed to the writer: the exit time follows it.
#define NEWC(h, parent, kind, tag) if (dt_ok) { uint32_t l_ = dt_comm_created((h), (parent), (kind), (tag), H->func); \
	if (l_ != DT_NORECORD) { H->attr |= A_NEWCOMM; dt_put32(T, l_); dt_rec_exit(T, H, dt_now()); } }
#define PC(level, arg) do { H->attr |= A_PCONTROL; dt_put32(T, (uint32_t)(level)); dt_put64(T, (uint64_t)(arg)); } while (0);
#define FLAG(f) do { H->attr |= A_FLAG; dt_put32(T, (f) ? 1 : 0); } while (0);

#endif
