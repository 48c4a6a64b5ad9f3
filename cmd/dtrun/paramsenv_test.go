package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// TestParamsEnv: dtrun passes the parameters of tracer.par and the
// environment, encoded as the header's TracerParams; a bad tracer.par is
// said once and the defaults go; DT_CWRITER, a knob of a writer no longer
// there, is said to be ignored.
func TestParamsEnv(t *testing.T) {
	t.Chdir(t.TempDir())
	env := map[string]string{"DT_CWRITER": "0"}
	getenv := func(k string) string { return env[k] }
	var warn bytes.Buffer
	if kv := paramsEnv(getenv, &warn); len(kv) != 1 || !strings.Contains(warn.String(), "DT_CWRITER is ignored") {
		t.Fatalf("with DT_CWRITER=0: %v, %q", kv, warn.String())
	}
	warn.Reset()
	delete(env, "DT_CWRITER")
	env["MaxTraceSize"] = "77"
	if err := os.WriteFile("tracer.par", []byte("UserStackSize = 2\nTraceBufSize = 1M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	params := func() *tracepb.TracerParams {
		t.Helper()
		kv := paramsEnv(getenv, &warn)
		if len(kv) != 1 || !strings.HasPrefix(kv[0], "DT_PARAMS=") {
			t.Fatalf("env %v", kv)
		}
		b, err := hex.DecodeString(strings.TrimPrefix(kv[0], "DT_PARAMS="))
		var p tracepb.TracerParams
		if err == nil {
			err = proto.Unmarshal(b, &p)
		}
		if err != nil {
			t.Fatalf("%s: %v", kv[0], err)
		}
		return &p
	}
	if p := params(); p.UserStackSize != 2 || p.TraceBufSize != 1<<20 || p.MaxTraceSizeMb != 77 || warn.Len() != 0 {
		t.Errorf("params %v, warning %q; want tracer.par's and the environment's", p, warn.String())
	}
	if err := os.WriteFile("tracer.par", []byte("UserStackSize = 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := params(); p.UserStackSize != 4 || !strings.Contains(warn.String(), "tracer.par:1") {
		t.Errorf("params %v, warning %q; want the defaults and the file's error", p, warn.String())
	}
}

// TestMarkCompaction: dtrun's spill directory holds the mark that tells
// the ranks of its node where dtrun looks for the traces it
// compacts: the trace directory, absolute.
func TestMarkCompaction(t *testing.T) {
	t.Chdir(t.TempDir())
	spill := t.TempDir()
	os.Mkdir("out", 0o755)
	markCompaction(spill, "out")
	b, err := os.ReadFile(filepath.Join(spill, compactMark))
	wd, _ := os.Getwd()
	if err != nil || string(b) != filepath.Join(wd, "out") {
		t.Errorf("mark %q (%v), want %q", b, err, filepath.Join(wd, "out"))
	}
}

// TestForwardedEnv: the tracer's variables in dtrun's environment go to
// the launcher for every rank (a rank on another node does not inherit
// them), but not those dtrun sets or reads alone, nor other variables.
func TestForwardedEnv(t *testing.T) {
	got := forwardedEnv([]string{"PATH=/bin", "DT_CLOCK_SKEW=1:+2.5:100,3:-0.7:-50", "DT_SPILL_DIR=/x", "DT_PARAMS=00",
		"DT_DISABLE=1", "DT_MPIRUN=srun", "DT_SPILL_ROOT=/y", "XDT_CLOCK=1", "DT_CLOCK=monotonic_raw"})
	want := []string{"DT_CLOCK_SKEW=1:+2.5:100,3:-0.7:-50", "DT_DISABLE=1", "DT_CLOCK=monotonic_raw"}
	if !slices.Equal(got, want) {
		t.Errorf("forwarded %q, want %q", got, want)
	}
}
