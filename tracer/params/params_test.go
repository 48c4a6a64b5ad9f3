package params

import "testing"

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"256K", 256 << 10, true},
		{"64 MB", 64 << 20, true},
		{"1g", 1 << 30, true},
		{"1024", 1024, true},
		{"17179869184G", 0, false}, // 2^64: would wrap to 0
		{"17179869185G", 0, false}, // 2^64 + 1 GB: would wrap to 1 GB
		{"-1K", 0, false},
		{"K", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}
