package main

import (
	"context"
	"os"
	"testing"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/otf2"
)

// TestMain makes the test binary serve as dtpa does: it reads OTF2 anchor
// files, and writes OTF2 archives, in child processes of itself.
func TestMain(m *testing.M) {
	otf2.ServeAnchorCheck()
	if os.Getenv(otf2IntoEnv) != "" {
		os.Exit(Main(context.Background(), os.Args, os.Stdout, os.Stderr, analyzer.Analyze))
	}
	otf2Child = true
	os.Exit(m.Run())
}
