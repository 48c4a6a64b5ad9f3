package traceformat

import (
	"bytes"
	"testing"
)

// BenchmarkDecodeStages splits decoding of the halo mix into its stages,
// per event: zstd, column decode (with checks), and the cursor; and the
// lazy path's check (parse) and walk (Next).
//
// On the shared development machine the times vary by a third from run to
// run; instruction counts do not (0.1 %), and this code's cost follows
// them (Next costs as much per call in the analyzer's interleaved replay
// as in a sequential read: it does not wait on memory), so they are the
// measure to compare changes with: cachegrind's I refs of -bench
// 'DecodeStages/lazy' -benchtime 60x minus those of 10x, over 50 × 65536
// events, with GOGC=off and GOMAXPROCS=1 (lazy-check alone for the
// check). The 8-byte loads, varint8, the per-call attributes decoded in
// Next and check's histogram took them from 82 to 63 (check) and 273 to
// 234 (Next) per event.
func BenchmarkDecodeStages(b *testing.B) {
	evs := haloEvents(1 << 16)
	var bt Builder
	for i := range evs {
		bt.Append(&evs[i])
	}
	var enc batchEncoder
	raw := enc.appendBatch(nil, bt.Batch())
	// Room after the message, as the reader leaves after a decompressed
	// frame (zstdSlack): the lazy path then reads the message in place.
	raw = append(raw, make([]byte, zstdSlack)...)[:len(raw)]
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testHeader(), WriterOptions{})
	comp := w.enc.EncodeAll(raw, nil)
	dec, _ := decoder()
	n := float64(len(evs))
	b.Run("zstd", func(b *testing.B) {
		out := make([]byte, 0, len(raw))
		for i := 0; i < b.N; i++ {
			out, _ = dec.DecodeAll(comp, out[:0])
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
	})
	var d Batch
	b.Run("columns", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := decodeBatch(raw, &d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
	})
	var lb LazyBatch
	b.Run("lazy-check", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := lb.parse(raw); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
	})
	b.Run("lazy-next", func(b *testing.B) {
		var e Event
		for i := 0; i < b.N; i++ {
			lb.Rewind()
			for lb.Next(&e) {
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
	})
	b.Run("cursor", func(b *testing.B) {
		var e Event
		for i := 0; i < b.N; i++ {
			var c Cursor
			for c.Next(&d, &e) {
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
	})
}
