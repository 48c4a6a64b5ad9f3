package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/report"
)

// TestCrashWhere runs testdata/apps/segv.c (built -O2: no frame pointers)
// under both MPIs, with rank 1 writing through a null pointer three calls
// deep, calling abort() two calls deep, writing through a null pointer in
// a thread that never called MPI, calling MPI_Abort two calls deep, and
// writing through a null pointer in an exit handler after MPI_Finalize
// (beside a complete trace). The report must say where,
// frame by frame with the source's lines, in JSON (crashes), in the text
// report and in its findings; dtpa-mpi's report the same.
func TestCrashWhere(t *testing.T) {
	lines := markers(t, filepath.Join(root, "testdata", "apps", "segv.c"))
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "segv")
			for _, c := range []struct {
				how    string
				signal string
				cause  string
				// the program's frames, innermost first: function and
				// marker; the first is Crash.At
				frames [][2]string
			}{
				{"segv", "SIGSEGV (Segmentation fault)", "address not mapped", [][2]string{{"kernel", "@kernel"}, {"solve", "@solve"}, {"main", "@main-solve"}}},
				{"abort", "SIGABRT (Aborted)", "abort() called", [][2]string{{"check", "@check"}, {"main", "@main-check"}}},
				// A thread that never called MPI: its stack is found
				// by its mapping.
				{"thread", "SIGSEGV (Segmentation fault)", "address not mapped", [][2]string{{"kernel", "@kernel"}, {"solve", "@solve"}, {"worker", "@worker"}}},
				// MPI_Abort: no signal, the call's place.
				{"mpiabort", "MPI_Abort", "", [][2]string{{"giveup", "@mpi-abort"}, {"main", "@main-giveup"}}},
				// After MPI_Finalize, in an exit handler: the traces are
				// complete, the crash is beside rank 1's.
				{"atexit", "SIGSEGV (Segmentation fault)", "address not mapped", [][2]string{{"kernel", "@kernel"}, {"solve", "@solve"}, {"cleanup", "@cleanup"}}},
			} {
				t.Run(c.how, func(t *testing.T) {
					for _, f := range []string{"segv.0.trc", "segv.1.trc", "segv.2.trc"} {
						os.Remove(filepath.Join(dir, f))
					}
					a := append([]string{"--mpirun", m.mpirun, "-np", "3"}, m.args...)
					stdout, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtrun"), append(a, "./"+filepath.Base(exe), c.how)...)
					if code == 0 {
						t.Fatalf("dtrun exited 0; want the crashed job's failure\n%s", stderr)
					}
					abort := c.how == "mpiabort"
					after, crashed := "", "crashed: "
					if c.how == "atexit" {
						after, crashed = "MPI_Finalize", "crashed after MPI_Finalize: "
					}
					// dtrun names the crash, and where to read where.
					if w := "dtrun: rank 1 " + crashed + c.signal + ", " + c.cause; !abort && (!strings.Contains(stdout+stderr, w) ||
						!strings.Contains(stdout+stderr, "; dtpa segv says where\n")) {
						t.Errorf("dtrun does not say %q …; dtpa segv says where:\n%s%s", w, stdout, stderr)
					}
					// Every rank's trace is the job's, counted once its
					// process is gone: MPICH's mpiexec exits after an
					// MPI_Abort before the ranks it killed have ended
					// (outlivedWait).
					if !strings.Contains(stderr, "dtrun: 3 traces of segv in ") || strings.Contains(stderr, "still running") {
						t.Errorf("dtrun does not count the job's 3 traces:\n%s", stderr)
					}
					r, _ := analyse(t, dir, "segv")
					if len(r.Crashes) != 1 {
						t.Fatalf("crashes %+v, want rank 1's", r.Crashes)
					}
					cr := r.Crashes[0]
					if cr.Rank != 1 || cr.Signal != c.signal || cr.Cause != c.cause || cr.Abort != abort || cr.After != after || (c.how == "thread" || abort) != (cr.Thread == nil) || cr.Thread != nil && *cr.Thread != 0 {
						t.Errorf("crash %+v, want rank 1's (thread 0, or none for a thread that never called MPI): %s, %s", cr, c.signal, c.cause)
					}
					if c.how != "abort" && !abort && (cr.Address == nil || *cr.Address != 0) {
						t.Errorf("address %v, want 0 (the null pointer)", cr.Address)
					}
					if cr.At < 0 || cr.At+len(c.frames) > len(cr.Frames) {
						t.Fatalf("frames %+v, at %d: want the program's %v from At", cr.Frames, cr.At, c.frames)
					}
					for i, w := range c.frames {
						f := cr.Frames[cr.At+i]
						if f.Function != w[0] || filepath.Base(f.File) != "segv.c" || f.Line != lines[w[1]] {
							t.Errorf("frame %d: %s at %s:%d, want %s at segv.c:%d (%s)", cr.At+i, f.Function, f.File, f.Line, w[0], lines[w[1]], w[1])
						}
					}
					if c.how != "abort" && cr.At != 0 {
						t.Errorf("the crash is in the program's kernel, but At is %d: %+v", cr.At, cr.Frames)
					}
					// The text report lists it under Crashes, and its
					// findings open with it.
					out, errOut, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), "segv")
					if code != 0 {
						t.Fatalf("dtpa: exit %d\n%s", code, errOut)
					}
					where := "segv.c:" + strconv.Itoa(lines[c.frames[0][1]])
					head, first := "Crashes:\n  - rank 1 "+crashed+c.signal+", "+c.cause, "  Rank 1 "+crashed+c.signal
					if abort {
						head, first = "MPI_Abort:\n  - rank 1 called MPI_Abort\n", "  Rank 1 called MPI_Abort, in "
					}
					if !strings.Contains(out, head) || !strings.Contains(out, first) || !strings.Contains(out, c.frames[0][0]+" at "+where+".") {
						t.Errorf("the text report does not say where rank 1 crashed (%s in %s):\n%s", where, c.frames[0][0], out)
					}
					// The Chrome export marks the moment on rank 1's track,
					// saying where.
					// (MPI_Abort is a call of the export, not a signal.)
					tr := exportChrome(t, dir, "segv")
					at := fmt.Sprintf("%s at segv.c:%d", c.frames[0][0], lines[c.frames[0][1]])
					if !abort && (len(tr.Instants) != 1 || tr.Instants[0].Pid != 2 || tr.Instants[0].Name != c.signal ||
						!strings.Contains(fmt.Sprint(tr.Instants[0].Args["stack"]), at)) || abort && len(tr.Instants) != 0 {
						t.Errorf("chrome export: instants %+v, want rank 1's %s with %q", tr.Instants, c.signal, at)
					}
					// The OTF2 archive holds it as a marker (libotf2's
					// otf2-marker lists it), on rank 1's location (its
					// location group for a thread that never called MPI).
					if !abort {
						os.RemoveAll(filepath.Join(dir, "segv-otf2"))
						arch := exportOTF2(t, dir, "segv")
						b, err := exec.Command("otf2-marker", filepath.Join(arch, otf2.ArchiveName)).CombinedOutput()
						scope := "LOCATION:1"
						if c.how == "thread" {
							scope = "LOCATION_GROUP:1"
						}
						if want := "Scope: " + scope + ", Text: \"" + cr.Lines()[0] + "\n"; err != nil || !strings.Contains(string(b), want) || !strings.Contains(string(b), at) {
							t.Errorf("otf2-marker (%v) does not list %q … %q:\n%s", err, want, at, b)
						}
					}
					checkSameAsDtpaMPI(t, dir, "segv", r)
				})
			}
		})
	}
}

// markers finds the lines of the markers (// @name; # @name in Python, ! @name in Fortran)
// in the source file
// path.
func markers(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		for _, c := range []string{"// @", "# @", "! @"} {
			if _, m, ok := strings.Cut(sc.Text(), c); ok {
				out["@"+strings.Fields(m)[0]] = n
			}
		}
	}
	return out
}

// checkSameAsDtpaMPI checks that dtpa-mpi at 2 processes reports the
// crashes of r, dtpa's report of app's traces in dir.
func checkSameAsDtpaMPI(t *testing.T, dir, app string, r *report.Report) {
	t.Helper()
	needDtpaMPI(t)
	out, stderr, code := dtpaMPI(t, dir, 2, "--json", app)
	if code != 0 {
		t.Fatalf("dtpa-mpi: exit %d\n%s", code, stderr)
	}
	var got report.Report
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Crashes) != len(r.Crashes) {
		t.Fatalf("dtpa-mpi: crashes %+v, dtpa's %+v", got.Crashes, r.Crashes)
	}
	for i := range r.Crashes {
		g, w := strings.Join(got.Crashes[i].Lines(), "\n"), strings.Join(r.Crashes[i].Lines(), "\n")
		if g != w || got.Crashes[i].At != r.Crashes[i].At {
			t.Errorf("dtpa-mpi's crash:\n%s\ndtpa's:\n%s", g, w)
		}
	}
}

// TestPythonCrash: an mpi4py program whose rank 1 crashes inside a C
// extension (testdata/apps/pycrash.py: ctypes reads through a null
// pointer) two functions deep. The crash's frames are the extension's C
// frames, then the script's own lines that led there (the tracer reads
// the crashed thread's Python frames), the first of them Crash.At, in
// the crash's lines and the findings; dtpa-mpi's report the same. In the
// damaged run the script first points a frame's link to its caller at
// unmapped memory: the walk stops there, and the trace is complete (also
// where the tracer reads through a pipe, as where seccomp refuses
// process_vm_readv: DT_TEST_PY_PIPE). In
// the thread run a thread that never called MPI crashes: threading's
// frames follow the script's. In the finalized run rank 1 crashes after
// MPI_Finalize, in ctypes' file, which no call named: the crash's file
// beside the trace brings its module. Under Open MPI with Debian's mpi4py;
// under MPICH and the other CPython versions the tracer reads with the
// stand-in for mpi4py (testenv.DebianMPICH, testenv.OtherPythons) too.
func TestPythonCrash(t *testing.T) {
	needMPI4Py(t)
	m := impls[0]
	needMPI(t, m)
	for _, ip := range append([]testenv.Interp{testenv.Debian(), testenv.DebianMPICH(t)}, testenv.OtherPythons(t)...) {
		m := m
		if ip.MPICH {
			m = impls[1]
		}
		t.Run(ip.Version, func(t *testing.T) { testPythonCrash(t, m, ip) })
	}
}

func testPythonCrash(t *testing.T, m mpiImpl, ip testenv.Interp) {
	lines := markers(t, filepath.Join(root, "testdata", "apps", "pycrash.py"))
	for _, c := range []struct {
		args   []string
		frames [][2]string // the Python frames after string_at's: function, marker
		rest   string      // the file of the frames after them, "": none
		pipe   bool        // the tracer reads through a pipe (where seccomp refuses process_vm_readv)
	}{
		{nil, [][2]string{{"boom", "@boom"}, {"step", "@step"}, {"<module>", "@main"}}, "", false},
		{[]string{"damaged"}, [][2]string{{"boom", "@boom"}, {"step", "@step"}}, "", false},
		{[]string{"damaged"}, [][2]string{{"boom", "@boom"}, {"step", "@step"}}, "", true},
		{[]string{"thread"}, [][2]string{{"boom", "@boom"}, {"step", "@step"}}, "threading.py", false},
		{[]string{"finalized"}, [][2]string{{"boom", "@boom"}, {"step", "@step"}, {"<module>", "@late"}}, "", false},
	} {
		name := strings.Join(append([]string{"crash"}, c.args...), "-")
		if c.pipe {
			name += "-pipe"
		}
		if ip.Exe != python && (c.pipe || (c.args != nil && c.args[0] == "finalized")) {
			continue // the ways of reading and the late file are the same under every version
		}
		t.Run(name, func(t *testing.T) {
			if c.pipe {
				t.Setenv("DT_TEST_PY_PIPE", "1")
			}
			for _, e := range ip.Env {
				k, v, _ := strings.Cut(e, "=")
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			copyPython(t, dir, "pycrash.py")
			a := append([]string{"--mpirun", m.mpirun, "-np", "3"}, m.args...)
			a = append(append(a, ip.Exe, "pycrash.py"), c.args...)
			if _, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtrun"), a...); code == 0 {
				t.Fatalf("dtrun exited 0; want the crashed job's failure\n%s", stderr)
			}
			r, _ := analyse(t, dir, filepath.Base(python))
			if len(r.Crashes) != 1 || r.Crashes[0].Rank != 1 {
				t.Fatalf("crashes %+v, want rank 1's", r.Crashes)
			}
			cr := r.Crashes[0]
			if after := map[bool]string{true: "MPI_Finalize"}[c.args != nil && c.args[0] == "finalized"]; cr.After != after {
				t.Errorf("crash after %q, want %q", cr.After, after)
			}
			// The C frames (the C library's, libffi's, _ctypes'), then
			// ctypes' string_at, then the script's.
			// (An interpreter with its C's debug information, as
			// pyenv's, names _ctypes' string_at too.)
			py := slices.IndexFunc(cr.Frames, func(f report.Frame) bool {
				return f.Function == "string_at" && strings.HasSuffix(f.File, "/ctypes/__init__.py")
			})
			if py < 1 {
				t.Fatalf("frames %+v: want C frames, then string_at in ctypes/__init__.py", cr.Frames)
			}
			got := cr.Frames[py+1:]
			if len(got) < len(c.frames) || (c.rest == "") != (len(got) == len(c.frames)) {
				t.Fatalf("Python frames after string_at %+v, want %v, then frames of %q", got, c.frames, c.rest)
			}
			for _, f := range got[len(c.frames):] {
				if filepath.Base(f.File) != c.rest {
					t.Errorf("frame %+v after the script's, want one of %s", f, c.rest)
				}
			}
			for i, w := range c.frames {
				if got[i].Function != w[0] || filepath.Base(got[i].File) != "pycrash.py" || got[i].Line != lines[w[1]] {
					t.Errorf("frame %d: %+v, want %s at pycrash.py:%d", py+1+i, got[i], w[0], lines[w[1]])
				}
			}
			if cr.At != py+1 || cr.LastCall != nil {
				t.Errorf("crash at %d, last call %+v; want at %d (boom), no last call", cr.At, cr.LastCall, py+1)
			}
			want := fmt.Sprintf("boom at pycrash.py:%d", lines["@boom"])
			if f := report.FindingsOf(r); f == nil || !strings.Contains(f.Verdict, want) {
				t.Errorf("findings %+v: want %q", f, want)
			}
			if len(c.args) == 0 && ip.Exe == python {
				checkSameAsDtpaMPI(t, dir, filepath.Base(python), r)
			}
		})
	}
}

// TestPythonException: an mpi4py program whose rank 1 raises an exception
// that nothing catches (testdata/apps/pyexc.py), run as mpi4py advises,
// `python -m mpi4py`, which calls MPI_Abort then: the rank's crash is the
// exception, named as Python names it (module and class) with its
// message, its frames the traceback's from the line that raised it
// (inside Python's json module), the first of the script's own Crash.At,
// in dtrun's summary, the findings and dtpa-mpi's report; the exception
// the script caught first is not reported. In the late run rank 1
// raises after MPI.Finalize(): the crash after the trace's end, its
// message cut to 512 bytes at a character's start. The exception is read
// through the interpreter's API, not its memory's layout: an interpreter
// the tracer takes for Python 3.14 (its call sites then C stacks) reads
// the same. Open MPI only (Debian's mpi4py).
func TestPythonException(t *testing.T) {
	needMPI4Py(t)
	m := impls[0]
	needMPI(t, m)
	lines := markers(t, filepath.Join(root, "testdata", "apps", "pyexc.py"))
	for _, c := range []struct {
		name    string
		late    bool
		version string // DT_PY_VERSION: the interpreter taken for another
	}{{"abort", false, ""}, {"late", true, ""}, {"abort-py3.14", false, "0x030e00f0"}} {
		late := c.late
		t.Run(c.name, func(t *testing.T) {
			if c.version != "" {
				t.Setenv("DT_PY_VERSION", c.version)
			}
			dir := t.TempDir()
			copyPython(t, dir, "pyexc.py")
			a := append([]string{"--mpirun", m.mpirun, "-np", "3"}, m.args...)
			head := "rank 1 crashed: uncaught json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
			own := [][2]string{{"parse", "@parse"}, {"<module>", "@call"}}
			if late {
				a = append(a, python, "pyexc.py", "late")
				head = "rank 1 crashed after MPI_Finalize: uncaught ValueError: " + strings.Repeat("\u00e9", 254) + "\u2026"
				own = [][2]string{{"late", "@late"}, {"<module>", "@call-late"}}
			} else {
				a = append(a, python, "-m", "mpi4py", "pyexc.py")
			}
			_, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtrun"), a...)
			if code == 0 {
				t.Fatalf("dtrun exited 0; want the failed job's failure\n%s", stderr)
			}
			if c.version != "" && !strings.Contains(stderr, "dtpa: Python 3.14: call stacks are the interpreter's C frames") {
				t.Errorf("the tracer did not take the interpreter for Python 3.14:\n%s", stderr)
			}
			if !strings.Contains(stderr, "dtrun: "+head+";") {
				t.Errorf("dtrun's summary does not say %q:\n%s", head, stderr)
			}
			r, _ := analyse(t, dir, filepath.Base(python))
			if len(r.Crashes) != 1 || r.Crashes[0].Rank != 1 {
				t.Fatalf("crashes %+v, want rank 1's", r.Crashes)
			}
			cr := r.Crashes[0]
			if l := cr.Lines(); l[0] != head {
				t.Errorf("crash %q, want %q", l[0], head)
			}
			// The library's frames (json's), then the script's, then
			// mpi4py's and runpy's (python -m).
			at := slices.IndexFunc(cr.Frames, func(f report.Frame) bool { return filepath.Base(f.File) == "pyexc.py" })
			if at < 0 || at+len(own) > len(cr.Frames) || cr.At != at || (late && at != 0) || (!late && at == 0) {
				t.Fatalf("frames %+v at %d, want the script's frames %v at %d", cr.Frames, cr.At, own, at)
			}
			for i, w := range own {
				if f := cr.Frames[at+i]; f.Function != w[0] || filepath.Base(f.File) != "pyexc.py" || f.Line != lines[w[1]] {
					t.Errorf("frame %d: %+v, want %s at pyexc.py:%d", at+i, f, w[0], lines[w[1]])
				}
			}
			for _, f := range cr.Frames[:at] {
				if !strings.Contains(f.File, "/json/") {
					t.Errorf("frame %+v before the script's, want json's", f)
				}
			}
			if rest := cr.Frames[at+len(own):]; late != (len(rest) == 0) {
				t.Errorf("frames after the script's %+v; want mpi4py's and runpy's only under python -m mpi4py", rest)
			}
			if f := report.FindingsOf(r); f == nil || !strings.HasPrefix(f.Verdict, "R"+cr.Where()[1:]+".") {
				t.Errorf("findings %+v: want them to begin with %q", f, cr.Where())
			}
			if !late {
				checkSameAsDtpaMPI(t, dir, filepath.Base(python), r)
			}
		})
	}
}

// TestCxxException: a C++ program whose rank 1 throws an exception that
// no handler catches (testdata/apps/cxxthrow.cpp), under both MPIs: its
// crash is SIGABRT from abort(), named with the exception's type as the
// program spells it (std::out_of_range, the program's own app::BadInput),
// at the line that threw it; an exception caught before an abort() of
// the program's own is not named.
func TestCxxException(t *testing.T) {
	lines := markers(t, filepath.Join(root, "testdata", "apps", "cxxthrow.cpp"))
	cxx := map[string]string{"openmpi": "mpicxx.openmpi", "mpich": "mpicxx.mpich"}
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			testenv.NeedCommands(t, cxx[m.name])
			dir := t.TempDir()
			if b, err := exec.Command(cxx[m.name], "-g", "-O0", "-o", filepath.Join(dir, "cxxthrow"),
				filepath.Join(root, "testdata", "apps", "cxxthrow.cpp")).CombinedOutput(); err != nil {
				t.Fatalf("compiling cxxthrow.cpp: %v\n%s", err, b)
			}
			for _, c := range []struct {
				how, typ, fn, mark string
			}{
				{"std", "std::out_of_range", "solve", "@throw"},
				{"custom", "app::BadInput", "solve", "@custom"},
				{"caught", "", "step", "@abort"},
			} {
				t.Run(c.how, func(t *testing.T) {
					for _, f := range []string{"cxxthrow.0.trc", "cxxthrow.1.trc", "cxxthrow.2.trc"} {
						os.Remove(filepath.Join(dir, f))
					}
					a := append([]string{"--mpirun", m.mpirun, "-np", "3"}, m.args...)
					if _, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtrun"), append(a, "./cxxthrow", c.how)...); code == 0 {
						t.Fatalf("dtrun exited 0; want the aborted job's failure\n%s", stderr)
					}
					r, _ := analyse(t, dir, "cxxthrow")
					if len(r.Crashes) != 1 || r.Crashes[0].Rank != 1 {
						t.Fatalf("crashes %+v, want rank 1's", r.Crashes)
					}
					cr := r.Crashes[0]
					head := "rank 1 crashed: SIGABRT (Aborted), abort() called"
					if c.typ != "" {
						head += ": uncaught " + c.typ
					}
					if l := cr.Lines(); l[0] != head || cr.Exception != c.typ {
						t.Errorf("crash %q (exception %q), want %q", l[0], cr.Exception, head)
					}
					if cr.At < 0 || cr.Frames[cr.At].Function != c.fn || filepath.Base(cr.Frames[cr.At].File) != "cxxthrow.cpp" ||
						cr.Frames[cr.At].Line != lines[c.mark] {
						t.Errorf("frames %+v at %d, want %s at cxxthrow.cpp:%d", cr.Frames, cr.At, c.fn, lines[c.mark])
					}
				})
			}
		})
	}
}
