//go:build amd64 || arm64

package traceformat

import "unsafe"

// load8 is the little-endian uint64 at offset p of the bytes at raw, which
// the caller knows to be in bounds (LazyBatch.Next, after the batch's
// check): one load, no bounds check. On these architectures a load may be
// unaligned and is little-endian; the portable form (load8_other.go)
// compiles to the same load plus an inline mark here.
func load8(raw unsafe.Pointer, p uint32) uint64 {
	return *(*uint64)(unsafe.Add(raw, p))
}
