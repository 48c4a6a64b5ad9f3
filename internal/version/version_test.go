package version

import (
	"strings"
	"testing"
)

// TestString: the version string starts with the release. (The tracer is
// compiled with Version, tracer/tracer.mk; tracer's tests check that its
// trace headers carry it.)
func TestString(t *testing.T) {
	if !strings.HasPrefix(String(), Version) {
		t.Errorf("String() = %q", String())
	}
}
