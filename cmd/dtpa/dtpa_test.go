package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fake stands in for the analyzer: it records the options it was given,
// sends the warnings through opts.Warn as the analyzer does, and returns
// rep (a fresh copy per call) or err.
type fake struct {
	rep  func() *report.Report
	err  error
	got  analyzer.Options
	warn []string
}

func (f *fake) analyze(ctx context.Context, opts analyzer.Options) (*report.Report, error) {
	f.got = opts
	if f.err != nil {
		return nil, f.err
	}
	for _, w := range f.warn {
		opts.Warn(w)
	}
	return f.rep(), nil
}

// dtpa runs the command line as the shell would, with f in place of the
// analyzer, and returns its output.
func (f *fake) dtpa(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, f.analyze, args...)
}

// dtpa runs the command line as the shell would, with the real analyzer.
func dtpa(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, nil, args...)
}

func run(t *testing.T, analyze AnalyzeFunc, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"dtpa"}, args...), &out, &errb, analyze)
	return out.String(), errb.String(), code
}

// TestGolden renders hand-built reports through the whole command line;
// the .trpa layouts themselves are covered in report/trpa.
func TestGolden(t *testing.T) {
	tests := []struct {
		file string
		rep  func() *report.Report
		args []string
	}{
		{"full.json", reporttest.Full, []string{"--json", "jacobi"}},
		{"full-level1.json", reporttest.Full, []string{"--json", "-wp", "jacobi", "1"}},
		{"minimal.json", reporttest.Minimal, []string{"--json", "hello"}},
		{"full-level1-src20.trpa", reporttest.Full, []string{"-src", "20", "jacobi", "1"}},
		{"full-minimal-report.trpa", reporttest.Full, []string{"-wp", "-src", "100", "-srct", "100", "jacobi", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f := &fake{rep: tt.rep}
			out, errOut, code := f.dtpa(t, tt.args...)
			// stderr has the report's warnings.
			var want strings.Builder
			for _, w := range tt.rep().Warnings {
				want.WriteString("dtpa: warning: " + w + "\n")
			}
			if code != 0 || errOut != want.String() {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			reporttest.Golden(t, filepath.Join("testdata", tt.file), []byte(out), *update)
		})
	}
}

// TestDashes: the options work exactly as docs/characteristics.md §1 writes them (one dash,
// multi-letter, value as the next argument) and with two dashes or '='.
func TestDashes(t *testing.T) {
	f := &fake{rep: reporttest.Full}
	want, _, _ := f.dtpa(t, "-wp", "-src", "20", "-srct", "10", "jacobi")
	for _, args := range [][]string{
		{"--wp", "--src", "20", "--srct", "10", "jacobi"},
		{"-wp", "-src=20", "--srct=10", "jacobi"},
		{"--wp=true", "-src", "20.0", "-srct", "10", "jacobi"},
	} {
		got, errOut, code := f.dtpa(t, args...)
		if code != 0 || got != want {
			t.Errorf("%v: exit %d, stderr %q, output differs from -wp -src 20 -srct 10", args, code, errOut)
		}
	}
	if !strings.Contains(want, "by decreasing Comm; cut below 20%") || !strings.Contains(want, "by source position; cut below 10%") {
		t.Errorf("-src 20 -srct 10: want both SRC listings")
	}
	if strings.Contains(want, "--- The execution characteristics ---") {
		t.Errorf("-wp: execution characteristics printed")
	}
}

// TestOptionsPassed: the command line reaches analyzer.Options.
func TestOptionsPassed(t *testing.T) {
	f := &fake{rep: reporttest.Minimal}
	if _, errOut, code := f.dtpa(t, "--dir", "/traces", "--exe", "/bin/app", "app", "2"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if f.got.Dir != "/traces" || f.got.App != "app" || f.got.MaxLevel != 2 || f.got.Exe != "/bin/app" || f.got.Warn == nil ||
		f.got.Symbolizer == nil {
		t.Errorf("analyzer.Options = %+v", f.got)
	}
	f.dtpa(t, "app")
	if f.got.Dir != "." || f.got.MaxLevel != -1 {
		t.Errorf("defaults: Dir %q MaxLevel %d, want \".\" -1", f.got.Dir, f.got.MaxLevel)
	}
}

// TestLevel: intervals deeper than level are left out of both reports,
// whatever the analyzer returned.
func TestLevel(t *testing.T) {
	f := &fake{rep: reporttest.Full}
	for level, want := range map[string]int{"0": 1, "1": 2, "2": 3, "7": 3, "": 3} {
		args := []string{"jacobi"}
		if level != "" {
			args = append(args, level)
		}
		out, _, _ := f.dtpa(t, args...)
		if n := strings.Count(out, "\nINTERVAL "); n != want {
			t.Errorf("level %q: %d intervals in .trpa, want %d", level, n, want)
		}
		out, _, _ = f.dtpa(t, append([]string{"--json"}, args...)...)
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Intervals) != want {
			t.Errorf("level %q: %d intervals in JSON, want %d", level, len(r.Intervals), want)
		}
	}
}

// TestJSON: the JSON report is the model itself (every field, -wp
// ignored), indented, with empty arrays instead of null.
func TestJSON(t *testing.T) {
	f := &fake{rep: reporttest.Full}
	out, _, code := f.dtpa(t, "--json", "-wp", "-src", "100", "jacobi")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var got report.Report
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := reporttest.Full()
	want.Findings = report.FindingsOf(want)
	if got.Findings == nil || !reflect.DeepEqual(&got, nonNil(want)) {
		t.Errorf("JSON does not decode to the report")
	}
	if !strings.HasPrefix(out, "{\n  \"schema\": \"dtpa-report/1\",\n") || !strings.HasSuffix(out, "}\n") {
		t.Errorf("JSON not 2-space indented with a final newline:\n%.80s", out)
	}
	f = &fake{rep: func() *report.Report { return &report.Report{Schema: report.Schema, Task: "x"} }}
	out, _, _ = f.dtpa(t, "--json", "x")
	if strings.Contains(out, "null") {
		t.Errorf("empty report has null: %s", out)
	}
}

// TestOutputFile: -o writes the report to a file and nothing to stdout; a
// file that cannot be written is an error.
func TestOutputFile(t *testing.T) {
	f := &fake{rep: reporttest.Minimal}
	want, _, _ := f.dtpa(t, "hello")
	path := filepath.Join(t.TempDir(), "hello.trpa")
	out, errOut, code := f.dtpa(t, "-o", path, "hello")
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Errorf("file: %v, same as stdout report: %v", err, string(b) == want)
	}
	_, errOut, code = f.dtpa(t, "-o", filepath.Join(t.TempDir(), "no", "such", "dir"), "hello")
	if code != exitError || !strings.HasPrefix(errOut, "dtpa: writing report: ") {
		t.Errorf("unwritable -o: exit %d, stderr %q", code, errOut)
	}
}

// TestWarnings: analyzer warnings go to stderr once the analysis is over,
// one line per problem with the ranks it affects, and the report still
// goes to stdout.
func TestWarnings(t *testing.T) {
	ws := []string{"Rank 3: trace truncated", "clock condition violated", "Rank 1: trace truncated", "Rank 2: trace truncated"}
	f := &fake{rep: func() *report.Report {
		r := reporttest.Full()
		r.Warnings = ws
		return r
	}, warn: ws}
	out, errOut, code := f.dtpa(t, "jacobi")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if want := "dtpa: warning: Ranks 1-3: trace truncated\ndtpa: warning: clock condition violated\n"; errOut != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	if !strings.Contains(out, "Warnings (2):\n  - Ranks 1-3: trace truncated\n  - clock condition violated\n") {
		t.Errorf("report does not list the warnings grouped:\n%s", out)
	}
}

// TestUsage: no arguments prints the usage on stderr with status 2;
// --help prints it on stdout with status 0.
func TestUsage(t *testing.T) {
	out, errOut, code := dtpa(t)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "USAGE:\n   dtpa [-wp] [-src NN] [-srct NN]") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %.200q", code, out, errOut)
	}
	for _, h := range []string{"--help", "-h", "-help"} {
		out, errOut, code = dtpa(t, h)
		if code != 0 || errOut != "" || !strings.Contains(out, "EXAMPLES:") || !strings.Contains(out, "dtpa -wp -src 100 -srct 100 jacobi 0") {
			t.Errorf("%s: exit %d, stderr %q, help without examples", h, code, errOut)
		}
	}
}

// TestErrors: command-line mistakes exit 2, failed analyses exit 1, both
// with one "dtpa: " line on stderr and nothing on stdout.
func TestErrors(t *testing.T) {
	f := &fake{err: errors.New("no traces app.*.trc in /x")}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"app"}, exitError, "dtpa: no traces app.*.trc in /x\n"},
		{[]string{"-x", "app"}, exitUsage, "dtpa: flag provided but not defined: -x\n"},
		{[]string{"-src", "abc", "app"}, exitUsage, "dtpa: invalid value \"abc\" for flag -src"},
		{[]string{"-src", "101", "app"}, exitUsage, "dtpa: -src takes a percentage from 0 to 100, not 101\n"},
		{[]string{"-srct", "-1", "app"}, exitUsage, "dtpa: -srct takes a percentage"},
		{[]string{"app", "x"}, exitUsage, "dtpa: level must be a non-negative integer, not \"x\"\n"},
		{[]string{"app", "-1"}, exitUsage, "dtpa: options must come before <app>: -1\n"},
		{[]string{"app", "-wp"}, exitUsage, "dtpa: options must come before <app>: -wp\n"},
		{[]string{"app", "1", "-wp"}, exitUsage, "dtpa: options must come before <app>"},
		{[]string{"app", "1", "2"}, exitUsage, "dtpa: too many arguments: app 1 2\n"},
		{[]string{"-src"}, exitUsage, "dtpa: flag needs an argument: -src\n"},
	}
	for _, tt := range tests {
		out, errOut, code := f.dtpa(t, tt.args...)
		if code != tt.code || out != "" || !strings.HasPrefix(errOut, tt.msg) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q…)", tt.args, code, tt.code, out, errOut, tt.msg)
		}
	}
}

// TestOutputNotRegular: --html (written to a temporary file renamed over
// -o's path) writes a path that is not a regular file in place: a FIFO
// stays a FIFO and gets the page, a symbolic link stays a link and its
// target gets it (renaming over /dev/null, run as root, made it a file).
func TestOutputNotRegular(t *testing.T) {
	f := &fake{rep: reporttest.Minimal}
	dir := t.TempDir()
	want, _, _ := f.dtpa(t, "--html", "hello")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	if _, errOut, code := f.dtpa(t, "--html", "-o", fifo, "hello"); code != 0 {
		t.Fatalf("--html -o FIFO: exit %d, stderr %q", code, errOut)
	}
	select {
	case b := <-got:
		if string(b) != want {
			t.Errorf("the FIFO read %d bytes, want the page's %d", len(b), len(want))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing came through the FIFO: -o replaced it")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is no longer one: %v %v", st.Mode(), err)
	}
	target, link := filepath.Join(dir, "page.html"), filepath.Join(dir, "link.html")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := f.dtpa(t, "--html", "-o", link, "hello"); code != 0 {
		t.Fatalf("--html -o link: exit %d, stderr %q", code, errOut)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != want {
		t.Errorf("the link's target holds %d bytes, want the page's %d", len(b), len(want))
	}
}
