package hugeheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"unsafe"
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
// huge page free. The heap beyond n bytes is mapped as before.
// Only the first call acts; every call reports whether it advised a range.
func Prepare(n int) bool {
	once.Do(func() { advised = prepare(n) })
	return advised
}

var (
	once    sync.Once
	advised bool
)

func prepare(n int) bool {
	if n <= 0 || os.Getenv(Knob) == "0" {
		return false
	}
	mode, err := os.ReadFile(thpEnabled)
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		return false
	}
	prev := debug.SetGCPercent(-1)
	b := make([]byte, n)
	err = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	runtime.GC() // b is dead here: the collection frees it
	debug.SetGCPercent(prev)
	prepared = span{at, at + uintptr(n)}
	return err == nil
}

type span struct{ lo, hi uintptr }

// prepared is the range Prepare advised, for the tests.
var prepared span
