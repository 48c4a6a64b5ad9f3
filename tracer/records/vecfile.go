package records

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// VecFile is a trace file that writes a raw-records frame's header and its
// records with one writev (traceformat.VectorWriter), without copying the
// records behind the header.
type VecFile struct{ *os.File }

// Writev writes a then b, the whole of both unless an error stops it.
func (f VecFile) Writev(a, b []byte) (int, error) {
	fd := int(f.Fd())
	total := 0
	for len(a)+len(b) > 0 {
		n, err := unix.Writev(fd, [][]byte{a, b})
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return total, err
		}
		if n <= 0 {
			return total, io.ErrShortWrite
		}
		total += n
		k := min(n, len(a))
		a, b = a[k:], b[n-k:]
	}
	return total, nil
}
