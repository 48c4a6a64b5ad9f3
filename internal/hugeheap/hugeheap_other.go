//go:build !linux

package hugeheap

// Prepare does nothing where the kernel has no transparent huge pages to
// ask for; see the Linux version.
func Prepare(n int) bool { return false }
