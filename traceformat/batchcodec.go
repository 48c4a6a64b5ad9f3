package traceformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of tracepb.EventBatch. The batch codec is written against
// protowire instead of the generated code because it is the hot path: it
// appends packed columns straight into a reused buffer and decodes them into
// reused slices, with no allocation per batch in the steady state.
// TestBatchMatchesGenerated checks that both agree.
const (
	fThread        = 1
	fBaseNs        = 2
	fCount         = 3
	fShape         = 4
	fGap           = 5
	fDur           = 6
	fFunc          = 7
	fSite          = 8
	fAttr          = 9
	fComm          = 10
	fSendPeer      = 11
	fSendTag       = 12
	fRecvPeer      = 13
	fRecvTag       = 14
	fSendBytes     = 15
	fRecvBytes     = 16
	fRoot          = 17
	fNReqs         = 18
	fReqs          = 19
	fStatusSource  = 20
	fStatusTag     = 21
	fNewComm       = 22
	fPcontrolLevel = 23
	fPcontrolArg   = 24
	fFlag          = 25
	fCalls         = 26
)

// maxShapes bounds the shape table of one batch. The encoder never needs
// more than one shape per event, and MaxBatchEvents bounds those.
const maxShapes = MaxBatchEvents

// batchEncoder holds the reusable state of the batch encoder.
type batchEncoder struct {
	scratch []byte
	index   map[shape]uint32
	shapes  []shape
	idx     []uint32
	// bySite caches the last shape seen at each call site (index+1, 0 =
	// none): a call site nearly always makes the same call, so most events
	// are resolved by one comparison instead of hashing the shape.
	bySite []uint32
	// own is the storage of shapes and idx when they are built here (a
	// batch in the writer's form); for a batch in the decoded form they
	// alias the batch's table.
	own struct {
		shapes []shape
		idx    []uint32
	}
}

// siteCache bounds the per-site cache; sites beyond it use the map alone.
const siteCache = 1 << 16

// shapesOf fills e.shapes and e.idx from a batch in either form.
func (e *batchEncoder) shapesOf(b *Batch) {
	if len(b.shapeIdx) != 0 { // decoded form: the table is there already
		// Aliased, not copied: appendBatch only reads them, and e.own keeps
		// the encoder's own storage for batches in the writer's form.
		e.shapes, e.idx = b.shapes, b.shapeIdx
		return
	}
	e.shapes, e.idx = e.own.shapes, e.own.idx
	if e.index == nil {
		e.index = make(map[shape]uint32)
	}
	clear(e.index)
	clear(e.bySite)
	e.shapes, e.idx = e.shapes[:0], e.idx[:0]
	var comm, send, recv, sb, rb, root int
	for i, a := range b.Attr {
		sh := shape{fn: b.Func[i], site: b.Site[i], attr: a}
		if a&AttrComm != 0 {
			sh.comm = b.Comm[comm]
			comm++
		}
		if a&AttrSend != 0 {
			sh.sendPeer, sh.sendTag = b.SendPeer[send], b.SendTag[send]
			send++
		}
		if a&AttrRecv != 0 {
			sh.recvPeer, sh.recvTag = b.RecvPeer[recv], b.RecvTag[recv]
			recv++
		}
		if a&AttrSendBytes != 0 {
			sh.sendBytes = b.SendBytes[sb]
			sb++
		}
		if a&AttrRecvBytes != 0 {
			sh.recvBytes = b.RecvBytes[rb]
			rb++
		}
		if a&AttrRoot != 0 {
			sh.root = b.Root[root]
			root++
		}
		if sh.site < siteCache {
			if int(sh.site) >= len(e.bySite) {
				e.bySite = append(e.bySite, make([]uint32, int(sh.site)+1-len(e.bySite))...)
			}
			if c := e.bySite[sh.site]; c != 0 && e.shapes[c-1].equal(&sh) {
				e.idx = append(e.idx, c-1)
				continue
			}
		}
		id, ok := e.index[sh]
		if !ok {
			id = uint32(len(e.shapes))
			e.index[sh] = id
			e.shapes = append(e.shapes, sh)
		}
		if sh.site < siteCache {
			e.bySite[sh.site] = id + 1
		}
		e.idx = append(e.idx, id)
	}
	e.own.shapes, e.own.idx = e.shapes, e.idx
}

// equal is s == *o written out: the generated comparison of the struct
// calls memequal, which cost more than the rest of the per-site lookup.
func (s *shape) equal(o *shape) bool {
	return s.fn == o.fn && s.site == o.site && s.attr == o.attr && s.comm == o.comm &&
		s.sendPeer == o.sendPeer && s.sendTag == o.sendTag && s.recvPeer == o.recvPeer && s.recvTag == o.recvTag &&
		s.root == o.root && s.sendBytes == o.sendBytes && s.recvBytes == o.recvBytes
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

// appendBatch appends the protobuf encoding of b to dst.
func (e *batchEncoder) appendBatch(dst []byte, b *Batch) []byte {
	e.shapesOf(b)
	if b.Thread != 0 {
		dst = protowire.AppendTag(dst, fThread, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(b.Thread))
	}
	if b.BaseNs != 0 {
		dst = protowire.AppendTag(dst, fBaseNs, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(b.BaseNs))
	}
	if n := b.Len(); n != 0 {
		dst = protowire.AppendTag(dst, fCount, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(n))
	}
	u32 := func(field protowire.Number, v []uint32) {
		dst = e.packed(dst, field, len(v), func(buf []byte) int { return putVarints(buf, v) })
	}
	s32 := func(field protowire.Number, v []int32) {
		dst = e.packed(dst, field, len(v), func(buf []byte) int { return putZigZags(buf, v) })
	}
	// shapeCol writes one column of the shape table: one value per shape
	// having bit (all shapes when bit is 0).
	shapeCol := func(field protowire.Number, bit Attr, val func(sh *shape) uint64) {
		n := 0
		for i := range e.shapes {
			if bit == 0 || e.shapes[i].attr&bit != 0 {
				n++
			}
		}
		dst = e.packed(dst, field, n, func(buf []byte) int {
			k := 0
			for i := range e.shapes {
				if sh := &e.shapes[i]; bit == 0 || sh.attr&bit != 0 {
					k = putVarint(buf, k, val(sh))
				}
			}
			return k
		})
	}
	zz := func(v int32) uint64 { return zigzag(int64(v)) }

	// The per-event columns.
	n := len(e.idx)
	dst = e.packed(dst, fShape, n, func(buf []byte) int { return putVarints(buf, e.idx) })
	dst = e.packed(dst, fGap, n, func(buf []byte) int { return putZigZags(buf, b.Gap) })
	dst = e.packed(dst, fDur, n, func(buf []byte) int { return putVarints(buf, b.Dur) })
	shapeCol(fFunc, 0, func(sh *shape) uint64 { return uint64(sh.fn) })
	shapeCol(fSite, 0, func(sh *shape) uint64 { return uint64(sh.site) })
	shapeCol(fAttr, 0, func(sh *shape) uint64 { return uint64(sh.attr) })
	shapeCol(fComm, AttrComm, func(sh *shape) uint64 { return uint64(sh.comm) })
	shapeCol(fSendPeer, AttrSend, func(sh *shape) uint64 { return zz(sh.sendPeer) })
	shapeCol(fSendTag, AttrSend, func(sh *shape) uint64 { return zz(sh.sendTag) })
	shapeCol(fRecvPeer, AttrRecv, func(sh *shape) uint64 { return zz(sh.recvPeer) })
	shapeCol(fRecvTag, AttrRecv, func(sh *shape) uint64 { return zz(sh.recvTag) })
	shapeCol(fSendBytes, AttrSendBytes, func(sh *shape) uint64 { return sh.sendBytes })
	shapeCol(fRecvBytes, AttrRecvBytes, func(sh *shape) uint64 { return sh.recvBytes })
	shapeCol(fRoot, AttrRoot, func(sh *shape) uint64 { return zz(sh.root) })
	u32(fNReqs, b.NReqs)
	dst = e.packed(dst, fReqs, len(b.Reqs), func(buf []byte) int {
		k := 0
		var prev uint64
		for _, x := range b.Reqs {
			k = putVarint(buf, k, zigzag(int64(x-prev)))
			prev = x
		}
		return k
	})
	dst = e.packed(dst, fStatusSource, len(b.Status), func(buf []byte) int {
		k := 0
		for _, x := range b.Status {
			k = putVarint(buf, k, zz(x.Source))
		}
		return k
	})
	dst = e.packed(dst, fStatusTag, len(b.Status), func(buf []byte) int {
		k := 0
		for _, x := range b.Status {
			k = putVarint(buf, k, zz(x.Tag))
		}
		return k
	})
	u32(fNewComm, b.NewComm)
	s32(fPcontrolLevel, b.PcLevel)
	dst = e.packed(dst, fPcontrolArg, len(b.PcArg), func(buf []byte) int { return putZigZags(buf, b.PcArg) })
	u32(fFlag, b.Flag)
	u32(fCalls, b.Calls)
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

func decU64(dst []uint64, b []byte) ([]uint64, error) {
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
		dst = append(dst, v)
		i += n
	}
	return dst, nil
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

// decodeBatch decodes a protobuf EventBatch into b (decoded form), reusing
// b's storage, then checks that it is consistent so that a Cursor cannot
// index out of range.
func decodeBatch(data []byte, b *Batch) error {
	b.Reset()
	var count uint64
	var hiShape uint32 // largest shape index
	statusTags := b.statusTags[:0]
	// The shape table is decoded into the writer-form columns first (used
	// here as scratch) and then folded into b.shapes.
	for len(data) > 0 {
		num, payload, rest, use, err := nextBatchField(data)
		if err != nil {
			return err
		}
		data = rest
		if !use {
			continue // a field of a type we do not use: skip it
		}
		switch num {
		case fThread:
			err = varints(payload, func(v uint64) { b.Thread = uint32(v) })
		case fBaseNs:
			err = varints(payload, func(v uint64) { b.BaseNs = int64(v) })
		case fCount:
			err = varints(payload, func(v uint64) { count = v })
			if count > MaxBatchEvents {
				return fmt.Errorf("event batch: count %d exceeds the limit %d", count, MaxBatchEvents)
			}
			// Room for the per-event columns at once (the count comes
			// first as written). Each event takes at least one byte of
			// what follows, so a lying count costs no more memory than
			// the batch's own bytes.
			hint := int(min(count, uint64(len(data))))
			b.shapeIdx = slices.Grow(b.shapeIdx, hint)
			b.Gap = slices.Grow(b.Gap, hint)
			b.Dur = slices.Grow(b.Dur, hint)
		case fShape:
			var hi uint32
			b.shapeIdx, hi, err = decShapeIdx(b.shapeIdx, payload)
			hiShape = max(hiShape, hi)
		case fGap:
			b.Gap, err = decS64(b.Gap, payload)
		case fDur:
			b.Dur, err = decDur(b.Dur, payload)
		case fFunc:
			b.Func, err = decU32(b.Func, payload)
		case fSite:
			b.Site, err = decU32(b.Site, payload)
		case fAttr:
			b.Attr, err = decU32(b.Attr, payload)
		case fComm:
			b.Comm, err = decU32(b.Comm, payload)
		case fSendPeer:
			b.SendPeer, err = decS32(b.SendPeer, payload)
		case fSendTag:
			b.SendTag, err = decS32(b.SendTag, payload)
		case fRecvPeer:
			b.RecvPeer, err = decS32(b.RecvPeer, payload)
		case fRecvTag:
			b.RecvTag, err = decS32(b.RecvTag, payload)
		case fSendBytes:
			b.SendBytes, err = decU64(b.SendBytes, payload)
		case fRecvBytes:
			b.RecvBytes, err = decU64(b.RecvBytes, payload)
		case fRoot:
			b.Root, err = decS32(b.Root, payload)
		case fNReqs:
			b.NReqs, err = decU32(b.NReqs, payload)
		case fReqs:
			prev := uint64(0)
			if n := len(b.Reqs); n > 0 {
				prev = b.Reqs[n-1]
			}
			b.Reqs, err = decReqs(b.Reqs, payload, prev)
		case fStatusSource:
			b.statusSrc, err = decS32(b.statusSrc, payload)
		case fStatusTag:
			statusTags, err = decS32(statusTags, payload)
		case fNewComm:
			b.NewComm, err = decU32(b.NewComm, payload)
		case fPcontrolLevel:
			b.PcLevel, err = decS32(b.PcLevel, payload)
		case fPcontrolArg:
			b.PcArg, err = decS64(b.PcArg, payload)
		case fFlag:
			b.Flag, err = decU32(b.Flag, payload)
		case fCalls:
			b.Calls, err = decU32(b.Calls, payload)
		}
		if err != nil {
			return fmt.Errorf("event batch: field %d: %v", num, err)
		}
		if len(b.shapeIdx) > MaxBatchEvents || len(b.Func) > maxShapes {
			return fmt.Errorf("event batch: more than %d events or shapes", MaxBatchEvents)
		}
	}
	b.statusTags = statusTags
	if len(statusTags) != len(b.statusSrc) {
		return fmt.Errorf("event batch: %d status sources but %d status tags", len(b.statusSrc), len(statusTags))
	}
	if n := len(statusTags); n > 0 {
		st, src := slices.Grow(b.Status[:0], n)[:n], b.statusSrc[:n]
		for i, t := range statusTags {
			st[i] = Status{Source: src[i], Tag: t}
		}
		b.Status = st
	}
	n := len(b.shapeIdx)
	if uint64(n) != count {
		return fmt.Errorf("event batch: count says %d events, shape column has %d", count, n)
	}
	if len(b.Gap) != n || len(b.Dur) != n {
		return fmt.Errorf("event batch: per-event columns differ in length (shape %d, gap %d, dur %d)", n, len(b.Gap), len(b.Dur))
	}
	if n == 0 {
		return nil
	}
	if err := b.foldShapes(); err != nil {
		return err
	}
	if int(hiShape) >= len(b.shapes) {
		return fmt.Errorf("event batch: shape index %d of %d", hiShape, len(b.shapes))
	}
	return b.checkEventColumns()
}

// foldShapes builds b.shapes from the shape-table columns, then empties
// those columns (the decoded form keeps static values only in shapes).
func (b *Batch) foldShapes() error {
	ns := len(b.Func)
	if ns == 0 || len(b.Site) != ns || len(b.Attr) != ns {
		return fmt.Errorf("event batch: shape table columns differ in length (func %d, site %d, attr %d)", ns, len(b.Site), len(b.Attr))
	}
	if len(b.SendPeer) != len(b.SendTag) || len(b.RecvPeer) != len(b.RecvTag) || len(b.PcLevel) != len(b.PcArg) {
		return fmt.Errorf("event batch: paired columns differ in length")
	}
	var comm, send, recv, sb, rb, root int
	for i, a := range b.Attr {
		if a&^attrKnown != 0 {
			return fmt.Errorf("event batch: shape %d: unknown attribute bits %#x", i, uint32(a&^attrKnown))
		}
		sh := shape{fn: b.Func[i], site: b.Site[i], attr: a}
		if a&AttrComm != 0 {
			if comm >= len(b.Comm) {
				return errShort("comm")
			}
			sh.comm = b.Comm[comm]
			comm++
		}
		if a&AttrSend != 0 {
			if send >= len(b.SendPeer) {
				return errShort("send")
			}
			sh.sendPeer, sh.sendTag = b.SendPeer[send], b.SendTag[send]
			send++
		}
		if a&AttrRecv != 0 {
			if recv >= len(b.RecvPeer) {
				return errShort("recv")
			}
			sh.recvPeer, sh.recvTag = b.RecvPeer[recv], b.RecvTag[recv]
			recv++
		}
		if a&AttrSendBytes != 0 {
			if sb >= len(b.SendBytes) {
				return errShort("send_bytes")
			}
			sh.sendBytes = b.SendBytes[sb]
			sb++
		}
		if a&AttrRecvBytes != 0 {
			if rb >= len(b.RecvBytes) {
				return errShort("recv_bytes")
			}
			sh.recvBytes = b.RecvBytes[rb]
			rb++
		}
		if a&AttrRoot != 0 {
			if root >= len(b.Root) {
				return errShort("root")
			}
			sh.root = b.Root[root]
			root++
		}
		b.shapes = append(b.shapes, sh)
	}
	if comm != len(b.Comm) || send != len(b.SendPeer) || recv != len(b.RecvPeer) || sb != len(b.SendBytes) ||
		rb != len(b.RecvBytes) || root != len(b.Root) {
		return errors.New("event batch: a static attribute column has more values than the shapes call for")
	}
	b.Func, b.Site, b.Attr, b.Comm = b.Func[:0], b.Site[:0], b.Attr[:0], b.Comm[:0]
	b.SendPeer, b.SendTag, b.RecvPeer, b.RecvTag = b.SendPeer[:0], b.SendTag[:0], b.RecvPeer[:0], b.RecvTag[:0]
	b.SendBytes, b.RecvBytes, b.Root = b.SendBytes[:0], b.RecvBytes[:0], b.Root[:0]
	return nil
}

func errShort(col string) error {
	return fmt.Errorf("event batch: column %s has fewer values than the shapes call for", col)
}

// checkEventColumns verifies that every per-event attribute column has
// exactly one entry per event carrying the attribute. (Shape indexes and
// durations were checked while decoded.)
func (b *Batch) checkEventColumns() error {
	// The per-call attribute bits of each shape, in a table of their own:
	// the loop below then touches one small array.
	dyn := b.dynAttr[:0]
	var any Attr
	for i := range b.shapes {
		a := b.shapes[i].attr &^ staticAttrs
		dyn = append(dyn, a)
		any |= a
	}
	b.dynAttr = dyn
	var nreq, st, nc, pc, flag, calls int
	reqs := 0
	if any != 0 {
		for i, s := range b.shapeIdx {
			a := dyn[s]
			if a == 0 {
				continue
			}
			nst := 1
			if a&AttrReqs != 0 {
				if nreq >= len(b.NReqs) {
					return fmt.Errorf("event batch: event %d: nreqs column too short", i)
				}
				k := int(b.NReqs[nreq])
				nreq++
				if k > len(b.Reqs)-reqs {
					return fmt.Errorf("event batch: event %d: %d request ids, only %d left", i, k, len(b.Reqs)-reqs)
				}
				reqs += k
				nst = k
			}
			if a&AttrStatus != 0 {
				st += nst
			}
			if a&(AttrNewComm|AttrPcontrol|AttrFlag|AttrCalls) != 0 {
				if a&AttrNewComm != 0 {
					nc++
				}
				if a&AttrPcontrol != 0 {
					pc++
				}
				if a&AttrFlag != 0 {
					flag++
				}
				if a&AttrCalls != 0 {
					calls++
				}
			}
		}
	}
	for _, c := range [...]struct {
		name      string
		have, use int
	}{
		{"nreqs", len(b.NReqs), nreq}, {"reqs", len(b.Reqs), reqs}, {"status", len(b.Status), st},
		{"newcomm", len(b.NewComm), nc}, {"pcontrol", len(b.PcLevel), pc}, {"flag", len(b.Flag), flag},
		{"calls", len(b.Calls), calls},
	} {
		if c.have != c.use {
			return fmt.Errorf("event batch: column %s has %d values, attributes call for %d", c.name, c.have, c.use)
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
