package traceformat

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// FuzzDefinitions compares the hand-written definitions decoder with
// proto.Unmarshal on arbitrary bytes (seeded with random messages of every
// field's encodings and unknown fields): both refuse, or both give the
// same values.
func FuzzDefinitions(f *testing.F) {
	if b, err := proto.Marshal(testDefs()); err == nil {
		f.Add(b)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(randDefs(rng))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDefsDecoder(t, data) })
}

// TestDefinitionsDecoder compares the decoders on random messages and
// mutations of them.
func TestDefinitionsDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	if b, err := proto.Marshal(testDefs()); err != nil {
		t.Fatal(err)
	} else {
		checkDefsDecoder(t, b)
	}
	refused := 0
	for range 3000 {
		b := randDefs(rng)
		if !checkDefsDecoder(t, b) {
			refused++
		}
		for range 3 {
			if !checkDefsDecoder(t, mutate(rng, b)) {
				refused++
			}
		}
	}
	t.Logf("%d of 12000 refused", refused)
	if refused == 0 || refused > 9000 {
		t.Errorf("%d of 12000 messages refused: the generator makes too few of one kind", refused)
	}
}

// checkDefsDecoder decodes data with both decoders and says whether they
// accepted it.
func checkDefsDecoder(t *testing.T, data []byte) bool {
	t.Helper()
	want := &tracepb.Definitions{}
	errWant := proto.Unmarshal(data, want)
	// The reader reuses its buffer for the next frame: nothing decoded
	// may point into it.
	buf := bytes.Clone(data)
	got := &tracepb.Definitions{}
	errGot := decodeDefinitions(buf, got)
	for i := range buf {
		buf[i] = 0xa5
	}
	if (errWant == nil) != (errGot == nil) {
		t.Fatalf("decoders disagree on %x: proto.Unmarshal %v, decodeDefinitions %v", data, errWant, errGot)
	}
	if errWant != nil {
		return false
	}
	if !proto.Equal(got, want) {
		t.Fatalf("decoded differently from %x:\n got %v\nwant %v", data, got, want)
	}
	// proto.Equal takes a nil slice for an empty one: the values must be
	// the same Go values.
	if g, w := plainMessage(reflect.ValueOf(got)), plainMessage(reflect.ValueOf(want)); !reflect.DeepEqual(g, w) {
		t.Fatalf("decoded differently from %x:\n got %#v\nwant %#v", data, g, w)
	}
	return true
}

// plainMessage turns a generated message into maps of its exported fields
// and its unknown fields, which reflect.DeepEqual can compare.
func plainMessage(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		m := map[string]any{"unknown": []byte(v.Interface().(proto.Message).ProtoReflect().GetUnknown())}
		s := v.Elem()
		for i := range s.NumField() {
			if f := s.Type().Field(i); f.IsExported() {
				m[f.Name] = plainMessage(s.Field(i))
			}
		}
		return m
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Pointer {
			return v.Interface()
		}
		if v.IsNil() {
			return nil
		}
		l := make([]any, v.Len())
		for i := range l {
			l[i] = plainMessage(v.Index(i))
		}
		return l
	}
	return v.Interface()
}

// randDefs writes a random Definitions message field by field: entries of
// the four kinds with their fields in any order, repeated, of the wrong wire
// type or unknown, repeated numbers packed or not, strings now and then not
// UTF-8.
func randDefs(rng *rand.Rand) []byte {
	var b []byte
	for range rng.IntN(12) {
		num := protowire.Number(1 + rng.IntN(4))
		if rng.IntN(10) == 0 {
			b = randField(rng, b, randNumber(rng), 0)
			continue
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, randEntry(rng, num))
	}
	return b
}

// defsFields are the field numbers and kinds of the four entries: 'v' a
// varint, 's' a string, 'b' bytes, 'r' a repeated number.
var defsFields = map[protowire.Number]string{1: "vsvvv", 2: "vr", 3: "vsvvvb", 4: "vvrrvvvv"}

func randEntry(rng *rand.Rand, kind protowire.Number) []byte {
	fields := defsFields[kind]
	var b []byte
	for range rng.IntN(10) {
		num := protowire.Number(1 + rng.IntN(len(fields)))
		if rng.IntN(8) == 0 {
			b = randField(rng, b, randNumber(rng), 0)
			continue
		}
		b = randField(rng, b, num, fields[num-1])
	}
	return b
}

// randNumber is a field number the entries may not have.
func randNumber(rng *rand.Rand) protowire.Number {
	if rng.IntN(10) == 0 {
		return protowire.MaxValidNumber - protowire.Number(rng.IntN(3))
	}
	return protowire.Number(1 + rng.IntN(20))
}

// randField appends a field of number num: of its kind, or (kind 0, and
// now and then whatever the kind) a value of a random wire type.
func randField(rng *rand.Rand, b []byte, num protowire.Number, kind byte) []byte {
	if kind == 0 || rng.IntN(10) == 0 {
		switch rng.IntN(5) {
		case 0:
			b = protowire.AppendTag(b, num, protowire.Fixed32Type)
			return protowire.AppendFixed32(b, rng.Uint32())
		case 1:
			b = protowire.AppendTag(b, num, protowire.Fixed64Type)
			return protowire.AppendFixed64(b, rng.Uint64())
		case 2:
			b = protowire.AppendTag(b, num, protowire.StartGroupType)
			b = randField(rng, b, 1+num%7, 'v')
			return protowire.AppendTag(b, num, protowire.EndGroupType)
		case 3:
			kind = 'b'
		default:
			kind = 'v'
		}
	}
	switch kind {
	case 'v':
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, randValue(rng))
	case 's':
		s := []byte("MPI_Allreduce/usr/lib/libmpi.so")[:rng.IntN(30)]
		if rng.IntN(20) == 0 {
			s = append(s, 0xff)
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, s)
	case 'b':
		s := make([]byte, rng.IntN(4)*8)
		for i := range s {
			s[i] = byte(rng.Uint32())
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, s)
	}
	// A repeated number, packed (now and then empty) or one value.
	if rng.IntN(3) == 0 {
		b = protowire.AppendTag(b, num, protowire.VarintType)
		return protowire.AppendVarint(b, randValue(rng))
	}
	var p []byte
	for range rng.IntN(6) {
		p = protowire.AppendVarint(p, randValue(rng))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, p)
}

// randValue is small, or past 32 bits, or past 63.
func randValue(rng *rand.Rand) uint64 {
	switch rng.IntN(4) {
	case 0:
		return rng.Uint64()
	case 1:
		return uint64(rng.IntN(1 << 40))
	}
	return uint64(rng.IntN(300))
}

// mutate changes a copy of b at random: a byte replaced, inserted or
// removed, or the message cut short.
func mutate(rng *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) == 0 {
		return []byte{byte(rng.Uint32())}
	}
	i := rng.IntN(len(b))
	switch rng.IntN(4) {
	case 0:
		b[i] = byte(rng.Uint32())
	case 1:
		b = append(b[:i], append([]byte{byte(rng.Uint32())}, b[i:]...)...)
	case 2:
		b = append(b[:i], b[i+1:]...)
	default:
		b = b[:i]
	}
	return b
}
