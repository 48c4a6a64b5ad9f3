package traceformat

import (
	"math/bits"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// The event encoding, described once: every field of trace.proto's
// EventBatch, in field order, with where its values live, how they are
// encoded on disk and in the tracer's call records, and the attribute
// whose presence they follow. The batch encoder, both decoders (their
// field switch, the shape table and the checks of the column lengths) and
// the record decoder (tracer/records) are driven by it; TestColumnsMatch*
// check it against trace.proto's descriptor and tracer/rt/dt_wrap.h,
// and TestHotPathsMatchColumns the hand-written hot paths (LazyBatch.Next,
// Cursor.Next, Builder.shapeID, shape.equal, clearRare) against it.
//
// Adding a per-call attribute (one that changes from call to call): its
// bit (Attr* and attrKnown), an entry in attributes, a column here with
// its Event field, a line in clearRare, the field and enum value in
// trace.proto (make proto; VersionMinor+1), and the C side (A_* in
// dt_wrap.h, the wrappers that record it). The codec, both decoders and
// the record decoder take it from the table, in the generic rare columns.
// A static attribute (part of a call's shape) also needs a shape field
// and its copies in shape.equal, Builder.shapeID, Cursor.Next and
// LazyBatch.Next (the hot paths; the tests name any that is missing).

// Form says where a column's values live.
type Form uint8

const (
	// FormScalar is a single value of the batch (thread, base_ns, count).
	FormScalar Form = iota
	// FormEvent is one value per event (shape, gap, dur).
	FormEvent
	// FormShape is one value per shape (func, site, attr).
	FormShape
	// FormStatic is one value per shape whose attributes have the column's
	// bit: values an iterative program repeats call after call.
	FormStatic
	// FormPerCall is one value (see Count) per event whose shape has the
	// column's bit: values that change from call to call.
	FormPerCall
)

// Enc is how a column's values are encoded in the packed protobuf field.
type Enc uint8

const (
	EncU32      Enc = iota // uint32 varint
	EncU64                 // uint64 varint
	EncI64                 // int64 varint (two's complement)
	EncS32                 // sint32 (zigzag) varint
	EncS64                 // sint64 (zigzag) varint
	EncDur                 // uint64 varint below 2^63
	EncReqDelta            // sint64 zigzag of the difference from the previous value
)

// Count says how many values a per-call column has for one event.
type Count uint8

const (
	CountOne    Count = iota // one
	CountReqs                // as many as the event's nreqs value
	CountStatus              // as many as nreqs when the event has AttrReqs, else one
)

// Column describes one field of EventBatch.
type Column struct {
	Field protowire.Number
	Name  string // field name in trace.proto
	Form  Form
	Enc   Enc
	Attr  Attr  // FormStatic, FormPerCall: the attribute the values follow
	Count Count // FormPerCall
	// RecordSize is the bytes per value in the tracer's call record
	// (records package, dt_wrap.h); the values of an attribute's columns
	// follow each other in column order, repeated Count times (request ids
	// after their count, statuses as source/tag pairs). Byte counts take 8
	// in a record with the escape records.RawWide.
	RecordSize int

	// FormShape, FormStatic: the value's field in a shape. FormStatic,
	// rare FormPerCall: its field in an Event. Values travel as uint64
	// (signed ones sign-extended). Fields rather than accessor functions:
	// an Event passed to a function value escapes to the heap.
	shape, event field
}

// field locates a column's value in a struct (shape or Event): its offset
// and type. TestColumnFields checks them against the structs' fields.
type field struct {
	off uintptr
	typ fieldType
}

type fieldType uint8

const (
	tNone fieldType = iota
	tU32
	tI32
	tU64
	tI64
	tBool
)

func at(off uintptr, typ fieldType) field { return field{off, typ} }

func (f field) get(p unsafe.Pointer) uint64 {
	q := unsafe.Add(p, f.off)
	switch f.typ {
	case tU32:
		return uint64(*(*uint32)(q))
	case tI32:
		return uint64(int64(*(*int32)(q)))
	case tU64:
		return *(*uint64)(q)
	case tI64:
		return uint64(*(*int64)(q))
	case tBool:
		if *(*bool)(q) {
			return 1
		}
	}
	return 0
}

func (f field) set(p unsafe.Pointer, v uint64) {
	q := unsafe.Add(p, f.off)
	switch f.typ {
	case tU32:
		*(*uint32)(q) = uint32(v)
	case tI32:
		*(*int32)(q) = int32(v)
	case tU64:
		*(*uint64)(q) = v
	case tI64:
		*(*int64)(q) = int64(v)
	case tBool:
		*(*bool)(q) = uint32(v) != 0
	}
}

// setShape is set for a shape's fields, which are all 32-bit integers but
// the byte counts: a value's low 32 bits are the int32's and the uint32's
// alike, so that one test of the type does.
func (f field) setShape(s *shape, v uint64) {
	q := unsafe.Add(unsafe.Pointer(s), f.off)
	if f.typ == tU64 {
		*(*uint64)(q) = v
	} else {
		*(*uint32)(q) = uint32(v)
	}
}

func (c *Column) shapeGet(s *shape) uint64    { return c.shape.get(unsafe.Pointer(s)) }
func (c *Column) shapeSet(s *shape, v uint64) { c.shape.setShape(s, v) }
func (c *Column) eventGet(e *Event) uint64    { return c.event.get(unsafe.Pointer(e)) }
func (c *Column) eventSet(e *Event, v uint64) { c.event.set(unsafe.Pointer(e), v) }

// Field numbers of the columns the hand-written hot paths name (batch
// encoder and decoders); TestColumnsMatchDescriptor checks them.
const (
	fThread       = 1
	fBaseNs       = 2
	fCount        = 3
	fShape        = 4
	fGap          = 5
	fDur          = 6
	fNReqs        = 18
	fReqs         = 19
	fStatusSource = 20
	fStatusTag    = 21
	fFlag         = 25
)

func u32(v uint64) uint64 { return uint64(uint32(v)) }
func s32(v int32) uint64  { return uint64(int64(v)) }

// columns is the table: every EventBatch field, in field order.
var columns = [...]Column{
	{Field: fThread, Name: "thread", Form: FormScalar, Enc: EncU32},
	{Field: fBaseNs, Name: "base_ns", Form: FormScalar, Enc: EncI64},
	{Field: fCount, Name: "count", Form: FormScalar, Enc: EncU32},
	{Field: fShape, Name: "shape", Form: FormEvent, Enc: EncU32},
	{Field: fGap, Name: "gap", Form: FormEvent, Enc: EncS64},
	{Field: fDur, Name: "dur", Form: FormEvent, Enc: EncDur},
	{Field: 7, Name: "func", Form: FormShape, Enc: EncU32,
		shape: at(unsafe.Offsetof(shape{}.fn), tU32)},
	{Field: 8, Name: "site", Form: FormShape, Enc: EncU32,
		shape: at(unsafe.Offsetof(shape{}.site), tU32)},
	{Field: 9, Name: "attr", Form: FormShape, Enc: EncU32,
		shape: at(unsafe.Offsetof(shape{}.attr), tU32)},
	{Field: 10, Name: "comm", Form: FormStatic, Enc: EncU32, Attr: AttrComm, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.comm), tU32),
		event: at(unsafe.Offsetof(Event{}.Comm), tU32)},
	{Field: 11, Name: "send_peer", Form: FormStatic, Enc: EncS32, Attr: AttrSend, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.sendPeer), tI32),
		event: at(unsafe.Offsetof(Event{}.SendPeer), tI32)},
	{Field: 12, Name: "send_tag", Form: FormStatic, Enc: EncS32, Attr: AttrSend, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.sendTag), tI32),
		event: at(unsafe.Offsetof(Event{}.SendTag), tI32)},
	{Field: 13, Name: "recv_peer", Form: FormStatic, Enc: EncS32, Attr: AttrRecv, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.recvPeer), tI32),
		event: at(unsafe.Offsetof(Event{}.RecvPeer), tI32)},
	{Field: 14, Name: "recv_tag", Form: FormStatic, Enc: EncS32, Attr: AttrRecv, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.recvTag), tI32),
		event: at(unsafe.Offsetof(Event{}.RecvTag), tI32)},
	{Field: 15, Name: "send_bytes", Form: FormStatic, Enc: EncU64, Attr: AttrSendBytes, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.sendBytes), tU64),
		event: at(unsafe.Offsetof(Event{}.SendBytes), tU64)},
	{Field: 16, Name: "recv_bytes", Form: FormStatic, Enc: EncU64, Attr: AttrRecvBytes, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.recvBytes), tU64),
		event: at(unsafe.Offsetof(Event{}.RecvBytes), tU64)},
	{Field: 17, Name: "root", Form: FormStatic, Enc: EncS32, Attr: AttrRoot, RecordSize: 4,
		shape: at(unsafe.Offsetof(shape{}.root), tI32),
		event: at(unsafe.Offsetof(Event{}.Root), tI32)},
	{Field: fNReqs, Name: "nreqs", Form: FormPerCall, Enc: EncU32, Attr: AttrReqs, Count: CountOne, RecordSize: 4},
	{Field: fReqs, Name: "reqs", Form: FormPerCall, Enc: EncReqDelta, Attr: AttrReqs, Count: CountReqs, RecordSize: 8},
	{Field: fStatusSource, Name: "status_source", Form: FormPerCall, Enc: EncS32, Attr: AttrStatus, Count: CountStatus, RecordSize: 4},
	{Field: fStatusTag, Name: "status_tag", Form: FormPerCall, Enc: EncS32, Attr: AttrStatus, Count: CountStatus, RecordSize: 4},
	{Field: 22, Name: "newcomm", Form: FormPerCall, Enc: EncU32, Attr: AttrNewComm, RecordSize: 4,
		event: at(unsafe.Offsetof(Event{}.NewComm), tU32)},
	{Field: 23, Name: "pcontrol_level", Form: FormPerCall, Enc: EncS32, Attr: AttrPcontrol, RecordSize: 4,
		event: at(unsafe.Offsetof(Event{}.PcLevel), tI32)},
	{Field: 24, Name: "pcontrol_arg", Form: FormPerCall, Enc: EncS64, Attr: AttrPcontrol, RecordSize: 8,
		event: at(unsafe.Offsetof(Event{}.PcArg), tI64)},
	{Field: fFlag, Name: "flag", Form: FormPerCall, Enc: EncU32, Attr: AttrFlag, RecordSize: 4,
		event: at(unsafe.Offsetof(Event{}.Flag), tBool)},
	{Field: 26, Name: "calls", Form: FormPerCall, Enc: EncU32, Attr: AttrCalls, RecordSize: 4,
		event: at(unsafe.Offsetof(Event{}.Calls), tU32)},
	{Field: 27, Name: "inner_gaps", Form: FormPerCall, Enc: EncU64, Attr: AttrInnerGaps, RecordSize: 8,
		event: at(unsafe.Offsetof(Event{}.InnerGaps), tI64)},
}

// attribute names an Attr bit as trace.proto (enum Attr) and dt_wrap.h
// (the A_* constants the C recording path sets) spell it.
type attribute struct {
	bit          Attr
	proto, cName string
}

// attributes lists every bit, in bit order.
var attributes = [...]attribute{
	{AttrComm, "ATTR_COMM", "A_COMM"},
	{AttrSend, "ATTR_SEND", "A_SEND"},
	{AttrRecv, "ATTR_RECV", "A_RECV"},
	{AttrSendBytes, "ATTR_SEND_BYTES", "A_SBYTES"},
	{AttrRecvBytes, "ATTR_RECV_BYTES", "A_RBYTES"},
	{AttrRoot, "ATTR_ROOT", "A_ROOT"},
	{AttrReqs, "ATTR_REQS", "A_REQS"},
	{AttrStatus, "ATTR_STATUS", "A_STATUS"},
	{AttrNewComm, "ATTR_NEWCOMM", "A_NEWCOMM"},
	{AttrPcontrol, "ATTR_PCONTROL", "A_PCONTROL"},
	{AttrFlag, "ATTR_FLAG", "A_FLAG"},
	{AttrCalls, "ATTR_CALLS", "A_CALLS"},
	{AttrInnerGaps, "ATTR_INNER_GAPS", "A_INNER"},
}

// rareAttrs are the attributes of the rare columns: every per-call
// attribute but AttrReqs and AttrStatus (a constant for the hot paths;
// TestColumnsMatchDescriptor checks it against the table).
const rareAttrs = attrKnown &^ staticAttrs &^ (AttrReqs | AttrStatus)

// Views of the table, built once.
var (
	// colByField is the index in columns of a field number (-1: none).
	colByField [len(columns) + 1]int8
	// staticCols are the FormStatic columns, shapeTabCols those of the
	// shape table (FormShape and FormStatic), formShapeCols the FormShape
	// ones, in field order.
	staticCols, shapeTabCols, formShapeCols []int
	// staticByBit lists the FormStatic columns of each attribute bit, in
	// field order, as indexes plus one (0: none; AttrSend and AttrRecv
	// have two: peer and tag).
	staticByBit [32][2]int8
	// lazyCols are the columns LazyBatch keeps packed: FormEvent, then
	// FormPerCall, in field order (LazyBatch's lc* indexes).
	lazyCols []int
	// rareCols are the per-call columns other than those of AttrReqs and
	// AttrStatus, which Next, Cursor and the record decoder read through
	// the table: index r of a batch's rare columns is rareCols[r].
	rareCols []int
	// lazyOf and rareOf give a column's index in lazyCols and rareCols
	// (-1: none).
	lazyOf, rareOf [len(columns)]int8
	// colFunc is the index of the func column (the shape table's length),
	// colNewComm that of newcomm (checked against the definitions).
	colFunc, colNewComm = colIndex("func"), colIndex("newcomm")
)

func colIndex(name string) int {
	for i := range columns {
		if columns[i].Name == name {
			return i
		}
	}
	panic("traceformat: no column " + name)
}

func init() {
	for i := range colByField {
		colByField[i] = -1
	}
	for i := range columns {
		c := &columns[i]
		colByField[c.Field] = int8(i)
		if t := c.shape.typ; t != tNone && t != tU32 && t != tI32 && t != tU64 {
			panic("traceformat: shape field of column " + c.Name + " neither 32-bit nor uint64 (field.setShape)")
		}
		switch c.Form {
		case FormShape:
			shapeTabCols = append(shapeTabCols, i)
			formShapeCols = append(formShapeCols, i)
		case FormStatic:
			staticCols = append(staticCols, i)
			shapeTabCols = append(shapeTabCols, i)
			t := &staticByBit[bits.TrailingZeros32(uint32(c.Attr))]
			j := 0
			for t[j] != 0 {
				j++ // past the end of the pair: a third column panics here
			}
			t[j] = int8(i + 1)
		case FormEvent:
			lazyCols = append(lazyCols, i)
		}
	}
	for i := range columns {
		if c := &columns[i]; c.Form == FormPerCall {
			lazyCols = append(lazyCols, i)
			if c.Attr&(AttrReqs|AttrStatus) == 0 {
				rareCols = append(rareCols, i)
			}
		}
	}
	for i := range columns {
		lazyOf[i], rareOf[i] = -1, -1
	}
	for k, i := range lazyCols {
		lazyOf[i] = int8(k)
	}
	for r, i := range rareCols {
		rareOf[i] = int8(r)
		c := &columns[i]
		t := &rareByBit[bits.TrailingZeros32(uint32(c.Attr))]
		j := 0
		for t[j].lc != 0 {
			j++ // past the end of the pair: a third column panics here
		}
		t[j] = rareCol{lc: lazyOf[i], enc: c.Enc, ev: c.event}
	}
}

// column returns the table entry of field num, or nil for a field the
// format does not define (which readers skip).
func column(num protowire.Number) *Column {
	if num <= 0 || int(num) >= len(colByField) || colByField[num] < 0 {
		return nil
	}
	return &columns[colByField[num]]
}

// Columns returns the table of the event encoding (do not modify it): for
// the record decoder of tracer/records, which reads the attribute values
// of the tracer's call records in this order and with these sizes.
func Columns() []Column { return columns[:] }

// RareColumns is the number of rare per-call columns (Builder.AppendRare).
func RareColumns() int { return len(rareCols) }

// RareColumn returns the table entry of rare column r.
func RareColumn(r int) *Column { return &columns[rareCols[r]] }

// SetEvent stores v, a value of a FormStatic or rare FormPerCall column
// (signed values sign-extended), in e's field of the column.
func (c *Column) SetEvent(e *Event, v uint64) { c.eventSet(e, v) }
