package traceformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/dtpa/dtpa/internal/prefetch"
	"google.golang.org/protobuf/encoding/protowire"
)

// LazyBatch is an event batch read without decoding its events up front:
// Next decodes each event from the batch's decompressed protobuf bytes
// when it is asked for, and nothing is written out per event. It is the
// reader for consumers that walk each batch once, in order, and interleave
// many files (the analyzer switches rank every few dozen calls): a batch
// decoded up front into columns (~40 bytes per event) is cold by the time
// it is read, while the encoded batch (~8 bytes per event on the
// analyzer's benchmark trace) is smaller and read in order.
//
// The batch is checked when read (ReadLazyBatch), by a scan that counts
// and range-checks the values without storing them: a batch that Next
// could not walk to the end is refused before any of its events is
// handed out, exactly as ReadBatch refuses it.
//
// A LazyBatch aliases the reader's buffers: it is valid until the next
// call of any of the Reader's Read methods, which reuse it.
type LazyBatch struct {
	// What Next uses at every event comes first, together, in as few
	// bytes as will do (two cache lines, three with the buffers of
	// request ids and statuses): the replay switches rank every few dozen
	// events, and each cache line of a rank's state is then likely a miss.
	raw    []byte  // the message, or a copy of the hot columns (pack)
	shapes []shape // the shape table (tab.shapes)
	t      int64   // exit time of the last event handed out
	i, n   int32   // events handed out, events Next decodes (0 when nextSlow does)
	// Next's position in each column it reads at every event: offsets in
	// raw (below MaxRaw: 32 bits, which also spares a bounds check of each
	// 8-byte load, as p+8 cannot overflow).
	pShape, pGap, pDur, pNReqs, pReqs, pSrc, pTag uint32
	cur                                           int32 // shape index of the last event handed out (Shape)

	Thread uint32 // thread of every event of the batch
	BaseNs int64  // entry time of the first event

	prevReq uint64 // last request id (ids are delta coded)
	// The current event's Reqs and Status.
	reqBuf []uint64
	stBuf  []Status

	start [numHot]uint32 // where the columns read at every event start in raw

	// The per-event and per-call columns as parsed (packed varints as on
	// disk), by lc index (lazyCols), with their offsets in the message (-1:
	// joined from several fields). Next reads the rare ones from here.
	lc      []lcol
	off     []int
	joinBuf []byte

	// The scalar fields and the shape table (tab.shapes), parsed and
	// checked as the batch decoder does.
	tab tableDec

	concat [][]byte // columns that appear more than once in the message, joined

	count int // events in the batch

	hist [256]int32 // check's histogram of one-byte shape indexes
	idx  []uint32   // check's shape indexes when some take two bytes or more
	cnt  []int      // check's count of each column's values

	// A batch with a varint of more than 8 bytes in a column Next reads
	// at every event is decoded up front into slowBuf and walked with
	// cursor (nextSlow); slow points at slowBuf then.
	slow    *Batch
	slowBuf Batch
	cursor  Cursor
}

// lcol is a column of packed varints and the position of the next one.
type lcol struct {
	b []byte
	p int
}

// Indexes in LazyBatch.lc of the columns Next reads at every event
// (lazyCols; TestHotPathsMatchColumns checks them against the table). The
// rare per-call columns follow them.
const (
	lcShape = iota
	lcGap
	lcDur
	lcNReqs
	lcReqs
	lcStSrc
	lcStTag
	numHot // the columns before this one are read at every event
)

// lcFlag is the index in LazyBatch.lc of the flag column, which Next
// reads inline when it is an event's only rare attribute.
const lcFlag = numHot + 3

// lcCalls and lcInnerGaps are the indexes in LazyBatch.lc of the columns
// of a folded run of polls, which rare reads without the table.
const (
	lcCalls     = numHot + 4
	lcInnerGaps = numHot + 5
)

// Len is the number of events in the batch.
func (lb *LazyBatch) Len() int { return lb.count }

// NumShapes is the number of shapes of the batch: the distinct
// combinations of an event's function, call site, attribute bits and
// values stored once per batch (communicator, peers, tags, byte counts,
// root).
func (lb *LazyBatch) NumShapes() int { return len(lb.shapes) }

// Shape is the shape index, in [0, NumShapes()), of the event last handed
// out by Next, or -1 if none was (or the batch has no shapes). Events of
// the same shape have the same Func, Site, Attr, Comm, SendPeer, SendTag,
// RecvPeer, RecvTag, SendBytes, RecvBytes and Root (their other fields are
// per call), so that a consumer may resolve what depends only on these
// once per shape and batch.
func (lb *LazyBatch) Shape() int { return int(lb.cur) }

// SetShapeSite makes the events of shape s (Shape) carry call site site
// from the next one handed out: a reader that counts a site's calls of
// several functions apart (the analyzer's replay) renames the site once
// per shape rather than at every event. It lasts as long as the batch.
func (lb *LazyBatch) SetShapeSite(s int, site uint32) {
	if s >= 0 && s < len(lb.shapes) {
		lb.shapes[s].site = site
	}
}

// Rewind makes Next start again from the first event.
func (lb *LazyBatch) Rewind() {
	lb.i, lb.t, lb.prevReq, lb.cur = 0, lb.BaseNs, 0, -1
	lb.cursor = Cursor{}
	for k := range lb.lc {
		lb.lc[k].p = 0
	}
	st := &lb.start
	lb.pShape, lb.pGap, lb.pDur, lb.pNReqs, lb.pReqs, lb.pSrc, lb.pTag = st[lcShape], st[lcGap], st[lcDur], st[lcNReqs], st[lcReqs], st[lcStSrc], st[lcStTag]
}

// pack points raw and the positions of the columns read at every event at
// msg, the message the columns were parsed from, or at a copy of the
// columns if some were split into several fields or if msg has no room
// for rawSlack bytes after its end (a reader's buffers have it).
func (lb *LazyBatch) pack(msg []byte) {
	cols := lb.lc
	if cap(msg)-len(msg) >= rawSlack {
		lb.raw = msg[:len(msg)+rawSlack]
		k := 0
		for ; k < numHot && lb.off[k] >= 0; k++ {
			lb.start[k] = uint32(lb.off[k])
		}
		if k == numHot {
			return
		}
	}
	buf := lb.joinBuf[:0]
	for j := range numHot {
		lb.start[j] = uint32(len(buf))
		buf = append(buf, cols[j].b...)
	}
	buf = append(buf, make([]byte, rawSlack)...)
	lb.raw, lb.joinBuf = buf, buf
}

// reset empties the batch, keeping its storage: a stale LazyBatch hands
// out no events rather than whatever its buffers hold now.
func (lb *LazyBatch) reset() {
	lb.Thread, lb.BaseNs, lb.n, lb.count, lb.slow = 0, 0, 0, 0, nil
	if lb.lc == nil {
		lb.lc = make([]lcol, len(lazyCols))
		lb.off = make([]int, len(lazyCols))
		lb.concat = make([][]byte, len(lazyCols))
	}
	for k := range lb.lc {
		lb.lc[k] = lcol{}
		lb.concat[k] = lb.concat[k][:0]
		lb.off[k] = 0
	}
	lb.raw, lb.shapes = nil, nil
	lb.start = [numHot]uint32{}
	lb.Rewind()
}

// next returns the column's next varint; past the end (which a checked
// batch never reaches) it returns 0. Next does not call it for the
// columns it reads at every event: it cannot be inlined, and Next decodes
// their values inline.
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

// rawSlack is how many bytes LazyBatch.raw holds beyond the last byte of
// its hot columns: Next loads 8 bytes at once wherever a varint of these
// columns starts, so that one load and one bounds check serve a varint of
// any length up to 8 bytes, instead of a load and a check per byte.
const rawSlack = 8

// varint8 decodes the varint at the start of w, 8 bytes loaded at once,
// and returns it with its length; the varint must be at most 8 bytes long
// (values below 2^56), which LazyBatch.check makes sure of for the
// columns Next reads this way. There is no branch per byte: the length is
// where the first byte without the continuation bit is, and the 7-bit
// groups are packed together in three steps (pairs of bytes, pairs of
// pairs, halves), each moving the upper group of a lane down onto the
// lower one: the first two subtract the upper group's excess (hi<<8 -
// hi<<7, hi<<16 - hi<<14), which takes fewer instructions and constants
// than masking both groups and joining them. Next decodes one-byte values
// (and two-byte ones in the time columns) before it, inline.
func varint8(w uint64) (uint64, int) {
	// Bit 63 changes neither the stop found nor the mask below (a varint
	// of at most 8 bytes stops at or before it), but makes stops nonzero
	// for the compiler: one bit scan, without the move of 64 for zero.
	stops := ^w&0x8080808080808080 | 1<<63
	n := bits.TrailingZeros64(stops)>>3 + 1
	w &= (stops - 1) & 0x7f7f7f7f7f7f7f7f // the varint's 7-bit groups only (below its stop bit)
	w -= w >> 1 & 0x3f803f803f803f80
	w -= w >> 2 & 0x0fffc0000fffc000 * 3
	w = w&0xffffffff | w>>32<<28
	return w, n
}

// Next decodes the next event into e and reports whether there was one.
// e's Reqs and Status alias the batch's scratch buffers, valid until the
// next call.
func (lb *LazyBatch) Next(e *Event) bool {
	i := lb.i
	if i >= lb.n {
		// Past the end, or a batch with varints too long for this path
		// (lb.n is then 0).
		return lb.slow != nil && lb.nextSlow(e)
	}
	if i&15 == 0 {
		lb.touchAhead()
	}
	lb.i = i + 1
	// The batch was checked: every column holds the values its events
	// call for, none of them longer than 8 bytes, so the positions stay
	// inside the columns, and raw holds rawSlack bytes after them. The
	// varints are decoded inline (a call here would make the compiler
	// save registers on every path): one load of 8 bytes, one- (and in
	// the time columns two-) byte values first, varint8 for the others.
	raw := lb.raw
	var s, gap, dur uint64
	p := int(lb.pShape)
	if w := binary.LittleEndian.Uint64(raw[p : p+8]); w&0x80 == 0 {
		s, p = w&0x7f, p+1 // nearly always: a batch has few shapes
	} else if w&0x8000 == 0 {
		s, p = w&0x7f|w>>1&0x3f80, p+2 // 128 shapes or more (LAMMPS)
	} else {
		var n int
		s, n = varint8(w)
		p += n
	}
	lb.pShape = uint32(p)
	p = int(lb.pGap)
	if w := binary.LittleEndian.Uint64(raw[p : p+8]); w&0x80 == 0 {
		gap, p = w&0x7f, p+1
	} else if w&0x8000 == 0 {
		gap, p = w&0x7f|w>>1&0x3f80, p+2
	} else {
		var n int
		gap, n = varint8(w)
		p += n
	}
	lb.pGap = uint32(p)
	p = int(lb.pDur)
	if w := binary.LittleEndian.Uint64(raw[p : p+8]); w&0x80 == 0 {
		dur, p = w&0x7f, p+1
	} else if w&0x8000 == 0 {
		dur, p = w&0x7f|w>>1&0x3f80, p+2
	} else {
		var n int
		dur, n = varint8(w)
		p += n
	}
	lb.pDur = uint32(p)
	entry := lb.t + (int64(gap>>1) ^ -int64(gap&1))
	exit := entry + int64(dur)
	lb.t = exit
	e.Entry, e.Exit = entry, exit
	shapes := lb.shapes
	if s >= uint64(len(shapes)) {
		// Cannot happen in a checked batch; a zero shape rather than a
		// panic all the same.
		s = 0
		if len(shapes) == 0 {
			lb.cur = -1
			*e = Event{Thread: lb.Thread, Entry: entry, Exit: exit}
			return true
		}
	}
	lb.cur = int32(s)
	// s < len(shapes) here: indexed without a second bounds check.
	sh := (*shape)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(shapes)), uintptr(s)*unsafe.Sizeof(shape{})))
	e.setShapeThread(sh)
	a := sh.attr &^ staticAttrs
	if a == 0 {
		clearPerCall(e)
		return true
	}
	// The per-call attributes, here rather than in a function of their
	// own (a call and the reloads after it cost about a tenth of Next on
	// the analyzer's benchmark trace, where most calls have request ids).
	// Their buffers were made large enough by parse.
	nst := 1
	if a&AttrReqs != 0 {
		var v uint64
		p = int(lb.pNReqs)
		if w := binary.LittleEndian.Uint64(raw[p : p+8]); w&0x80 == 0 {
			v, p = w&0x7f, p+1
		} else {
			var n int
			v, n = varint8(w)
			p += n
		}
		lb.pNReqs = uint32(p)
		// In the loops the positions stay 32-bit, converted at each load:
		// then p+8 cannot overflow and one bounds check does.
		q := lb.pReqs
		rb := lb.reqBuf
		prev := lb.prevReq
		var r []uint64
		if uint32(v) == 1 && cap(rb) != 0 {
			// Most calls with request ids have one: no loop.
			if w := binary.LittleEndian.Uint64(raw[int(q) : int(q)+8]); w&0x80 == 0 {
				v, q = w&0x7f, q+1
			} else {
				var n int
				v, n = varint8(w)
				q += uint32(n)
			}
			prev += uint64(int64(v>>1) ^ -int64(v&1))
			r = rb[:1:1]
			r[0] = prev
		} else {
			m := int(min(uint64(uint32(v)), uint64(cap(rb)))) // 32 bits, as the column decoder reads it
			r = rb[:m:m]
			for k := range r {
				if w := binary.LittleEndian.Uint64(raw[int(q) : int(q)+8]); w&0x80 == 0 {
					v, q = w&0x7f, q+1
				} else {
					var n int
					v, n = varint8(w)
					q += uint32(n)
				}
				prev += uint64(int64(v>>1) ^ -int64(v&1))
				r[k] = prev
			}
		}
		lb.pReqs, lb.prevReq = q, prev
		e.Reqs = r
		nst = len(r)
	} else if e.Reqs != nil {
		e.Reqs = nil
	}
	if a&AttrStatus != 0 {
		ps, pt := lb.pSrc, lb.pTag
		sb := lb.stBuf
		m := min(nst, cap(sb))
		st := sb[:m:m]
		for k := range st {
			var src, tag uint64
			if w := binary.LittleEndian.Uint64(raw[int(ps) : int(ps)+8]); w&0x80 == 0 {
				src, ps = w&0x7f, ps+1
			} else {
				var n int
				src, n = varint8(w)
				ps += uint32(n)
			}
			if w := binary.LittleEndian.Uint64(raw[int(pt) : int(pt)+8]); w&0x80 == 0 {
				tag, pt = w&0x7f, pt+1
			} else {
				var n int
				tag, n = varint8(w)
				pt += uint32(n)
			}
			st[k] = Status{Source: zz32(src), Tag: zz32(tag)}
		}
		lb.pSrc, lb.pTag = ps, pt
		e.Status = st
	} else if e.Status != nil {
		e.Status = nil
	}
	clearRare(e)
	if r := a & rareAttrs; r == AttrFlag {
		// The flag alone, inline: most calls of some programs have it
		// (hpcc: its MPI_Test and MPI_Iprobe calls), and rare's walk of
		// the table cost five times this. Read as rare reads the column
		// (EncU32, set as a bool).
		c := &lb.lc[lcFlag]
		var v uint64
		if p := c.p; uint(p) < uint(len(c.b)) && c.b[p] < 0x80 {
			v, c.p = uint64(c.b[p]), p+1
		} else {
			v = c.next()
		}
		e.Flag = uint32(v) != 0
	} else if r != 0 {
		lb.rare(e) // takes e.Attr again: a passed to it was kept on the stack on every path
	}
	return true
}

// nextSlow is Next for a batch whose columns hold a varint longer than 8
// bytes (a value of 2^56 or more, which no tracer writes in these columns,
// but the format allows): such a batch is decoded up front, as ReadBatch
// does, and walked with a Cursor.
func (lb *LazyBatch) nextSlow(e *Event) bool {
	sb := lb.slow
	i := lb.cursor.i
	if !lb.cursor.Next(sb, e) {
		return false
	}
	lb.cur = int32(sb.shapeIdx[i])
	return true
}

// touchAhead prefetches each column's bytes four cache lines ahead of
// Next's position. With many readers interleaved (the analyzer's replay),
// the batch's bytes have left the caches by the time Next reaches them,
// and Next's loads of one column depend on each other (the position of a
// varint depends on the length of the previous one): the columns' next
// lines missed one after the other. Called every 16 events: a column
// advances less than a line (64 bytes) in 16 events unless its values take
// 4 bytes or more, so that a line is prefetched a few times before Next
// reaches it. (Loads of a byte ahead instead overlapped the misses with
// each other but held up the decoding behind them until the lines came:
// 3–7 % more CPU time per call on a 128-rank stencil, where four lines
// ahead beat two and eight, docs/performance.md.)
func (lb *LazyBatch) touchAhead() {
	const ahead = 256
	b := uintptr(unsafe.Pointer(unsafe.SliceData(lb.raw))) + ahead
	// (Seven columns; Lines takes eight addresses, the last one twice.)
	prefetch.Lines(b+uintptr(lb.pShape), b+uintptr(lb.pGap), b+uintptr(lb.pDur), b+uintptr(lb.pNReqs),
		b+uintptr(lb.pReqs), b+uintptr(lb.pSrc), b+uintptr(lb.pTag), b+uintptr(lb.pTag))
}

// rare decodes the per-call attributes few calls have (rareCols): only
// the columns of the event's bits (rareByBit), their one-byte values
// inline. Some programs have one on most calls (hpcc: the flag of its
// MPI_Test and MPI_Iprobe calls).
func (lb *LazyBatch) rare(e *Event) {
	if a := e.Attr & rareAttrs; a&^(AttrFlag|AttrCalls|AttrInnerGaps) == 0 {
		// A folded run of polls (hpcc: a tenth of its events), its
		// columns read as the loop below reads them (EncU32 set as a
		// bool, EncU32, EncU64 set as an int64), without the walk of the
		// table and the switches per value.
		lc := lb.lc[:lcInnerGaps+1]
		if a&AttrFlag != 0 {
			var v uint64
			if c := &lc[lcFlag]; uint(c.p) < uint(len(c.b)) && c.b[c.p] < 0x80 {
				v = uint64(c.b[c.p])
				c.p++
			} else {
				v = c.next()
			}
			e.Flag = uint32(v) != 0
		}
		if a&AttrCalls != 0 {
			var v uint64
			if c := &lc[lcCalls]; uint(c.p) < uint(len(c.b)) && c.b[c.p] < 0x80 {
				v = uint64(c.b[c.p])
				c.p++
			} else {
				v = c.next()
			}
			e.Calls = uint32(v)
		}
		if a&AttrInnerGaps != 0 {
			var v uint64
			if c := &lc[lcInnerGaps]; uint(c.p) < uint(len(c.b)) && c.b[c.p] < 0x80 {
				v = uint64(c.b[c.p])
				c.p++
			} else {
				v = c.next()
			}
			e.InnerGaps = int64(v)
		}
		return
	}
	for x := uint32(e.Attr & rareAttrs); x != 0; x &= x - 1 {
		t := &rareByBit[bits.TrailingZeros32(x)&31]
		for j := range t {
			r := &t[j]
			if r.lc == 0 {
				break
			}
			c := &lb.lc[r.lc]
			var v uint64
			if p := c.p; uint(p) < uint(len(c.b)) && c.b[p] < 0x80 {
				v, c.p = uint64(c.b[p]), p+1
			} else {
				v = c.next()
			}
			r.ev.set(unsafe.Pointer(e), decodeValue(r.enc, v))
		}
	}
}

// rareCol is what LazyBatch.rare needs of a rare column: its index in
// LazyBatch.lc (never 0, the shape column's), its encoding and its Event
// field.
type rareCol struct {
	lc  int8
	enc Enc
	ev  field
}

// rareByBit lists the rare columns of each attribute bit, in field order
// (an attribute has at most two: AttrPcontrol's level and argument);
// columns.go's init fills it.
var rareByBit [32][2]rareCol

// parse reads a protobuf EventBatch into lb (aliasing data) and checks it
// as decodeBatch does, accepting and refusing the same batches.
func (lb *LazyBatch) parse(data []byte) error {
	lb.reset()
	t := &lb.tab
	t.reset()
	seen := lb.cnt[:0]
	for range lazyCols {
		seen = append(seen, 0)
	}
	msg := data
	err := batchFields(data, func(c *Column, payload, rest []byte) error {
		col := int(lazyOf[colByField[c.Field]])
		if col < 0 {
			return t.field(c, payload)
		}
		// A repeated field continues the column (proto3 packed fields
		// may be split): the pieces are joined so that a column is one
		// run of bytes. Writers never split them. A piece must end
		// with a whole varint, or joining would mend it.
		if len(payload) > 0 && payload[len(payload)-1] >= 0x80 {
			return fmt.Errorf("event batch: field %d: %v", c.Field, errVarintCol)
		}
		lc := &lb.lc[col]
		switch seen[col]++; seen[col] {
		case 1:
			lc.b = payload
			lb.off[col] = len(msg) - len(rest) - len(payload)
		case 2:
			lb.off[col] = -1
			lb.concat[col] = append(append(lb.concat[col][:0], lc.b...), payload...)
			lc.b = lb.concat[col]
		default:
			lb.concat[col] = append(lb.concat[col], payload...)
			lc.b = lb.concat[col]
		}
		return nil
	})
	if err != nil {
		return err
	}
	lb.cnt = seen
	lb.Thread, lb.BaseNs = t.thread, t.baseNs
	count := t.count
	lb.t = lb.BaseNs
	long, maxReqs, err := lb.check(count)
	if err != nil {
		return err
	}
	lb.pack(msg)
	lb.shapes = t.shapes
	for s := range lb.shapes {
		lb.shapes[s].thread = lb.Thread // (setShapeThread)
	}
	lb.Rewind()
	if long {
		if err := decodeBatch(msg, &lb.slowBuf); err != nil {
			return err // cannot happen: check accepted the batch
		}
		lb.slow, lb.count = &lb.slowBuf, int(count)
		return nil
	}
	// Next takes its buffers as they are: room for the most request ids
	// (and statuses) of one event.
	if cap(lb.reqBuf) < maxReqs {
		lb.reqBuf = make([]uint64, 0, maxReqs)
	}
	if cap(lb.stBuf) < max(maxReqs, 1) {
		lb.stBuf = make([]Status, 0, max(maxReqs, 1))
	}
	lb.n, lb.count = int32(count), int(count) // only now: a refused batch hands out no events
	return nil
}

var errVarintCol = errors.New("bad varint")

// check verifies everything Next relies on, without storing the events.
// It also reports whether a column Next reads with 8-byte loads holds a
// varint longer than 8 bytes, and the most request ids of one event.
func (lb *LazyBatch) check(count uint64) (long bool, maxReqs int, err error) {
	cnt := lb.cnt
	// Shape indexes of one byte each (fewer than 128 shapes): the common
	// case. Their histogram then stands for the count of the column's
	// varints, and for the walk over the events.
	sc := lb.lc[lcShape].b
	oneByte := count > 0 && uint64(len(sc)) == count && histogram(&lb.hist, sc)
	for k := range lb.lc {
		if k == lcShape && oneByte {
			cnt[k] = len(sc)
			continue
		}
		dur := k == lcDur
		n, l := countVarints(lb.lc[k].b, dur)
		long = long || l && k < numHot
		if n < 0 {
			f := columns[lazyCols[k]].Field
			if dur {
				return false, 0, fmt.Errorf("event batch: field %d: bad varint or duration out of range", f)
			}
			return false, 0, fmt.Errorf("event batch: field %d: %v", f, errVarintCol)
		}
		cnt[k] = n
	}
	if cnt[lcStSrc] != cnt[lcStTag] {
		return false, 0, fmt.Errorf("event batch: %d status sources but %d status tags", cnt[lcStSrc], cnt[lcStTag])
	}
	t := &lb.tab
	n := cnt[lcShape]
	if err := t.eventColumns(n, cnt[lcGap], cnt[lcDur]); err != nil || n == 0 {
		return long, 0, err
	}
	if err := t.fold(); err != nil {
		return false, 0, err
	}
	ns := len(t.shapes)
	h := t.histogram()
	if oneByte {
		if nonzeroFrom(&lb.hist, ns) {
			for s := 255; s >= ns; s-- {
				if lb.hist[s] != 0 {
					return false, 0, fmt.Errorf("event batch: shape index %d of %d", s, ns)
				}
			}
		}
		copy(h, lb.hist[:])
	} else {
		// Shape indexes of more than one byte (128 shapes or more: most of
		// LAMMPS's batches), decoded once into idx (4 bytes per event) for
		// the histogram and the walk of the statuses below, rather than
		// varint by varint in each, through a call per value.
		idx := slices.Grow(lb.idx[:0], n)[:n]
		lb.idx = idx
		if hi := shapeIndexes(sc, idx, h); hi >= uint64(ns) {
			return false, 0, fmt.Errorf("event batch: shape index %d of %d", min(hi, 0xffffffff), ns)
		}
	}
	nrb := lb.lc[lcNReqs].b
	nrOne := len(nrb) == cnt[lcNReqs] // request counts of one byte each
	err = t.perCall(cnt, func() int {
		s := 0
		if nrOne {
			s, maxReqs = sumBytes(nrb)
			return s
		}
		for c := (lcol{b: nrb}); c.p < len(c.b); {
			k := int(uint32(c.next()))
			s += k
			maxReqs = max(maxReqs, k)
		}
		return s
	}, func(kind []uint8) int {
		st := 0
		if oneByte && nrOne {
			j := 0
			k := (*[256]uint8)(kind) // no bounds check per event
			for _, x := range sc {
				if d := k[x]; d != 0 {
					if d == 2 {
						st += int(nrb[j])
					}
					j++
				}
			}
			return st
		}
		if !oneByte && nrOne {
			j := 0
			for _, x := range lb.idx {
				if d := kind[x]; d != 0 {
					if d == 2 {
						st += int(nrb[j])
					}
					j++
				}
			}
			return st
		}
		nr, c := lcol{b: nrb}, lcol{b: sc}
		for range n {
			if d := kind[c.next()]; d != 0 {
				k := int(uint32(nr.next()))
				if d == 2 {
					st += k
				}
			}
		}
		return st
	})
	return long, maxReqs, err
}

// shapeIndexes decodes the column of shape indexes sc into idx (as many
// as it holds), counts those below len(h) into h and returns the largest;
// one- and two-byte varints inline. An index of 2^32 or more is stored
// truncated, but is also the largest, which the caller refuses.
func shapeIndexes(sc []byte, idx []uint32, h []int32) (hi uint64) {
	p := 0
	for k := range idx {
		var v uint64
		if p+1 < len(sc) {
			if x := sc[p]; x < 0x80 {
				v, p = uint64(x), p+1
			} else if y := sc[p+1]; y < 0x80 {
				v, p = uint64(x&0x7f)|uint64(y)<<7, p+2
			} else {
				v, p = uvarint(sc, p)
			}
		} else {
			v, p = uvarint(sc, p)
		}
		hi = max(hi, v)
		idx[k] = uint32(v)
		if v < uint64(len(h)) {
			h[v]++
		}
	}
	return hi
}

// sumBytes returns the sum of the bytes of b, all below 0x80, and a bound
// of the largest: their bitwise or, at most twice the largest. Eight at a
// time, in 16-bit lanes folded before they can overflow.
func sumBytes(b []byte) (sum, most int) {
	const m = 0x00ff00ff00ff00ff
	var lanes, or uint64
	i, k := 0, 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		or |= w
		lanes += w&m + w>>8&m
		if k++; k == 256 {
			sum += fold16(lanes)
			lanes, k = 0, 0
		}
	}
	sum += fold16(lanes)
	or |= or >> 32
	or |= or >> 16
	or |= or >> 8
	most = int(or & 0xff)
	for _, x := range b[i:] {
		sum += int(x)
		most |= int(x)
	}
	return sum, most
}

// fold16 sums the four 16-bit lanes of x.
func fold16(x uint64) int {
	x = x&0x0000ffff0000ffff + x>>16&0x0000ffff0000ffff
	return int(x&0xffffffff + x>>32)
}

// histogram counts the values of a column of one-byte shape indexes into
// h and reports whether every byte is a whole varint (below 0x80).
func histogram(h *[256]int32, sc []byte) bool {
	clear(h[:])
	for _, x := range sc {
		h[x]++
	}
	return !nonzeroFrom(h, 0x80)
}

// nonzeroFrom reports whether h counts anything at index s or above:
// four counts at a time, once a batch (a batch of a few hundred events, as
// LAMMPS writes them, paid a few instructions per event for the loop one
// count at a time).
func nonzeroFrom(h *[256]int32, s int) bool {
	var or int32
	for ; s < len(h) && s&3 != 0; s++ {
		or |= h[s]
	}
	for ; s+4 <= len(h); s += 4 {
		or |= h[s] | h[s+1] | h[s+2] | h[s+3]
	}
	return or != 0
}

// countVarints returns the number of varints in a packed column, or -1 if
// the column is not a sequence of valid varints (or, with dur, holds a
// value of 2^63 or more), and whether a varint is longer than 8 bytes.
// The varints are the bytes without the continuation bit; a column whose
// runs of continuation bytes are all shorter than 8 (values below 2^56)
// and whose last byte ends a varint is valid, and its count is that of
// such bytes. Otherwise (rare) the exact byte-by-byte check counts it.
//
// It looks at 64 bytes at a time: first, while a block has no
// continuation byte at all (the columns of request counts and statuses,
// whose values are below 128), only the or of its words; from the first
// block that has one, contBlocks. The bytes after the last whole block
// are counted as a block of their own, padded with zeros (one-byte
// varints that are not counted).
func countVarints(b []byte, dur bool) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if b[len(b)-1] >= 0x80 {
		return -1, false // the last varint is cut
	}
	i := 0
	for ; len(b)-i >= 64; i += 64 {
		w := b[i : i+64 : i+64]
		or := binary.LittleEndian.Uint64(w) | binary.LittleEndian.Uint64(w[8:]) |
			binary.LittleEndian.Uint64(w[16:]) | binary.LittleEndian.Uint64(w[24:]) |
			binary.LittleEndian.Uint64(w[32:]) | binary.LittleEndian.Uint64(w[40:]) |
			binary.LittleEndian.Uint64(w[48:]) | binary.LittleEndian.Uint64(w[56:])
		if or&0x8080808080808080 != 0 {
			break
		}
	}
	whole := i + (len(b)-i)&^63
	cont, last, run8 := contBlocks(b[i:whole], 0)
	if whole < len(b) {
		var pad [64]byte
		copy(pad[:], b[whole:])
		c, _, r := contBlocks(pad[:], last)
		cont, run8 = cont+c, run8 || r
	}
	if run8 {
		return countExact(b, dur), true
	}
	return len(b) - cont, false
}

// contBlocks is countVarints' loop over blocks of 64 bytes (len(b) a
// multiple of 64): the number of continuation bytes, the last block's
// transposed continuation bits (prev of the block after it), and whether
// 8 continuation bytes follow one another, from the last 8 bytes before
// the first block (given by prev) to the first 8 of the last block. A
// function of its own, not inlined, so that its values stay in registers.
//
// A block's 8 words are transposed into one, p: bit k of byte lane l is
// the continuation bit of the block's byte 8k+l. The block's continuation
// bytes are then the ones of p. In q, bit k of lane l is that of byte
// 8(k-1)+l (k = 0: of the previous block's last word), so that the bytes
// from 8(k-1) to 8k+7 are bit k of the 16 lanes of q then p, in order: 8
// continuation bytes in a row are a bit set in 8 lanes in a row there,
// found by anding the lanes shifted by 1, 2 and 4.
//
//go:noinline
func contBlocks(b []byte, prev uint64) (cont int, last uint64, run8 bool) {
	const (
		stops = 0x8080808080808080
		ones  = 0x0101010101010101
	)
	var hits uint64
	// The blocks as arrays: no bounds check per word, nor slicing per block.
	blocks := unsafe.Slice((*[64]byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/64)
	for k := range blocks {
		w := blocks[k][:]
		p := binary.LittleEndian.Uint64(w)&stops>>7 | binary.LittleEndian.Uint64(w[8:])&stops>>6 |
			binary.LittleEndian.Uint64(w[16:])&stops>>5 | binary.LittleEndian.Uint64(w[24:])&stops>>4 |
			binary.LittleEndian.Uint64(w[32:])&stops>>3 | binary.LittleEndian.Uint64(w[40:])&stops>>2 |
			binary.LittleEndian.Uint64(w[48:])&stops>>1 | binary.LittleEndian.Uint64(w[56:])&stops
		q := p<<1&^ones | prev>>7&ones
		prev = p
		// Lanes i to i+7 of q then p anded into lane i of q, i < 8 (a run
		// in p's 8 lanes alone, word k, is q's bit k+1, or the next
		// block's bit 0).
		q &= q>>8 | p<<56
		h := p & (p >> 8)
		q &= q>>16 | h<<48
		h &= h >> 16
		hits |= q & (q>>32 | h<<32)
		// On amd64 v1 a check of the CPU then POPCNT: the fallback's call
		// spills the loop's values on its own path only.
		cont += bits.OnesCount64(p)
	}
	return cont, prev, hits != 0
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
