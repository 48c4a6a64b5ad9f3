package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/otf2/otf2test"
)

// TestDtpaMPIOutputs: dtpa-mpi's --html page and its exports (chrome,
// otf2) of a real run equal dtpa's of the same traces at 1 to 4 analysis
// processes, with dtpa's stdout, warnings and exit code. The stencil's 3
// ranks divide evenly among neither 2 nor 4 processes, and 4 processes
// leave one without ranks. The page and the Chrome export must be
// byte-identical; the OTF2 archive too but for the anchor's trace
// identifier, which libotf2 draws at random for every archive (two dtpa
// runs differ in it as well): otf2-print lists the same, and dtpa reads
// back the same report from it. The OTF2 archive of threads.c's 4 ranks
// (a location per thread) likewise.
func TestDtpaMPIOutputs(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	needDtpaMPI(t)
	dir := t.TempDir()
	exe := compile(t, m, dir, "stencil")
	trace(t, m, dir, nil, 3, exe, "40", "100")
	formats := []struct {
		name string
		args []string
		same func(t *testing.T, got, want string)
	}{
		{"html", []string{"--html"}, sameFile},
		{"chrome", []string{"--export", "chrome"}, sameFile},
		{"otf2", []string{"--export", "otf2"}, sameOTF2},
	}
	// threads.c (MPI_THREAD_MULTIPLE): a location per thread in the
	// archive, which the processes' parts carry.
	exe = compile(t, m, dir, "threads")
	trace(t, m, dir, nil, 4, exe)
	formats = append(formats, struct {
		name string
		args []string
		same func(t *testing.T, got, want string)
	}{"otf2-threads", []string{"--export", "otf2"}, sameOTF2})
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			app := "stencil"
			if f.name == "otf2-threads" {
				app = "threads"
			}
			want := filepath.Join(dir, "want-"+f.name)
			args := append(append([]string{}, f.args...), "-o", want, app)
			wantOut, wantErr, wantCode := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), args...)
			if wantCode != 0 {
				t.Fatalf("dtpa %s: exit %d\n%s", strings.Join(args, " "), wantCode, wantErr)
			}
			for _, np := range mpiProcs {
				got := filepath.Join(dir, "got-"+f.name+"-"+strconv.Itoa(np))
				args := append(append([]string{}, f.args...), "-o", got, app)
				out, stderr, code := dtpaMPI(t, dir, np, args...)
				if code != wantCode || out != wantOut || stderr != wantErr {
					t.Errorf("dtpa-mpi -np %d %s: exit %d, stdout %q, stderr\n%s\nwant dtpa's exit %d, stdout %q, stderr\n%s",
						np, strings.Join(args, " "), code, out, stderr, wantCode, wantOut, wantErr)
					continue
				}
				f.same(t, got, want)
			}
		})
	}
}

// sameFile fails unless the files got and want hold the same bytes.
func sameFile(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Errorf("%s (%d bytes) differs from dtpa's %s (%d bytes) at byte %d", got, len(g), want, len(w), i)
	}
}

// traceID is the anchor's random trace identifier in otf2-print -A.
var traceID = regexp.MustCompile(`(?m)^Trace identifier .*$`)

// sameOTF2 fails unless the archives in the directories got and want hold
// the same files with the same bytes, but for the anchor, whose
// otf2-print -A listing must be the same once the trace identifier is
// masked.
func sameOTF2(t *testing.T, got, want string) {
	t.Helper()
	files, err := otf2test.Files(want)
	if err != nil {
		t.Fatal(err)
	}
	if gf, _ := otf2test.Files(got); len(gf) != len(files) {
		t.Errorf("%s holds %d files, dtpa's %s %d", got, len(gf), want, len(files))
	}
	for _, f := range files {
		if f != "/"+otf2.ArchiveName {
			sameFile(t, got+f, want+f)
		}
	}
	if !otf2test.Available() {
		t.Log("otf2-print is not installed (make deps): the anchors are not compared")
		return
	}
	var listings [2][]byte
	for i, d := range []string{got, want} {
		out, stderr, code := runJob(t, d, "otf2-print", "-A", otf2.ArchiveName)
		if code != 0 {
			t.Fatalf("otf2-print -A %s: exit %d\n%s", d, code, stderr)
		}
		listings[i] = traceID.ReplaceAll([]byte(out), nil)
	}
	if !bytes.Equal(listings[0], listings[1]) {
		t.Errorf("otf2-print -A of %s:\n%s\nof dtpa's %s:\n%s", got, listings[0], want, listings[1])
	}
	// The events, as otf2-print reads them through the anchor.
	var events [2]string
	for i, d := range []string{got, want} {
		out, stderr, code := runJob(t, d, "otf2-print", otf2.ArchiveName)
		if code != 0 {
			t.Fatalf("otf2-print %s: exit %d\n%s", d, code, stderr)
		}
		events[i] = out
	}
	if events[0] != events[1] {
		t.Errorf("otf2-print of %s differs from that of dtpa's %s", got, want)
	}
	// Read back, under one name (the report's task is the archive's
	// directory): the same report, the same warnings.
	var reports, warns [2]string
	for i, d := range []string{got, want} {
		back := filepath.Join(t.TempDir(), "archive")
		if err := os.Rename(d, back); err != nil {
			t.Fatal(err)
		}
		var code int
		reports[i], warns[i], code = runJob(t, filepath.Dir(back), filepath.Join(root, "bin", "dtpa"), "--json", "archive")
		if code != 0 {
			t.Fatalf("dtpa --json %s (%s): exit %d\n%s", back, d, code, warns[i])
		}
		if err := os.Rename(back, d); err != nil {
			t.Fatal(err)
		}
	}
	if reports[0] != reports[1] || warns[0] != warns[1] {
		t.Errorf("dtpa reads back from %s a report or warnings that differ from those of dtpa's %s:\n%s\n%s", got, want, warns[0], warns[1])
	}
}
