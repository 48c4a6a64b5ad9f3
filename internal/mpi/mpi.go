//go:build mpi

// Package mpi is the little of MPI that dtpa-mpi needs: MPI_COMM_WORLD,
// and byte messages sent without waiting and received in order from any
// process (analyzer.Transport). It is built only with the mpi build tag
// and an MPI compiler wrapper as cgo's C compiler (CC=mpicc), so that the
// rest of dtpa builds without MPI.
//
// All calls must come from one goroutine at a time (the library asks for
// MPI_THREAD_SERIALIZED): dtpa-mpi's replay makes them from its single
// worker, and the start and the end from the main goroutine.
package mpi

/*
#include <mpi.h>
// MPICH's MPI_STATUSES_IGNORE, a constant pointer, looks to GCC like an
// array of size 0.
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int dt_init(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
static int dt_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int dt_size(int *n) { return MPI_Comm_size(MPI_COMM_WORLD, n); }
static int dt_isend(void *buf, int n, int to, int tag, MPI_Request *req) {
	return MPI_Isend(buf, n, MPI_BYTE, to, tag, MPI_COMM_WORLD, req);
}
static int dt_testsome(int n, MPI_Request *reqs, int *done, int *idx) {
	return MPI_Testsome(n, reqs, done, idx, MPI_STATUSES_IGNORE);
}
static int dt_waitall(int n, MPI_Request *reqs) {
	return MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
}
// dt_probe looks for a message with tag: its source and size, or
// *found = 0. With wait it polls until one is there. MPI_Probe would spin
// on a core (Open MPI's does unless the node is oversubscribed), which on
// a machine shared with the other analysis processes, or anything else,
// takes the core from those that have work; sleeping at once makes each
// wait of a replay for its neighbour's message (a halo exchange waits
// once per step) cost a sleep. So it polls for 50 µs, then yields the
// core between polls up to 2 ms (a core nobody else wants is taken
// back at once), then sleeps between polls, from 50 µs doubling up to a
// millisecond.
static long dt_since(const struct timespec *t0) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}
static int dt_probe(int tag, int wait, int *found, int *from, int *n) {
	MPI_Status st;
	struct timespec t0, ts = {0, 0};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int rc = MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, found, &st);
		if (rc != MPI_SUCCESS)
			return rc;
		if (*found || !wait)
			break;
		long ns = dt_since(&t0);
		if (ns < 50000)
			continue;
		if (ns < 2000000) {
			sched_yield();
			continue;
		}
		ts.tv_nsec = ts.tv_nsec ? ts.tv_nsec * 2 : 50000;
		if (ts.tv_nsec > 1000000)
			ts.tv_nsec = 1000000;
		nanosleep(&ts, NULL);
	}
	if (!*found)
		return MPI_SUCCESS;
	*from = st.MPI_SOURCE;
	return MPI_Get_count(&st, MPI_BYTE, n);
}
static int dt_recv(void *buf, int n, int from, int tag) {
	return MPI_Recv(buf, n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
// dt_node_procs is the number of processes of the job on this one's node
// (collective), and *cpus the node's online processors.
static int dt_node_procs(int *n, long *cpus) {
	MPI_Comm node;
	int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	if (rc != MPI_SUCCESS)
		return rc;
	rc = MPI_Comm_size(node, n);
	MPI_Comm_free(&node);
	*cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return rc;
}
static int dt_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
static int dt_finalize(void) { return MPI_Finalize(); }
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// tag is the tag of every message: one tag keeps the messages from one
// process to another in order (MPI's non-overtaking rule).
const tag = 7301

// World is MPI_COMM_WORLD as an analyzer.Transport.
type World struct {
	rank, size int
	// The messages on their way: their requests (C memory, for
	// MPI_Testsome), and their buffers (C memory, freed once sent).
	reqs    *C.MPI_Request
	idx     *C.int
	capReqs int
	bufs    []unsafe.Pointer
	// testAt is the number of messages on their way at which Send
	// looks which are gone: twice what remained last time, so that the
	// cost stays constant per message.
	testAt int
	buf    []byte // the last message received
}

// Init initializes MPI for one goroutine at a time.
func Init() (*World, error) {
	var provided C.int
	if rc := C.dt_init(&provided); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("MPI_Init_thread failed (%d)", int(rc))
	}
	if provided < C.MPI_THREAD_SERIALIZED {
		return nil, fmt.Errorf("the MPI library provides thread level %d, dtpa-mpi needs MPI_THREAD_SERIALIZED", int(provided))
	}
	var r, n C.int
	if C.dt_rank(&r) != C.MPI_SUCCESS || C.dt_size(&n) != C.MPI_SUCCESS {
		return nil, fmt.Errorf("MPI_Comm_rank/size failed")
	}
	return &World{rank: int(r), size: int(n)}, nil
}

func (w *World) Rank() int { return w.rank }
func (w *World) Size() int { return w.size }

// Send starts sending msg to process to; the message is copied.
func (w *World) Send(to int, msg []byte) error {
	if len(msg) > math.MaxInt32 {
		return fmt.Errorf("message of %d bytes too large", len(msg))
	}
	n := len(w.bufs)
	if n == w.capReqs {
		w.capReqs = max(64, 2*n)
		w.reqs = (*C.MPI_Request)(C.realloc(unsafe.Pointer(w.reqs), C.size_t(w.capReqs)*C.sizeof_MPI_Request))
		w.idx = (*C.int)(C.realloc(unsafe.Pointer(w.idx), C.size_t(w.capReqs)*C.sizeof_int))
		if w.reqs == nil || w.idx == nil {
			return fmt.Errorf("out of memory for %d messages on their way", w.capReqs)
		}
	}
	buf := C.CBytes(msg)
	if rc := C.dt_isend(buf, C.int(len(msg)), C.int(to), tag, w.req(n)); rc != C.MPI_SUCCESS {
		C.free(buf)
		return fmt.Errorf("MPI_Isend to %d failed (%d)", to, int(rc))
	}
	w.bufs = append(w.bufs, buf)
	if len(w.bufs) >= w.testAt {
		return w.progress()
	}
	return nil
}

// req is the i-th request on its way.
func (w *World) req(i int) *C.MPI_Request {
	return (*C.MPI_Request)(unsafe.Add(unsafe.Pointer(w.reqs), uintptr(i)*C.sizeof_MPI_Request))
}

// progress frees the buffers of the messages sent.
func (w *World) progress() error {
	n := len(w.bufs)
	if n == 0 {
		return nil
	}
	var done C.int
	if rc := C.dt_testsome(C.int(n), w.reqs, &done, w.idx); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Testsome failed (%d)", int(rc))
	}
	if done > 0 && done != C.MPI_UNDEFINED {
		for _, i := range unsafe.Slice(w.idx, int(done)) {
			C.free(w.bufs[i])
			w.bufs[i] = nil
		}
		// Compact: the requests of the messages still on their way,
		// in order.
		k := 0
		for i, b := range w.bufs {
			if b == nil {
				continue
			}
			*w.req(k) = *w.req(i)
			w.bufs[k] = b
			k++
		}
		w.bufs = w.bufs[:k]
	}
	w.testAt = max(16, 2*len(w.bufs))
	return nil
}

// Recv returns the next message from any process (nil when none is
// there and !wait), valid until the next call.
func (w *World) Recv(wait bool) (int, []byte, error) {
	if err := w.progress(); err != nil {
		return 0, nil, err
	}
	var found, from, n C.int
	if rc := C.dt_probe(tag, boolInt(wait), &found, &from, &n); rc != C.MPI_SUCCESS {
		return 0, nil, fmt.Errorf("MPI_Probe failed (%d)", int(rc))
	}
	if found == 0 {
		return 0, nil, nil
	}
	if cap(w.buf) < int(n) {
		w.buf = make([]byte, int(n))
	}
	buf := w.buf[:n]
	var p unsafe.Pointer
	if n > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	if rc := C.dt_recv(p, n, from, tag); rc != C.MPI_SUCCESS {
		return 0, nil, fmt.Errorf("MPI_Recv from %d failed (%d)", int(from), int(rc))
	}
	return int(from), buf, nil
}

// Finalize waits for the messages on their way and ends MPI.
func (w *World) Finalize() error {
	if n := len(w.bufs); n > 0 {
		C.dt_waitall(C.int(n), w.reqs)
		for _, b := range w.bufs {
			C.free(b)
		}
		w.bufs = nil
	}
	C.free(unsafe.Pointer(w.reqs))
	C.free(unsafe.Pointer(w.idx))
	w.reqs, w.idx, w.capReqs = nil, nil, 0
	if rc := C.dt_finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Finalize failed (%d)", int(rc))
	}
	return nil
}

// NodeShare returns how many processes of the job run on this process's
// node and how many processors the node has online (0, 0 if MPI could not
// tell). Every process must call it (MPI_Comm_split_type).
func (w *World) NodeShare() (procs, cpus int) {
	var n C.int
	var c C.long
	if C.dt_node_procs(&n, &c) != C.MPI_SUCCESS || c <= 0 {
		return 0, 0
	}
	return int(n), int(c)
}

// Abort ends every process of the job with code.
func (w *World) Abort(code int) {
	C.dt_abort(C.int(code))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
