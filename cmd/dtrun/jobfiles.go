package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/records"
)

// stamp is one state of a file. The tracer creates its trace anew, so a
// trace the job wrote has another inode, or another time and size, than
// the file of that name before it.
type stamp struct {
	ino, size int64
	mtime     int64
}

func stampOf(fi fs.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = int64(st.Ino)
	}
	return s
}

// jobFiles selects the traces in dir that dtrun's job wrote: those
// modified since start (less a second, for file systems whose times are
// coarser than the clock) that are not as they were before it (an earlier
// run's within that second, or the traces of the higher ranks of an
// earlier run of more processes, which the job did not write over) and
// that no process holds (a job still running in the same directory:
// records.Held).
type jobFiles struct {
	dir    string
	start  time.Time
	before map[string]stamp
	// mine remembers keep's answers, asked after the job only: the
	// compaction, the summary and the leftovers' list ask of the same
	// files, and each answer opens and locks the file.
	mine map[string]bool
	// running are the job's traces (names) that its ranks of this node
	// still write: they outlived the launcher (stillRunning).
	running []string
}

// newJobFiles takes the stamps of the traces in dir, before the job.
func newJobFiles(dir string) *jobFiles {
	j := &jobFiles{dir: dir, start: time.Now().Add(-time.Second), before: map[string]stamp{}}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.trc"))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			j.before[filepath.Base(p)] = stampOf(fi)
		}
	}
	return j
}

// keep tells whether the file fi in the directory is the job's.
func (j *jobFiles) keep(fi fs.FileInfo) bool {
	if k, ok := j.mine[fi.Name()]; ok {
		return k
	}
	k := j.written(fi) && !records.Held(filepath.Join(j.dir, fi.Name()))
	if j.mine == nil {
		j.mine = map[string]bool{}
	}
	j.mine[fi.Name()] = k
	return k
}

// written tells whether the file fi in the directory was written since
// the job began, held or not; safe while the job runs (keep is not).
func (j *jobFiles) written(fi fs.FileInfo) bool {
	s, had := j.before[fi.Name()]
	return !fi.ModTime().Before(j.start) && !(had && s == stampOf(fi))
}

// traces lists the job's traces.
func (j *jobFiles) traces() []string {
	paths, _ := filepath.Glob(filepath.Join(j.dir, "*.trc"))
	var out []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && j.keep(fi) {
			out = append(out, p)
		}
	}
	return out
}

// deferred lists the job's traces left deferred (raw records, not
// compacted): its C-writer ranks' on this node, and those of ranks killed
// or cut short.
func (j *jobFiles) deferred() []string {
	var out []string
	for _, p := range j.traces() {
		if records.IsDeferred(p) {
			out = append(out, p)
		}
	}
	return out
}

// others lists the traces of tasks in the directory that are not the
// job's: an earlier run's, which the job did not write over. (The job's
// traces that its ranks still write, after the launcher's end, are not:
// jobFiles.running.)
func (j *jobFiles) others(tasks []string) []string {
	ents, _ := os.ReadDir(j.dir)
	var out []string
	for _, e := range ents {
		t, ok := analyzer.TraceTask(e.Name())
		if !ok || !slices.Contains(tasks, t) || slices.Contains(j.running, e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && !j.keep(fi) {
			out = append(out, e.Name())
		}
	}
	return out
}

// stillRunning notes the traces of the job's ranks of this node that
// still run, as their spill files name them (recoverSpills' running):
// their traces are the job's, not yet whole.
func (j *jobFiles) stillRunning(ranks []records.SpillInfo) {
	dir, err := os.Stat(j.dir)
	if err != nil {
		return
	}
	for _, info := range ranks {
		if info.Trace == "" {
			continue
		}
		// The same directory, however its path was spelled.
		if d, err := os.Stat(filepath.Dir(info.Trace)); err == nil && os.SameFile(d, dir) {
			j.running = append(j.running, filepath.Base(info.Trace))
		}
	}
}

// heldTraces lists the traces in the directory, written since the job
// began, that a process still holds and that are of the job's run
// (runOf: the run id in their header; when no finished trace says which
// run is the job's, every one). A launcher does not wait for the ranks of
// other nodes that an interrupt or an abort ends: they may still be
// writing their traces' ends when it exits, and dtrun, which cannot see
// those processes, sees their files held. Another job at work in the same
// directory holds its own, of another run: not waited for. Safe while the
// job runs (keep is not).
func (j *jobFiles) heldTraces() []string {
	paths, _ := filepath.Glob(filepath.Join(j.dir, "*.trc"))
	var held, ended []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && j.written(fi) {
			if records.Held(p) {
				held = append(held, p)
			} else {
				ended = append(ended, p)
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	runs := map[string]bool{}
	for _, p := range ended {
		if id := runOf(p); id != "" {
			runs[id] = true
		}
	}
	if len(runs) == 0 {
		return held
	}
	return slices.DeleteFunc(held, func(p string) bool { return !runs[runOf(p)] })
}

// stillHeld notes the job's traces that processes still hold after dtrun
// waited for them (heldTraces): ranks of other nodes still at work.
func (j *jobFiles) stillHeld() {
	for _, p := range j.heldTraces() {
		if name := filepath.Base(p); !slices.Contains(j.running, name) {
			j.running = append(j.running, name)
		}
	}
}

// runOf is the run id in the header of the trace at path, deferred or
// not, "" when it cannot be read.
func runOf(path string) string {
	return string(headerOf(path).GetRunId())
}

// headerOf is the header of the trace at path, deferred or not; nil when
// it cannot be read.
func headerOf(path string) *tracepb.Header {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc, err := traceformat.NewFrameScanner(bufio.NewReaderSize(f, 4096), path)
	if err != nil {
		return nil
	}
	fr, err := sc.Next()
	var hdr tracepb.Header
	if err != nil || fr.Kind != traceformat.KindHeader || fr.Unmarshal(&hdr) != nil {
		return nil
	}
	return &hdr
}
