package analyzer

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/traceformat"
)

// create writes every field of a request into a slot of the table that is
// not cleared (reqTable.slot): a request created where a completed one
// with every field set was is the same as one created in a zeroed table.
func TestCreateWritesEveryField(t *testing.T) {
	// made replays event e of operation o on rank 0 of a new exchange of
	// two ranks, after stale's request, created and completed, and
	// returns the request e created.
	made := func(o op, e traceformat.Event, mayBlock bool, stale *request) request {
		x := newExchange(2, []bool{true, true}, defaultLimits())
		rp := newReplayer(0, "", x, &clocks.Map{})
		rp.sc = &shapeInfo{fi: &fnInfo{mayBlock: mayBlock}, comm: &commInfo{id: 1, members: []int32{0, 1}, peers: []int32{0, 1}}, commOK: true}
		if stale != nil {
			*rp.reqs.add(e.Reqs[0]) = *stale
			rp.reqs.kill(e.Reqs[0], 0)
			rp.reqs.compact()
		}
		rp.create(&e, o, 1000, &acc{})
		rq := rp.reqs.get(e.Reqs[0])
		if rq == nil {
			t.Fatalf("op %d: no request", o)
		}
		return *rq
	}
	// A request whose every field is set (none zero).
	var stale request
	v := reflect.ValueOf(&stale).Elem()
	for i := 0; i < v.NumField(); i++ {
		// (Unexported: set through its address.)
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int32, reflect.Int64:
			f.SetInt(-7)
		case reflect.Uint8, reflect.Uint32, reflect.Uint64:
			f.SetUint(9)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("field %s of kind %v: set it here", v.Type().Field(i).Name, f.Kind())
		}
	}
	ev := traceformat.Event{Attr: traceformat.AttrReqs | traceformat.AttrSend | traceformat.AttrRecv, Reqs: []uint64{5},
		SendPeer: 1, SendTag: 3, SendBytes: 8, RecvPeer: 1, RecvTag: 4, Site: 2}
	null := ev
	null.SendPeer, null.RecvPeer = traceformat.ProcNull, traceformat.ProcNull
	for _, c := range []struct {
		name     string
		o        op
		e        traceformat.Event
		mayBlock bool
	}{
		{"Isend", opIsend, ev, false}, {"Issend", opIsend, ev, true}, {"Isend PROC_NULL", opIsend, null, false},
		{"Irecv", opIrecv, ev, false}, {"Irecv PROC_NULL", opIrecv, null, false},
		{"Send_init", opSendInit, ev, false}, {"Ssend_init", opSendInit, ev, true}, {"Recv_init", opRecvInit, ev, false},
		{"Isendrecv", opIsendrecv, ev, false}, {"Imrecv", opImrecv, ev, false},
	} {
		want := made(c.o, c.e, c.mayBlock, nil)
		got := made(c.o, c.e, c.mayBlock, &stale)
		// The queues are the exchanges' own: compared by presence.
		if (want.q == nil) != (got.q == nil) {
			t.Errorf("%s: queue %v, want %v", c.name, got.q != nil, want.q != nil)
		}
		if want.comm == nil || got.comm == nil {
			t.Errorf("%s: no communicator", c.name)
		}
		got.q, want.q, got.comm, want.comm = nil, nil, nil, nil
		if got != want {
			t.Errorf("%s: created over a stale request\n%+v, want\n%+v", c.name, got, want)
		}
	}
}
