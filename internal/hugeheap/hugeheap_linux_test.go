package hugeheap

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags is the VmFlags line of the mapping of /proc/self/smaps that
// holds addr.
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && !strings.HasSuffix(f[0], ":") {
			// A mapping's header: "lo-hi perms offset dev inode [path]".
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(a) <= addr && addr < uintptr(b)
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return ""
}

// TestPrepare: the heap allocated after Prepare lies in the range it
// advised, whose mapping the kernel marks as advised for huge pages (the
// "hg" flag), and the program's heap goes on growing past it.
func TestPrepare(t *testing.T) {
	mode, err := os.ReadFile(thpEnabled)
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages not in madvise mode (%q, %v): Prepare does nothing", mode, err)
	}
	const n = 16 << 20
	if !Prepare(n) {
		t.Fatal("Prepare did not advise the range")
	}
	if lo := prepared.lo; !Prepare(n) || prepared.lo != lo {
		t.Fatal("a second Prepare acted again")
	}
	var in, out int
	var keep [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 512<<10)
		b[0], b[len(b)-1] = 1, 1
		keep = append(keep, b)
		at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if prepared.lo <= at && at < prepared.hi {
			in++
			if flags := vmFlags(t, at); !strings.Contains(flags+" ", " hg ") {
				t.Fatalf("allocation at %#x in the prepared range [%#x, %#x) not advised: %s", at, prepared.lo, prepared.hi, flags)
			}
		} else {
			out++
		}
	}
	// 32 MB allocated: at least the 16 MB prepared hold some, the rest
	// grows the heap as before.
	if in < 16 || out == 0 {
		t.Fatalf("%d of 64 allocations of 512 KB in the prepared 16 MB, %d outside", in, out)
	}
	runtime.KeepAlive(keep)
}

func TestPrepareKnob(t *testing.T) {
	t.Setenv(Knob, "0")
	if prepare(4 << 20) {
		t.Fatal("prepare advised with the knob at 0")
	}
}
