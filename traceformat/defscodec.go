package traceformat

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
	"unsafe"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The definitions codec decodes a Definitions message by hand, as the
// batch codec does the event batches: proto.Unmarshal builds each of its
// sub-messages through reflection and the generic codec, and a trace whose
// ranks find their call sites as they go has hundreds of definitions
// frames, thousands of entries (hpcc: the generic path took about twice
// this one's instructions, most of both in the return addresses). It
// gives the values proto.Unmarshal gives, field for field: the last of a
// repeated scalar field wins, a repeated number field is read packed or
// not, a field of another number or wire type is kept as an unknown field
// (tag re-encoded, as the generic codec stores it), a string must be valid
// UTF-8, and what proto.Unmarshal refuses is refused (FuzzDefinitions and
// TestDefinitionsDecoder compare the two). The entries of a message are
// allocated one slab per kind, their strings and return addresses in one
// block each (defsDec), instead of one by one.

// defsReason is why a Definitions message is malformed.
type defsReason string

const (
	badTag   defsReason = "bad field tag"
	badValue defsReason = "bad value"
	badUTF8  defsReason = "invalid UTF-8"
)

// errDefs says where a Definitions message is malformed: the entry (its
// kind and index in the message; kind "" for the message itself) and the
// field.
func errDefs(kind string, i int, num protowire.Number, why defsReason) error {
	if kind == "" {
		return fmt.Errorf("field %d: %s", num, why)
	}
	return fmt.Errorf("%s %d: field %d: %s", kind, i, num, why)
}

// defsTagLong reads a field's tag as the generic codec does: a field
// number outside 1 to 2^29-1 is malformed. n < 0 when the tag is. The
// decoders read one-byte tags (all of a writer's) inline, as
//
//	num, typ, n := protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
//	if b[0] >= 0x80 || b[0] < 8 {
//		num, typ, n = defsTagLong(b)
//	}
//
// and one-byte varints likewise: a function with the call to the long
// case does not inline.
func defsTagLong(b []byte) (protowire.Number, protowire.Type, int) {
	tag, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, -1
	}
	if num := tag >> 3; num < uint64(protowire.MinValidNumber) || num > uint64(protowire.MaxValidNumber) {
		return 0, 0, -1
	}
	return protowire.Number(tag >> 3), protowire.Type(tag & 7), n
}

// defsVarint is protowire.ConsumeVarint with the one- and two-byte cases
// (ids) first.
func defsVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2
	}
	return protowire.ConsumeVarint(b)
}

// unknownField consumes the value of a field the message does not have (or
// has with another wire type) and appends it to u as the generic codec
// keeps it. n < 0 when the value is malformed.
func unknownField(u []byte, num protowire.Number, typ protowire.Type, b []byte) ([]byte, int) {
	n := protowire.ConsumeFieldValue(num, typ, b)
	if n < 0 {
		return u, n
	}
	u = protowire.AppendTag(u, num, typ)
	return append(u, b[:n]...), n
}

// appendRepeated appends a repeated number field's values, packed (a
// length-delimited field) or one (a varint), to s. n < 0 when the value is
// malformed; typ of another wire type is the caller's.
func appendRepeated[T uint32 | uint64](s []T, typ protowire.Type, b []byte) ([]T, int) {
	if typ == protowire.VarintType {
		v, n := defsVarint(b)
		if n < 0 {
			return s, n
		}
		return append(s, T(v)), n
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return s, n
	}
	s, ok := appendPacked(s, v)
	if !ok {
		return s, -1
	}
	return s, n
}

// appendPacked appends the varints of a packed field's bytes to s. ok is
// false unless v is whole varints that each fit 64 bits, as
// protowire.ConsumeVarint reads them. A call site's return addresses are
// 6- and 7-byte varints: one of up to 8 bytes is read from a little-endian
// word (zero-padded at the end of v) and its 7-bit groups joined in three
// steps, instead of ConsumeVarint's byte by byte; longer ones go through
// ConsumeVarint.
func appendPacked[T uint32 | uint64](s []T, v []byte) ([]T, bool) {
	for len(v) > 0 {
		if v[0] < 0x80 {
			s = append(s, T(v[0]))
			v = v[1:]
			continue
		}
		var w uint64
		if len(v) >= 8 {
			w = binary.LittleEndian.Uint64(v)
		} else {
			var pad [8]byte
			copy(pad[:], v)
			w = binary.LittleEndian.Uint64(pad[:])
		}
		if end := ^w & 0x8080808080808080; end != 0 {
			k := bits.TrailingZeros64(end) + 1
			if k>>3 > len(v) {
				return s, false
			}
			x := w & 0x7f7f7f7f7f7f7f7f & (1<<k - 1)
			x = x&0x007f007f007f007f | x&0x7f007f007f007f00>>1
			x = x&0x00003fff00003fff | x&0x3fff00003fff0000>>2
			x = x&0x000000000fffffff | x&0x0fffffff00000000>>4
			s = append(s, T(x))
			v = v[k>>3:]
			continue
		}
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return s, false
		}
		s = append(s, T(x))
		v = v[n:]
	}
	return s, true
}

// isRepeatedType says whether a repeated number field of wire type typ is
// the field (packed or not) rather than an unknown field.
func isRepeatedType(typ protowire.Type) bool {
	return typ == protowire.VarintType || typ == protowire.BytesType
}

// defsDec holds what the entries of one Definitions message share: the
// call sites' return addresses are slices of one array (each capped at its
// end, so that appending to one copies it), the functions' and modules'
// names strings of one block of bytes, which holds no more than their
// entries' bytes.
type defsDec struct {
	pcs   []uint64
	names []byte
}

// str reads a string field's value into the names block. n < 0 when it is
// malformed; ok is false when it is not UTF-8.
func (dd *defsDec) str(b []byte) (s string, n int, ok bool) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 || len(v) == 0 {
		return "", n, true
	}
	if !utf8.Valid(v) {
		return "", n, false
	}
	if cap(dd.names)-len(dd.names) < len(v) {
		return string(v), n, true // not from a counted entry
	}
	start := len(dd.names)
	dd.names = append(dd.names, v...)
	return unsafe.String(&dd.names[start], len(v)), n, true
}

// decodeDefinitions decodes b, a Definitions message, into d (zero) as
// proto.Unmarshal does.
func decodeDefinitions(b []byte, d *tracepb.Definitions) error {
	// A first pass checks the message's framing, counts its entries, so
	// that each kind gets one slab, and sums the bytes of those with
	// strings and return addresses.
	var count [5]int
	var named, sites int
	for p := b; len(p) > 0; {
		num, typ, k := protowire.Number(p[0]>>3), protowire.Type(p[0]&7), 1
		if p[0] >= 0x80 || p[0] < 8 {
			num, typ, k = defsTagLong(p)
		}
		if k < 0 {
			return errDefs("", 0, 0, badTag)
		}
		p = p[k:]
		n := protowire.ConsumeFieldValue(num, typ, p)
		if n < 0 {
			return errDefs("", 0, num, badValue)
		}
		if num <= 4 && typ == protowire.BytesType {
			count[num]++
			switch num {
			case 1, 3:
				named += n
			case 2:
				sites += n
			}
		}
		p = p[n:]
	}
	var dd defsDec
	if named > 0 {
		dd.names = make([]byte, 0, named)
	}
	if sites > 0 {
		// Return addresses are 6- and 7-byte varints.
		dd.pcs = make([]uint64, 0, sites/6+1)
	}
	fs := make([]tracepb.Function, count[1])
	ss := make([]tracepb.CallSite, count[2])
	ms := make([]tracepb.Module, count[3])
	cs := make([]tracepb.Communicator, count[4])
	if len(fs) > 0 {
		d.Functions = make([]*tracepb.Function, 0, len(fs))
	}
	if len(ss) > 0 {
		d.CallSites = make([]*tracepb.CallSite, 0, len(ss))
	}
	if len(ms) > 0 {
		d.Modules = make([]*tracepb.Module, 0, len(ms))
	}
	if len(cs) > 0 {
		d.Communicators = make([]*tracepb.Communicator, 0, len(cs))
	}
	var unknown []byte
	for len(b) > 0 {
		num, typ, k := protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
		if b[0] >= 0x80 || b[0] < 8 {
			num, typ, k = defsTagLong(b)
		}
		b = b[k:]
		if num > 4 || typ != protowire.BytesType {
			unknown, k = unknownField(unknown, num, typ, b)
			b = b[k:]
			continue
		}
		var v []byte // the first pass checked its length
		if b[0] < 0x80 {
			v, k = b[1:1+b[0]], 1+int(b[0])
		} else {
			v, k = protowire.ConsumeBytes(b)
		}
		b = b[k:]
		var err error
		switch num {
		case 1:
			f := &fs[len(d.Functions)]
			d.Functions = append(d.Functions, f)
			err = dd.function(v, f, len(d.Functions)-1)
		case 2:
			s := &ss[len(d.CallSites)]
			d.CallSites = append(d.CallSites, s)
			err = dd.callSite(v, s, len(d.CallSites)-1)
		case 3:
			m := &ms[len(d.Modules)]
			d.Modules = append(d.Modules, m)
			err = dd.module(v, m, len(d.Modules)-1)
		case 4:
			c := &cs[len(d.Communicators)]
			d.Communicators = append(d.Communicators, c)
			err = communicator(v, c, len(d.Communicators)-1)
		}
		if err != nil {
			return err
		}
	}
	setUnknown(d, unknown)
	return nil
}

// setUnknown stores a message's unknown fields, when it has any.
func setUnknown(m interface {
	ProtoReflect() protoreflect.Message
}, u []byte) {
	if u != nil {
		m.ProtoReflect().SetUnknown(u)
	}
}

func (dd *defsDec) function(b []byte, f *tracepb.Function, i int) error {
	var unknown []byte
	for len(b) > 0 {
		num, typ, n := protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
		if b[0] >= 0x80 || b[0] < 8 {
			if num, typ, n = defsTagLong(b); n < 0 {
				return errDefs("function", i, 0, badTag)
			}
		}
		b = b[n:]
		ok := true
		switch {
		case num == 2 && typ == protowire.BytesType:
			f.Name, n, ok = dd.str(b)
		case num > 5 || num == 2 || typ != protowire.VarintType:
			unknown, n = unknownField(unknown, num, typ, b)
		default:
			var v uint64
			if v, n = uint64(0), 1; len(b) > 0 && b[0] < 0x80 {
				v = uint64(b[0])
			} else if v, n = protowire.ConsumeVarint(b); n < 0 {
				break
			}
			switch num {
			case 1:
				f.Id = uint32(v)
			case 3:
				f.Class = tracepb.Function_Class(int32(v))
			case 4:
				f.Collective = tracepb.Function_Collective(int32(v))
			case 5:
				f.Nonblocking = v != 0
			}
		}
		if n < 0 {
			return errDefs("function", i, num, badValue)
		}
		if !ok {
			return errDefs("function", i, num, badUTF8)
		}
		b = b[n:]
	}
	setUnknown(f, unknown)
	return nil
}

func (dd *defsDec) callSite(b []byte, s *tracepb.CallSite, i int) error {
	var unknown []byte
	start := len(dd.pcs)
	for len(b) > 0 {
		num, typ, n := protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
		if b[0] >= 0x80 || b[0] < 8 {
			if num, typ, n = defsTagLong(b); n < 0 {
				return errDefs("call site", i, 0, badTag)
			}
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			var v uint64
			v, n = defsVarint(b)
			s.Id = uint32(v)
		case num == 2 && typ == protowire.BytesType:
			var v []byte
			if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) {
				v, n = b[1:1+b[0]], 1+int(b[0])
			} else {
				v, n = protowire.ConsumeBytes(b)
			}
			if n >= 0 {
				var ok bool
				if dd.pcs, ok = appendPacked(dd.pcs, v); !ok {
					n = -1
				}
			}
		case num == 2 && typ == protowire.VarintType:
			var v uint64
			if v, n = defsVarint(b); n >= 0 {
				dd.pcs = append(dd.pcs, v)
			}
		default:
			unknown, n = unknownField(unknown, num, typ, b)
		}
		if n < 0 {
			return errDefs("call site", i, num, badValue)
		}
		b = b[n:]
	}
	if end := len(dd.pcs); end > start {
		s.Pcs = dd.pcs[start:end:end]
	}
	setUnknown(s, unknown)
	return nil
}

func (dd *defsDec) module(b []byte, m *tracepb.Module, i int) error {
	var unknown []byte
	for len(b) > 0 {
		num, typ, n := protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
		if b[0] >= 0x80 || b[0] < 8 {
			if num, typ, n = defsTagLong(b); n < 0 {
				return errDefs("module", i, 0, badTag)
			}
		}
		b = b[n:]
		ok := true
		switch {
		case num == 2 && typ == protowire.BytesType:
			m.Path, n, ok = dd.str(b)
		case num == 6 && typ == protowire.BytesType:
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n >= 0 {
				m.BuildId = append([]byte(nil), v...)
			}
		case num == 2 || num > 5 || typ != protowire.VarintType:
			unknown, n = unknownField(unknown, num, typ, b)
		default:
			var v uint64
			if v, n = defsVarint(b); n < 0 {
				break
			}
			switch num {
			case 1:
				m.Id = uint32(v)
			case 3:
				m.LoadBias = v
			case 4:
				m.Start = v
			case 5:
				m.End = v
			}
		}
		if n < 0 {
			return errDefs("module", i, num, badValue)
		}
		if !ok {
			return errDefs("module", i, num, badUTF8)
		}
		b = b[n:]
	}
	setUnknown(m, unknown)
	return nil
}

func communicator(b []byte, c *tracepb.Communicator, i int) error {
	var unknown []byte
	for len(b) > 0 {
		num, typ, n := protowire.Number(b[0]>>3), protowire.Type(b[0]&7), 1
		if b[0] >= 0x80 || b[0] < 8 {
			if num, typ, n = defsTagLong(b); n < 0 {
				return errDefs("communicator", i, 0, badTag)
			}
		}
		b = b[n:]
		switch {
		case num == 3 && isRepeatedType(typ):
			c.Members, n = appendRepeated(c.Members, typ, b)
		case num == 4 && isRepeatedType(typ):
			c.RemoteMembers, n = appendRepeated(c.RemoteMembers, typ, b)
		case num == 3 || num == 4 || num > 8 || typ != protowire.VarintType:
			unknown, n = unknownField(unknown, num, typ, b)
		default:
			var v uint64
			if v, n = defsVarint(b); n < 0 {
				break
			}
			switch num {
			case 1:
				c.Local = uint32(v)
			case 2:
				c.Id = v
			case 5:
				c.Inter = v != 0
			case 6:
				c.Parent = uint32(v)
			case 7:
				c.CreatedBy = uint32(v)
			case 8:
				c.MembersRange = uint32(v)
			}
		}
		if n < 0 {
			return errDefs("communicator", i, num, badValue)
		}
		b = b[n:]
	}
	setUnknown(c, unknown)
	return nil
}
