package traceformat

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader: it must not panic, must
// not allocate without bound (lengths are checked before allocating), and
// every error must be typed. ReadBatch and ReadLazyBatch must agree.
func FuzzReader(f *testing.F) {
	f.Add(writeTestTrace(f, WriterOptions{}, 2))
	f.Add(writeTestTrace(f, WriterOptions{Raw: true}, 3))
	f.Add(Magic[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			checkTyped(t, err)
			return
		}
		defer eventsBoth(t, data)
		for i := 0; ; i++ {
			e, err := r.ReadEvent()
			if err == io.EOF {
				return
			}
			if err != nil {
				checkTyped(t, err)
				return
			}
			// Touch the aliased slices: they must be in range.
			_ = len(e.Reqs) + len(e.Status)
			_ = r.Definitions().Function(e.Func).Name
		}
	})
}

func checkTyped(t *testing.T, err error) {
	var ce *CorruptError
	var ve *VersionError
	if !errors.As(err, &ce) && !errors.As(err, &ve) {
		t.Fatalf("untyped error: %v", err)
	}
}

// FuzzRoundTrip builds events from arbitrary values, writes and reads them:
// what comes back must equal what went in.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint32(1), int64(5), int64(3), uint16(0xffff), int32(-1), int32(7), uint64(1<<40), int64(-9), uint8(3))
	f.Add(uint32(0), int64(0), int64(0), uint16(0), int32(0), int32(0), uint64(0), int64(0), uint8(0))
	// A folded run of polls: a test with requests, flag and call count.
	f.Add(uint32(2), int64(100), int64(3_000_000), uint16(AttrReqs|AttrFlag|AttrCalls), int32(0), int32(0), uint64(8000), int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, fn uint32, gap, dur int64, attr uint16, peer, tag int32, n uint64, arg int64, nreq uint8) {
		if dur < 0 {
			dur = -dur
		}
		if dur < 0 || gap > 1<<60 || gap < -1<<60 || dur > 1<<60 {
			return
		}
		fn %= 4
		var evs []Event
		t0 := int64(1000)
		for i := 0; i < 5; i++ {
			e := Event{Func: fn, Entry: t0 + gap, Site: uint32(i % 2), Attr: Attr(attr) & attrKnown}
			e.Exit = e.Entry + dur
			t0 = e.Exit
			e.SendPeer, e.SendTag, e.RecvPeer, e.RecvTag, e.Root, e.PcLevel = peer, tag, tag, peer, peer, tag
			e.SendBytes, e.RecvBytes, e.PcArg, e.Flag = n, n+1, arg, n&1 == 1
			e.Calls = uint32(n>>3) + uint32(i)
			if e.Attr&AttrComm != 0 {
				e.Comm = uint32(i % 3)
			}
			if e.Attr&AttrNewComm != 0 {
				e.NewComm = CommNull
			}
			nst := 1
			if e.Attr&AttrReqs != 0 {
				for j := 0; j < int(nreq%5); j++ {
					e.Reqs = append(e.Reqs, n*uint64(j+1)-uint64(arg))
				}
				nst = len(e.Reqs)
			}
			if e.Attr&AttrStatus != 0 {
				for j := 0; j < nst; j++ {
					e.Status = append(e.Status, Status{peer, tag + int32(j)})
				}
			}
			evs = append(evs, zeroAbsent(e))
		}
		data, b := oneBatchTrace(t, evs)
		// The producer's fast path encodes to the same bytes.
		var st Builder
		for i := range evs {
			appendStatic(&st, &evs[i])
		}
		var e1, e2 batchEncoder
		if x, y := e1.appendBatch(nil, b.Batch()), e2.appendBatch(nil, st.Batch()); !bytes.Equal(x, y) {
			t.Fatalf("AppendStatic batch encodes differently:\n%x\n%x", x, y)
		}
		_, got, err := readAll(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(evs)) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, evs)
		}
	})
}

// zeroAbsent clears the fields whose attribute is not set, as the reader
// reports them.
func zeroAbsent(e Event) Event {
	a := e.Attr
	if a&AttrComm == 0 {
		e.Comm = 0
	}
	if a&AttrSend == 0 {
		e.SendPeer, e.SendTag = 0, 0
	}
	if a&AttrRecv == 0 {
		e.RecvPeer, e.RecvTag = 0, 0
	}
	if a&AttrSendBytes == 0 {
		e.SendBytes = 0
	}
	if a&AttrRecvBytes == 0 {
		e.RecvBytes = 0
	}
	if a&AttrRoot == 0 {
		e.Root = 0
	}
	if a&AttrReqs == 0 {
		e.Reqs = nil
	}
	if a&AttrStatus == 0 {
		e.Status = nil
	}
	if a&AttrNewComm == 0 {
		e.NewComm = 0
	}
	if a&AttrPcontrol == 0 {
		e.PcLevel, e.PcArg = 0, 0
	}
	if a&AttrFlag == 0 {
		e.Flag = false
	}
	if a&AttrCalls == 0 {
		e.Calls = 0
	}
	return e
}

// appendStatic adds e with AppendStatic and its per-call attributes as
// AppendStatic's caller must (the tracer's records.DecodeShaped).
func appendStatic(b *Builder, e *Event) {
	b.AppendStatic(e)
	b.AppendPerCall(e)
}
