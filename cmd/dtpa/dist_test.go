package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// asDist runs f with dist set as in an analysis process of dtpa-mpi
// (process 0 unless silent), and restores it.
func asDist(t *testing.T, silent bool, f func()) {
	t.Helper()
	old := dist
	defer func() { dist = old }()
	dist.on, dist.silent, dist.alone = true, silent, false
	f()
}

// TestDistAlone: under dtpa-mpi, --html and each --export are written by
// process 0 alone (dist.alone), as dtpa writes them; the other processes
// neither analyse nor write anything. A report of the distributed
// analysis (--json) is not alone; dtpa view is refused.
func TestDistAlone(t *testing.T) {
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
			if _, errOut, code := dtpa(t, args...); code != exitOK || !dist.alone {
				t.Errorf("process 0 %v: exit %d, alone %v: %s", args, code, dist.alone, errOut)
			}
		})
		if !sameTree(t, filepath.Join(out, "got"), filepath.Join(out, "want"), c.name == "app-otf2") {
			t.Errorf("%s: process 0 wrote what dtpa does not", c.name)
		}
		args[len(args)-2] = filepath.Join(out, "silent")
		asDist(t, true, func() {
			f := &fake{rep: func() *report.Report { t.Error("a silent process analysed"); return &report.Report{} }}
			if stdout, errOut, code := f.dtpa(t, args...); code != exitOK || stdout != "" || errOut != "" || !dist.alone {
				t.Errorf("silent %v: exit %d, alone %v, stdout %q, stderr %q", args, code, dist.alone, stdout, errOut)
			}
		})
		if _, err := os.Stat(filepath.Join(out, "silent")); !os.IsNotExist(err) {
			t.Errorf("a silent process wrote %s (%v)", c.name, err)
		}
	}
	asDist(t, false, func() {
		if _, _, code := dtpa(t, "--json", "--dir", dir, "app"); code != exitOK || dist.alone {
			t.Errorf("--json: exit %d, alone %v", code, dist.alone)
		}
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
