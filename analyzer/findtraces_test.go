package analyzer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindTraces: every way a user names the traces finds them, and a name
// that matches nothing lists the tasks the directory does hold.
func TestFindTraces(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "runs", "r1")
	other := filepath.Join(root, "two")
	for _, d := range []string{sub, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(p string) {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < 3; r++ {
		touch(filepath.Join(sub, "app."+string(rune('0'+r))+".trc"))
	}
	touch(filepath.Join(sub, "app")) // the executable beside its traces
	touch(filepath.Join(sub, "notes.txt"))
	qe := filepath.Join(root, "qe")
	if err := os.Mkdir(qe, 0o755); err != nil {
		t.Fatal(err)
	}
	touch(filepath.Join(qe, "pw.0.trc")) // written by pw.x
	touch(filepath.Join(qe, "pw.x"))
	touch(filepath.Join(other, "a.0.trc"))
	touch(filepath.Join(other, "b.0.trc"))
	touch(filepath.Join(other, "b.1.trc"))

	tests := []struct {
		dir, name      string
		wantDir, wantT string
	}{
		{sub, "app", sub, "app"},
		{sub, "./app", sub, "app"},
		{sub, "app.0.trc", sub, "app"},
		{sub, "app.2.trc", sub, "app"},
		{root, "runs/r1/app", sub, "app"},
		{root, "runs/r1/app.1.trc", sub, "app"},
		{root, "runs/r1", sub, "app"}, // a directory with one task
		{"", filepath.Join(sub, "app"), sub, "app"},
		{qe, "pw.x", qe, "pw"}, // the program's name, extension and all
		{qe, "./pw.x", qe, "pw"},
		{root, "qe/pw.x", qe, "pw"},
	}
	for _, tt := range tests {
		d, app, err := FindTraces(tt.dir, tt.name)
		if err != nil || filepath.Clean(d) != filepath.Clean(tt.wantDir) || app != tt.wantT {
			t.Errorf("FindTraces(%q, %q) = %q, %q, %v; want %q, %q", tt.dir, tt.name, d, app, err, tt.wantDir, tt.wantT)
		}
	}

	// A directory named like the task beside its traces: the task.
	touch(filepath.Join(other, "x.0.trc"))
	if err := os.Mkdir(filepath.Join(other, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch(filepath.Join(other, "x", "y.0.trc"))
	if d, app, err := FindTraces(other, "x"); err != nil || d != other || app != "x" {
		t.Errorf("task x beside directory x: %q, %q, %v", d, app, err)
	}

	for _, tt := range []struct{ dir, name, want string }{
		{other, "c", `no traces of "c" in ` + other + ` (looked for c.<rank>.trc); the traces there are of: a (1 trace), b (2 traces), x (1 trace)`},
		{root, "two", "holds the traces of several tasks; name one: a, b, x"},
		{root, "runs", "is a directory without traces"},
		{root, "app", `no traces of "app" in ` + root + ` (looked for app.<rank>.trc), and no traces of any task there`},
	} {
		_, _, err := FindTraces(tt.dir, tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FindTraces(%q, %q): %v, want …%s…", tt.dir, tt.name, err, tt.want)
		}
	}
}

func TestTaskOf(t *testing.T) {
	for name, want := range map[string]string{"app.0.trc": "app", "my.app.12.trc": "my.app", "app.trc": "", "app.x.trc": "", ".0.trc": "", "app.-1.trc": ""} {
		got, ok := taskOf(name)
		if got != want || ok != (want != "") {
			t.Errorf("taskOf(%q) = %q, %v", name, got, ok)
		}
	}
}
