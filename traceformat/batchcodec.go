package traceformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// The batch codec is written against protowire instead of the generated
// code because it is the hot path: it appends packed columns straight into
// a reused buffer and decodes them into reused slices, with no allocation
// per batch in the steady state. Which fields there are, and how each is
// encoded, comes from the column table (columns.go); TestBatchMatchesGenerated
// checks that the codec and the generated code agree.

// maxShapes bounds the shape table of one batch. A builder never makes
// more than one shape per event, and MaxBatchEvents bounds those.
const maxShapes = MaxBatchEvents

// batchEncoder holds the reusable state of the batch encoder.
type batchEncoder struct {
	scratch []byte
}

// putVarints writes the varints of v to buf (which has room for them) and
// returns their length; one- and two-byte values, nearly all of a batch's,
// are written inline (measured faster than protowire's or binary's
// encoders, and than a branch-free encoding of up to 5 bytes, even where
// the lengths alternate at random).
func putVarints[T uint32 | uint64](buf []byte, v []T) int {
	k := 0
	for _, x := range v {
		if x < 1<<7 {
			buf[k] = byte(x)
			k++
		} else if x < 1<<14 {
			buf[k+1] = byte(x >> 7)
			buf[k] = byte(x) | 0x80
			k += 2
		} else {
			k = putVarintLong(buf, k, uint64(x))
		}
	}
	return k
}

// putZigZags is putVarints of the zigzag encodings of v.
func putZigZags[T int32 | int64](buf []byte, v []T) int {
	k := 0
	for _, y := range v {
		x := zigzag(int64(y))
		if x < 1<<7 {
			buf[k] = byte(x)
			k++
		} else if x < 1<<14 {
			buf[k+1] = byte(x >> 7)
			buf[k] = byte(x) | 0x80
			k += 2
		} else {
			k = putVarintLong(buf, k, x)
		}
	}
	return k
}

// putVarint is putVarints of one value.
func putVarint(buf []byte, k int, v uint64) int {
	if v < 1<<7 {
		buf[k] = byte(v)
		return k + 1
	}
	return putVarintLong(buf, k, v)
}

// putVarintLong is the out-of-line part of putVarint and putVarints.
//
//go:noinline
func putVarintLong(buf []byte, k int, v uint64) int {
	return k + binary.PutUvarint(buf[k:], v)
}

// zigzag is protowire.EncodeZigZag.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// packed appends field as a packed column of n varints, which put writes
// into buf (room for n varints of any size) and whose length it returns:
// written by index into a buffer grown once, a value costs no append.
func (e *batchEncoder) packed(dst []byte, field protowire.Number, n int, put func(buf []byte) int) []byte {
	if n == 0 {
		return dst
	}
	e.scratch = slices.Grow(e.scratch[:0], n*binary.MaxVarintLen64)
	buf := e.scratch[:cap(e.scratch)]
	k := put(buf)
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	return protowire.AppendBytes(dst, buf[:k])
}

// encodeValue is the varint of a value of a column of encoding enc, as
// Column's accessors give it (signed values sign-extended).
func encodeValue(enc Enc, v uint64) uint64 {
	switch enc {
	case EncS32, EncS64:
		return zigzag(int64(v))
	}
	return v
}

// decodeValue is the inverse of encodeValue (with the truncation of the
// 32-bit encodings that the typed column decoders apply).
func decodeValue(enc Enc, v uint64) uint64 {
	switch enc {
	case EncU32:
		return u32(v)
	case EncS32:
		return s32(zz32(v))
	case EncS64:
		return uint64(protowire.DecodeZigZag(v))
	}
	return v
}

// appendBatch appends the protobuf encoding of b to dst, column by column
// in the order of the table.
func (e *batchEncoder) appendBatch(dst []byte, b *Batch) []byte {
	for i := range columns {
		c := &columns[i]
		switch c.Form {
		case FormScalar:
			var v uint64
			switch c.Field {
			case fThread:
				v = uint64(b.thread)
			case fBaseNs:
				v = uint64(b.baseNs)
			case fCount:
				v = uint64(b.Len())
			}
			if v != 0 {
				dst = protowire.AppendTag(dst, c.Field, protowire.VarintType)
				dst = protowire.AppendVarint(dst, v)
			}
		case FormEvent:
			n := len(b.shapeIdx)
			switch c.Field {
			case fShape:
				dst = e.packed(dst, c.Field, n, func(buf []byte) int { return putVarints(buf, b.shapeIdx) })
			case fGap:
				dst = e.packed(dst, c.Field, n, func(buf []byte) int { return putZigZags(buf, b.gap) })
			case fDur:
				dst = e.packed(dst, c.Field, n, func(buf []byte) int { return putVarints(buf, b.dur) })
			}
		case FormShape, FormStatic:
			// One value per shape (having the column's bit).
			n := 0
			for i := range b.shapes {
				if c.Attr == 0 || b.shapes[i].attr&c.Attr != 0 {
					n++
				}
			}
			dst = e.packed(dst, c.Field, n, func(buf []byte) int {
				k := 0
				for i := range b.shapes {
					if sh := &b.shapes[i]; c.Attr == 0 || sh.attr&c.Attr != 0 {
						k = putVarint(buf, k, encodeValue(c.Enc, c.shapeGet(sh)))
					}
				}
				return k
			})
		case FormPerCall:
			switch c.Field {
			case fNReqs:
				dst = e.packed(dst, c.Field, len(b.nreqs), func(buf []byte) int { return putVarints(buf, b.nreqs) })
			case fReqs:
				dst = e.packed(dst, c.Field, len(b.reqs), func(buf []byte) int {
					k := 0
					var prev uint64
					for _, x := range b.reqs {
						k = putVarint(buf, k, zigzag(int64(x-prev)))
						prev = x
					}
					return k
				})
			case fStatusSource, fStatusTag:
				tag := c.Field == fStatusTag
				dst = e.packed(dst, c.Field, len(b.status), func(buf []byte) int {
					k := 0
					for _, x := range b.status {
						v := x.Source
						if tag {
							v = x.Tag
						}
						k = putVarint(buf, k, zigzag(int64(v)))
					}
					return k
				})
			default:
				if r := rareOf[i]; r >= 0 && int(r) < len(b.rare) {
					col := b.rare[r]
					dst = e.packed(dst, c.Field, len(col), func(buf []byte) int {
						k := 0
						for _, v := range col {
							k = putVarint(buf, k, encodeValue(c.Enc, v))
						}
						return k
					})
				}
			}
		}
	}
	return dst
}

var errVarint = errors.New("bad varint")

// varints calls f for each varint of a packed column (or for the single
// value of a non-packed field, which proto3 decoders must also accept).
// The one-byte case is inlined because it is by far the most common.
func varints(b []byte, f func(uint64)) error {
	for len(b) > 0 {
		if c := b[0]; c < 0x80 {
			f(uint64(c))
			b = b[1:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return errVarint
		}
		f(v)
		b = b[n:]
	}
	return nil
}

func zz32(v uint64) int32 { return int32(protowire.DecodeZigZag(v & 0xffffffff)) }

// The typed column decoders below are the decode hot path: a loop per
// column over an index (cheaper than re-slicing), with the one- and
// two-byte varints inlined, instead of a callback per value. Branch-free
// decoders (4 or 8 bytes loaded at once, the length from the stop bits)
// were measured slower, even on the halo mix's gap column whose one- and
// two-byte values alternate at random (4.9-5.1 ns per value for 4 bytes at
// once, 4.1-4.3 for two values per 8-byte load, 3.1-3.6 for this loop):
// their chain of dependent instructions per value is longer than the
// mispredictions cost.

func decU32[T ~uint32](dst []T, b []byte) ([]T, error) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			dst = append(dst, T(c))
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] < 0x80 {
			dst = append(dst, T(uint32(c&0x7f)|uint32(b[i+1])<<7))
			i += 2
			continue
		}
		v, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, T(v))
		i += n
	}
	return dst, nil
}

// decShapeIdx is decU32 that also returns the largest index, so that the
// range check of the indexes needs no loop of its own.
func decShapeIdx(dst []uint32, b []byte) ([]uint32, uint32, error) {
	var hi uint32
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			dst = append(dst, uint32(c))
			hi = max(hi, uint32(c))
			i++
			continue
		}
		v, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return dst, hi, errVarint
		}
		v = min(v, 0xffffffff) // out of range whatever the table
		dst = append(dst, uint32(v))
		hi = max(hi, uint32(v))
		i += n
	}
	return dst, hi, nil
}

// decDur decodes the duration column and checks on the way that every
// duration is representable as an int64 (the top bit of none is set).
func decDur(dst []uint64, b []byte) ([]uint64, error) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			dst = append(dst, uint64(c))
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] < 0x80 {
			dst = append(dst, uint64(c&0x7f)|uint64(b[i+1])<<7)
			i += 2
			continue
		}
		v, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return dst, errVarint
		}
		if v >= 1<<63 {
			return dst, errors.New("duration out of range")
		}
		dst = append(dst, v)
		i += n
	}
	return dst, nil
}

func decS32(dst []int32, b []byte) ([]int32, error) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			dst = append(dst, int32(c>>1)^-int32(c&1))
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] < 0x80 {
			v := uint32(c&0x7f) | uint32(b[i+1])<<7
			dst = append(dst, int32(v>>1)^-int32(v&1))
			i += 2
			continue
		}
		v, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, zz32(v))
		i += n
	}
	return dst, nil
}

func decS64(dst []int64, b []byte) ([]int64, error) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			dst = append(dst, int64(c>>1)^-int64(c&1))
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] < 0x80 {
			v := uint64(c&0x7f) | uint64(b[i+1])<<7
			dst = append(dst, int64(v>>1)^-int64(v&1))
			i += 2
			continue
		}
		v, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, protowire.DecodeZigZag(v))
		i += n
	}
	return dst, nil
}

// decReqs decodes the request-id column (zigzag deltas) straight into
// absolute ids, continuing from prev.
func decReqs(dst []uint64, b []byte, prev uint64) ([]uint64, error) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			prev += uint64(int64(c>>1) ^ -int64(c&1))
			dst = append(dst, prev)
			i++
			continue
		}
		v, n := protowire.ConsumeVarint(b[i:])
		if n < 0 {
			return dst, errVarint
		}
		prev += uint64(protowire.DecodeZigZag(v))
		dst = append(dst, prev)
		i += n
	}
	return dst, nil
}

// decodeValues decodes a packed column of encoding enc into values as
// Column's accessors take them: for the columns with few values (the
// shape table, the rare per-call columns).
func decodeValues(dst []uint64, b []byte, enc Enc) ([]uint64, error) {
	start := len(dst)
	for i := 0; i < len(b); {
		v, n := uint64(b[i]), 1
		if v >= 0x80 {
			if i+1 < len(b) && b[i+1] < 0x80 {
				v, n = v&0x7f|uint64(b[i+1])<<7, 2 // inline: a call per value cost more
			} else if v, n = protowire.ConsumeVarint(b[i:]); n < 0 {
				return dst, errVarint
			}
		}
		dst = append(dst, v)
		i += n
	}
	// decodeValue in a loop per encoding, not a switch per value.
	vals := dst[start:]
	switch enc {
	case EncU32:
		for k, v := range vals {
			vals[k] = u32(v)
		}
	case EncS32:
		for k, v := range vals {
			vals[k] = s32(zz32(v))
		}
	case EncS64:
		for k, v := range vals {
			vals[k] = uint64(protowire.DecodeZigZag(v))
		}
	}
	return dst, nil
}

// batchDecoder is the reusable decoding state of a Batch.
type batchDecoder struct {
	tab      tableDec
	src, tag []int32 // the status columns as parsed
	have     []int   // values by lazy column index (lazyCols)
}

// decodeBatch decodes a protobuf EventBatch into b, reusing b's storage,
// then checks that it is consistent so that a Cursor cannot index out of
// range.
func decodeBatch(data []byte, b *Batch) error {
	if b.dec == nil {
		b.dec = &batchDecoder{}
		b.rare = make([][]uint64, len(rareCols))
	}
	d := b.dec
	t := &d.tab
	t.reset()
	b.thread, b.baseNs, b.shapes = 0, 0, nil
	b.gap, b.dur, b.shapeIdx = b.gap[:0], b.dur[:0], b.shapeIdx[:0]
	b.nreqs, b.reqs, b.status = b.nreqs[:0], b.reqs[:0], b.status[:0]
	for r := range b.rare {
		b.rare[r] = b.rare[r][:0]
	}
	src, tag := d.src[:0], d.tag[:0]
	var hiShape uint32
	err := batchFields(data, func(c *Column, payload, rest []byte) error {
		var err error
		switch c.Field {
		case fShape:
			var hi uint32
			b.shapeIdx, hi, err = decShapeIdx(b.shapeIdx, payload)
			hiShape = max(hiShape, hi)
		case fGap:
			b.gap, err = decS64(b.gap, payload)
		case fDur:
			b.dur, err = decDur(b.dur, payload)
		case fNReqs:
			b.nreqs, err = decU32(b.nreqs, payload)
		case fReqs:
			prev := uint64(0)
			if n := len(b.reqs); n > 0 {
				prev = b.reqs[n-1]
			}
			b.reqs, err = decReqs(b.reqs, payload, prev)
		case fStatusSource:
			src, err = decS32(src, payload)
		case fStatusTag:
			tag, err = decS32(tag, payload)
		default:
			if r := rareOf[colByField[c.Field]]; r >= 0 {
				b.rare[r], err = decodeValues(b.rare[r], payload, c.Enc)
				break
			}
			if err := t.field(c, payload); err != nil {
				return err
			}
			if c.Field == fCount {
				// Room for the per-event columns at once (the count comes
				// first as written). Each event takes at least one byte of
				// what follows, so a lying count costs no more memory than
				// the batch's own bytes.
				hint := int(min(t.count, uint64(len(rest))))
				b.shapeIdx = slices.Grow(b.shapeIdx, hint)
				b.gap = slices.Grow(b.gap, hint)
				b.dur = slices.Grow(b.dur, hint)
			}
		}
		if err != nil {
			return fmt.Errorf("event batch: field %d: %v", c.Field, err)
		}
		if len(b.shapeIdx) > MaxBatchEvents {
			return fmt.Errorf("event batch: more than %d events or shapes", MaxBatchEvents)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.thread, b.baseNs = t.thread, t.baseNs
	d.src, d.tag = src, tag
	if len(tag) != len(src) {
		return fmt.Errorf("event batch: %d status sources but %d status tags", len(src), len(tag))
	}
	if n := len(tag); n > 0 {
		st := slices.Grow(b.status[:0], n)[:n]
		for i, t := range tag {
			st[i] = Status{Source: src[i], Tag: t}
		}
		b.status = st
	}
	n := len(b.shapeIdx)
	if err := t.eventColumns(n, len(b.gap), len(b.dur)); err != nil || n == 0 {
		return err
	}
	if err := t.fold(); err != nil {
		return err
	}
	b.shapes = t.shapes
	ns := len(t.shapes)
	if int(hiShape) >= ns {
		return fmt.Errorf("event batch: shape index %d of %d", hiShape, ns)
	}
	h := t.histogram()
	for _, s := range b.shapeIdx {
		h[s]++
	}
	have := d.have[:0]
	for _, k := range lazyCols {
		c := &columns[k]
		v := 0
		switch c.Field {
		case fNReqs:
			v = len(b.nreqs)
		case fReqs:
			v = len(b.reqs)
		case fStatusSource, fStatusTag:
			v = len(b.status)
		default:
			if r := rareOf[k]; r >= 0 {
				v = len(b.rare[r])
			}
		}
		have = append(have, v)
	}
	d.have = have
	nreqs, idx := b.nreqs, b.shapeIdx
	return t.perCall(have, func() int {
		s := 0
		for _, k := range nreqs {
			s += int(k)
		}
		return s
	}, func(kind []uint8) int {
		st, j := 0, 0
		for _, s := range idx {
			if d := kind[s]; d != 0 {
				if d == 2 {
					st += int(nreqs[j])
				}
				j++
			}
		}
		return st
	})
}

// tableDec is what both decoders (decodeBatch, LazyBatch.parse) do alike,
// driven by the column table: the scalar fields, the shape table, and the
// checks that every per-call column holds the values its events call for.
type tableDec struct {
	thread uint32
	baseNs int64
	count  uint64
	cols   [len(columns)][]uint64 // the shape-table columns as parsed, by column index
	shapes []shape
	hist   []int32 // events by shape
	kind   []uint8 // perCall's scratch
}

func (t *tableDec) reset() {
	t.thread, t.baseNs, t.count = 0, 0, 0
	for i := range t.cols {
		t.cols[i] = t.cols[i][:0]
	}
	t.shapes = t.shapes[:0]
}

// field parses a field of FormScalar, FormShape or FormStatic.
func (t *tableDec) field(c *Column, payload []byte) error {
	var err error
	switch c.Form {
	case FormScalar:
		switch c.Field {
		case fThread:
			err = varints(payload, func(v uint64) { t.thread = uint32(v) })
		case fBaseNs:
			err = varints(payload, func(v uint64) { t.baseNs = int64(v) })
		case fCount:
			err = varints(payload, func(v uint64) { t.count = v })
			if t.count > MaxBatchEvents {
				return fmt.Errorf("event batch: count %d exceeds the limit %d", t.count, MaxBatchEvents)
			}
		}
	case FormShape, FormStatic:
		i := colByField[c.Field]
		t.cols[i], err = decodeValues(t.cols[i], payload, c.Enc)
	}
	if err != nil {
		return fmt.Errorf("event batch: field %d: %v", c.Field, err)
	}
	if len(t.cols[colFunc]) > maxShapes {
		return fmt.Errorf("event batch: more than %d events or shapes", MaxBatchEvents)
	}
	return nil
}

// eventColumns checks the lengths of the per-event columns.
func (t *tableDec) eventColumns(shapes, gaps, durs int) error {
	if uint64(shapes) != t.count {
		return fmt.Errorf("event batch: count says %d events, shape column has %d", t.count, shapes)
	}
	if gaps != shapes || durs != shapes {
		return fmt.Errorf("event batch: per-event columns differ in length (shape %d, gap %d, dur %d)", shapes, gaps, durs)
	}
	return nil
}

// fold builds the shape table from its columns: every FormShape column has
// one value per shape, every FormStatic column one per shape having its
// bit.
func (t *tableDec) fold() error {
	ns := len(t.cols[colFunc])
	for _, k := range shapeTabCols {
		if c := &columns[k]; c.Form == FormShape && len(t.cols[k]) != ns || ns == 0 {
			return fmt.Errorf("event batch: shape table columns differ in length (func %d, %s %d)", ns, c.Name, len(t.cols[k]))
		}
	}
	t.shapes = slices.Grow(t.shapes[:0], ns)[:ns]
	// One pass over the shapes: the FormShape columns, then the static
	// columns of the shape's bits (staticByBit), each from its own position.
	var pos [len(columns)]int
	for s := range t.shapes {
		sh := &t.shapes[s]
		*sh = shape{}
		for _, k := range formShapeCols {
			columns[k].shapeSet(sh, t.cols[k][s])
		}
		a := sh.attr
		if a&^attrKnown != 0 {
			return fmt.Errorf("event batch: shape %d: unknown attribute bits %#x", s, uint32(a&^attrKnown))
		}
		for x := uint32(a & staticAttrs); x != 0; x &= x - 1 {
			for _, k := range &staticByBit[bits.TrailingZeros32(x)] {
				if k == 0 {
					break
				}
				k-- // staticByBit holds indexes plus one
				vals := t.cols[k]
				if pos[k] >= len(vals) {
					return errShort(columns[k].Name)
				}
				columns[k].shapeSet(sh, vals[pos[k]])
				pos[k]++
			}
		}
	}
	for _, k := range staticCols {
		if pos[k] != len(t.cols[k]) {
			return fmt.Errorf("event batch: column %s has more values than the shapes call for", columns[k].Name)
		}
	}
	return nil
}

func errShort(col string) error {
	return fmt.Errorf("event batch: column %s has fewer values than the shapes call for", col)
}

// histogram returns t.hist cleared, one entry per shape.
func (t *tableDec) histogram() []int32 {
	ns := len(t.shapes)
	h := slices.Grow(t.hist[:0], ns)[:ns]
	clear(h)
	t.hist = h
	return h
}

// perCall checks that every per-call column holds exactly the values its
// events call for, given the events of each shape (t.hist). have[k] is the
// number of values in the column lazyCols[k] (those of other forms are
// ignored); reqSum returns the sum of the nreqs column's values (called
// once that column's length is right), walk the statuses of the events
// with AttrReqs and AttrStatus when some events with AttrReqs have
// statuses and others not (kind[s] is 1 for a shape with AttrReqs, 2 with
// AttrStatus too, 0 for the others and past the shapes: kind has at least
// 256 entries).
func (t *tableDec) perCall(have []int, reqSum func() int, walk func(kind []uint8) int) error {
	var byBit [32]int // events carrying each bit
	var statusAlone int
	var with, without bool // events with request ids, with statuses and without
	for s, k := range t.hist {
		if k == 0 {
			continue
		}
		a := t.shapes[s].attr &^ staticAttrs
		for x := a; x != 0; x &= x - 1 {
			byBit[bits.TrailingZeros32(uint32(x))] += int(k)
		}
		if a&AttrReqs != 0 {
			with = with || a&AttrStatus != 0
			without = without || a&AttrStatus == 0
		} else if a&AttrStatus != 0 {
			statusAlone += int(k)
		}
	}
	reqs, statuses := -1, -1
	sum := func() int {
		if reqs < 0 {
			reqs = reqSum()
		}
		return reqs
	}
	for j, k := range lazyCols {
		c := &columns[k]
		if c.Form != FormPerCall {
			continue
		}
		var want int
		switch c.Count {
		case CountOne:
			want = byBit[bits.TrailingZeros32(uint32(c.Attr))]
		case CountReqs:
			want = sum()
		case CountStatus:
			if statuses < 0 {
				statuses = statusAlone
				switch {
				case with && !without:
					statuses += sum()
				case with:
					// At least 256 entries, 0 past the shapes: a walk over
					// one-byte shape indexes takes it as an array.
					nk := max(len(t.shapes), 256)
					kind := slices.Grow(t.kind[:0], nk)[:nk]
					clear(kind[len(t.shapes):])
					for s := range t.shapes {
						kind[s] = 0
						if a := t.shapes[s].attr; a&AttrReqs != 0 {
							kind[s] = 1 + uint8(a/AttrStatus&1)
						}
					}
					t.kind = kind
					statuses += walk(kind)
				}
			}
			want = statuses
		}
		if have[j] != want {
			return fmt.Errorf("event batch: column %s has %d values, attributes call for %d", c.Name, have[j], want)
		}
	}
	return nil
}

// batchFields calls f for each field of an event batch's protobuf bytes
// that the column table defines, with its payload (nextBatchField) and the
// bytes after it, and stops at the first error; fields of other numbers or
// wire types are skipped.
func batchFields(data []byte, f func(c *Column, payload, rest []byte) error) error {
	for len(data) > 0 {
		num, payload, rest, use, err := nextBatchField(data)
		if err != nil {
			return err
		}
		data = rest
		if c := column(num); use && c != nil {
			if err := f(c, payload, rest); err != nil {
				return err
			}
		}
	}
	return nil
}

// nextBatchField splits the next field off an event batch's protobuf bytes:
// its number and payload (a length-delimited field's bytes, or a varint's
// own bytes) and the rest; use is false for a field of another wire type,
// which both decoders skip.
func nextBatchField(data []byte) (num protowire.Number, payload, rest []byte, use bool, err error) {
	num, typ, n := protowire.ConsumeTag(data)
	if n < 0 {
		return 0, nil, nil, false, fmt.Errorf("event batch: bad field tag")
	}
	data = data[n:]
	switch typ {
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return 0, nil, nil, false, fmt.Errorf("event batch: field %d: bad length", num)
		}
		return num, v, data[n:], true, nil
	case protowire.VarintType:
		_, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return 0, nil, nil, false, fmt.Errorf("event batch: field %d: bad varint", num)
		}
		return num, data[:n], data[n:], true, nil
	}
	n = protowire.ConsumeFieldValue(num, typ, data)
	if n < 0 {
		return 0, nil, nil, false, fmt.Errorf("event batch: field %d: bad value", num)
	}
	return num, nil, data[n:], false, nil
}
