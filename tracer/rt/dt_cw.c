// The tracer's writer, without a Go runtime in the traced process. It is
// linked into lib/libdtpa_<impl>.so with the rest of this directory's C
// (tracer.mk), which the stub loads. It writes a deferred trace: the header,
// definitions, clock-sync and footer frames as protobuf (protobuf-c, from
// traceformat/trace.proto), stored uncompressed, and each buffer handed
// over as a raw records frame, which the compaction encodes after the run
// (dtrun, as the job ends, or the rank itself: dtrun_compacts).
//
// What needs an encoder is done by the Go one of lib/libdtpa_enc.so
// (tracer/enc), loaded on the writer thread only when first needed
// (enc_load): encoding every buffer once the rank has written DT_DEFER_MB
// of raw records; counting the events of buffers
// dropped after tracing stopped; compacting the trace of a rank whose
// trace dtrun will not compact (a node other than dtrun's). A rank that
// never needs one runs without a Go runtime.
#define _GNU_SOURCE
#include "dt_wrap.h"
#include "dt_rt.h"
#include "dt_writer.h"
#include "dt_loadgo.h"
#include "dt_initmark.h"
#include "dt_crc.h"
#include "trace.pb-c.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef DT_TRACER_VERSION
#define DT_TRACER_VERSION "unknown"
#endif

// traceformat's file layout (docs/format/trace.md).
enum { K_HEADER = 1, K_DEFS = 2, K_CLOCK = 4, K_FOOTER = 5, K_RECORDS = 6 };
#define FRAME_HDR 14
#define DEFERRED_MAJOR 0xD102 // traceformat.DeferredMajor: raw layout 1 of major 2
#define VERSION_MAJOR 2        // traceformat.VersionMajor
#define FORMAT_MINOR 3
#define PREFIX_SIZE 64 // records.PrefixSize
// records' spill file layout (records.CreateSpill).
#define SPILL_MAGIC "DTPASPL2"
#define SPILL_HDR 4096
#define SPILL_AHEAD 32 // at most this many free slots the aux thread keeps made
#define FOOTER_ROOM (64 << 10)
#define RESERVE_AHEAD (4 << 20)
#define EPOCH_NS 200000000LL // what is queued reaches the file at least this often
#define DT_Q_CLOCK 5 // a clock-sync frame's message (dt_queue.c's kinds go to 4)

static void put32(unsigned char *b, uint32_t v) { memcpy(b, &v, 4); } // x86-64: little endian

// The Go encoder (tracer/enc), loaded by enc_load.
static int (*enc_batch)(const void *pre, const void *recs, size_t n, unsigned char **frame, size_t *size,
	uint64_t *events);
static uint64_t (*enc_count)(const void *pre, const void *recs, size_t n);
static int (*enc_compact)(const char *path, char *msg, size_t size);
static int (*enc_params)(void *out, size_t size, char *msg, size_t msg_size);
static int enc_state; // 0: not tried; 1: loaded; -1: failed (said once)

// enc_load loads lib/libdtpa_enc.so from this library's directory, once,
// and tells whether it is there. Its Go runtime starts then (what that
// costs: README, "The C writer"); what it needs it for goes on without it
// if it cannot load (the trace stays raw, the dropped buffers uncounted,
// the trace deferred for dtrun --compact).
static int enc_load(void) {
	if (enc_state) return enc_state > 0;
	enc_state = -1;
	Dl_info di;
	char path[PATH_MAX];
	if (!dladdr((void *)enc_load, &di) || !di.dli_fname) return 0;
	snprintf(path, sizeof path, "%s", di.dli_fname);
	char *slash = strrchr(path, '/');
	size_t at = slash ? (size_t)(slash + 1 - path) : 0;
	snprintf(path + at, sizeof path - at, "libdtpa_enc.so");
	void *h = dt_dlopen_go(path); // on the writer thread, or MPI_Init's with DT_DEFER_MB=0
	if (!h) {
		fprintf(stderr, "dtpa tracer: rank %d: loading the trace encoder: %s\n", dt_rank_world, dlerror());
		return 0;
	}
	*(void **)&enc_batch = dlsym(h, "dtenc_batch");
	*(void **)&enc_count = dlsym(h, "dtenc_count");
	*(void **)&enc_compact = dlsym(h, "dtenc_compact");
	*(void **)&enc_params = dlsym(h, "dtenc_params");
	if (!enc_batch || !enc_count || !enc_compact || !enc_params) {
		fprintf(stderr, "dtpa tracer: rank %d: %s is not this tracer's encoder\n", dt_rank_world, path);
		return 0;
	}
	enc_state = 1;
	return 1;
}

// The trace file. Before dtw_start the frames are held in memory (the
// header, which carries the run id of MPI_Init's collective, comes first).
static int cw_fd = -1;
static int64_t cw_off, cw_reserved;
static int cw_nofallocate;
static unsigned char *cw_held;
static size_t cw_nheld, cw_capheld;
static int cw_holding = 1;
static int cw_err; // a write failed: nothing more is written
static char cw_path[PATH_MAX], cw_spill[PATH_MAX];
static int cw_spill_new; // cw_spill still ends in ".new" (no header yet)

// late_path is the file beside the trace that a crash after its end goes
// to (LateCrash, trace.proto).
static void late_path(char *buf, size_t n) { snprintf(buf, n, "%s.crash", cw_path); }

static int held_add(const void *p, size_t n) {
	if (cw_nheld + n > cw_capheld) {
		size_t c = cw_capheld ? cw_capheld : 64 << 10;
		while (c < cw_nheld + n) c *= 2;
		unsigned char *h = realloc(cw_held, c);
		if (!h) return -1;
		cw_held = h, cw_capheld = c;
	}
	memcpy(cw_held + cw_nheld, p, n);
	cw_nheld += n;
	return 0;
}

// write_all writes the iovecs whole (or fails), counting the bytes.
static int write_all(struct iovec *iov, int n) {
	while (n > 0) {
		ssize_t w = writev(cw_fd, iov, n);
		if (w < 0) {
			if (errno == EINTR) continue;
			return -1;
		}
		cw_off += w;
		while (n > 0 && (size_t)w >= iov->iov_len) w -= (ssize_t)iov->iov_len, iov++, n--;
		if (n > 0) iov->iov_base = (char *)iov->iov_base + w, iov->iov_len -= (size_t)w;
	}
	return 0;
}

// The stop reason, and why when the writer stopped tracing.
static pthread_mutex_t cw_mu = PTHREAD_MUTEX_INITIALIZER; // guards these and the definitions below
static int cw_stop;
static char cw_stopmsg[512];
// The calls in progress when a fatal signal arrived (dtw_signal), for the
// footer.
#define CW_UNF 64
static dt_unf cw_unf[CW_UNF];
static int cw_nunf;
// Where the process crashed (dt_crash), its stack walked by dtw_signal:
// cw_ncrash frames, 0 when no fault signal or SIGABRT ended it.
static uintptr_t cw_crash[DT_CRASH_DEPTH];
static int cw_ncrash;
// cw_pycrash holds the crashed thread's Python frames (dt_py_crash_stack),
// cw_npycrash of them.
static uint64_t cw_pycrash[DT_CRASH_DEPTH];
static int cw_npycrash;
// Where the thread that took another fatal signal was (dt_where), walked
// likewise by dtw_signal, for Footer.interrupted.
static uintptr_t cw_where[DT_CRASH_DEPTH];
static int cw_nwhere;
static uint64_t cw_pywhere[DT_CRASH_DEPTH];
static int cw_npywhere;
extern const char *const dt_fnames[];
extern const int dt_nfuncs;

// cw_fail stops tracing on a write error or a full disk, saying why in the
// footer (which the space reserved ahead still holds); a failed write also
// ends writing (sticky).
static void cw_fail(int sticky, const char *what) {
	if (sticky) cw_err = 1;
	pthread_mutex_lock(&cw_mu);
	if (!cw_stop) {
		// The system's words as Go spells them ("no space left on device").
		char e[128];
		snprintf(e, sizeof e, "%s", strerror(errno));
		if (e[0] >= 'A' && e[0] <= 'Z' && (e[1] < 'A' || e[1] > 'Z')) e[0] = (char)(e[0] - 'A' + 'a');
		cw_stop = DT_STOP_WRITE_ERROR;
		snprintf(cw_stopmsg, sizeof cw_stopmsg, "%s at byte offset %lld of %s: %s", what, (long long)cw_off, cw_path, e);
	}
	pthread_mutex_unlock(&cw_mu);
	dt_stop(DT_STOP_WRITE_ERROR);
}

// reserve allocates disk space for n bytes more and the footer after them,
// ahead: a full disk is found before a frame is cut.
static int reserve(int64_t n) {
	if (cw_nofallocate) return 0;
	int64_t need = cw_off + n + n / 8 + FOOTER_ROOM + 4096;
	if (need <= cw_reserved) return 0;
	if (fallocate(cw_fd, FALLOC_FL_KEEP_SIZE, cw_off, need - cw_off + RESERVE_AHEAD) == 0) {
		cw_reserved = need + RESERVE_AHEAD;
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		cw_nofallocate = 1;
		return 0;
	}
	if (fallocate(cw_fd, FALLOC_FL_KEEP_SIZE, cw_off, need - cw_off) == 0) {
		cw_reserved = need;
		return 0;
	}
	return -1;
}

// write_frame writes a frame of kind k whose payload is pre (npre bytes)
// then p (n bytes), stored as it is.
static int write_frame(int k, const void *pre, size_t npre, const void *p, size_t n) {
	if (cw_err) return -1;
	unsigned char h[FRAME_HDR];
	uint32_t len = (uint32_t)(npre + n);
	put32(h, len);
	h[4] = (unsigned char)k, h[5] = 0;
	put32(h + 6, len);
	uint32_t crc = dt_crc32c(0, h, 10);
	if (npre) crc = dt_crc32c(crc, pre, npre);
	crc = dt_crc32c(crc, p, n);
	put32(h + 10, crc);
	if (cw_holding) {
		if (held_add(h, FRAME_HDR) || (npre && held_add(pre, npre)) || held_add(p, n)) return -1;
		return 0;
	}
	// The footer goes into the space reserved for it.
	if (k != K_FOOTER && reserve((int64_t)(FRAME_HDR + len)) != 0) {
		cw_fail(0, "reserving space");
		return -1;
	}
	struct iovec iov[3] = {{h, FRAME_HDR}, {(void *)pre, npre}, {(void *)p, n}};
	if (!npre) iov[1] = iov[2];
	if (write_all(iov, npre ? 3 : 2) != 0) {
		cw_fail(1, "writing");
		return -1;
	}
	return 0;
}

// write_msg packs a protobuf message into a frame of kind k.
static int write_msg(int k, const ProtobufCMessage *m) {
	size_t n = protobuf_c_message_get_packed_size(m);
	unsigned char stackbuf[4096];
	unsigned char *b = n <= sizeof stackbuf ? stackbuf : malloc(n);
	if (!b) return -1;
	protobuf_c_message_pack(m, b);
	int r = write_frame(k, NULL, 0, b, n);
	if (b != stackbuf) free(b);
	return r;
}

// Definitions added since the last write (under cw_mu): written before the
// next frame that may refer to them, or when the queue runs empty.
typedef struct {
	void **v;
	size_t n, cap;
} vec;
static int vec_add(vec *a, void *p) {
	if (a->n == a->cap) {
		size_t c = a->cap ? 2 * a->cap : 16;
		void **v = realloc(a->v, c * sizeof *v);
		if (!v) return -1;
		a->v = v, a->cap = c;
	}
	a->v[a->n++] = p;
	return 0;
}
static vec def_sites, def_mods, def_comms, mod_keys;

static void write_defs(void) {
	pthread_mutex_lock(&cw_mu);
	if (!def_sites.n && !def_mods.n && !def_comms.n) {
		pthread_mutex_unlock(&cw_mu);
		return;
	}
	Dtpa__Trace__V1__Definitions d = DTPA__TRACE__V1__DEFINITIONS__INIT;
	d.n_call_sites = def_sites.n, d.call_sites = (Dtpa__Trace__V1__CallSite **)def_sites.v;
	d.n_modules = def_mods.n, d.modules = (Dtpa__Trace__V1__Module **)def_mods.v;
	d.n_communicators = def_comms.n, d.communicators = (Dtpa__Trace__V1__Communicator **)def_comms.v;
	vec s = def_sites, m = def_mods, c = def_comms;
	def_sites = def_mods = def_comms = (vec){0};
	pthread_mutex_unlock(&cw_mu);
	write_msg(K_DEFS, &d.base);
	for (size_t i = 0; i < s.n; i++) {
		Dtpa__Trace__V1__CallSite *x = s.v[i];
		free(x->pcs);
		free(x);
	}
	for (size_t i = 0; i < m.n; i++) {
		Dtpa__Trace__V1__Module *x = m.v[i];
		free(x->path);
		free(x->build_id.data);
		free(x);
	}
	for (size_t i = 0; i < c.n; i++) {
		Dtpa__Trace__V1__Communicator *x = c.v[i];
		free(x->members);
		free(x->remote_members);
		free(x);
	}
	free(s.v), free(m.v), free(c.v);
}

// The header, filled by dtw_init, written by dtw_start.
static Dtpa__Trace__V1__Header cw_hdr = DTPA__TRACE__V1__HEADER__INIT;
static Dtpa__Trace__V1__Clock cw_clock = DTPA__TRACE__V1__CLOCK__INIT;
static Dtpa__Trace__V1__CalibrationPoint cw_cal[2] = {DTPA__TRACE__V1__CALIBRATION_POINT__INIT,
	DTPA__TRACE__V1__CALIBRATION_POINT__INIT};
static Dtpa__Trace__V1__CalibrationPoint *cw_calp[2] = {&cw_cal[0], &cw_cal[1]};
static Dtpa__Trace__V1__TracerParams *cw_params;
static Dtpa__Trace__V1__TracerParams cw_params_own = DTPA__TRACE__V1__TRACER_PARAMS__INIT;
static unsigned char cw_prefix[PREFIX_SIZE]; // records.Prefix but the thread
static int64_t cw_limit, cw_maxmb;             // bytes of this rank's trace (0: none); MaxTraceSize
// Deferred encoding: buffers are written as raw records while cw_defer_left
// > 0 (DT_DEFER_MB), then encoded (enc_batch).
static int cw_deferred;                      // the file is deferred (DEFERRED_MAJOR): it may hold raw records
static int64_t cw_defer_left, cw_raw_bytes; // raw records frames' bytes, which MaxTraceSize does not count
static uint64_t cw_events, cw_dropped;      // events encoded; events of buffers not written
static char **cw_args;
static size_t cw_nargs;


// The writer thread and the end of tracing.
static pthread_t cw_thread;
static pthread_mutex_t cw_end_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cw_end_cv = PTHREAD_COND_INITIALIZER;
static int cw_started, cw_acked, cw_finishing, cw_done;
static int cw_compacting; // the writer compacts the trace after its footer (dtw_exit waits)
static int cw_exiting;    // the process exits (dtw_exit): the compaction may start
static int64_t cw_cpu0;

static int64_t thread_cpu_ns(void) {
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// params_set tells whether tracer.par or the environment sets a tracer
// parameter.
static int params_set(void) {
	return access("tracer.par", R_OK) == 0 || getenv("UserStackSize") || getenv("MaxTraceSize") ||
	       getenv("TraceBufSize");
}

// dtw_params reads the tracer's parameters (package params: tracer.par in
// the working directory, then the environment). dtrun reads them and
// passes them encoded, DT_PARAMS: the TracerParams message, in hex.
// Without dtrun, when the file or a variable sets some, the encoder reads
// them (its Go runtime starts then, in MPI_Init; without either, nothing
// is read and the defaults go).
void dtw_params(dt_params *p) {
	const char *hex = getenv("DT_PARAMS");
	size_t n = hex ? strlen(hex) / 2 : 0;
	unsigned char *b = n ? malloc(n) : NULL;
	for (size_t i = 0; b && i < n; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
			free(b);
			b = NULL;
			break;
		}
		b[i] = (unsigned char)v;
	}
	if (b) {
		cw_params = dtpa__trace__v1__tracer_params__unpack(NULL, n, b);
		free(b);
	} else if (!hex && params_set() && enc_load()) {
		unsigned char own[4096];
		char msg[512] = "";
		int k = enc_params(own, sizeof own, msg, sizeof msg);
		if (msg[0] && dt_rank_world == 0) fprintf(stderr, "dtpa tracer: %s; the tracer uses the defaults\n", msg);
		if (k >= 0) cw_params = dtpa__trace__v1__tracer_params__unpack(NULL, (size_t)k, own);
	}
	if (!cw_params) {
		if (hex) fprintf(stderr, "dtpa tracer: DT_PARAMS does not decode; using defaults\n");
		cw_params_own.user_stack_size = (uint32_t)p->user_stack_size;
		cw_params_own.max_trace_size_mb = p->max_trace_mb;
		cw_params_own.trace_buf_size = p->trace_buf_size;
		cw_params = &cw_params_own;
	}
	p->user_stack_size = (int)cw_params->user_stack_size;
	p->max_trace_mb = cw_params->max_trace_size_mb;
	p->trace_buf_size = cw_params->trace_buf_size;
}

// read_cmdline splits /proc/self/cmdline into cw_args.
static void read_cmdline(void) {
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);
	for (ssize_t r; b; n += (size_t)r) {
		if (n == cap) {
			char *nb = realloc(b, 2 * cap + 1);
			if (!nb) break;
			b = nb, cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r <= 0) break;
	}
	close(fd);
	if (!b) return;
	while (n > 0 && b[n - 1] == 0) n--; // Go's TrimRight of the NULs
	b[n] = 0;
	size_t k = 1;
	for (size_t i = 0; i < n; i++) k += b[i] == 0;
	cw_args = malloc(k * sizeof *cw_args);
	if (!cw_args) return;
	cw_args[0] = b;
	cw_nargs = 1;
	for (size_t i = 0; i < n; i++)
		if (b[i] == 0) cw_args[cw_nargs++] = b + i + 1;
}

// task_name is <app> of <app>.<rank>.trc.
static void task_name(char *out, size_t size, const unsigned char *spawn) {
	const char *base = "trace";
	char tmp[PATH_MAX];
	if (cw_nargs > 0 && cw_args[0][0]) {
		snprintf(tmp, sizeof tmp, "%s", cw_args[0]);
		size_t l = strlen(tmp);
		while (l > 1 && tmp[l - 1] == '/') tmp[--l] = 0;
		char *s = strrchr(tmp, '/');
		base = s && s[1] ? s + 1 : tmp;
	}
	snprintf(out, size, "%s", base);
	char *dot = strrchr(out, '.');
	if (dot && dot != out) *dot = 0; // filepath.Ext: from the last dot
	if (spawn) {
		size_t l = strlen(out);
		snprintf(out + l, size - l, ".spawn-%02x%02x%02x%02x", spawn[0], spawn[1], spawn[2], spawn[3]);
	}
}

// json_str appends s as a JSON string.
static size_t json_str(char *b, size_t at, size_t size, const char *s) {
	if (at < size) b[at] = '"';
	at++;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') at += (size_t)snprintf(b + (at < size ? at : size), at < size ? size - at : 0, "\\%c", c);
		else if (c < 0x20) at += (size_t)snprintf(b + (at < size ? at : size), at < size ? size - at : 0, "\\u%04x", c);
		else {
			if (at < size) b[at] = (char)c;
			at++;
		}
	}
	if (at < size) b[at] = '"';
	return at + 1;
}

// batch_job names the batch system's job this process runs in
// (Header.batch_job) into b (size bytes; "" outside one), from the
// variables each system sets in its jobs' environment.
static void batch_job(char *b, size_t size) {
	const char *v;
	b[0] = 0;
	if ((v = getenv("SLURM_JOB_ID")) && *v) {
		const char *step = getenv("SLURM_STEP_ID");
		if (step && *step) snprintf(b, size, "slurm %s.%s", v, step);
		else snprintf(b, size, "slurm %s", v);
	} else if ((v = getenv("PBS_JOBID")) && *v) {
		snprintf(b, size, "pbs %s", v);
	} else if ((v = getenv("LSB_JOBID")) && *v) {
		const char *ix = getenv("LSB_JOBINDEX");
		if (ix && *ix && strcmp(ix, "0") != 0) snprintf(b, size, "lsf %s[%s]", v, ix);
		else snprintf(b, size, "lsf %s", v);
	} else if ((v = getenv("FLUX_JOB_ID")) && *v) {
		snprintf(b, size, "flux %s", v);
	} else if ((v = getenv("JOB_ID")) && *v && getenv("SGE_ROOT")) {
		const char *task = getenv("SGE_TASK_ID");
		if (task && *task && strcmp(task, "undefined") != 0) snprintf(b, size, "sge %s.%s", v, task);
		else snprintf(b, size, "sge %s", v);
	} else if ((v = getenv("COBALT_JOBID")) && *v) {
		snprintf(b, size, "cobalt %s", v);
	}
}

// create_spill creates and maps the spill file (records.CreateSpill), its
// directory first when missing.
static char *create_spill(const char *path, int rank, int slots, size_t chunk, const dt_clock *c, int *fdp) {
	int fd = -1;
	for (int try = 0; try < 3 && fd < 0; try++) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", path);
		mkdir(dirname(dir), 0700);
		fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
		if (fd < 0 && errno != ENOENT) return NULL;
	}
	if (fd < 0) return NULL;
	flock(fd, LOCK_EX | LOCK_NB);
	size_t size = SPILL_HDR + (size_t)slots * (64 + chunk);
	char hdr[SPILL_HDR];
	size_t n = (size_t)snprintf(hdr, sizeof hdr, "{\"Trace\":");
	n = json_str(hdr, n, sizeof hdr, cw_path);
	if (n < sizeof hdr)
		n += (size_t)snprintf(hdr + n, sizeof hdr - n,
			",\"Rank\":%d,\"Pid\":%d,\"Slots\":%d,\"Chunk\":%zu,\"Conv\":{\"TSC\":%s,\"NsPerTick\":%.17g,\"Raw0\":%llu,"
			"\"Ns0\":%lld,\"SkewOff\":%lld,\"SkewPPM\":%.17g}}",
			rank, (int)getpid(), slots, chunk, c->tsc ? "true" : "false", c->ns_per_tick, (unsigned long long)c->raw0,
			(long long)c->ns0, (long long)c->skew_off_ns, c->skew_ppm);
	// The node's boot (records.SpillInfo.Boot): dtrun applies its own
	// clock readings only to the spill files of its node's current boot.
	char boot[64];
	dt_boot_id(boot, sizeof boot);
	if (boot[0] && n < sizeof hdr) {
		n--; // the closing brace
		n += (size_t)snprintf(hdr + n, sizeof hdr - n, ",\"Boot\":");
		n = json_str(hdr, n, sizeof hdr, boot);
		if (n < sizeof hdr) n += (size_t)snprintf(hdr + n, sizeof hdr - n, "}");
	}
	char *mem = MAP_FAILED;
	if (n > SPILL_HDR - 12 || ftruncate(fd, (off_t)size) != 0 || fallocate(fd, 0, 0, SPILL_HDR) != 0 ||
		(mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		unlink(path);
		return NULL;
	}
	memcpy(mem, SPILL_MAGIC, 8);
	put32((unsigned char *)mem + 8, (uint32_t)n);
	memcpy(mem + 12, hdr, n);
	*fdp = fd;
	return mem;
}

static void *writer(void *arg);

int dtw_init(int rank, int size, int level, char *impl, char *ver, dt_clock *clk, unsigned char *spawn) {
	dt_crc_init();
	read_cmdline();
	char task[PATH_MAX / 2], name[PATH_MAX / 2 + 32];
	task_name(task, sizeof task, spawn);
	snprintf(name, sizeof name, "%s.%d.trc", task, rank);
	// Not truncated before it is held: a trace of that name that a running
	// process holds (another job's rank in this directory, or a
	// compaction of it) is left as it is, and this rank runs untraced.
	cw_fd = open(name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (cw_fd < 0) {
		fprintf(stderr, "dtpa tracer: rank %d: creating trace: open %s: %s; running untraced\n", rank, name, strerror(errno));
		return 0;
	}
	// Held until the footer: the rank still writes it (records.LockTrace).
	if (flock(cw_fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
		fprintf(stderr, "dtpa tracer: rank %d: %s is held by another running process (a job tracing the same program "
				"in this directory?): left as it is; running untraced\n", rank, name);
		close(cw_fd);
		cw_fd = -1;
		return 0;
	}
	if (ftruncate(cw_fd, 0) != 0) {
		fprintf(stderr, "dtpa tracer: rank %d: creating trace: truncate %s: %s; running untraced\n", rank, name, strerror(errno));
		close(cw_fd);
		cw_fd = -1;
		return 0;
	}
	char cwd[PATH_MAX];
	if (name[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(cw_path, sizeof cw_path, "%s/%s", cwd, name);
	else snprintf(cw_path, sizeof cw_path, "%s", name);
	char late[PATH_MAX + 8];
	late_path(late, sizeof late);
	unlink(late); // an earlier run's

	static char host[256], exe[PATH_MAX], version[MPI_MAX_LIBRARY_VERSION_STRING + 1], job[160];
	dt_host_name(host, sizeof host);
	batch_job(job, sizeof job);
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	snprintf(version, sizeof version, "%s", ver); // strings.TrimSpace
	char *v = version;
	while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') v++;
	for (size_t l = strlen(v); l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\t' || v[l - 1] == '\n' || v[l - 1] == '\r'); l--)
		v[l - 1] = 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);

	cw_clock.source = clk->tsc ? DTPA__TRACE__V1__CLOCK__SOURCE__TSC : DTPA__TRACE__V1__CLOCK__SOURCE__MONOTONIC_RAW;
	cw_clock.injected_offset_ns = clk->skew_off_ns;
	cw_clock.injected_drift_ppm = clk->skew_ppm;
	if (clk->tsc) {
		cw_clock.tsc_hz = 1e9 / clk->ns_per_tick;
		cw_cal[0].tsc = clk->raw0, cw_cal[0].monotonic_raw_ns = clk->ns0;
		cw_cal[1].tsc = clk->raw1, cw_cal[1].monotonic_raw_ns = clk->ns1;
		cw_clock.n_calibration = 2, cw_clock.calibration = cw_calp;
	}
	cw_hdr.rank = (uint32_t)rank, cw_hdr.world_size = (uint32_t)size;
	cw_hdr.hostname = host, cw_hdr.pid = (uint32_t)getpid(), cw_hdr.program = exe;
	cw_hdr.n_args = cw_nargs, cw_hdr.args = cw_args;
	cw_hdr.start_unix_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	cw_hdr.start_local_ns = dt_ns(dt_now());
	cw_hdr.clock = &cw_clock;
	cw_hdr.tracer_version = DT_TRACER_VERSION;
	cw_hdr.params = cw_params;
	cw_hdr.mpi_implementation = impl, cw_hdr.mpi_library_version = v;
	cw_hdr.thread_level = (uint32_t)level;
	cw_hdr.batch_job = job;

	cw_defer_left = 128;
	const char *dmb = getenv("DT_DEFER_MB");
	if (dmb && *dmb) {
		char *end;
		long long v = strtoll(dmb, &end, 10);
		if (*end || v < 0) fprintf(stderr, "dtpa tracer: DT_DEFER_MB=\"%s\": want MB >= 0; using 128\n", dmb);
		else cw_defer_left = v;
	}
	cw_defer_left <<= 20;
	// The preamble: a deferred file (traceformat.DeferredMajor), or with
	// DT_DEFER_MB=0, whose events are all encoded, an ordinary one (nothing
	// to compact), its other frames uncompressed. That needs the encoder
	// now (its Go runtime starts in MPI_Init); without one the trace is
	// deferred after all.
	cw_deferred = cw_defer_left > 0 || !enc_load();
	if (cw_deferred && !cw_defer_left) cw_defer_left = INT64_MAX;
	unsigned major = cw_deferred ? DEFERRED_MAJOR : VERSION_MAJOR;
	unsigned char pre[12] = {0x89, 'D', 'T', 'P', 'A', '\r', '\n', 0x1a, major & 0xff, major >> 8, FORMAT_MINOR, 0};
	held_add(pre, sizeof pre);

	// The records frames' prefix (records.Prefix.Append) but its thread.
	int64_t maxmb = cw_params ? cw_params->max_trace_size_mb : 0;
	int64_t limit = maxmb > 0 && size > 0 ? (maxmb << 20) / size : 0;
	uint32_t flags = clk->tsc ? 1 : 0;
	uint64_t u[7];
	memcpy(&u[0], &clk->ns_per_tick, 8);
	u[1] = clk->raw0;
	u[2] = (uint64_t)clk->ns0;
	u[3] = (uint64_t)clk->skew_off_ns;
	memcpy(&u[4], &clk->skew_ppm, 8);
	u[5] = (uint64_t)limit;
	u[6] = (uint64_t)maxmb;
	put32(cw_prefix + 4, flags);
	memcpy(cw_prefix + 8, u, sizeof u);
	cw_limit = limit, cw_maxmb = maxmb;

	const char *dir = getenv("DT_SPILL_DIR");
	if (dir && *dir) {
		// Buffers in a shared file mapping survive SIGKILL (records.Recover);
		// named for dtrun to recover once the trace has its header.
		snprintf(cw_spill, sizeof cw_spill, "%s/%s.%d.spill.new", dir, task, rank);
		int fd;
		char *mem = create_spill(cw_spill, rank, dt_buf_slots(), dt_buf_chunk(), clk, &fd);
		if (mem) {
			dt_spill_setup(mem + SPILL_HDR, dt_buf_slots(), fd, SPILL_HDR);
			dt_spill_prepare(SPILL_AHEAD);
			cw_spill_new = 1;
		} else {
			cw_spill[0] = 0;
		}
	}
	if (reserve(0) != 0) {
		fprintf(stderr, "dtpa tracer: rank %d: reserving space in %s: %s; running untraced\n", rank, name, strerror(errno));
		close(cw_fd);
		unlink(name);
		if (cw_spill[0]) unlink(cw_spill); // its mapping stays, unused
		return 0;
	}
	// The function table and the empty call stack, as tracer/gen encoded them.
	extern const unsigned char dt_functab[];
	extern const unsigned long dt_functab_len;
	write_frame(K_DEFS, NULL, 0, dt_functab, dt_functab_len);
	// The writer takes no signal: the handler of a fatal one waits for it
	// (dt_signal.c).
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int perr = pthread_create(&cw_thread, NULL, writer, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (perr == 0) pthread_detach(cw_thread);
	if (perr != 0) {
		close(cw_fd);
		unlink(name);
		if (cw_spill[0]) unlink(cw_spill);
		return 0;
	}
	dt_aux_start(EPOCH_NS);
	return 1;
}

// dtw_start writes the header with the run id, then the frames held, and
// lets the writer run.
void dtw_start(unsigned char *runid) {
	// Kept: a crash after the trace ended names it (dtw_late_crash).
	static unsigned char id[16];
	memcpy(id, runid, sizeof id);
	cw_hdr.run_id.data = id, cw_hdr.run_id.len = sizeof id;
	size_t n = dtpa__trace__v1__header__get_packed_size(&cw_hdr);
	unsigned char *b = malloc(n);
	unsigned char *held = cw_held;
	size_t nheld = cw_nheld;
	cw_held = NULL, cw_nheld = cw_capheld = 0;
	cw_holding = 0;
	if (b && held) {
		dtpa__trace__v1__header__pack(&cw_hdr, b);
		// preamble, header frame, the frames held: one write.
		cw_holding = 1;
		held_add(held, 12);
		write_frame(K_HEADER, NULL, 0, b, n);
		held_add(held + 12, nheld - 12);
		cw_holding = 0;
		struct iovec iov = {cw_held, cw_nheld};
		if (reserve((int64_t)cw_nheld) != 0 || write_all(&iov, 1) != 0) cw_fail(1, "writing the header");
		free(cw_held);
		cw_held = NULL;
	} else {
		cw_fail(1, "no memory for the header");
	}
	free(b);
	free(held);
	if (cw_spill_new) {
		char to[PATH_MAX];
		snprintf(to, sizeof to, "%s", cw_spill);
		to[strlen(to) - 4] = 0; // without ".new"
		if (rename(cw_spill, to) == 0) snprintf(cw_spill, sizeof cw_spill, "%s", to);
		cw_spill_new = 0;
	}
	pthread_mutex_lock(&cw_end_mu);
	cw_started = 1;
	pthread_cond_broadcast(&cw_end_cv);
	pthread_mutex_unlock(&cw_end_mu);
}

static void add_module(const char *path, uint64_t bias, uint64_t lo, uint64_t hi, const unsigned char *bid, int nbid) {
	char key[PATH_MAX + 32];
	snprintf(key, sizeof key, "%s@%llx", path, (unsigned long long)bias);
	pthread_mutex_lock(&cw_mu);
	for (size_t i = 0; i < mod_keys.n; i++)
		if (strcmp(mod_keys.v[i], key) == 0) {
			pthread_mutex_unlock(&cw_mu);
			return;
		}
	Dtpa__Trace__V1__Module *m = malloc(sizeof *m);
	char *k = strdup(key), *p = strdup(path);
	if (m && k && p && vec_add(&def_mods, m) == 0) {
		dtpa__trace__v1__module__init(m);
		m->path = p, p = NULL;
		m->load_bias = bias, m->start = lo, m->end = hi;
		if (nbid > 0 && (m->build_id.data = malloc((size_t)nbid))) {
			memcpy(m->build_id.data, bid, (size_t)nbid);
			m->build_id.len = (size_t)nbid;
		}
		m = NULL;
		if (vec_add(&mod_keys, k) == 0) k = NULL; // else defined again if seen again
	}
	free(m), free(k), free(p);
	pthread_mutex_unlock(&cw_mu);
}

void dtw_module(char *path, uint64_t bias, uint64_t lo, uint64_t hi, unsigned char *bid, int nbid) {
	if (cw_fd >= 0) add_module(path, bias, lo, hi, bid, nbid);
}

// dtw_source_module defines the module standing for source file path
// (traceformat.SourceModulePrefix).
void dtw_source_module(char *path, uint64_t base) {
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "source-file:%s", path);
	if (cw_fd >= 0) add_module(p, base, base, base + (1ULL << 32), NULL, 0);
}

// dtw_clocksync queues a clock-sync frame behind the buffers handed over
// so far.
void dtw_clocksync(int phase, int ref, int same, int64_t *snd, int64_t *rem, int64_t *rcv, int n) {
	if (cw_fd < 0) return;
	Dtpa__Trace__V1__ClockSync cs = DTPA__TRACE__V1__CLOCK_SYNC__INIT;
	cs.phase = (Dtpa__Trace__V1__ClockSync__Phase)phase, cs.reference = (uint32_t)ref, cs.same_clock = same != 0;
	if (n > 0) {
		cs.n_local_send_ns = cs.n_remote_ns = cs.n_local_recv_ns = (size_t)n;
		cs.local_send_ns = snd, cs.remote_ns = rem, cs.local_recv_ns = rcv;
	}
	size_t sz = dtpa__trace__v1__clock_sync__get_packed_size(&cs);
	unsigned char *b = malloc(sz ? sz : 1);
	if (!b) return;
	dtpa__trace__v1__clock_sync__pack(&cs, b);
	dt_q_push(b, sz, 0, 0, DT_Q_CLOCK);
}

void dtw_stopped(int reason) {
	pthread_mutex_lock(&cw_mu);
	if (!cw_stop) cw_stop = reason;
	pthread_mutex_unlock(&cw_mu);
}

static int stopped(void) {
	pthread_mutex_lock(&cw_mu);
	int s = cw_stop;
	pthread_mutex_unlock(&cw_mu);
	return s;
}

// remove_abandoned removes the spill files of dir never renamed from
// ".spill.new" whose processes are gone (records.RemoveAbandoned).
static void remove_abandoned(const char *dir) {
	char pat[PATH_MAX];
	snprintf(pat, sizeof pat, "%s/*.spill.new", dir);
	glob_t g;
	if (glob(pat, 0, NULL, &g) != 0) return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) unlink(g.gl_pathv[i]);
		close(fd);
	}
	globfree(&g);
}


// sig_name spells signal sig as the footer names it: "SIGSEGV
// (Segmentation fault)", else "signal 11".
static void sig_name(char *buf, size_t n, int sig) {
	const char *abbrev = sigabbrev_np(sig), *desc = strsignal(sig);
	if (abbrev)
		snprintf(buf, n, "SIG%s (%s)", abbrev, desc ? desc : "?");
	else
		snprintf(buf, n, "signal %d", sig);
}

volatile int dt_late_ok;

// fill_crash fills c with from (dt_crash, dt_where), its stack pcs (n
// frames) and its Python frames py (npy), into stack and name, which must
// outlive c.
static void fill_crash(Dtpa__Trace__V1__Crash *c, const dt_crash_t *from, uint64_t *stack, const uintptr_t *pcs, int n,
	uint64_t *py, int npy, char *name, size_t nname) {
	sig_name(name, nname, from->sig);
	c->signal = from->sig, c->name = name, c->code = from->code;
	c->address = from->addr, c->has_address = from->has_addr != 0;
	if (from->T) c->thread = from->T->tid, c->has_thread = 1;
	for (int i = 0; i < n; i++) stack[i] = pcs[i];
	c->stack = stack, c->n_stack = (size_t)n;
	c->python_stack = py, c->n_python_stack = (size_t)npy;
	c->local_ns = dt_ns(from->t);
	// A std::type_info: its vtable, then its name, in the C++ runtime's
	// or the program's read-only data.
	static char cxx[256];
	const char *const *ti = (const char *const *)from->cxx_type;
	if (ti && !((uintptr_t)ti & 7) && ti[1] && (uintptr_t)ti[1] >= 4096) {
		const char *n = ti[1] + (ti[1][0] == '*'); // '*': a type of internal linkage
		size_t k = strnlen(n, sizeof cxx - 1);
		memcpy(cxx, n, k), cxx[k] = 0;
		c->cxx_exception = cxx;
	}
}

// How the process exits without MPI_Finalize (dtw_exit_call), for the
// footer.
static Dtpa__Trace__V1__ExitCall cw_exitcall = DTPA__TRACE__V1__EXIT_CALL__INIT;
static uint64_t cw_exitstack[DT_CRASH_DEPTH];
static int cw_exited;

void dtw_exit_call(int status, const uintptr_t *pcs, int n, dt_thr *T) {
	cw_exitcall.status = status, cw_exitcall.has_status = 1;
	for (int i = 0; i < n && i < DT_CRASH_DEPTH; i++) cw_exitstack[i] = pcs[i];
	cw_exitcall.stack = cw_exitstack, cw_exitcall.n_stack = (size_t)(n < DT_CRASH_DEPTH ? n : DT_CRASH_DEPTH);
	if (T) cw_exitcall.thread = T->tid, cw_exitcall.has_thread = 1;
	cw_exited = 1;
}

// fill_exception fills c with the uncaught Python exception (dt_pyexc).
static void fill_exception(Dtpa__Trace__V1__Crash *c) {
	c->exception = dt_pyexc.type, c->exception_message = dt_pyexc.msg;
	if (dt_pyexc.T) c->thread = dt_pyexc.T->tid, c->has_thread = 1;
	c->python_stack = dt_pyexc.py, c->n_python_stack = (size_t)dt_pyexc.npy;
	c->local_ns = dt_ns(dt_pyexc.t);
}

// write_late writes crash, which came after the trace ended, into the file
// beside it (late_path), with the run's id and the modules of the files
// its Python frames name that the trace's definitions lack.
static void write_late(Dtpa__Trace__V1__Crash *crash) {
	const char *files[DT_CRASH_DEPTH];
	uint64_t bases[DT_CRASH_DEPTH];
	int nf = dt_py_late_files(files, bases, DT_CRASH_DEPTH);
	Dtpa__Trace__V1__Module mods[DT_CRASH_DEPTH], *modp[DT_CRASH_DEPTH];
	static char paths[DT_CRASH_DEPTH][PATH_MAX + 16]; // once per process
	int nm = 0;
	for (int i = 0; i < nf; i++) {
		if (snprintf(paths[nm], sizeof paths[nm], "source-file:%s", files[i]) >= (int)sizeof paths[nm]) continue;
		dtpa__trace__v1__module__init(&mods[nm]);
		mods[nm].path = paths[nm], mods[nm].start = mods[nm].load_bias = bases[i], mods[nm].end = bases[i] + (1ULL << 32);
		modp[nm] = &mods[nm];
		nm++;
	}
	crash->python_files = modp, crash->n_python_files = (size_t)nm;
	Dtpa__Trace__V1__LateCrash lc = DTPA__TRACE__V1__LATE_CRASH__INIT;
	lc.run_id = cw_hdr.run_id, lc.crash = crash;
	static uint8_t buf[64 << 10]; // analyzer.maxLateCrash
	size_t size = dtpa__trace__v1__late_crash__get_packed_size(&lc);
	if (size > sizeof buf) return;
	dtpa__trace__v1__late_crash__pack(&lc, buf);
	char path[PATH_MAX + 8];
	late_path(path, sizeof path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) return;
	if (write(fd, buf, size) != (ssize_t)size) unlink(path);
	close(fd);
}

// dtw_late_crash runs on the signal watcher (dt_signal.c) when a fault
// signal or SIGABRT crashed the process after its trace ended
// (dt_late_ok): in a destructor or an exit handler. The trace stays as it
// was; the crash, its stack walked as dtw_signal walks it, goes into the
// file beside it (write_late), which dtrun and dtpa read.
void dtw_late_crash(void) {
	uintptr_t pcs[DT_CRASH_DEPTH];
	int n = dt_crash_stack(&dt_crash, pcs, DT_CRASH_DEPTH);
	// The definitions are written: the modules of files no call named
	// go with the crash.
	uint64_t py[DT_CRASH_DEPTH];
	int npy = dt_py_crash_stack(dt_crash.py_ts, py, DT_CRASH_DEPTH, 0);
	Dtpa__Trace__V1__Crash crash = DTPA__TRACE__V1__CRASH__INIT;
	uint64_t stack[DT_CRASH_DEPTH];
	char name[128];
	fill_crash(&crash, &dt_crash, stack, pcs, n, py, npy, name, sizeof name);
	write_late(&crash);
}

void dtw_late_exception(void) {
	Dtpa__Trace__V1__Crash crash = DTPA__TRACE__V1__CRASH__INIT;
	fill_exception(&crash);
	write_late(&crash);
}

static int dtrun_compacts(void);
static int dtrun_compacts_read(void);

// notify_ended tells dtrun, through the FIFO .ended in its spill
// directory d, that this rank's trace is whole and closed: dtrun compacts
// it while the job still ends (cmd/dtrun, earlyCompactor). Only a trace
// left to dtrun (dtrun_compacts); without a reader (another node, no
// dtrun, the FIFO full) nothing is said and dtrun compacts it after the
// job. A line of a name is written at once (PIPE_BUF).
static void notify_ended(const char *d) {
	if (!cw_deferred || !dtrun_compacts()) return;
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof fifo, "%s/.ended", d);
	int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) return;
	const char *base = strrchr(cw_path, '/');
	base = base ? base + 1 : cw_path;
	char line[NAME_MAX + 2];
	int n = snprintf(line, sizeof line, "%s\n", base);
	if (n > 0 && n < (int)sizeof line && write(fd, line, (size_t)n) < 0) {
		// dtrun compacts it after the job
	}
	close(fd);
}

static void write_footer(int fin) {
	write_defs();
	dtw_stopped(fin);
	Dtpa__Trace__V1__Footer f = DTPA__TRACE__V1__FOOTER__INIT;
	pthread_mutex_lock(&cw_mu);
	f.dropped_events = dt_dropped() + cw_dropped;
	f.event_count = cw_events; // the compaction adds those of the raw records
	f.stop_reason = (Dtpa__Trace__V1__Footer__StopReason)cw_stop;
	pthread_mutex_unlock(&cw_mu);
	f.end_local_ns = dt_ns(dt_now());
	Dtpa__Trace__V1__UnfinishedCall unf[CW_UNF], *unfp[CW_UNF];
	pthread_mutex_lock(&cw_mu);
	int nunf = cw_nunf;
	pthread_mutex_unlock(&cw_mu);
	for (int i = 0; i < nunf; i++) {
		dt_unf *u = &cw_unf[i];
		dtpa__trace__v1__unfinished_call__init(&unf[i]);
		unf[i].thread = u->tid, unf[i].function = u->fid, unf[i].return_address = u->pc;
		unf[i].name = (char *)(u->fid < (uint32_t)dt_nfuncs ? dt_fnames[u->fid] : "");
		unf[i].entry_local_ns = dt_ns(u->t0);
		unf[i].python_stack = u->py, unf[i].n_python_stack = (size_t)(u->npy > 0 ? u->npy : 0);
		unfp[i] = &unf[i];
	}
	f.unfinished = unfp, f.n_unfinished = (size_t)nunf;
	Dtpa__Trace__V1__Crash crash = DTPA__TRACE__V1__CRASH__INIT;
	uint64_t stack[DT_CRASH_DEPTH];
	char crash_name[128] = "";
	if (cw_ncrash > 0) {
		fill_crash(&crash, &dt_crash, stack, cw_crash, cw_ncrash, cw_pycrash, cw_npycrash, crash_name, sizeof crash_name);
		f.crash = &crash;
	} else if (__atomic_load_n(&dt_pyexc.taken, __ATOMIC_ACQUIRE)) {
		fill_exception(&crash);
		f.crash = &crash;
	}
	if (cw_exited && cw_stop == DT_STOP_EXIT) f.exit = &cw_exitcall;
	Dtpa__Trace__V1__Crash where = DTPA__TRACE__V1__CRASH__INIT;
	uint64_t where_stack[DT_CRASH_DEPTH];
	char where_name[128] = "";
	if (cw_nwhere > 0 && !f.crash) {
		fill_crash(&where, &dt_where, where_stack, cw_where, cw_nwhere, cw_pywhere, cw_npywhere, where_name, sizeof where_name);
		f.interrupted = &where;
	}
	// What the hand-overs and the tracer's threads cost (BenchmarkOverhead
	// reads it).
	char msg[2048];
	int64_t stall = (int64_t)((double)dt_max_stall_ticks * dt_clk.ns_per_tick);
	int64_t mean = dt_flushes ? (int64_t)((double)dt_stall_ticks * dt_clk.ns_per_tick / (double)dt_flushes) : 0;
	pthread_mutex_lock(&cw_mu);
	char stopmsg[sizeof cw_stopmsg + 2] = "";
	if (cw_stopmsg[0]) snprintf(stopmsg, sizeof stopmsg, "%s; ", cw_stopmsg);
	pthread_mutex_unlock(&cw_mu);
	int n = snprintf(msg, sizeof msg,
		"%sC writer; max flush stall %lld ns, mean %lld ns over %llu flushes; encoder CPU %lld ns; encoder sleeps %llu (%llu idle); "
		"aux CPU %lld ns, %llu wake-ups, %d spill slots made (%d in hand-overs)",
		stopmsg, (long long)stall, (long long)mean, (unsigned long long)dt_flushes,
		(long long)(thread_cpu_ns() - cw_cpu0), (unsigned long long)dt_q_waits, (unsigned long long)dt_q_idle,
		(long long)dt_aux_cpu_ns, (unsigned long long)dt_aux_wakeups, dt_spill_made(), dt_spill_made_by_threads());
	if (dt_drop_gaps && n > 0 && (size_t)n < sizeof msg)
		snprintf(msg + n, sizeof msg - (size_t)n,
			"; calls dropped in %llu gaps: no free buffer (events came faster than the encoder absorbed them)",
			(unsigned long long)dt_drop_gaps);
	f.message = msg;
	write_msg(K_FOOTER, &f.base);
	// The space reserved beyond the end is given back.
	if (cw_reserved > 0) ftruncate(cw_fd, cw_off);
	close(cw_fd);
	dt_late_ok = cw_stop != DT_STOP_ABORT && cw_stop != DT_STOP_SIGNAL;
	if (cw_spill[0]) {
		unlink(cw_spill);
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", cw_spill);
		char *d = dirname(dir);
		notify_ended(d);
		remove_abandoned(d);
		rmdir(d); // the node's last rank removes it
	}
}

// drop counts the events of a buffer that is not written (cw_prefix holds
// its thread), when the encoder can count them.
static void drop(void *buf, size_t n) {
	if (enc_load()) cw_dropped += enc_count(cw_prefix, buf, n);
}

// write_records writes a buffer's records as they are (cw_prefix holds its
// thread), for the compaction to encode after the run.
static void write_records(void *buf, size_t n) {
	write_defs();
	int64_t off = cw_off;
	if (write_frame(K_RECORDS, cw_prefix, PREFIX_SIZE, buf, n) != 0 && cw_off == off)
		drop(buf, n); // not written at all (no space)
	cw_raw_bytes += cw_off - off;
	cw_defer_left -= (int64_t)(FRAME_HDR + PREFIX_SIZE + n);
}

// write_encoded writes a buffer's records encoded (enc_batch), and stops
// tracing when the trace reaches its share of MaxTraceSize, raw records
// not counted (records.Compact cuts the trace where this check would
// have).
static void write_encoded(void *buf, size_t n) {
	unsigned char *f;
	size_t size;
	uint64_t events;
	if (enc_batch(cw_prefix, buf, n, &f, &size, &events) != 0) {
		// The encoder said why. A deferred trace takes the records as they
		// are (the compaction tries again); an ordinary one cannot.
		if (cw_deferred) write_records(buf, n);
		else drop(buf, n);
		return;
	}
	if (!size) return;
	write_defs();
	if (cw_err) return;
	if (reserve((int64_t)size) != 0) {
		cw_fail(0, "reserving space");
		cw_dropped += events;
		return;
	}
	struct iovec iov = {f, size};
	if (write_all(&iov, 1) != 0) {
		cw_fail(1, "writing");
		return;
	}
	cw_events += events;
	if (cw_limit > 0 && cw_off - cw_raw_bytes >= cw_limit) {
		pthread_mutex_lock(&cw_mu);
		if (!cw_stop) {
			cw_stop = DT_STOP_SIZE_LIMIT;
			snprintf(cw_stopmsg, sizeof cw_stopmsg, "trace reached %lld bytes (MaxTraceSize %lld MB over all ranks)",
				(long long)cw_off, (long long)cw_maxmb);
		}
		pthread_mutex_unlock(&cw_mu);
		dt_stop(DT_STOP_SIZE_LIMIT);
	}
}

// dtrun_compacts tells whether dtrun compacts this rank's trace after the
// job: dtrun runs on this node (the spill directory, where dtrun leaves its
// mark .dtrun, is its) and looks for traces in the trace's directory (the
// mark's content). Elsewhere the rank compacts its own trace as it ends:
// a node other than dtrun's need not
// share the trace's file system, and each node compacts its ranks' traces
// in parallel. The answer is read once (the rank's end asks it twice:
// notify_ended, and the writer whether to compact): the mark is written
// before the job starts and the trace does not move.
static int dtrun_compacts(void) {
	static int known = -1;
	if (known < 0) known = dtrun_compacts_read();
	return known;
}

static int dtrun_compacts_read(void) {
	const char *dir = getenv("DT_SPILL_DIR");
	if (!dir || !*dir) return 0;
	char mark[PATH_MAX], want[PATH_MAX], tdir[PATH_MAX];
	snprintf(mark, sizeof mark, "%s/.dtrun", dir);
	int fd = open(mark, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	ssize_t n = read(fd, want, sizeof want - 1);
	close(fd);
	if (n <= 0) return 0;
	want[n] = 0;
	snprintf(tdir, sizeof tdir, "%s", cw_path);
	struct stat a, b;
	return stat(want, &a) == 0 && stat(dirname(tdir), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void *writer(void *arg) {
	(void)arg;
	int nice = 0;
	const char *nv = getenv("DT_WRITER_NICE");
	if (!nv || strcmp(nv, "0") != 0) {
		nice = nv ? atoi(nv) : 10;
		if (nv && !*nv) nice = 10;
		if (setpriority(PRIO_PROCESS, (id_t)gettid(), nice) != 0) nice = 0;
	}
	dt_enc_register(nice);
	const char *sched = getenv("DT_WRITER_SCHED");
	if (sched && strcmp(sched, "idle") == 0) dt_enc_idle();
	pthread_mutex_lock(&cw_end_mu);
	while (!cw_started) pthread_cond_wait(&cw_end_cv, &cw_end_mu);
	pthread_mutex_unlock(&cw_end_mu);
	cw_cpu0 = thread_cpu_ns();
	// DT_BENCH_DISCARD=1 drops every buffer unwritten: the benchmark's cost
	// of the C recording path alone.
	const char *dv = getenv("DT_BENCH_DISCARD");
	int discard = dv && strcmp(dv, "1") == 0;
	for (;;) {
		void *buf;
		size_t n;
		uint32_t tid;
		int fin, kind;
		int more = dt_q_pop(&buf, &n, &tid, &fin, &kind);
		if (fin) {
			// A trace ended by a signal or MPI_Abort is left to dtrun: the
			// process is about to die.
			const char *ce = getenv("DT_COMPACT_AT_END");
			int compact = cw_deferred && (fin == DT_STOP_FINALIZE || fin == DT_STOP_EXIT) &&
				!(ce && strcmp(ce, "0") == 0) && !dtrun_compacts();
			write_footer(fin);
			pthread_mutex_lock(&cw_end_mu);
			cw_acked = 1;
			cw_compacting = compact;
			pthread_cond_broadcast(&cw_end_cv);
			pthread_mutex_unlock(&cw_end_mu);
			if (compact) {
				// Once the process exits, not in MPI_Finalize: the ranks of a
				// node still in it would share their cores with the
				// compactions of those that left it.
				pthread_mutex_lock(&cw_end_mu);
				while (!cw_exiting) pthread_cond_wait(&cw_end_cv, &cw_end_mu);
				pthread_mutex_unlock(&cw_end_mu);
				char msg[1024] = "no encoder";
				if (!enc_load() || enc_compact(cw_path, msg, sizeof msg) != 0)
					fprintf(stderr, "dtpa tracer: compacting %s: %s (dtrun --compact %s compacts it)\n", cw_path, msg,
						cw_path);
				pthread_mutex_lock(&cw_end_mu);
				cw_compacting = 0;
				pthread_cond_broadcast(&cw_end_cv);
				pthread_mutex_unlock(&cw_end_mu);
			}
			return NULL;
		}
		switch (kind) {
		case DT_Q_SITE: {
			Dtpa__Trace__V1__CallSite *s = malloc(sizeof *s);
			if (s) {
				dtpa__trace__v1__call_site__init(s);
				s->id = tid;
				s->n_pcs = n, s->pcs = buf; // u64 return addresses, innermost first
				buf = NULL;
				pthread_mutex_lock(&cw_mu);
				if (vec_add(&def_sites, s) != 0) buf = s->pcs, free(s);
				pthread_mutex_unlock(&cw_mu);
			}
			free(buf);
			break;
		}
		case DT_Q_COMM: {
			// dt_q_def_comm's layout: u32 local, nm, nr, inter, parent, fid, u64 id, nm + nr × u32.
			uint32_t *p = buf;
			Dtpa__Trace__V1__Communicator *c = malloc(sizeof *c);
			if (c) {
				dtpa__trace__v1__communicator__init(c);
				size_t nm = p[1], nr = p[2];
				c->local = p[0], c->inter = p[3] != 0, c->parent = p[4], c->created_by = p[5];
				memcpy(&c->id, p + 6, 8);
				int range = nm >= 2; // world ranks 0 … n−1 in order: a range (traceformat, WriteDefinitions)
				for (size_t i = 0; range && i < nm; i++) range = p[8 + i] == i;
				if (range) c->members_range = (uint32_t)nm;
				else if (nm && (c->members = malloc(4 * nm))) memcpy(c->members, p + 8, 4 * nm), c->n_members = nm;
				if (nr && (c->remote_members = malloc(4 * nr))) memcpy(c->remote_members, p + 8 + nm, 4 * nr), c->n_remote_members = nr;
				pthread_mutex_lock(&cw_mu);
				if (vec_add(&def_comms, c) != 0) free(c->members), free(c->remote_members), free(c);
				pthread_mutex_unlock(&cw_mu);
			}
			free(buf);
			break;
		}
		case DT_Q_CLOCK:
			write_defs();
			write_frame(K_CLOCK, NULL, 0, buf, n);
			free(buf);
			break;
		case DT_Q_BUF:
		case DT_Q_COPY:
			put32(cw_prefix, tid);
			if (discard) {
			} else if (stopped()) {
				drop(buf, n);
			} else if (cw_defer_left > 0 || !enc_load()) {
				write_records(buf, n);
			} else {
				write_encoded(buf, n);
			}
			if (kind == DT_Q_COPY) free(buf);
			else dt_buf_done(buf);
			break;
		default:
			break;
		}
		if (!more) write_defs(); // definitions reach the disk even if no buffer follows
	}
}

// dtw_finish writes what is queued and the footer, once; later calls
// wait for the first to complete (bounded, so that a stuck writer cannot
// hang the exit).
void dtw_finish(int reason) {
	if (cw_fd < 0) return;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&cw_end_mu);
	int first = !cw_finishing;
	cw_finishing = 1;
	pthread_mutex_unlock(&cw_end_mu);
	if (first) {
		dt_enc_hurry();
		dt_aux_stop();
		dt_q_fin(reason);
	}
	pthread_mutex_lock(&cw_end_mu);
	while (!cw_acked && pthread_cond_timedwait(&cw_end_cv, &cw_end_mu, &until) != ETIMEDOUT) {
	}
	cw_done = 1;
	pthread_mutex_unlock(&cw_end_mu);
}

// dtw_signal runs on the signal watcher (dt_signal.c) when fatal signal
// sig arrived: it writes everything recorded so far while the handler
// waits. The footer names the signal: a rank that crashed (SIGSEGV) and
// those the launcher then ended (SIGTERM) read differently.
void dtw_signal(int sig) {
	pthread_mutex_lock(&cw_mu);
	if (!cw_stopmsg[0]) sig_name(cw_stopmsg, sizeof cw_stopmsg, sig);
	pthread_mutex_unlock(&cw_mu);
	dt_unf unf[CW_UNF];
	int n = dt_unfinished(unf, CW_UNF);
	// A call mpi4py made: its place is the thread's innermost Python
	// frame (as its call site would have been), read as a crashed
	// thread's are; the thread waits inside MPI, or, should the call
	// return meanwhile, a later line is read. A call from C code below
	// Python keeps its return address and gets the Python frames beside
	// it (dt_py_mixed_site's).
	for (int i = 0; i < n; i++) {
		uint64_t a;
		unf[i].npy = 0;
		if (!unf[i].py_ts) continue;
		if (unf[i].pc - dt_py_lo < dt_py_span) {
			if (dt_py_crash_stack(unf[i].py_ts, &a, 1, 1) == 1) unf[i].pc = (uintptr_t)a;
		} else {
			unf[i].npy = dt_py_crash_stack(unf[i].py_ts, unf[i].py, DT_UNF_PY, 1);
		}
	}
	if (__atomic_load_n(&dt_crash.ready, __ATOMIC_ACQUIRE) && !cw_ncrash) {
		cw_ncrash = dt_crash_stack(&dt_crash, cw_crash, DT_CRASH_DEPTH);
		// Before the footer: its files' modules go into the definitions
		// written with it.
		cw_npycrash = dt_py_crash_stack(dt_crash.py_ts, cw_pycrash, DT_CRASH_DEPTH, 1);
	} else if (!cw_nwhere && __atomic_load_n(&dt_where.ready, __ATOMIC_ACQUIRE)) {
		// Where a thread of the program's was (dt_on_signal).
		cw_nwhere = dt_crash_stack(&dt_where, cw_where, DT_CRASH_DEPTH);
		cw_npywhere = dt_py_crash_stack(dt_where.py_ts, cw_pywhere, DT_CRASH_DEPTH, 1);
	}
	dt_finish_state();
	pthread_mutex_lock(&cw_mu);
	if (!cw_nunf) memcpy(cw_unf, unf, sizeof unf[0] * (size_t)n), cw_nunf = n;
	pthread_mutex_unlock(&cw_mu);
	dt_collect();
	dtw_finish(DT_STOP_SIGNAL);
}

// COMPACT_WAIT_S bounds how long the process's exit waits for its trace's
// compaction: one that exits before leaves its
// trace deferred, as dtrun --compact compacts it.
#define COMPACT_WAIT_S 60

// dtw_exit starts the rank's compaction of its trace, if it compacts it
// (dtrun_compacts), and waits for it.
void dtw_exit(void) {
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += COMPACT_WAIT_S;
	pthread_mutex_lock(&cw_end_mu);
	cw_exiting = 1;
	pthread_cond_broadcast(&cw_end_cv);
	while (cw_compacting && pthread_cond_timedwait(&cw_end_cv, &cw_end_mu, &until) != ETIMEDOUT) {
	}
	if (cw_compacting)
		fprintf(stderr, "dtpa tracer: %s not compacted after %ds; exiting (dtrun --compact %s compacts it)\n", cw_path,
			COMPACT_WAIT_S, cw_path);
	pthread_mutex_unlock(&cw_end_mu);
}
