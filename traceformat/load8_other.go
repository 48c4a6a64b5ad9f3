//go:build !(amd64 || arm64)

package traceformat

import (
	"encoding/binary"
	"unsafe"
)

// load8 is the little-endian uint64 at offset p of the bytes at raw, which
// the caller knows to be in bounds (LazyBatch.Next, after the batch's
// check): no bounds check.
func load8(raw unsafe.Pointer, p uint32) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(raw, p))[:])
}
