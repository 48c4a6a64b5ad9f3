package version

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTracerVersion keeps Version equal to the tracer's, which the trace
// headers record (tracer/golib is a c-shared library, not importable).
func TestTracerVersion(t *testing.T) {
	src, err := os.ReadFile("../../tracer/golib/tracer.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const Version = "([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no const Version in tracer/golib/tracer.go")
	}
	if string(m[1]) != Version {
		t.Errorf("tracer version %s, commands %s", m[1], Version)
	}
	if !strings.HasPrefix(String(), Version) {
		t.Errorf("String() = %q", String())
	}
}
