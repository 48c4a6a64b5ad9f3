package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/report"
)

// asDist runs f with dist set as in an analysis process of dtpa-mpi
// (process 0 unless silent), and restores it.
func asDist(t *testing.T, silent bool, f func()) {
	t.Helper()
	old := dist
	defer func() { dist = old }()
	dist.on, dist.silent = true, silent
	f()
}

// TestDistOutputs: under dtpa-mpi, --html and each --export are written
// by process 0 as dtpa writes them (here the analysis and the export of
// one process stand for the distributed ones, which are tested with the
// analyzer and package otf2 and end to end); the other processes take
// part in the analysis (a timeline recorder; a Chrome export to
// io.Discard; the OTF2 export) but write nothing. dtpa view is refused.
func TestDistOutputs(t *testing.T) {
	dir := lateSender(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"app.html", []string{"--html"}},
		{"app.json", []string{"--export", "chrome"}},
		{"app-otf2", []string{"--export", "otf2"}},
	} {
		out := t.TempDir()
		args := append(append([]string{}, c.args...), "--dir", dir, "-o", filepath.Join(out, "want"), "app")
		if _, errOut, code := dtpa(t, args...); code != exitOK {
			t.Fatalf("dtpa %v: exit %d: %s", args, code, errOut)
		}
		args[len(args)-2] = filepath.Join(out, "got")
		asDist(t, false, func() {
			if _, errOut, code := dtpa(t, args...); code != exitOK {
				t.Errorf("process 0 %v: exit %d: %s", args, code, errOut)
			}
		})
		if !sameTree(t, filepath.Join(out, "got"), filepath.Join(out, "want"), c.name == "app-otf2") {
			t.Errorf("%s: process 0 wrote what dtpa does not", c.name)
		}
		args[len(args)-2] = filepath.Join(out, "silent")
		asDist(t, true, func() {
			f := &fake{rep: func() *report.Report { return &report.Report{} }}
			exported := false
			old := exportOTF2Archive
			defer func() { exportOTF2Archive = old }()
			exportOTF2Archive = func(context.Context, otf2.ExportOptions) (otf2.ExportStats, error) {
				exported = true
				return otf2.ExportStats{}, nil
			}
			stdout, errOut, code := f.dtpa(t, args...)
			if code != exitOK || stdout != "" || errOut != "" {
				t.Errorf("silent %v: exit %d, stdout %q, stderr %q", args, code, stdout, errOut)
			}
			switch c.name {
			case "app.html":
				if f.got.Timeline == nil {
					t.Error("a silent process records no timeline for --html")
				}
			case "app.json":
				if f.got.Chrome == nil || f.got.Chrome.W != io.Discard {
					t.Errorf("a silent process's Chrome export: %+v", f.got.Chrome)
				}
			case "app-otf2":
				if !exported {
					t.Error("a silent process took no part in the OTF2 export")
				}
			}
		})
		if _, err := os.Stat(filepath.Join(out, "silent")); !os.IsNotExist(err) {
			t.Errorf("a silent process wrote %s (%v)", c.name, err)
		}
		if left, _ := os.ReadDir(out); len(left) != 2 {
			t.Errorf("left in the output's directory: %v", left)
		}
	}
	asDist(t, false, func() {
		if _, errOut, code := dtpa(t, "view", "--dir", dir, "app"); code != exitError || !strings.Contains(errOut, "run dtpa view, not dtpa-mpi") {
			t.Errorf("view: exit %d, stderr %q", code, errOut)
		}
	})
}

// sameTree reports whether got and want (files, or directories of files
// when dir) hold the same bytes. In an OTF2 archive the anchor holds a
// random trace identifier and is left out.
func sameTree(t *testing.T, got, want string, dir bool) bool {
	t.Helper()
	if !dir {
		g, err1 := os.ReadFile(got)
		w, err2 := os.ReadFile(want)
		return err1 == nil && err2 == nil && bytes.Equal(g, w)
	}
	same := true
	n := 0
	err := filepath.WalkDir(want, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if rel, _ := filepath.Rel(want, p); rel != "traces.otf2" {
			same = same && sameTree(t, filepath.Join(got, rel), p, false)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("%s: %d files, %v", want, n, err)
	}
	return same
}
