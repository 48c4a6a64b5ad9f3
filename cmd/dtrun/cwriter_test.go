package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"google.golang.org/protobuf/proto"
)

// TestCwriterEnv: with DT_CWRITER=0 dtrun passes the knob alone (the Go
// writer on every node); by default, the knob and the parameters of
// tracer.par and the environment, encoded as the header's TracerParams; a
// bad tracer.par is said once and the defaults go.
func TestCwriterEnv(t *testing.T) {
	t.Chdir(t.TempDir())
	env := map[string]string{"DT_CWRITER": "0"}
	getenv := func(k string) string { return env[k] }
	var warn bytes.Buffer
	if kv := cwriterEnv(getenv, &warn); len(kv) != 1 || kv[0] != "DT_CWRITER=0" {
		t.Fatalf("with DT_CWRITER=0: %v", kv)
	}
	delete(env, "DT_CWRITER")
	env["MaxTraceSize"] = "77"
	if err := os.WriteFile("tracer.par", []byte("UserStackSize = 2\nTraceBufSize = 1M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	params := func() *tracepb.TracerParams {
		t.Helper()
		kv := cwriterEnv(getenv, &warn)
		if len(kv) != 2 || kv[0] != "DT_CWRITER=1" || !strings.HasPrefix(kv[1], "DT_PARAMS=") {
			t.Fatalf("env %v", kv)
		}
		b, err := hex.DecodeString(strings.TrimPrefix(kv[1], "DT_PARAMS="))
		var p tracepb.TracerParams
		if err == nil {
			err = proto.Unmarshal(b, &p)
		}
		if err != nil {
			t.Fatalf("%s: %v", kv[1], err)
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
// the C writer's ranks of its node where dtrun looks for the traces it
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
