package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fillRandom sets every field of the value v points to at random: nil,
// empty and short slices, nil and set pointers, strings with what JSON
// escapes (quotes, backslashes, control characters, HTML's <>&, U+2028,
// invalid UTF-8) or not, floats of every magnitude (zero, −0, subnormal,
// huge), zero and nonzero omitempty fields.
func fillRandom(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 6 || rng.IntN(3) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillRandom(rng, v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(rng, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		switch k := rng.IntN(5); {
		case k == 0 || depth > 8:
			v.SetZero()
		case k == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + rng.IntN(3)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fillRandom(rng, v.Index(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString(randomString(rng))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		switch rng.IntN(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(int64(rng.IntN(100)))
		case 2:
			v.SetInt(-int64(rng.IntN(1000)))
		default:
			v.SetInt(int64(rng.Uint64() >> uint(1+rng.IntN(63))))
		}
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(rng.Uint64() >> uint(rng.IntN(64)))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(randomFloat(rng))
	default:
		panic("fillRandom: " + v.Type().String())
	}
}

// randomString is empty, a plain name or path, or one with characters
// JSON escapes or HTML would.
func randomString(rng *rand.Rand) string {
	switch rng.IntN(4) {
	case 0:
		return ""
	case 1:
		return [...]string{"MPI_Allreduce", "/usr/lib/x86_64-linux-gnu/libmpi.so.40+0x1f2e3", "stencil.c", "late_sender"}[rng.IntN(4)]
	}
	parts := []string{"a", "Z", "9", " ", `"`, `\`, "/", "<", ">", "&", "\x00", "\x1f", "\n", "\t", "\b", "\f", "\r",
		"\x7f", "é", "€", "\u2028", "\u2029", "\xff", "\xe2\x82", "𝄞"}
	var b strings.Builder
	for range 1 + rng.IntN(6) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

// randomFloat is zero, −0, a time in seconds or a float of any
// magnitude and sign (JSON's %f and %e ranges and their edges).
func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(8) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return float64(rng.IntN(1e12)) / 1e9
	case 3:
		return [...]float64{1e-6, 1e21, math.Nextafter(1e-6, 0), math.Nextafter(1e21, 0), 5e-324, math.MaxFloat64,
			-1e-7, 123456789e-16, 1, -1, 0.1}[rng.IntN(11)]
	}
	f := math.Float64frombits(rng.Uint64())
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 1.5
	}
	if rng.IntN(2) == 0 {
		f = (rng.Float64() + 0.5) * math.Pow(10, float64(rng.IntN(60)-30))
		if rng.IntN(3) == 0 {
			f = -f
		}
	}
	return f
}

// encodingJSON is AppendIndentedJSON (indent) or AppendJSON as
// encoding/json writes it.
func encodingJSON(t *testing.T, r *Report, indent bool) []byte {
	t.Helper()
	if !indent {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TestReportJSON compares AppendIndentedJSON and AppendJSON with
// encoding/json on random reports.
func TestReportJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for i := range 2000 {
		var r Report
		fillRandom(rng, reflect.ValueOf(&r).Elem(), 0)
		if i%7 == 0 {
			// A report of the size of a real one's call sites.
			r.Intervals = make([]Interval, 2)
			for j := range r.Intervals {
				iv := &r.Intervals[j]
				fillRandom(rng, reflect.ValueOf(iv).Elem(), 1)
				iv.SRC = make([]SRC, 40)
				for k := range iv.SRC {
					fillRandom(rng, reflect.ValueOf(&iv.SRC[k]).Elem(), 3)
				}
			}
		}
		for _, indent := range []bool{true, false} {
			want := encodingJSON(t, &r, indent)
			got, err := appendReportJSON([]byte("x"), &r, indent)
			if err != nil {
				t.Fatalf("report %d: %v", i, err)
			}
			if got[0] != 'x' {
				t.Fatalf("report %d: dst not appended to", i)
			}
			if g, w := string(got[1:]), string(want); g != w {
				n := 0
				for n < len(g) && n < len(w) && g[n] == w[n] {
					n++
				}
				lo := max(0, n-200)
				t.Fatalf("report %d (indent %v) differs from encoding/json's at byte %d:\n got …%s\nwant …%s", i, indent, n,
					g[lo:min(len(g), n+100)], w[lo:min(len(w), n+100)])
			}
		}
	}
}

// TestReportJSONBadFloat: a float JSON cannot encode, in a call site's
// figures or elsewhere, fails as encoding/json fails.
func TestReportJSONBadFloat(t *testing.T) {
	for _, set := range []func(*Report){
		func(r *Report) { r.Intervals[0].SRC[0].Ranks[0].Overlap = math.NaN() },
		func(r *Report) { r.Intervals[0].Causes[0].Delay = math.Inf(-1) },
		func(r *Report) { r.Intervals[0].Main.LostTime = math.Inf(1) },
		func(r *Report) { r.Intervals[0].Ranks[0].CallMix[0].TimeShare = math.NaN() },
		func(r *Report) { r.Intervals[0].MessageSizes[0].Throughput = math.Inf(1) },
		func(r *Report) { r.Findings.Losses[0].Share = math.NaN() },
	} {
		r := &Report{Findings: &Findings{Losses: []Loss{{}}}, Intervals: []Interval{{
			Ranks:   []Rank{{RankProfile: RankProfile{CallMix: []CallMix{{}}}}},
			SRC:     []SRC{{Ranks: []SRCRank{{}}}},
			Causes:  []Cause{{}},
			Profile: Profile{MessageSizes: []SizeBin{{}}},
		}}}
		set(r)
		_, want := json.Marshal(r)
		for _, f := range []func([]byte, *Report) ([]byte, error){AppendIndentedJSON, AppendJSON} {
			_, err := f(nil, r)
			if err == nil || want == nil || err.Error() != want.Error() {
				t.Errorf("error %v, want %v", err, want)
			}
		}
	}
}

// TestReportJSONFloat compares the floats with encoding/json's: seconds
// from nanoseconds of every length, their neighbours and random doubles.
func TestReportJSONFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	check := func(v float64) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		w := &reportJSON{indent: true}
		w.float(v)
		if string(w.b) != string(want) {
			t.Fatalf("%v (%#x): %s, want %s", v, math.Float64bits(v), w.b, want)
		}
	}
	for range 300000 {
		n := rng.Int64N(int64(math.Pow10(1 + rng.IntN(17))))
		v := float64(n) / 1e9
		if rng.IntN(2) == 0 {
			v = -v
		}
		check(v)
		check(math.Nextafter(v, 0))
		check(math.Nextafter(v, math.Inf(1)))
		check(randomFloat(rng))
	}
	for _, v := range []float64{1e-6, math.Nextafter(1e-6, 0), 1e6, math.Nextafter(1e6, 0), 999999.999999999,
		999999999999999e-9, 1e15 / 1e9, 0.1, 0.2, 0.3, 1.0 / 3, 5e-324, math.MaxFloat64} {
		check(v)
		check(-v)
	}
}

// TestPut compares put with appending the piece's text, for pieces of
// every length to past pieceMax and buffers of every spare capacity
// around it.
func TestPut(t *testing.T) {
	text := strings.Repeat(`,"abcdefghij": `, 5)
	for n := range pieceMax + 12 {
		p := newPiece(text[:n])
		for spare := range pieceMax + 12 {
			w := &reportJSON{b: append(make([]byte, 0, 5+spare), "12345"...)}
			w.put(&p)
			if got, want := string(w.b), "12345"+text[:n]; got != want {
				t.Fatalf("piece of %d bytes, %d spare: %q, want %q", n, spare, got, want)
			}
		}
	}
}

// TestPiecesDepth compares the call sites', waits' and causes' objects,
// written by pieces as an array's first and later elements, with
// encoding/json's at every depth to past where their pieces outgrow
// pieceMax, indented and compact.
func TestPiecesDepth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for d := range 40 {
		var s SRC
		var x Wait
		var c Cause
		fillRandom(rng, reflect.ValueOf(&s).Elem(), 3)
		fillRandom(rng, reflect.ValueOf(&x).Elem(), 3)
		fillRandom(rng, reflect.ValueOf(&c).Elem(), 3)
		for _, indent := range []bool{true, false} {
			for _, first := range []bool{true, false} {
				for _, o := range []struct {
					v     any
					write func(w *reportJSON)
				}{
					{s, func(w *reportJSON) { w.src(d, &s, first) }},
					{x, func(w *reportJSON) { w.wait(d, &x, first) }},
					{c, func(w *reportJSON) { w.cause(d, &c, first) }},
				} {
					var want []byte
					var err error
					if indent {
						ind := strings.Repeat("  ", d)
						var b bytes.Buffer
						enc := json.NewEncoder(&b)
						enc.SetEscapeHTML(false)
						enc.SetIndent(ind, "  ")
						err = enc.Encode(o.v)
						want = append([]byte("\n"+ind), bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
					} else {
						want, err = json.Marshal(o.v)
					}
					if err != nil {
						t.Fatal(err)
					}
					if !first {
						want = append([]byte(","), want...)
					}
					w := &reportJSON{indent: indent, plain: &jsonPlain[1]}
					if !indent {
						w.plain = &jsonPlain[0]
					}
					w.enc = json.NewEncoder(&w.tmp)
					w.enc.SetEscapeHTML(!indent)
					o.write(w)
					if w.err != nil || w.bad {
						continue // a float JSON cannot encode: TestReportJSONBadFloat
					}
					if string(w.b) != string(want) {
						t.Fatalf("depth %d, indent %v, first %v: %s\nwant %s", d, indent, first, w.b, want)
					}
				}
			}
		}
	}
}
