package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/otf2/otf2test"
)

// scorepLS4 is a real Score-P archive of ../shared/otf2 (issue 18): its
// absence fails the test.
func scorepLS4(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "otf2", "scorep_ls4"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "traces.otf2")); err != nil {
		t.Fatalf("the Score-P test traces are missing: %s must hold traces.otf2 (issue 18): %v", dir, err)
	}
	return dir
}

// dtpa takes an OTF2 archive (the experiment directory or its anchor
// file) where it takes an application name, with every output option, and
// removes its temporary conversion afterwards.
func TestOTF2Archive(t *testing.T) {
	exp := scorepLS4(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := t.TempDir()
	for _, c := range []struct {
		name  string
		args  []string
		check func(t *testing.T, stdout string)
	}{
		{"report", []string{exp}, func(t *testing.T, s string) {
			if !strings.Contains(s, "Processors: 4") || !strings.Contains(s, "Real sync 1.00") {
				t.Errorf("report lacks the processors or the late sender's Real Sync:\n%s", s)
			}
		}},
		{"json of the anchor", []string{"--json", filepath.Join(exp, "traces.otf2")}, func(t *testing.T, s string) {
			var rep struct {
				Processors int `json:"processors"`
			}
			if err := json.Unmarshal([]byte(s), &rep); err != nil || rep.Processors != 4 {
				t.Errorf("JSON report: %v, processors %d", err, rep.Processors)
			}
		}},
		{"html", []string{"--html", "-o", filepath.Join(out, "r.html"), exp}, func(t *testing.T, _ string) {
			if b, err := os.ReadFile(filepath.Join(out, "r.html")); err != nil || !bytes.Contains(b, []byte("<html")) {
				t.Errorf("HTML page: %v", err)
			}
		}},
		{"chrome export", []string{"--export", "chrome", "-o", filepath.Join(out, "r.json"), exp}, func(t *testing.T, _ string) {
			if b, err := os.ReadFile(filepath.Join(out, "r.json")); err != nil || !json.Valid(b) {
				t.Errorf("Chrome export: %v", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(context.Background(), append([]string{"dtpa"}, c.args...), &stdout, &stderr, nil); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			c.check(t, stdout.String())
			left, _ := os.ReadDir(tmp)
			for _, e := range left {
				if strings.HasPrefix(e.Name(), "dtpa-otf2-") {
					t.Errorf("temporary conversion %s left behind", e.Name())
				}
			}
		})
	}
}

// A damaged archive: the error names the file.
func TestOTF2ArchiveRefused(t *testing.T) {
	anchor := filepath.Join(t.TempDir(), "traces.otf2")
	if err := os.WriteFile(anchor, []byte("not OTF2"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"dtpa", anchor}, &stdout, &stderr, nil); code != 1 || !strings.Contains(stderr.String(), anchor) {
		t.Fatalf("exit %d, stderr %q; want 1 and the file named", code, stderr.String())
	}
}

// An anchor file whose damage keeps libotf2 reading it (seconds to a
// minute for this one, with the machine) is read first in a child dtpa,
// stopped after AnchorTimeout (1 s here, DTPA_OTF2_ANCHOR_TIMEOUT): the
// real binary says which file is damaged and exits 1.
func TestOTF2DamagedAnchorBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(testenv.Root(), "bin", "dtpa")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "bin/dtpa missing: run make build")
	}
	exp := filepath.Join(t.TempDir(), "scorep_ls4")
	if out, err := exec.Command("cp", "-r", scorepLS4(t), exp).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	anchor := filepath.Join(exp, "traces.otf2")
	os.Chmod(anchor, 0o644)
	if err := otf2test.DamageAnchor(anchor); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, exp)
	cmd.Env = append(os.Environ(), "DTPA_OTF2_ANCHOR_TIMEOUT=1s")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), anchor+": the anchor file is damaged: libotf2 did not finish reading it in 1s") {
		t.Fatalf("%v, stderr %q; want exit 1 and the anchor named damaged", err, stderr.String())
	}
}
