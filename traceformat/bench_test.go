package traceformat

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// haloEvents makes a realistic event mix for one rank of an iterative 1-D
// halo exchange: per step two MPI_Irecv, two MPI_Isend and an MPI_Waitall
// after ~50 µs of jittered compute, and an 8-byte MPI_Allreduce every 10
// steps. Durations and gaps jitter at ns resolution the way measured MPI
// calls do, so the entropy of the timestamps is honest.
func haloEvents(n int) []Event {
	rng := rand.New(rand.NewPCG(1, 2))
	evs := make([]Event, 0, n)
	t := int64(1_000_000_000)
	req := uint64(1)
	jit := func(base, spread int64) int64 { return base + rng.Int64N(spread) }
	call := func(fn, site uint32, dur int64, e Event) {
		t += jit(40, 60) // the few instructions between two calls
		e.Func, e.Site, e.Entry, e.Exit = fn, site, t, t+dur
		t = e.Exit
		evs = append(evs, e)
	}
	for step := 0; len(evs) < n; step++ {
		t += jit(48_000, 4_000) // compute
		var reqs [4]uint64
		for i, peer := range []int32{1, 3} {
			reqs[i] = req
			call(1, 1+uint32(i), jit(180, 90), Event{Attr: AttrComm | AttrRecv | AttrRecvBytes | AttrReqs,
				RecvPeer: peer, RecvTag: 10, RecvBytes: 8192, Reqs: []uint64{req}})
			req++
		}
		for i, peer := range []int32{1, 3} {
			reqs[2+i] = req
			call(2, 3+uint32(i), jit(350, 150), Event{Attr: AttrComm | AttrSend | AttrSendBytes | AttrReqs,
				SendPeer: peer, SendTag: 10, SendBytes: 8192, Reqs: []uint64{req}})
			req++
		}
		call(3, 5, jit(800, 12_000), Event{Attr: AttrReqs | AttrStatus, Reqs: reqs[:],
			Status: []Status{{1, 10}, {3, 10}, {NoStatus, NoStatus}, {NoStatus, NoStatus}}})
		if step%10 == 9 {
			call(4, 6, jit(3_000, 15_000), Event{Attr: AttrComm | AttrSendBytes | AttrRecvBytes, SendBytes: 8, RecvBytes: 8})
		}
	}
	return evs[:n]
}

func benchDefs() *tracepb.Definitions {
	d := &tracepb.Definitions{
		Functions: []*tracepb.Function{
			{Id: 0, Name: "MPI_Init"}, {Id: 1, Name: "MPI_Irecv"}, {Id: 2, Name: "MPI_Isend"},
			{Id: 3, Name: "MPI_Waitall"}, {Id: 4, Name: "MPI_Allreduce"},
		},
		Communicators: []*tracepb.Communicator{{Local: 0, Members: []uint32{0, 1, 2, 3}}},
	}
	for i := uint32(0); i <= 6; i++ {
		d.CallSites = append(d.CallSites, &tracepb.CallSite{Id: i, Pcs: []uint64{0x401000 + uint64(i)*64}})
	}
	return d
}

// batchEvents is the synthetic traces' batch size, 64 Ki events per frame:
// the tracer's batches are one buffer of records each (a few hundred to a
// few thousand events), so that a frame's fixed costs weigh less here.
const batchEvents = 1 << 16

func encodeHalo(tb testing.TB, evs []Event, opts WriterOptions) []byte {
	var buf bytes.Buffer
	hdr := testHeader()
	w, err := NewWriter(&buf, hdr, opts)
	if err != nil {
		tb.Fatal(err)
	}
	w.WriteDefinitions(benchDefs())
	var b Builder
	for i := range evs {
		b.Append(&evs[i])
		if b.Len() == batchEvents {
			w.WriteBatch(&b)
			b.Reset()
		}
	}
	w.WriteBatch(&b)
	if err := w.Close(nil); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkEncode measures the writer (what the tracer's background
// goroutine pays) and reports bytes per event on disk.
func BenchmarkEncode(b *testing.B) {
	evs := haloEvents(1 << 20)
	var size int
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := procstat.CPUTime()
	for i := 0; i < b.N; i++ {
		size = len(encodeHalo(b, evs, WriterOptions{}))
	}
	b.ReportMetric(float64(size)/float64(len(evs)), "B/event")
	b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	reportPerCore(b, len(evs), cpu0)
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDecode measures streaming decode (ReadEvent over a whole file)
// and the batch-level paths analyzers can use (ReadBatch + Cursor, and
// ReadLazyBatch).
func BenchmarkDecode(b *testing.B) {
	evs := haloEvents(1 << 20)
	data := encodeHalo(b, evs, WriterOptions{})
	b.Run("ReadEvent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		cpu0 := procstat.CPUTime()
		for i := 0; i < b.N; i++ {
			r, err := NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				_, err := r.ReadEvent()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != len(evs) {
				b.Fatalf("read %d events, want %d", n, len(evs))
			}
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		reportPerCore(b, len(evs), cpu0)
		b.ReportMetric(float64(len(data))/float64(len(evs)), "B/event")
	})
	b.Run("ReadBatch", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		cpu0 := procstat.CPUTime()
		var e Event
		for i := 0; i < b.N; i++ {
			r, _ := NewReader(bytes.NewReader(data))
			for {
				batch, err := r.ReadBatch()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				var c Cursor
				for c.Next(batch, &e) {
				}
			}
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		reportPerCore(b, len(evs), cpu0)
	})
	b.Run("ReadLazyBatch", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		cpu0 := procstat.CPUTime()
		var e Event
		for i := 0; i < b.N; i++ {
			r, _ := NewReader(bytes.NewReader(data))
			for {
				batch, err := r.ReadLazyBatch()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				for batch.Next(&e) {
				}
			}
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		reportPerCore(b, len(evs), cpu0)
	})
}

func reportPerCore(b *testing.B, events int, cpu0 time.Duration) {
	if cpu := procstat.CPUTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
	}
}
