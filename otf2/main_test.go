package otf2

import (
	"os"
	"testing"
)

// TestMain lets the test binary be the child that reads anchor files
// (ServeAnchorCheck), as dtpa is.
func TestMain(m *testing.M) {
	ServeAnchorCheck()
	os.Exit(m.Run())
}
