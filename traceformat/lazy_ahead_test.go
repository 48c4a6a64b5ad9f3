package traceformat

import (
	"reflect"
	"testing"
)

// TestStatusAhead: the status of a request's first naming call further on
// in the batch, if that call completes it with a status (calls of the
// function passed over not counted); nothing when it is cancelled (with
// MPI_Cancel not passed over) or freed first, beyond maxAhead events, or
// not in the batch (FindStatus: however far, and whether named at all);
// and the batch's own walk goes on unchanged.
func TestStatusAhead(t *testing.T) {
	ev := func(i int, attr Attr) Event {
		return Event{Func: 3, Site: 2, Attr: attr, Entry: int64(100 * i), Exit: int64(100*i + 10)}
	}
	var evs []Event
	// 0: MPI_Irecv of request 7 (wildcard).
	e := ev(0, AttrRecv|AttrReqs)
	e.RecvPeer, e.RecvTag, e.Reqs = AnySource, AnyTag, []uint64{7}
	evs = append(evs, e)
	// 1: a call with a rare attribute (the flag) and request 9 completed.
	e = ev(1, AttrReqs|AttrStatus|AttrFlag)
	e.Reqs, e.Status, e.Flag = []uint64{9}, []Status{{Source: 1, Tag: 1}}, true
	evs = append(evs, e)
	// 2: MPI_Cancel of 8 (function 5).
	e = ev(2, AttrReqs)
	e.Func, e.Reqs = 5, []uint64{8}
	evs = append(evs, e)
	// 3: MPI_Waitall completing 8 (cancelled) and 7.
	e = ev(3, AttrReqs|AttrStatus)
	e.Reqs, e.Status = []uint64{8, 7}, []Status{{Source: NoStatus, Tag: NoStatus}, {Source: 2, Tag: 5}}
	evs = append(evs, e)
	// maxAhead events, then the completion of request 11.
	for i := range maxAhead {
		evs = append(evs, ev(4+i, 0))
	}
	e = ev(4+maxAhead, AttrReqs|AttrStatus)
	e.Reqs, e.Status = []uint64{11}, []Status{{Source: 0, Tag: 0}}
	evs = append(evs, e)

	var enc batchEncoder
	raw := enc.appendBatch(nil, builderOf(evs).Batch())
	var lb LazyBatch
	if err := lb.parse(raw); err != nil {
		t.Fatal(err)
	}
	var got Event
	if !lb.Next(&got) {
		t.Fatal("no first event")
	}
	for _, c := range []struct {
		id   uint64
		want Status
		ok   bool
	}{
		{7, Status{Source: 2, Tag: 5}, true},
		{9, Status{Source: 1, Tag: 1}, true},
		{8, Status{}, false},  // cancelled first
		{11, Status{}, false}, // beyond maxAhead
		{12, Status{}, false}, // not in the batch
	} {
		if st, ok := lb.StatusAhead(c.id, 99); st != c.want || ok != c.ok {
			t.Errorf("request %d: %+v, %v; want %+v, %v", c.id, st, ok, c.want, c.ok)
		}
	}
	// MPI_Cancel passed over: request 8's completion says it was cancelled.
	if st, ok := lb.StatusAhead(8, 5); st != (Status{Source: NoStatus, Tag: NoStatus}) || !ok {
		t.Errorf("request 8 past its MPI_Cancel: %+v, %v", st, ok)
	}
	// FindStatus walks the whole batch, and tells a request named
	// without a status (cancelled first, with MPI_Cancel not passed over)
	// from one not named.
	for _, c := range []struct {
		id   uint64
		want Status
		a    Ahead
	}{
		{7, Status{Source: 2, Tag: 5}, AheadFound},
		{8, Status{}, AheadNamed},
		{11, Status{Source: 0, Tag: 0}, AheadFound},
		{12, Status{}, AheadNotFound},
	} {
		if st, a := lb.FindStatus(c.id, 99); st != c.want || a != c.a {
			t.Errorf("FindStatus of request %d: %+v, %v; want %+v, %v", c.id, st, a, c.want, c.a)
		}
	}
	if !reflect.DeepEqual(got.Reqs, []uint64{7}) {
		t.Errorf("the current event's requests became %v", got.Reqs)
	}
	for i := 1; lb.Next(&got); i++ {
		w := evs[i]
		if got.Entry != w.Entry || got.Flag != w.Flag || !reflect.DeepEqual(append([]uint64{}, got.Reqs...), append([]uint64{}, w.Reqs...)) {
			t.Fatalf("event %d after the walks: %+v, want %+v", i, got, w)
		}
	}
}
