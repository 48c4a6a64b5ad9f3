package records

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/klauspost/compress/zstd"
)

// cutN cuts p into buffers of whole records of at most size bytes.
func cutN(p []byte, size int) [][]byte {
	var out [][]byte
	for off := 0; off < len(p); {
		end := off
		for end < len(p) {
			_, _, need := record(p, end)
			if end+HeaderSize+need-off > size {
				break
			}
			end += HeaderSize + need
		}
		out = append(out, p[off:end])
		off = end
	}
	return out
}

// encodeSources are the record streams of the encoder benchmarks.
func encodeSources() []struct {
	name string
	p    []byte
} {
	return []struct {
		name string
		p    []byte
	}{{"Cheap", cheapCalls(1 << 16)}, {"Halo", haloCalls(1 << 16)}, {"Pingpong", pingpongCalls(1 << 16)}}
}

// BenchmarkEncodeStages splits the Go side's cost per event (CPU time) into
// its stages, on 128 KB buffers: Decode, the batch's varint columns
// (WriteBatch without compression) and zstd at the tracer's level
// (EncodeAll of the batch's protobuf bytes), each with warm caches and with
// 8 MB written before each buffer (cold-), and zstd without entropy coding
// (the literals' Huffman coding is the difference).
func BenchmarkEncodeStages(b *testing.B) {
	for _, src := range encodeSources() {
		bufs := cutN(src.p, 128<<10)
		b.Run(src.name, func(b *testing.B) {
			conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
			var raw bytes.Buffer
			w, _ := traceformat.NewWriter(&raw, &tracepb.Header{}, traceformat.WriterOptions{Raw: true})
			zopts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false)}
			enc, _ := zstd.NewWriter(nil, zopts...)
			lit, _ := zstd.NewWriter(nil, append(zopts, zstd.WithNoEntropyCompression(true))...)
			dst := make([]byte, 0, 256<<10)
			evict := make([]byte, 8<<20)
			var batch traceformat.Builder
			var t [2][4]int64 // warm, cold: decode, columns, zstd, zstd without entropy
			n := 0
			for i := 0; i < b.N; i++ {
				for cold := range 2 {
					for _, p := range bufs {
						if cold == 1 {
							for x := 0; x < len(evict); x += 64 {
								evict[x]++
							}
						}
						c0 := cpuNs()
						batch.Reset()
						if err := Decode(&batch, p, 0, conv); err != nil {
							b.Fatal(err)
						}
						c1 := cpuNs()
						raw.Reset()
						w.WriteBatch(&batch)
						c2 := cpuNs()
						frame := raw.Bytes()[traceformat.FrameHeaderSize:]
						dst = enc.EncodeAll(frame, dst[:0])
						c3 := cpuNs()
						dst = lit.EncodeAll(frame, dst[:0])
						c4 := cpuNs()
						for k, d := range [4]int64{c1 - c0, c2 - c1, c3 - c2, c4 - c3} {
							t[cold][k] += d
						}
						n += (1 - cold) * batch.Len()
					}
				}
			}
			for cold, pre := range []string{"", "cold-"} {
				for k, name := range []string{"decode", "columns", "zstd", "zstd-rawlit"} {
					b.ReportMetric(float64(t[cold][k])/float64(n), pre+name+"-ns/event")
				}
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkEncodeFrameSize is the Go side's cost per event (Decode,
// encoding, zstd at the tracer's level) and the bytes per event with
// buffers (one frame each) of 64 KB to 512 KB, the sizes alternated in
// one run: zstd's per-frame work (the literals' Huffman table, the
// sequences' FSE tables) is spread over more events in a larger frame.
func BenchmarkEncodeFrameSize(b *testing.B) {
	sizes := []int{64 << 10, 128 << 10, 256 << 10, 512 << 10}
	for _, src := range encodeSources() {
		if src.name == "Cheap" {
			continue // a few frames of a few bytes: nothing to spread
		}
		p := src.p
		p = append(p[:len(p):len(p)], p...) // room for several 512 KB buffers
		sets := make([][][]byte, len(sizes))
		for i, s := range sizes {
			sets[i] = cutN(p, s)
		}
		b.Run(src.name, func(b *testing.B) {
			conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
			var cpu, off [4]int64
			var n [4]int
			var ws [4]*traceformat.Writer
			for i := range ws {
				ws[i], _ = traceformat.NewWriter(io.Discard, &tracepb.Header{WorldSize: 1}, traceformat.WriterOptions{Level: zstd.SpeedFastest})
				off[i] = ws[i].Offset()
			}
			var batch traceformat.Builder
			for i := 0; i < b.N; i++ {
				for k := range sizes {
					j := (i + k) % len(sizes) // the sizes take turns in going first
					c0 := cpuNs()
					for _, p := range sets[j] {
						batch.Reset()
						if err := Decode(&batch, p, 0, conv); err != nil {
							b.Fatal(err)
						}
						ws[j].WriteBatch(&batch)
						n[j] += batch.Len()
					}
					cpu[j] += cpuNs() - c0
				}
			}
			for j, s := range sizes {
				b.ReportMetric(float64(cpu[j])/float64(n[j]), fmt.Sprintf("cpu-ns/event-%dK", s>>10))
				b.ReportMetric(float64(ws[j].Offset()-off[j])/float64(n[j]), fmt.Sprintf("B/event-%dK", s>>10))
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
