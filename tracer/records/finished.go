package records

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dtpa/dtpa/traceformat"
)

// LockTrace marks the trace a rank is writing, fd its descriptor: an
// exclusive lock (flock) held until the descriptor is closed, after the
// footer, as the tracer's writer takes it (tracer/rt/dt_cw.c; here for
// the tests that play a running rank). Best effort: a file system without
// locks takes none.
// CompactFinished, which compacts traces that dtrun left deferred, tells
// by it a trace whose rank is still running from one whose rank ended or
// died.
func LockTrace(fd int) { syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) }

// Held tells whether a process holds the trace at path (LockTrace): its
// rank is still running, or a compaction of it is. Where the file system
// has no locks it is false.
func Held(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == syscall.EWOULDBLOCK
}

// ErrBeingWritten is CompactFinished's answer for a trace that a process
// still holds (LockTrace): its rank is running, or another process is
// compacting it.
var ErrBeingWritten = errors.New("a running process holds it (its rank, or another compaction of it)")

// CompactFinished compacts the deferred trace at path in place, as Compact
// does, once no process writes it: dtpa compacts so the traces that a
// dtrun which did not finish (killed, or a node's ranks killed) left
// deferred. A trace that another process holds (LockTrace) is waited for,
// up to wait: when that process was another analysis compacting it, the
// file is found compacted and left alone. A trace still held then is
// ErrBeingWritten. Where the file system has no locks, only a trace that
// ends with its footer (its rank ended) is compacted: one without may
// still be written. compacted says whether this call compacted the file;
// err is Compact's (damage ended the copy: what preceded it was kept), or
// why the file stays deferred.
func CompactFinished(path string, wait time.Duration) (compacted bool, err error) {
	return compactFinished(path, "", wait)
}

// CompactFinishedCopy is CompactFinished for a trace whose directory
// cannot be written: it compacts the trace into dir under its name
// (CompactCopy), once no process writes it, and leaves the trace as it
// is. compacted says whether the copy was written.
func CompactFinishedCopy(path, dir string, wait time.Duration) (compacted bool, err error) {
	return compactFinished(path, dir, wait)
}

// compactFinished compacts the trace at path into dir, or in place when
// dir is "", once no process writes it.
func compactFinished(path, dir string, wait time.Duration) (compacted bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0) // NFS takes an exclusive lock only on a writable descriptor
		if err != nil {
			if f, err = os.Open(path); err != nil {
				return false, err
			}
		}
		if !IsDeferred(path) {
			f.Close()
			return false, nil
		}
		lerr := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case lerr == syscall.EWOULDBLOCK:
			f.Close()
			if time.Now().After(deadline) {
				return false, ErrBeingWritten
			}
			time.Sleep(20 * time.Millisecond)
			continue
		case lerr != nil && !ended(f):
			f.Close()
			return false, ErrBeingWritten
		}
		// The lock is held (or the file system has none and the rank
		// ended) until the compacted file replaced this one.
		_, err = compactInto(path, dir)
		f.Close()
		if dir == "" {
			return !IsDeferred(path), err
		}
		out := filepath.Join(dir, filepath.Base(path))
		if _, serr := os.Stat(out); serr != nil || IsDeferred(out) {
			return false, err
		}
		return true, err
	}
}

// ended tells whether the trace f ends with its footer.
func ended(f *os.File) bool {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false
	}
	sc, err := traceformat.NewFrameScanner(f, f.Name())
	if err != nil {
		return false
	}
	last := traceformat.Kind(0)
	for {
		fr, err := sc.Next()
		if err != nil {
			return errors.Is(err, io.EOF) && last == traceformat.KindFooter
		}
		last = fr.Kind
	}
}

// CannotWrite tells whether err is a failure to make or write a file for
// want of permission, on a read-only file system, or with no space or
// quota left: what writing elsewhere (dtpa's compacted copies), or later
// (dtrun keeping a dead rank's buffers), gets around.
func CannotWrite(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
