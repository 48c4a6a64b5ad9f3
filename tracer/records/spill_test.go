package records

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestRecover plays a process killed with records in two buffers (one
// handed over, one being filled) and a trace holding only earlier frames.
func TestRecover(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "app.0.trc")
	f, _ := os.Create(tracePath)
	w, err := traceformat.NewWriter(f, &tracepb.Header{WorldSize: 1}, traceformat.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(&tracepb.Definitions{Functions: []*tracepb.Function{{Id: 42, Name: "MPI_Comm_rank"}},
		CallSites:     []*tracepb.CallSite{{Id: 3, Pcs: []uint64{0x1234}}},
		Communicators: []*tracepb.Communicator{{Local: 0, Members: []uint32{0}}}})
	var b traceformat.Batch
	Decode(&b, cheapCalls(5), 0, &Converter{})
	w.WriteBatch(&b)
	f.Write([]byte{1, 2, 3}) // a frame cut short by the kill
	f.Close()

	info := SpillInfo{Trace: tracePath, Slots: 4, Chunk: 4096}
	spill := filepath.Join(dir, "app.0.spill")
	mem, fd, err := CreateSpill(spill, info)
	if err != nil {
		t.Skipf("no spill on this file system: %v", err)
	}
	defer os.Remove(spill)
	put := func(slot int, seq uint64, recs []byte) {
		off := SpillHeaderSize + slot*(SlotHeader+info.Chunk)
		binary.LittleEndian.PutUint64(mem[off:], seq)
		binary.LittleEndian.PutUint64(mem[off+8:], uint64(len(recs)))
		copy(mem[off+SlotHeader:], recs)
	}
	put(2, 7, cheapCalls(3)) // filled later: goes last
	put(0, 5, cheapCalls(4)) // handed over, not yet written
	put(1, 0, cheapCalls(9)) // written already
	unknownSite := rec(nil, 42, 0, 99, 1, 2)
	put(3, 6, unknownSite)
	_ = fd
	n, err := Recover(spill)
	if err != nil || n != 8 {
		t.Fatalf("Recover = %d, %v; want 8 events", n, err)
	}
	if _, err := os.Stat(spill); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spill file left behind")
	}
	g, _ := os.Open(tracePath)
	defer g.Close()
	r, err := traceformat.NewReader(g)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for {
		_, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	ft := r.Footer()
	if count != 13 || ft.GetEventCount() != 13 || ft.StopReason != tracepb.Footer_SIGNAL || !strings.Contains(ft.Message, "recovered 8") {
		t.Errorf("%d events, footer %v", count, ft)
	}
	if s := r.Definitions().CallSites; len(s) <= 99 || s[99] == nil {
		t.Errorf("call site 99 not defined")
	}
}
