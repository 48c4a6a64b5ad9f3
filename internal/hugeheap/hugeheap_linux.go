package hugeheap

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// thpEnabled is the kernel's transparent huge page mode.
const thpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled"

// Prepare has the runtime map n bytes of heap at once, advises them with
// MADV_HUGEPAGE and frees them again, so that the program's next n bytes
// of heap are faulted in 2 MB at a time. It does so only in "madvise"
// mode: in "always" the heap has huge pages already, in "never" it can
// have none. The range is one object, allocated with the collector off so
// that its allocation does not start a collection, and freed by one
// forced collection, most of whose cost is the collector's set-up on first
// use, which a program that collects later would pay then. Mapping costs nothing until a page is touched;
// the kernel backs a touched 2 MB range by small pages when it has no
// huge page free. The heap mapped before the range is advised with it, and
// its blocks in use collapsed into huge pages, since the allocator fills
// it first. The heap beyond is mapped as before.
// Only the first call acts; every call reports whether it advised a range.
func Prepare(n int) bool {
	once.Do(func() { advised = prepare(n) })
	return advised
}

var (
	once    sync.Once
	advised bool
)

// madviseMode says whether the kernel gives huge pages to the ranges
// advised for them only.
func madviseMode() bool {
	var buf [128]byte
	n, err := readPrefix(thpEnabled, buf[:])
	return err == nil && strings.Contains(string(buf[:n]), "[madvise]")
}

// readPrefix reads the start of the file at path into buf, with three
// system calls where os.ReadFile makes five or six: each costs
// microseconds on virtual machines. One read gives the whole of a sysfs
// file of less than a page.
func readPrefix(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.Read(fd, buf)
}

// adviseBelow advises the range [lo, hi) for huge pages, and collapses
// into huge pages the 2 MB blocks below at that the program has touched in
// part (MADV_COLLAPSE, Linux 6.1), whose free pages would otherwise fault
// 4 KB at a time; the others get huge pages on their first touch.
func adviseBelow(lo, at, hi uintptr) error {
	if err := madvise(lo, hi-lo, unix.MADV_HUGEPAGE); err != nil {
		return err
	}
	// One block per call: the kernel gives up on a range at a block it
	// cannot collapse, one never touched among them, and a block whose
	// pages are still in a CPU's batch for the LRU lists fails once with
	// EAGAIN. A collapse copies the block (a few hundred microseconds):
	// the blocks nearest at are collapsed, those the allocator fills next,
	// and no more than maxCollapse of them.
	end := min((at+hugePage-1)&^(hugePage-1), hi&^(hugePage-1))
	start := (lo + hugePage - 1) &^ (hugePage - 1)
	if end > maxCollapse*hugePage {
		start = max(start, end-maxCollapse*hugePage)
	}
	for blk := start; blk+hugePage <= end; blk += hugePage {
		if madvise(blk, hugePage, unix.MADV_COLLAPSE) == unix.EAGAIN {
			madvise(blk, hugePage, unix.MADV_COLLAPSE)
		}
	}
	return nil
}

// maxCollapse bounds the blocks adviseBelow collapses.
const maxCollapse = 4

func prepare(n int) bool {
	if n <= 0 || os.Getenv(Knob) == "0" || !madviseMode() {
		return false
	}
	prev := debug.SetGCPercent(-1)
	b := make([]byte, n)
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	// The heap mapped before b and the rest of the last range the runtime
	// mapped with b: the allocator takes the lowest free pages first, so
	// that what the program allocates next goes below b before it goes
	// into b's range, and a 2 MB block that the advice covers only in part
	// never gets a huge page.
	lo, hi, ok := heapRange(at)
	if !ok || lo > at || hi < at+uintptr(n) {
		lo, hi = at, at+uintptr(n)
	}
	err := adviseBelow(lo, at, hi)
	runtime.GC() // b is dead here: the collection frees it
	debug.SetGCPercent(prev)
	prepared = span{at, at + uintptr(n)}
	return err == nil
}

// madvise is madvise(2) of a range the program does not hold as a slice.
func madvise(addr, n uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, n, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// hugePage is the size of a transparent huge page on amd64 and arm64
// with 4 KB pages.
const hugePage = 2 << 20

// heapRange is the range of readable and writable private anonymous
// memory around addr in /proc/self/maps: the mapping that holds it and
// those adjacent to it, as the runtime maps its heap upwards in
// consecutive ranges (which the kernel merges into one mapping until
// advice differs between them).
//
// The kernel writes the file as it is read, and the heap's mappings come
// before the shared libraries' and the threads' stacks, which most of its
// lines are about: it is read only until a line past the range.
func heapRange(addr uintptr) (lo, hi uintptr, ok bool) {
	fd, err := unix.Open("/proc/self/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	defer unix.Close(fd)
	data := make([]byte, 0, 8<<10)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err != nil {
			return 0, 0, false
		}
		data = data[:len(data)+n]
		whole := data[:bytes.LastIndexByte(data, '\n')+1]
		lo, hi, ok, past := heapRangeIn(whole, addr)
		if past || n == 0 {
			return lo, hi, ok
		}
	}
}

// heapRangeIn is heapRange in data, whole lines of /proc/self/maps; past
// says whether data goes on beyond the range (or beyond addr, when no
// range holds it), so that more lines would not change the answer.
func heapRangeIn(data []byte, addr uintptr) (lo, hi uintptr, ok, past bool) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		// "lo-hi perms offset dev inode [path]"
		f := bytes.Fields(line)
		var a, b uint64
		var err1, err2 error
		if len(f) > 0 {
			l, h, _ := bytes.Cut(f[0], []byte("-"))
			a, err1 = strconv.ParseUint(string(l), 16, 64)
			b, err2 = strconv.ParseUint(string(h), 16, 64)
		}
		if err1 != nil || err2 != nil || len(f) == 0 {
			continue
		}
		heap := len(f) == 5 && string(f[1]) == "rw-p" && string(f[4]) == "0"
		if !heap || uintptr(a) != hi {
			// The run of adjacent mappings ends here.
			if ok || uintptr(a) > addr {
				return lo, hi, ok, true
			}
			lo, hi = 0, 0
			if !heap {
				continue
			}
			lo = uintptr(a)
		}
		hi = uintptr(b)
		ok = ok || addr >= lo && addr < hi
	}
	return lo, hi, ok, false
}

type span struct{ lo, hi uintptr }

// prepared is the range Prepare advised, for the tests.
var prepared span
