// Python call stacks (README "Python programs"). A call that mpi4py's
// extension module makes has the same C stack from every line of the
// script (the interpreter's), so its call site is the script's own: the
// calling thread's Python frames, innermost first, each recorded as a
// return address in a module standing for its .py file
// (traceformat.SourceModulePrefix) at the line's offset, so that readers
// show file:line with no change. Calls from elsewhere (a C extension, ctypes)
// keep their C stack.
//
// The frames are read without the GIL and without calling into the
// interpreter's evaluation: mpi4py releases the GIL around blocking calls,
// and taking it, or PyThreadState_GetFrame (which allocates a frame
// object), could deadlock or corrupt the interpreter. What is read: the
// thread's state (PyGILState_GetThisThreadState: thread-local storage only),
// its innermost frame and the chain of callers (the layouts of CPython
// 3.8 to 3.13, dt_pylayout.h), each frame's code object and last
// instruction. While the
// thread is inside the MPI call its own frames cannot change. A pointer that
// is NULL, misaligned, outside user space or not to a code object ends the
// stack. Other Python versions (and builds whose objects differ: the
// free-threaded one) lay these out differently: there the C stack is
// recorded, as for any program, and rank 0 says so once.
//
// Per call: the frames' (code object, instruction offset) pairs are the
// call site's key, so two lines calling the same method are two call sites;
// a per-thread memo of the frames read makes a repeated call cost a compare
// per frame (dt_py_site). Lines (PyCode_Addr2Line reads the code object's
// line table, nothing else) and file names are only looked up for a stack
// the thread has not seen.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_pylayout.h"
#include "dt_writer.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

uintptr_t dt_py_lo, dt_py_span;           // mpi4py's code; span 0: not loaded, or Python frames off
uintptr_t dt_py_gate_lo, dt_py_gate_span; // every return address once Python frames are on (dt_wrap.h)
static int py_frames_on; // Python frames on (dt_py_init)
static uintptr_t py_interp_lo, py_interp_span; // the interpreter's code (its executable's, or libpython's)

// The running interpreter's layout (dt_py_init).
static dt_py_layout L;

static void *(*py_this_ts)(void);          // PyGILState_GetThisThreadState
static int (*py_addr2line)(void *, int);   // PyCode_Addr2Line
static uintptr_t py_code_type, py_str_type, py_bytes_type; // &PyCode_Type, &PyUnicode_Type, &PyBytes_Type

// A pointer worth following: aligned, in user space (x86-64: below 2^47),
// not in the first page.
#define PY_PTR_OK(p) ((uintptr_t)(p) >= 4096 && (uintptr_t)(p) < ((uintptr_t)1 << 47) && !((uintptr_t)(p) & 7))
// Frames followed at most per walk, counting those skipped (below).
#define PY_HOPS 256

// A frame the walk read: its address, code object and last instruction.
// A later walk that reads the same three values at every frame, and stops
// at the same pointer, computes the same stack (py_walk's other reads are
// of the code object, immutable while a live frame holds it).
typedef struct {
	uintptr_t f, code, prev;
} py_hop;
#define PY_FAST_HOPS 8 // walks of more frames are not in the first-level memo

// The file name of the import machinery's code (importlib._bootstrap and
// _bootstrap_external, frozen into the interpreter) starts so: CPython's
// tracebacks leave its frames out (the module being imported follows,
// then the line importing it), and so do the walks here.
static const char py_importlib_file[] = "<frozen importlib._bootstrap";

// py_lasti is the last instruction, in code units, of a frame whose
// fr_instr field reads instr and whose owner is owner (0 before 3.11), of
// code object co (at address co; base: a copy of its first co_copy bytes);
// -1 for a frame that has not begun to run, which CPython's tracebacks
// leave out: f_lasti -1 (before 3.11); prev_instr before
// _co_firsttraceable, but for a generator's (3.11 on).
static inline int64_t py_lasti(uintptr_t instr, uintptr_t co, const unsigned char *base, char owner) {
	if (L.lasti_div) {
		int32_t v = (int32_t)instr; // f_lasti, the field's first 4 bytes
		return v < 0 ? -1 : v / L.lasti_div;
	}
	uintptr_t first = co + (uintptr_t)L.co_code;
	int trace = *(const int *)(base + L.co_firsttraceable);
	if (owner == DT_PY_OWNED_BY_CSTACK || instr < first || instr - first >= ((uintptr_t)1 << 31) ||
		(owner != DT_PY_OWNED_BY_GENERATOR && instr < first + (uintptr_t)trace * DT_PY_CODEUNIT))
		return -1;
	return (int64_t)((instr - first) / DT_PY_CODEUNIT);
}

// py_importlib tells whether co is code of the import machinery
// (py_importlib_file).
static int py_importlib(uintptr_t co) {
	const char *pre = py_importlib_file;
	const size_t npre = sizeof py_importlib_file - 1;
	uintptr_t s = *(const uintptr_t *)(co + L.co_filename);
	if (!PY_PTR_OK(s) || *(const uintptr_t *)(s + DT_PY_OB_TYPE) != py_str_type) return 0;
	uint32_t st = *(const uint32_t *)(s + DT_PY_U_STATE);
	intptr_t len = *(const intptr_t *)(s + DT_PY_U_LENGTH);
	return ((st >> 5) & 3) == 3 && len >= (intptr_t)npre && // compact ASCII
		memcmp((const char *)(s + L.u_ascii_data), pre, npre) == 0;
}

// py_frame is the innermost frame of thread state ts (not yet checked),
// 0 when ts's frame holder cannot be followed.
static inline uintptr_t py_frame(uintptr_t ts) {
	uintptr_t f = *(const uintptr_t *)(ts + L.ts_frame);
	if (L.cf_current < 0) return f;
	return PY_PTR_OK(f) ? *(const uintptr_t *)(f + L.cf_current) : 0;
}

// py_walk reads the Python frames of thread state ts: up to max (code
// object, instruction offset in code units) pairs, innermost first, and
// into *fh a hash of the code objects' file name objects (a code object
// freed and another allocated at its address then gives another key). A
// frame whose first instruction has not started (CPython's incomplete
// frame: its prev_instr is before _co_firsttraceable) is left out, as
// CPython's own tracebacks do, and so is the import machinery's
// (py_importlib). The frames read go to hops, *nh of them,
// and *depth says whether the walk stopped at max frames, else *end is the
// pointer it stopped at (not one to follow). *nh is 0 for a walk not to
// remember: of more than PY_FAST_HOPS frames, or stopped at a frame whose
// code object is not one, or after PY_HOPS frames.
static int py_walk(uintptr_t ts, uintptr_t *code, uint32_t *lasti, int max, uint64_t *fh, py_hop *hops, uint32_t *nh,
	uintptr_t *end, uint32_t *depth) {
	uint64_t h = 0;
	int n = 0, hops_n = 0;
	*nh = 0, *end = 0, *fh = 0, *depth = 0;
	if (!PY_PTR_OK(ts)) return 0;
	uintptr_t f = py_frame(ts);
	int stop = 0;
	for (;; hops_n++) {
		if (n >= max) {
			stop = *depth = 1;
			break;
		}
		if (hops_n >= PY_HOPS) break;
		if (!PY_PTR_OK(f)) {
			stop = 1;
			*end = f;
			break;
		}
		uintptr_t co = *(const uintptr_t *)(f + L.fr_code);
		uintptr_t prev = *(const uintptr_t *)(f + L.fr_instr);
		char owner = L.fr_owner < 0 ? 0 : *(const char *)(f + L.fr_owner);
		if (hops_n < PY_FAST_HOPS) hops[hops_n] = (py_hop){f, co, prev};
		if (owner == DT_PY_OWNED_BY_CSTACK) { // the interpreter's entry: no code of its own (3.13: None)
			f = *(const uintptr_t *)(f + L.fr_previous);
			continue;
		}
		if (!PY_PTR_OK(co) || *(const uintptr_t *)(co + DT_PY_OB_TYPE) != py_code_type) {
			hops_n = PY_HOPS; // not remembered
			break;
		}
		int64_t li = py_lasti(prev, co, (const unsigned char *)co, owner);
		if (li >= 0 && !py_importlib(co)) {
			code[n] = co;
			lasti[n] = (uint32_t)li;
			h = (h ^ *(const uintptr_t *)(co + L.co_filename)) * 0xff51afd7ed558ccdull;
			n++;
		}
		f = *(const uintptr_t *)(f + L.fr_previous);
	}
	if (stop && hops_n <= PY_FAST_HOPS) *nh = (uint32_t)hops_n;
	*fh = h;
	return n;
}

// ---- Two memos per thread, direct-mapped. The first (py_fast) is keyed
// by the innermost frame's address and last instruction and its caller's
// last instruction, and holds the raw frames a walk read: a call whose
// frames read the same takes its call site after a compare per frame. The
// second (py_ent), consulted after a walk, is keyed by the stack itself,
// (code object, instruction offset) per frame: one frame address serves
// many stacks (a helper called from two places), and this finds them
// without looking lines up again.
#define PY_MEMO 256
typedef struct {
	uint64_t key; // 0: empty
	uintptr_t end;
	uint32_t nh, id, depth, pad;
	py_hop h[PY_FAST_HOPS];
} py_fast;
typedef struct {
	uint64_t hash; // 0: empty
	uint32_t id, n;
	uintptr_t code[DT_MAXDEPTH];
	uint32_t lasti[DT_MAXDEPTH];
} py_ent;
typedef struct {
	py_fast fast[PY_MEMO];
	py_ent ent[PY_MEMO];
} py_memos;
static __thread py_memos *py_memo __attribute__((tls_model("initial-exec")));
static pthread_key_t memo_key, mix_key;
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static void memo_init(void) {
	pthread_key_create(&memo_key, free);
	pthread_key_create(&mix_key, free);
}

static uint32_t py_site_new(dt_thr *T, const uintptr_t *code, const uint32_t *lasti, int n, dt_hdr *rec);
static uint32_t py_site_walk(dt_thr *T, void *fp, dt_hdr *rec, uintptr_t ts, py_fast *fe, uint64_t key);

// dt_py_site is the call site of the calling thread's Python frames; when
// it has none, that of the C stack of the wrapper's frame fp, or, without
// fp, 0.
static uint32_t dt_py_site(dt_thr *T, void *fp, dt_hdr *rec) {
	uintptr_t ts = (uintptr_t)py_this_ts();
	T->py_ts = ts; // for a later call in progress at a signal (dtw_signal)
	py_memos *m = py_memo;
	if (__builtin_expect(!PY_PTR_OK(ts) || m == NULL, 0)) return py_site_walk(T, fp, rec, ts, NULL, 0);
	uintptr_t f = py_frame(ts);
	if (__builtin_expect(!PY_PTR_OK(f), 0)) return py_site_walk(T, fp, rec, ts, NULL, 0);
	uintptr_t p0 = *(const uintptr_t *)(f + L.fr_instr), f1 = *(const uintptr_t *)(f + L.fr_previous);
	uintptr_t p1 = PY_PTR_OK(f1) ? *(const uintptr_t *)(f1 + L.fr_instr) : f1;
	uint64_t key = ((f ^ (p0 << 17) ^ (p1 << 31)) * 0x9E3779B97F4A7C15ull) | 1;
	py_fast *e = &m->fast[key >> (64 - 8)];
	if (__builtin_expect(e->key == key, 1)) {
		uint32_t i = 0, nh = e->nh;
		uintptr_t g = f;
		// g equals a frame of the remembered walk before it is read.
		while (i < nh && g == e->h[i].f && *(const uintptr_t *)(g + L.fr_code) == e->h[i].code &&
			*(const uintptr_t *)(g + L.fr_instr) == e->h[i].prev) {
			g = *(const uintptr_t *)(g + L.fr_previous);
			i++;
		}
		if (__builtin_expect(i == nh && (e->depth || g == e->end), 1)) return e->id;
	}
	return py_site_walk(T, fp, rec, ts, e, key);
}

// py_site_walk is dt_py_site's path for a call the first memo does not
// know (fe, its entry for key; NULL: none): the walk, then the second memo
// or the lines (py_site_new). No Python frame: the C stack's call site
// (fp, the wrapper's frame), 0 without fp.
static __attribute__((noinline)) uint32_t py_site_walk(dt_thr *T, void *fp, dt_hdr *rec, uintptr_t ts, py_fast *fe,
	uint64_t key) {
	uintptr_t code[DT_MAXDEPTH];
	uint32_t lasti[DT_MAXDEPTH];
	py_hop hops[PY_FAST_HOPS];
	uint64_t h;
	uint32_t nh, depth;
	uintptr_t end;
	int n = py_walk(ts, code, lasti, dt_depth, &h, hops, &nh, &end, &depth);
	if (n == 0) return fp ? dt_site_c(T, fp, rec) : 0;
	for (int i = 0; i < n; i++) h = (h ^ code[i] ^ ((uint64_t)lasti[i] << 47)) * 0x9E3779B97F4A7C15ull;
	h = (h ^ (h >> 29)) | 1;
	py_memos *m = py_memo;
	if (__builtin_expect(m == NULL, 0)) {
		pthread_once(&memo_once, memo_init);
		m = py_memo = calloc(1, sizeof *m);
		if (!m) return py_site_new(T, code, lasti, n, rec);
		pthread_setspecific(memo_key, m);
		fe = NULL; // the key was not computed
	}
	py_ent *e = &m->ent[h >> (64 - 8)];
	uint32_t id;
	int same = e->hash == h && e->n == (uint32_t)n;
	for (int i = 0; same && i < n; i++) same = e->code[i] == code[i] && e->lasti[i] == lasti[i];
	if (same) id = e->id;
	else {
		id = py_site_new(T, code, lasti, n, rec);
		e->hash = h;
		e->n = (uint32_t)n;
		memcpy(e->code, code, n * sizeof code[0]);
		memcpy(e->lasti, lasti, n * sizeof lasti[0]);
		e->id = id;
	}
	if (fe) {
		fe->key = 0;
		if (nh > 0) {
			memcpy(fe->h, hops, nh * sizeof hops[0]);
			fe->nh = nh;
			fe->end = end;
			fe->depth = depth;
			fe->id = id;
			fe->key = key;
		}
	}
	return id;
}

// ---- Mixed stacks. A call from elsewhere than mpi4py made while its
// thread runs Python code (a C extension calling MPI itself, ctypes,
// PETSc under petsc4py, a C++ library under its bindings) is called, at
// some depth, by the thread's innermost Python frame: its call site is its
// C frames up to the first in the interpreter's code (at most
// UserStackSize of them), then the Python frames (at most UserStackSize),
// so that the script's line shows below the library's. Both parts come
// from their memos (dt_site_c, dt_py_site); a per-thread table maps the
// pair to the joined call site.
#define PY_MIX 256
typedef struct {
	uint64_t key; // (C site, Python site) + 1; 0: empty
	uint32_t id;
} py_mix;
static __thread py_mix *py_mixes __attribute__((tls_model("initial-exec")));

// py_mix_new is the call site of C call site c's frames before the
// interpreter's followed by Python call site p's, within DT_MAXDEPTH (the
// C frames cut first, to leave the Python ones half).
static uint32_t py_mix_new(dt_thr *T, uint32_t c, uint32_t p, dt_hdr *rec) {
	uintptr_t cp[DT_MAXDEPTH], pp[DT_MAXDEPTH], out[DT_MAXDEPTH];
	int nc = dt_site_pcs(c, cp), np = dt_site_pcs(p, pp), k = 0;
	while (k < nc && cp[k] - py_interp_lo >= py_interp_span) k++;
	if (k + np > DT_MAXDEPTH) {
		int keep = np < DT_MAXDEPTH / 2 ? np : DT_MAXDEPTH / 2;
		if (k > DT_MAXDEPTH - keep) k = DT_MAXDEPTH - keep;
		np = DT_MAXDEPTH - k;
	}
	memcpy(out, cp, (size_t)k * sizeof out[0]);
	memcpy(out + k, pp, (size_t)np * sizeof out[0]);
	return dt_site_src(T, out, k + np, rec);
}

static uint32_t dt_py_mixed_site(dt_thr *T, void *fp, dt_hdr *rec) {
	uint32_t c = dt_site_c(T, fp, rec), p = dt_py_site(T, NULL, rec);
	if (!p) return c; // no Python frame (the interpreter's exit, a thread of C)
	uint64_t key = ((uint64_t)c << 32 | p) + 1;
	py_mix *m = py_mixes;
	if (__builtin_expect(m == NULL, 0)) {
		pthread_once(&memo_once, memo_init);
		if (!(m = py_mixes = calloc(PY_MIX, sizeof *m))) return py_mix_new(T, c, p, rec);
		// Freed with the thread's memos (one destructor per key).
		pthread_setspecific(mix_key, m);
	}
	py_mix *e = &m[(key * 0x9E3779B97F4A7C15ull) >> (64 - 8)];
	if (__builtin_expect(e->key == key, 1)) return e->id;
	uint32_t id = py_mix_new(T, c, p, rec);
	e->key = key;
	e->id = id;
	return id;
}

uint32_t dt_py_call_site(dt_thr *T, void *fp, dt_hdr *rec) {
	if (((const uintptr_t *)fp)[1] - dt_py_lo < dt_py_span) return dt_py_site(T, fp, rec);
	return dt_py_mixed_site(T, fp, rec);
}

// ---- Source files: one module each, "source-file:" + the code object's
// co_filename, at PY_BASE + index << 32 (above any user-space address); a
// line's return address is the module's start plus the line.
#define PY_BASE 0xF000000000000000ull
#define PY_FILES 4096 // files named; a frame of a further file ends the stack
#define PY_NAME 4096
static pthread_mutex_t py_mu = PTHREAD_MUTEX_INITIALIZER;
static struct py_file {
	uint64_t hash;
	char *name;
	uint64_t base;
} py_files[PY_FILES];
static uint32_t py_nfiles;

// py_utf8 writes string object s (compact, as every code object's
// co_filename is) to out as UTF-8, NUL-terminated; it returns the length,
// or -1 for an object it does not know or a name too long for out.
static int py_utf8(uintptr_t s, char *out, size_t size) {
	if (!PY_PTR_OK(s) || *(const uintptr_t *)(s + DT_PY_OB_TYPE) != py_str_type) return -1;
	uint32_t st = *(const uint32_t *)(s + DT_PY_U_STATE);
	intptr_t len = *(const intptr_t *)(s + DT_PY_U_LENGTH);
	unsigned kind = (st >> 2) & 7, compact = (st >> 5) & 1, ascii = (st >> 6) & 1;
	if (!compact || len < 0 || (kind != 1 && kind != 2 && kind != 4)) return -1;
	const unsigned char *d = (const unsigned char *)(s + (ascii ? L.u_ascii_data : L.u_compact_data));
	size_t o = 0;
	for (intptr_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? d[i] : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
		if (o + 5 > size) return -1;
		if (c < 0x80) out[o++] = (char)c;
		else if (c < 0x800) out[o++] = (char)(0xC0 | c >> 6), out[o++] = (char)(0x80 | (c & 0x3F));
		else if (c < 0x10000) {
			out[o++] = (char)(0xE0 | c >> 12), out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[o++] = (char)(0x80 | (c & 0x3F));
		} else {
			out[o++] = (char)(0xF0 | c >> 18), out[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
			out[o++] = (char)(0x80 | ((c >> 6) & 0x3F)), out[o++] = (char)(0x80 | (c & 0x3F));
		}
	}
	out[o] = 0;
	return (int)o;
}

// Files first named by a crash after the trace's footer was written
// (dt_py_crash_stack with define 0), whose modules go with the crash
// (dt_py_late_files).
static struct py_file *py_late[DT_CRASH_DEPTH];
static int py_nlate;

// py_file_named is the start of the module of the source file name (len
// bytes), 0 when it has none. A new file's module is defined to the writer
// at once (under py_mu, so that no call site refers to it first), unless
// crash: then py_mu is only tried (the crashed thread may hold it), and a
// new file is defined if define, else kept for dt_py_late_files.
static uint64_t py_file_named(const char *name, int len, int crash, int define) {
	// A relative name (a script run by runpy: `python -m mpi4py app.py`)
	// is relative to the working directory, as Python's tracebacks read
	// it; the analysis runs elsewhere.
	char abs[PY_NAME];
	if (len > 0 && name[0] != '/' && name[0] != '<' && getcwd(abs, sizeof abs)) {
		size_t n = strlen(abs);
		if (n + 1 + (size_t)len < sizeof abs) {
			abs[n] = '/';
			memcpy(abs + n + 1, name, (size_t)len + 1);
			name = abs, len += (int)n + 1;
		}
	}
	uint64_t h = 14695981039346656037ULL;
	for (int i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
	h |= 1;
	uint64_t base = 0;
	if (!crash) pthread_mutex_lock(&py_mu);
	else if (pthread_mutex_trylock(&py_mu) != 0) return 0;
	for (uint32_t i = 0; i < PY_FILES; i++) {
		struct py_file *f = &py_files[(h + i) & (PY_FILES - 1)];
		if (f->hash == h && strcmp(f->name, name) == 0) {
			base = f->base;
			break;
		}
		if (f->hash == 0) {
			int late = crash && !define;
			if ((late && py_nlate >= DT_CRASH_DEPTH) || py_nfiles >= PY_FILES * 3 / 4 || !(f->name = strdup(name))) break;
			f->hash = h;
			f->base = base = PY_BASE + ((uint64_t)py_nfiles++ << 32);
			if (late)
				py_late[py_nlate++] = f;
			else
				dtw_source_module(f->name, base);
			break;
		}
	}
	pthread_mutex_unlock(&py_mu);
	return base;
}

// py_file_base is the start of the module of code object co's file, 0 when
// it cannot be named.
static uint64_t py_file_base(uintptr_t co) {
	char name[PY_NAME];
	int len = py_utf8(*(const uintptr_t *)(co + L.co_filename), name, sizeof name);
	return len < 0 ? 0 : py_file_named(name, len, 0, 1);
}

// py_site_new is the call site of a Python stack the thread's memo does not
// know: its frames as file and line, up to the first whose file cannot be
// named.
static uint32_t py_site_new(dt_thr *T, const uintptr_t *code, const uint32_t *lasti, int n, dt_hdr *rec) {
	uintptr_t pcs[DT_MAXDEPTH];
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint64_t base = py_file_base(code[i]);
		if (!base) break;
		int line = py_addr2line((void *)code[i], (int)(lasti[i] * DT_PY_CODEUNIT));
		pcs[k++] = base + (uint32_t)(line > 0 ? line : 0);
	}
	return dt_site_src(T, pcs, k, rec);
}

// ---- The Python stack of a crashed thread (dtw_signal, dtw_late_crash).
// The signal watcher reads it while the thread waits in its handler, so
// that its frames do not change, but the crash may be the damage of the
// very objects read (a C extension writing through a bad pointer): every
// read of the interpreter's memory is a copy that cannot fault
// (py_safe_read), and every value read is checked as py_walk checks it.

static int py_pipe[2] = {-1, -1};
static int py_pipe_only; // DT_TEST_PY_PIPE: the pipe's way alone (tests)

// py_safe_read copies n bytes at address a into out, 1 on success, 0 when
// any of them cannot be read: process_vm_readv of the process itself
// returns EFAULT where a load would fault. Where the system refuses that
// call (seccomp), a pipe's write(2) does the same.
static int py_safe_read(uintptr_t a, void *out, size_t n) {
	if (a < 4096 || a >= ((uintptr_t)1 << 47) || n > ((uintptr_t)1 << 47) - a) return 0;
	if (!py_pipe_only) {
		struct iovec l = {out, n}, r = {(void *)a, n};
		ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
		if (got == (ssize_t)n) return 1;
		if (got >= 0 || (errno != ENOSYS && errno != EPERM)) return 0;
	}
	if (py_pipe[0] < 0 && pipe2(py_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 0;
	for (size_t o = 0; o < n;) {
		size_t k = n - o < 4096 ? n - o : 4096;
		if (write(py_pipe[1], (const char *)a + o, k) != (ssize_t)k || read(py_pipe[0], (char *)out + o, k) != (ssize_t)k) {
			// What a write cut short by the fault left in the pipe.
			char junk[4096];
			while (read(py_pipe[0], junk, sizeof junk) > 0) {
			}
			return 0;
		}
		o += k;
	}
	return 1;
}

#define LD(b, off) (*(const uintptr_t *)((const unsigned char *)(b) + (off)))

// py_safe_name decodes string object s (a code object's co_filename) into
// name as py_utf8 does, from a copy of the object; -1 when it cannot.
static int py_safe_name(uintptr_t s, char *name, size_t size) {
	unsigned char o[DT_PY_U_MAX + PY_NAME] __attribute__((aligned(16)));
	// The ASCII object's header first: a short one may end its mapping.
	if (!PY_PTR_OK(s) || !py_safe_read(s, o, (size_t)L.u_ascii_data) || LD(o, DT_PY_OB_TYPE) != py_str_type) return -1;
	uint32_t st = *(const uint32_t *)(o + DT_PY_U_STATE);
	intptr_t len = *(const intptr_t *)(o + DT_PY_U_LENGTH);
	unsigned kind = (st >> 2) & 7, ascii = (st >> 6) & 1;
	size_t head = (size_t)(ascii ? L.u_ascii_data : L.u_compact_data);
	if (len < 0 || (kind != 1 && kind != 2 && kind != 4) || (size_t)len * kind > PY_NAME ||
		(!ascii && !py_safe_read(s + L.u_ascii_data, o + L.u_ascii_data, head - (size_t)L.u_ascii_data)) ||
		!py_safe_read(s + head, o + head, (size_t)len * kind))
		return -1;
	return py_utf8((uintptr_t)o, name, size);
}

// py_safe_line is the line of instruction lasti (code units) of code object
// co, whose first L.co_copy bytes are cb; 0 when it cannot be read.
// PyCode_Addr2Line reads the code object's line table (or the line array a
// tracing function made) and nothing else: it runs once that much was
// read without a fault.
static int py_safe_line(uintptr_t co, const unsigned char *cb, uint32_t lasti) {
	uintptr_t arr = L.co_linearray < 0 ? 0 : LD(cb, L.co_linearray);
	if (arr) {
		short size = *(const short *)(cb + L.co_linearray_size);
		int32_t v32;
		int16_t v16;
		if (size == 2 && py_safe_read(arr + (uintptr_t)lasti * 2, &v16, 2)) return v16 > 0 ? v16 : 0;
		if (size == 4 && py_safe_read(arr + (uintptr_t)lasti * 4, &v32, 4)) return v32 > 0 ? v32 : 0;
		return 0;
	}
	uintptr_t lt = LD(cb, L.co_linetable);
	unsigned char bh[DT_PY_B_DATA];
	if (!PY_PTR_OK(lt) || !py_safe_read(lt, bh, sizeof bh) || LD(bh, DT_PY_OB_TYPE) != py_bytes_type) return 0;
	intptr_t n = *(const intptr_t *)(bh + DT_PY_B_SIZE);
	if (n < 0 || n > (1 << 24)) return 0;
	// Mappings are whole pages: a byte of each page of the table tells.
	uintptr_t d = lt + DT_PY_B_DATA;
	unsigned char c;
	for (uintptr_t a = d; a < d + (uintptr_t)n; a = (a | 4095) + 1)
		if (!py_safe_read(a, &c, 1)) return 0;
	if (n > 0 && !py_safe_read(d + (uintptr_t)n - 1, &c, 1)) return 0;
	int line = py_addr2line((void *)co, (int)(lasti * DT_PY_CODEUNIT));
	return line > 0 ? line : 0;
}

// dt_py_crash_stack writes the Python frames of thread state ts (the
// crashed thread's, dt_py_this_ts in its handler) to out, innermost first,
// as dt_py_site's call sites have them (a return address in the module of
// the frame's file, at its line), at most max; it returns how many. The
// frames CPython's tracebacks leave out are left out as py_walk does; the
// first frame that cannot be read, or whose file cannot be named, ends
// the stack. define: a file no call named before is defined to the
// writer; else (after the trace's footer is written) it is kept for
// dt_py_late_files.
int dt_py_crash_stack(uintptr_t ts, uint64_t *out, int max, int define) {
	uintptr_t f;
	if (!py_frames_on || !PY_PTR_OK(ts) || !py_safe_read(ts + (uintptr_t)L.ts_frame, &f, 8) ||
		(L.cf_current >= 0 && (!PY_PTR_OK(f) || !py_safe_read(f + (uintptr_t)L.cf_current, &f, 8))))
		return 0;
	int n = 0;
	for (int hops = 0; n < max && hops < PY_HOPS && PY_PTR_OK(f); hops++) {
		unsigned char fr[DT_PY_FR_MAX], cb[DT_PY_CO_MAX];
		if (!py_safe_read(f, fr, (size_t)L.fr_copy)) break;
		uintptr_t co = LD(fr, L.fr_code), prev = LD(fr, L.fr_instr);
		char owner = L.fr_owner < 0 ? 0 : (char)fr[L.fr_owner];
		if (owner == DT_PY_OWNED_BY_CSTACK) {
			f = LD(fr, L.fr_previous);
			continue;
		}
		if (!PY_PTR_OK(co) || !py_safe_read(co, cb, (size_t)L.co_copy) || LD(cb, DT_PY_OB_TYPE) != py_code_type) break;
		int64_t li = py_lasti(prev, co, cb, owner);
		if (li >= 0) {
			char name[PY_NAME];
			int len = py_safe_name(LD(cb, L.co_filename), name, sizeof name);
			if (len < 0) break;
			if (strncmp(name, py_importlib_file, sizeof py_importlib_file - 1) != 0) {
				uint64_t base = py_file_named(name, len, 1, define);
				if (!base) break;
				out[n++] = base + (uint32_t)py_safe_line(co, cb, (uint32_t)li);
			}
		}
		f = LD(fr, L.fr_previous);
	}
	return n;
}

// dt_py_late_files gives the files dt_py_crash_stack named first after the
// trace's footer was written (define 0): up to max names and their
// modules' starts; it returns how many.
int dt_py_late_files(const char **names, uint64_t *bases, int max) {
	int n = 0;
	for (; n < py_nlate && n < max; n++) names[n] = py_late[n]->name, bases[n] = py_late[n]->base;
	return n;
}

// dt_py_this_ts is the calling thread's Python thread state, 0 when it has
// none or Python frames are off. PyGILState_GetThisThreadState reads a
// thread-local key and nothing else: a signal handler may call it.
uintptr_t dt_py_this_ts(void) { return py_frames_on ? (uintptr_t)py_this_ts() : 0; }

// ---- An uncaught exception. CPython reports one that reaches the top of
// the program (PyErr_Print, before it prints the traceback and exits:
// mpi4py's MPI_Finalize, or MPI_Abort under `python -m mpi4py`, follow)
// through the audit event "sys.excepthook" (PEP 578), whose arguments are
// the hook, the exception's type, value and traceback. An audit hook is
// called with the GIL held, in the raising thread, so the exception is
// read through the interpreter's own API: the type's names, str() of the
// value (which the interpreter calls again to print it), the traceback's
// frames and lines. The hook is called for every
// audited event (imports, open, pickle's class lookups …): all others
// cost it a compare of the name's first bytes. Installed once, at
// MPI_Init, where mpi4py's import holds the GIL (PyGILState_Check); the
// hook never fails the event, and any error its calls raise is cleared.

dt_pyexc_t dt_pyexc;

static struct {
	int (*gil_held)(void);                      // PyGILState_Check
	ssize_t (*tuple_size)(void *);               // PyTuple_Size
	void *(*tuple_item)(void *, ssize_t);        // PyTuple_GetItem (borrowed)
	void *(*getattr)(void *, const char *);      // PyObject_GetAttrString
	void *(*str)(void *);                        // PyObject_Str
	const char *(*utf8)(void *, ssize_t *);      // PyUnicode_AsUTF8AndSize
	long (*as_long)(void *);                     // PyLong_AsLong
	void (*decref)(void *);                      // Py_DecRef (NULL allowed)
	void (*err_clear)(void);                     // PyErr_Clear
	void *none;                                  // &_Py_NoneStruct
} pyapi;

// py_copy copies the UTF-8 of string object s into out (size bytes), cut
// at a character's start with "…" when it does not fit; 0 when s is not
// a string.
static int py_copy(void *s, char *out, size_t size) {
	ssize_t n = 0;
	const char *u = s ? pyapi.utf8(s, &n) : NULL;
	if (!u) {
		pyapi.err_clear();
		return 0;
	}
	if ((size_t)n < size) {
		memcpy(out, u, (size_t)n + 1);
		return 1;
	}
	size_t k = size - 4;
	while (k > 0 && ((unsigned char)u[k] & 0xC0) == 0x80) k--;
	memcpy(out, u, k);
	memcpy(out + k, "\xe2\x80\xa6", 4);
	return 1;
}

// py_attr is attribute name of o (a new reference), NULL when it has none
// (the error cleared).
static void *py_attr(void *o, const char *name) {
	void *a = pyapi.getattr(o, name);
	if (!a) pyapi.err_clear();
	return a;
}

// py_exc_type names exception type t as Python's traceback does: its
// qualified name, after its module's but for builtins' and __main__'s.
static void py_exc_type(void *t, char *out, size_t size) {
	char mod[128] = "", name[128] = "";
	void *m = py_attr(t, "__module__"), *q = py_attr(t, "__qualname__");
	if (m) py_copy(m, mod, sizeof mod);
	if (q) py_copy(q, name, sizeof name);
	pyapi.decref(m), pyapi.decref(q);
	if (!name[0]) snprintf(name, sizeof name, "%s", "<unknown>");
	if (mod[0] && strcmp(mod, "builtins") != 0 && strcmp(mod, "__main__") != 0)
		snprintf(out, size, "%s.%s", mod, name);
	else
		snprintf(out, size, "%s", name);
}

// PY_TB_HOPS bounds the traceback entries followed (a RecursionError's
// has ~1000): the innermost DT_CRASH_DEPTH of them are kept.
#define PY_TB_HOPS 4096

// py_exc_frames writes traceback tb's frames into out, innermost first,
// as dt_py_crash_stack does (late: a new file's module is kept for
// dt_py_late_files); it returns how many. The import machinery's frames
// are left out, as Python's tracebacks leave them out.
static int py_exc_frames(void *tb, uint64_t *out, int late) {
	void *ring[DT_CRASH_DEPTH]; // borrowed: the chain holds them while tb lives
	int n = 0;
	for (void *t = tb; t && t != pyapi.none && n < PY_TB_HOPS; n++) {
		ring[n % DT_CRASH_DEPTH] = t;
		void *next = py_attr(t, "tb_next");
		pyapi.decref(next); // t holds it
		t = next;
	}
	int k = 0;
	for (int i = n - 1; i >= 0 && i >= n - DT_CRASH_DEPTH; i--) {
		void *t = ring[i % DT_CRASH_DEPTH];
		void *fr = py_attr(t, "tb_frame"), *ln = py_attr(t, "tb_lineno");
		void *co = fr ? py_attr(fr, "f_code") : NULL, *fn = co ? py_attr(co, "co_filename") : NULL;
		long line = ln ? pyapi.as_long(ln) : 0;
		if (line == -1) pyapi.err_clear();
		char name[PY_NAME];
		uint64_t base = 0;
		if (fn && py_copy(fn, name, sizeof name) && strlen(name) < sizeof name - 4) {
			if (strncmp(name, py_importlib_file, sizeof py_importlib_file - 1) == 0)
				base = 1;
			else
				base = py_file_named(name, (int)strlen(name), late, !late);
		}
		pyapi.decref(fr), pyapi.decref(ln), pyapi.decref(co), pyapi.decref(fn);
		if (!base) break;
		if (base != 1) out[k++] = base + (uint32_t)(line > 0 && line < (1L << 31) ? line : 0);
	}
	return k;
}

static int py_audit(const char *event, void *args, void *data) {
	(void)data;
	if (event[0] != 's' || strcmp(event, "sys.excepthook") != 0) return 0;
	int late = dt_state == DT_ST_FINISHED;
	// (A forked child's exception is not the traced process's.)
	if (dt_pyexc.taken || getpid() != dt_pid || (late && !dt_late_ok) || pyapi.tuple_size(args) != 4) {
		pyapi.err_clear();
		return 0;
	}
	void *type = pyapi.tuple_item(args, 1), *value = pyapi.tuple_item(args, 2), *tb = pyapi.tuple_item(args, 3);
	if (!type || !value || !tb) {
		pyapi.err_clear();
		return 0;
	}
	dt_pyexc.t = dt_now();
	dt_pyexc.T = dt_self;
	py_exc_type(type, dt_pyexc.type, sizeof dt_pyexc.type);
	void *s = pyapi.str(value);
	if (!s || !py_copy(s, dt_pyexc.msg, sizeof dt_pyexc.msg)) {
		pyapi.err_clear();
		snprintf(dt_pyexc.msg, sizeof dt_pyexc.msg, "%s", "<exception str() failed>");
	}
	pyapi.decref(s);
	dt_pyexc.npy = py_exc_frames(tb, dt_pyexc.py, late);
	__atomic_store_n(&dt_pyexc.taken, 1, __ATOMIC_RELEASE);
	if (late) dtw_late_exception();
	return 0;
}

// py_exc_init installs py_audit where this thread holds the GIL (mpi4py
// imports MPI and initializes it with the GIL held): without it the
// interpreter's state cannot be touched, and the exception goes unseen.
static void py_exc_init(void) {
	int (*add)(int (*)(const char *, void *, void *), void *) = dlsym(RTLD_DEFAULT, "PySys_AddAuditHook");
	pyapi.gil_held = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
	pyapi.tuple_size = (ssize_t (*)(void *))dlsym(RTLD_DEFAULT, "PyTuple_Size");
	pyapi.tuple_item = (void *(*)(void *, ssize_t))dlsym(RTLD_DEFAULT, "PyTuple_GetItem");
	pyapi.getattr = (void *(*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyObject_GetAttrString");
	pyapi.str = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyObject_Str");
	pyapi.utf8 = (const char *(*)(void *, ssize_t *))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8AndSize");
	pyapi.as_long = (long (*)(void *))dlsym(RTLD_DEFAULT, "PyLong_AsLong");
	pyapi.decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
	pyapi.err_clear = (void (*)(void))dlsym(RTLD_DEFAULT, "PyErr_Clear");
	pyapi.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
	if (!add || !pyapi.gil_held || !pyapi.tuple_size || !pyapi.tuple_item || !pyapi.getattr || !pyapi.str ||
		!pyapi.utf8 || !pyapi.as_long || !pyapi.decref || !pyapi.err_clear || !pyapi.none)
		return;
	if (pyapi.gil_held() == 1 && add(py_audit, NULL) != 0) pyapi.err_clear();
}

// ---- Start (MPI_Init).
static int find_mpi4py(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/mpi4py/MPI.")) return 0;
	uintptr_t *r = data, lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			uintptr_t a = info->dlpi_addr + p->p_vaddr;
			if (a < lo) lo = a;
			if (a + p->p_memsz > hi) hi = a + p->p_memsz;
		}
	}
	if (hi == 0) return 0;
	r[0] = lo, r[1] = hi;
	return 1;
}

// py_version is the interpreter's version as PY_VERSION_HEX has it (major
// and minor): Py_Version (3.11 on), else Py_GetVersion's words ("3.10.13
// (main, …"), which only formats constants; 0 when neither says.
static unsigned long py_version(void) {
	const unsigned long *pv = dlsym(RTLD_DEFAULT, "Py_Version");
	if (pv) return *pv;
	const char *(*gv)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	unsigned major, minor;
	if (gv && sscanf(gv(), "%u.%u", &major, &minor) == 2 && major < 256 && minor < 256)
		return (unsigned long)major << 24 | (unsigned long)minor << 16;
	return 0;
}

// find_code finds the code range of the module holding address data[0]
// into data[0 … 2).
static int find_code(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	uintptr_t *r = data, lo = UINTPTR_MAX, hi = 0;
	int holds = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD) continue;
		uintptr_t a = info->dlpi_addr + p->p_vaddr;
		if (r[0] >= a && r[0] - a < p->p_memsz) holds = 1;
		if (p->p_flags & PF_X) {
			if (a < lo) lo = a;
			if (a + p->p_memsz > hi) hi = a + p->p_memsz;
		}
	}
	if (!holds || hi == 0) return 0;
	r[0] = lo, r[1] = hi;
	return 1;
}

// dt_py_init turns Python frames on for a CPython 3.8 to 3.13 program:
// the call sites of calls from mpi4py, and after the C frames of others
// (dt_py_mixed_site). DT_PY_VERSION (tests: a PY_VERSION_HEX value)
// stands for the interpreter's version.
void dt_py_init(void) {
	void *ts = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	void *eval = dlsym(RTLD_DEFAULT, "PyEval_EvalCode");
	if (!ts || !eval) return; // not Python
	uintptr_t r[2] = {0, 0}, in[2] = {(uintptr_t)eval, 0};
	dl_iterate_phdr(find_mpi4py, r);
	if (!dl_iterate_phdr(find_code, in)) return;
	py_exc_init();
	unsigned long v = py_version();
	const char *o = getenv("DT_PY_VERSION");
	if (o && *o) v = strtoul(o, NULL, 0);
	static const dt_py_layout known[] = {DT_PY_LAYOUT_38, DT_PY_LAYOUT_39, DT_PY_LAYOUT_310, DT_PY_LAYOUT_311,
		DT_PY_LAYOUT_312, DT_PY_LAYOUT_313};
	const dt_py_layout *lay = NULL;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (v >> 16 == (0x0300u | (unsigned)known[i].minor)) lay = &known[i];
	py_addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	py_code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	py_str_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	py_bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
	uintptr_t type_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyType_Type");
	// A type object's own type is PyType_Type where this build's objects
	// begin as the layouts say (not so in the free-threaded build, whose
	// object header is longer).
	const char *why = NULL;
	if (!lay)
		why = "Python source lines need Python 3.8 to 3.13";
	else if (!py_addr2line || !py_code_type || !py_str_type || !py_bytes_type || !type_type ||
		*(const uintptr_t *)(py_code_type + DT_PY_OB_TYPE) != type_type)
		why = "this build's objects are not laid out as the tracer reads them";
	if (why) {
		if (dt_rank_world == 0) {
			char ver[32] = "of unknown version";
			if (v) snprintf(ver, sizeof ver, "%lu.%lu", v >> 24, (v >> 16) & 0xFF);
			fprintf(stderr, "dtpa: Python %s: call stacks are the interpreter's C frames (%s)\n", ver, why);
		}
		return;
	}
	L = *lay;
	py_this_ts = (void *(*)(void))ts;
	py_pipe_only = getenv("DT_TEST_PY_PIPE") != NULL;
	py_interp_lo = in[0], py_interp_span = in[1] - in[0];
	dt_py_lo = r[0];
	dt_py_span = r[1] - r[0];
	py_frames_on = 1;
	dt_py_gate_lo = 0, dt_py_gate_span = UINTPTR_MAX;
}
