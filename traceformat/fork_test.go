package traceformat

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestFork: a fork made after the first batch reads the batches that
// follow as the reader itself then reads them, definitions met on the
// way included, while the reader's own batch and definitions stay as
// they were.
func TestFork(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteDefinitions(benchDefs())
	evs := haloEvents(300)
	var b Builder
	for i := range evs {
		b.Append(&evs[i])
		if b.Len() == 100 {
			w.WriteBatch(&b)
			b.Reset()
		}
		if i == 99 {
			// A function and a call site defined after the first batch,
			// used by the second.
			w.WriteDefinitions(&tracepb.Definitions{Functions: []*tracepb.Function{{Id: 5, Name: "MPI_Cancel"}},
				CallSites: []*tracepb.CallSite{{Id: 7, Pcs: []uint64{0x402000}}}})
			e := Event{Func: 5, Site: 7, Attr: AttrReqs, Reqs: []uint64{42}, Entry: evs[i].Exit + 1, Exit: evs[i].Exit + 2}
			b.Append(&e)
		}
	}
	w.WriteBatch(&b)
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()

	read := func(r *Reader) (out [][]Event) {
		for {
			lb, err := r.ReadLazyBatch()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, walk(lb))
		}
	}
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.ReadLazyBatch()
	if err != nil {
		t.Fatal(err)
	}
	var e Event
	first.Next(&e) // the reader stands inside its batch
	e.Reqs, e.Status = append([]uint64(nil), e.Reqs...), append([]Status(nil), e.Status...)
	f := r.Fork(bytes.NewReader(data[r.Offset():]), 0)
	ahead := read(f)
	if f.Definitions().Function(5).GetName() != "MPI_Cancel" {
		t.Error("the fork did not read the later definitions")
	}
	if r.Definitions().Function(5) != nil {
		t.Error("the fork's definitions reached the reader's")
	}
	rest := walk(first)
	if got, want := append([]Event{e}, rest...), walk2(t, data, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("the reader's batch changed under the fork:\n%+v\nwant\n%+v", got[:2], want[:2])
	}
	if got := read(r); !reflect.DeepEqual(ahead, got) || len(got) != 3 {
		t.Errorf("the fork read %d batches, the reader %d, or they differ", len(ahead), len(got))
	}
	if r.Definitions().Function(5).GetName() != "MPI_Cancel" {
		t.Error("the reader lost the later definitions")
	}
}

// walk is the rest of lb's events, with their slices copied.
func walk(lb *LazyBatch) (out []Event) {
	var e Event
	for lb.Next(&e) {
		e.Reqs, e.Status = append([]uint64(nil), e.Reqs...), append([]Status(nil), e.Status...)
		out = append(out, e)
	}
	return out
}

// walk2 is batch i of data, read afresh.
func walk2(t *testing.T, data []byte, i int) []Event {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for ; ; i-- {
		lb, err := r.ReadLazyBatch()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			return walk(lb)
		}
	}
}
