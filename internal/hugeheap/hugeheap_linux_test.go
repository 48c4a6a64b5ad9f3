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

// TestHeapRangeIn: the range around an address is the run of adjacent
// private anonymous read-write mappings that holds it, whatever the
// mappings before and after it are.
func TestHeapRangeIn(t *testing.T) {
	maps := `00400000-00404000 r--p 00000000 fe:00 9978463                            /usr/bin/dtpa
00dcb000-02e0a000 rw-p 00000000 00:00 0 
3dfc4000000-3dfc6c00000 ---p 00000000 00:00 0 
3dfc6c00000-3dfc7086000 rw-p 00000000 00:00 0 
3dfc7086000-3dfcb086000 rw-p 00000000 00:00 0 
3dfcb086000-3dfcb400000 rw-p 00000000 00:00 0 
3dfcb400000-3dfcb800000 ---p 00000000 00:00 0 
3dfcb800000-3dfcbc00000 rw-p 00000000 00:00 0 
7f2d34a45000-7f2d34a49000 rw-p 00000000 00:00 0                          [vvar]
7f2d34a49000-7f2d34a4b000 rw-p 00000000 00:00 0 
7f2d34a4b000-7f2d34a4d000 rw-p 00000000 00:00 0`
	for _, c := range []struct {
		addr   uintptr
		lo, hi uintptr
		ok     bool
	}{
		{0x3dfc6c00000, 0x3dfc6c00000, 0x3dfcb400000, true},    // first of a run of three
		{0x3dfc9000000, 0x3dfc6c00000, 0x3dfcb400000, true},    // inside it
		{0x3dfcb3fffff, 0x3dfc6c00000, 0x3dfcb400000, true},    // its last byte
		{0x3dfcb800000, 0x3dfcb800000, 0x3dfcbc00000, true},    // alone between reservations
		{0x00dcc000, 0x00dcb000, 0x02e0a000, true},             // after a file's mapping
		{0x7f2d34a4c000, 0x7f2d34a49000, 0x7f2d34a4d000, true}, // a run at the end, after a named mapping
		{0x3dfcb400000, 0, 0, false},                           // a reservation
		{0x00401000, 0, 0, false},                              // a file
		{0x7f2d34a46000, 0, 0, false},                          // a named mapping
		{0x10, 0, 0, false},                                    // nothing
	} {
		lo, hi, ok, _ := heapRangeIn([]byte(maps), c.addr)
		if ok != c.ok || ok && (lo != c.lo || hi != c.hi) {
			t.Errorf("heapRangeIn(%#x) = %#x, %#x, %v; want %#x, %#x, %v", c.addr, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
	// Read in part: the answer is final once a line past the range is in.
	lines := strings.SplitAfter(maps, "\n")
	for _, c := range []struct {
		n        int // lines read
		lo, hi   uintptr
		ok, past bool
	}{
		{2, 0, 0, false, false},
		{4, 0, 0, false, false},
		{5, 0x3dfc6c00000, 0x3dfcb086000, true, false},
		{6, 0x3dfc6c00000, 0x3dfcb400000, true, false},
		{7, 0x3dfc6c00000, 0x3dfcb400000, true, true},
	} {
		lo, hi, ok, past := heapRangeIn([]byte(strings.Join(lines[:c.n], "")), 0x3dfc9000000)
		if ok && (lo != c.lo || hi != c.hi) || ok != c.ok || past != c.past {
			t.Errorf("%d lines: %#x, %#x, %v, past %v; want %#x, %#x, %v, past %v", c.n, lo, hi, ok, past, c.lo, c.hi, c.ok, c.past)
		}
	}
	if _, _, ok, past := heapRangeIn([]byte(maps), 0x3dfcb400000); ok || !past {
		t.Errorf("in a reservation: found %v, past %v", ok, past)
	}
	// The process's own file, read in pieces: its heap holds the test's
	// objects.
	p := new([64]byte)
	sink = p
	if lo, hi, ok := heapRange(uintptr(unsafe.Pointer(p))); !ok || lo > uintptr(unsafe.Pointer(p)) || hi <= uintptr(unsafe.Pointer(p)) {
		t.Errorf("heapRange of a heap object at %p: %#x, %#x, %v", p, lo, hi, ok)
	}
}

var sink *[64]byte

// TestPrepareAdvisesEarlierHeap: the heap the program used before the
// prepared range is advised too, and its blocks touched in part are
// backed by huge pages (collapsed) where the kernel can.
func TestPrepareAdvisesEarlierHeap(t *testing.T) {
	mode, err := os.ReadFile(thpEnabled)
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages not in madvise mode (%q, %v)", mode, err)
	}
	var early [][]byte
	for range 256 {
		early = append(early, make([]byte, 1024))
	}
	at := uintptr(unsafe.Pointer(&early[128][0]))
	if !prepare(8 << 20) {
		t.Fatal("prepare did not advise")
	}
	lo, hi, ok := heapRange(prepared.lo)
	if !ok || lo > at || at >= hi {
		t.Skipf("the early objects at %#x are not in the heap range [%#x, %#x) of the prepared one", at, lo, hi)
	}
	if flags := vmFlags(t, at); !strings.Contains(flags+" ", " hg ") {
		t.Fatalf("heap at %#x below the prepared range not advised: %s", at, flags)
	}
	runtime.KeepAlive(early)
}
