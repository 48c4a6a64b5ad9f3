package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/dtpa/dtpa/internal/hugeheap"
	"github.com/dtpa/dtpa/tracer/records"
)

// earlyCompactor compacts the deferred traces of this node's ranks as
// each rank ends, while the launcher still runs, rather than all of them
// after it exited: from the ranks' last writes to the launcher's exit the
// job tears down (hpcc's 4 ranks here: 15–25 ms between the traces'
// footers and mpirun's end), and the cores the ranks left are idle. A
// rank's tracer removes its spill file, <task>.<rank>.spill, right after
// its footer is written and its trace closed (tracer/rt/dt_cw.c,
// write_footer): that removal says the trace <task>.<rank>.trc in the
// directory dtrun compacts (compactMark) is whole and no process writes
// it. A rank whose trace is elsewhere compacts its own, and a rank killed
// leaves its spill file for dtrun to recover after the job. The
// compactions run on threads at the lowest priority (nice 19), so that a
// rank still at work (rank 0 writing its output after MPI_Finalize)
// keeps its core; what is not done when the launcher exits is finished
// then, and the rest done after the job (compactTraces).
// DT_COMPACT_EARLY=0 leaves every compaction to after the job.
type earlyCompactor struct {
	w       *fsnotify.Watcher
	job     *jobFiles
	out     io.Writer
	work    chan string
	wg      sync.WaitGroup
	workers int
	mu      sync.Mutex // out
	done    chan struct{}
}

// startEarly watches spill for the removal of the ranks' spill files;
// nil when it cannot (no inotify) or DT_COMPACT_EARLY=0.
func startEarly(spill string, job *jobFiles, getenv func(string) string, out io.Writer) *earlyCompactor {
	if getenv("DT_COMPACT_EARLY") == "0" {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	if err := w.Add(spill); err != nil {
		w.Close()
		return nil
	}
	e := &earlyCompactor{w: w, job: job, out: out, work: make(chan string, 1024), done: make(chan struct{})}
	go e.watch()
	return e
}

// watch follows the spill directory until stop closes the watcher.
func (e *earlyCompactor) watch() {
	defer close(e.done)
	for {
		select {
		case ev, ok := <-e.w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Remove) && strings.HasSuffix(ev.Name, ".spill") {
				e.ended(strings.TrimSuffix(filepath.Base(ev.Name), ".spill") + ".trc")
			}
		case _, ok := <-e.w.Errors:
			if !ok {
				return
			}
		}
	}
}

// ended queues the trace named name, if it is the job's and deferred.
func (e *earlyCompactor) ended(name string) {
	path := filepath.Join(e.job.dir, name)
	fi, err := os.Stat(path)
	if err != nil || !e.job.written(fi) || !records.IsDeferred(path) {
		return
	}
	if e.workers < runtime.GOMAXPROCS(0) {
		e.workers++
		e.wg.Add(1)
		go e.worker()
	}
	select {
	case e.work <- path:
	default: // left to after the job
	}
}

// worker compacts the traces it is given on a thread of its own at the
// lowest priority; the thread ends with it (runtime.LockOSThread).
func (e *earlyCompactor) worker() {
	defer e.wg.Done()
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
	hugeheap.Prepare(compactHeap)
	for f := range e.work {
		// One still held is left to after the job.
		if _, err := records.CompactFinished(f, 0); err != nil && err != records.ErrBeingWritten {
			e.mu.Lock()
			fmt.Fprintf(e.out, "dtrun: compacting %s: %v\n", f, err)
			e.mu.Unlock()
		}
	}
}

// stop ends the watching and waits for the compactions under way.
func (e *earlyCompactor) stop() {
	if e == nil {
		return
	}
	e.w.Close()
	<-e.done
	close(e.work)
	e.wg.Wait()
}
