//go:build amd64 || arm64

package prefetch

// Lines prefetches the cache lines holding addresses p0 … p7
// (prefetch_amd64.s, prefetch_arm64.s).
func Lines(p0, p1, p2, p3, p4, p5, p6, p7 uintptr)
