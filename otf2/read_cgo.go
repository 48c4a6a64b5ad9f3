package otf2

/*
#cgo pkg-config: otf2
#include <stdlib.h>
#include "read_cb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// The reader's cgo layer: opening an archive, the global definitions (via
// exported Go callbacks, keyed by a handle since C must not keep Go
// pointers) and the events of one location (decoded from the C record
// buffer of read_cb.c a chunk at a time).

var errorsOnce sync.Once

// libotf2 is not documented as thread-safe: one archive is read at a time.
var libMu sync.Mutex

var (
	handleMu sync.Mutex
	handles  = map[uintptr]*defs{}
	nextH    uintptr
)

func register(d *defs) uintptr {
	handleMu.Lock()
	defer handleMu.Unlock()
	nextH++
	handles[nextH] = d
	return nextH
}

func unregister(h uintptr) {
	handleMu.Lock()
	defer handleMu.Unlock()
	delete(handles, h)
}

func lookup(h C.uintptr_t) *defs {
	handleMu.Lock()
	defer handleMu.Unlock()
	return handles[uintptr(h)]
}

// lastError is libotf2's first message since dt_clear_error on this
// thread (Import locks its goroutine to one), or the error code's
// description.
func lastError(code C.OTF2_ErrorCode) string {
	msg := C.GoString(C.dt_last_error())
	if msg == "" {
		msg = C.GoString(C.OTF2_Error_GetDescription(code))
	}
	return fmt.Sprintf("%s (%s)", msg, C.GoString(C.OTF2_Error_GetName(code)))
}

// archive is an open OTF2 archive.
type archive struct {
	anchor string
	r      *C.OTF2_Reader
	buf    *C.dt_buf
}

// recordsPerRead is how many events one cgo call decodes.
const recordsPerRead = 1 << 14

func openArchive(anchor string) (*archive, error) {
	errorsOnce.Do(func() { C.dt_errors_init() })
	C.dt_clear_error()
	cs := C.CString(anchor)
	defer C.free(unsafe.Pointer(cs))
	r := C.OTF2_Reader_Open(cs)
	if r == nil {
		return nil, fmt.Errorf("%s: libotf2 cannot open the archive: %s", anchor, lastError(C.OTF2_ERROR_FILE_CAN_NOT_OPEN))
	}
	a := &archive{anchor: anchor, r: r}
	if code := C.OTF2_Reader_SetSerialCollectiveCallbacks(r); code != C.OTF2_SUCCESS {
		a.close()
		return nil, fmt.Errorf("%s: %s", anchor, lastError(code))
	}
	a.buf = (*C.dt_buf)(C.calloc(1, C.size_t(unsafe.Sizeof(C.dt_buf{}))))
	a.buf.recs = (*C.dt_rec)(C.calloc(recordsPerRead, C.size_t(unsafe.Sizeof(C.dt_rec{}))))
	a.buf.cap = recordsPerRead
	return a, nil
}

func (a *archive) close() {
	if a.r != nil {
		C.OTF2_Reader_Close(a.r)
		a.r = nil
	}
	if a.buf != nil {
		C.free(unsafe.Pointer(a.buf.recs))
		C.free(unsafe.Pointer(a.buf))
		a.buf = nil
	}
}

// version is the OTF2 version that wrote the archive.
func (a *archive) version() string {
	var ma, mi, bf C.uint8_t
	if C.OTF2_Reader_GetVersion(a.r, &ma, &mi, &bf) != C.OTF2_SUCCESS {
		return "?"
	}
	return fmt.Sprintf("%d.%d.%d", ma, mi, bf)
}

func (a *archive) creator() string {
	var s *C.char
	if C.OTF2_Reader_GetCreator(a.r, &s) != C.OTF2_SUCCESS || s == nil {
		return ""
	}
	out := C.GoString(s)
	C.free(unsafe.Pointer(s))
	return out
}

// chunkSizes are the archive's chunk sizes of event and definition
// files, and whether its files are plain chunks on a POSIX file system
// (not compressed, not in SIONlib containers): those whose framing
// checkFrames can follow.
func (a *archive) chunkSizes() (evt, def uint64, plain bool) {
	var e, d C.uint64_t
	if C.OTF2_Reader_GetChunkSize(a.r, &e, &d) != C.OTF2_SUCCESS {
		return 0, 0, false
	}
	var sub C.OTF2_FileSubstrate
	var comp C.OTF2_Compression
	if C.OTF2_Reader_GetFileSubstrate(a.r, &sub) != C.OTF2_SUCCESS || C.OTF2_Reader_GetCompression(a.r, &comp) != C.OTF2_SUCCESS {
		return uint64(e), uint64(d), false
	}
	return uint64(e), uint64(d), sub == C.OTF2_SUBSTRATE_POSIX && comp == C.OTF2_COMPRESSION_NONE
}

// readDefs reads the global definitions.
func (a *archive) readDefs(defFile string) (*defs, error) {
	d := newDefs()
	h := register(d)
	defer unregister(h)
	C.dt_clear_error()
	var n C.uint64_t
	if code := C.dt_read_global_defs(a.r, C.uintptr_t(h), &n); code != C.OTF2_SUCCESS {
		return nil, fmt.Errorf("%s: reading the global definitions: %s", defFile, lastError(code))
	}
	return d, nil
}

// selectLocations selects the locations whose events will be read and
// opens their files.
func (a *archive) selectLocations(locs []uint64) error {
	for _, l := range locs {
		if code := C.OTF2_Reader_SelectLocation(a.r, C.OTF2_LocationRef(l)); code != C.OTF2_SUCCESS {
			return fmt.Errorf("%s: selecting location %d: %s", a.anchor, l, lastError(code))
		}
	}
	// Local definition files are optional in OTF2: a failure here leaves
	// dt_open_location without them, which it reports per location.
	C.OTF2_Reader_OpenDefFiles(a.r)
	if code := C.OTF2_Reader_OpenEvtFiles(a.r); code != C.OTF2_SUCCESS {
		return fmt.Errorf("%s: opening the event files: %s", a.anchor, lastError(code))
	}
	return nil
}

// rec is one event as read_cb.c records it (dt_rec).
type rec = C.dt_rec

// Record kinds (read_cb.h).
const (
	kEnter          = C.DT_ENTER
	kLeave          = C.DT_LEAVE
	kSend           = C.DT_SEND
	kIsend          = C.DT_ISEND
	kIsendComplete  = C.DT_ISEND_COMPLETE
	kIrecvRequest   = C.DT_IRECV_REQUEST
	kRecv           = C.DT_RECV
	kIrecv          = C.DT_IRECV
	kRequestTest    = C.DT_REQUEST_TEST
	kRequestCancel  = C.DT_REQUEST_CANCELLED
	kCollEnd        = C.DT_COLL_END
	kCommCreate     = C.DT_COMM_CREATE
	kFlush          = C.DT_FLUSH
	kOnOff          = C.DT_ONOFF
	kCallingContext = C.DT_CALLING_CONTEXT
	kProgramEnd     = C.DT_PROGRAM_END
	kNBCRequest     = C.DT_NBC_REQUEST
	kNBCComplete    = C.DT_NBC_COMPLETE
)

// errOpen is returned (wrapped) when a location's local definitions
// could not be read.
var errOpen = errors.New("cannot open")

// readLocation reads the events of location loc in chunks and passes each
// chunk's records to fn, at most limit events: those before the damage in
// a damaged file (checkFrames), beyond which libotf2 would read memory
// that is not the file's. localDefs says whether its local definitions were
// read (without them no clock offsets are applied). Unknown is the number
// of events of record types this libotf2 does not know. An error after
// some chunks leaves what fn got intact.
func (a *archive) readLocation(loc, limit uint64, fn func([]rec) error) (events uint64, localDefs bool, unknown uint64, err error) {
	lr, err := a.openLocation(loc, limit)
	if err != nil {
		return 0, false, 0, err
	}
	defer lr.close()
	for !lr.done && err == nil {
		err = lr.read(recordsPerRead, fn)
	}
	return lr.events, lr.localDefs, lr.unknown, err
}

// locReader reads one location's events chunk by chunk (read), so that
// the locations of a rank's threads can be read in turns.
type locReader struct {
	a         *archive
	er        *C.OTF2_EvtReader
	limit     uint64
	events    uint64 // read so far
	localDefs bool
	unknown   uint64
	done      bool // the end, or an error
}

// openLocation opens location loc's events for reading at most limit of
// them (readLocation).
func (a *archive) openLocation(loc, limit uint64) (*locReader, error) {
	C.dt_clear_error()
	var er *C.OTF2_EvtReader
	var ld C.int
	if code := C.dt_open_location(a.r, C.uint64_t(loc), a.buf, &er, &ld); code != C.OTF2_SUCCESS {
		return nil, fmt.Errorf("%w: %s", errOpen, lastError(code))
	}
	return &locReader{a: a, er: er, limit: limit, localDefs: ld != 0, done: limit == 0}, nil
}

func (lr *locReader) close() { C.OTF2_Reader_CloseEvtReader(lr.a.r, lr.er) }

// read passes the records of the next at most max events to fn. It sets
// done at the end of the events and on an error.
func (lr *locReader) read(max uint64, fn func([]rec) error) error {
	a := lr.a
	C.dt_clear_error()
	a.buf.unknown = C.uint64_t(lr.unknown)
	defer func() { lr.unknown = uint64(a.buf.unknown) }()
	var n C.uint64_t
	want := min(uint64(a.buf.cap), lr.limit-lr.events, max)
	code := C.dt_read_events(lr.er, a.buf, C.uint64_t(want), &n)
	recs := unsafe.Slice(a.buf.recs, int(a.buf.n))
	lr.events += uint64(n)
	lr.done = true
	if len(recs) > 0 {
		if ferr := fn(recs); ferr != nil {
			var dm *damaged
			if errors.As(ferr, &dm) {
				// The events from the damaged one on are not read.
				lr.events -= min(lr.events, uint64(len(recs)-dm.at))
			}
			return ferr
		}
	}
	if code != C.OTF2_SUCCESS {
		return errors.New(lastError(code))
	}
	if a.buf.overflow != 0 {
		return errors.New("event record buffer overflow")
	}
	// Fewer events than asked for: the end. (Reading on from there is
	// not defined; libotf2 3.0 starts over.)
	lr.done = uint64(n) < want || lr.events >= lr.limit
	return nil
}

//export dtpaOtf2Clock
func dtpaOtf2Clock(h C.uintptr_t, res, off, length, realtime C.uint64_t) {
	if d := lookup(h); d != nil {
		d.resolution, d.globalOffset, d.traceLength, d.realtime = uint64(res), uint64(off), uint64(length), uint64(realtime)
		d.haveClock = true
	}
}

//export dtpaOtf2String
func dtpaOtf2String(h C.uintptr_t, id C.uint32_t, s *C.char) {
	if d := lookup(h); d != nil {
		d.strings[uint32(id)] = C.GoString(s)
	}
}

//export dtpaOtf2TreeNode
func dtpaOtf2TreeNode(h C.uintptr_t, id, name, class, parent C.uint32_t) {
	if d := lookup(h); d != nil {
		d.nodes[uint32(id)] = treeNode{name: uint32(name), class: uint32(class), parent: uint32(parent)}
	}
}

//export dtpaOtf2Region
func dtpaOtf2Region(h C.uintptr_t, id, name C.uint32_t, role, paradigm C.uint8_t, file, line C.uint32_t) {
	if d := lookup(h); d != nil {
		d.regions[uint32(id)] = region{name: uint32(name), role: uint8(role), paradigm: uint8(paradigm),
			file: uint32(file), line: uint32(line)}
	}
}

//export dtpaOtf2LocationGroup
func dtpaOtf2LocationGroup(h C.uintptr_t, id, name C.uint32_t, typ C.uint8_t, parent C.uint32_t) {
	if d := lookup(h); d != nil {
		d.locGroups[uint32(id)] = locGroup{name: uint32(name), typ: uint8(typ), parent: uint32(parent)}
	}
}

//export dtpaOtf2Location
func dtpaOtf2Location(h C.uintptr_t, id C.uint64_t, typ C.uint8_t, events C.uint64_t, group C.uint32_t) {
	if d := lookup(h); d != nil {
		d.locations = append(d.locations, location{id: uint64(id), typ: uint8(typ), events: uint64(events), group: uint32(group)})
	}
}

//export dtpaOtf2Group
func dtpaOtf2Group(h C.uintptr_t, id C.uint32_t, typ, paradigm C.uint8_t, n C.uint32_t, members *C.uint64_t) {
	if d := lookup(h); d != nil {
		g := group{typ: uint8(typ), paradigm: uint8(paradigm)}
		if n > 0 && members != nil {
			for _, m := range unsafe.Slice(members, int(n)) {
				g.members = append(g.members, uint64(m))
			}
		}
		d.groups[uint32(id)] = g
	}
}

//export dtpaOtf2Attribute
func dtpaOtf2Attribute(h C.uintptr_t, id, name C.uint32_t, typ C.uint8_t) {
	if d := lookup(h); d != nil {
		d.attrs[uint32(id)] = attribute{name: uint32(name), typ: uint8(typ)}
	}
}

//export dtpaOtf2SourceLocation
func dtpaOtf2SourceLocation(h C.uintptr_t, id, file, line C.uint32_t) {
	if d := lookup(h); d != nil {
		d.scls[uint32(id)] = scl{file: uint32(file), line: uint32(line)}
	}
}

// setAttributes tells the event callbacks which attributes of an ENTER
// record to read (read_cb.c): those of d found by name and type.
func setAttributes(d *defs) {
	C.dt_set_attrs(C.uint32_t(d.attribute("SOURCE_CODE_LOCATION", otf2SCL)),
		C.uint32_t(d.attribute("dtpa::pcontrol_level", otf2Int32)),
		C.uint32_t(d.attribute("dtpa::pcontrol_arg", otf2Int64)),
		C.uint32_t(d.attribute("dtpa::calls", otf2Uint32)),
		C.uint32_t(d.attribute("dtpa::flag", otf2Uint8)),
		C.uint32_t(d.attribute("dtpa::status_source", otf2Int32)),
		C.uint32_t(d.attribute("dtpa::status_tag", otf2Int32)),
		C.uint32_t(d.attribute("dtpa::status_comm", otf2Comm)),
		C.uint32_t(d.attribute("dtpa::bytes", otf2Uint64)),
		C.uint32_t(d.attribute("dtpa::inner_gaps", otf2Uint64)),
		C.uint32_t(d.attribute("dtpa::unfinished", otf2Uint8)))
}

// Attribute bits of an ENTER record (read_cb.h).
const (
	attrBitSCL     = C.DT_ATTR_SCL
	attrBitPcLevel = C.DT_ATTR_PC_LEVEL
	attrBitPcArg   = C.DT_ATTR_PC_ARG
	attrBitCalls   = C.DT_ATTR_CALLS
	attrBitFlag    = C.DT_ATTR_FLAG
	attrBitStatus  = C.DT_ATTR_STATUS
	attrBitBytes   = C.DT_ATTR_BYTES
	attrBitInner   = C.DT_ATTR_INNER
	attrBitUnf     = C.DT_ATTR_UNFINISHED
)

//export dtpaOtf2Comm
func dtpaOtf2Comm(h C.uintptr_t, id, name, grp, parent C.uint32_t) {
	if d := lookup(h); d != nil {
		d.comms = append(d.comms, comm{id: uint32(id), name: uint32(name), group: uint32(grp), parent: uint32(parent)})
	}
}
