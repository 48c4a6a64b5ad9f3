// Package params reads and writes the tracer parameters of characteristics.md §1
// (UserStackSize, MaxTraceSize, TraceBufSize): defaults, then tracer.par in
// the current directory, then environment variables of the same names.
package params

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// FileName is the parameter file read from the current directory.
const FileName = "tracer.par"

// Params are the tracer parameters in force.
type Params struct {
	// UserStackSize is the number of return addresses kept per MPI call.
	UserStackSize int
	// MaxTraceSize is the MB for all trace files together; 0 = no limit;
	// -1 = stop when the process's trace buffer is full.
	MaxTraceSize int64
	// TraceBufSize is the per-process buffer size in bytes.
	TraceBufSize uint64
	// Other holds unknown names found in the file, kept for the record.
	Other map[string]string
}

// Defaults returns the parameters used when nothing is set.
func Defaults() Params {
	return Params{UserStackSize: 4, MaxTraceSize: 500, TraceBufSize: 64 << 20}
}

// Load applies dir/tracer.par (when present) and then the environment, looked
// up with getenv, on top of the defaults.
func Load(dir string, getenv func(string) string) (Params, error) {
	p := Defaults()
	f, err := os.Open(filepath.Join(dir, FileName))
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			text, _, _ := strings.Cut(sc.Text(), "#")
			text = strings.TrimSpace(text)
			if text == "" {
				continue
			}
			name, val, ok := strings.Cut(text, "=")
			if !ok {
				return p, fmt.Errorf("%s:%d: expected Name = value", FileName, line)
			}
			if err := p.set(strings.TrimSpace(name), strings.TrimSpace(val)); err != nil {
				return p, fmt.Errorf("%s:%d: %w", FileName, line, err)
			}
		}
		if err := sc.Err(); err != nil {
			return p, err
		}
	}
	for _, name := range []string{"UserStackSize", "MaxTraceSize", "TraceBufSize"} {
		if v := getenv(name); v != "" {
			if err := p.set(name, v); err != nil {
				return p, fmt.Errorf("environment: %w", err)
			}
		}
	}
	return p, nil
}

// Encoded is p as the trace header's TracerParams message, encoded: what
// the tracer's writer takes them as (dtrun's DT_PARAMS, or the encoder's
// answer when the rank reads them itself).
func (p Params) Encoded() ([]byte, error) {
	return proto.Marshal(&tracepb.TracerParams{UserStackSize: uint32(p.UserStackSize), MaxTraceSizeMb: p.MaxTraceSize,
		TraceBufSize: p.TraceBufSize, Other: p.Other})
}

func (p *Params) set(name, val string) error {
	switch name {
	case "UserStackSize":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > 16 {
			return fmt.Errorf("UserStackSize %q: want an integer 0…16", val)
		}
		p.UserStackSize = n
	case "MaxTraceSize":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < -1 {
			return fmt.Errorf("MaxTraceSize %q: want MB ≥ 0, or -1", val)
		}
		p.MaxTraceSize = n
	case "TraceBufSize":
		n, err := ParseSize(val)
		if err != nil || n < 256<<10 {
			return fmt.Errorf("TraceBufSize %q: want bytes ≥ 256K (suffixes K, M, G)", val)
		}
		p.TraceBufSize = n
	default:
		if p.Other == nil {
			p.Other = map[string]string{}
		}
		p.Other[name] = val
	}
	return nil
}

// ParseSize reads a byte count with an optional K, M or G suffix (powers of
// 1024).
func ParseSize(s string) (uint64, error) {
	s = strings.TrimSpace(strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "b")))
	mul := uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err == nil && n > math.MaxUint64/mul {
		return 0, fmt.Errorf("%s: more bytes than 64 bits count", s)
	}
	return n * mul, err
}

// WriteDefault writes a commented tracer.par holding the defaults.
func WriteDefault(w io.Writer) error {
	d := Defaults()
	_, err := fmt.Fprintf(w, `# dtpa tracer parameters (docs/characteristics.md §1). dtrun's tracer reads this file from the
# current directory; an environment variable of the same name overrides a line.

# Return addresses kept per MPI call (call-site depth of the SRC report), 0…16.
UserStackSize = %d

# MB for all trace files together; each process stops tracing past
# MaxTraceSize / nprocs. 0 = no limit; -1 = stop when the process's trace
# buffer (TraceBufSize) is full.
MaxTraceSize = %d

# Per-process trace buffer: memory for records waiting to be compressed and
# written (suffixes K, M, G).
TraceBufSize = %dM
`, d.UserStackSize, d.MaxTraceSize, d.TraceBufSize>>20)
	return err
}
