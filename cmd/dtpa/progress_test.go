package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	tests := []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		// 2.5M events in 5 s: 500k/s; 7.5M left take 15 s.
		{2_500_000, 10_000_000, 5 * time.Second, "dtpa: 2.50M of 10.00M events (25%), 500.0k events/s, 15s left"},
		// Total unknown (a trace without footer): no share, no time left.
		{1200, 0, 2 * time.Second, "dtpa: 1.2k events, 600 events/s"},
		{10, 10, time.Second, "dtpa: 10 of 10 events (100%), 10 events/s"},
		{0, 10, 0, "dtpa: 0 of 10 events (0%), 0 events/s"},
	}
	for _, tt := range tests {
		if got := progressLine(tt.done, tt.total, tt.elapsed); got != tt.want {
			t.Errorf("progressLine(%d, %d, %v) = %q, want %q", tt.done, tt.total, tt.elapsed, got, tt.want)
		}
	}
}

// TestNoProgressOffTerminal: a buffer or a pipe is not a terminal, so
// dtpa writes no progress there.
func TestNoProgressOffTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file taken for a terminal")
	}
}

func TestVersion(t *testing.T) {
	out, errOut, code := dtpa(t, "--version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "dtpa version ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
