package hugetext

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// PageIn drops the cached pages of the file at path and reads them back
// through a mapping advised with MADV_HUGEPAGE, so that the page cache
// holds the file in 2 MB folios where the file system allows: what a
// binary just written (by the linker, by cp) needs, whose pages are then
// mostly cached in 4 KB. Pages that a running process maps are not
// dropped.
func PageIn(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil
	}
	fd := int(f.Fd())
	// Dirty pages are not dropped: write them first.
	if err := unix.Fsync(fd); err != nil {
		return err
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return err
	}
	m, err := unix.Mmap(fd, 0, int(st.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	if err := unix.Madvise(m, unix.MADV_HUGEPAGE); err != nil {
		return fmt.Errorf("huge pages not available: %w", err)
	}
	var sum byte
	for off := 0; off < len(m); off += 4096 {
		sum += m[off]
	}
	runtime.KeepAlive(sum) // the reads are what PageIn is for
	return nil
}
