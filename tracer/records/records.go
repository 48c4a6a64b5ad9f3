// Package records decodes the tracer's in-memory call records (written by
// the C recording path, tracer/rt/dt_wrap.h) into traceformat batches.
// It is pure Go so that the decoder can be tested and benchmarked without
// MPI.
//
// A record is a 20-byte header — uint16 function id, uint16 Attr bits,
// uint32 call-site id, uint64 raw entry clock reading, uint32 duration
// (the raw exit reading minus the entry, modulo 2^64) — followed by the
// values of the attributes its bits announce, in bit order, little-endian,
// as traceformat's column table gives them (traceformat.Columns: an
// attribute's columns in order, RecordSize bytes each): REQS is a u32
// count n then n u64 ids, STATUS n (1 without REQS) pairs of i32 source
// and tag; each other column is one value. Records are 4-byte aligned.
//
// Two bits of the header's Attr are escapes rather than attributes, so
// that a value too large for its 32 bits is still recorded exactly:
// RawLong (bit 13), the duration's upper 32 bits follow the header (which
// is then 24 bytes); RawWide (bit 14), the byte counts (AttrSendBytes,
// AttrRecvBytes, u32 otherwise) are u64. Both are rare: on the ping-pong,
// the stencil and hpcc every duration fits (a call of less than ~1.5 s at
// 3 GHz; an exit reading before the entry, which an unordered rdtsc may
// give, takes RawLong too). The events keep only the attribute bits.
//
// CALLS (bit 11) marks a record that stands for a run of consecutive
// unsuccessful polls (a test or probe whose flag is false, MPI_Testsome
// with no completion) of one call site with identical attribute bytes,
// which the C side folds into one record; the u32 is how many calls (2 or
// more). Its header then holds the LAST call's exit as the exit reading
// and, as the entry reading, that exit minus the summed time of the calls
// inside MPI: the event's duration is the run's MPI time, placed to end at
// the last exit, and the computation between the polls falls in the gap
// before it. The decoder needs no special case for the times. INNER_GAPS
// (bit 12, always with CALLS) follows it: a u64, the summed raw clock
// time between the run's consecutive calls (from one call's exit to the
// next one's entry), which the decoder converts to ns (innerGapsNs).
// Besides unsuccessful polls, the C side folds runs of identical queries
// that complete nothing (tracer/gen: foldable).
package records

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/dtpa/dtpa/traceformat"
)

// HeaderSize is the size of a record header without RawLong.
const HeaderSize = 20

// The escape bits of a record header's Attr (package comment).
const (
	RawLong = 1 << 13 // the duration is a u64: the header is 24 bytes
	RawWide = 1 << 14 // the byte counts are u64
)

// byteAttrs are the attributes whose values RawWide widens.
const byteAttrs = traceformat.AttrSendBytes | traceformat.AttrRecvBytes

// stIdx is the index in staticSize of a record with the header Attr bits a:
// its static attribute bits and RawWide.
func stIdx(a uint16) int { return int(a&uint16(staticOnly)) | int(a&RawWide)>>(14-6) }

// Converter turns raw clock readings into local nanoseconds exactly as
// dt_ns in tracer/rt/dt_clock.c does (clock-sync samples are converted
// there, events here).
type Converter struct {
	TSC       bool    // raw readings are TSC ticks
	NsPerTick float64 // TSC calibration …
	Raw0      uint64  // … from this reading
	Ns0       int64   // … taken at this CLOCK_MONOTONIC_RAW time
	SkewOff   int64   // injected offset (DT_CLOCK_SKEW), ns
	SkewPPM   float64 // injected drift, parts per million
}

// Ns converts a raw reading.
func (c *Converter) Ns(raw uint64) int64 {
	ns := int64(raw)
	if c.TSC {
		ns = c.Ns0 + int64(float64(int64(raw-c.Raw0))*c.NsPerTick)
	}
	if c.SkewOff != 0 || c.SkewPPM != 0 {
		ns += c.SkewOff + int64(c.SkewPPM*1e-6*float64(ns-c.Ns0))
	}
	return ns
}

// FromMonotonicRaw converts ns, a CLOCK_MONOTONIC_RAW reading taken on the
// node of the process whose clock c converts (the clock its TSC is
// calibrated against, or reads), to that process's local time.
func (c *Converter) FromMonotonicRaw(ns int64) int64 {
	if c.SkewOff != 0 || c.SkewPPM != 0 {
		ns += c.SkewOff + int64(c.SkewPPM*1e-6*float64(ns-c.Ns0))
	}
	return ns
}

// ErrTruncated reports a record cut by the end of its buffer (the C side
// only hands over complete records, so this means a bug or a crash race).
var ErrTruncated = errors.New("record truncated")

var le = binary.LittleEndian

// Decode appends the records of p (one thread's buffer) to b, which must be
// empty or hold earlier events of the same thread added by Decode. It
// stops at the first malformed record, keeping the complete ones before
// it. The static part of a call goes to b's shape table
// (traceformat.Builder.AppendStatic) without a lookup when it repeats the
// call before it or the last call of its call site.
func Decode(b *traceformat.Builder, p []byte, tid uint32, conv *Converter) error {
	if max := len(p) / HeaderSize; cap(b.Gap)-len(b.Gap) < max {
		b.Gap = slices.Grow(b.Gap, max)
		b.Dur = slices.Grow(b.Dur, max)
	}
	if b.Len() == 0 {
		b.Thread = tid
	}
	// The clock conversion of Ns, with the calibration in locals: the usual
	// case (TSC, no injected skew) then costs no reload per reading.
	plain := conv.TSC && conv.SkewOff == 0 && conv.SkewPPM == 0
	raw0, ns0, k := conv.Raw0, conv.Ns0, conv.NsPerTick
	e := traceformat.Event{Thread: tid}
	// A record's first 8 bytes are its key: function, attribute bits and
	// call site. A call site nearly always makes the same call, so a record
	// whose key and static attribute bytes equal those of the site's last
	// record in p takes that record's event's shape (AppendLike) without
	// reading its static attributes or looking the shape up. sites holds,
	// by call site modulo its size, the key of such a record, its static
	// attributes (a slice of p; nil = none yet), the index of its event in
	// b, and what the key says of the record's length: the attribute bytes
	// (need; -1 when they depend on a request count) and whether per-call
	// attributes follow (dyn: 0 none, 1 one status alone, 2 others). A hit
	// then costs no table lookup of the sizes.
	var sites [64]struct {
		key  uint64
		stat []byte
		ev   int
		need int
		dyn  int
	}
	// A run of one call with only static attributes (a loop of a cheap
	// call) is taken whole by the inner loop below. run is the offset of
	// the last record when it had only static attributes, else -1.
	run := -1
	var exit int64 // exit time of the last event appended
	off := 0
	for off+HeaderSize <= len(p) {
		key := le.Uint64(p[off:])
		if run >= 0 && key == le.Uint64(p[run:]) {
			// The same call again: its record has run's length.
			st := int(staticSize[stIdx(uint16(key>>16))])
			if n, o, x := repeats(b, p, off, run, st, exit, conv); n > 0 {
				off, exit = o, x
				b.RepeatLast(n, exit)
				continue
			}
		}
		site := uint32(key >> 32)
		c := &sites[site%uint32(len(sites))]
		if c.key == key && c.stat != nil && c.need >= 0 && off+HeaderSize+c.need <= len(p) {
			r := p[off : off+HeaderSize+c.need]
			q := r[HeaderSize:]
			if sameStatic(c.stat, q) {
				h := (*[HeaderSize]byte)(r)
				var t0, t1 int64
				if r0 := le.Uint64(h[8:]); plain {
					r1 := r0 + uint64(le.Uint32(h[16:]))
					t0, t1 = ns0+int64(float64(int64(r0-raw0))*k), ns0+int64(float64(int64(r1-raw0))*k)
				} else {
					t0, t1 = conv.Ns(r0), conv.Ns(r0+uint64(le.Uint32(h[16:])))
				}
				t1 = max(t1, t0)
				b.AppendLike(c.ev, t0, t1)
				exit = t1
				run = off
				switch st := len(c.stat); c.dyn {
				case 1:
					if len(q) >= st+8 {
						b.Status = append(b.Status, traceformat.Status{Source: int32(le.Uint32(q[st:])), Tag: int32(le.Uint32(q[st+4:]))})
					}
					run = -1
				case 2:
					dynamicAttrs(b, traceformat.Attr(uint16(key>>16))&traceformat.AttrKnown, q[st:], le.Uint64(h[8:]), conv)
					run = -1
				}
				off += HeaderSize + c.need
				continue
			}
		}
		a16 := uint16(key >> 16)
		attr := traceformat.Attr(a16) & traceformat.AttrKnown
		hl := HeaderSize
		if a16&RawLong != 0 {
			hl += 4
		}
		st := int(staticSize[stIdx(a16)])
		need := st
		if attr&^staticOnly != 0 {
			need = dynamicSize(attr, p[min(off+hl+st, len(p)):])
			if need >= 0 {
				need += st
			}
		}
		if need < 0 || off+hl+need > len(p) {
			return ErrTruncated
		}
		r := p[off : off+hl+need]
		h := (*[HeaderSize]byte)(r)
		dur := uint64(le.Uint32(h[16:]))
		if hl > HeaderSize {
			dur |= uint64(le.Uint32(r[HeaderSize:])) << 32
		}
		var t0, t1 int64
		if r0 := le.Uint64(h[8:]); plain {
			r1 := r0 + dur
			t0, t1 = ns0+int64(float64(int64(r0-raw0))*k), ns0+int64(float64(int64(r1-raw0))*k)
		} else {
			t0, t1 = conv.Ns(r0), conv.Ns(r0+dur)
		}
		t1 = max(t1, t0)
		q := r[hl:]
		if c.stat != nil && c.key == key && sameStatic(c.stat, q[:st]) {
			b.AppendLike(c.ev, t0, t1)
		} else if hl > HeaderSize {
			// Not cached: the site's fast path takes the usual header.
			e.Func, e.Site, e.Attr, e.Entry, e.Exit = uint32(uint16(key)), site, attr, t0, t1
			staticAttrs(&e, attr, a16&RawWide != 0, q)
			b.AppendStatic(&e)
		} else {
			e.Func, e.Site, e.Attr, e.Entry, e.Exit = uint32(uint16(key)), site, attr, t0, t1
			if attr == traceformat.AttrComm {
				e.Comm = le.Uint32(q)
			} else if attr&staticOnly != 0 {
				staticAttrs(&e, attr, a16&RawWide != 0, q)
			}
			b.AppendStatic(&e)
			c.key, c.stat, c.ev = key, q[:st:st], b.Len()-1
			c.need, c.dyn = need, 0
			switch dyn := attr &^ staticOnly; {
			case dyn&traceformat.AttrReqs != 0:
				c.need, c.dyn = -1, 2
			case dyn == traceformat.AttrStatus:
				c.dyn = 1
			case dyn != 0:
				c.dyn = 2
			}
		}
		exit = t1
		run = off
		if attr&^staticOnly != 0 || hl > HeaderSize {
			run = -1
		}
		if attr&^staticOnly != 0 {
			dynamicAttrs(b, attr, q[st:], le.Uint64(h[8:]), conv)
		}
		off += hl + need
	}
	if off != len(p) {
		return ErrTruncated
	}
	return nil
}

// repeats appends to b.Gap and b.Dur the times of the records from off
// that repeat the one at run (static attributes only, st bytes of them)
// and returns how many, the offset after them and the exit time of the
// last; exit is that of the event before them. It is Decode's loop
// over a run of one call, in a function of its own so that its locals get
// the registers.
func repeats(b *traceformat.Builder, p []byte, off, run, st int, exit int64, conv *Converter) (n, end int, last int64) {
	rl := HeaderSize + st
	s0 := p[run+HeaderSize : run+rl]
	key := le.Uint64(p[run:])
	var c4 uint32 // the communicator, when it is the only attribute
	if st == 4 {
		c4 = le.Uint32(s0)
	}
	plain := conv.TSC && conv.SkewOff == 0 && conv.SkewPPM == 0
	raw0, ns0, k := conv.Raw0, conv.Ns0, conv.NsPerTick
	// Indexed stores instead of appends: with no call in the loop (growing
	// the slices) its locals need not be spilled. Decode made room.
	i := len(b.Gap)
	room := min(cap(b.Gap), cap(b.Dur))
	gap, dur := b.Gap[:room], b.Dur[:room]
	if st == 4 && plain {
		i, off, exit = commRepeats(gap, dur, i, p, off, key, c4, exit, raw0, ns0, k)
	}
	for off+rl <= len(p) && i < room {
		r := p[off : off+rl]
		if le.Uint64(r) != key {
			break
		}
		if st == 4 {
			if le.Uint32(r[HeaderSize:]) != c4 {
				break
			}
		} else if st != 0 && !sameStatic(r[HeaderSize:], s0) {
			break
		}
		r0 := le.Uint64(r[8:])
		r1 := r0 + uint64(le.Uint32(r[16:]))
		var t0, t1 int64
		if plain {
			t0, t1 = ns0+int64(float64(int64(r0-raw0))*k), ns0+int64(float64(int64(r1-raw0))*k)
		} else {
			t0, t1 = conv.Ns(r0), conv.Ns(r1)
		}
		t1 = max(t1, t0)
		gap[i] = t0 - exit
		dur[i] = uint64(t1 - t0)
		i++
		exit = t1
		off += rl
	}
	n = i - len(b.Gap)
	b.Gap, b.Dur = gap[:i], dur[:i]
	return n, off, exit
}

// commRecord is the record of a call with a communicator as its only
// attribute.
type commRecord = [HeaderSize + 4]byte

// commRepeats is the loop of repeats for the commonest cheap call, taking
// only a communicator, with the usual clock conversion: with the record
// length a constant, the loop has one bounds check per record and its
// locals all fit in registers (measured 157 -> 120 instructions per event
// for decode + encode + zstd of the cheap stream).
func commRepeats(gap []int64, dur []uint64, i int, p []byte, off int, key uint64, comm uint32, exit int64,
	raw0 uint64, ns0 int64, k float64) (int, int, int64) {
	for i < len(gap) && i < len(dur) && off+len(commRecord{}) <= len(p) {
		r := (*commRecord)(p[off:])
		if le.Uint64(r[:]) != key || le.Uint32(r[HeaderSize:]) != comm {
			break
		}
		r0 := le.Uint64(r[8:])
		t0 := ns0 + int64(float64(int64(r0-raw0))*k)
		t1 := max(ns0+int64(float64(int64(r0+uint64(le.Uint32(r[16:]))-raw0))*k), t0)
		gap[i] = t0 - exit
		dur[i] = uint64(t1 - t0)
		i++
		exit = t1
		off += len(commRecord{})
	}
	return i, off, exit
}

// staticOnly are the attributes whose values are part of a call's shape
// (traceformat.Builder.AppendStatic); the others are per call.
const staticOnly = traceformat.StaticAttrs

// The record layout follows traceformat's column table: after the header,
// the values of each attribute present, in bit order (the table's column
// order), each value RecordSize bytes; an attribute's CountReqs columns
// repeat as many times as its count column says and CountStatus columns
// (in pairs) once per request id, or once without AttrReqs.
var (
	// staticCols and rareCols are the table's static columns and rare
	// per-call columns (index r of traceformat.Builder.AppendRare).
	staticCols, rareCols []*traceformat.Column
	// staticSize is the size of the static attributes of a record by its
	// static attribute bits and RawWide (stIdx).
	staticSize [2 * (staticOnly + 1)]uint8
	// dynLayout is the size of the per-call attributes of a record by its
	// per-call attribute bits (the static ones, the low bits, divided
	// away): fixed bytes, and bytes per request id when AttrReqs is set
	// (the count of ids is the first value after the static attributes).
	dynLayout [traceformat.AttrKnown/(staticOnly+1) + 1]struct{ fixed, perReq int }
)

func init() {
	cols := traceformat.Columns()
	var perCall traceformat.Attr
	for i := range cols {
		switch c := &cols[i]; c.Form {
		case traceformat.FormStatic:
			staticCols = append(staticCols, c)
		case traceformat.FormPerCall:
			perCall |= c.Attr
		}
	}
	for r := range traceformat.RareColumns() {
		rareCols = append(rareCols, traceformat.RareColumn(r))
	}
	for a := range staticSize {
		for _, c := range staticCols {
			if traceformat.Attr(a)&c.Attr != 0 {
				staticSize[a] += uint8(recordSize(c, a&int(staticOnly+1) != 0))
			}
		}
	}
	if staticOnly != 1<<6-1 || traceformat.AttrKnown&(RawLong|RawWide) != 0 || perCall&(traceformat.AttrReqs<<1-1) != traceformat.AttrReqs {
		panic("records: the static attributes must be the low bits, and AttrReqs the next")
	}
	for k := range dynLayout {
		a := traceformat.Attr(k) * (staticOnly + 1)
		l := &dynLayout[k]
		for i := range cols {
			c := &cols[i]
			if c.Form != traceformat.FormPerCall || a&c.Attr == 0 {
				continue
			}
			switch {
			case c.Count == traceformat.CountOne:
				l.fixed += c.RecordSize
			case c.Count == traceformat.CountReqs, c.Count == traceformat.CountStatus && a&traceformat.AttrReqs != 0:
				l.perReq += c.RecordSize
			default: // CountStatus without request ids: one
				l.fixed += c.RecordSize
			}
		}
	}
}

// recordSize is the bytes of a value of column c in a record, wide when it
// has RawWide.
func recordSize(c *traceformat.Column, wide bool) int {
	if wide && c.Attr&byteAttrs != 0 {
		return 8
	}
	return c.RecordSize
}

// value reads a value of column c from q (size bytes, recordSize; signed
// ones sign-extended, as traceformat.Column's accessors take them).
func value(c *traceformat.Column, q []byte, size int) uint64 {
	if size == 8 {
		return le.Uint64(q)
	}
	v := le.Uint32(q)
	if c.Enc == traceformat.EncS32 {
		return uint64(int64(int32(v)))
	}
	return uint64(v)
}

// dynamicSize returns the bytes taken by the per-call attributes of a
// record with attr (q starts after its static attributes), or -1 when q is
// too short to tell.
func dynamicSize(attr traceformat.Attr, q []byte) int {
	l := &dynLayout[(attr&traceformat.AttrKnown)/(staticOnly+1)]
	if attr&traceformat.AttrReqs == 0 {
		return l.fixed
	}
	if len(q) < 4 {
		return -1
	}
	return l.fixed + l.perReq*int(le.Uint32(q))
}

// staticAttrs reads the static attribute values of a record into e (wide:
// it has RawWide).
func staticAttrs(e *traceformat.Event, a traceformat.Attr, wide bool, q []byte) {
	off := 0
	for _, c := range staticCols {
		if a&c.Attr != 0 {
			n := recordSize(c, wide)
			c.SetEvent(e, value(c, q[off:], n))
			off += n
		}
	}
}

// dynamicAttrs appends the per-call attribute values of a record (q starts
// after its static attributes, r0 is its raw entry reading) to b's columns.
func dynamicAttrs(b *traceformat.Builder, a traceformat.Attr, q []byte, r0 uint64, conv *Converter) {
	off := 0
	nst := 1
	// The loops append to locals, which stay in registers (b's fields
	// would be reloaded and stored at each append).
	if a&traceformat.AttrReqs != 0 {
		n := le.Uint32(q[off:])
		off += 4
		b.NReqs = append(b.NReqs, n)
		reqs := b.Reqs
		for k := uint32(0); k < n; k++ {
			reqs = append(reqs, le.Uint64(q[off:]))
			off += 8
		}
		b.Reqs = reqs
		nst = int(n)
	}
	if a&traceformat.AttrStatus != 0 {
		st := b.Status
		for k := 0; k < nst; k++ {
			st = append(st, traceformat.Status{Source: int32(le.Uint32(q[off:])), Tag: int32(le.Uint32(q[off+4:]))})
			off += 8
		}
		b.Status = st
	}
	if a&rareAttrs != 0 {
		appendRare(b, a, q[off:], r0, conv)
	}
}

// rareAttrs are the attributes of the rare columns.
var rareAttrs = func() (a traceformat.Attr) {
	for r := range traceformat.RareColumns() {
		a |= traceformat.RareColumn(r).Attr
	}
	return a
}()

// appendRare is the part of dynamicAttrs for the attributes few calls
// carry (q starts after the statuses), out of line.
func appendRare(b *traceformat.Builder, a traceformat.Attr, q []byte, r0 uint64, conv *Converter) {
	off := 0
	for r, c := range rareCols {
		if a&c.Attr != 0 {
			v := value(c, q[off:], c.RecordSize)
			if c.Attr == traceformat.AttrInnerGaps {
				v = uint64(innerGapsNs(v, r0, conv))
			}
			b.AppendRare(r, v)
			off += c.RecordSize
		}
	}
}

// innerGapsNs converts a folded run's summed inner gaps, raw clock ticks
// in the record, to ns such that the run's first call entered at the
// event's entry minus them: the difference of the converted readings of
// the event's entry r0 and of that first entry, r0 − raw (each reading is
// converted as the event's own times are, so the gap before the first call
// comes out as an unfolded record's would).
func innerGapsNs(raw, r0 uint64, conv *Converter) int64 {
	if raw > r0 {
		raw = r0 // not a reading this clock gave: the run cannot start before 0
	}
	return max(0, conv.Ns(r0)-conv.Ns(r0-raw))
}

// size returns the attribute bytes a record with the header Attr bits a
// takes, or -1 when q is too short to tell.
func size(a uint16, q []byte) int {
	if a == 0 {
		return 0
	}
	n := int(staticSize[stIdx(a)])
	d := dynamicSize(traceformat.Attr(a)&traceformat.AttrKnown, q[min(n, len(q)):])
	if d < 0 {
		return -1
	}
	return n + d
}

// sameStatic reports whether the static attribute bytes of two records
// with the same attribute bits are equal. Their length is a multiple of 4
// of at most 40 bytes: compared a word at a time, without the call of
// bytes.Equal.
func sameStatic(x, y []byte) bool {
	y = y[:len(x)]
	for len(x) >= 8 {
		if le.Uint64(x) != le.Uint64(y) {
			return false
		}
		x, y = x[8:], y[8:]
	}
	return len(x) < 4 || le.Uint32(x) == le.Uint32(y)
}

// After returns the records of p (one thread's buffer, in time order) that
// entered after ns, the entry time of the last event of that thread already
// in the trace: a buffer written to the trace but not yet marked free when
// its process died would otherwise be recovered a second time. A malformed
// record ends the scan (Decode stops there too).
func After(p []byte, conv *Converter, ns int64) []byte {
	for off := 0; off+HeaderSize <= len(p); {
		h, _, need := record(p, off)
		if need < 0 || conv.Ns(le.Uint64(h[8:])) > ns {
			return p[off:]
		}
		off += len(h) + need
	}
	return nil
}

// record returns the header of the record at off (off+HeaderSize ≤
// len(p); 24 bytes with RawLong), its header's Attr bits (escapes
// included) and how many attribute bytes follow the header; need < 0 when
// p ends inside the record.
func record(p []byte, off int) (h []byte, attr traceformat.Attr, need int) {
	a := le.Uint16(p[off+2:])
	hl := HeaderSize
	if a&RawLong != 0 {
		hl += 4
	}
	if off+hl > len(p) {
		return p[off:], traceformat.Attr(a), -1
	}
	h = p[off : off+hl]
	switch traceformat.Attr(a) {
	case 0:
	case traceformat.AttrComm: // the commonest: calls taking only a communicator
		need = 4
	default:
		need = size(a, p[off+hl:])
	}
	if need < 0 || off+hl+need > len(p) {
		need = -1
	}
	return h, traceformat.Attr(a), need
}
