package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dtpa/dtpa/tracer/records"
)

// A job killed together with its dtrun (a batch system ends the whole
// job; a terminal closed) leaves its spill directory in the spill root,
// /dev/shm: the ranks' last records, up to TraceBufSize each, in memory
// until the host reboots, and traces without their end. The next dtrun on
// the host adds those records to their traces, as the killed dtrun would
// have after its job, and frees the memory (sweepStale). A directory is a
// live job's while its dtrun holds a lock on it (holdSpill), or while a
// process holds one of its spill files (each rank locks its own: on a
// node without dtrun the ranks make the directory themselves).

// staleAge is how long a spill directory must have been left unchanged
// before a dtrun takes it for a killed job's: a rank on a node without
// dtrun makes the directory an instant before it makes and locks its
// spill file.
const staleAge = time.Minute

// holdSpill locks the spill directory dir for as long as dtrun runs its
// job; release unlocks it.
func holdSpill(dir string) (release func()) {
	release, _ = lockDir(dir)
	return release
}

// lockDir takes an exclusive lock (flock) on the directory dir without
// waiting; release drops it (and is harmless when ok is false).
func lockDir(dir string) (release func(), ok bool) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return func() {}, false
	}
	if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		syscall.Close(fd)
		return func() {}, false
	}
	return func() { syscall.Close(fd) }, true
}

// sweepStale adds to their traces the records that killed jobs left in
// the spill root (dtpa-* directories of this user that no process holds),
// saying so on w, and removes those directories; records that cannot be
// added yet (their traces' directory cannot be written) stay
// (keptSpills). It returns how many directories it took, and how many of
// them stay for that reason.
func sweepStale(root string, w io.Writer) (swept, stay int) {
	if !localLocks(root) {
		return 0, 0
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "dtpa-*"))
	for _, d := range dirs {
		release, ok := claimStale(d)
		if !ok {
			continue
		}
		swept++
		spills, _ := filepath.Glob(filepath.Join(d, "*.spill"))
		if len(spills) > 0 {
			fmt.Fprintf(w, "dtrun: %s holds the last records of %d rank(s) of an earlier job, killed before they wrote them: adding them to their traces\n", d, len(spills))
		}
		if kept, _ := recoverSpills(d, nil, w); len(kept) == 0 {
			os.RemoveAll(d)
		} else {
			stay++
		}
		release()
	}
	return swept, stay
}

// recoverNode is `dtrun --recover` without a directory: every spill
// directory that killed jobs left on this node (sweepStale), as on the
// nodes where no dtrun runs, whose memory only this frees (a batch
// system's epilog, or srun -N <nodes> --ntasks-per-node=1 dtrun
// --recover). It fails when records stay.
func recoverNode(w io.Writer) error {
	root := os.Getenv("DT_SPILL_ROOT")
	if root == "" {
		root = spillRoot()
	}
	if !localLocks(root) {
		return fmt.Errorf("%s is not on a local file system: its spill directories are recovered one by one (dtrun --recover DIR)", root)
	}
	swept, stay := sweepStale(root, w)
	if swept == 0 {
		fmt.Fprintf(w, "dtrun: no spill directory of a killed job in %s\n", root)
	}
	if stay > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// localLocks tells whether dir is on a file system whose locks (flock)
// dtrun can trust to tell a live job's spill files from a dead one's: a
// local one (tmpfs, as /dev/shm, ext2-4, XFS, Btrfs). On a network file
// system a lock may not be seen from another host, and a live job's
// records must not be taken for a dead one's: no sweep there.
func localLocks(dir string) bool {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case 0x01021994, // tmpfs
		0x858458f6, // ramfs
		0xEF53,     // ext2, ext3, ext4
		0x58465342, // XFS
		0x9123683E: // Btrfs
		return true
	}
	return false
}

// claimStale locks the spill directory d when it is a killed job's: this
// user's, unchanged for staleAge, held by no dtrun, and none of its files
// held by a process.
func claimStale(d string) (release func(), ok bool) {
	st, err := os.Stat(d)
	if err != nil || !st.IsDir() || time.Since(st.ModTime()) < staleAge {
		return nil, false
	}
	if sys, isStat := st.Sys().(*syscall.Stat_t); !isStat || int(sys.Uid) != os.Getuid() {
		return nil, false
	}
	release, ok = lockDir(d)
	if !ok {
		return nil, false
	}
	files, _ := filepath.Glob(filepath.Join(d, "*.spill*"))
	for _, f := range files {
		if records.Held(f) {
			release()
			return nil, false
		}
	}
	return release, true
}
