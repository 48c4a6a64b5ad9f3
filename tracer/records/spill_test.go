package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestRecover plays a process killed with records in two buffers (one
// handed over, one being filled) and a trace holding only earlier frames.
func TestRecover(t *testing.T) {
	tracePath := killedTrace(t, t.TempDir(), cheapCalls(5), []byte{1, 2, 3}) // the last frame cut short by the kill
	spill, put4 := spillFor(t, tracePath, 4)
	put := func(slot int, seq uint64, recs []byte) { put4(slot, seq, 0, recs) }
	put(2, 7, cheapCallsAt(3, 1<<40+30000)) // filled later: goes last
	put(0, 5, cheapCallsAt(4, 1<<40+10000)) // handed over, not yet written
	put(1, 0, cheapCallsAt(9, 1<<40+40000)) // written already
	unknownSite := rec(nil, 42, 0, 99, 1<<40+20000, 1<<40+20010)
	put(3, 6, unknownSite)
	n, err := Recover(spill)
	if err != nil || n != 8 {
		t.Fatalf("Recover = %d, %v; want 8 events", n, err)
	}
	if _, err := os.Stat(spill); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spill file left behind")
	}
	events, r := readRecovered(t, tracePath)
	count := len(events)
	ft := r.Footer()
	if count != 13 || ft.GetEventCount() != 13 || ft.StopReason != tracepb.Footer_SIGNAL || !strings.Contains(ft.Message, "recovered 8") {
		t.Errorf("%d events, footer %v", count, ft)
	}
	if s := r.Definitions().CallSites; len(s) <= 99 || s[99] == nil {
		t.Errorf("call site 99 not defined")
	}
}

// TestRecoverSkipsWritten plays a process killed after the encoder wrote a
// buffer to the trace but before it marked the buffer's slot free: the
// slot's records are in the trace already and must not be appended again;
// a later slot of the same thread and a slot of another thread are.
func TestRecoverSkipsWritten(t *testing.T) {
	written := cheapCalls(5)
	tracePath := killedTrace(t, t.TempDir(), written, nil)
	spill, put := spillFor(t, tracePath, 3)
	put(0, 1, 0, written)                     // in the trace, slot not yet freed
	put(1, 2, 0, cheapCallsAt(2, 1<<40+5000)) // the thread's next buffer
	put(2, 3, 1, cheapCalls(3))               // another thread, same times
	n, err := Recover(spill)
	if err != nil || n != 5 {
		t.Fatalf("Recover = %d, %v; want 5 events (2 of thread 0, 3 of thread 1)", n, err)
	}
	events, r := readRecovered(t, tracePath)
	perThread := map[uint32][]int64{}
	for _, e := range events {
		perThread[e.Thread] = append(perThread[e.Thread], e.Entry)
	}
	if len(perThread[0]) != 7 || len(perThread[1]) != 3 || r.Footer().GetEventCount() != 10 {
		t.Fatalf("thread 0: %d events, thread 1: %d, footer %v; want 7, 3, 10", len(perThread[0]), len(perThread[1]), r.Footer())
	}
	for i := 1; i < len(perThread[0]); i++ {
		if perThread[0][i] <= perThread[0][i-1] {
			t.Errorf("thread 0: event %d entered at %d, not after %d: a duplicate", i, perThread[0][i], perThread[0][i-1])
		}
	}
}

// TestRecoverUnfinished: the call each thread's latest slot publishes as
// in progress (entry, return address, function + 1) goes into the footer;
// an older slot's, a slot whose records were written but whose call is
// still in progress (a fatal signal's flush), a finished call's (0), an
// undefined function's, and one that the thread's records show returned
// (entered no later than its last recorded call) are told apart.
func TestRecoverUnfinished(t *testing.T) {
	tracePath := killedTrace(t, t.TempDir(), cheapCalls(2), nil)
	spill, put := spillFor(t, tracePath, 6)
	mem, err := os.OpenFile(spill, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	call := func(slot int, t0, pc, fid1 uint64) {
		var b [24]byte
		binary.LittleEndian.PutUint64(b[0:], t0)
		binary.LittleEndian.PutUint64(b[8:], pc)
		binary.LittleEndian.PutUint64(b[16:], fid1)
		if _, err := mem.WriteAt(b[:], int64(SpillHeaderSize+slot*(SlotHeader+4096)+24)); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 1, 0, nil)                         // thread 0's older buffer …
	call(0, 1<<40, 0x4000, 43)                // … whose stale call is not the thread's
	put(1, 4, 0, nil)                         // thread 0's latest: records written, call in progress
	call(1, 1<<40+777, 0x5000, 43)            // function 42 + 1
	put(2, 3, 1, nil)                         // thread 1: no call in progress
	put(3, 5, 2, cheapCallsAt(1, 1<<40+9000)) // thread 2: a call of an unknown function
	call(3, 1<<40+9999, 0x6000, 1000)         //
	put(4, 0, 3, nil)                         // a free slot's leftovers
	call(4, 1<<40, 0x7000, 43)                //
	put(5, 6, 4, cheapCallsAt(1, 1<<40+9000)) // thread 4: its call entered at 1<<40+9000 returned
	call(5, 1<<40+9000, 0x8000, 43)           // (recorded), a stale header says it runs
	if _, err := Recover(spill); err != nil {
		t.Fatal(err)
	}
	_, r := readRecovered(t, tracePath)
	u := r.Footer().GetUnfinished()
	if len(u) != 1 || u[0].Thread != 0 || u[0].Function != 42 || u[0].Name != "MPI_Comm_rank" ||
		u[0].EntryLocalNs != 1<<40+777 || u[0].ReturnAddress != 0x5000 {
		t.Fatalf("unfinished %v, want thread 0's MPI_Comm_rank entered at %d from 0x5000", u, int64(1<<40+777))
	}
}

// A job interrupted while a process hung in a call: killed before it
// stamped its end, the process was alive at the interrupt, which the
// footer gives as the bound of its calls' time; one that stamped its end
// has that end and no bound; a process of another node (or boot), whose
// clock the interrupt's reading is not on, has neither.
func TestRecoverInterrupted(t *testing.T) {
	if BootID() == "" {
		t.Skip("no boot id on this system")
	}
	for _, c := range []struct {
		stamped bool
		boot    string
		want    [2]int64 // end, interrupt
	}{
		{false, BootID(), [2]int64{0, 1<<40 + 3000}},
		{true, BootID(), [2]int64{1<<40 + 5000, 0}},
		{false, "another-node", [2]int64{0, 0}},
		{false, "", [2]int64{0, 0}},
	} {
		stamped := c.stamped
		tracePath := killedTrace(t, t.TempDir(), cheapCalls(2), nil)
		spill, put := spillForBoot(t, tracePath, 2, c.boot)
		mem, err := os.OpenFile(spill, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b [32]byte
		binary.LittleEndian.PutUint64(b[0:], 1<<40+777) // entry
		binary.LittleEndian.PutUint64(b[8:], 0x5000)    // return address
		binary.LittleEndian.PutUint64(b[16:], 43)       // function 42 + 1
		if stamped {
			binary.LittleEndian.PutUint64(b[24:], 1<<40+5000) // the signal's arrival
		}
		put(0, 4, 0, nil)
		if _, err := mem.WriteAt(b[:], int64(SpillHeaderSize+24)); err != nil {
			t.Fatal(err)
		}
		mem.Close()
		if _, err := RecoverInterrupted(spill, 1<<40+3000); err != nil {
			t.Fatal(err)
		}
		_, r := readRecovered(t, tracePath)
		f := r.Footer()
		if got := [2]int64{f.GetEndLocalNs(), f.GetInterruptedLocalNs()}; got != c.want || len(f.GetUnfinished()) != 1 {
			t.Errorf("stamped %v, boot %q: end and interrupt %v, want %v; unfinished %v", stamped, c.boot, got, c.want, f.GetUnfinished())
		}
	}
}

func TestAfter(t *testing.T) {
	p := cheapCalls(4) // raw entries 1<<40, +150, +301, +453
	conv := &Converter{}
	for _, c := range []struct {
		ns   int64
		want int
	}{{0, 4}, {1 << 40, 3}, {1<<40 + 150, 2}, {1<<40 + 452, 1}, {1<<40 + 453, 0}} {
		if got := len(After(p, conv, c.ns)) / (HeaderSize + 4); got != c.want {
			t.Errorf("After(%d): %d records, want %d", c.ns, got, c.want)
		}
	}
	if got := After(p[:len(p)-2], conv, 1<<40+301); len(got) != HeaderSize+4-2 {
		t.Errorf("a cut last record: %d bytes left, want the cut record's %d", len(got), HeaderSize+2)
	}
}

// killedTrace writes a trace of a killed process to dir/app.0.trc: header,
// definitions, the records recs of thread 0 as one batch, then tail (a frame
// cut short, or nothing), and no footer. It returns the trace's path.
func killedTrace(t *testing.T, dir string, recs, tail []byte) string {
	t.Helper()
	tracePath := filepath.Join(dir, "app.0.trc")
	f, err := os.Create(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := traceformat.NewWriter(f, &tracepb.Header{WorldSize: 1}, traceformat.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(&tracepb.Definitions{Functions: []*tracepb.Function{{Id: 42, Name: "MPI_Comm_rank"}},
		CallSites:     []*tracepb.CallSite{{Id: 3, Pcs: []uint64{0x1234}}},
		Communicators: []*tracepb.Communicator{{Local: 0, Members: []uint32{0}}}})
	var b traceformat.Builder
	Decode(&b, recs, 0, &Converter{})
	w.WriteBatch(&b)
	f.Write(tail)
	f.Close()
	return tracePath
}

// spillFor creates the spill file of the trace at tracePath (skipping the
// test where the file system cannot hold one) and returns a function that
// fills a slot: its seq, thread and records.
func spillFor(t *testing.T, tracePath string, slots int) (spill string, put func(slot int, seq uint64, tid uint32, recs []byte)) {
	t.Helper()
	return spillForBoot(t, tracePath, slots, BootID())
}

// spillForBoot is spillFor of a process of the node boot boot.
func spillForBoot(t *testing.T, tracePath string, slots int, boot string) (spill string, put func(slot int, seq uint64, tid uint32, recs []byte)) {
	t.Helper()
	info := SpillInfo{Trace: tracePath, Slots: slots, Chunk: 4096, Boot: boot}
	spill = filepath.Join(filepath.Dir(tracePath), "app.0.spill")
	mem, fd, err := CreateSpill(spill, info)
	if err != nil {
		t.Skipf("no spill on this file system: %v", err)
	}
	t.Cleanup(func() {
		syscall.Munmap(mem)
		syscall.Close(fd)
		os.Remove(spill)
	})
	return spill, func(slot int, seq uint64, tid uint32, recs []byte) {
		off := SpillHeaderSize + slot*(SlotHeader+info.Chunk)
		binary.LittleEndian.PutUint64(mem[off:], seq)
		binary.LittleEndian.PutUint64(mem[off+8:], uint64(len(recs)))
		binary.LittleEndian.PutUint32(mem[off+16:], tid)
		copy(mem[off+SlotHeader:], recs)
	}
}

// readRecovered reads every event of a completed trace; the reader then
// holds its footer and definitions.
func readRecovered(t *testing.T, path string) ([]traceformat.Event, *traceformat.Reader) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := traceformat.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var events []traceformat.Event
	for {
		e, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			return events, r
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
}

// TestRemoveAbandoned: a spill file never renamed from SpillNew is removed
// once no process holds it (its creator's descriptor and mapping are gone,
// as when the process dies), and kept while one does; renamed spill files are left
// to Recover.
func TestRemoveAbandoned(t *testing.T) {
	dir := t.TempDir()
	info := SpillInfo{Trace: filepath.Join(dir, "app.1.trc"), Rank: 1, Slots: 2, Chunk: 4096}
	newPath := filepath.Join(dir, "app.1"+SpillNew)
	mem, fd, err := CreateSpill(newPath, info)
	if err != nil {
		t.Fatal(err)
	}
	mem2, fd2, err := CreateSpill(filepath.Join(dir, "app.2.spill"), info)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Munmap(mem2)
	syscall.Close(fd2)
	if got := RemoveAbandoned(dir); len(got) != 0 {
		t.Fatalf("removed %v while its process holds it", got)
	}
	syscall.Munmap(mem) // the lock lives as long as the mapping too
	syscall.Close(fd)
	if got := RemoveAbandoned(dir); len(got) != 1 || got[0] != newPath {
		t.Fatalf("removed %v, want [%s]", got, newPath)
	}
	if _, err := os.Stat(newPath); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", newPath, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "app.2.spill")); err != nil {
		t.Errorf("app.2.spill: %v; a renamed spill file is Recover's", err)
	}
}

// TestRecoverDamagedRecord: a record whose call-site id no reader would
// take (ids are dense; a wild store of the program reached the slot) ends
// its slot's recovery there; the records before it, and the other slots,
// are recovered, the footer says how many were left out, and the trace
// reads.
func TestRecoverDamagedRecord(t *testing.T) {
	tracePath := killedTrace(t, t.TempDir(), cheapCalls(5), nil)
	spill, put := spillFor(t, tracePath, 2)
	recs := cheapCallsAt(2, 1<<40+10000)
	recs = rec(recs, 42, 0, 1<<20, 1<<40+10100, 1<<40+10110)
	recs = append(recs, cheapCallsAt(2, 1<<40+10200)...)
	put(0, 5, 0, recs)
	put(1, 6, 1, cheapCallsAt(3, 1<<40+20000))
	n, err := Recover(spill)
	if err != nil || n != 5 {
		t.Fatalf("Recover = %d, %v; want 5 events (2 before the damage, 3 of thread 1)", n, err)
	}
	events, r := readRecovered(t, tracePath)
	if ft := r.Footer(); len(events) != 10 || ft.GetEventCount() != 10 || !strings.Contains(ft.Message, "left out 3 more after a damaged record") {
		t.Errorf("%d events, footer %v", len(events), ft)
	}
}
