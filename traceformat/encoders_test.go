package traceformat

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestWriterReusesEncoder: a Writer takes the zstd encoder a closed Writer
// of the same options left, and writes the same bytes with it as with a
// new one; options differing, it gets its own.
func TestWriterReusesEncoder(t *testing.T) {
	for _, opts := range []WriterOptions{{}, {Level: zstd.SpeedFastest}, {Level: zstd.SpeedFastest, RawLiterals: true}} {
		k := encKey{opts.Level, opts.RawLiterals}
		if k.level == 0 {
			k.level = zstd.SpeedDefault
		}
		clearEncoders()
		fresh := writeTestTrace(t, opts, 3)
		if n := freeEncoders(k); n != 1 {
			t.Fatalf("%+v: %d encoders kept after a Writer's Close, want 1", opts, n)
		}
		other := opts
		other.RawLiterals = !opts.RawLiterals
		writeTestTrace(t, other, 1) // another key: its own encoder, this one untouched
		writeTestTrace(t, opts, 1)  // the kept one, used for other data first
		if n := freeEncoders(k); n != 1 {
			t.Fatalf("%+v: %d encoders kept, want the one reused", opts, n)
		}
		if again := writeTestTrace(t, opts, 3); !bytes.Equal(again, fresh) {
			t.Errorf("%+v: a reused encoder wrote %d bytes, a new one %d, not the same", opts, len(again), len(fresh))
		}
	}
	// At most maxFreeEncoders are kept per options.
	clearEncoders()
	var ws []*Writer
	for range maxFreeEncoders + 2 {
		w, err := NewWriter(new(bytes.Buffer), testHeader(), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := w.Close(nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := freeEncoders(encKey{zstd.SpeedDefault, false}); n != maxFreeEncoders {
		t.Errorf("%d encoders kept, want %d", n, maxFreeEncoders)
	}
}

func freeEncoders(k encKey) int {
	encoders.Lock()
	defer encoders.Unlock()
	return len(encoders.free[k])
}

func clearEncoders() {
	encoders.Lock()
	defer encoders.Unlock()
	encoders.free = nil
}
