package otf2

/*
#cgo LDFLAGS: -lopen-trace-format2
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <otf2/otf2.h>

// dtpa_w_ev is one record of a batch the Go side fills and hands over in
// one cgo call (a call per OTF2 record would cost more than the record).
// Fields by kind are in write.go (wev*).
typedef struct {
	uint64_t time, u1, u2, u3;
	int64_t s1;
	uint32_t kind, a, b, c, d;
} dtpa_w_ev;

enum {
	DTPA_W_ENTER = 1, DTPA_W_LEAVE, DTPA_W_SEND, DTPA_W_ISEND, DTPA_W_ISEND_DONE, DTPA_W_IRECV_REQ,
	DTPA_W_IRECV, DTPA_W_RECV, DTPA_W_COLL_BEGIN, DTPA_W_COLL_END, DTPA_W_CANCELLED,
	DTPA_W_COMM_CREATE, DTPA_W_NBC_REQ, DTPA_W_NBC_DONE
};

// Enter flags (u1).
// DTPA_W_STATUS: the status of MPI_Probe, source and tag in u3 (low and
// high 32 bits), communicator in d.
// DTPA_W_BYTES: the byte count of a send or receive to MPI_PROC_NULL
// (which has no message record), in s1.
// DTPA_W_INNER: a folded run's inner gaps (ticks), in u3 (never with
// DTPA_W_STATUS: write.go).
// DTPA_W_UNFINISHED: a call in progress when the process ended, how its
// Leave was placed in c (never with DTPA_W_CALLS: write.go, unfinished).
enum {
	DTPA_W_SCL = 1, DTPA_W_CALLS = 2, DTPA_W_PCONTROL = 4, DTPA_W_FLAG = 8, DTPA_W_STATUS = 16, DTPA_W_BYTES = 32,
	DTPA_W_INNER = 64, DTPA_W_UNFINISHED = 128
};

// Attribute ids, fixed by the writer (write.go, attr*).
enum {
	DTPA_W_ATTR_SCL = 0, DTPA_W_ATTR_CALLS, DTPA_W_ATTR_PC_LEVEL, DTPA_W_ATTR_PC_ARG, DTPA_W_ATTR_FLAG,
	DTPA_W_ATTR_ST_SOURCE, DTPA_W_ATTR_ST_TAG, DTPA_W_ATTR_ST_COMM, DTPA_W_ATTR_BYTES, DTPA_W_ATTR_INNER_GAPS,
	DTPA_W_ATTR_UNFINISHED
};

// dtpa_w_room is what the pre-flush callback checks before libotf2 writes
// a buffer: libotf2 crashes when a write of its fails (a full disk: it
// writes the buffer it freed again as it closes the file), so a flush
// that may not fit is not made, and the export fails cleanly instead.
// The writer writes one location's events at a time, so the chunks in
// use (counted by the memory callbacks, below) bound what a flush writes.
// A refused flush's records are dropped and the archive closes without an
// error: the Go side fails the export (cArchive.close).
typedef struct {
	char dir[4096];
	int nospace;
	unsigned long long evt_chunks, def_chunks; // chunks in use
	void* writer;                              // the event writer last flushed,
	uint64_t events;                           // its events then
	unsigned long long need;                   // what the refused flush needed
} dtpa_w_room;

#define dtpa_w_evt_chunk (1ull << 20)
#define dtpa_w_def_chunk (4ull << 20)

// What a flush writes, at most: the chunks in use, or fewer bytes when
// the records since the last flush are fewer (an event record of this
// writer takes well under 160 bytes, a global definition 1 KiB on average
// even with long names), and a margin for the file's header and the file
// system's own blocks. Local definition files are empty here.
static unsigned long long dtpa_w_need(dtpa_w_room* r, OTF2_FileType t, void* c) {
	unsigned long long need = 0;
	uint64_t n = 0;
	switch (t) {
	case OTF2_FILETYPE_EVENTS:
		need = r->evt_chunks * dtpa_w_evt_chunk;
		if (OTF2_EvtWriter_GetNumberOfEvents(c, &n) == OTF2_SUCCESS) {
			uint64_t since = c == r->writer && n >= r->events ? n - r->events : n;
			if (since * 160 < need) need = since * 160;
			r->writer = c, r->events = n;
		}
		break;
	case OTF2_FILETYPE_GLOBAL_DEFS:
		need = r->def_chunks * dtpa_w_def_chunk;
		if (OTF2_GlobalDefWriter_GetNumberOfDefinitions(c, &n) == OTF2_SUCCESS && n * 1024 < need) need = n * 1024;
		break;
	default:
		break;
	}
	return need + (64 << 10);
}

static OTF2_FlushType dtpa_w_pre_flush(void* u, OTF2_FileType t, OTF2_LocationRef l, void* c, bool final) {
	dtpa_w_room* r = u;
	if (r->nospace) return OTF2_NO_FLUSH;
	unsigned long long need = dtpa_w_need(r, t, c);
	struct statvfs st;
	if (statvfs(r->dir, &st) == 0 && (unsigned long long)st.f_bavail * st.f_frsize < need) {
		r->nospace = 1;
		r->need = need;
		return OTF2_NO_FLUSH;
	}
	return OTF2_FLUSH;
}

// No post-flush callback: OTF2 then writes no BufferFlush records, which
// would be measurement artefacts of the export, not of the program.
static OTF2_FlushCallbacks dtpa_w_flush = { dtpa_w_pre_flush, NULL };

// Event buffers get at most dtpa_w_pool_chunks chunks of memory each: when
// they are used up, libotf2 flushes the buffer to its file and frees them
// (dtpa_w_free_all), so that a location's events never sit in memory
// whole (libotf2's own pool would hold 128 MiB per writer).
#define dtpa_w_pool_chunks 8
// The chunks of an event buffer are kept for reuse after a flush (have
// of them allocated, n in use).
typedef struct { void* chunk[dtpa_w_pool_chunks]; int n, have; int unbounded; void** more; int nmore; } dtpa_w_pool;

static void* dtpa_w_alloc_chunk(void* u, OTF2_FileType t, OTF2_LocationRef l, void** per, uint64_t size);

static void* dtpa_w_alloc(void* u, OTF2_FileType t, OTF2_LocationRef l, void** per, uint64_t size) {
	void* c = dtpa_w_alloc_chunk(u, t, l, per, size);
	dtpa_w_room* r = u;
	if (c && r) {
		if (t == OTF2_FILETYPE_EVENTS) r->evt_chunks++;
		else r->def_chunks++;
	}
	return c;
}

static void* dtpa_w_alloc_chunk(void* u, OTF2_FileType t, OTF2_LocationRef l, void** per, uint64_t size) {
	dtpa_w_pool* p = *per;
	if (!p) {
		p = calloc(1, sizeof *p);
		if (!p) return NULL;
		p->unbounded = t != OTF2_FILETYPE_EVENTS;
		*per = p;
	}
	if (p->n == dtpa_w_pool_chunks) {
		if (!p->unbounded) return NULL; // libotf2 flushes, then frees
		void** m = realloc(p->more, (p->nmore + 1) * sizeof *m);
		if (!m) return NULL;
		p->more = m;
		void* c = malloc(size);
		if (!c) return NULL;
		p->more[p->nmore++] = c;
		return c;
	}
	if (p->n < p->have) return p->chunk[p->n++];
	void* c = malloc(size);
	if (!c) return NULL;
	p->chunk[p->n++] = c;
	p->have = p->n;
	return c;
}

static void dtpa_w_free_all(void* u, OTF2_FileType t, OTF2_LocationRef l, void** per, bool final) {
	dtpa_w_room* r = u;
	if (r) {
		if (t == OTF2_FILETYPE_EVENTS) r->evt_chunks = 0;
		else r->def_chunks = 0;
	}
	dtpa_w_pool* p = *per;
	if (!p) return;
	for (int i = 0; i < p->nmore; i++) free(p->more[i]);
	free(p->more);
	p->n = p->nmore = 0;
	p->more = NULL;
	if (final) {
		for (int i = 0; i < p->have; i++) free(p->chunk[i]);
		free(p);
		*per = NULL;
	}
}

static OTF2_MemoryCallbacks dtpa_w_memory = { dtpa_w_alloc, dtpa_w_free_all };

static OTF2_Archive* dtpa_w_open(const char* dir, const char* name, dtpa_w_room* room, OTF2_ErrorCode* err) {
	OTF2_Archive* a = OTF2_Archive_Open(dir, name, OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
		OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!a) { *err = OTF2_ERROR_INVALID; return NULL; }
	*err = OTF2_Archive_SetFlushCallbacks(a, &dtpa_w_flush, room);
	if (*err == OTF2_SUCCESS) *err = OTF2_Archive_SetMemoryCallbacks(a, &dtpa_w_memory, room);
	if (*err == OTF2_SUCCESS) *err = OTF2_Archive_SetSerialCollectiveCallbacks(a);
	if (*err == OTF2_SUCCESS) *err = OTF2_Archive_SetCreator(a, "dtpa");
	if (*err == OTF2_SUCCESS) *err = OTF2_Archive_OpenEvtFiles(a);
	return a;
}

// dtpa_w_events writes n records; it stops at the first error.
static OTF2_ErrorCode dtpa_w_events(OTF2_EvtWriter* w, OTF2_AttributeList* al, const dtpa_w_ev* ev, int n) {
	OTF2_ErrorCode e = OTF2_SUCCESS;
	for (int i = 0; i < n && e == OTF2_SUCCESS; i++) {
		const dtpa_w_ev* v = &ev[i];
		switch (v->kind) {
		case DTPA_W_ENTER: {
			OTF2_AttributeList* l = NULL;
			if (v->u1) {
				l = al;
				if (v->u1 & DTPA_W_SCL)
					OTF2_AttributeList_AddSourceCodeLocationRef(l, DTPA_W_ATTR_SCL, v->b);
				if (v->u1 & DTPA_W_CALLS)
					OTF2_AttributeList_AddUint32(l, DTPA_W_ATTR_CALLS, v->c);
				if (v->u1 & DTPA_W_PCONTROL) {
					OTF2_AttributeList_AddInt32(l, DTPA_W_ATTR_PC_LEVEL, (int32_t)v->d);
					OTF2_AttributeList_AddInt64(l, DTPA_W_ATTR_PC_ARG, v->s1);
				}
				if (v->u1 & DTPA_W_FLAG)
					OTF2_AttributeList_AddUint8(l, DTPA_W_ATTR_FLAG, (uint8_t)v->u2);
				if (v->u1 & DTPA_W_STATUS) {
					OTF2_AttributeList_AddInt32(l, DTPA_W_ATTR_ST_SOURCE, (int32_t)(uint32_t)v->u3);
					OTF2_AttributeList_AddInt32(l, DTPA_W_ATTR_ST_TAG, (int32_t)(uint32_t)(v->u3 >> 32));
					OTF2_AttributeList_AddCommRef(l, DTPA_W_ATTR_ST_COMM, v->d);
				}
				if (v->u1 & DTPA_W_BYTES)
					OTF2_AttributeList_AddUint64(l, DTPA_W_ATTR_BYTES, (uint64_t)v->s1);
				if (v->u1 & DTPA_W_INNER)
					OTF2_AttributeList_AddUint64(l, DTPA_W_ATTR_INNER_GAPS, v->u3);
				if (v->u1 & DTPA_W_UNFINISHED)
					OTF2_AttributeList_AddUint8(l, DTPA_W_ATTR_UNFINISHED, (uint8_t)v->c);
			}
			e = OTF2_EvtWriter_Enter(w, l, v->time, v->a);
			break;
		}
		case DTPA_W_LEAVE:
			e = OTF2_EvtWriter_Leave(w, NULL, v->time, v->a);
			break;
		case DTPA_W_SEND:
			e = OTF2_EvtWriter_MpiSend(w, NULL, v->time, v->a, v->b, v->c, v->u1);
			break;
		case DTPA_W_ISEND:
			e = OTF2_EvtWriter_MpiIsend(w, NULL, v->time, v->a, v->b, v->c, v->u1, v->u2);
			break;
		case DTPA_W_ISEND_DONE:
			e = OTF2_EvtWriter_MpiIsendComplete(w, NULL, v->time, v->u2);
			break;
		case DTPA_W_IRECV_REQ:
			e = OTF2_EvtWriter_MpiIrecvRequest(w, NULL, v->time, v->u2);
			break;
		case DTPA_W_IRECV:
			e = OTF2_EvtWriter_MpiIrecv(w, NULL, v->time, v->a, v->b, v->c, v->u1, v->u2);
			break;
		case DTPA_W_RECV:
			e = OTF2_EvtWriter_MpiRecv(w, NULL, v->time, v->a, v->b, v->c, v->u1);
			break;
		case DTPA_W_COLL_BEGIN:
			e = OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, v->time);
			break;
		case DTPA_W_COLL_END:
			e = OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, v->time, (OTF2_CollectiveOp)v->d, v->b, v->a, v->u1, v->u3);
			break;
		case DTPA_W_CANCELLED:
			e = OTF2_EvtWriter_MpiRequestCancelled(w, NULL, v->time, v->u2);
			break;
		case DTPA_W_COMM_CREATE:
			e = OTF2_EvtWriter_CommCreate(w, NULL, v->time, v->b);
			break;
		case DTPA_W_NBC_REQ:
			e = OTF2_EvtWriter_NonBlockingCollectiveRequest(w, NULL, v->time, v->u2);
			break;
		case DTPA_W_NBC_DONE:
			e = OTF2_EvtWriter_NonBlockingCollectiveComplete(w, NULL, v->time, (OTF2_CollectiveOp)v->d, v->b, v->a,
				v->u1, v->u3, v->u2);
			break;
		default:
			e = OTF2_ERROR_INVALID_ARGUMENT;
		}
	}
	return e;
}

static OTF2_ErrorCode dtpa_w_group(OTF2_GlobalDefWriter* w, uint32_t self, uint32_t name, uint8_t type,
	uint32_t n, const uint64_t* members) {
	return OTF2_GlobalDefWriter_WriteGroup(w, self, name, type, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, n, members);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"unsafe"
)

// cArchive is an OTF2 archive open for writing: the thin layer over
// libotf2 that the rest of the writer (write.go) calls; nothing else in
// the writer touches C.
type cArchive struct {
	a    *C.OTF2_Archive
	al   *C.OTF2_AttributeList
	gdw  *C.OTF2_GlobalDefWriter
	dir  string
	room *C.dtpa_w_room // the pre-flush check's (C memory: libotf2 keeps it)
	full bool           // a flush was refused for want of room,
	need uint64         // of this many bytes
}

// otf2Err turns a libotf2 error code into an error (nil on success).
func otf2Err(what string, e C.OTF2_ErrorCode) error {
	if e == C.OTF2_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: %s (%s)", what, C.GoString(C.OTF2_Error_GetName(e)), C.GoString(C.OTF2_Error_GetDescription(e)))
}

// createArchive opens dir/name.otf2 for writing, with its event files.
func createArchive(dir, name string) (*cArchive, error) {
	cd, cn := C.CString(dir), C.CString(name)
	defer C.free(unsafe.Pointer(cd))
	defer C.free(unsafe.Pointer(cn))
	// The archive's directory does not exist yet: its parent's file
	// system is the one whose room the flushes check.
	parent := C.CString(filepath.Dir(dir))
	defer C.free(unsafe.Pointer(parent))
	room := (*C.dtpa_w_room)(C.calloc(1, C.sizeof_dtpa_w_room))
	C.strncpy(&room.dir[0], parent, C.size_t(len(room.dir)-1))
	var e C.OTF2_ErrorCode
	a := C.dtpa_w_open(cd, cn, room, &e)
	if a == nil {
		C.free(unsafe.Pointer(room))
		return nil, fmt.Errorf("creating the OTF2 archive in %s failed", dir)
	}
	ca := &cArchive{a: a, dir: dir, al: C.OTF2_AttributeList_New(), room: room}
	if err := otf2Err("opening the OTF2 archive in "+dir, e); err != nil {
		ca.abort()
		return nil, err
	}
	return ca, nil
}

// abort closes the archive after a failure (the files stay incomplete).
func (ca *cArchive) abort() {
	if ca.al != nil {
		C.OTF2_AttributeList_Delete(ca.al)
		ca.al = nil
	}
	if ca.a != nil {
		C.OTF2_Archive_Close(ca.a)
		ca.a = nil
	}
	ca.releaseRoom()
}

// releaseRoom frees the pre-flush check's memory once the archive is
// closed, keeping its verdict.
func (ca *cArchive) releaseRoom() {
	if ca.room != nil {
		ca.full, ca.need = ca.room.nospace != 0, uint64(ca.room.need)
		C.free(unsafe.Pointer(ca.room))
		ca.room = nil
	}
}

// explain is err, or why it happened when a flush found no room for the
// archive (dtpa_w_pre_flush).
func (ca *cArchive) explain(err error) error {
	if ca.room != nil && ca.room.nospace != 0 {
		ca.full, ca.need = true, uint64(ca.room.need)
	}
	if !ca.full {
		return err
	}
	// libotf2's own error, if any, follows from the refused flush.
	return fmt.Errorf("otf2 export: no room for the archive on the file system of %s: its next write needed %.1f MiB",
		filepath.Dir(ca.dir), float64(ca.need)/(1<<20))
}

// cEvtWriter writes the events of one location.
type cEvtWriter struct {
	ca *cArchive
	w  *C.OTF2_EvtWriter
}

func (ca *cArchive) evtWriter(loc uint64) (*cEvtWriter, error) {
	w := C.OTF2_Archive_GetEvtWriter(ca.a, C.OTF2_LocationRef(loc))
	if w == nil {
		return nil, fmt.Errorf("OTF2: no event writer for location %d", loc)
	}
	return &cEvtWriter{ca: ca, w: w}, nil
}

// write hands a batch of records to libotf2.
func (w *cEvtWriter) write(evs []wev) error {
	if len(evs) == 0 {
		return nil
	}
	e := C.dtpa_w_events(w.w, w.ca.al, (*C.dtpa_w_ev)(unsafe.Pointer(&evs[0])), C.int(len(evs)))
	return otf2Err("writing OTF2 events", e)
}

func (w *cEvtWriter) close() error {
	return otf2Err("closing an OTF2 event writer", C.OTF2_Archive_CloseEvtWriter(w.ca.a, w.w))
}

// closeEvents closes the event files and writes the (empty) local
// definition files of the locations, which readers expect one per
// location.
func (ca *cArchive) closeEvents(locs []uint64) error {
	if err := otf2Err("closing the OTF2 event files", C.OTF2_Archive_CloseEvtFiles(ca.a)); err != nil {
		return err
	}
	if err := otf2Err("opening the OTF2 definition files", C.OTF2_Archive_OpenDefFiles(ca.a)); err != nil {
		return err
	}
	for _, l := range locs {
		dw := C.OTF2_Archive_GetDefWriter(ca.a, C.OTF2_LocationRef(l))
		if dw == nil {
			return fmt.Errorf("OTF2: no definition writer for location %d", l)
		}
		if err := otf2Err("closing an OTF2 definition writer", C.OTF2_Archive_CloseDefWriter(ca.a, dw)); err != nil {
			return err
		}
	}
	if err := otf2Err("closing the OTF2 definition files", C.OTF2_Archive_CloseDefFiles(ca.a)); err != nil {
		return err
	}
	ca.gdw = C.OTF2_Archive_GetGlobalDefWriter(ca.a)
	if ca.gdw == nil {
		return errors.New("OTF2: no global definition writer")
	}
	return nil
}

// close finishes the archive: the anchor and global definition files.
func (ca *cArchive) close() error {
	C.OTF2_AttributeList_Delete(ca.al)
	ca.al = nil
	if ca.gdw != nil {
		if err := otf2Err("closing the OTF2 global definitions", C.OTF2_Archive_CloseGlobalDefWriter(ca.a, ca.gdw)); err != nil {
			return err
		}
	}
	e := C.OTF2_Archive_Close(ca.a)
	ca.a = nil
	ca.releaseRoom()
	if ca.full {
		// The refused flushes' records were dropped: libotf2 closes
		// the archive without them and without an error.
		return ca.explain(nil)
	}
	return otf2Err("closing the OTF2 archive", e)
}

// crashMarks writes the ranks' crashes as markers, which Vampir shows on
// their locations' timelines (otf2-marker lists them): definitions of
// group "dtpa", category "Crash", severity high (0), and category "End",
// severity medium (1: how a process that did not crash ended otherwise),
// and a marker per crash or end, its text the report's lines of it.
func (ca *cArchive) crashMarks(marks []crashMark) error {
	mw := C.OTF2_Archive_GetMarkerWriter(ca.a)
	if mw == nil {
		return errors.New("OTF2: no marker writer")
	}
	g := C.CString("dtpa")
	defer C.free(unsafe.Pointer(g))
	for i, d := range []struct {
		cat string
		sev C.OTF2_MarkerSeverity
	}{{"Crash", C.OTF2_SEVERITY_HIGH}, {"End", C.OTF2_SEVERITY_MEDIUM}} {
		cat := C.CString(d.cat)
		err := otf2Err("OTF2 marker definition", C.OTF2_MarkerWriter_WriteDefMarker(mw, C.OTF2_MarkerRef(i), g, cat, d.sev))
		C.free(unsafe.Pointer(cat))
		if err != nil {
			return err
		}
	}
	for _, m := range marks {
		scope, ref := C.OTF2_MarkerScope(C.OTF2_MARKER_SCOPE_LOCATION_GROUP), C.uint64_t(m.rank)
		if m.onLoc {
			scope, ref = C.OTF2_MarkerScope(C.OTF2_MARKER_SCOPE_LOCATION), C.uint64_t(m.loc)
		}
		text := C.CString(m.text)
		def := C.OTF2_MarkerRef(0)
		if m.end {
			def = 1
		}
		err := otf2Err("OTF2 marker", C.OTF2_MarkerWriter_WriteMarker(mw, C.OTF2_TimeStamp(m.time), 0, def, scope, ref, text))
		C.free(unsafe.Pointer(text))
		if err != nil {
			return err
		}
	}
	return otf2Err("closing the OTF2 marker file", C.OTF2_Archive_CloseMarkerWriter(ca.a, mw))
}

// Global definitions, in the order the writer emits them (write_defs.go).

func (ca *cArchive) defString(id uint32, s string) error {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return otf2Err("OTF2 string definition", C.OTF2_GlobalDefWriter_WriteString(ca.gdw, C.OTF2_StringRef(id), cs))
}

func (ca *cArchive) defClock(resolution, offset, length, realtime uint64) error {
	return otf2Err("OTF2 clock properties", C.OTF2_GlobalDefWriter_WriteClockProperties(ca.gdw,
		C.uint64_t(resolution), C.uint64_t(offset), C.uint64_t(length), C.uint64_t(realtime)))
}

func (ca *cArchive) defParadigmMPI(name uint32) error {
	return otf2Err("OTF2 paradigm definition", C.OTF2_GlobalDefWriter_WriteParadigm(ca.gdw, C.OTF2_PARADIGM_MPI,
		C.OTF2_StringRef(name), C.OTF2_PARADIGM_CLASS_PROCESS))
}

func (ca *cArchive) defSystemTreeNode(id, name, class, parent uint32) error {
	return otf2Err("OTF2 system tree node definition", C.OTF2_GlobalDefWriter_WriteSystemTreeNode(ca.gdw,
		C.OTF2_SystemTreeNodeRef(id), C.OTF2_StringRef(name), C.OTF2_StringRef(class), C.OTF2_SystemTreeNodeRef(parent)))
}

func (ca *cArchive) defLocationGroup(id, name, node uint32) error {
	return otf2Err("OTF2 location group definition", C.OTF2_GlobalDefWriter_WriteLocationGroup(ca.gdw,
		C.OTF2_LocationGroupRef(id), C.OTF2_StringRef(name), C.OTF2_LOCATION_GROUP_TYPE_PROCESS,
		C.OTF2_SystemTreeNodeRef(node), C.OTF2_UNDEFINED_LOCATION_GROUP))
}

func (ca *cArchive) defLocation(id uint64, name uint32, events uint64, group uint32) error {
	return otf2Err("OTF2 location definition", C.OTF2_GlobalDefWriter_WriteLocation(ca.gdw,
		C.OTF2_LocationRef(id), C.OTF2_StringRef(name), C.OTF2_LOCATION_TYPE_CPU_THREAD, C.uint64_t(events),
		C.OTF2_LocationGroupRef(group)))
}

// Region roles (OTF2_RegionRole), as Score-P gives them to MPI functions.
const (
	roleFunction    = C.OTF2_REGION_ROLE_FUNCTION
	roleBarrier     = C.OTF2_REGION_ROLE_BARRIER
	roleOne2All     = C.OTF2_REGION_ROLE_COLL_ONE2ALL
	roleAll2One     = C.OTF2_REGION_ROLE_COLL_ALL2ONE
	roleAll2All     = C.OTF2_REGION_ROLE_COLL_ALL2ALL
	roleCollOther   = C.OTF2_REGION_ROLE_COLL_OTHER
	rolePoint2Point = C.OTF2_REGION_ROLE_POINT2POINT
)

func (ca *cArchive) defRegion(id, name, file uint32, role int) error {
	return otf2Err("OTF2 region definition", C.OTF2_GlobalDefWriter_WriteRegion(ca.gdw, C.OTF2_RegionRef(id),
		C.OTF2_StringRef(name), C.OTF2_StringRef(name), C.OTF2_StringRef(0), C.OTF2_RegionRole(role),
		C.OTF2_PARADIGM_MPI, C.OTF2_REGION_FLAG_NONE, C.OTF2_StringRef(file), 0, 0))
}

// Group types (OTF2_GroupType).
const (
	wGroupCommLocations = C.OTF2_GROUP_TYPE_COMM_LOCATIONS
	wGroupComm          = C.OTF2_GROUP_TYPE_COMM_GROUP
	wGroupCommSelf      = C.OTF2_GROUP_TYPE_COMM_SELF
)

func (ca *cArchive) defGroup(id, name uint32, typ int, members []uint64) error {
	var p *C.uint64_t
	if len(members) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&members[0]))
	}
	return otf2Err("OTF2 group definition", C.dtpa_w_group(ca.gdw, C.uint32_t(id), C.uint32_t(name), C.uint8_t(typ),
		C.uint32_t(len(members)), p))
}

// undefinedComm is OTF2_UNDEFINED_COMM (no parent).
const undefinedComm = uint32(C.OTF2_UNDEFINED_COMM)

// defComm defines a communicator; created says that CommCreate records
// name it (OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS).
func (ca *cArchive) defComm(id, name, group, parent uint32, created bool) error {
	var flags C.OTF2_CommFlag = C.OTF2_COMM_FLAG_NONE
	if created {
		flags = C.OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS
	}
	return otf2Err("OTF2 communicator definition", C.OTF2_GlobalDefWriter_WriteComm(ca.gdw, C.OTF2_CommRef(id),
		C.OTF2_StringRef(name), C.OTF2_GroupRef(group), C.OTF2_CommRef(parent), flags))
}

// defInterComm defines an intercommunicator between two groups of world
// ranks.
func (ca *cArchive) defInterComm(id, name, groupA, groupB uint32) error {
	return otf2Err("OTF2 intercommunicator definition", C.OTF2_GlobalDefWriter_WriteInterComm(ca.gdw, C.OTF2_CommRef(id),
		C.OTF2_StringRef(name), C.OTF2_GroupRef(groupA), C.OTF2_GroupRef(groupB), C.OTF2_UNDEFINED_COMM, C.OTF2_COMM_FLAG_NONE))
}

// Attribute types (OTF2_Type).
const (
	typeUint8  = C.OTF2_TYPE_UINT8
	typeUint32 = C.OTF2_TYPE_UINT32
	typeUint64 = C.OTF2_TYPE_UINT64
	typeInt32  = C.OTF2_TYPE_INT32
	typeInt64  = C.OTF2_TYPE_INT64
	typeSCL    = C.OTF2_TYPE_SOURCE_CODE_LOCATION
	typeComm   = C.OTF2_TYPE_COMM
)

func (ca *cArchive) defAttribute(id, name, desc uint32, typ int) error {
	return otf2Err("OTF2 attribute definition", C.OTF2_GlobalDefWriter_WriteAttribute(ca.gdw, C.OTF2_AttributeRef(id),
		C.OTF2_StringRef(name), C.OTF2_StringRef(desc), C.OTF2_Type(typ)))
}

func (ca *cArchive) defSourceCodeLocation(id, file, line uint32) error {
	return otf2Err("OTF2 source code location definition", C.OTF2_GlobalDefWriter_WriteSourceCodeLocation(ca.gdw,
		C.OTF2_SourceCodeLocationRef(id), C.OTF2_StringRef(file), C.uint32_t(line)))
}

// undefinedU32 is OTF2_UNDEFINED_UINT32: no root of a collective, no
// source code location.
const undefinedU32 = uint32(C.OTF2_UNDEFINED_UINT32)

// Attribute ids the records use (the enum of the C preamble).
const (
	attrSCL     = C.DTPA_W_ATTR_SCL
	attrCalls   = C.DTPA_W_ATTR_CALLS
	attrPcLevel = C.DTPA_W_ATTR_PC_LEVEL
	attrPcArg   = C.DTPA_W_ATTR_PC_ARG
	attrFlag    = C.DTPA_W_ATTR_FLAG
	attrStSrc   = C.DTPA_W_ATTR_ST_SOURCE
	attrStTag   = C.DTPA_W_ATTR_ST_TAG
	attrStComm  = C.DTPA_W_ATTR_ST_COMM
	attrBytes   = C.DTPA_W_ATTR_BYTES
	attrInner   = C.DTPA_W_ATTR_INNER_GAPS
	attrUnf     = C.DTPA_W_ATTR_UNFINISHED
)

// wev is the Go image of dtpa_w_ev.
type wev = C.dtpa_w_ev

// Record kinds and Enter flags (the enums of the C preamble).
const (
	wevEnter      = C.DTPA_W_ENTER
	wevLeave      = C.DTPA_W_LEAVE
	wevSend       = C.DTPA_W_SEND
	wevIsend      = C.DTPA_W_ISEND
	wevIsendDone  = C.DTPA_W_ISEND_DONE
	wevIrecvReq   = C.DTPA_W_IRECV_REQ
	wevIrecv      = C.DTPA_W_IRECV
	wevRecv       = C.DTPA_W_RECV
	wevCollBegin  = C.DTPA_W_COLL_BEGIN
	wevCollEnd    = C.DTPA_W_COLL_END
	wevCancelled  = C.DTPA_W_CANCELLED
	wevCommCreate = C.DTPA_W_COMM_CREATE
	wevNBCReq     = C.DTPA_W_NBC_REQ
	wevNBCDone    = C.DTPA_W_NBC_DONE

	enterSCL      = C.DTPA_W_SCL
	enterCalls    = C.DTPA_W_CALLS
	enterPcontrol = C.DTPA_W_PCONTROL
	enterFlag     = C.DTPA_W_FLAG
	enterStatus   = C.DTPA_W_STATUS
	enterBytes    = C.DTPA_W_BYTES
	enterInner    = C.DTPA_W_INNER
	enterUnf      = C.DTPA_W_UNFINISHED
)

// Collective operations (OTF2_CollectiveOp) by the base name of the MPI
// function (mpifunc.Base).
var collOps = map[string]uint32{
	"Barrier": C.OTF2_COLLECTIVE_OP_BARRIER, "Bcast": C.OTF2_COLLECTIVE_OP_BCAST,
	"Gather": C.OTF2_COLLECTIVE_OP_GATHER, "Gatherv": C.OTF2_COLLECTIVE_OP_GATHERV,
	"Scatter": C.OTF2_COLLECTIVE_OP_SCATTER, "Scatterv": C.OTF2_COLLECTIVE_OP_SCATTERV,
	"Allgather": C.OTF2_COLLECTIVE_OP_ALLGATHER, "Allgatherv": C.OTF2_COLLECTIVE_OP_ALLGATHERV,
	"Alltoall": C.OTF2_COLLECTIVE_OP_ALLTOALL, "Alltoallv": C.OTF2_COLLECTIVE_OP_ALLTOALLV,
	"Alltoallw": C.OTF2_COLLECTIVE_OP_ALLTOALLW, "Allreduce": C.OTF2_COLLECTIVE_OP_ALLREDUCE,
	"Reduce": C.OTF2_COLLECTIVE_OP_REDUCE, "Reduce_scatter": C.OTF2_COLLECTIVE_OP_REDUCE_SCATTER,
	"Scan": C.OTF2_COLLECTIVE_OP_SCAN, "Exscan": C.OTF2_COLLECTIVE_OP_EXSCAN,
	"Reduce_scatter_block": C.OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK,
}

// Conversions to the field types of wev.
func c64(v uint64) C.uint64_t { return C.uint64_t(v) }
func c32(v uint32) C.uint32_t { return C.uint32_t(v) }
func cs64(v int64) C.int64_t  { return C.int64_t(v) }

// undefinedTimestamp is OTF2_UNDEFINED_TIMESTAMP (no calendar time).
const undefinedTimestamp = uint64(C.OTF2_UNDEFINED_TIMESTAMP)
