package tracetest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestLateSender builds the canonical late-sender fixture and reads it back
// with exact timestamps.
func TestLateSender(t *testing.T) {
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * US)
	r1.Init(1 * US)
	r0.Compute(200*MS).Send(1, 7, 8, 10*US)
	r1.Recv(0, 7, 8, 200*MS+20*US)
	r0.Finalize(1 * US)
	r1.Finalize(1 * US)
	r1.Skew(2*S, 100)

	dir := t.TempDir()
	paths, err := run.WriteDir(dir, "app")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: paths[1]})
	if err != nil {
		t.Fatal(err)
	}
	var got []traceformat.Event
	for {
		e, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e.Status = append([]traceformat.Status(nil), e.Status...)
		got = append(got, e)
	}
	if len(got) != 3 {
		t.Fatalf("got %d events, want 3", len(got))
	}
	recv := got[1]
	if name := r.Definitions().Function(recv.Func).Name; name != "MPI_Recv" {
		t.Fatalf("event 1 is %s", name)
	}
	local := func(tt int64) int64 { return 2*S + tt + int64(float64(tt)*100e-6) }
	if recv.Entry != local(1*US) || recv.Exit != local(1*US+200*MS+20*US) {
		t.Errorf("recv times %d..%d, want %d..%d", recv.Entry, recv.Exit, local(1*US), local(1*US+200*MS+20*US))
	}
	if recv.RecvPeer != 0 || recv.RecvTag != 7 || len(recv.Status) != 1 || recv.Status[0] != (traceformat.Status{Source: 0, Tag: 7}) {
		t.Errorf("recv attributes %+v", recv)
	}
	if len(r.ClockSyncs()) != 2 || r.Footer().StopReason != tracepb.Footer_FINALIZE {
		t.Errorf("syncs %d footer %v", len(r.ClockSyncs()), r.Footer())
	}
}

func TestCrashHasNoFooter(t *testing.T) {
	run := NewRun(1)
	run.Rank(0).Init(US).Barrier(US).Crash()
	data, err := run.Bytes(0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := traceformat.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err = r.ReadEvent()
		if err != nil {
			break
		}
		n++
	}
	if n != 2 || !errors.Is(err, traceformat.ErrTruncated) {
		t.Fatalf("read %d events then %v; want 2 then a truncation error", n, err)
	}
}
