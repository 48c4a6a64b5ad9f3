//go:build !linux

package hugetext

import "errors"

// Advise does nothing where the kernel has no huge pages to ask for; see
// the Linux version.
func Advise() int { return 0 }

// PageIn is the Linux version's only.
func PageIn(path string) error { return errors.New("hugetext: not supported on this system") }
