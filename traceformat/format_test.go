package traceformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func testHeader() *tracepb.Header {
	return &tracepb.Header{
		Rank: 1, WorldSize: 4, Hostname: "node7", Pid: 4242, RunId: []byte("0123456789abcdef"),
		Program: "/home/u/app", Args: []string{"/home/u/app", "-n", "10"},
		StartUnixNs: 1_700_000_000_000_000_000, StartLocalNs: 123456789,
		Clock: &tracepb.Clock{Source: tracepb.Clock_TSC, TscHz: 2.9e9,
			Calibration: []*tracepb.CalibrationPoint{{Tsc: 1, MonotonicRawNs: 2}, {Tsc: 3e9, MonotonicRawNs: 1e9}}},
		TracerVersion:     "0.1.0",
		Params:            &tracepb.TracerParams{UserStackSize: 4, MaxTraceSizeMb: 500, TraceBufSize: 1 << 20, Other: map[string]string{"x": "y"}},
		MpiImplementation: "Open MPI", MpiLibraryVersion: "Open MPI v4.1.4", ThreadLevel: 3,
	}
}

func testDefs() *tracepb.Definitions {
	return &tracepb.Definitions{
		Functions: []*tracepb.Function{
			{Id: 0, Name: "MPI_Init", Class: tracepb.Function_SYSTEM},
			{Id: 1, Name: "MPI_Isend", Class: tracepb.Function_POINT_TO_POINT, Nonblocking: true},
			{Id: 2, Name: "MPI_Waitall", Class: tracepb.Function_POINT_TO_POINT},
			{Id: 3, Name: "MPI_Allreduce", Class: tracepb.Function_COLLECTIVE, Collective: tracepb.Function_ALL_TO_ALL},
		},
		CallSites: []*tracepb.CallSite{{Id: 0, Pcs: []uint64{0x401000, 0x402000}}, {Id: 1}},
		Modules:   []*tracepb.Module{{Id: 0, Path: "/home/u/app", LoadBias: 0x555500000000, Start: 1, End: 2, BuildId: []byte{1, 2}}},
		Communicators: []*tracepb.Communicator{
			{Local: 0, Id: 0, Members: []uint32{0, 1, 2, 3}},
			{Local: 1, Id: SelfCommID(1), Members: []uint32{1}},
			{Local: 2, Id: 77, Members: []uint32{1, 3}, Parent: 0, CreatedBy: 0},
		},
	}
}

// builderOf is a batch of evs, appended one by one.
func builderOf(evs []Event) *Builder {
	var b Builder
	for i := range evs {
		b.Append(&evs[i])
	}
	return &b
}

// oneBatchTrace is a trace (testHeader, testDefs) holding evs in one batch,
// and that batch.
func oneBatchTrace(t testing.TB, evs []Event) ([]byte, *Builder) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(testDefs())
	b := builderOf(evs)
	if err := w.WriteBatch(b); err != nil {
		t.Fatal(err)
	}
	w.Close(nil)
	return buf.Bytes(), b
}

// testEvents exercises every attribute, boundary values included.
func testEvents() []Event {
	return []Event{
		{Func: 0, Entry: 1000, Exit: 2000, Site: 0},
		{Func: 1, Entry: 2500, Exit: 2600, Site: 1, Attr: AttrComm | AttrSend | AttrSendBytes | AttrReqs,
			Comm: 2, SendPeer: 1, SendTag: math.MaxInt32, SendBytes: math.MaxUint64, Reqs: []uint64{math.MaxUint64}},
		{Func: 1, Entry: 2600, Exit: 2600, Site: 1, Attr: AttrComm | AttrRecv | AttrRecvBytes | AttrReqs,
			Comm: 0, RecvPeer: AnySource, RecvTag: AnyTag, RecvBytes: 0, Reqs: []uint64{0}},
		{Func: 2, Entry: 2599, Exit: 9000, Site: 0, Attr: AttrReqs | AttrStatus | AttrFlag,
			Reqs: []uint64{math.MaxUint64, 0, 5}, Flag: true,
			Status: []Status{{NoStatus, NoStatus}, {3, math.MinInt32}, {math.MaxInt32, 0}}},
		{Func: 3, Entry: 10000, Exit: 20000, Site: 0, Attr: AttrComm | AttrRoot | AttrSendBytes | AttrRecvBytes,
			Comm: 2, Root: ProcNull, SendBytes: 8, RecvBytes: 16},
		{Func: 0, Entry: 20000, Exit: 20001, Site: 0, Attr: AttrNewComm | AttrPcontrol | AttrStatus,
			NewComm: CommNull, PcLevel: 100, PcArg: math.MinInt64, Status: []Status{{1, 2}}},
		{Func: 2, Entry: 30000, Exit: 30000 + math.MaxInt32, Site: 0, Attr: AttrReqs, Reqs: []uint64{}},
		// Folded runs of unsuccessful polls: a test (1000 calls) and a
		// probe (the most calls the column holds).
		{Func: 2, Entry: 2_200_000_000, Exit: 2_203_000_000, Site: 1, Attr: AttrReqs | AttrFlag | AttrCalls,
			Reqs: []uint64{}, Calls: 1000},
		{Func: 1, Entry: 2_203_000_100, Exit: 2_203_000_200, Site: 1, Attr: AttrComm | AttrRecv | AttrFlag | AttrCalls,
			RecvPeer: AnySource, RecvTag: 5, Calls: math.MaxUint32},
	}
}

// writeTestTrace writes a file with every chunk kind; batchSize splits the
// events into several batches.
func writeTestTrace(t testing.TB, opts WriterOptions, batchSize int) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDefinitions(testDefs()); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, Reference: 0,
		LocalSendNs: []int64{1, 2}, RemoteNs: []int64{-5, math.MaxInt64}, LocalRecvNs: []int64{3, 4}}); err != nil {
		t.Fatal(err)
	}
	var b Builder
	for _, e := range testEvents() {
		b.Append(&e)
		if b.Len() == batchSize {
			if err := w.WriteBatch(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := w.WriteBatch(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_FINALIZE, Reference: 2, SameClock: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(&tracepb.Footer{DroppedEvents: 3, StopReason: tracepb.Footer_SIZE_LIMIT, Message: "limit", EndLocalNs: 99}); err != nil {
		t.Fatal(err)
	}
	if w.Offset() != int64(buf.Len()) {
		t.Fatalf("Offset %d, file %d bytes", w.Offset(), buf.Len())
	}
	return buf.Bytes()
}

func readAll(data []byte) (*Reader, []Event, error) {
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{Name: "t.0.trc"})
	if err != nil {
		return nil, nil, err
	}
	var evs []Event
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			return r, evs, nil
		}
		if err != nil {
			return r, evs, err
		}
		e.Reqs = append([]uint64(nil), e.Reqs...)
		e.Status = append([]Status(nil), e.Status...)
		evs = append(evs, e)
	}
}

func normalize(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		if len(e.Reqs) == 0 {
			e.Reqs = nil
		}
		if len(e.Status) == 0 {
			e.Status = nil
		}
		out[i] = e
	}
	return out
}

func TestRoundTripEveryChunk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  WriterOptions
		batch int
	}{{"zstd/one-batch", WriterOptions{}, 1000}, {"zstd/batches-of-2", WriterOptions{}, 2}, {"raw/batches-of-1", WriterOptions{Raw: true}, 1},
		{"zstd-raw-literals/batches-of-3", WriterOptions{RawLiterals: true}, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			data := writeTestTrace(t, tc.opts, tc.batch)
			r, evs, err := readAll(data)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(r.Header(), testHeader()) {
				t.Errorf("header differs:\n%v\n%v", r.Header(), testHeader())
			}
			if got, want := normalize(evs), normalize(testEvents()); !reflect.DeepEqual(got, want) {
				t.Errorf("events differ:\n got %+v\nwant %+v", got, want)
			}
			d := r.Definitions()
			want := testDefs()
			for _, f := range want.Functions {
				if !proto.Equal(d.Function(f.Id), f) {
					t.Errorf("function %d: %v", f.Id, d.Function(f.Id))
				}
			}
			if !reflect.DeepEqual(d.CallSites[0], want.CallSites[0].Pcs) || d.CallSites[1] == nil || len(d.CallSites[1]) != 0 {
				t.Errorf("call sites %v", d.CallSites)
			}
			if len(d.Modules) != 1 || !proto.Equal(d.Modules[0], want.Modules[0]) {
				t.Errorf("modules %v", d.Modules)
			}
			for _, c := range want.Communicators {
				if !proto.Equal(d.Comm(c.Local), c) {
					t.Errorf("comm %d: %v", c.Local, d.Comm(c.Local))
				}
			}
			if len(r.ClockSyncs()) != 2 || r.ClockSyncs()[0].RemoteNs[1] != math.MaxInt64 || !r.ClockSyncs()[1].SameClock {
				t.Errorf("clock syncs %v", r.ClockSyncs())
			}
			f := r.Footer()
			if f.EventCount != uint64(len(testEvents())) || f.DroppedEvents != 3 || f.StopReason != tracepb.Footer_SIZE_LIMIT || f.Message != "limit" {
				t.Errorf("footer %v", f)
			}
		})
	}
}

// TestBatchMatchesGenerated checks the hand-written batch codec against
// reference codecs written on the generated protobuf code: any protobuf
// reader following trace.proto decodes our batches, and we decode batches
// from any writer following it (here: one shape per event, no sharing).
func TestBatchMatchesGenerated(t *testing.T) {
	twice := append(testEvents(), testEvents()...) // the second half repeats the shapes
	var b Builder
	for _, e := range twice {
		b.Append(&e)
	}
	var enc batchEncoder
	raw := enc.appendBatch(nil, b.Batch())
	var pb tracepb.EventBatch
	if err := proto.Unmarshal(raw, &pb); err != nil {
		t.Fatal(err)
	}
	if len(pb.Func) != len(testEvents()) || len(pb.Shape) != len(twice) {
		t.Errorf("%d shapes for %d events: repeated shapes were not shared", len(pb.Func), len(pb.Shape))
	}
	if got, want := normalize(eventsFromPB(&pb)), normalize(twice); !reflect.DeepEqual(got, want) {
		t.Errorf("reference decode differs:\n got %+v\nwant %+v", got, want)
	}
	again, err := proto.Marshal(pbFromEvents(testEvents()))
	if err != nil {
		t.Fatal(err)
	}
	var b2 Batch
	if err := decodeBatch(again, &b2); err != nil {
		t.Fatal(err)
	}
	var got []Event
	var c Cursor
	var e Event
	for c.Next(&b2, &e) {
		got = append(got, e)
	}
	if !reflect.DeepEqual(normalize(got), normalize(testEvents())) {
		t.Errorf("decode of reference encoding differs:\n got %+v\nwant %+v", got, testEvents())
	}
}

// eventsFromPB is a reference decoder of trace.proto's EventBatch.
func eventsFromPB(pb *tracepb.EventBatch) []Event {
	type static struct {
		comm                 uint32
		sp, st, rp, rt, root int32
		sb, rb               uint64
	}
	var shapes []static
	var ci, si, ri, sbi, rbi, rooti int
	for _, a32 := range pb.Attr {
		a := Attr(a32)
		var x static
		if a&AttrComm != 0 {
			x.comm = pb.Comm[ci]
			ci++
		}
		if a&AttrSend != 0 {
			x.sp, x.st = pb.SendPeer[si], pb.SendTag[si]
			si++
		}
		if a&AttrRecv != 0 {
			x.rp, x.rt = pb.RecvPeer[ri], pb.RecvTag[ri]
			ri++
		}
		if a&AttrSendBytes != 0 {
			x.sb = pb.SendBytes[sbi]
			sbi++
		}
		if a&AttrRecvBytes != 0 {
			x.rb = pb.RecvBytes[rbi]
			rbi++
		}
		if a&AttrRoot != 0 {
			x.root = pb.Root[rooti]
			rooti++
		}
		shapes = append(shapes, x)
	}
	var evs []Event
	t := pb.BaseNs
	var nq, rq, st, nc, pc, fl, ca int
	var prev uint64
	for i, s := range pb.Shape {
		a := Attr(pb.Attr[s])
		x := shapes[s]
		e := Event{Thread: pb.Thread, Func: pb.Func[s], Site: pb.Site[s], Attr: a, Comm: x.comm,
			SendPeer: x.sp, SendTag: x.st, RecvPeer: x.rp, RecvTag: x.rt, SendBytes: x.sb, RecvBytes: x.rb, Root: x.root}
		e.Entry = t + pb.Gap[i]
		e.Exit = e.Entry + int64(pb.Dur[i])
		t = e.Exit
		nst := 1
		if a&AttrReqs != 0 {
			n := int(pb.Nreqs[nq])
			nq++
			for j := 0; j < n; j++ {
				prev += uint64(pb.Reqs[rq])
				rq++
				e.Reqs = append(e.Reqs, prev)
			}
			nst = n
		}
		if a&AttrStatus != 0 {
			for j := 0; j < nst; j++ {
				e.Status = append(e.Status, Status{pb.StatusSource[st], pb.StatusTag[st]})
				st++
			}
		}
		if a&AttrNewComm != 0 {
			e.NewComm = pb.Newcomm[nc]
			nc++
		}
		if a&AttrPcontrol != 0 {
			e.PcLevel, e.PcArg = pb.PcontrolLevel[pc], pb.PcontrolArg[pc]
			pc++
		}
		if a&AttrFlag != 0 {
			e.Flag = pb.Flag[fl] != 0
			fl++
		}
		if a&AttrCalls != 0 {
			e.Calls = pb.Calls[ca]
			ca++
		}
		evs = append(evs, e)
	}
	return evs
}

// pbFromEvents is a reference encoder: one shape per event.
func pbFromEvents(evs []Event) *tracepb.EventBatch {
	pb := &tracepb.EventBatch{Count: uint32(len(evs))}
	var last int64
	var prev uint64
	for i, e := range evs {
		if i == 0 {
			pb.BaseNs, last = e.Entry, e.Entry
		}
		pb.Shape = append(pb.Shape, uint32(i))
		pb.Gap = append(pb.Gap, e.Entry-last)
		pb.Dur = append(pb.Dur, uint64(e.Exit-e.Entry))
		last = e.Exit
		a := e.Attr
		pb.Func, pb.Site, pb.Attr = append(pb.Func, e.Func), append(pb.Site, e.Site), append(pb.Attr, uint32(a))
		if a&AttrComm != 0 {
			pb.Comm = append(pb.Comm, e.Comm)
		}
		if a&AttrSend != 0 {
			pb.SendPeer, pb.SendTag = append(pb.SendPeer, e.SendPeer), append(pb.SendTag, e.SendTag)
		}
		if a&AttrRecv != 0 {
			pb.RecvPeer, pb.RecvTag = append(pb.RecvPeer, e.RecvPeer), append(pb.RecvTag, e.RecvTag)
		}
		if a&AttrSendBytes != 0 {
			pb.SendBytes = append(pb.SendBytes, e.SendBytes)
		}
		if a&AttrRecvBytes != 0 {
			pb.RecvBytes = append(pb.RecvBytes, e.RecvBytes)
		}
		if a&AttrRoot != 0 {
			pb.Root = append(pb.Root, e.Root)
		}
		if a&AttrReqs != 0 {
			pb.Nreqs = append(pb.Nreqs, uint32(len(e.Reqs)))
			for _, r := range e.Reqs {
				pb.Reqs = append(pb.Reqs, int64(r-prev))
				prev = r
			}
		}
		if a&AttrStatus != 0 {
			for _, s := range e.Status {
				pb.StatusSource, pb.StatusTag = append(pb.StatusSource, s.Source), append(pb.StatusTag, s.Tag)
			}
		}
		if a&AttrNewComm != 0 {
			pb.Newcomm = append(pb.Newcomm, e.NewComm)
		}
		if a&AttrPcontrol != 0 {
			pb.PcontrolLevel, pb.PcontrolArg = append(pb.PcontrolLevel, e.PcLevel), append(pb.PcontrolArg, e.PcArg)
		}
		if a&AttrFlag != 0 {
			f := uint32(0)
			if e.Flag {
				f = 1
			}
			pb.Flag = append(pb.Flag, f)
		}
		if a&AttrCalls != 0 {
			pb.Calls = append(pb.Calls, e.Calls)
		}
	}
	return pb
}

// TestTruncatedAtEveryByte cuts a small file at every length: the reader
// must never panic, must return every event of the intact frames, and must
// end in a typed truncation error carrying rank and offset.
func TestTruncatedAtEveryByte(t *testing.T) {
	data := writeTestTrace(t, WriterOptions{}, 2)
	_, all, err := readAll(data)
	if err != nil {
		t.Fatal(err)
	}
	prev := 0
	for n := 0; n < len(data); n++ {
		r, evs, err := readAll(data[:n])
		if err == nil {
			t.Fatalf("cut at %d: no error", n)
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v is not a truncation CorruptError", n, err)
		}
		if ce.Offset > int64(n) {
			t.Fatalf("cut at %d: error offset %d beyond the cut", n, ce.Offset)
		}
		if r != nil && ce.Rank != 1 {
			t.Fatalf("cut at %d: rank %d in error", n, ce.Rank)
		}
		if !reflect.DeepEqual(normalize(evs), normalize(all[:len(evs)])) || len(evs) < prev {
			t.Fatalf("cut at %d: events are not a growing prefix", n)
		}
		prev = len(evs)
		if !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), "byte offset") {
			t.Fatalf("cut at %d: message %q", n, err)
		}
	}
	if prev != len(all) {
		t.Fatalf("a file cut just before its footer gave %d of %d events", prev, len(all))
	}
}

// TestCorruptByteFlip flips each byte of a file: no panic, every error is
// typed, and the intact prefix is delivered.
func TestCorruptByteFlip(t *testing.T) {
	data := writeTestTrace(t, WriterOptions{}, 2)
	for i := range data {
		if i == 10 || i == 11 {
			continue // the minor version: any value is readable by design
		}
		c := append([]byte(nil), data...)
		c[i] ^= 0x41
		_, _, err := readAll(c)
		if err == nil {
			t.Fatalf("flip at %d: no error", i)
		}
		var ce *CorruptError
		var ve *VersionError
		if !errors.As(err, &ce) && !errors.As(err, &ve) {
			t.Fatalf("flip at %d: untyped error %v", i, err)
		}
	}
}

func TestNotATraceAndVersion(t *testing.T) {
	_, _, err := readAll([]byte("hello world, this is text"))
	if !errors.Is(err, ErrNotTrace) {
		t.Errorf("text file: %v", err)
	}
	_, _, err = readAll([]byte{0x89, 'D'})
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("magic prefix: %v", err)
	}
	data := writeTestTrace(t, WriterOptions{}, 10)
	binary.LittleEndian.PutUint16(data[8:], 3)
	binary.LittleEndian.PutUint16(data[10:], 0)
	_, _, err = readAll(data)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Major != 3 || !strings.Contains(err.Error(), "version 3.0 is not supported") {
		t.Errorf("version 3: %v", err)
	}
	// A deferred trace: the error says how to compact it.
	binary.LittleEndian.PutUint16(data[8:], DeferredMajor)
	if _, _, err = readAll(data); !errors.As(err, &ve) || !strings.Contains(err.Error(), "dtrun --compact") {
		t.Errorf("deferred: %v", err)
	}
	// So is a major version older than this package reads.
	binary.LittleEndian.PutUint16(data[8:], 0)
	if _, _, err = readAll(data); !errors.As(err, &ve) || ve.Major != 0 {
		t.Errorf("version 0: %v", err)
	}
	// A 1.x file (no member ranges) is read.
	data = writeTestTrace(t, WriterOptions{}, 10)
	binary.LittleEndian.PutUint16(data[8:], 1)
	binary.LittleEndian.PutUint16(data[10:], 1)
	if _, _, err := readAll(data); err != nil {
		t.Errorf("version 1.1: %v", err)
	}
	// A newer minor version is read.
	data = writeTestTrace(t, WriterOptions{}, 10)
	binary.LittleEndian.PutUint16(data[10:], 7)
	if _, _, err := readAll(data); err != nil {
		t.Errorf("minor version 7: %v", err)
	}
}

// TestUnknownFrameSkipped: frames of kinds added by later minor versions are
// skipped.
func TestUnknownFrameSkipped(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(testDefs())
	w.writeFrame(Kind(200), []byte("future"))
	var b Builder
	e := testEvents()[0]
	b.Append(&e)
	w.WriteBatch(&b)
	w.Close(nil)
	_, evs, err := readAll(buf.Bytes())
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
}

func TestUndefinedReferencesRejected(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testHeader(), WriterOptions{})
	w.WriteDefinitions(testDefs())
	var b Builder
	b.Append(&Event{Func: 9, Entry: 1, Exit: 2})
	w.WriteBatch(&b)
	w.Close(nil)
	_, _, err := readAll(buf.Bytes())
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "undefined function 9") {
		t.Fatalf("got %v", err)
	}
}

func TestDataAfterFooter(t *testing.T) {
	data := append(writeTestTrace(t, WriterOptions{}, 10), 0)
	_, evs, err := readAll(data)
	if !errors.Is(err, ErrCorrupt) || len(evs) != len(testEvents()) {
		t.Fatalf("%d events, %v", len(evs), err)
	}
}

// TestLengthLimits: lengths beyond the limits are refused before any
// allocation.
func TestLengthLimits(t *testing.T) {
	base := writeTestTrace(t, WriterOptions{}, 10)
	hdrEnd := PreambleSize + FrameHeaderSize + int(binary.LittleEndian.Uint32(base[PreambleSize:]))
	for _, tc := range []struct {
		name string
		mut  func(h []byte)
		want string
	}{
		{"payload", func(h []byte) { binary.LittleEndian.PutUint32(h[0:], MaxPayload+1) }, "exceeds the limit"},
		{"raw", func(h []byte) { binary.LittleEndian.PutUint32(h[6:], MaxRaw+1) }, "exceeds the limit"},
		{"expansion", func(h []byte) {
			binary.LittleEndian.PutUint32(h[0:], 10)
			binary.LittleEndian.PutUint32(h[6:], 10*maxExpansion+1)
		}, "claims"},
		{"encoding", func(h []byte) { h[5] = 9 }, "unknown payload encoding"},
	} {
		data := append([]byte(nil), base...)
		tc.mut(data[hdrEnd:])
		_, _, err := readAll(data)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
		var ce *CorruptError
		if errors.As(err, &ce) && ce.Offset != int64(hdrEnd) {
			t.Errorf("%s: offset %d, want %d", tc.name, ce.Offset, hdrEnd)
		}
	}
}

// TestLyingLengthCostsNoMemory: a tiny file whose frame claims a 64 MiB
// payload makes the reader allocate about what the file holds, not what it
// claims.
func TestLyingLengthCostsNoMemory(t *testing.T) {
	data := append([]byte(nil), Magic[:]...)
	data = binary.LittleEndian.AppendUint16(data, VersionMajor)
	data = binary.LittleEndian.AppendUint16(data, VersionMinor)
	var h [FrameHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], MaxPayload)
	h[4] = byte(KindHeader)
	binary.LittleEndian.PutUint32(h[6:], MaxPayload)
	data = append(append(data, h[:]...), "short"...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := readAll(data)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v, want a truncation error", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("reading a %d-byte file allocated %d bytes", len(data), alloc)
	}
}

type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// TestSkipEvents: a first pass can pass over event batches, seeking or not,
// and still get definitions, clock syncs and the footer; a file cut inside a
// skipped batch is still reported as truncated.
func TestSkipEvents(t *testing.T) {
	data := writeTestTrace(t, WriterOptions{}, 2)
	for _, src := range []struct {
		name string
		r    func(b []byte) io.Reader
	}{
		{"seeker", func(b []byte) io.Reader { return bytes.NewReader(b) }},
		{"plain", func(b []byte) io.Reader { return plainReader{bytes.NewReader(b)} }},
	} {
		t.Run(src.name, func(t *testing.T) {
			r, err := NewReader(src.r(data), ReaderOptions{SkipEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			if b, err := r.ReadBatch(); err != io.EOF || b != nil {
				t.Fatalf("ReadBatch = %v, %v; want nil, io.EOF", b, err)
			}
			if r.SkippedBatches() != (len(testEvents())+1)/2 || len(r.ClockSyncs()) != 2 || r.Footer() == nil || r.Definitions().Function(3) == nil {
				t.Fatalf("skipped %d, syncs %d, footer %v", r.SkippedBatches(), len(r.ClockSyncs()), r.Footer())
			}
			if r.Offset() != int64(len(data)) {
				t.Fatalf("offset %d, file %d", r.Offset(), len(data))
			}
			// Cut inside the last event batch: every earlier frame, then a
			// truncation error.
			full, _ := NewReader(bytes.NewReader(data))
			var lastBatchEnd int64
			for {
				_, err := full.ReadBatch()
				if err != nil {
					break
				}
				lastBatchEnd = full.Offset()
			}
			r, _ = NewReader(src.r(data[:lastBatchEnd-3]), ReaderOptions{SkipEvents: true})
			_, err = r.ReadBatch()
			if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "event batch") {
				t.Fatalf("cut batch: %v", err)
			}
		})
	}
}

// TestSkipDefinitions: with SkipEvents, a first pass that needs only the
// header, clock syncs and footer can pass over the definitions too, and
// Definitions stays empty; the batches are counted as before.
func TestSkipDefinitions(t *testing.T) {
	data := writeTestTrace(t, WriterOptions{}, 2)
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{SkipEvents: true, SkipDefinitions: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadBatch(); err != io.EOF || b != nil {
		t.Fatalf("ReadBatch = %v, %v; want nil, io.EOF", b, err)
	}
	if r.SkippedBatches() != (len(testEvents())+1)/2 || len(r.ClockSyncs()) != 2 || r.Footer() == nil || r.Definitions().Function(3) != nil {
		t.Fatalf("skipped %d, syncs %d, footer %v, function 3 %v", r.SkippedBatches(), len(r.ClockSyncs()), r.Footer(), r.Definitions().Function(3))
	}
	// Without SkipEvents the definitions are read.
	r, _ = NewReader(bytes.NewReader(data), ReaderOptions{SkipDefinitions: true})
	for {
		if _, err := r.ReadBatch(); err != nil {
			break
		}
	}
	if r.Definitions().Function(3) == nil {
		t.Fatal("SkipDefinitions without SkipEvents skipped the definitions")
	}
}

// TestSparseIDsRefused: an id far beyond the number of definitions would
// make tables indexed by id huge; the reader refuses it instead.
func TestSparseIDsRefused(t *testing.T) {
	for _, d := range []*tracepb.Definitions{
		{Functions: []*tracepb.Function{{Id: 1 << 20, Name: "MPI_Send"}}},
		{CallSites: []*tracepb.CallSite{{Id: 1 << 22}}},
		{Communicators: []*tracepb.Communicator{{Local: 5000, Members: []uint32{0}}}},
	} {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, testHeader(), WriterOptions{})
		w.WriteDefinitions(d)
		w.Close(nil)
		_, _, err := readAll(buf.Bytes())
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%v: got %v", d, err)
		}
	}
}

func TestCommRedefinition(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testHeader(), WriterOptions{})
	w.WriteDefinitions(testDefs())
	w.WriteDefinitions(&tracepb.Definitions{Communicators: testDefs().Communicators[2:]}) // the same again: fine
	w.WriteDefinitions(&tracepb.Definitions{Communicators: []*tracepb.Communicator{{Local: 2, Id: 78, Members: []uint32{0}}}})
	w.Close(nil)
	_, _, err := readAll(buf.Bytes())
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "redefined") {
		t.Fatalf("got %v", err)
	}
}

// TestAppendStaticSameBytes checks that a batch built with AppendStatic
// (the tracer's path) encodes to the bytes of one built with Append, and
// reads back as the same events, across batches reusing the storage.
func TestAppendStaticSameBytes(t *testing.T) {
	evs := withFoldedPolls(haloEvents(20000))
	evs[7].Site = 1 << 17 // beyond the per-site cache
	evs[9].Site = 1 << 17
	var a, s Builder
	var ea, es batchEncoder
	for k := 0; k < 3; k++ {
		a.Reset()
		s.Reset()
		part := evs[k*5000 : (k+2)*5000]
		for i := range part {
			a.Append(&part[i])
			appendStatic(&s, &part[i])
		}
		x, y := ea.appendBatch(nil, a.Batch()), es.appendBatch(nil, s.Batch())
		if !bytes.Equal(x, y) {
			t.Fatalf("batch %d: AppendStatic encodes to %d bytes, Append to %d", k, len(y), len(x))
		}
		var ca, cs Cursor
		var e1, e2 Event
		ab, sb := a.Batch(), s.Batch()
		for ca.Next(ab, &e1) {
			if !cs.Next(sb, &e2) || !reflect.DeepEqual(e1, e2) {
				t.Fatalf("batch %d: cursor differs: %+v, %+v", k, e1, e2)
			}
		}
		if cs.Next(sb, &e2) {
			t.Fatalf("batch %d: AppendStatic batch longer", k)
		}
	}
}

// TestLyingCountCostsNoMemory: a batch whose count promises millions of
// events in a few bytes is refused without allocating for them.
func TestLyingCountCostsNoMemory(t *testing.T) {
	raw := protowire.AppendTag(nil, fCount, protowire.VarintType)
	raw = protowire.AppendVarint(raw, MaxBatchEvents)
	raw = protowire.AppendTag(raw, fShape, protowire.BytesType)
	raw = protowire.AppendBytes(raw, []byte{0})
	var b Batch
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	err := decodeBatch(raw, &b)
	runtime.ReadMemStats(&m1)
	if err == nil {
		t.Fatal("batch with a lying count accepted")
	}
	if n := m1.TotalAlloc - m0.TotalAlloc; n > 1<<20 {
		t.Errorf("decoding %d bytes allocated %d", len(raw), n)
	}
}

// TestAppendLikeSameBytes checks that a batch built with AppendLike and
// RepeatLast where an earlier event has the same static part (as
// records.DecodeShaped does) encodes to the bytes of one built with Append.
func TestAppendLikeSameBytes(t *testing.T) {
	evs := withFoldedPolls(haloEvents(3000))
	// Runs of one call whose times the caller appends itself.
	for i := 100; i < 3000; i += 300 {
		for j := i + 1; j < i+40; j++ {
			evs[j] = Event{Func: 42, Site: 9, Attr: AttrComm, Comm: 1, Entry: evs[j-1].Exit + 150, Exit: evs[j-1].Exit + 175}
		}
	}
	var a, s Builder
	var ea, es batchEncoder
	for k := 0; k < 2; k++ {
		a.Reset()
		s.Reset()
		seen := map[shape]int{}
		for i := range evs {
			e := &evs[i]
			a.Append(e)
			sh := Builder{}
			sh.AppendStatic(e)
			key := sh.shapes[0]
			j, ok := seen[key]
			switch {
			case ok && j == s.Len()-1 && k == 1 && e.Attr&^staticAttrs == 0:
				s.Gap = append(s.Gap, e.Entry-s.lastExit)
				s.Dur = append(s.Dur, uint64(e.Exit-e.Entry))
				s.RepeatLast(1, e.Exit)
			case ok:
				s.AppendLike(j, e.Entry, e.Exit)
				s.AppendPerCall(e)
			default:
				appendStatic(&s, e)
			}
			seen[key] = s.Len() - 1
		}
		x, y := ea.appendBatch(nil, a.Batch()), es.appendBatch(nil, s.Batch())
		if !bytes.Equal(x, y) {
			t.Fatalf("pass %d: AppendLike encodes to %d bytes, Append to %d", k, len(y), len(x))
		}
	}
}

// withFoldedPolls turns every 97th event into a folded run of unsuccessful
// MPI_Test polls of one call site (AttrCalls), with a call count that
// changes from run to run, keeping the times.
func withFoldedPolls(evs []Event) []Event {
	for i := 50; i < len(evs); i += 97 {
		e := &evs[i]
		*e = Event{Func: 5, Site: 7, Entry: e.Entry, Exit: e.Exit, Attr: AttrReqs | AttrFlag | AttrCalls,
			Reqs: []uint64{uint64(i)}, Calls: uint32(2 + i%1000)}
	}
	return evs
}

// TestCallsColumnCount: a batch whose calls column has a value too few or
// too many for the events carrying AttrCalls is refused by both decoders,
// with an error naming the column.
func TestCallsColumnCount(t *testing.T) {
	b := builderOf(testEvents())
	r := rareOf[colIndex("calls")]
	good := b.rare[r]
	for _, tc := range []struct {
		name  string
		calls []uint64
	}{{"short", good[:len(good)-1]}, {"long", append(append([]uint64(nil), good...), 7)}, {"absent", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			b.rare[r] = tc.calls
			var enc batchEncoder
			raw := enc.appendBatch(nil, b.Batch())
			var d Batch
			errFull := decodeBatch(raw, &d)
			var lb LazyBatch
			errLazy := lb.parse(raw)
			for _, err := range []error{errFull, errLazy} {
				if err == nil || !strings.Contains(err.Error(), "column calls has") {
					t.Errorf("got %v, want an error naming the calls column", err)
				}
			}
		})
	}
}

// TestWriterAhead checks that definitions written before the header is known
// (NewWriterAhead, then Start) give the file NewWriter would have written,
// and that nothing reaches the file before Start.
func TestWriterAhead(t *testing.T) {
	for _, opts := range []WriterOptions{{}, {Raw: true}, {Deferred: true}} {
		var want, got bytes.Buffer
		w, err := NewWriter(&want, testHeader(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteDefinitions(testDefs()); err != nil {
			t.Fatal(err)
		}
		a, err := NewWriterAhead(&got, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.WriteDefinitions(testDefs()); err != nil {
			t.Fatal(err)
		}
		if got.Len() != 0 || a.Offset() != 0 {
			t.Fatalf("%+v: %d bytes written (offset %d) before Start", opts, got.Len(), a.Offset())
		}
		if err := a.Start(testHeader()); err != nil {
			t.Fatal(err)
		}
		if a.Start(testHeader()) == nil {
			t.Errorf("%+v: a second Start succeeded", opts)
		}
		for _, w := range []*Writer{w, a} {
			if err := w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, SameClock: true}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(&tracepb.Footer{StopReason: tracepb.Footer_FINALIZE}); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || a.Offset() != int64(got.Len()) {
			t.Errorf("%+v: %d bytes (offset %d), want the %d of NewWriter", opts, got.Len(), a.Offset(), want.Len())
		}
	}
}
