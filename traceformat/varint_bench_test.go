package traceformat

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func decS64Bytewise(dst []int64, b []byte) ([]int64, error) {
	for len(b) > 0 {
		if c := b[0]; c < 0x80 {
			dst = append(dst, int64(c>>1)^-int64(c&1))
			b = b[1:]
			continue
		}
		if len(b) > 1 && b[1] < 0x80 {
			v := uint64(b[0]&0x7f) | uint64(b[1])<<7
			dst = append(dst, protowire.DecodeZigZag(v))
			b = b[2:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, protowire.DecodeZigZag(v))
		b = b[n:]
	}
	return dst, nil
}

// BenchmarkVarintColumn compares the branch-free decoder with a byte-wise
// one on the gap column of the halo mix (lengths 1 to 3 bytes, mixed).
func BenchmarkVarintColumn(b *testing.B) {
	evs := haloEvents(1 << 16)
	var bt Batch
	for i := range evs {
		bt.Append(&evs[i])
	}
	var col []byte
	for _, g := range bt.Gap {
		col = protowire.AppendVarint(col, protowire.EncodeZigZag(g))
	}
	dst := make([]int64, 0, len(bt.Gap))
	for _, c := range []struct {
		name string
		f    func([]int64, []byte) ([]int64, error)
	}{{"branchfree", decS64}, {"bytewise", decS64Bytewise}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dst, _ = c.f(dst[:0], col)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(bt.Gap)), "ns/value")
		})
	}
}
