package tracer_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/traceformat"
)

// python is testenv.Python, the interpreter Debian's mpi4py is for.
const python = testenv.Python

func needMPI4Py(t *testing.T) { testenv.NeedMPI4Py(t) }

// pythons are the interpreters whose frames the tracer reads: Debian's
// with its mpi4py (Open MPI), Debian's with the stand-in built with MPICH
// (testenv.DebianMPICH), then each other version found with the stand-in
// (testenv.OtherPythons).
func pythons(t *testing.T) []testenv.Interp {
	needMPI4Py(t)
	return append([]testenv.Interp{testenv.Debian(), testenv.DebianMPICH(t)}, testenv.OtherPythons(t)...)
}

// pyLauncher is the launcher of py's MPI.
func pyLauncher(py testenv.Interp) string {
	if py.MPICH {
		return "mpirun.mpich"
	}
	return "mpirun.openmpi"
}

// pyFrames is call site site's stack, innermost first: "file:line" (the
// file's base name) for a frame in a source-file module, "C" for any other.
func (tr *trace) pyFrames(site uint32) []string {
	var out []string
	for _, pc := range tr.defs.CallSites[site] {
		f := "C"
		for _, m := range tr.defs.Modules {
			if pc >= m.Start && pc < m.End {
				if file, ok := strings.CutPrefix(m.Path, traceformat.SourceModulePrefix); ok {
					f = fmt.Sprintf("%s:%d", filepath.Base(file), pc-m.LoadBias)
				}
				break
			}
		}
		out = append(out, f)
	}
	return out
}

// tracePySites runs tracer/testdata/py/pysites.py at 2 ranks with
// interpreter py under its MPI, with env; it returns the traces, the
// script's markers and dtrun's output.
func tracePySites(t *testing.T, py testenv.Interp, env []string) ([]*trace, map[string]int, string) {
	t.Helper()
	needMPI(t, "mpicc.openmpi")
	dir := t.TempDir()
	src := filepath.Join(root, "tracer", "testdata", "py", "pysites.py")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pysites.py"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	res := dtrunOK(t, dir, append(slices.Clone(py.Env), env...), "--mpirun", pyLauncher(py), "-np", "2", py.Exe, "pysites.py")
	return readTraces(t, dir, "python3", 2), sourceMarkers(t, src, "#"), res.out
}

// TestPythonSites: an mpi4py call's call site is the script's Python
// frames, innermost first, at the lines of the calls: a helper called
// from two places is two call sites with their whole stacks, a thread's
// call has the thread's own frames (then threading.py's), MPI_Init_thread
// has the import's line (not the import machinery's frames), and no frame
// is the interpreter's C code. Under every CPython version the tracer reads.
func TestPythonSites(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.Version, func(t *testing.T) { testPythonSites(t, py) })
	}
}

func testPythonSites(t *testing.T, py testenv.Interp) {
	trs, mark, out := tracePySites(t, py, nil)
	at := func(name string) string { return "pysites.py:" + strconv.Itoa(mark[name]) }
	for r, tr := range trs {
		inits := tr.calls("MPI_Init_thread")
		if len(inits) != 1 {
			t.Fatalf("rank %d: %d MPI_Init_thread", r, len(inits))
		}
		main := inits[0].Thread
		if s := tr.pyFrames(inits[0].Site); len(s) != 1 || s[0] != at("import") {
			t.Errorf("rank %d: MPI_Init_thread's stack %v, want [%s]", r, s, at("import"))
		}
		got := map[string]int64{} // function, thread (main or other), stack → calls
		for _, e := range tr.events {
			th := "main"
			if e.Thread != main {
				th = "other"
			}
			stack := tr.pyFrames(e.Site)
			if n := tr.name(e); n == "MPI_Barrier" || n == "MPI_Recv" || n == "MPI_Send" {
				// A thread's stack goes on into threading.py's start-up.
				if i := slices.IndexFunc(stack, func(f string) bool { return strings.HasPrefix(f, "threading.py:") }); i > 0 && th == "other" {
					stack = stack[:i]
				}
				got[n+" "+th+" "+strings.Join(stack, " ")] += int64(e.NumCalls())
			}
			// MPI_Finalize and the queries before it run at the
			// interpreter's exit, with no Python frame.
			if n := tr.name(e); len(stack) > 0 && stack[0] == "C" && n != "MPI_Initialized" && n != "MPI_Finalized" && n != "MPI_Finalize" {
				t.Errorf("rank %d: %s has C frames %v", r, n, stack)
			}
		}
		want := map[string]int64{
			"MPI_Barrier main " + at("helper") + " " + at("first") + " " + at("main-first"):   1,
			"MPI_Barrier main " + at("helper") + " " + at("second") + " " + at("main-second"): 3,
			"MPI_Barrier other " + at("worker"):                                               1,
			"MPI_Send other " + at("worker-send"):                                             1,
			"MPI_Recv main " + at("main-recv"):                                                1,
		}
		if !mapsEqual(got, want) {
			t.Errorf("rank %d: stacks (function, thread, frames → calls)\n got %v\nwant %v\n%s", r, got, want, out)
		}
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPythonFrameKinds: the frames of a generator, a coroutine, code
// compiled from a string, a lambda, a call under sys.settrace and a deep
// recursion, in a script whose file name is not ASCII (a string object of
// 2-byte characters, written out as UTF-8). Under every CPython version
// the tracer reads.
func TestPythonFrameKinds(t *testing.T) {
	needMPI(t, "mpicc.openmpi")
	for _, py := range pythons(t) {
		t.Run(py.Version, func(t *testing.T) { testPythonFrameKinds(t, py) })
	}
}

func testPythonFrameKinds(t *testing.T, py testenv.Interp) {
	dir := t.TempDir()
	src := filepath.Join(root, "tracer", "testdata", "py", "pykinds.py")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const name = "kïnds_测试.py"
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	dtrunOK(t, dir, py.Env, "--mpirun", pyLauncher(py), "-np", "2", py.Exe, name)
	mark := sourceMarkers(t, src, "#")
	at := func(m string) string { return name + ":" + strconv.Itoa(mark[m]) }
	want := map[string]int64{
		at("gen") + " " + at("gen-call"):       2,
		"<dyn>:1 " + at("exec"):                1,
		at("lambda") + " " + at("lambda-call"): 1,
		at("settrace"):                         1,
		strings.Join([]string{at("deep"), at("deep-call"), at("deep-call"), at("deep-call")}, " "): 1,
	}
	for r, tr := range readTraces(t, dir, "python3", 2) {
		got := map[string]int64{}
		var coro int64
		for _, e := range tr.calls("MPI_Barrier") {
			s := tr.pyFrames(e.Site)
			if len(s) > 1 && s[0] == at("coro") && strings.HasPrefix(s[1], "events.py:") {
				coro += int64(e.NumCalls()) // asyncio's event loop below
				continue
			}
			got[strings.Join(s, " ")] += int64(e.NumCalls())
		}
		if coro != 1 || !mapsEqual(got, want) {
			t.Errorf("rank %d: %d coroutine calls (want 1), stacks\n got %v\nwant %v", r, coro, got, want)
		}
	}
}

// TestPythonSitesOtherVersion: an interpreter whose version the tracer
// does not read (DT_PY_VERSION stands for Python 3.14's Py_Version) gets
// the C stacks as any program, and rank 0 says why once.
func TestPythonSitesOtherVersion(t *testing.T) {
	needMPI4Py(t)
	trs, _, out := tracePySites(t, testenv.Debian(), []string{"DT_PY_VERSION=0x030e00f0"})
	if n := strings.Count(out, "dtpa: Python 3.14: call stacks are the interpreter's C frames"); n != 1 {
		t.Errorf("the message about Python 3.14 printed %d times, want once\n%s", n, out)
	}
	for r, tr := range trs {
		for _, m := range tr.defs.Modules {
			if strings.HasPrefix(m.Path, traceformat.SourceModulePrefix) {
				t.Errorf("rank %d: module %s", r, m.Path)
			}
		}
		for _, e := range tr.calls("MPI_Barrier") {
			if s := tr.pyFrames(e.Site); len(s) == 0 || slices.ContainsFunc(s, func(f string) bool { return f != "C" }) {
				t.Errorf("rank %d: MPI_Barrier's stack %v, want C frames", r, s)
			}
		}
	}
}

// TestPyLayout compiles tracer/rt/dt_pylayout.h against the headers of
// every CPython version the tracer reads that is installed (Debian's
// python3.11-dev; testenv.OtherPythons): every offset the tracer reads must
// be the interpreter's.
func TestPyLayout(t *testing.T) {
	testenv.NeedCommands(t, "gcc")
	if _, err := os.Stat(filepath.Join(testenv.Debian().Include, "internal", "pycore_frame.h")); err != nil {
		testenv.Missing(t, "python3.11-dev not installed")
	}
	for _, py := range append([]testenv.Interp{testenv.Debian()}, testenv.OtherPythons(t)...) {
		t.Run(py.Version, func(t *testing.T) { testPyLayout(t, py.Include) })
	}
}

func testPyLayout(t *testing.T, inc string) {
	const prog = `#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif
#include <stddef.h>
#include <stdio.h>
#include "dt_pylayout.h"
#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)
SAME(offsetof(PyObject, ob_type), DT_PY_OB_TYPE);
#if PY_MINOR_VERSION >= 11
SAME(FRAME_OWNED_BY_GENERATOR, DT_PY_OWNED_BY_GENERATOR);
SAME(sizeof(((_PyInterpreterFrame *)0)->owner), 1);
SAME(sizeof(((PyCodeObject *)0)->_co_firsttraceable), sizeof(int));
SAME(sizeof(_Py_CODEUNIT), DT_PY_CODEUNIT);
#else
SAME(sizeof(((PyFrameObject *)0)->f_lasti), 4);
#endif
#if PY_MINOR_VERSION >= 12
SAME(FRAME_OWNED_BY_CSTACK, DT_PY_OWNED_BY_CSTACK);
#endif
SAME(offsetof(PyVarObject, ob_size), DT_PY_B_SIZE);
SAME(offsetof(PyBytesObject, ob_sval), DT_PY_B_DATA);
SAME(offsetof(PyASCIIObject, length), DT_PY_U_LENGTH);
SAME(offsetof(PyASCIIObject, state), DT_PY_U_STATE);
static int bad;
#define EQ(a, b) if ((long)(a) != (long)(b)) { printf("%s = %ld, want %ld\n", #b, (long)(b), (long)(a)); bad = 1; }
int main(void) {
#if PY_MINOR_VERSION == 8
	dt_py_layout l = DT_PY_LAYOUT_38;
#elif PY_MINOR_VERSION == 9
	dt_py_layout l = DT_PY_LAYOUT_39;
#elif PY_MINOR_VERSION == 10
	dt_py_layout l = DT_PY_LAYOUT_310;
#elif PY_MINOR_VERSION == 11
	dt_py_layout l = DT_PY_LAYOUT_311;
#elif PY_MINOR_VERSION == 12
	dt_py_layout l = DT_PY_LAYOUT_312;
#elif PY_MINOR_VERSION == 13
	dt_py_layout l = DT_PY_LAYOUT_313;
#endif
	EQ(PY_MINOR_VERSION, l.minor);
#if PY_MINOR_VERSION >= 13
	EQ(offsetof(PyThreadState, current_frame), l.ts_frame);
	EQ(-1, l.cf_current);
	EQ(offsetof(_PyInterpreterFrame, f_executable), l.fr_code);
	EQ(offsetof(_PyInterpreterFrame, instr_ptr), l.fr_instr);
#elif PY_MINOR_VERSION >= 11
	EQ(offsetof(PyThreadState, cframe), l.ts_frame);
	EQ(offsetof(_PyCFrame, current_frame), l.cf_current);
	EQ(offsetof(_PyInterpreterFrame, f_code), l.fr_code);
	EQ(offsetof(_PyInterpreterFrame, prev_instr), l.fr_instr);
#else
	EQ(offsetof(PyThreadState, frame), l.ts_frame);
	EQ(-1, l.cf_current);
	EQ(offsetof(PyFrameObject, f_code), l.fr_code);
	EQ(offsetof(PyFrameObject, f_back), l.fr_previous);
	EQ(offsetof(PyFrameObject, f_lasti), l.fr_instr);
	EQ(PY_MINOR_VERSION >= 10 ? 1 : 2, l.lasti_div); // f_lasti in code units from 3.10, in bytes before
	EQ(-1, l.fr_owner);
	EQ(-1, l.co_firsttraceable);
	EQ(-1, l.co_code);
#endif
#if PY_MINOR_VERSION >= 11
	EQ(0, l.lasti_div);
	EQ(offsetof(_PyInterpreterFrame, previous), l.fr_previous);
	EQ(offsetof(_PyInterpreterFrame, owner), l.fr_owner);
	EQ(offsetof(PyCodeObject, _co_firsttraceable), l.co_firsttraceable);
	EQ(offsetof(PyCodeObject, co_code_adaptive), l.co_code);
	EQ(l.co_code, l.co_copy); // the instructions follow the copy
#endif
	EQ(offsetof(PyCodeObject, co_filename), l.co_filename);
#if PY_MINOR_VERSION >= 10
	EQ(offsetof(PyCodeObject, co_linetable), l.co_linetable);
#else
	EQ(offsetof(PyCodeObject, co_lnotab), l.co_linetable);
#endif
#if PY_MINOR_VERSION == 11
	EQ(offsetof(PyCodeObject, _co_linearray), l.co_linearray);
	EQ(offsetof(PyCodeObject, _co_linearray_entry_size), l.co_linearray_size);
	EQ(sizeof(((PyCodeObject *)0)->_co_linearray_entry_size), sizeof(short));
#else
	EQ(-1, l.co_linearray);
#endif
	EQ(sizeof(PyASCIIObject), l.u_ascii_data);
	EQ(sizeof(PyCompactUnicodeObject), l.u_compact_data);
	// The copies dt_py_crash_stack and py_safe_name make hold what they
	// read.
	if (l.fr_copy > DT_PY_FR_MAX || l.co_copy > DT_PY_CO_MAX || l.u_compact_data > DT_PY_U_MAX ||
		l.fr_previous + 8 > l.fr_copy || l.fr_code + 8 > l.fr_copy || l.fr_instr + 8 > l.fr_copy || l.fr_owner + 1 > l.fr_copy ||
		l.co_linearray + 8 > l.co_copy || l.co_firsttraceable + 4 > l.co_copy || l.co_linetable + 8 > l.co_copy ||
		l.co_filename + 8 > l.co_copy) {
		printf("a field lies past a copy, or a copy past its bound\n");
		bad = 1;
	}
	// The state bit field as dt_py.c decodes it.
	PyASCIIObject o;
	memset(&o, 0, sizeof o);
	o.state.kind = 4;
	o.state.compact = 1;
	o.state.ascii = 1;
	unsigned st;
	memcpy(&st, (char *)&o + DT_PY_U_STATE, 4);
	if (((st >> 2) & 7) != 4 || !((st >> 5) & 1) || !((st >> 6) & 1)) {
		printf("state bits %#x\n", st);
		bad = 1;
	}
	return bad;
}
`
	dir := t.TempDir()
	src := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "layout")
	if b, err := exec.Command("gcc", "-I"+inc, "-I"+filepath.Join(root, "tracer", "rt"), "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("dt_pylayout.h against %s: %v\n%s", inc, err, b)
	}
	if b, err := exec.Command(exe).CombinedOutput(); err != nil {
		t.Fatalf("the layout in dt_pylayout.h is not that of %s: %v\n%s", inc, err, b)
	}
}

// BenchmarkPythonCall runs tracer/testdata/py/callcost.py (1 rank, 10⁶
// MPI_Barrier calls on MPI_COMM_SELF from a Python loop) untraced, traced
// with C stacks (DT_PY_VERSION of another version) and traced with Python
// frames, alternated b.N times, and reports each one's median time per call
// and the medians of the traced runs' differences to the untraced run of
// their round: the tracer's cost per call of an mpi4py program. Wall time
// on a shared machine: look at the spread (-count) before trusting it.
func BenchmarkPythonCall(b *testing.B) {
	needMPI(b, "mpicc.openmpi")
	if err := exec.Command(python, "-c", "import mpi4py").Run(); err != nil {
		b.Skip("python3-mpi4py not installed")
	}
	dir := b.TempDir()
	src, err := os.ReadFile(filepath.Join(root, "tracer", "testdata", "py", "callcost.py"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "callcost.py"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	perCall := func(out string) float64 {
		_, v, ok := strings.Cut(out, "ns/call ")
		if !ok {
			b.Fatalf("no ns/call in\n%s", out)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(strings.SplitN(v, "\n", 2)[0]), 64)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	var plain, cst, pyf, dc, dp []float64
	for i := 0; i < b.N; i++ {
		u := perCall(run(b, dir, nil, "mpirun.openmpi", "-np", "1", python, "callcost.py", "1000000").out)
		c := perCall(dtrun(b, dir, []string{"DT_PY_VERSION=0x030e00f0"}, "--mpirun", "mpirun.openmpi", "-np", "1", python, "callcost.py", "1000000").out)
		p := perCall(dtrun(b, dir, nil, "--mpirun", "mpirun.openmpi", "-np", "1", python, "callcost.py", "1000000").out)
		plain, cst, pyf = append(plain, u), append(cst, c), append(pyf, p)
		dc, dp = append(dc, c-u), append(dp, p-u)
	}
	med := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(med(plain), "untraced-ns/call")
	b.ReportMetric(med(cst), "cstacks-ns/call")
	b.ReportMetric(med(pyf), "pyframes-ns/call")
	b.ReportMetric(med(dc), "cstacks-cost-ns/call")
	b.ReportMetric(med(dp), "pyframes-cost-ns/call")
	b.ReportMetric(0, "ns/op")
}
