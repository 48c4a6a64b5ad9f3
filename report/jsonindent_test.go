package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// randomValue is a random JSON value of nested objects and arrays (empty
// ones too), strings holding JSON's punctuation, quotes, backslashes and
// control and non-ASCII characters, numbers, booleans and nulls.
func randomValue(rng *rand.Rand, depth int) any {
	str := func() string {
		const chars = `ab{}[],:" \/` + "\x01\n\té€"
		rs := []rune(chars)
		b := make([]rune, rng.IntN(8))
		for i := range b {
			b[i] = rs[rng.IntN(len(rs))]
		}
		return string(b)
	}
	k := rng.IntN(8)
	if depth > 4 {
		k = 2 + rng.IntN(6)
	}
	switch k {
	case 0:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[str()] = randomValue(rng, depth+1)
		}
		return m
	case 1:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randomValue(rng, depth+1)
		}
		return a
	case 2, 3:
		return str()
	case 4:
		return rng.NormFloat64() * 1e6
	case 5:
		return rng.IntN(2) == 0
	case 6:
		return nil
	}
	return rng.Int64()
}

// indentJSON indents what json.Marshal writes exactly as json.Indent does.
func TestIndentJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		v := randomValue(rng, 0)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(i%2 == 0)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		src := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		var want bytes.Buffer
		if err := json.Indent(&want, src, "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(nil, src); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("value %d %s:\ngot\n%s\nwant\n%s", i, src, got, want.Bytes())
		}
	}
}
