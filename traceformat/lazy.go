package traceformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"google.golang.org/protobuf/encoding/protowire"
)

// LazyBatch is an event batch read without decoding its events up front:
// Next decodes each event from the batch's decompressed protobuf bytes
// when it is asked for, and nothing is written out per event. It is the
// reader for consumers that walk each batch once, in order, and interleave
// many files (the analyzer switches rank every few dozen calls): a batch
// decoded up front into columns (~40 bytes per event) is cold by the time
// it is read, while the encoded batch (~3-5 bytes per event) is small and
// read in order.
//
// The batch is checked when read (ReadLazyBatch), by a scan that counts
// and range-checks the values without storing them: a batch that Next
// could not walk to the end is refused before any of its events is
// handed out, exactly as ReadBatch refuses it.
//
// A LazyBatch aliases the reader's buffers: it is valid until the next
// call of any of the Reader's Read methods, which reuse it.
type LazyBatch struct {
	Thread uint32 // thread of every event of the batch
	BaseNs int64  // entry time of the first event

	n, i int   // events, events handed out
	t    int64 // exit time of the last event handed out

	// The per-event columns: packed varints as on disk.
	shape, gap, dur, nreqs, reqs, stSrc, stTag, newcomm, pcLevel, pcArg, flag lcol
	prevReq                                                                   uint64 // last request id (ids are delta coded)

	// The shape table, and the per-call attribute bits of each shape.
	tab     Batch // decoded with the batch codec's column decoders; tab.shapes is the table
	dynAttr []Attr

	// Scratch: the current event's Reqs and Status; columns that appear
	// more than once in the message, concatenated.
	reqBuf []uint64
	stBuf  []Status
	concat [numLazyCols][]byte
	sink   byte // touchAhead's loads go here, so that they are not removed
}

// lcol is a column of packed varints and the position of the next one.
type lcol struct {
	b []byte
	p int
}

// Indexes of the per-event columns in LazyBatch.concat.
const (
	lcShape = iota
	lcGap
	lcDur
	lcNReqs
	lcReqs
	lcStSrc
	lcStTag
	lcNewComm
	lcPcLevel
	lcPcArg
	lcFlag
	numLazyCols
)

// Len is the number of events in the batch.
func (lb *LazyBatch) Len() int { return lb.n }

// Rewind makes Next start again from the first event.
func (lb *LazyBatch) Rewind() {
	lb.i, lb.t, lb.prevReq = 0, lb.BaseNs, 0
	for _, c := range lb.cols() {
		c.p = 0
	}
}

func (lb *LazyBatch) cols() [numLazyCols]*lcol {
	return [...]*lcol{&lb.shape, &lb.gap, &lb.dur, &lb.nreqs, &lb.reqs, &lb.stSrc, &lb.stTag, &lb.newcomm, &lb.pcLevel, &lb.pcArg, &lb.flag}
}

// reset empties the batch, keeping its storage: a stale LazyBatch hands
// out no events rather than whatever its buffers hold now.
func (lb *LazyBatch) reset() {
	lb.Thread, lb.BaseNs, lb.n = 0, 0, 0
	for k, c := range lb.cols() {
		*c = lcol{}
		lb.concat[k] = lb.concat[k][:0]
	}
	lb.Rewind()
}

// next returns the column's next varint; past the end (which a checked
// batch never reaches) it returns 0. The hot paths below do not call it:
// it cannot be inlined, so they inline its one-byte case by hand, as
//
//	if p < len(b) && b[p] < 0x80 { v = uint64(b[p]); p++ } else { v, p = uvarint(b, p) }
func (c *lcol) next() uint64 {
	v, p := uvarint(c.b, c.p)
	c.p = p
	return v
}

// uvarint decodes the varint at b[p:] and returns it with the position
// after it; past the end, or on a bad varint, it returns 0 and len(b).
func uvarint(b []byte, p int) (uint64, int) {
	if p+1 < len(b) {
		if x := b[p]; x < 0x80 {
			return uint64(x), p + 1
		} else if y := b[p+1]; y < 0x80 {
			return uint64(x&0x7f) | uint64(y)<<7, p + 2
		}
	}
	if p >= len(b) || p < 0 {
		return 0, len(b)
	}
	v, n := protowire.ConsumeVarint(b[p:])
	if n < 0 {
		return 0, len(b)
	}
	return v, p + n
}

// Next decodes the next event into e and reports whether there was one.
// e's Reqs and Status alias the batch's scratch buffers, valid until the
// next call.
func (lb *LazyBatch) Next(e *Event) bool {
	if lb.i >= lb.n {
		return false
	}
	if lb.i&15 == 0 {
		lb.touchAhead()
	}
	lb.i++
	var s, gap, dur uint64
	if b, p := lb.shape.b, lb.shape.p; p < len(b) && b[p] < 0x80 {
		s, lb.shape.p = uint64(b[p]), p+1 // nearly always: a batch has few shapes
	} else {
		s, lb.shape.p = uvarint(b, p)
	}
	if b, p := lb.gap.b, lb.gap.p; p < len(b) && b[p] < 0x80 {
		gap, lb.gap.p = uint64(b[p]), p+1
	} else {
		gap, lb.gap.p = uvarint(b, p)
	}
	if b, p := lb.dur.b, lb.dur.p; p < len(b) && b[p] < 0x80 {
		dur, lb.dur.p = uint64(b[p]), p+1
	} else {
		dur, lb.dur.p = uvarint(b, p)
	}
	entry := lb.t + protowire.DecodeZigZag(gap)
	exit := entry + int64(dur)
	lb.t = exit
	e.Thread, e.Entry, e.Exit = lb.Thread, entry, exit
	shapes := lb.tab.shapes
	if s >= uint64(len(shapes)) {
		// Not in a checked batch; a zero shape rather than a panic.
		s = 0
		if len(shapes) == 0 {
			*e = Event{Thread: lb.Thread, Entry: entry, Exit: exit}
			return true
		}
	}
	sh := &shapes[s]
	e.Func, e.Site, e.Attr = sh.fn, sh.site, sh.attr
	e.Comm, e.SendPeer, e.SendTag, e.RecvPeer, e.RecvTag = sh.comm, sh.sendPeer, sh.sendTag, sh.recvPeer, sh.recvTag
	e.SendBytes, e.RecvBytes, e.Root = sh.sendBytes, sh.recvBytes, sh.root
	if sh.attr&^staticAttrs == 0 {
		// No per-call attributes. The slices are stored only when not nil
		// already: a pointer store costs a write barrier while the GC
		// marks, and the Event is usually reused call after call.
		if e.Reqs != nil {
			e.Reqs = nil
		}
		if e.Status != nil {
			e.Status = nil
		}
		e.NewComm, e.PcLevel, e.PcArg, e.Flag = 0, 0, 0, false
		return true
	}
	lb.dynamic(e)
	return true
}

// touchAhead loads a byte two cache lines ahead in each column. With many
// readers interleaved (the analyzer's replay), the batch's bytes have left
// the caches by the time Next reaches them, and Next's loads of one column
// depend on each other (the position of a varint depends on the length of
// the previous one): the columns' next lines missed one after the other.
// These loads are independent of each other and of Next's work, so that
// their misses overlap, and they come early enough that Next finds the
// lines in the cache. Called every 16 events: a column advances less than
// a line (64 bytes) in 16 events unless its values take 4 bytes or more.
func (lb *LazyBatch) touchAhead() {
	const ahead = 128
	var x byte
	for _, c := range [...]*lcol{&lb.shape, &lb.gap, &lb.dur, &lb.nreqs, &lb.reqs, &lb.stSrc, &lb.stTag} {
		if q := c.p + ahead; q < len(c.b) {
			x ^= c.b[q]
		}
	}
	lb.sink = x
}

// dynamic decodes the per-call attributes of e (whose Attr is set).
func (lb *LazyBatch) dynamic(e *Event) {
	a := e.Attr
	nst := 1
	if a&AttrReqs != 0 {
		var v uint64
		if b, p := lb.nreqs.b, lb.nreqs.p; p < len(b) && b[p] < 0x80 {
			v, lb.nreqs.p = uint64(b[p]), p+1
		} else {
			v, lb.nreqs.p = uvarint(b, p)
		}
		b, p := lb.reqs.b, lb.reqs.p
		n := min(int(uint32(v)), len(b)-p) // each id takes a byte at least
		if cap(lb.reqBuf) < n {
			lb.reqBuf = make([]uint64, n, max(n, 8))
		}
		r := lb.reqBuf[:n:n]
		prev := lb.prevReq
		for k := range r {
			if p < len(b) && b[p] < 0x80 {
				v, p = uint64(b[p]), p+1
			} else {
				v, p = uvarint(b, p)
			}
			prev += uint64(protowire.DecodeZigZag(v))
			r[k] = prev
		}
		lb.reqs.p, lb.prevReq = p, prev
		e.Reqs = r
		nst = n
	} else if e.Reqs != nil {
		e.Reqs = nil
	}
	if a&AttrStatus != 0 {
		bs, ps := lb.stSrc.b, lb.stSrc.p
		bt, pt := lb.stTag.b, lb.stTag.p
		nst = min(nst, len(bs)-ps)
		if cap(lb.stBuf) < nst {
			lb.stBuf = make([]Status, nst, max(nst, 8))
		}
		st := lb.stBuf[:nst:nst]
		for k := range st {
			var src, tag uint64
			if ps < len(bs) && bs[ps] < 0x80 {
				src, ps = uint64(bs[ps]), ps+1
			} else {
				src, ps = uvarint(bs, ps)
			}
			if pt < len(bt) && bt[pt] < 0x80 {
				tag, pt = uint64(bt[pt]), pt+1
			} else {
				tag, pt = uvarint(bt, pt)
			}
			st[k] = Status{Source: zz32(src), Tag: zz32(tag)}
		}
		lb.stSrc.p, lb.stTag.p = ps, pt
		e.Status = st
	} else if e.Status != nil {
		e.Status = nil
	}
	e.NewComm, e.PcLevel, e.PcArg, e.Flag = 0, 0, 0, false
	if a&(AttrNewComm|AttrPcontrol|AttrFlag) == 0 {
		return
	}
	if a&AttrNewComm != 0 {
		e.NewComm = uint32(lb.newcomm.next())
	}
	if a&AttrPcontrol != 0 {
		e.PcLevel, e.PcArg = zz32(lb.pcLevel.next()), protowire.DecodeZigZag(lb.pcArg.next())
	}
	if a&AttrFlag != 0 {
		e.Flag = uint32(lb.flag.next()) != 0
	}
}

// parse reads a protobuf EventBatch into lb (aliasing data) and checks it
// as decodeBatch does, accepting and refusing the same batches.
func (lb *LazyBatch) parse(data []byte) error {
	lb.reset()
	tb := &lb.tab
	tb.Reset()
	var count uint64
	var seen [numLazyCols]int
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
		col := -1
		switch num {
		case fThread:
			err = varints(payload, func(v uint64) { lb.Thread = uint32(v) })
		case fBaseNs:
			err = varints(payload, func(v uint64) { lb.BaseNs = int64(v) })
		case fCount:
			err = varints(payload, func(v uint64) { count = v })
			if count > MaxBatchEvents {
				return fmt.Errorf("event batch: count %d exceeds the limit %d", count, MaxBatchEvents)
			}
		case fFunc:
			tb.Func, err = decU32(tb.Func, payload)
		case fSite:
			tb.Site, err = decU32(tb.Site, payload)
		case fAttr:
			tb.Attr, err = decU32(tb.Attr, payload)
		case fComm:
			tb.Comm, err = decU32(tb.Comm, payload)
		case fSendPeer:
			tb.SendPeer, err = decS32(tb.SendPeer, payload)
		case fSendTag:
			tb.SendTag, err = decS32(tb.SendTag, payload)
		case fRecvPeer:
			tb.RecvPeer, err = decS32(tb.RecvPeer, payload)
		case fRecvTag:
			tb.RecvTag, err = decS32(tb.RecvTag, payload)
		case fSendBytes:
			tb.SendBytes, err = decU64(tb.SendBytes, payload)
		case fRecvBytes:
			tb.RecvBytes, err = decU64(tb.RecvBytes, payload)
		case fRoot:
			tb.Root, err = decS32(tb.Root, payload)
		case fShape:
			col = lcShape
		case fGap:
			col = lcGap
		case fDur:
			col = lcDur
		case fNReqs:
			col = lcNReqs
		case fReqs:
			col = lcReqs
		case fStatusSource:
			col = lcStSrc
		case fStatusTag:
			col = lcStTag
		case fNewComm:
			col = lcNewComm
		case fPcontrolLevel:
			col = lcPcLevel
		case fPcontrolArg:
			col = lcPcArg
		case fFlag:
			col = lcFlag
		}
		if err != nil {
			return fmt.Errorf("event batch: field %d: %v", num, err)
		}
		if len(tb.Func) > maxShapes {
			return fmt.Errorf("event batch: more than %d events or shapes", MaxBatchEvents)
		}
		if col >= 0 {
			// A repeated field continues the column (proto3 packed fields
			// may be split): the pieces are joined so that a column is one
			// run of bytes. Writers never split them. A piece must end
			// with a whole varint, or joining would mend it.
			if len(payload) > 0 && payload[len(payload)-1] >= 0x80 {
				return fmt.Errorf("event batch: field %d: %v", num, errVarintCol)
			}
			c := lb.cols()[col]
			switch seen[col]++; seen[col] {
			case 1:
				c.b = payload
			case 2:
				lb.concat[col] = append(append(lb.concat[col][:0], c.b...), payload...)
				c.b = lb.concat[col]
			default:
				lb.concat[col] = append(lb.concat[col], payload...)
				c.b = lb.concat[col]
			}
		}
	}
	lb.t = lb.BaseNs
	if err := lb.check(count); err != nil {
		return err
	}
	lb.n = int(count) // only now: a refused batch hands out no events
	return nil
}

var errVarintCol = errors.New("bad varint")

// check verifies everything Next relies on, without storing the events.
func (lb *LazyBatch) check(count uint64) error {
	var cnt [numLazyCols]int
	for k, c := range lb.cols() {
		n := countVarints(c.b, k == lcDur)
		if n < 0 {
			f := [numLazyCols]int{fShape, fGap, fDur, fNReqs, fReqs, fStatusSource, fStatusTag, fNewComm, fPcontrolLevel, fPcontrolArg, fFlag}[k]
			if k == lcDur {
				return fmt.Errorf("event batch: field %d: bad varint or duration out of range", f)
			}
			return fmt.Errorf("event batch: field %d: %v", f, errVarintCol)
		}
		cnt[k] = n
	}
	if cnt[lcStSrc] != cnt[lcStTag] {
		return fmt.Errorf("event batch: %d status sources but %d status tags", cnt[lcStSrc], cnt[lcStTag])
	}
	n := cnt[lcShape]
	if uint64(n) != count {
		return fmt.Errorf("event batch: count says %d events, shape column has %d", count, n)
	}
	if cnt[lcGap] != n || cnt[lcDur] != n {
		return fmt.Errorf("event batch: per-event columns differ in length (shape %d, gap %d, dur %d)", n, cnt[lcGap], cnt[lcDur])
	}
	if n == 0 {
		return nil
	}
	tb := &lb.tab
	if cnt[lcPcLevel] != cnt[lcPcArg] {
		return fmt.Errorf("event batch: paired columns differ in length")
	}
	if err := tb.foldShapes(); err != nil {
		return err
	}
	// The per-call attribute bits of each shape, in a table of their own:
	// the loop below then touches one small array.
	dyn := lb.dynAttr[:0]
	var any Attr
	for i := range tb.shapes {
		a := tb.shapes[i].attr &^ staticAttrs
		dyn = append(dyn, a)
		any |= a
	}
	lb.dynAttr = dyn
	ns := uint64(len(dyn))
	sc := lb.shape.b
	if any == 0 {
		// Only the range of the shape indexes to check.
		if len(sc) == n { // one byte each, the common case
			var hi byte
			for _, x := range sc {
				hi = max(hi, x)
			}
			if uint64(hi) >= ns {
				return fmt.Errorf("event batch: shape index %d of %d", hi, ns)
			}
		} else {
			c := lcol{b: sc}
			for range n {
				if s := c.next(); s >= ns {
					return fmt.Errorf("event batch: shape index %d of %d", s, ns)
				}
			}
		}
		return lb.checkCounts(cnt, 0, 0, 0, 0, 0, 0)
	}
	var nreq, reqs, st, nc, pc, flag int
	if nrb := lb.nreqs.b; len(sc) == n && len(nrb) == cnt[lcNReqs] {
		// Shape indexes and request counts of one byte each (fewer than
		// 128 shapes, and of requests per call): the common case, walked
		// without decoding. A count of ids beyond the column is caught by
		// the comparison of the totals.
		for i, x := range sc {
			if uint64(x) >= ns {
				return fmt.Errorf("event batch: shape index %d of %d", x, ns)
			}
			a := dyn[x]
			if a == 0 {
				continue
			}
			nst := 1
			if a&AttrReqs != 0 {
				if nreq >= len(nrb) {
					return fmt.Errorf("event batch: event %d: nreqs column too short", i)
				}
				nst = int(nrb[nreq])
				nreq++
				reqs += nst
			}
			if a&AttrStatus != 0 {
				st += nst
			}
			if a&(AttrNewComm|AttrPcontrol|AttrFlag) != 0 {
				nc += int(a / AttrNewComm & 1)
				pc += int(a / AttrPcontrol & 1)
				flag += int(a / AttrFlag & 1)
			}
		}
		return lb.checkCounts(cnt, nreq, reqs, st, nc, pc, flag)
	}
	nr := lcol{b: lb.nreqs.b}
	c := lcol{b: sc}
	for i := range n {
		s := c.next()
		if s >= ns {
			return fmt.Errorf("event batch: shape index %d of %d", s, ns)
		}
		a := dyn[s]
		if a == 0 {
			continue
		}
		nst := 1
		if a&AttrReqs != 0 {
			if nreq >= cnt[lcNReqs] {
				return fmt.Errorf("event batch: event %d: nreqs column too short", i)
			}
			k := int(uint32(nr.next()))
			nreq++
			if k > cnt[lcReqs]-reqs {
				return fmt.Errorf("event batch: event %d: %d request ids, only %d left", i, k, cnt[lcReqs]-reqs)
			}
			reqs += k
			nst = k
		}
		if a&AttrStatus != 0 {
			st += nst
		}
		if a&(AttrNewComm|AttrPcontrol|AttrFlag) != 0 {
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
	}
	return lb.checkCounts(cnt, nreq, reqs, st, nc, pc, flag)
}

func (lb *LazyBatch) checkCounts(cnt [numLazyCols]int, nreq, reqs, st, nc, pc, flag int) error {
	for _, c := range [...]struct {
		name      string
		have, use int
	}{
		{"nreqs", cnt[lcNReqs], nreq}, {"reqs", cnt[lcReqs], reqs}, {"status", cnt[lcStSrc], st},
		{"newcomm", cnt[lcNewComm], nc}, {"pcontrol", cnt[lcPcLevel], pc}, {"flag", cnt[lcFlag], flag},
	} {
		if c.have != c.use {
			return fmt.Errorf("event batch: column %s has %d values, attributes call for %d", c.name, c.have, c.use)
		}
	}
	return nil
}

// countVarints returns the number of varints in a packed column, or -1 if
// the column is not a sequence of valid varints (or, with dur, holds a
// value of 2^63 or more). It looks at 8 bytes at a time: the varints are
// the bytes without the continuation bit, and runs of continuation bytes
// are tracked across words; a run of 9 or more (a value of 63 bits or
// more, rare) sends the column to the exact byte-by-byte check.
func countVarints(b []byte, dur bool) int {
	const stops = 0x8080808080808080
	n, run, i := 0, 0, 0
	for ; i+8 <= len(b); i += 8 {
		t := ^binary.LittleEndian.Uint64(b[i:]) & stops
		if t == 0 {
			run += 8
			if run >= 9 {
				return countExact(b, dur)
			}
			continue
		}
		if run+bits.TrailingZeros64(t)/8 >= 9 {
			return countExact(b, dur)
		}
		n += bits.OnesCount64(t)
		run = bits.LeadingZeros64(t) / 8 // continuation bytes after the last stop
	}
	for ; i < len(b); i++ {
		if b[i] < 0x80 {
			n++
			run = 0
		} else if run++; run >= 9 {
			return countExact(b, dur)
		}
	}
	if run != 0 {
		return -1 // the last varint is cut
	}
	return n
}

func countExact(b []byte, dur bool) int {
	n := 0
	for len(b) > 0 {
		v, k := protowire.ConsumeVarint(b)
		if k < 0 || dur && v >= 1<<63 {
			return -1
		}
		n++
		b = b[k:]
	}
	return n
}
