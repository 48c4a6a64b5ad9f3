package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/dtpa/dtpa/tracer/records"
)

// endedFIFO is the FIFO in dtrun's spill directory on which the ranks of
// its node say that their traces are whole (tracer/rt/dt_cw.c,
// notify_ended): one line each, the trace's file name.
const endedFIFO = ".ended"

// earlyCompactor compacts the deferred traces of this node's ranks as
// each rank ends, while the launcher still runs, rather than all of them
// after it exited: from the ranks' last writes to the launcher's exit the
// job tears down (hpcc's 4 ranks here: 15–25 ms between the traces'
// footers and mpirun's end), and the cores the ranks left are idle. A
// rank's tracer, once its footer is written and its trace closed, writes
// the trace's name to the FIFO endedFIFO, which dtrun reads (no cost while
// nobody writes; inotify's would be its close, a kernel grace period of
// up to 20 ms here). The compactions run on threads at the lowest priority
// (nice 19), so that a rank still at work (rank 0 writing its output after
// MPI_Finalize) keeps its core; what is not done when the launcher exits
// is finished then, and what was not said done after the job
// (compactTraces). DT_COMPACT_EARLY=0 leaves every compaction to after
// the job.
type earlyCompactor struct {
	r       *os.File // the FIFO's reading end
	w       int      // a writing end of dtrun's, so that reads wait rather than see its end
	job     *jobFiles
	out     io.Writer
	work    chan deferredTrace
	wg      sync.WaitGroup
	workers int
	mu      sync.Mutex // out
	done    chan struct{}
}

// deferredTrace is a trace to compact and its raw size.
type deferredTrace struct {
	path string
	size int64
}

// startEarly makes the FIFO in spill and reads it; nil when it cannot or
// DT_COMPACT_EARLY=0.
func startEarly(spill string, job *jobFiles, getenv func(string) string, out io.Writer) *earlyCompactor {
	if getenv("DT_COMPACT_EARLY") == "0" {
		return nil
	}
	path := filepath.Join(spill, endedFIFO)
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil
	}
	rfd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	wfd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(rfd)
		return nil
	}
	e := &earlyCompactor{r: os.NewFile(uintptr(rfd), path), w: wfd, job: job, out: out, work: make(chan deferredTrace, 1024), done: make(chan struct{})}
	go e.read()
	return e
}

// read takes the names the ranks write until stop closes the FIFO.
func (e *earlyCompactor) read() {
	defer close(e.done)
	sc := bufio.NewScanner(e.r)
	for sc.Scan() {
		e.ended(sc.Text())
	}
}

// ended queues the trace named name, if it is the job's (a rank names
// only a deferred trace; CompactFinished leaves any other alone).
func (e *earlyCompactor) ended(name string) {
	if name == "" || filepath.Base(name) != name {
		return
	}
	path := filepath.Join(e.job.dir, name)
	fi, err := os.Stat(path)
	if err != nil || !e.job.written(fi) {
		return
	}
	if e.workers < runtime.GOMAXPROCS(0) {
		e.workers++
		e.wg.Add(1)
		go e.worker()
	}
	select {
	case e.work <- deferredTrace{path, fi.Size()}:
	default: // left to after the job
	}
}

// worker compacts the traces it is given on a thread of its own at the
// lowest priority; the thread ends with it (runtime.LockOSThread).
func (e *earlyCompactor) worker() {
	defer e.wg.Done()
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
	for f := range e.work {
		prepareFor(f.size)
		// One still held is left to after the job.
		if _, err := records.CompactFinished(f.path, 0); err != nil && err != records.ErrBeingWritten {
			e.mu.Lock()
			fmt.Fprintf(e.out, "dtrun: compacting %s: %v\n", f.path, err)
			e.mu.Unlock()
		}
	}
}

// stop ends the reading and waits for the compactions under way.
func (e *earlyCompactor) stop() {
	if e == nil {
		return
	}
	unix.Close(e.w)
	e.r.Close()
	<-e.done
	close(e.work)
	e.wg.Wait()
}
