package traceformat

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of tracepb.EventBatch. The batch codec is written against
// protowire instead of the generated code because it is the hot path: it
// appends packed columns straight into a reused buffer and decodes them into
// reused slices, with no allocation per batch. TestBatchMatchesGenerated
// checks that both agree byte for byte in meaning.
const (
	fThread        = 1
	fBaseNs        = 2
	fCount         = 3
	fFunc          = 4
	fGap           = 5
	fDur           = 6
	fSite          = 7
	fAttr          = 8
	fComm          = 9
	fSendPeer      = 10
	fSendTag       = 11
	fRecvPeer      = 12
	fRecvTag       = 13
	fSendBytes     = 14
	fRecvBytes     = 15
	fRoot          = 16
	fNReqs         = 17
	fReqs          = 18
	fStatusSource  = 19
	fStatusTag     = 20
	fNewComm       = 21
	fPcontrolLevel = 22
	fPcontrolArg   = 23
	fFlag          = 24
)

// appendBatch appends the protobuf encoding of b to dst. scratch is reused
// storage for one column; the grown scratch is returned for reuse.
func appendBatch(dst, scratch []byte, b *Batch) ([]byte, []byte) {
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
	col := func(field protowire.Number, n int, put func(s []byte) []byte) {
		if n == 0 {
			return
		}
		scratch = put(scratch[:0])
		dst = protowire.AppendTag(dst, field, protowire.BytesType)
		dst = protowire.AppendBytes(dst, scratch)
	}
	u32 := func(field protowire.Number, v []uint32) {
		col(field, len(v), func(s []byte) []byte {
			for _, x := range v {
				s = protowire.AppendVarint(s, uint64(x))
			}
			return s
		})
	}
	s32 := func(field protowire.Number, v []int32) {
		col(field, len(v), func(s []byte) []byte {
			for _, x := range v {
				s = protowire.AppendVarint(s, protowire.EncodeZigZag(int64(x)))
			}
			return s
		})
	}
	u64 := func(field protowire.Number, v []uint64) {
		col(field, len(v), func(s []byte) []byte {
			for _, x := range v {
				s = protowire.AppendVarint(s, x)
			}
			return s
		})
	}
	s64 := func(field protowire.Number, v []int64) {
		col(field, len(v), func(s []byte) []byte {
			for _, x := range v {
				s = protowire.AppendVarint(s, protowire.EncodeZigZag(x))
			}
			return s
		})
	}
	u32(fFunc, b.Func)
	s64(fGap, b.Gap)
	u64(fDur, b.Dur)
	u32(fSite, b.Site)
	col(fAttr, len(b.Attr), func(s []byte) []byte {
		for _, x := range b.Attr {
			s = protowire.AppendVarint(s, uint64(x))
		}
		return s
	})
	u32(fComm, b.Comm)
	s32(fSendPeer, b.SendPeer)
	s32(fSendTag, b.SendTag)
	s32(fRecvPeer, b.RecvPeer)
	s32(fRecvTag, b.RecvTag)
	u64(fSendBytes, b.SendBytes)
	u64(fRecvBytes, b.RecvBytes)
	s32(fRoot, b.Root)
	u32(fNReqs, b.NReqs)
	col(fReqs, len(b.Reqs), func(s []byte) []byte {
		var prev uint64
		for _, x := range b.Reqs {
			s = protowire.AppendVarint(s, protowire.EncodeZigZag(int64(x-prev)))
			prev = x
		}
		return s
	})
	col(fStatusSource, len(b.Status), func(s []byte) []byte {
		for _, x := range b.Status {
			s = protowire.AppendVarint(s, protowire.EncodeZigZag(int64(x.Source)))
		}
		return s
	})
	col(fStatusTag, len(b.Status), func(s []byte) []byte {
		for _, x := range b.Status {
			s = protowire.AppendVarint(s, protowire.EncodeZigZag(int64(x.Tag)))
		}
		return s
	})
	u32(fNewComm, b.NewComm)
	s32(fPcontrolLevel, b.PcLevel)
	s64(fPcontrolArg, b.PcArg)
	u32(fFlag, b.Flag)
	return dst, scratch
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
// column with the one-byte varint inlined, instead of a callback per value.

func decU32[T ~uint32](dst []T, b []byte) ([]T, error) {
	for len(b) > 0 {
		if c := b[0]; c < 0x80 {
			dst = append(dst, T(c))
			b = b[1:]
			continue
		}
		if len(b) > 1 && b[1] < 0x80 {
			v := uint64(b[0]&0x7f) | uint64(b[1])<<7
			dst = append(dst, T(v))
			b = b[2:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, T(v))
		b = b[n:]
	}
	return dst, nil
}

func decU64(dst []uint64, b []byte) ([]uint64, error) {
	for len(b) > 0 {
		if c := b[0]; c < 0x80 {
			dst = append(dst, uint64(c))
			b = b[1:]
			continue
		}
		if len(b) > 1 && b[1] < 0x80 {
			v := uint64(b[0]&0x7f) | uint64(b[1])<<7
			dst = append(dst, v)
			b = b[2:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, v)
		b = b[n:]
	}
	return dst, nil
}

func decS32(dst []int32, b []byte) ([]int32, error) {
	for len(b) > 0 {
		if c := b[0]; c < 0x80 {
			dst = append(dst, int32(c>>1)^-int32(c&1))
			b = b[1:]
			continue
		}
		if len(b) > 1 && b[1] < 0x80 {
			v := uint64(b[0]&0x7f) | uint64(b[1])<<7
			dst = append(dst, zz32(v))
			b = b[2:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, errVarint
		}
		dst = append(dst, zz32(v))
		b = b[n:]
	}
	return dst, nil
}

func decS64(dst []int64, b []byte) ([]int64, error) {
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

// decodeBatch decodes a protobuf EventBatch into b, reusing b's storage,
// then checks that it is consistent so that a Cursor cannot index out of
// range. The count field must agree with the per-event columns.
func decodeBatch(data []byte, b *Batch) error {
	b.Reset()
	var count uint64
	statusTags := b.statusTags[:0]
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("event batch: bad field tag")
		}
		data = data[n:]
		var payload []byte
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return fmt.Errorf("event batch: field %d: bad length", num)
			}
			payload, data = v, data[n:]
		case protowire.VarintType:
			_, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return fmt.Errorf("event batch: field %d: bad varint", num)
			}
			payload, data = data[:n], data[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return fmt.Errorf("event batch: field %d: bad value", num)
			}
			data = data[n:]
			continue // a field of a type we do not use: skip it
		}
		var err error
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
		case fFunc:
			b.Func, err = decU32(b.Func, payload)
		case fGap:
			b.Gap, err = decS64(b.Gap, payload)
		case fDur:
			b.Dur, err = decU64(b.Dur, payload)
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
			if len(b.Reqs) > 0 {
				prev = b.Reqs[len(b.Reqs)-1]
			}
			err = varints(payload, func(v uint64) {
				prev += uint64(protowire.DecodeZigZag(v))
				b.Reqs = append(b.Reqs, prev)
			})
		case fStatusSource:
			err = varints(payload, func(v uint64) { b.Status = append(b.Status, Status{Source: zz32(v)}) })
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
		}
		if err != nil {
			return fmt.Errorf("event batch: field %d: %v", num, err)
		}
		if len(b.Func) > MaxBatchEvents {
			return fmt.Errorf("event batch: more than %d events", MaxBatchEvents)
		}
	}
	if len(statusTags) != len(b.Status) {
		return fmt.Errorf("event batch: %d status sources but %d status tags", len(b.Status), len(statusTags))
	}
	for i, t := range statusTags {
		b.Status[i].Tag = t
	}
	b.statusTags = statusTags
	n := len(b.Func)
	if uint64(n) != count {
		return fmt.Errorf("event batch: count says %d events, func column has %d", count, n)
	}
	if len(b.Gap) != n || len(b.Dur) != n || len(b.Site) != n || len(b.Attr) != n {
		return fmt.Errorf("event batch: per-event columns differ in length (func %d, gap %d, dur %d, site %d, attr %d)",
			n, len(b.Gap), len(b.Dur), len(b.Site), len(b.Attr))
	}
	if len(b.SendPeer) != len(b.SendTag) || len(b.RecvPeer) != len(b.RecvTag) || len(b.PcLevel) != len(b.PcArg) {
		return fmt.Errorf("event batch: paired columns differ in length")
	}
	return b.checkAttrColumns()
}

// checkAttrColumns verifies that every attribute column has exactly one
// entry per event carrying the attribute, and that times do not overflow.
func (b *Batch) checkAttrColumns() error {
	var comm, send, recv, sb, rb, root, nreq, st, nc, pc, flag int
	reqs := 0
	for i, a := range b.Attr {
		if a&^attrKnown != 0 {
			return fmt.Errorf("event batch: event %d: unknown attribute bits %#x", i, uint32(a&^attrKnown))
		}
		if int64(b.Dur[i]) < 0 {
			return fmt.Errorf("event batch: event %d: duration %d out of range", i, b.Dur[i])
		}
		if a == 0 {
			continue
		}
		if a&AttrComm != 0 {
			comm++
		}
		if a&AttrSend != 0 {
			send++
		}
		if a&AttrRecv != 0 {
			recv++
		}
		if a&AttrSendBytes != 0 {
			sb++
		}
		if a&AttrRecvBytes != 0 {
			rb++
		}
		if a&AttrRoot != 0 {
			root++
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
		if a&AttrNewComm != 0 {
			nc++
		}
		if a&AttrPcontrol != 0 {
			pc++
		}
		if a&AttrFlag != 0 {
			flag++
		}
	}
	for _, c := range []struct {
		name      string
		have, use int
	}{
		{"comm", len(b.Comm), comm}, {"send", len(b.SendPeer), send}, {"recv", len(b.RecvPeer), recv},
		{"send_bytes", len(b.SendBytes), sb}, {"recv_bytes", len(b.RecvBytes), rb}, {"root", len(b.Root), root},
		{"nreqs", len(b.NReqs), nreq}, {"reqs", len(b.Reqs), reqs}, {"status", len(b.Status), st},
		{"newcomm", len(b.NewComm), nc}, {"pcontrol", len(b.PcLevel), pc}, {"flag", len(b.Flag), flag},
	} {
		if c.have != c.use {
			return fmt.Errorf("event batch: column %s has %d values, attributes call for %d", c.name, c.have, c.use)
		}
	}
	return nil
}
