// Command enc is lib/libdtpa_enc.so (built with -buildmode=c-shared): the
// Go encoder that the tracer's writer (tracer/rt/dt_cw.c) loads only
// when it needs one, so that a traced rank starts no Go runtime in
// MPI_Init. It needs one when
//   - the rank has written DT_DEFER_MB of raw records and encodes from
//     then on (dtenc_batch), so that a long run's
//     trace does not grow by its raw records' 20–50 bytes per call;
//   - tracing stopped (a write error, MaxTraceSize, TraceBufSize) and the
//     events of the buffers still queued are to be counted as dropped
//     (dtenc_count);
//   - the rank ends on a node other than dtrun's, whose traces dtrun does
//     not compact, and compacts its own (dtenc_compact);
//   - the program runs without dtrun, which would have read the tracer's
//     parameters for it, and tracer.par or the environment sets some
//     (dtenc_params).
//
// Every exported function recovers from panics: a bug here must never
// take the program down.
package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"fmt"
	"os"
	"unsafe"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/params"
	"github.com/dtpa/dtpa/tracer/records"
)

func main() {}

// enc is the encoder of dtenc_batch: one trace's writer, whose frames go
// to sink, and the C buffer that hands the last frame to the caller.
var enc struct {
	w     *traceformat.Writer
	sink  bytes.Buffer
	b     traceformat.Builder
	out   unsafe.Pointer
	outSz int
}

func recovered(where string, rc *C.int) {
	if r := recover(); r != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: internal error in the encoder's %s: %v\n", where, r)
		if rc != nil {
			*rc = -1
		}
	}
}

// prefix reads the records.Prefix that precedes the records of a raw
// records frame (64 bytes, the C writer's cw_prefix with the thread).
func prefix(p unsafe.Pointer) (records.Prefix, error) {
	pre, _, err := records.ParsePrefix(unsafe.Slice((*byte)(p), records.PrefixSize))
	return pre, err
}

// dtenc_batch encodes one thread's buffer of records (n bytes at recs,
// described by the 64-byte prefix pre) as one compressed events frame,
// header included: *frame points at it until the next call, *size is its
// length (0 when the buffer held no event) and *events its events. It
// returns 0, or -1 on an internal error.
//
//export dtenc_batch
func dtenc_batch(pre, recs unsafe.Pointer, n C.size_t, frame **C.uchar, size *C.size_t, events *C.uint64_t) (rc C.int) {
	defer recovered("batch", &rc)
	*size, *events = 0, 0
	p, err := prefix(pre)
	if err != nil {
		return -1
	}
	if enc.w == nil {
		// The frames of a trace whose header is the C writer's: this
		// writer's own preamble and header are dropped.
		w, err := traceformat.NewWriter(&enc.sink, &tracepb.Header{}, records.WriterOptions(os.Getenv("DT_COMPRESS") == "fast"))
		if err != nil {
			return -1
		}
		enc.w = w
	}
	enc.sink.Reset()
	enc.b.Reset()
	if err := records.Decode(&enc.b, unsafe.Slice((*byte)(recs), int(n)), p.Thread, &p.Conv); err != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: internal error: thread %d buffer: %v\n", p.Thread, err)
	}
	if err := enc.w.WriteBatch(&enc.b); err != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: internal error: encoding thread %d buffer: %v\n", p.Thread, err)
		return -1
	}
	f := enc.sink.Bytes()
	if len(f) > enc.outSz {
		o := C.realloc(enc.out, C.size_t(len(f)))
		if o == nil {
			return -1
		}
		enc.out, enc.outSz = o, len(f)
	}
	copy(unsafe.Slice((*byte)(enc.out), len(f)), f)
	*frame = (*C.uchar)(enc.out)
	*size = C.size_t(len(f))
	*events = C.uint64_t(enc.b.Len())
	return 0
}

// dtenc_count returns the number of events in one thread's buffer of
// records (as dtenc_batch), for the footer's count of dropped events.
//
//export dtenc_count
func dtenc_count(pre, recs unsafe.Pointer, n C.size_t) (events C.uint64_t) {
	defer recovered("count", nil)
	p, err := prefix(pre)
	if err != nil {
		return 0
	}
	var b traceformat.Builder
	records.Decode(&b, unsafe.Slice((*byte)(recs), int(n)), p.Thread, &p.Conv)
	return C.uint64_t(b.Len())
}

// dtenc_compact compacts the deferred trace at path (records.Compact) and
// returns 0, or -1 with the reason in msg (at most size bytes, NUL
// included).
//
//export dtenc_compact
func dtenc_compact(path *C.char, msg *C.char, size C.size_t) (rc C.int) {
	defer recovered("compaction", &rc)
	if _, err := records.Compact(C.GoString(path)); err != nil {
		if size > 0 {
			m := unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(size))
			m[copy(m[:len(m)-1], err.Error())] = 0
		}
		return -1
	}
	return 0
}

// dtenc_params reads the tracer's parameters as dtrun does (package
// params: tracer.par in the working directory, then the environment) and
// writes them encoded as the trace header's TracerParams into out (at
// most size bytes); it returns their length, or -1 when they do not fit.
// When the file or a variable is wrong, msg (at most msgSize bytes, NUL
// included) says why and the parameters are the defaults, as under dtrun.
//
//export dtenc_params
func dtenc_params(out unsafe.Pointer, size C.size_t, msg *C.char, msgSize C.size_t) (n C.int) {
	n = -1
	defer recovered("parameters", &n)
	if msgSize > 0 {
		*msg = 0
	}
	wd, _ := os.Getwd()
	p, err := params.Load(wd, os.Getenv)
	if err != nil {
		p = params.Defaults()
		if msgSize > 0 {
			m := unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(msgSize))
			m[copy(m[:len(m)-1], err.Error())] = 0
		}
	}
	b, err := p.Encoded()
	if err != nil || len(b) > int(size) {
		return -1
	}
	copy(unsafe.Slice((*byte)(out), int(size)), b)
	return C.int(len(b))
}
