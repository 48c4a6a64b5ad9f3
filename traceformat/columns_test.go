package traceformat

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestColumnsMatchDescriptor checks the column table against trace.proto,
// through the generated descriptor: every EventBatch field is in the
// table with its number, name and type, and every Attr enum value is an
// attribute bit of the same name.
func TestColumnsMatchDescriptor(t *testing.T) {
	md := tracepb.File_trace_proto.Messages().ByName("EventBatch")
	fields := md.Fields()
	if fields.Len() != len(columns) {
		t.Errorf("EventBatch has %d fields, the table %d columns", fields.Len(), len(columns))
	}
	want := map[Enc]protoreflect.Kind{EncU32: protoreflect.Uint32Kind, EncU64: protoreflect.Uint64Kind,
		EncI64: protoreflect.Int64Kind, EncS32: protoreflect.Sint32Kind, EncS64: protoreflect.Sint64Kind,
		EncDur: protoreflect.Uint64Kind, EncReqDelta: protoreflect.Sint64Kind}
	for i := range columns {
		c := &columns[i]
		fd := fields.ByNumber(c.Field)
		if fd == nil {
			t.Errorf("column %s: no field %d in EventBatch", c.Name, c.Field)
			continue
		}
		if string(fd.Name()) != c.Name || fd.Kind() != want[c.Enc] {
			t.Errorf("column %d: table says %s of %v, trace.proto %s of %v", c.Field, c.Name, want[c.Enc], fd.Name(), fd.Kind())
		}
		if rep := c.Form != FormScalar; fd.IsList() != rep || rep && !fd.IsPacked() {
			t.Errorf("column %s: repeated %v, packed %v in trace.proto; the table's form is %d", c.Name, fd.IsList(), fd.IsPacked(), c.Form)
		}
		if (c.Form == FormStatic || c.Form == FormPerCall) != (c.Attr != 0) || c.Attr&(c.Attr-1) != 0 {
			t.Errorf("column %s: attribute %#x for form %d", c.Name, c.Attr, c.Form)
		}
		if i > 0 && c.Field <= columns[i-1].Field {
			t.Errorf("column %s: not in field order", c.Name)
		}
		// The call records and the shared checks rely on the order of the
		// columns: attributes in bit order, nreqs before reqs and statuses.
		if i > 0 && c.Attr != 0 && columns[i-1].Attr > c.Attr {
			t.Errorf("column %s: attribute bits out of order", c.Name)
		}
	}
	ev := tracepb.File_trace_proto.Enums().ByName("Attr").Values()
	if ev.Len() != len(attributes)+1 {
		t.Errorf("enum Attr has %d values, the table %d attributes (and ATTR_NONE)", ev.Len(), len(attributes))
	}
	var all, static Attr
	for i, a := range attributes {
		v := ev.ByName(protoreflect.Name(a.proto))
		if v == nil || Attr(v.Number()) != a.bit || a.bit != 1<<i {
			t.Errorf("attribute %s: bit %#x, trace.proto %v", a.proto, a.bit, v)
		}
		all |= a.bit
	}
	for _, k := range staticCols {
		static |= columns[k].Attr
	}
	var rare Attr
	for _, k := range rareCols {
		rare |= columns[k].Attr
	}
	if all != attrKnown || static != staticAttrs || rare != rareAttrs {
		t.Errorf("attrKnown %#x, staticAttrs %#x, rareAttrs %#x; the table says %#x, %#x, %#x",
			attrKnown, staticAttrs, rareAttrs, all, static, rare)
	}
}

// TestColumnsMatchCHeader checks the table against the C recording path,
// tracer/rt/dt_wrap.h: the A_* attribute bits, and for each attribute
// the header records, the bytes it appends per value (dt_put32, dt_put64
// after setting the bit) against the table's record sizes.
func TestColumnsMatchCHeader(t *testing.T) {
	src, err := os.ReadFile("../tracer/rt/dt_wrap.h")
	if err != nil {
		t.Fatal(err)
	}
	h := string(src)
	bitsC := map[string]int{}
	enum := regexp.MustCompile(`enum \{\s*(A_[^}]*)\}`).FindStringSubmatch(h)
	if enum == nil {
		t.Fatal("dt_wrap.h: no enum of A_* bits")
	}
	for _, m := range regexp.MustCompile(`(A_\w+)\s*=\s*(\d+)`).FindAllStringSubmatch(enum[1], -1) {
		v, _ := strconv.Atoi(m[2])
		bitsC[m[1]] = v
	}
	if len(bitsC) != len(attributes) {
		t.Errorf("dt_wrap.h defines %d attribute bits, the table %d", len(bitsC), len(attributes))
	}
	recorded := 0
	for _, a := range attributes {
		if v, ok := bitsC[a.cName]; !ok || Attr(v) != a.bit {
			t.Errorf("%s: dt_wrap.h has %s = %d, the table %#x", a.proto, a.cName, v, a.bit)
		}
		// The bytes of one value of the attribute: its columns taken once
		// (CountReqs columns, the request ids, are written by dt.c).
		want := 0
		for i := range columns {
			if c := &columns[i]; c.Attr == a.bit && c.Count != CountReqs {
				want += c.RecordSize
			}
		}
		for _, part := range strings.Split(h, "H->attr |= "+a.cName+";")[1:] {
			stmt := part[:strings.IndexAny(part, "}")]
			got := 4*strings.Count(stmt, "dt_put32(") + 8*strings.Count(stmt, "dt_put64(")
			if got != want {
				t.Errorf("%s: dt_wrap.h records %d bytes, the table %d", a.cName, got, want)
			}
			recorded++
		}
	}
	if recorded < 8 {
		t.Errorf("found only %d places in dt_wrap.h that record an attribute", recorded)
	}
	if !strings.Contains(h, "uint16_t func, attr;") || !strings.Contains(h, "uint64_t t0;") || !strings.Contains(h, "uint32_t dur;") {
		t.Error("dt_wrap.h: record header changed")
	}
}

// TestColumnFields checks that each column's field in shape and Event is
// a field of the struct, of the column's type, and that the columns with
// such fields are those of the forms that need them.
func TestColumnFields(t *testing.T) {
	kinds := map[fieldType]reflect.Kind{tU32: reflect.Uint32, tI32: reflect.Int32, tU64: reflect.Uint64,
		tI64: reflect.Int64, tBool: reflect.Bool}
	check := func(c *Column, f field, typ reflect.Type, want bool) {
		if (f.typ != tNone) != want {
			t.Errorf("column %s: %s field %v, want one: %v", c.Name, typ.Name(), f, want)
			return
		}
		if !want {
			return
		}
		for i := range typ.NumField() {
			if sf := typ.Field(i); sf.Offset == f.off {
				if sf.Type.Kind() != kinds[f.typ] {
					t.Errorf("column %s: %s.%s is %v, the table says %v", c.Name, typ.Name(), sf.Name, sf.Type.Kind(), kinds[f.typ])
				}
				return
			}
		}
		t.Errorf("column %s: no field of %s at offset %d", c.Name, typ.Name(), f.off)
	}
	for i := range columns {
		c := &columns[i]
		check(c, c.shape, reflect.TypeOf(shape{}), c.Form == FormShape || c.Form == FormStatic)
		check(c, c.event, reflect.TypeOf(Event{}), c.Form == FormStatic || rareOf[i] >= 0)
	}
}

// TestHotPathsMatchColumns checks the hand-written hot paths against the
// table: LazyBatch's column indexes, clearRare, the shape's comparison and
// the copying of every column between Event, shape and back through both
// decoders.
func TestHotPathsMatchColumns(t *testing.T) {
	for lc, f := range map[int]int{lcShape: fShape, lcGap: fGap, lcDur: fDur, lcNReqs: fNReqs, lcReqs: fReqs,
		lcStSrc: fStatusSource, lcStTag: fStatusTag, lcFlag: fFlag, lcCalls: 26, lcInnerGaps: 27} {
		if int(lazyOf[colByField[f]]) != lc {
			t.Errorf("LazyBatch column %d is field %d in the table's order", lc, f)
		}
	}
	if numHot != len(lazyCols)-len(rareCols) {
		t.Errorf("numHot %d, the table has %d non-rare lazy columns", numHot, len(lazyCols)-len(rareCols))
	}
	var e Event
	for _, k := range rareCols {
		columns[k].eventSet(&e, 1)
	}
	clearRare(&e)
	for _, k := range rareCols {
		if c := &columns[k]; c.eventGet(&e) != 0 {
			t.Errorf("clearRare leaves %s", c.Name)
		}
	}
	// One event per column with an Event field, all other values equal,
	// then all columns at once: each must make a shape of its own and come
	// back through both decoders.
	base := Event{Func: 3, Site: 2, Attr: attrKnown, Reqs: []uint64{5}, Status: []Status{{1, 2}}}
	var evs []Event
	for i := range columns {
		c := &columns[i]
		if c.event.typ == tNone {
			continue
		}
		e := base
		for j := range columns {
			if d := &columns[j]; d.event.typ != tNone {
				d.eventSet(&e, 1)
			}
		}
		c.eventSet(&e, uint64(i+7))
		evs = append(evs, e)
	}
	var b Builder
	t0 := int64(100)
	for i := range evs {
		evs[i].Entry, evs[i].Exit = t0, t0+10
		t0 += 20
		b.Append(&evs[i])
	}
	if len(b.shapes) != len(staticCols)+1 {
		t.Errorf("%d shapes, want one per static column and one more", len(b.shapes))
	}
	var enc batchEncoder
	raw := enc.appendBatch(nil, b.Batch())
	var d Batch
	var lb LazyBatch
	if err := decodeBatch(raw, &d); err != nil {
		t.Fatal(err)
	}
	if err := lb.parse(append(raw, make([]byte, rawSlack)...)[:len(raw)]); err != nil {
		t.Fatal(err)
	}
	var c Cursor
	for i := range evs {
		var e1, e2 Event
		if !c.Next(&d, &e1) || !lb.Next(&e2) {
			t.Fatal("batch too short")
		}
		for k := range columns {
			if col := &columns[k]; col.event.typ != tNone {
				want := col.eventGet(&evs[i])
				if g1, g2 := col.eventGet(&e1), col.eventGet(&e2); g1 != want || g2 != want {
					t.Errorf("event %d: %s is %d (Cursor), %d (LazyBatch), want %d", i, col.Name, g1, g2, want)
				}
			}
		}
	}
	if !bytes.Equal(raw, enc.appendBatch(nil, &d)) {
		t.Error("decoded batch encodes differently")
	}
}
