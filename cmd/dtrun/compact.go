package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/dtpa/dtpa/internal/hugeheap"
	"github.com/dtpa/dtpa/tracer/records"
)

// compactMark names the file in dtrun's spill directory that says where
// dtrun looks for the traces it compacts after the job (its content: that
// directory). A rank that finds it in its spill directory, naming
// its trace's directory, leaves its trace deferred for dtrun; any other
// rank compacts its own as it ends (tracer/rt/dt_cw.c, dtrun_compacts).
const compactMark = ".dtrun"

// markCompaction writes the mark into dtrun's spill directory. Without it
// the ranks compact their traces themselves.
func markCompaction(spill, dir string) {
	if abs, err := filepath.Abs(dir); err == nil {
		os.WriteFile(filepath.Join(spill, compactMark), []byte(abs), 0o600)
	}
}

// removeStale removes the unfinished compactions (records.CompactTemps) of
// the traces the job wrote: the job is over, so that no process still
// writes them, and the traces they were made from are whole. Another
// job's in the same directory may still be under way and stay.
func removeStale(files []string, job *jobFiles) {
	mine := map[string]bool{}
	for _, p := range job.traces() {
		mine[filepath.Base(p)] = true
	}
	for _, f := range files {
		trace, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(f), "."), records.CompactTempMark)
		if st, err := os.Stat(f); err == nil && !st.ModTime().Before(job.start) && mine[trace] {
			os.Remove(f)
		}
	}
}

// compactHeap is how much of dtrun's heap is backed by huge pages where
// the kernel gives them on request (package hugeheap) when it compacts:
// a compaction streams its trace, a few megabytes per worker, whose 4 KB
// pages faulted one by one were most of the CPU time of compacting a
// small run's traces (hpcc at N = 500, 4 ranks: 2 900 faults and 62 ms
// of CPU, 940 and 33 ms with it).
const compactHeap = 16 << 20

// prepareMin is the raw bytes below which a compaction goes without
// hugeheap.Prepare, whose own cost (a forced collection: 1–7 ms here)
// exceeds what it saves: a hello world's four 18 KB traces take 0.5 ms
// each.
const prepareMin = 256 << 10

// prepareFor prepares the heap for compacting files of the given raw
// sizes in all.
func prepareFor(bytes int64) {
	if bytes >= prepareMin {
		hugeheap.Prepare(compactHeap)
	}
}

// compactTraces compacts the given deferred traces, on as many cores as
// there are, and reports failures; it tells whether every one succeeded.
func compactTraces(files []string, w io.Writer) bool {
	var raw int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			raw += st.Size()
		}
	}
	prepareFor(raw)
	var mu sync.Mutex
	ok := true
	work := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < min(runtime.GOMAXPROCS(0), len(files)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				// Under the trace's lock (CompactFinished): one that a
				// running process still writes (a job's in the same
				// directory) is left as it is.
				if _, err := records.CompactFinished(f, 0); err != nil {
					mu.Lock()
					fmt.Fprintf(w, "dtrun: compacting %s: %v\n", f, err)
					ok = ok && !records.IsDeferred(f)
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	return ok
}

// compactPaths compacts what dtrun --compact names: trace files,
// directories (their deferred traces) and <app> prefixes (<app>.*.trc).
func compactPaths(args []string, w io.Writer) bool {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		switch {
		case err == nil && st.IsDir():
			m, _ := filepath.Glob(filepath.Join(a, "*.trc"))
			files = append(files, m...)
		case err == nil:
			files = append(files, a)
		default:
			m, _ := filepath.Glob(a + ".*.trc")
			if len(m) == 0 {
				fmt.Fprintf(w, "dtrun: %s: no such trace, directory or <app>.*.trc\n", a)
				return false
			}
			files = append(files, m...)
		}
	}
	sort.Strings(files)
	var todo []string
	for _, f := range files {
		if records.IsDeferred(f) {
			todo = append(todo, f)
		}
	}
	ok := compactTraces(todo, w)
	fmt.Fprintf(w, "dtrun: %d of %d %s compacted\n", len(todo), len(files), plural(len(files), "trace"))
	return ok
}
