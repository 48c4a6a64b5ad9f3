//go:build dtpa_openmpi || dtpa_mpich

// Command golib is the dtpa tracer library (built with -buildmode=c-shared,
// once per MPI ABI: tags dtpa_openmpi and dtpa_mpich). Its C part (dt*.c and
// the generated wrappers, which tracer.mk compiles and links in as an
// archive: cgo compiles only the preambles) records every MPI call into
// per-thread buffers;
// this Go part takes full buffers by ownership, encodes them as
// traceformat batches, compresses and writes them from a background
// goroutine, and writes definitions, clock-sync samples and the footer.
//
// Every exported function recovers from panics (a tracer bug must never
// take the program down) and nothing here touches signal handling: the C
// part installs and chains the handlers.
package main

/*
#cgo CFLAGS: -O2 -fno-omit-frame-pointer -fno-plt -Wno-unused-variable -Wno-unused-but-set-variable -Wno-deprecated-declarations
#include "dt_wrap.h"
#include "dt_rt.h"
size_t dt_buf_chunk(void);
int dt_buf_slots(void);
void dt_spill_setup(char *base, int n, int fd, long off);
*/
import "C"

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/params"
	"github.com/dtpa/dtpa/tracer/records"
)

func main() {}

// tr is the process's tracer; nil until dtgo_init succeeded.
var tr *tracer

func recovered(where string) {
	if r := recover(); r != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: internal error in %s: %v (tracing continues best-effort)\n", where, r)
	}
}

//export dtgo_params
func dtgo_params(p *C.dt_params) {
	defer recovered("params")
	wd, _ := os.Getwd()
	pp, err := params.Load(wd, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: %v; using defaults\n", err)
		pp = params.Defaults()
	}
	loadedParams = pp
	p.user_stack_size = C.int(pp.UserStackSize)
	p.max_trace_mb = C.int64_t(pp.MaxTraceSize)
	p.trace_buf_size = C.uint64_t(pp.TraceBufSize)
}

var loadedParams = params.Defaults()

// discard (DT_BENCH_DISCARD=1) drops every buffer unread: the benchmark uses
// it to tell the cost of the C recording path from the Go encoder's.
var discard = os.Getenv("DT_BENCH_DISCARD") == "1"

// dtgo_init creates the trace but for its header (dtgo_start). spawn is
// the run id of a world started by MPI_Comm_spawn, NULL otherwise.
//
//export dtgo_init
func dtgo_init(rank, size, level C.int, impl, ver *C.char, clk *C.dt_clock, spawn *C.uchar) (ok C.int) {
	defer recovered("init")
	conv := records.Converter{
		TSC: clk.tsc != 0, NsPerTick: float64(clk.ns_per_tick), Raw0: uint64(clk.raw0), Ns0: int64(clk.ns0),
		SkewOff: int64(clk.skew_off_ns), SkewPPM: float64(clk.skew_ppm),
	}
	in := initInfo{
		rank: uint32(rank), size: uint32(size), level: uint32(level), impl: C.GoString(impl), version: C.GoString(ver),
		conv: conv, clk: clk, params: loadedParams, spawned: spawn != nil,
	}
	if spawn != nil {
		in.spawn = C.GoBytes(unsafe.Pointer(spawn), 16)
	}
	t, err := newTracer(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dtpa tracer: rank %d: %v; running untraced\n", rank, err)
		return 0
	}
	tr = t
	return 1
}

// dtgo_start writes the trace's header, with the run id, after dtgo_init
// succeeded.
//
//export dtgo_start
func dtgo_start(runid *C.uchar) {
	defer recovered("start")
	if tr != nil {
		tr.start(C.GoBytes(unsafe.Pointer(runid), 16))
	}
}

//export dtgo_signal
func dtgo_signal() {
	defer recovered("signal")
	if tr != nil {
		tr.signalFlush()
	}
}

//export dtgo_module
func dtgo_module(path *C.char, bias, lo, hi C.uint64_t, bid *C.uchar, nbid C.int) {
	defer recovered("module")
	if tr == nil {
		return
	}
	m := &tracepb.Module{Path: C.GoString(path), LoadBias: uint64(bias), Start: uint64(lo), End: uint64(hi)}
	if nbid > 0 {
		m.BuildId = C.GoBytes(unsafe.Pointer(bid), nbid)
	}
	tr.addModule(m)
}

// dtgo_source_module defines the module standing for source file path
// (traceformat.SourceModulePrefix): addresses [base, base+2^32), whose
// offsets are line numbers (dt_py.c).
//
//export dtgo_source_module
func dtgo_source_module(path *C.char, base C.uint64_t) {
	defer recovered("module")
	if tr == nil {
		return
	}
	tr.addModule(&tracepb.Module{Path: traceformat.SourceModulePrefix + C.GoString(path), LoadBias: uint64(base),
		Start: uint64(base), End: uint64(base) + 1<<32})
}

//export dtgo_clocksync
func dtgo_clocksync(phase, ref, same C.int, snd, rem, rcv *C.int64_t, n C.int) {
	defer recovered("clocksync")
	if tr == nil {
		return
	}
	cs := &tracepb.ClockSync{Phase: tracepb.ClockSync_Phase(phase), Reference: uint32(ref), SameClock: same != 0}
	if n > 0 {
		get := func(p *C.int64_t) []int64 {
			return append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n))...)
		}
		cs.LocalSendNs, cs.RemoteNs, cs.LocalRecvNs = get(snd), get(rem), get(rcv)
	}
	tr.submit(job{clock: cs})
}

//export dtgo_stopped
func dtgo_stopped(reason C.int) {
	defer recovered("stopped")
	if tr != nil {
		tr.setStop(tracepb.Footer_StopReason(reason), "")
	}
}

// compactWait bounds how long a process's exit waits for its trace's
// compaction: 128 MB of raw records (DT_DEFER_MB's default) take ~0.2 s.
const compactWait = 60 * time.Second

//export dtgo_exit
func dtgo_exit() {
	defer recovered("exit")
	if tr != nil {
		tr.awaitCompaction(compactWait)
	}
}

//export dtgo_finish
func dtgo_finish(reason C.int) {
	defer recovered("finish")
	if tr != nil {
		tr.finish(tracepb.Footer_StopReason(reason))
	}
}
