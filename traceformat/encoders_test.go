package traceformat

import (
	"bytes"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
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

// TestDeferredFramesUncompressed checks that a Deferred writer stores its
// frames uncompressed and makes no zstd encoder until Compress, and that
// CopyFrame into a compressing writer compresses the protobuf chunks such
// a file holds (they decode as before) and copies raw records as they are.
func TestDeferredFramesUncompressed(t *testing.T) {
	opts := WriterOptions{Level: zstd.SpeedFastest, Deferred: true}
	k := encKey{opts.Level, false}
	clearEncoders()
	var buf bytes.Buffer
	w, err := NewWriterAhead(&buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(w.WriteDefinitions(testDefs()))
	check(w.Start(testHeader()))
	check(w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, LocalSendNs: []int64{1, 2}}))
	check(w.WriteRecords(make([]byte, 64), bytes.Repeat([]byte("records "), 100)))
	if n := freeEncoders(k); n != 0 || w.enc != nil {
		t.Fatalf("a deferred writer made an encoder before Compress (%d kept)", n)
	}
	w.Compress()
	check(w.WriteDefinitions(testDefs()))
	check(w.WriteRecords(make([]byte, 64), bytes.Repeat([]byte("records "), 100)))
	check(w.Close(&tracepb.Footer{StopReason: tracepb.Footer_FINALIZE}))

	type frameSeen struct {
		kind Kind
		enc  Encoding
	}
	scan := func(b []byte, each func(f *Frame)) []frameSeen {
		t.Helper()
		sc, err := NewFrameScanner(bytes.NewReader(b), "t")
		if err != nil {
			t.Fatal(err)
		}
		var seen []frameSeen
		for {
			f, err := sc.Next()
			if err != nil {
				break
			}
			seen = append(seen, frameSeen{f.Kind, f.Enc})
			if each != nil {
				each(f)
			}
		}
		return seen
	}
	want := []frameSeen{{KindHeader, EncodingRaw}, {KindDefinitions, EncodingRaw}, {KindClockSync, EncodingRaw},
		{KindRecords, EncodingRaw}, {KindDefinitions, EncodingZstd}, {KindRecords, EncodingRaw}, {KindFooter, EncodingZstd}}
	if got := scan(buf.Bytes(), nil); !slices.Equal(got, want) {
		t.Fatalf("frames %v, want %v", got, want)
	}

	// Copied into a compressing writer: every protobuf chunk compressed,
	// the same message; records as they were.
	var out bytes.Buffer
	cw, err := NewWriter(&out, testHeader(), WriterOptions{Level: zstd.SpeedFastest})
	if err != nil {
		t.Fatal(err)
	}
	var msgs, recs [][]byte
	scan(buf.Bytes(), func(f *Frame) {
		if f.Kind == KindHeader || f.Kind == KindFooter {
			return
		}
		m, err := f.AppendMessage(nil)
		check(err)
		if f.Kind == KindRecords {
			recs = append(recs, slices.Clone(f.Bytes))
		} else {
			msgs = append(msgs, m)
		}
		check(cw.CopyFrame(f))
	})
	check(cw.Close(nil))
	var gotMsgs, gotRecs [][]byte
	seen := scan(out.Bytes(), func(f *Frame) {
		switch f.Kind {
		case KindRecords:
			gotRecs = append(gotRecs, slices.Clone(f.Bytes))
		case KindDefinitions, KindClockSync:
			if f.Enc != EncodingZstd {
				t.Errorf("a copied %s frame is stored %v, want zstd", f.Kind, f.Enc)
			}
			m, err := f.AppendMessage(nil)
			check(err)
			gotMsgs = append(gotMsgs, m)
		}
	})
	if len(seen) != 7 || !slices.EqualFunc(gotMsgs, msgs, bytes.Equal) || !slices.EqualFunc(gotRecs, recs, bytes.Equal) {
		t.Errorf("copied: %v; %d messages (want %d the same), %d record frames (want %d the same)",
			seen, len(gotMsgs), len(msgs), len(gotRecs), len(recs))
	}
}
