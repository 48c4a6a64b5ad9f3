package records

import (
	"math/bits"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/klauspost/compress/zstd"
)

// packFOR is a prototype of a denser time coding than the batch's varint
// columns, for the encoder's next step (tracer/README.md, "Where the
// per-call cost goes"): it appends v bit-packed in blocks of 128 values,
// each block its minimum (varint), a width w that only the block's largest
// value may exceed (then an exception), the values minus the minimum in w
// bits each, and the exceptions (index byte, varint). Packing only: there
// is no decoder, and it is not tuned (a byte append at a time).
func packFOR(out []byte, v []uint64) []byte {
	for s := 0; s < len(v); s += 128 {
		blk := v[s:min(s+128, len(v))]
		lo, hi1, hi2 := blk[0], uint64(0), uint64(0)
		for _, x := range blk {
			lo = min(lo, x)
		}
		for _, x := range blk {
			d := x - lo
			if d > hi1 {
				hi1, hi2 = d, hi1
			} else if d > hi2 {
				hi2 = d
			}
		}
		w := bits.Len64(hi2)
		if bits.Len64(hi1) <= w+2 {
			w = bits.Len64(hi1)
		}
		out = appendUv(out, lo)
		out = append(out, byte(w))
		var acc uint64
		var nb int
		var exc []int
		for i, x := range blk {
			d := x - lo
			if w < 64 && d>>uint(w) != 0 {
				exc = append(exc, i)
				d = 0
			}
			acc |= d << uint(nb)
			nb += w
			for nb >= 8 {
				out = append(out, byte(acc))
				acc >>= 8
				nb -= 8
			}
		}
		if nb > 0 {
			out = append(out, byte(acc))
		}
		out = append(out, byte(len(exc)))
		for _, i := range exc {
			out = append(out, byte(i))
			out = appendUv(out, blk[i]-lo)
		}
	}
	return out
}

func appendUv(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// BenchmarkTimeBitpack measures packFOR on the benchmarks' record streams:
// each 128 KB buffer's gaps (zigzag) and durations in columns per call
// site, packed; bytes per event of the times alone, and with zstd without
// entropy coding on top (which finds the tight loop's repeats).
func BenchmarkTimeBitpack(b *testing.B) {
	for _, src := range encodeSources() {
		bufs := cutN(src.p, 128<<10)
		conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
		// Per buffer and call site, the gap and duration columns.
		type cols struct{ gap, dur map[uint32][]uint64 } // by call site
		var all []cols
		n := 0
		for _, p := range bufs {
			var bt traceformat.Builder
			Decode(&bt, p, 0, conv)
			c := cols{map[uint32][]uint64{}, map[uint32][]uint64{}}
			var cur traceformat.Cursor
			var e traceformat.Event
			prev := bt.BaseNs
			for bb := bt.Batch(); cur.Next(bb, &e); {
				g := e.Entry - prev
				c.gap[e.Site] = append(c.gap[e.Site], zigzag(g))
				c.dur[e.Site] = append(c.dur[e.Site], uint64(e.Exit-e.Entry))
				prev = e.Exit
				n++
			}
			all = append(all, c)
		}
		b.Run(src.name, func(b *testing.B) {
			out := make([]byte, 0, 1<<20)
			total, ztotal := 0, 0
			z, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithNoEntropyCompression(true))
			var zd []byte
			var zc int64
			c0 := cpuNs()
			for i := 0; i < b.N; i++ {
				for _, c := range all {
					out = out[:0]
					for s, v := range c.gap {
						out = packFOR(out, v)
						out = packFOR(out, c.dur[s])
					}
					total += len(out)
					z0 := cpuNs()
					zd = z.EncodeAll(out, zd[:0])
					zc += cpuNs() - z0
					ztotal += len(zd)
				}
			}
			b.ReportMetric(float64(cpuNs()-c0-zc)/float64(b.N*n), "pack-ns/event")
			b.ReportMetric(float64(zc)/float64(b.N*n), "rawlit-ns/event")
			b.ReportMetric(float64(ztotal)/float64(b.N*n), "rawlit-B/event")
			b.ReportMetric(float64(total)/float64(b.N*n), "time-B/event")
		})
	}
}

// zigzag is the zigzag encoding of v (the gap column's).
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }
