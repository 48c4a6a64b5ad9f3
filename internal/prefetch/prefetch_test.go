package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesAnyAddress checks that a prefetch of any address is harmless:
// the decoder prefetches lines ahead of its positions, which may lie past
// its buffer's end, in unmapped memory, or nowhere at all.
func TestLinesAnyAddress(t *testing.T) {
	b := make([]byte, 64)
	p := uintptr(unsafe.Pointer(&b[0]))
	Lines(p, p+64, p+1<<20, 0, 1, ^uintptr(0), ^uintptr(0)-63, 1<<47)
}
