package records

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// TestJoinDefsMessages: definitions frames are joined by concatenating
// their messages, which decode as their merge; a frame whose message is
// not whole fields (cut inside a field), or that does not decode, leaves
// every frame of the run copied as it is.
func TestJoinDefsMessages(t *testing.T) {
	d1 := &tracepb.Definitions{CallSites: []*tracepb.CallSite{{Id: 1, Pcs: []uint64{0x10, 0x20}}}}
	d2 := &tracepb.Definitions{CallSites: []*tracepb.CallSite{{Id: 2, Pcs: []uint64{0x30}}},
		Modules: []*tracepb.Module{{Id: 1, Path: "/lib/x.so", Start: 0x7000, End: 0x9000}}}
	m1, _ := proto.Marshal(d1)
	m2, _ := proto.Marshal(d2)
	for _, c := range []struct {
		name   string
		second []byte
		joined bool
	}{
		{"whole", m2, true},
		{"cut inside a field", m2[:len(m2)-1], false},
		{"a field whose bytes do not decode", append(append([]byte(nil), m2...), 0x0a, 0x02, 0xff, 0xff), false},
	} {
		for _, opts := range []traceformat.WriterOptions{{Raw: true}, records()} {
			frames := defsFrames(t, opts, m1, c.second)
			var j joinDefs
			for i := range frames {
				j.add(&frames[i])
			}
			var out bytes.Buffer
			tw, err := traceformat.NewWriter(&out, &tracepb.Header{WorldSize: 1}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.write(tw); err != nil {
				t.Fatal(err)
			}
			got := defsFrames(t, traceformat.WriterOptions{}, nil, nil, out.Bytes()...)
			if want := map[bool]int{true: 1, false: 2}[c.joined]; len(got) != want {
				t.Fatalf("%s: %d definitions frames written, want %d", c.name, len(got), want)
			}
			if !c.joined {
				for i := range got {
					if !bytes.Equal(got[i].Bytes, frames[i].Bytes) {
						t.Errorf("%s: frame %d not copied as it was", c.name, i)
					}
				}
				continue
			}
			var d tracepb.Definitions
			if err := got[0].Unmarshal(&d); err != nil {
				t.Fatal(err)
			}
			want := proto.CloneOf(d1)
			proto.Merge(want, d2)
			if !proto.Equal(&d, want) {
				t.Errorf("%s: joined %v, want %v", c.name, &d, want)
			}
		}
	}
}

// records is the Writer options of the tracer and of Compact.
func records() traceformat.WriterOptions { return WriterOptions(false) }

// defsFrames writes each of msgs as a definitions frame with opts and
// returns the frames; with file given, it returns those of file instead.
func defsFrames(t *testing.T, opts traceformat.WriterOptions, m1, m2 []byte, file ...byte) []traceformat.Frame {
	t.Helper()
	if file == nil {
		var buf bytes.Buffer
		tw, err := traceformat.NewWriter(&buf, &tracepb.Header{WorldSize: 1}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range [][]byte{m1, m2} {
			if err := tw.WriteDefinitionsMessage(m); err != nil {
				t.Fatal(err)
			}
		}
		file = buf.Bytes()
	}
	sc, err := traceformat.NewFrameScanner(bytes.NewReader(file), "t.0.trc")
	if err != nil {
		t.Fatal(err)
	}
	var out []traceformat.Frame
	for {
		fr, err := sc.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, traceformat.ErrTruncated) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if fr.Kind == traceformat.KindDefinitions {
			c := *fr
			c.Bytes = bytes.Clone(fr.Bytes)
			out = append(out, c)
		}
	}
}
