package records

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// runPart is one thing a tracer writes: definitions, a buffer of records
// (thread tid), or a clock sync.
type runPart struct {
	defs  *tracepb.Definitions
	recs  []byte
	tid   uint32
	clock *tracepb.ClockSync
}

func testParts() []runPart {
	rng := rand.New(rand.NewPCG(7, 9))
	return []runPart{
		{defs: &tracepb.Definitions{Functions: []*tracepb.Function{{Id: 5, Name: "MPI_Send"}, {Id: 6, Name: "MPI_Waitall"},
			{Id: 7, Name: "MPI_Pcontrol"}, {Id: 8, Name: "MPI_Barrier"}, {Id: 42, Name: "MPI_Comm_rank"}},
			CallSites:     []*tracepb.CallSite{{Id: 0}, {Id: 1, Pcs: []uint64{0x10}}, {Id: 2, Pcs: []uint64{0x20}}, {Id: 3, Pcs: []uint64{0x30}}},
			Communicators: []*tracepb.Communicator{{Local: 0, Members: []uint32{0, 1}}}}},
		{recs: fourCalls()},
		{clock: &tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, SameClock: true}},
		{recs: cheapCalls(3000), tid: 1},
		{recs: mixedCalls(rng, 2000, 1<<41)},
		{defs: &tracepb.Definitions{CallSites: []*tracepb.CallSite{{Id: 4, Pcs: []uint64{0x40, 0x50}}}}},
		{recs: cheapCallsAt(500, 1<<42)},
	}
}

// writeRun writes parts as the tracer does: encoding each buffer as it
// goes, or (deferred) writing the first rawParts buffers raw and encoding
// the rest. footer's EventCount is left for the writer to fill in.
func writeRun(t testing.TB, path string, parts []runPart, deferred bool, rawParts int, pre Prefix, footer *tracepb.Footer) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := WriterOptions(false)
	opts.Deferred = deferred
	w, err := traceformat.NewWriter(f, &tracepb.Header{Rank: 3, WorldSize: 4, Hostname: "h"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var cut bool
	for _, p := range parts {
		switch {
		case p.defs != nil:
			err = w.WriteDefinitions(p.defs)
		case p.clock != nil:
			err = w.WriteClockSync(p.clock)
		case deferred && rawParts > 0:
			rawParts--
			pre.Thread = p.tid
			err = w.WriteRecords(pre.Append(nil), p.recs)
		case cut:
		default:
			var b traceformat.Builder
			if err := Decode(&b, p.recs, p.tid, &pre.Conv); err != nil {
				t.Fatal(err)
			}
			err = w.WriteBatch(&b)
			// What the tracer does when it encodes as it goes.
			if !deferred && pre.Limit > 0 && w.Offset() >= pre.Limit {
				cut = true
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if footer != nil {
		if err := w.Close(footer); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompactMatchesInline: a deferred trace, compacted, is byte for byte
// the trace the tracer writes when it encodes as it goes, whether every
// buffer was deferred or only the first ones (the budget ran out), when no
// two frames of a thread follow each other, definitions or not between
// them (TestCompactJoinsFrames joins them).
func TestCompactMatchesInline(t *testing.T) {
	dir := t.TempDir()
	pre := Prefix{Conv: Converter{TSC: true, NsPerTick: 0.4, Raw0: 1 << 40, Ns0: 5e9}}
	parts := testParts()
	parts[len(parts)-1].tid = 1 // not thread 0's, as the frame before the definitions
	inline := filepath.Join(dir, "inline.trc")
	writeRun(t, inline, parts, false, 0, pre, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE, Message: "m"})
	want, _ := os.ReadFile(inline)
	for _, raw := range []int{4, 2} {
		path := filepath.Join(dir, "deferred.trc")
		writeRun(t, path, parts, true, raw, pre, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE, Message: "m"})
		if !IsDeferred(path) {
			t.Fatal("not deferred")
		}
		if _, err := traceformat.NewReader(bytes.NewReader(readFile(t, path)), traceformat.ReaderOptions{Name: path}); err == nil ||
			!strings.Contains(err.Error(), "dtrun --compact "+path) {
			t.Errorf("reading a deferred trace: %v; want a VersionError saying how to compact it", err)
		}
		n, err := Compact(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); !bytes.Equal(got, want) {
			t.Errorf("%d raw buffers: compacted trace (%d bytes) differs from the inline one (%d bytes)", raw, len(got), len(want))
		}
		if n == 0 || IsDeferred(path) {
			t.Errorf("%d raw buffers: %d events decoded, still deferred %v", raw, n, IsDeferred(path))
		}
		if n, err := Compact(path); n != 0 || err != nil {
			t.Errorf("compacting twice: %d, %v", n, err)
		}
	}
}

// TestCompactJoinsFrames: consecutive raw frames of one thread become one
// batch of at least mergeMin events and at most mergeMax (unless one frame
// alone has more), holding the events the tracer writes when it encodes
// buffer by buffer; a frame of another thread or kind ends the batch, and
// so does the nearness of MaxTraceSize's share, under which the frames are
// written one by one, byte for byte as the tracer writes them, as they are
// with DT_COMPACT_JOIN=0.
func TestCompactJoinsFrames(t *testing.T) {
	parts := []runPart{testParts()[0],
		{recs: fourCalls()}, {recs: cheapCallsAt(300, 1<<42)}, {recs: cheapCallsAt(5000, 1<<43)}, // one batch
		{recs: cheapCallsAt(300, 1<<44)}, {recs: cheapCallsAt(300, 1<<45), tid: 1}, // another thread
		{recs: cheapCallsAt(3000, 1<<46)}, {recs: cheapCallsAt(6000, 1<<47)}, // 9000 > mergeMax: two
	}
	dir := t.TempDir()
	batches := func(path string) int {
		r, err := traceformat.NewReader(bytes.NewReader(readFile(t, path)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			if _, err := r.ReadBatch(); err != nil {
				return n
			}
			n++
		}
	}
	events := func(path string) []traceformat.Event {
		evs, _ := readRecovered(t, path)
		for i := range evs {
			evs[i].Reqs, evs[i].Status = slices.Clone(evs[i].Reqs), slices.Clone(evs[i].Status)
		}
		return evs
	}
	for _, c := range []struct {
		limit   int64
		batches int
		noJoin  bool
	}{{0, 5, false}, {1 << 30, 5, false}, {70 << 10, 7, false}, {0, 7, true}} {
		if c.noJoin {
			t.Setenv("DT_COMPACT_JOIN", "0")
		}
		pre := Prefix{Limit: c.limit, MaxMB: 1}
		inline := filepath.Join(dir, "inline.trc")
		writeRun(t, inline, parts, false, 0, pre, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE})
		path := filepath.Join(dir, "deferred.trc")
		writeRun(t, path, parts, true, len(parts), pre, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE})
		n, err := Compact(path)
		if _, r := readRecovered(t, inline); err != nil || uint64(n) != r.Footer().EventCount {
			t.Fatalf("limit %d: Compact = %d, %v; the inline trace has %d events", c.limit, n, err, r.Footer().EventCount)
		}
		if got := batches(path); got != c.batches || batches(inline) != 7 {
			t.Errorf("limit %d: %d batches (inline %d), want %d", c.limit, got, batches(inline), c.batches)
		}
		if !reflect.DeepEqual(events(path), events(inline)) {
			t.Errorf("limit %d: the events differ from the inline trace's", c.limit)
		}
		if c.batches == 7 && !bytes.Equal(readFile(t, path), readFile(t, inline)) {
			t.Errorf("limit %d: frames written one by one differ from the inline trace", c.limit)
		}
	}
}

// TestCompactJoinsDefinitions: consecutive definitions frames become one
// frame of their entries in order, a frame alone is copied as it is, a
// frame after a thread's records goes before their batch (which it joins
// with what follows), and the trace reads as the inline one (the same
// events and definitions); with DT_COMPACT_JOIN=0 every frame is kept in
// place.
func TestCompactJoinsDefinitions(t *testing.T) {
	site := func(id uint32, pcs ...uint64) runPart {
		return runPart{defs: &tracepb.Definitions{CallSites: []*tracepb.CallSite{{Id: id, Pcs: pcs}}}}
	}
	parts := []runPart{testParts()[0], site(4, 0x40, 0x50), site(5), // three joined
		{recs: fourCalls()}, site(6, 0x60), // alone, before the batch of fourCalls
		{clock: &tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, SameClock: true}},
		site(7, 0x70), site(8, 0x80, 0x90, 1<<47), {recs: cheapCallsAt(300, 1<<42)}, // two joined
	}
	dir := t.TempDir()
	kinds := func(path string) string {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc, err := traceformat.NewFrameScanner(f, path)
		if err != nil {
			t.Fatal(err)
		}
		var k []byte
		for {
			fr, err := sc.Next()
			if err != nil {
				return string(k)
			}
			k = append(k, "?HDECF"[fr.Kind])
		}
	}
	inline := filepath.Join(dir, "inline.trc")
	writeRun(t, inline, parts, false, 0, Prefix{}, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE})
	wantEvents, wantR := readRecovered(t, inline)
	for _, c := range []struct {
		noJoin bool
		kinds  string
	}{{false, "HDDECDEF"}, {true, "HDDDEDCDDEF"}} {
		if c.noJoin {
			t.Setenv("DT_COMPACT_JOIN", "0")
		}
		path := filepath.Join(dir, "deferred.trc")
		writeRun(t, path, parts, true, len(parts), Prefix{}, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE})
		if _, err := Compact(path); err != nil {
			t.Fatal(err)
		}
		if got := kinds(path); got != c.kinds || kinds(inline) != "HDDDEDCDDEF" {
			t.Errorf("join %v: frames %s (inline %s), want %s", !c.noJoin, got, kinds(inline), c.kinds)
		}
		events, r := readRecovered(t, path)
		if !reflect.DeepEqual(events, wantEvents) {
			t.Errorf("join %v: the events differ from the inline trace's", !c.noJoin)
		}
		got, want := r.Definitions(), wantR.Definitions()
		if !reflect.DeepEqual(got.CallSites, want.CallSites) || len(got.Functions) != len(want.Functions) ||
			len(got.Comms) != len(want.Comms) || len(got.Modules) != len(want.Modules) {
			t.Errorf("join %v: definitions differ:\n got %v\nwant %v", !c.noJoin, got, want)
		}
		for i, f := range want.Functions {
			if !proto.Equal(got.Functions[i], f) {
				t.Errorf("join %v: function %d: %v, want %v", !c.noJoin, i, got.Functions[i], f)
			}
		}
		for i, cm := range want.Comms {
			if !proto.Equal(got.Comms[i], cm) {
				t.Errorf("join %v: communicator %d: %v, want %v", !c.noJoin, i, got.Comms[i], cm)
			}
		}
	}
}

// TestCompactCut: MaxTraceSize's share is enforced where the tracer would
// have enforced it, and the footer says so.
func TestCompactCut(t *testing.T) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.trc")
	parts := testParts()
	writeRun(t, probe, parts[:2], false, 0, Prefix{}, nil)
	st, _ := os.Stat(probe)
	pre := Prefix{Limit: st.Size(), MaxMB: 1}                                                      // reached by the first batch
	writeRun(t, probe, parts, false, 0, pre, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE}) // inline: the rest dropped
	_, r := readRecovered(t, probe)
	path := filepath.Join(dir, "cut.trc")
	writeRun(t, path, parts, true, 4, pre, &tracepb.Footer{StopReason: tracepb.Footer_FINALIZE, Message: "m"})
	if _, err := Compact(path); err != nil {
		t.Fatal(err)
	}
	events, cr := readRecovered(t, path)
	ft := cr.Footer()
	var later traceformat.Builder
	for _, p := range parts[2:] {
		if p.recs != nil {
			Decode(&later, p.recs, 0, &pre.Conv)
		}
	}
	if len(events) != 4 || ft.EventCount != 4 || ft.StopReason != tracepb.Footer_SIZE_LIMIT || ft.DroppedEvents != uint64(later.Len()) ||
		!strings.Contains(ft.Message, "MaxTraceSize 1 MB") || !strings.HasSuffix(ft.Message, "; m") {
		t.Errorf("%d events, footer %v", len(events), ft)
	}
	if r.Footer().EventCount != 4 {
		t.Errorf("inline cut: %d events", r.Footer().EventCount)
	}
	if len(cr.ClockSyncs()) != 1 || len(cr.Definitions().CallSites) != 5 {
		t.Errorf("frames after the cut: %d clock syncs, %d call sites; want them kept", len(cr.ClockSyncs()), len(cr.Definitions().CallSites))
	}
}

// TestCompactKilled: a deferred trace cut inside a frame (the process was
// killed) keeps everything before the cut and stays without a footer; the
// spill file's records then complete it (Recover compacts first).
func TestCompactKilled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.0.trc")
	writeRun(t, path, testParts()[:4], true, 4, Prefix{}, nil)
	data := readFile(t, path)
	os.WriteFile(path, data[:len(data)-100], 0o644) // the last raw frame cut short
	spill, put := spillFor(t, path, 2)
	put(0, 1, 1, cheapCallsAt(7, 1<<40)) // thread 1's buffer, never written
	n, err := Recover(spill)
	if err != nil || n != 7 {
		t.Fatalf("Recover = %d, %v; want 7", n, err)
	}
	events, r := readRecovered(t, path)
	if len(events) != 4+7 || r.Footer().StopReason != tracepb.Footer_SIGNAL {
		t.Errorf("%d events, footer %v", len(events), r.Footer())
	}
}

// TestCompactDamaged: a damaged frame ends the copy there and is reported
// with its offset; the frames before it are kept.
func TestCompactDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.0.trc")
	writeRun(t, path, testParts(), true, 4, Prefix{}, &tracepb.Footer{})
	data := readFile(t, path)
	data[len(data)/2] ^= 0xff
	os.WriteFile(path, data, 0o644)
	_, err := Compact(path)
	var ce *traceformat.CorruptError
	if !errors.As(err, &ce) || ce.Offset <= 0 {
		t.Fatalf("Compact: %v; want a CorruptError with its offset", err)
	}
	r, err := traceformat.NewReader(bytes.NewReader(readFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err = r.ReadEvent(); err != nil {
			break
		}
		n++
	}
	if n == 0 || errors.Is(err, io.EOF) || !errors.Is(err, traceformat.ErrTruncated) {
		t.Errorf("%d events before %v; want some, then the end of the intact part", n, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzCompact: compacting arbitrary bytes behind a deferred trace's
// preamble never panics.
func FuzzCompact(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.trc")
	writeRun(f, path, testParts()[:3], true, 4, Prefix{}, &tracepb.Footer{})
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := traceformat.NewFrameScanner(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if fr, err := sc.Next(); err == nil && fr.Kind == traceformat.KindHeader {
			var h tracepb.Header
			if fr.Unmarshal(&h) == nil {
				compact(sc, io.Discard, &h)
			}
		}
	})
}

// TestVecFile: a deferred trace written through writev is the one written
// with copies.
func TestVecFile(t *testing.T) {
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		path := filepath.Join(dir, "v.trc")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		var out io.Writer = f
		if i == 1 {
			out = VecFile{f}
		}
		opts := WriterOptions(false)
		opts.Deferred = true
		w, err := traceformat.NewWriter(out, &tracepb.Header{WorldSize: 1}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range testParts() {
			if p.recs != nil {
				if err := w.WriteRecords((&Prefix{Thread: p.tid}).Append(nil), p.recs); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.Close(&tracepb.Footer{})
		f.Close()
		files[i] = readFile(t, path)
	}
	if !bytes.Equal(files[0], files[1]) || len(files[0]) < 50000 {
		t.Errorf("writev: %d bytes, copies: %d", len(files[1]), len(files[0]))
	}
}
