package traceformat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// rangeDefs defines, in a world of n ranks: the world (a range), a
// duplicate of it with every other field set (a range), a communicator of
// ranks 1 … n−1 (a list: it does not start at 0) and an intercommunicator
// whose local group is 0 … n/2−1 (a range) with its remote group listed.
func rangeDefs(n int) *tracepb.Definitions {
	all, tail, lo, hi := make([]uint32, n), make([]uint32, n-1), make([]uint32, n/2), make([]uint32, n-n/2)
	for i := range all {
		all[i] = uint32(i)
		if i > 0 {
			tail[i-1] = uint32(i)
		}
		if i < n/2 {
			lo[i] = uint32(i)
		} else {
			hi[i-n/2] = uint32(i)
		}
	}
	return &tracepb.Definitions{Communicators: []*tracepb.Communicator{
		{Local: 0, Id: 0, Members: all},
		{Local: 1, Id: 1 << 63, Members: []uint32{0}},
		{Local: 2, Id: 77, Members: all, Parent: 0, CreatedBy: 12},
		{Local: 3, Id: 78, Members: tail, Parent: 2, CreatedBy: 13},
		{Local: 4, Id: 79, Members: lo, RemoteMembers: hi, Inter: true, Parent: 2, CreatedBy: 14},
	}}
}

// writeRanges writes a trace of rank 0 of n with defs and no events.
func writeRanges(t *testing.T, n int, defs *tracepb.Definitions) []byte {
	t.Helper()
	var buf bytes.Buffer
	hdr := testHeader()
	hdr.Rank, hdr.WorldSize = 0, uint32(n)
	w, err := NewWriter(&buf, hdr, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDefinitions(defs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(&tracepb.Footer{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMemberRanges(t *testing.T) {
	const n = 5000
	defs := rangeDefs(n)
	want := proto.CloneOf(defs)
	data := writeRanges(t, n, defs)
	if !proto.Equal(defs, want) {
		t.Fatal("WriteDefinitions changed its argument")
	}
	// A range is a few bytes: a listed world would be ~10 KB of varints
	// before compression.
	world := &tracepb.Definitions{Communicators: defs.Communicators[:1]}
	if b := len(writeRanges(t, n, world)); b > 500 {
		t.Errorf("trace of %d bytes: the world was listed", b)
	}
	tbl := &MemberTable{}
	read := func() *Reader {
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{Name: "r.0.trc", Members: tbl})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := r.ReadEvent(); err != nil {
				if err.Error() != "EOF" {
					t.Fatal(err)
				}
				break
			}
		}
		return r
	}
	r1, r2 := read(), read()
	for _, c := range want.Communicators {
		got := r1.Definitions().Comm(c.Local)
		if !proto.Equal(got, c) {
			t.Errorf("communicator %d read back as %v", c.Local, got)
		}
	}
	// Readers sharing a table share the expanded list.
	if &r1.Definitions().Comm(0).Members[0] != &r2.Definitions().Comm(0).Members[0] {
		t.Error("two readers with one MemberTable hold two copies of the world")
	}
	if &r1.Definitions().Comm(0).Members[0] != &r1.Definitions().Comm(2).Members[0] {
		t.Error("the world and its duplicate hold two lists")
	}
}

func TestMemberRangeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *tracepb.Communicator
		want string
	}{
		{"range beyond the world", &tracepb.Communicator{Local: 0, MembersRange: 5}, "member range of 5 ranks in a world of 4"},
		{"range and list", &tracepb.Communicator{Local: 0, MembersRange: 2, Members: []uint32{3}}, "both a member list and a member range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, testHeader(), WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Written as the message is: the writer only makes ranges
			// of lists.
			if err := w.WriteDefinitions(&tracepb.Definitions{Communicators: []*tracepb.Communicator{tc.c}}); err != nil {
				t.Fatal(err)
			}
			_, _, err = readAll(buf.Bytes())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
