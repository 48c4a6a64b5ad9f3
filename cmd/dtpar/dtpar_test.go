package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/tracer/params"
)

func TestWritesDefaults(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Dir: dir}, &out); err != nil {
		t.Fatal(err)
	}
	p, err := params.Load(dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	d := params.Defaults()
	if p.UserStackSize != d.UserStackSize || p.MaxTraceSize != d.MaxTraceSize || p.TraceBufSize != d.TraceBufSize || p.Other != nil {
		t.Errorf("read back %+v, want %+v", p, d)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "tracer.par"))
	for _, name := range []string{"# ", "UserStackSize", "MaxTraceSize", "TraceBufSize"} {
		if !strings.Contains(string(b), name) {
			t.Errorf("tracer.par lacks %q:\n%s", name, b)
		}
	}
	if err := Run(context.Background(), Options{Dir: dir}, &out); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second run: %v", err)
	}
	if err := Run(context.Background(), Options{Dir: dir, Force: true}, &out); err != nil {
		t.Errorf("--force: %v", err)
	}
}

func TestStdout(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"dtpar", "--stdout"}, &out, &out); code != 0 || !strings.Contains(out.String(), "UserStackSize = 4") {
		t.Errorf("code %d\n%s", code, out.String())
	}
}

func TestParamsOverrides(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tracer.par"), []byte("UserStackSize = 1 # one frame\nTraceBufSize = 8M\nFoo = bar\n"), 0o644)
	env := map[string]string{"MaxTraceSize": "-1", "UserStackSize": "3"}
	p, err := params.Load(dir, func(k string) string { return env[k] })
	if err != nil || p.UserStackSize != 3 || p.MaxTraceSize != -1 || p.TraceBufSize != 8<<20 || p.Other["Foo"] != "bar" {
		t.Errorf("%+v %v", p, err)
	}
	os.WriteFile(filepath.Join(dir, "tracer.par"), []byte("UserStackSize = many\n"), 0o644)
	if _, err := params.Load(dir, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "tracer.par:1") {
		t.Errorf("bad value: %v", err)
	}
}
