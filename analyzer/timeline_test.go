package analyzer

import (
	"context"
	"encoding/binary"
	"os"
	"reflect"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// A spool of other processes' recordings (tlSpool) gives back each rank's
// recording as it was written; a damaged or cut one, or a rank spooled
// twice, is an error, never a panic.
func TestTimelineSpool(t *testing.T) {
	dir := t.TempDir()
	if _, err := tracetest.TwoMessages().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rec := &TimelineRecorder{}
	if _, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: rec}); err != nil {
		t.Fatal(err)
	}
	size := len(rec.ranks)
	budget := timelineBudget(rec, size)
	var spool []byte
	var recs [][]byte
	for _, o := range rec.ranks {
		var w resWriter
		w.tlRank(o)
		recs = append(recs, w.b)
		spool = binary.AppendUvarint(spool, uint64(len(w.b)))
		spool = append(spool, w.b...)
	}
	tmp := t.TempDir()
	open := func(b []byte) *tlSpool {
		f, err := os.CreateTemp(tmp, "spool")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		s := &tlSpool{f: f, size: int64(len(b)), budget: budget}
		s.w = newSpoolWriter(f)
		os.Remove(f.Name())
		return s
	}
	// index of a spool holding b, which is then closed.
	index := func(b []byte) error {
		s := open(b)
		defer s.close()
		return s.index(make([]*tlInfo, size), map[string]*rnode{})
	}
	s := open(spool)
	defer s.close()
	ranks := make([]*tlInfo, size)
	if err := s.index(ranks, map[string]*rnode{}); err != nil {
		t.Fatal(err)
	}
	for r, in := range ranks {
		if in == nil {
			t.Fatalf("rank %d not found in the spool", r)
		}
		o, err := s.read(in, size, map[string]*rnode{})
		if err != nil {
			t.Fatal(err)
		}
		want := rec.ranks[r]
		if o.calls != want.calls || !reflect.DeepEqual(o.boxes, want.boxes) || !reflect.DeepEqual(o.msgs, want.msgs) {
			t.Errorf("rank %d read back differs", r)
		}
	}
	twice := append(append([]byte(nil), spool...), spool[:len(spool)/size]...)
	for _, b := range [][]byte{twice, append(append([]byte(nil), spool...), 0xff)} {
		if err := index(b); err == nil {
			t.Errorf("a spool of %d bytes with a rank twice or a bad length: no error", len(b))
		}
	}
	// Cuts and damaged bytes of the first record: every one among its
	// calls and messages, then some in its overview's bins (most of it).
	dec := &tlSpool{budget: budget}
	for i := 0; i < len(recs[0]); i += 1 + i/256*61 {
		if _, err := dec.decode(recs[0][:i], size, map[string]*rnode{}); err == nil {
			t.Errorf("the first record cut at byte %d: no error", i)
		}
		bad := append([]byte(nil), recs[0]...)
		bad[i] ^= 0x80
		dec.decode(bad, size, map[string]*rnode{})
	}
}
