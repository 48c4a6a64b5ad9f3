package traceformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// eventsBoth reads data once with ReadBatch and a Cursor and once with
// ReadLazyBatch, and fails the test unless both give the same batches,
// events and error.
func eventsBoth(t testing.TB, data []byte) ([]Event, error) {
	t.Helper()
	type batch struct {
		thread uint32
		n      int
		evs    []Event
	}
	read := func(lazy bool) ([]batch, error) {
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{Name: "t.0.trc"})
		if err != nil {
			return nil, err
		}
		var out []batch
		var e Event
		keep := func(bt *batch) {
			e.Reqs = append([]uint64(nil), e.Reqs...)
			e.Status = append([]Status(nil), e.Status...)
			bt.evs = append(bt.evs, e)
		}
		for {
			var bt batch
			if lazy {
				b, err := r.ReadLazyBatch()
				if err != nil {
					return out, err
				}
				bt.thread, bt.n = b.Thread, b.Len()
				for b.Next(&e) {
					keep(&bt)
				}
			} else {
				b, err := r.ReadBatch()
				if err != nil {
					return out, err
				}
				bt.thread, bt.n = b.Thread(), b.Len()
				var c Cursor
				for c.Next(b, &e) {
					keep(&bt)
				}
			}
			out = append(out, bt)
		}
	}
	full, errFull := read(false)
	lazy, errLazy := read(true)
	if !reflect.DeepEqual(full, lazy) {
		for i := range min(len(full), len(lazy)) {
			f, l := full[i], lazy[i]
			if f.thread != l.thread || f.n != l.n {
				t.Fatalf("batch %d: lazy thread %d, %d events; full %d, %d", i, l.thread, l.n, f.thread, f.n)
			}
			for j := range min(len(f.evs), len(l.evs)) {
				if !reflect.DeepEqual(f.evs[j], l.evs[j]) {
					t.Fatalf("batch %d event %d:\n full %+v\n lazy %+v", i, j, f.evs[j], l.evs[j])
				}
			}
		}
		t.Fatalf("lazy read differs in length: %d batches, full %d", len(lazy), len(full))
	}
	if (errFull == nil) != (errLazy == nil) || errors.Is(errFull, io.EOF) != errors.Is(errLazy, io.EOF) {
		t.Fatalf("errors differ: full %v, lazy %v", errFull, errLazy)
	}
	var cf, cl *CorruptError
	if errors.As(errFull, &cf) != errors.As(errLazy, &cl) || cf != nil && (cf.Offset != cl.Offset || !errors.Is(cl, cf.Err)) {
		t.Fatalf("errors differ: full %v, lazy %v", errFull, errLazy)
	}
	var evs []Event
	for _, b := range lazy {
		evs = append(evs, b.evs...)
	}
	return evs, errLazy
}

func TestLazyMatchesBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"test/zstd-1000", writeTestTrace(t, WriterOptions{}, 1000)},
		{"test/zstd-2", writeTestTrace(t, WriterOptions{}, 2)},
		{"test/raw-1", writeTestTrace(t, WriterOptions{Raw: true}, 1)},
		{"halo", encodeHalo(t, haloEvents(3*batchEvents+17), WriterOptions{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := eventsBoth(t, tc.data)
			if err != io.EOF {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				t.Fatal("no events")
			}
		})
	}
}

// TestLazyRewind: a lazy batch can be walked again from the start.
func TestLazyRewind(t *testing.T) {
	r, err := NewReader(bytes.NewReader(writeTestTrace(t, WriterOptions{}, 1000)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.ReadLazyBatch()
	if err != nil {
		t.Fatal(err)
	}
	var first, second []Event
	var e Event
	for b.Next(&e) {
		first = append(first, e)
	}
	b.Rewind()
	for b.Next(&e) {
		second = append(second, e)
	}
	if len(first) != b.Len() || len(first) != len(testEvents()) {
		t.Fatalf("%d events, Len %d, want %d", len(first), b.Len(), len(testEvents()))
	}
	// Reqs and Status alias scratch: compare the rest.
	strip := func(evs []Event) []Event {
		out := append([]Event(nil), evs...)
		for i := range out {
			out[i].Reqs, out[i].Status = nil, nil
		}
		return out
	}
	if !reflect.DeepEqual(strip(first), strip(second)) {
		t.Fatal("second walk differs")
	}
}

// TestLazySplitColumns: proto3 lets a packed field come in pieces (and
// one value unpacked); a lazy batch joins them as the column decoder does.
func TestLazySplitColumns(t *testing.T) {
	var enc batchEncoder
	raw := enc.appendBatch(nil, builderOf(testEvents()).Batch())
	split := splitColumns(t, raw)
	var d Batch
	if err := decodeBatch(split, &d); err != nil {
		t.Fatal(err)
	}
	var lb LazyBatch
	if err := lb.parse(split); err != nil {
		t.Fatal(err)
	}
	var got, want []Event
	var e Event
	var c Cursor
	for c.Next(&d, &e) {
		e.Reqs, e.Status = append([]uint64(nil), e.Reqs...), append([]Status(nil), e.Status...)
		want = append(want, e)
	}
	for lb.Next(&e) {
		e.Reqs, e.Status = append([]uint64(nil), e.Reqs...), append([]Status(nil), e.Status...)
		got = append(got, e)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(normalize(got), normalize(testEvents())) {
		t.Fatalf("split columns:\n got %+v\nwant %+v", got, want)
	}
}

// splitColumns re-encodes a batch with every packed column of more than
// one value cut into a packed first half, and its second half as unpacked
// values.
func splitColumns(t *testing.T, raw []byte) []byte {
	var out []byte
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		raw = raw[n:]
		if typ != protowire.BytesType {
			v, n := protowire.ConsumeVarint(raw)
			raw = raw[n:]
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendVarint(out, v)
			continue
		}
		p, n := protowire.ConsumeBytes(raw)
		raw = raw[n:]
		var vals []uint64
		for len(p) > 0 {
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				t.Fatal("bad varint")
			}
			vals, p = append(vals, v), p[n:]
		}
		h := len(vals) / 2
		var packed []byte
		for _, v := range vals[:h] {
			packed = protowire.AppendVarint(packed, v)
		}
		if h > 0 {
			out = protowire.AppendTag(out, num, protowire.BytesType)
			out = protowire.AppendBytes(out, packed)
		}
		for _, v := range vals[h:] {
			out = protowire.AppendTag(out, num, protowire.VarintType)
			out = protowire.AppendVarint(out, v)
		}
	}
	return out
}

// TestLazyRefusesBadBatch: a batch whose last event lacks its status is
// refused before any of its events is handed out, at the batch's offset,
// and the batches before it are delivered whole.
func TestLazyRefusesBadBatch(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(testDefs())
	var b Builder
	for _, e := range testEvents() {
		b.Append(&e)
	}
	w.WriteBatch(&b)
	at := w.Offset()
	b.Status = b.Status[:len(b.Status)-1] // the last status column value is missing
	var enc batchEncoder
	w.writeFrame(KindEvents, enc.appendBatch(nil, b.Batch()))
	w.Close(nil)
	evs, err := eventsBoth(t, buf.Bytes())
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Offset != at || ce.Rank != 1 ||
		!strings.Contains(err.Error(), "t.0.trc") || !strings.Contains(err.Error(), "status") {
		t.Fatalf("got %v, want a CorruptError at %d naming the status column", err, at)
	}
	if len(evs) != len(testEvents()) {
		t.Fatalf("%d events before the damage, want %d", len(evs), len(testEvents()))
	}
}

// FuzzBatchDecoders feeds arbitrary bytes as an EventBatch to both
// decoders: they must accept and refuse the same batches, and the events
// of an accepted one must be the same.
func FuzzBatchDecoders(f *testing.F) {
	var enc batchEncoder
	raw := enc.appendBatch(nil, builderOf(testEvents()).Batch())
	f.Add(raw)
	f.Add(splitColumns(&testing.T{}, raw))
	if ref, err := proto.Marshal(pbFromEvents(testEvents())); err == nil {
		f.Add(ref)
	}
	var h Builder
	for _, e := range haloEvents(300) {
		h.Append(&e)
	}
	f.Add(enc.appendBatch(nil, h.Batch()))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Batch
		errFull := decodeBatch(data, &d)
		// The lazy decoder reads the message in place when it has room
		// after its end (as the reader's buffers have, holding stale
		// bytes), and a copy of its columns otherwise: both ways.
		slack := bytes.Repeat([]byte{0xff}, len(data)+zstdSlack)[:len(data)]
		copy(slack, data)
		for _, in := range [][]byte{data, slack} {
			var lb LazyBatch
			errLazy := lb.parse(in)
			if (errFull == nil) != (errLazy == nil) {
				t.Fatalf("decoders disagree: full %v, lazy %v", errFull, errLazy)
			}
			var e1, e2 Event
			var c Cursor
			if errFull != nil {
				if lb.Next(&e2) {
					t.Fatal("a refused lazy batch hands out an event")
				}
				continue
			}
			if lb.Len() != d.Len() || lb.Thread != d.Thread() || lb.BaseNs != d.BaseNs() {
				t.Fatalf("batch differs: lazy %d events thread %d base %d, full %d, %d, %d",
					lb.Len(), lb.Thread, lb.BaseNs, d.Len(), d.Thread(), d.BaseNs())
			}
			var evs []Event
			for i := 0; c.Next(&d, &e1); i++ {
				if !lb.Next(&e2) || !reflect.DeepEqual(normalize([]Event{e1}), normalize([]Event{e2})) {
					t.Fatalf("event %d differs:\n full %+v\n lazy %+v", i, e1, e2)
				}
				e1.Reqs, e1.Status = slices.Clone(e1.Reqs), slices.Clone(e1.Status)
				evs = append(evs, e1)
			}
			if lb.Next(&e2) {
				t.Fatal("lazy batch longer")
			}
			checkStatusAhead(t, &lb, evs)
		}
	})
}

// checkStatusAhead compares StatusAhead after each of the first events of
// lb with a search of evs, its events as the full decoder gives them, for
// the requests of the next events and one named by none.
func checkStatusAhead(t *testing.T, lb *LazyBatch, evs []Event) {
	t.Helper()
	lb.Rewind()
	var e Event
	for i := 0; i < 8 && lb.Next(&e); i++ {
		ids := []uint64{1 << 60}
		for _, later := range evs[i+1 : min(len(evs), i+4)] {
			ids = append(ids, later.Reqs...)
		}
		for _, id := range ids {
			search := func(n int) (want Status, a Ahead) {
				for _, later := range evs[i+1 : min(len(evs), i+1+n)] {
					if k := slices.Index(later.Reqs, id); k >= 0 {
						if k < len(later.Status) {
							return later.Status[k], AheadFound
						}
						return Status{}, AheadNamed
					}
				}
				return Status{}, AheadNotFound
			}
			want, a := search(maxAhead)
			if got, gotOK := lb.StatusAhead(id, ^uint32(0)); got != want || gotOK != (a == AheadFound) {
				t.Fatalf("after event %d, request %d: StatusAhead %+v %v, want %+v %v", i, id, got, gotOK, want, a)
			}
			want, a = search(len(evs))
			if got, gotA := lb.FindStatus(id, ^uint32(0)); got != want || gotA != a {
				t.Fatalf("after event %d, request %d: FindStatus %+v %v, want %+v %v", i, id, got, gotA, want, a)
			}
		}
	}
}

// TestLazyShape: Shape names the shape of the event last handed out, and
// events of one shape agree on every field the shape stores.
func TestLazyShape(t *testing.T) {
	data := encodeHalo(t, haloEvents(3*batchEvents+17), WriterOptions{})
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{Name: "t.0.trc"})
	if err != nil {
		t.Fatal(err)
	}
	static := func(e Event) Event {
		return Event{Func: e.Func, Site: e.Site, Attr: e.Attr, Comm: e.Comm, SendPeer: e.SendPeer, SendTag: e.SendTag,
			RecvPeer: e.RecvPeer, RecvTag: e.RecvTag, SendBytes: e.SendBytes, RecvBytes: e.RecvBytes, Root: e.Root}
	}
	batches := 0
	for {
		b, err := r.ReadLazyBatch()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		batches++
		if b.Shape() != -1 {
			t.Fatalf("Shape before Next: %d, want -1", b.Shape())
		}
		seen := make([]*Event, b.NumShapes())
		used := 0
		var e Event
		for b.Next(&e) {
			s := b.Shape()
			if s < 0 || s >= b.NumShapes() {
				t.Fatalf("Shape %d outside [0, %d)", s, b.NumShapes())
			}
			st := static(e)
			if seen[s] == nil {
				seen[s] = &st
				used++
			} else if !reflect.DeepEqual(*seen[s], st) {
				t.Fatalf("shape %d: event %+v, earlier %+v", s, st, *seen[s])
			}
		}
		if used != b.NumShapes() || used < 2 {
			t.Fatalf("%d of %d shapes used", used, b.NumShapes())
		}
		b.Rewind()
		if b.Shape() != -1 {
			t.Fatalf("Shape after Rewind: %d, want -1", b.Shape())
		}
		// SetShapeSite renames one shape's site from then on, no other.
		b.SetShapeSite(1, 0xfffffff0)
		b.SetShapeSite(-1, 1)
		b.SetShapeSite(b.NumShapes(), 1)
		for b.Next(&e) {
			if want := seen[b.Shape()].Site; b.Shape() == 1 && e.Site != 0xfffffff0 || b.Shape() != 1 && e.Site != want {
				t.Fatalf("shape %d: site %#x after SetShapeSite(1, 0xfffffff0)", b.Shape(), e.Site)
			}
		}
	}
	if batches < 2 {
		t.Fatalf("%d batches", batches)
	}
}

// TestVarint8 compares varint8 with protowire for every length it takes
// (1 to 8 bytes), the bytes after the varint set to anything.
func TestVarint8(t *testing.T) {
	vals := []uint64{0, 1, 127, 128, 300, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<35 + 5,
		1<<42 - 1, 1 << 42, 1<<49 + 12345, 1<<56 - 1}
	for k := range 200 {
		vals = append(vals, uint64(k)*0x9e3779b97f4a7c15>>(8+k%49))
	}
	for _, v := range vals {
		for _, after := range []byte{0x00, 0x80, 0xff, 0x7f} {
			b := protowire.AppendVarint(nil, v)
			n := len(b)
			for len(b) < 8 {
				b = append(b, after)
			}
			got, k := varint8(binary.LittleEndian.Uint64(b))
			if got != v || k != n {
				t.Fatalf("varint8(% x) = %d, %d; want %d, %d", b, got, k, v, n)
			}
		}
	}
}

// TestLazyLongVarints: a batch with varints of 9 or 10 bytes in the columns
// Next reads at every event (request id deltas, gaps and durations of 2^56
// or more: the format allows them, tracers do not write them) is read by
// nextSlow, with the same events, shapes and rewinding as ReadBatch.
func TestLazyLongVarints(t *testing.T) {
	evs := []Event{
		{Func: 0, Entry: 1000, Exit: 2000},
		{Func: 1, Site: 1, Entry: 2500, Exit: 2600, Attr: AttrComm | AttrSend | AttrReqs, SendPeer: 1, Reqs: []uint64{1 << 62}},
		{Func: 1, Site: 1, Entry: 2700, Exit: 2800, Attr: AttrComm | AttrSend | AttrReqs, SendPeer: 1, Reqs: []uint64{3}},
		{Func: 2, Site: 1, Entry: 3000, Exit: 3000 + 1<<60, Attr: AttrReqs | AttrStatus, Reqs: []uint64{1 << 62, 3},
			Status: []Status{{1, 2}, {NoStatus, NoStatus}}},
		{Func: 3, Site: 0, Attr: AttrComm, Entry: 1<<61 + 1<<60 + 5000, Exit: 1<<61 + 1<<60 + 6000},
	}
	for _, long := range []bool{false, true} {
		in := evs
		if !long {
			in = testEvents()
		}
		data, _ := oneBatchTrace(t, in)
		got, err := eventsBoth(t, data)
		if err != io.EOF {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(in)) {
			t.Fatalf("long %v: read\n%+v\nwant\n%+v", long, got, in)
		}
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		lb, err := r.ReadLazyBatch()
		if err != nil {
			t.Fatal(err)
		}
		if (lb.slow != nil) != long || lb.Len() != len(in) {
			t.Fatalf("long %v: slow path %v, %d events", long, lb.slow != nil, lb.Len())
		}
		var e Event
		var shapes []int
		for lb.Next(&e) {
			shapes = append(shapes, lb.Shape())
		}
		lb.Rewind()
		for i := 0; lb.Next(&e); i++ {
			if lb.Shape() != shapes[i] || e.Entry != in[i].Entry {
				t.Fatalf("long %v: after Rewind event %d: shape %d entry %d, want %d, %d", long, i, lb.Shape(), e.Entry, shapes[i], in[i].Entry)
			}
		}
		if long && (shapes[1] != shapes[2] || shapes[0] == shapes[1]) {
			t.Fatalf("shapes %v", shapes)
		}
	}
}

// TestCountVarints compares countVarints, which looks at 64 bytes at a
// time, with a byte-by-byte count, on columns of varints of every length
// (those longer than 8 bytes at every offset against the words), whole
// and cut; some columns long and of small values, as real ones, with a
// rare long one.
func TestCountVarints(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 3000 {
		var b []byte
		long := false
		n, small := rng.IntN(40), trial%4 == 1
		if small {
			n = rng.IntN(5000)
		}
		for range n {
			bitsLen := rng.IntN(64) + 1
			if trial%3 != 0 {
				bitsLen = min(bitsLen, 56) // most columns without long varints
			}
			if small && rng.IntN(1000) != 0 {
				bitsLen = rng.IntN(14) + 1
			}
			v := rng.Uint64() >> (64 - bitsLen)
			b = protowire.AppendVarint(b, v)
			long = long || v >= 1<<56
		}
		n, l := countVarints(b, false)
		if want := countExact(b, false); n != want || n >= 0 && l != long {
			t.Fatalf("countVarints(% x) = %d, %v; want %d, %v", b, n, l, want, long)
		}
		if len(b) > 0 && b[len(b)-1] < 0x80 {
			cut := b[:len(b)-1]
			if len(cut) > 0 && cut[len(cut)-1] >= 0x80 {
				if n, _ := countVarints(cut, false); n != -1 {
					t.Fatalf("countVarints(% x) = %d for a cut column", cut, n)
				}
			}
		}
	}
}

// TestCountVarintsEdges compares countVarints with naiveVarints, a
// decoder of its own, on every column of 0 to 300 bytes made of one-byte
// varints or of 7-byte ones (runs of 6 continuation bytes, as request id
// deltas) at each phase; on the one-byte column and the 7-byte ones at two
// phases with one run of 1 to 11 continuation bytes at every offset (in
// columns above 136 bytes, at those near a 64-byte block's edge or the
// end), ended by 1 or 2 (as a 10-byte varint's last byte: 2 overflows; 1
// is a value of 2^63 or more, refused with dur) or cut; and on random
// columns whose bytes continue with a probability from 0.05 to 0.95.
func TestCountVarintsEdges(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		for _, dur := range []bool{false, true} {
			n, l := countVarints(b, dur)
			wn, wl := naiveVarints(b, dur)
			if n != wn || n >= 0 && l != wl {
				t.Fatalf("countVarints(% x, %v) = %d, %v; want %d, %v", b, dur, n, l, wn, wl)
			}
		}
	}
	seven := []byte{0xff, 0x81, 0x80, 0xc0, 0xfe, 0x80, 0x05}
	b := make([]byte, 0, 320)
	for size := 0; size <= 300; size++ {
		for phase := range 8 { // 7: one-byte varints; else 7-byte ones from this phase
			b = b[:size]
			for i := range b {
				if phase == 7 {
					b[i] = byte(i % 0x80)
				} else {
					b[i] = seven[(i+phase)%7]
				}
			}
			if size > 0 && b[size-1] < 0x80 {
				check(b)
			}
			if phase%3 != 1 {
				continue // the runs in the columns of phases 1 and 4 only
			}
			c := make([]byte, size)
			for run := 1; run <= 11; run++ {
				for at := 0; at+run <= size; at++ {
					if size > 136 && (at+12)%64 > 24 && size-at > 24 {
						continue // far from a block's edge and the end
					}
					copy(c, b)
					for i := at; i < at+run; i++ {
						c[i] = 0x80 | byte(i)
					}
					for _, end := range []byte{0x01, 0x02} {
						if at+run < size {
							c[at+run] = end
						}
						check(c)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 20000 {
		size := rng.IntN(301)
		p := []uint{1, 10, 16, 19}[trial%4] // in twentieths
		b = b[:size]
		for i := range b {
			b[i] = byte(rng.Uint32() & 0x7f)
			if uint(rng.IntN(20)) < p {
				b[i] |= 0x80
			}
		}
		check(b)
	}
}

// naiveVarints decodes the column b varint by varint, byte by byte: their
// number, or -1 if b is not a sequence of valid varints (or, with dur,
// holds one of 2^63 or more), and whether one is longer than 8 bytes.
func naiveVarints(b []byte, dur bool) (int, bool) {
	n, long := 0, false
	for i := 0; i < len(b); n++ {
		var v uint64
		j := i
		for shift := 0; ; shift += 7 {
			if j == len(b) || shift == 63 && b[j] > 1 {
				return -1, false
			}
			x := b[j]
			v |= uint64(x&0x7f) << shift
			j++
			if x < 0x80 {
				break
			}
		}
		if dur && v >= 1<<63 {
			return -1, false
		}
		long = long || j-i > 8
		i = j
	}
	return n, long
}

// TestLazyWideRequestCount: a request count of 2^32 or more (which no
// writer makes: the column holds uint32) is read modulo 2^32 by both
// decoders, so that they agree on the events.
func TestLazyWideRequestCount(t *testing.T) {
	var enc batchEncoder
	raw := enc.appendBatch(nil, builderOf(testEvents()).Batch())
	out := withColumn(t, raw, fNReqs, func(payload []byte) (col []byte) {
		varints(payload, func(v uint64) { col = protowire.AppendVarint(col, v|1<<32) })
		return col
	})
	if n := lazyAgainstFull(t, out, nil); n != len(testEvents()) {
		t.Fatalf("%d events", n)
	}
}

// withColumn returns the encoded batch raw with the payload of its field
// num replaced by what rewrite makes of it: a column no writer makes.
func withColumn(t *testing.T, raw []byte, num protowire.Number, rewrite func(payload []byte) []byte) []byte {
	t.Helper()
	var out []byte
	for data := raw; len(data) > 0; {
		n, payload, rest, _, err := nextBatchField(data)
		if err != nil {
			t.Fatal(err)
		}
		field := data[:len(data)-len(rest)]
		data = rest
		if n != num {
			out = append(out, field...)
			continue
		}
		out = protowire.AppendTag(out, num, protowire.BytesType)
		out = protowire.AppendBytes(out, rewrite(payload))
	}
	return out
}

// lazyAgainstFull walks the batch out with LazyBatch and with the batch
// decoder, at the end of its buffer and with zstd's slack after it, and
// fails at the first event they disagree on; check, when given, sees
// each lazy event too. It returns the number of events.
func lazyAgainstFull(t *testing.T, out []byte, check func(i int, e Event)) int {
	t.Helper()
	var d Batch
	if err := decodeBatch(out, &d); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range [][]byte{out, append(out, make([]byte, zstdSlack)...)[:len(out)]} {
		var lb LazyBatch
		if err := lb.parse(in); err != nil {
			t.Fatal(err)
		}
		var c Cursor
		var e1, e2 Event
		n = 0
		for c.Next(&d, &e1) {
			if !lb.Next(&e2) || !reflect.DeepEqual(normalize([]Event{e1}), normalize([]Event{e2})) {
				t.Fatalf("event %d differs:\n full %+v\n lazy %+v", n, e1, e2)
			}
			if check != nil {
				check(n, e2)
			}
			n++
		}
		if lb.Next(&e2) {
			t.Fatal("more lazy events than full ones")
		}
	}
	return n
}

// TestSumBytes compares sumBytes, eight bytes at a time, with a loop over
// the bytes: the sum exactly, the bound at least the largest and at most
// twice it.
func TestSumBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		b := make([]byte, rng.IntN(5000))
		hi := rng.IntN(128)
		for i := range b {
			b[i] = byte(rng.IntN(hi + 1))
		}
		want, most := 0, 0
		for _, x := range b {
			want += int(x)
			most = max(most, int(x))
		}
		s, m := sumBytes(b)
		if s != want || m < most || m > 2*most {
			t.Fatalf("trial %d: sumBytes of %d bytes = %d, %d; want %d, largest %d", trial, len(b), s, m, want, most)
		}
	}
}

// TestLazyFlagAlone: an event whose only rare attribute is AttrFlag, which
// Next reads inline, gets the flag the table-driven decoders give it, for
// flag values no writer makes too (more than one byte, 2^32: read modulo
// 2^32 as the column's uint32), and the events with other rare attributes
// around it keep theirs.
func TestLazyFlagAlone(t *testing.T) {
	flags := []uint64{0, 1, 2, 200, 1 << 32, 1<<32 | 1, 1}
	want := []bool{false, true, true, true, false, true, true}
	var evs []Event
	for i := range flags {
		e := Event{Func: 3, Site: 2, Attr: AttrFlag, Entry: int64(100 * i), Exit: int64(100*i + 10)}
		switch i {
		case 2:
			e.Attr |= AttrCalls
			e.Calls = 5
		case 5:
			e.Attr |= AttrNewComm | AttrReqs
			e.NewComm, e.Reqs = 1, []uint64{7}
		}
		evs = append(evs, e)
	}
	var enc batchEncoder
	raw := enc.appendBatch(nil, builderOf(evs).Batch())
	out := withColumn(t, raw, fFlag, func([]byte) (col []byte) {
		for _, v := range flags {
			col = protowire.AppendVarint(col, v)
		}
		return col
	})
	n := lazyAgainstFull(t, out, func(i int, e Event) {
		if e.Flag != want[i] || e.Calls != evs[i].Calls || e.NewComm != evs[i].NewComm {
			t.Errorf("event %d: flag %v calls %d newcomm %d, want %v %d %d", i, e.Flag, e.Calls, e.NewComm, want[i], evs[i].Calls, evs[i].NewComm)
		}
	})
	if n != len(flags) {
		t.Fatalf("%d events, want %d", n, len(flags))
	}
}

// TestLazyManyShapes: batches of 128 shapes or more, whose shape indexes
// take two bytes (the check's shapeIndexes and its walk over them), with
// events of request ids with and without statuses, statuses alone and
// neither, request counts of one byte and of more (the walk's other
// path); and a shape index past the table, refused by both decoders.
func TestLazyManyShapes(t *testing.T) {
	for _, nshapes := range []int{127, 128, 300, 20000} {
		for _, wide := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(nshapes), 7))
			var evs []Event
			tm := int64(1000)
			for i := range 2 * nshapes {
				s := rng.IntN(nshapes)
				if i < nshapes {
					s = i // every shape at least once
				} else if wide && i == 2*nshapes-1 {
					s = 0 // the column ends with a one-byte index
				}
				e := Event{Func: uint32(s % 5), Site: uint32(s), Entry: tm, Exit: tm + 5}
				tm += 10
				switch s % 4 {
				case 0:
					e.Attr = AttrReqs | AttrStatus
					n := 1 + rng.IntN(3)
					if wide && s%8 == 0 {
						n = 130 // a request count of two bytes
					}
					for k := range n {
						e.Reqs = append(e.Reqs, uint64(100+k))
						e.Status = append(e.Status, Status{Source: int32(k), Tag: 3})
					}
				case 1:
					e.Attr = AttrReqs
					e.Reqs = []uint64{uint64(rng.IntN(1 << 40))}
				case 2:
					e.Attr = AttrStatus
					e.Status = []Status{{Source: 1, Tag: 2}}
				}
				evs = append(evs, e)
			}
			var enc batchEncoder
			raw := enc.appendBatch(nil, builderOf(evs).Batch())
			if n := lazyAgainstFull(t, raw, nil); n != len(evs) {
				t.Fatalf("%d shapes: %d events, want %d", nshapes, n, len(evs))
			}
			// The last event's shape index replaced by the number of shapes.
			bad := withColumn(t, raw, fShape, func(payload []byte) (col []byte) {
				var vals []uint64
				varints(payload, func(v uint64) { vals = append(vals, v) })
				vals[len(vals)-1] = uint64(nshapes)
				for _, v := range vals {
					col = protowire.AppendVarint(col, v)
				}
				return col
			})
			var d Batch
			var lb LazyBatch
			errFull, errLazy := decodeBatch(bad, &d), lb.parse(bad)
			if errFull == nil || errLazy == nil || errFull.Error() != errLazy.Error() {
				t.Fatalf("%d shapes, an index past them: full %v, lazy %v", nshapes, errFull, errLazy)
			}
		}
	}
}

// TestLazyFoldedPolls: the attributes of a folded run of polls (flag,
// calls, inner gaps), in every combination and with values of one byte
// and more, read by rare's path for them as both decoders read them; and
// with another rare attribute, by the table's walk.
func TestLazyFoldedPolls(t *testing.T) {
	vals := []uint64{0, 1, 127, 128, 300, 1<<32 + 3, 1 << 40}
	var evs []Event
	for i := range 64 {
		e := Event{Func: 3, Site: uint32(i % 8), Entry: int64(100 * i), Exit: int64(100*i + 10)}
		if i&1 != 0 {
			e.Attr |= AttrFlag
			e.Flag = i&8 != 0
		}
		if i&2 != 0 {
			e.Attr |= AttrCalls
			e.Calls = uint32(vals[i%len(vals)]) | 2
		}
		if i&4 != 0 {
			e.Attr |= AttrInnerGaps
			e.InnerGaps = int64(vals[(i/2)%len(vals)])
		}
		if i >= 56 {
			e.Attr |= AttrNewComm
			e.NewComm = 9
		}
		evs = append(evs, e)
	}
	var enc batchEncoder
	raw := enc.appendBatch(nil, builderOf(evs).Batch())
	n := lazyAgainstFull(t, raw, func(i int, e Event) {
		w := evs[i]
		if e.Flag != w.Flag || e.Calls != w.Calls || e.InnerGaps != w.InnerGaps || e.NewComm != w.NewComm {
			t.Errorf("event %d: flag %v calls %d inner gaps %d newcomm %d, want %v %d %d %d",
				i, e.Flag, e.Calls, e.InnerGaps, e.NewComm, w.Flag, w.Calls, w.InnerGaps, w.NewComm)
		}
	})
	if n != len(evs) {
		t.Fatalf("%d events, want %d", n, len(evs))
	}
}

// TestLazyThreadInShapes: the lazy decoder hands out each batch's thread
// in every event (it is stored in the batch's shapes, once per batch),
// with batches of several threads in turn reusing the reader's shape
// table, as the full decoder does.
func TestLazyThreadInShapes(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(testDefs())
	threads := []uint32{5, 0, 7, 7, 0, 1 << 31}
	for _, th := range threads {
		var b Builder
		b.Thread = th
		for _, e := range testEvents() {
			e.Thread = th
			b.Append(&e)
		}
		w.WriteBatch(&b)
	}
	w.Close(nil)
	evs, err := eventsBoth(t, buf.Bytes())
	if err != io.EOF {
		t.Fatal(err)
	}
	n := len(testEvents())
	if len(evs) != n*len(threads) {
		t.Fatalf("%d events, want %d", len(evs), n*len(threads))
	}
	for i, e := range evs {
		if want := threads[i/n]; e.Thread != want {
			t.Fatalf("event %d: thread %d, want %d", i, e.Thread, want)
		}
	}
}
