package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/klauspost/compress/zstd"
)

// cpuNs is the process's CPU time (user + system) in ns: benchmarks report
// it per event beside the wall time, which a loaded machine distorts more.
func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// rec appends one record in the C layout: attrs are the attribute values
// in record order, byte counts as uint64, which rec writes as u32 unless
// one does not fit (RawWide); the exit t1 becomes the duration, with
// RawLong when it does not fit 32 bits (t1 < t0 included), as dt_wrap.h
// writes them.
func rec(p []byte, fn, attr uint16, site uint32, t0, t1 uint64, attrs ...any) []byte {
	// The static values come first, one per static column present.
	bytesAt := map[int]bool{}
	k := 0
	for _, c := range staticCols {
		if traceformat.Attr(attr)&c.Attr != 0 {
			if c.Attr&byteAttrs != 0 {
				bytesAt[k] = true
			}
			k++
		}
	}
	for i := range bytesAt {
		if attrs[i].(uint64) > math.MaxUint32 {
			attr |= RawWide
		}
	}
	dur := t1 - t0
	if dur > math.MaxUint32 {
		attr |= RawLong
	}
	p = binary.LittleEndian.AppendUint16(p, fn)
	p = binary.LittleEndian.AppendUint16(p, attr)
	p = binary.LittleEndian.AppendUint32(p, site)
	p = binary.LittleEndian.AppendUint64(p, t0)
	p = binary.LittleEndian.AppendUint32(p, uint32(dur))
	if attr&RawLong != 0 {
		p = binary.LittleEndian.AppendUint32(p, uint32(dur>>32))
	}
	for i, a := range attrs {
		if bytesAt[i] && attr&RawWide == 0 {
			a = uint32(a.(uint64))
		}
		switch v := a.(type) {
		case uint32:
			p = binary.LittleEndian.AppendUint32(p, v)
		case int32:
			p = binary.LittleEndian.AppendUint32(p, uint32(v))
		case uint64:
			p = binary.LittleEndian.AppendUint64(p, v)
		}
	}
	return p
}

// fourCalls are the records TestDecode checks field by field: a send, a
// call with two requests, their statuses and a flag, an MPI_Pcontrol, and
// a call without attributes whose exit precedes its entry (clamped).
func fourCalls() []byte {
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	var p []byte
	p = rec(p, 5, A(traceformat.AttrComm|traceformat.AttrSend|traceformat.AttrSendBytes), 1, 1000, 1100, uint32(0), int32(1), int32(7), uint64(16))
	p = rec(p, 6, A(traceformat.AttrReqs|traceformat.AttrStatus|traceformat.AttrFlag), 2, 1200, 1300,
		uint32(2), uint64(0xabc), uint64(0xdef), int32(3), int32(9), int32(-4), int32(-4), uint32(1))
	p = rec(p, 7, A(traceformat.AttrPcontrol), 3, 1400, 1400, int32(100), uint64(5))
	return rec(p, 8, 0, 0, 1500, 1450)
}

func TestDecode(t *testing.T) {
	p := fourCalls()
	var b traceformat.Builder
	conv := &Converter{}
	if err := Decode(&b, p, 3, conv); err != nil {
		t.Fatal(err)
	}
	var c traceformat.Cursor
	var e traceformat.Event
	var got []traceformat.Event
	for bt := b.Batch(); c.Next(bt, &e); {
		e.Reqs = append([]uint64(nil), e.Reqs...)
		e.Status = append([]traceformat.Status(nil), e.Status...)
		got = append(got, e)
	}
	if len(got) != 4 || b.Thread != 3 {
		t.Fatalf("%d events on thread %d", len(got), b.Thread)
	}
	if e := got[0]; e.Func != 5 || e.Entry != 1000 || e.Exit != 1100 || e.SendPeer != 1 || e.SendTag != 7 || e.SendBytes != 16 {
		t.Errorf("send %+v", e)
	}
	if e := got[1]; len(e.Reqs) != 2 || e.Reqs[1] != 0xdef || e.Status[0] != (traceformat.Status{Source: 3, Tag: 9}) || !e.Flag || e.Entry != 1200 {
		t.Errorf("waitall %+v", e)
	}
	if e := got[2]; e.PcLevel != 100 || e.PcArg != 5 {
		t.Errorf("pcontrol %+v", e)
	}
	if e := got[3]; e.Exit != e.Entry {
		t.Errorf("clamped %+v", e)
	}
	if err := refDecode(&traceformat.Builder{}, p[:len(p)-3], 0, conv); err != ErrTruncated {
		t.Errorf("truncated buffer: %v", err)
	}
}

// TestDecodeEscapes checks records whose values do not fit their usual 32
// bits: a duration of more than 2^32 ticks (RawLong, a 24-byte header),
// byte counts above 4 GiB (RawWide: a send count alone, a receive count
// alone, both, and a send count that fits with a receive count that does
// not), an exit before the entry; each between repeats of an ordinary
// call of the same site, so that Decode's per-site cache and run loop
// meet them. Values must come back exact, and the events as the
// reference decoder's.
func TestDecodeEscapes(t *testing.T) {
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	send := A(traceformat.AttrComm | traceformat.AttrSend | traceformat.AttrSendBytes)
	both := A(traceformat.AttrComm | traceformat.AttrSendBytes | traceformat.AttrRecvBytes)
	recv := A(traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrStatus)
	const big = 5<<30 + 3 // > 4 GiB
	const long = 1<<32 + 7
	type want struct {
		entry, exit int64
		sb, rb      uint64
		size        int // record bytes
	}
	var p []byte
	var wants []want
	add := func(fn, attr uint16, t0, t1 uint64, w want, attrs ...any) {
		n := len(p)
		p = rec(p, fn, attr, uint32(fn), t0, t1, attrs...)
		if len(p)-n != w.size {
			t.Errorf("record %d: %d bytes, want %d", len(wants), len(p)-n, w.size)
		}
		w.entry, w.exit = int64(t0), int64(max(t1, t0))
		wants = append(wants, w)
	}
	tick := uint64(1 << 40)
	for i := range 3 {
		add(1, send, tick, tick+100, want{sb: 8, size: 36}, uint32(0), int32(1), int32(0), uint64(8))
		tick += 200
		switch i {
		case 0:
			add(1, send, tick, tick+long, want{sb: 8, size: 40}, uint32(0), int32(1), int32(0), uint64(8))
			tick += long + 100
			add(1, send, tick, tick+50, want{sb: big, size: 40}, uint32(0), int32(1), int32(0), uint64(big))
		case 1:
			add(2, both, tick, tick+long, want{sb: big, rb: big + 1, size: 44}, uint32(0), uint64(big), uint64(big+1))
			tick += long + 100
			add(2, both, tick, tick+10, want{sb: 4, rb: big, size: 40}, uint32(0), uint64(4), uint64(big))
			add(2, both, tick+20, tick+30, want{sb: 4, rb: 5, size: 32}, uint32(0), uint64(4), uint64(5))
			tick += 100
		case 2:
			add(3, recv, tick, tick+20, want{rb: big, size: 48}, uint32(0), int32(1), int32(0), uint64(big), int32(1), int32(0))
			add(3, recv, tick+40, tick+30, want{rb: 6, size: 48}, uint32(0), int32(1), int32(0), uint64(6), int32(1), int32(0))
			tick += 100
		}
	}
	if a := le.Uint16(p[36+2:]); a&RawLong == 0 || a&RawWide != 0 {
		t.Errorf("long record's attr %#x", a)
	}
	for _, conv := range []*Converter{{}, {TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}} {
		var b1, b2 traceformat.Builder
		if err := refDecode(&b1, p, 1, conv); err != nil {
			t.Fatal(err)
		}
		if err := Decode(&b2, p, 1, conv); err != nil {
			t.Fatal(err)
		}
		sameBatches(t, "escapes", &b1, &b2)
		var c traceformat.Cursor
		var e traceformat.Event
		i := 0
		for bt := b2.Batch(); c.Next(bt, &e); i++ {
			if i >= len(wants) {
				t.Fatalf("more than %d events", len(wants))
			}
			w := wants[i]
			entry, exit := conv.Ns(uint64(w.entry)), conv.Ns(uint64(w.exit))
			if e.Entry != entry || e.Exit != max(exit, entry) || e.SendBytes != w.sb || e.RecvBytes != w.rb || e.Attr&^traceformat.AttrKnown != 0 {
				t.Errorf("event %d: %+v, want %+v", i, e, w)
			}
		}
		if i != len(wants) {
			t.Errorf("%d events, want %d", i, len(wants))
		}
	}
	if got := After(p, &Converter{}, wants[1].entry); len(got) != len(p)-36-40 {
		t.Errorf("After the long record: %d bytes left of %d", len(got), len(p))
	}
}

func TestConverterSkew(t *testing.T) {
	c := Converter{TSC: true, NsPerTick: 0.5, Raw0: 1000, Ns0: 10_000, SkewOff: 2_500_000_000, SkewPPM: 100}
	if got, want := c.Ns(1000+2e9), int64(10_000+1e9+2_500_000_000+100_000); got < want-1 || got > want+1 {
		t.Errorf("Ns = %d", got)
	}
}

// cheapCalls is one buffer of the tight-loop benchmark's records
// (MPI_Comm_rank on WORLD from one call site, ~60 ns apart).
func cheapCalls(n int) []byte { return cheapCallsAt(n, 1<<40) }

// cheapCallsAt is cheapCalls with the first call entered at raw time t.
func cheapCallsAt(n int, t uint64) []byte {
	var p []byte
	for i := 0; i < n; i++ {
		p = rec(p, 42, uint16(traceformat.AttrComm), 3, t, t+25, uint32(0))
		t += 150 + uint64(i%7)
	}
	return p
}

// BenchmarkDecodeEncode is the Go side's cost per event: decoding C
// records, encoding the batch and compressing it (zstd fastest, as the
// tracer writes). Under core binding this cost lands on the program's core.
// Shaped is the tracer's path (Decode).
func BenchmarkDecodeEncode(b *testing.B) { benchDecodeEncode(b, cheapCalls(1<<15)) }

func benchDecodeEncode(b *testing.B, p []byte) {
	for _, v := range []struct {
		name string
		dec  func(*traceformat.Builder, []byte, uint32, *Converter) error
	}{{"Shaped", Decode}} {
		b.Run(v.name, func(b *testing.B) {
			conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
			w, err := traceformat.NewWriter(io.Discard, &tracepb.Header{WorldSize: 1}, traceformat.WriterOptions{Level: zstd.SpeedFastest})
			if err != nil {
				b.Fatal(err)
			}
			var batch traceformat.Builder
			v.dec(&batch, p, 0, conv)
			n := batch.Len()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch.Reset()
				if err := v.dec(&batch, p, 0, conv); err != nil {
					b.Fatal(err)
				}
				if err := w.WriteBatch(&batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(float64(w.Offset())/float64(b.N*n), "B/event")
		})
	}
}

// BenchmarkDecode is Decode alone (the Go side's cost before the writer
// encodes and compresses the batch), on 128 KB buffers of the tight loop's
// records, the halo mix and the ping-pong.
func BenchmarkDecode(b *testing.B) {
	for _, src := range []struct {
		name string
		p    []byte
	}{{"Cheap", cheapCalls(1 << 16)}, {"Halo", haloCalls(1 << 16)}, {"Pingpong", pingpongCalls(1 << 16)}} {
		bufs := cut128K(src.p)
		b.Run(src.name, func(b *testing.B) {
			conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
			var batch traceformat.Builder
			n := 0
			b.ReportAllocs()
			cpu0 := cpuNs()
			for i := 0; i < b.N; i++ {
				for _, p := range bufs {
					batch.Reset()
					if err := Decode(&batch, p, 0, conv); err != nil {
						b.Fatal(err)
					}
					n += batch.Len()
				}
			}
			b.ReportMetric(float64(cpuNs()-cpu0)/float64(n), "cpu-ns/event")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// haloCalls is one buffer of an iterative halo exchange's records, as
// traceformat's haloEvents: per step two MPI_Irecv, two MPI_Isend and an
// MPI_Waitall of the four after ~50 µs of compute, and an MPI_Allreduce
// every 10 steps, with times jittered at tick resolution.
func haloCalls(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	var p []byte
	t := uint64(1 << 40)
	req := uint64(1)
	call := func(fn, attr uint16, site uint32, dur uint64, attrs ...any) {
		t += 100 + rng.Uint64N(150)
		p = rec(p, fn, attr, site, t, t+dur, attrs...)
		t += dur
	}
	for step, k := 0, 0; k < n; step++ {
		t += 125_000 + rng.Uint64N(10_000)
		for i, peer := range []int32{1, 3} {
			call(1, A(traceformat.AttrComm|traceformat.AttrRecv|traceformat.AttrRecvBytes|traceformat.AttrReqs), 1+uint32(i),
				470+rng.Uint64N(230), uint32(0), peer, int32(10), uint64(8192), uint32(1), req+uint64(i))
		}
		for i, peer := range []int32{1, 3} {
			call(2, A(traceformat.AttrComm|traceformat.AttrSend|traceformat.AttrSendBytes|traceformat.AttrReqs), 3+uint32(i),
				900+rng.Uint64N(400), uint32(0), peer, int32(10), uint64(8192), uint32(1), req+2+uint64(i))
		}
		call(3, A(traceformat.AttrReqs|traceformat.AttrStatus), 5, 2000+rng.Uint64N(31_000), uint32(4), req, req+1, req+2, req+3,
			int32(1), int32(10), int32(3), int32(10), int32(-32766), int32(-32766), int32(-32766), int32(-32766))
		req += 4
		k += 5
		if step%10 == 9 {
			call(4, A(traceformat.AttrComm|traceformat.AttrSendBytes|traceformat.AttrRecvBytes), 6, 7800+rng.Uint64N(39_000),
				uint32(0), uint64(8), uint64(8))
			k++
		}
	}
	return p
}

// pingpongCalls is one buffer of rank 0's records in the ping-pong of
// BenchmarkOverhead (a 0-byte MPI_Send then MPI_Recv with
// MPI_STATUS_IGNORE, for which the tracer records its own status), with
// times spread as in a traced run on a loaded machine (ns, 10th–90th
// percentile): send gap 630–920, duration 46–92; receive gap 85–150,
// duration 580–880 (waiting for the reply); and one receive in a thousand
// delayed by the partner's descheduling.
func pingpongCalls(n int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	send := A(traceformat.AttrComm | traceformat.AttrSend | traceformat.AttrSendBytes)
	recv := A(traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrRecvBytes | traceformat.AttrStatus)
	// around returns a time in ticks (0.385 ns, as the benchmarks'
	// Converter) of about lo to hi ns, peaked in the middle.
	around := func(lo, hi uint64) uint64 {
		lo, hi = lo*1000/385, hi*1000/385
		return lo + rng.Uint64N((hi-lo)/2+1) + rng.Uint64N((hi-lo)/2+1)
	}
	var p []byte
	t := uint64(1 << 40)
	for i := 0; i < n; i += 2 {
		t += around(630, 920)
		d := around(46, 92)
		p = rec(p, 20, send, 1, t, t+d, uint32(0), int32(1), int32(0), uint64(0))
		t += d + around(85, 150)
		d = around(580, 880)
		if rng.Uint64N(1000) == 0 {
			d += around(5_000, 4_000_000)
		}
		p = rec(p, 21, recv, 2, t, t+d, uint32(0), int32(1), int32(0), uint64(0), int32(1), int32(0))
		t += d
	}
	return p
}

// BenchmarkDecodeEncodePingpong is BenchmarkDecodeEncode on the ping-pong of
// BenchmarkOverhead, the records whose encoding the per-call goal is about.
func BenchmarkDecodeEncodePingpong(b *testing.B) { benchDecodeEncode(b, pingpongCalls(1<<15)) }

// BenchmarkDecodeEncodeHalo is BenchmarkDecodeEncode on the halo mix,
// whose records carry attributes and whose times compress less.
func BenchmarkDecodeEncodeHalo(b *testing.B) { benchDecodeEncode(b, haloCalls(1<<15)) }

// TestDecodeFolded: a record standing for a folded run of unsuccessful
// polls (CALLS) decodes, with Decode and the reference decoder alike, to one event
// with Calls = the run's length and the header's times (entry = last exit
// minus the run's time in MPI), between ordinary calls; cut anywhere
// inside it, the buffer is refused as truncated.
func TestDecodeFolded(t *testing.T) {
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	test := A(traceformat.AttrReqs | traceformat.AttrFlag | traceformat.AttrCalls)
	probe := A(traceformat.AttrComm | traceformat.AttrRecv | traceformat.AttrFlag | traceformat.AttrCalls)
	var p []byte
	p = rec(p, 1, A(traceformat.AttrComm|traceformat.AttrSend|traceformat.AttrSendBytes|traceformat.AttrReqs), 1, 1000, 1100,
		uint32(0), int32(1), int32(7), uint64(16), uint32(1), uint64(0x77))
	// 1000 MPI_Test calls on request 0x77 over 10 ms, 3 ms of it in MPI:
	// the last exits at 11_001_100.
	p = rec(p, 2, test, 2, 8_001_100, 11_001_100, uint32(1), uint64(0x77), uint32(0), uint32(1000))
	start := len(p)
	p = rec(p, 3, probe, 3, 11_002_000, 11_002_500, uint32(0), int32(-1), int32(5), uint32(0), uint32(2))
	end := len(p)
	p = rec(p, 2, A(traceformat.AttrReqs|traceformat.AttrFlag), 2, 11_003_000, 11_003_400, uint32(1), uint64(0x77), uint32(1))
	conv := &Converter{}
	var b1, b2 traceformat.Builder
	if err := refDecode(&b1, p, 0, conv); err != nil {
		t.Fatal(err)
	}
	if err := Decode(&b2, p, 0, conv); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"MPI 1 [1000,1100] calls 0 reqs [119]",
		"MPI 2 [8001100,11001100] calls 1000 flag false reqs [119]",
		"MPI 3 [11002000,11002500] calls 2 flag false recv -1/5",
		"MPI 2 [11003000,11003400] calls 0 flag true reqs [119]",
	}
	for name, b := range map[string]*traceformat.Builder{"reference": &b1, "Decode": &b2} {
		var c traceformat.Cursor
		var e traceformat.Event
		var got []string
		for bt := b.Batch(); c.Next(bt, &e); {
			s := fmt.Sprintf("MPI %d [%d,%d] calls %d", e.Func, e.Entry, e.Exit, e.Calls)
			if e.Attr&traceformat.AttrFlag != 0 {
				s += fmt.Sprintf(" flag %v", e.Flag)
			}
			if e.Attr&traceformat.AttrReqs != 0 {
				s += fmt.Sprintf(" reqs %v", e.Reqs)
			}
			if e.Attr&traceformat.AttrRecv != 0 {
				s += fmt.Sprintf(" recv %d/%d", e.RecvPeer, e.RecvTag)
			}
			got = append(got, s)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	for n := start + 1; n < end; n++ {
		if err := refDecode(&traceformat.Builder{}, p[:n], 0, conv); err != ErrTruncated {
			t.Errorf("cut at %d of the folded record: reference %v", n-start, err)
		}
		if err := Decode(&traceformat.Builder{}, p[:n], 0, conv); err != ErrTruncated {
			t.Errorf("cut at %d of the folded record: Decode %v", n-start, err)
		}
	}
}

// TestDecodeInnerGaps: a folded run's summed inner gaps (INNER_GAPS, raw
// clock ticks in the record) decode to ns such that the run's first call
// entered at the event's entry minus them, with the TSC conversion; a
// folded query (MPI_Comm_rank's communicator only) decodes the same way
// after an ordinary call of its call site; a value beyond the reading
// itself is clamped; cut anywhere inside the record, the buffer is refused.
func TestDecodeInnerGaps(t *testing.T) {
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	fold := A(traceformat.AttrComm | traceformat.AttrCalls | traceformat.AttrInnerGaps)
	// 0.5 ns per tick from raw 1e6 at 5000 ns: exact in float64.
	conv := &Converter{TSC: true, NsPerTick: 0.5, Raw0: 1_000_000, Ns0: 5000}
	var p []byte
	p = rec(p, 9, A(traceformat.AttrComm), 4, 1_000_000, 1_000_100, uint32(0))
	// 1000 MPI_Comm_rank: 120 000 ticks in MPI, 2 000 000 between them;
	// the last exits at raw 3_200_100, so the first entered at 1_080_100.
	start := len(p)
	p = rec(p, 9, fold, 4, 3_080_100, 3_200_100, uint32(0), uint32(1000), uint64(2_000_000))
	end := len(p)
	p = rec(p, 9, fold, 4, 3_300_000, 3_300_100, uint32(0), uint32(3), uint64(1<<62))
	for name, dec := range map[string]func(*traceformat.Builder, []byte, uint32, *Converter) error{"reference": refDecode, "Decode": Decode} {
		var b traceformat.Builder
		if err := dec(&b, p, 0, conv); err != nil {
			t.Fatal(err)
		}
		var c traceformat.Cursor
		var e traceformat.Event
		var got []string
		for bt := b.Batch(); c.Next(bt, &e); {
			got = append(got, fmt.Sprintf("[%d,%d] calls %d inner %d", e.Entry, e.Exit, e.Calls, e.InnerGaps))
		}
		want := []string{
			"[5000,5050] calls 0 inner 0",
			// entry 5000 + 2_080_100/2, exit + 60 000, first entry at
			// 5000 + 80 100/2 = 45 050.
			"[1045050,1105050] calls 1000 inner 1000000",
			// clamped to the reading: the first entry at raw 0, ns 5000 − 500 000.
			"[1155000,1155050] calls 3 inner 1650000",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	for n := start + 1; n < end; n++ {
		if err := Decode(&traceformat.Builder{}, p[:n], 0, conv); err != ErrTruncated {
			t.Errorf("cut at %d of the folded record: Decode %v", n-start, err)
		}
	}
}

// TestDecodeMatchesReference checks that Decode gives the events of the
// reference decoder and a batch that encodes to the same bytes.
func TestDecodeMatchesReference(t *testing.T) {
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	odd := fourCalls()
	odd = rec(odd, 5, A(traceformat.AttrComm|traceformat.AttrSend|traceformat.AttrSendBytes), 1, 1600, 1700, uint32(0), int32(2), int32(7), uint64(16))
	odd = rec(odd, 5, A(traceformat.AttrComm|traceformat.AttrSend|traceformat.AttrSendBytes), 1, 1800, 1900, uint32(0), int32(1), int32(7), uint64(16))
	odd = rec(odd, 9, A(traceformat.AttrComm|traceformat.AttrRoot|traceformat.AttrRecv|traceformat.AttrRecvBytes|traceformat.AttrNewComm), 70000, 2000, 2100,
		uint32(1), int32(4), int32(-1), uint64(1<<40), int32(3), uint32(2))
	odd = rec(odd, 42, A(traceformat.AttrComm), 3, 2200, 2250, uint32(0))
	odd = rec(odd, 11, A(traceformat.AttrReqs|traceformat.AttrFlag|traceformat.AttrCalls), 4, 2300, 5300,
		uint32(1), uint64(0xabc), uint32(0), uint32(1000))
	odd = rec(odd, 12, A(traceformat.AttrComm|traceformat.AttrRecv|traceformat.AttrFlag|traceformat.AttrCalls), 5, 6000, 6100,
		uint32(0), int32(-1), int32(5), uint32(0), uint32(2))
	for name, p := range map[string][]byte{"cheap": cheapCalls(5000), "halo": haloCalls(5000), "odd": odd} {
		conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
		if name == "odd" {
			conv = &Converter{}
		}
		var b1, b2 traceformat.Builder
		if err := refDecode(&b1, p, 7, conv); err != nil {
			t.Fatal(err)
		}
		b2.AppendStatic(&traceformat.Event{}) // storage from an earlier use …
		b2.Reset()                            // … reset as the tracer does
		if err := Decode(&b2, p, 7, conv); err != nil {
			t.Fatal(err)
		}
		sameBatches(t, name, &b1, &b2)
		if b2.Thread != 7 {
			t.Fatalf("%s: thread %d", name, b2.Thread)
		}
		if err := Decode(&traceformat.Builder{}, p[:len(p)-3], 0, conv); err != ErrTruncated {
			t.Errorf("%s: truncated buffer: %v", name, err)
		}
	}
}

// mixedCalls is a random mix of a few calls in runs and alternations, for
// Decode's run loop and per-site cache: runs of a communicator-only
// call whose communicator changes inside the run, of a call without
// attributes and of one with several static attributes; call sites that
// share a cache slot (3 and 67); a site making two different calls; and
// calls with per-call attributes between them.
func mixedCalls(rng *rand.Rand, n int, t uint64) []byte {
	A := func(a traceformat.Attr) uint16 { return uint16(a) }
	var p []byte
	for i := 0; i < n; {
		t += uint64(rng.IntN(300))
		d := uint64(rng.IntN(80))
		if rng.IntN(20) == 0 {
			d = 0
		}
		run := 1 + rng.IntN(6)
		switch k := rng.IntN(8); k {
		case 0, 1:
			comm := uint32(rng.IntN(2))
			for j := 0; j < run; j++ {
				if rng.IntN(4) == 0 {
					comm ^= 1
				}
				p = rec(p, 42, A(traceformat.AttrComm), 3+64*uint32(k), t, t+d, comm)
				t += d + 50
			}
		case 2:
			for j := 0; j < run; j++ {
				p = rec(p, 8, 0, 0, t, t+d)
				t += d + 50
			}
		case 3:
			peer := int32(rng.IntN(2))
			for j := 0; j < run; j++ {
				p = rec(p, 5, A(traceformat.AttrComm|traceformat.AttrSend|traceformat.AttrSendBytes), 1, t, t+d,
					uint32(0), peer, int32(7), uint64(16<<rng.IntN(2)))
				t += d + 50
			}
		case 4: // site 1 making another call
			p = rec(p, 6, A(traceformat.AttrComm), 1, t, t+d, uint32(0))
		case 5:
			p = rec(p, 1, A(traceformat.AttrComm|traceformat.AttrRecv|traceformat.AttrReqs), 2, t, t+d,
				uint32(0), int32(1), int32(10), uint32(1), uint64(i))
		case 6:
			p = rec(p, 3, A(traceformat.AttrReqs|traceformat.AttrStatus), 5, t, t-5, uint32(2), uint64(i), uint64(i+1),
				int32(1), int32(10), int32(-32766), int32(-32766))
		case 7: // a folded run of unsuccessful tests, ending at t+d
			if rng.IntN(2) == 0 { // as traced before format 2.1
				p = rec(p, 4, A(traceformat.AttrReqs|traceformat.AttrFlag|traceformat.AttrCalls), 6, t, t+d,
					uint32(1), uint64(i), uint32(0), uint32(2+rng.IntN(5000)))
				break
			}
			p = rec(p, 4, A(traceformat.AttrReqs|traceformat.AttrFlag|traceformat.AttrCalls|traceformat.AttrInnerGaps), 6, t, t+d,
				uint32(1), uint64(i), uint32(0), uint32(2+rng.IntN(5000)), uint64(rng.IntN(1<<20)))
		}
		t += d
		i += run
	}
	return p
}

// TestDecodeShapedMixed checks Decode against the reference decoder on mixedCalls,
// with buffers decoded one after the other into one batch (a run or a call
// site seen in the previous buffer is looked up again), with and without
// the TSC conversion.
func TestDecodeShapedMixed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 50; round++ {
		conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
		if round%2 == 1 {
			conv = &Converter{SkewOff: 7, SkewPPM: 3}
		}
		var b1, b2 traceformat.Builder
		b2.AppendStatic(&traceformat.Event{})
		b2.Reset()
		tm := uint64(1 << 40)
		for part := 0; part < 1+round%3; part++ {
			p := mixedCalls(rng, 1+rng.IntN(400), tm)
			tm += 1 << 30
			if err := refDecode(&b1, p, 7, conv); err != nil {
				t.Fatal(err)
			}
			if err := Decode(&b2, p, 7, conv); err != nil {
				t.Fatal(err)
			}
		}
		sameBatches(t, fmt.Sprintf("round %d", round), &b1, &b2)
	}
}

// sameBatches fails t unless the shaped batch b2 (Decode's) holds the
// events of b1 (refDecode's), one by one, and encodes to the same bytes;
// what names the case in failures.
func sameBatches(t *testing.T, what string, b1, b2 *traceformat.Builder) {
	t.Helper()
	var c1, c2 traceformat.Cursor
	var e1, e2 traceformat.Event
	n := 0
	bt1, bt2 := b1.Batch(), b2.Batch()
	for c1.Next(bt1, &e1) {
		if !c2.Next(bt2, &e2) {
			t.Fatalf("%s: shaped batch ends at %d", what, n)
		}
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("%s: event %d: %+v, shaped %+v", what, n, e1, e2)
		}
		n++
	}
	if c2.Next(bt2, &e2) {
		t.Fatalf("%s: shaped batch longer", what)
	}
	var o1, o2 bytes.Buffer
	for _, x := range []struct {
		b *traceformat.Builder
		o *bytes.Buffer
	}{{b1, &o1}, {b2, &o2}} {
		w, _ := traceformat.NewWriter(x.o, &tracepb.Header{WorldSize: 1}, traceformat.WriterOptions{Raw: true})
		if err := w.WriteBatch(x.b); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(o1.Bytes(), o2.Bytes()) {
		t.Errorf("%s: encodings differ (%d, %d bytes)", what, o1.Len(), o2.Len())
	}
}

// cut128K cuts p into buffers of whole records of at most 128 KB, the
// tracer's buffer size.
func cut128K(p []byte) [][]byte {
	var out [][]byte
	for off := 0; off < len(p); {
		end := off
		for end < len(p) {
			h, _, need := record(p, end)
			if end+len(h)+need-off > 128<<10 {
				break
			}
			end += len(h) + need
		}
		out = append(out, p[off:end])
		off = end
	}
	return out
}

// BenchmarkDecodeEncode128K is the Go side's cost per event as the tracer
// pays it: Decode, encoding and compression of 128 KB buffers (each
// a frame, so per-frame costs such as zstd's literal tables count), for the
// cheap stream, the halo mix and the ping-pong, at the tracer's zstd level
// (SpeedFastest), the same without entropy coding (DT_COMPRESS=fast) and
// the Writer's default. cold-cpu-ns/event is one pass with the caches
// evicted before each buffer.
func BenchmarkDecodeEncode128K(b *testing.B) {
	for _, src := range []struct {
		name string
		p    []byte
	}{{"Cheap", cheapCalls(1 << 16)}, {"Halo", haloCalls(1 << 16)}, {"Pingpong", pingpongCalls(1 << 16)}} {
		bufs := cut128K(src.p)
		for _, o := range []struct {
			name string
			opts traceformat.WriterOptions
		}{
			{"fastest", traceformat.WriterOptions{Level: zstd.SpeedFastest}},
			{"fastest-rawlit", traceformat.WriterOptions{Level: zstd.SpeedFastest, RawLiterals: true}},
			{"default", traceformat.WriterOptions{Level: zstd.SpeedDefault}},
		} {
			b.Run(src.name+"/"+o.name, func(b *testing.B) {
				conv := &Converter{TSC: true, NsPerTick: 0.385, Raw0: 1 << 40}
				w, err := traceformat.NewWriter(io.Discard, &tracepb.Header{WorldSize: 1}, o.opts)
				if err != nil {
					b.Fatal(err)
				}
				off0, n := w.Offset(), 0
				var batch traceformat.Builder
				b.ReportAllocs()
				cpu0 := cpuNs()
				for i := 0; i < b.N; i++ {
					for _, p := range bufs {
						batch.Reset()
						if err := Decode(&batch, p, 0, conv); err != nil {
							b.Fatal(err)
						}
						if err := w.WriteBatch(&batch); err != nil {
							b.Fatal(err)
						}
						n += batch.Len()
					}
				}
				b.ReportMetric(float64(cpuNs()-cpu0)/float64(n), "cpu-ns/event")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
				b.ReportMetric(float64(w.Offset()-off0)/float64(n), "B/event")
				// The same with the caches cold, as the encoder finds them
				// after the program ran on its core: 8 MB written before
				// each buffer (outside the measured time).
				evict := make([]byte, 8<<20)
				var cold int64
				for _, p := range bufs {
					for j := 0; j < len(evict); j += 64 {
						evict[j]++
					}
					c0 := cpuNs()
					batch.Reset()
					Decode(&batch, p, 0, conv)
					w.WriteBatch(&batch)
					cold += cpuNs() - c0
				}
				b.ReportMetric(float64(cold)/float64(n/b.N), "cold-cpu-ns/event")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// refDecode is a reference decoder of the records, written from
// traceformat's column table alone: each record's attribute values are
// read column by column into an Event, which is appended whole. Decode
// must give the same events and encode to the same bytes.
func refDecode(b *traceformat.Builder, p []byte, tid uint32, conv *Converter) error {
	cols := traceformat.Columns()
	off := 0
	for off+HeaderSize <= len(p) {
		a := le.Uint16(p[off+2:])
		hl := HeaderSize
		dur := uint64(le.Uint32(p[off+16:]))
		if a&RawLong != 0 {
			hl += 4
			if off+hl > len(p) {
				return ErrTruncated
			}
			dur |= uint64(le.Uint32(p[off+20:])) << 32
		}
		h := p[off : off+hl]
		e := traceformat.Event{Thread: tid, Func: uint32(le.Uint16(h)), Attr: traceformat.Attr(a) & traceformat.AttrKnown, Site: le.Uint32(h[4:])}
		e.Entry, e.Exit = conv.Ns(le.Uint64(h[8:])), conv.Ns(le.Uint64(h[8:])+dur)
		e.Exit = max(e.Exit, e.Entry)
		q := p[off+hl:]
		k, nreqs := 0, -1
		read := func(c *traceformat.Column) (uint64, bool) {
			n := c.RecordSize
			if a&RawWide != 0 && c.Attr&byteAttrs != 0 {
				n = 8
			}
			if k+n > len(q) {
				return 0, false
			}
			v := value(c, q[k:], n)
			k += n
			return v, true
		}
		for i := 0; i < len(cols); i++ {
			c := &cols[i]
			if c.Form != traceformat.FormStatic && c.Form != traceformat.FormPerCall || e.Attr&c.Attr == 0 {
				continue
			}
			switch c.Count {
			case traceformat.CountOne:
				v, ok := read(c)
				if !ok {
					return ErrTruncated
				}
				if c.Field == 18 { // nreqs
					nreqs = int(v)
				} else {
					c.SetEvent(&e, v)
				}
			case traceformat.CountReqs:
				for range nreqs {
					v, ok := read(c)
					if !ok {
						return ErrTruncated
					}
					e.Reqs = append(e.Reqs, v)
				}
			case traceformat.CountStatus: // source, tag pairs
				n := 1
				if e.Attr&traceformat.AttrReqs != 0 {
					n = nreqs
				}
				for range n {
					src, ok1 := read(c)
					tag, ok2 := read(&cols[i+1])
					if !ok1 || !ok2 {
						return ErrTruncated
					}
					e.Status = append(e.Status, traceformat.Status{Source: int32(src), Tag: int32(tag)})
				}
				i++
			}
		}
		if e.Attr&traceformat.AttrReqs != 0 && e.Reqs == nil {
			e.Reqs = []uint64{}
		}
		if e.Attr&traceformat.AttrInnerGaps != 0 {
			// Raw ticks in the record: the run's first entry, converted,
			// is the event's entry minus them.
			r0 := le.Uint64(h[8:])
			raw := min(uint64(e.InnerGaps), r0)
			e.InnerGaps = max(0, e.Entry-conv.Ns(r0-raw))
		}
		b.Append(&e)
		off += hl + k
	}
	if off != len(p) {
		return ErrTruncated
	}
	return nil
}
