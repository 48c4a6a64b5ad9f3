package srcchar

import (
	"bufio"
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
)

// needTool skips when a tool is missing, except under CI where the test
// environment must have it.
func needTool(t *testing.T, name string) {
	t.Helper()
	testenv.NeedCommands(t, name)
}

// markerLine is the line of testdata/file holding /* marker */.
func markerLine(t *testing.T, file, marker string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "/* "+marker+" */") {
			return i + 1
		}
	}
	t.Fatalf("no marker %s in %s", marker, file)
	return 0
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// site is a return address the test program printed.
type site struct {
	module string // recorded path ("" in the program's output means the executable)
	offset uint64
}

// built is the test program compiled with some flags, and the return
// addresses it printed, by tag.
type built struct {
	dir, exe string
	sites    map[string]site
}

// build compiles testdata/prog.c with flags (and its two libraries with
// -g -O2) into a fresh directory and runs it.
func build(t *testing.T, flags ...string) *built {
	t.Helper()
	needTool(t, "gcc")
	dir := t.TempDir()
	src, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "gcc", "-g", "-O2", "-shared", "-fPIC", "-o", "libcb.so", filepath.Join(src, "libcb.c"))
	run(t, dir, "gcc", "-g", "-O2", "-shared", "-fPIC", "-o", "libother.so", filepath.Join(src, "libmpifake.c"))
	args := append(append([]string{}, flags...), "-o", "prog", filepath.Join(src, "prog.c"),
		"-L"+dir, "-lcb", "-lother", "-Wl,-rpath,"+dir)
	run(t, dir, "gcc", args...)
	b := &built{dir: dir, exe: filepath.Join(dir, "prog"), sites: map[string]site{}}
	out, err := exec.Command(b.exe).Output()
	if err != nil {
		t.Fatalf("running the test program: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("test program printed %q", sc.Text())
		}
		off, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		mod := f[1]
		if mod == "EXE" {
			mod = b.exe
		}
		b.sites[f[0]] = site{mod, off}
	}
	return b
}

func (b *built) symbolize(t *testing.T, s *Symbolizer, tag string) []report.Frame {
	t.Helper()
	st, ok := b.sites[tag]
	if !ok {
		t.Fatalf("the program printed no %s site", tag)
	}
	return s.Symbolize(st.module, st.offset)
}

func checkFrame(t *testing.T, what string, f report.Frame, fn, file string, line int) {
	t.Helper()
	if f.Function != fn || filepath.Base(f.File) != file || f.Line != line {
		t.Errorf("%s: frame %s %s:%d, want %s %s:%d", what, f.Function, f.File, f.Line, fn, file, line)
	}
}

// The line of a call is found in the executable, PIE or not: the return
// address is looked up one byte back.
func TestCallLine(t *testing.T) {
	plain := markerLine(t, "prog.c", "PLAIN")
	for _, flags := range [][]string{{"-g", "-O0", "-pie", "-fPIE"}, {"-g", "-O0", "-no-pie"}, {"-g", "-O2"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			b := build(t, flags...)
			fr := b.symbolize(t, New(Config{}), "plain")
			if len(fr) != 1 {
				t.Fatalf("frames %+v, want one", fr)
			}
			checkFrame(t, "plain call", fr[0], "caller", "prog.c", plain)
			if !filepath.IsAbs(fr[0].File) {
				t.Errorf("file %q should be the full path DWARF gives", fr[0].File)
			}
		})
	}
}

// A call inlined at -O2 gives two frames from one return address: the
// inlined function at the call's line, and its caller at the line of the
// inlined call.
func TestInlinedFrames(t *testing.T) {
	b := build(t, "-g", "-O2")
	fr := b.symbolize(t, New(Config{}), "inlined")
	if len(fr) != 2 {
		t.Fatalf("frames %+v, want helper inlined into outer", fr)
	}
	checkFrame(t, "inlined frame", fr[0], "helper", "prog.c", markerLine(t, "prog.c", "INLINED"))
	checkFrame(t, "caller of the inlined call", fr[1], "outer", "prog.c", markerLine(t, "prog.c", "OUTER"))
}

// Return addresses in a shared library are symbolized from the library;
// a library defining MPI names is left out, as are MPI and tracer
// libraries recognized by name.
func TestSharedLibraries(t *testing.T) {
	b := build(t, "-g", "-O0")
	s := New(Config{})
	fr := b.symbolize(t, s, "lib")
	if len(fr) != 1 {
		t.Fatalf("frames %+v", fr)
	}
	checkFrame(t, "library call", fr[0], "lib_call", "libcb.c", markerLine(t, "libcb.c", "LIBCALL"))
	if fr := b.symbolize(t, s, "mpi"); len(fr) != 0 {
		t.Errorf("frames in a library defining PMPI_Fake: %+v, want none", fr)
	}
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", "/opt/mpich/lib/libmpich.so.12",
		"/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40", "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so",
		"/x/lib/libdtpa_preload.so", "/x/lib/libdtpa_openmpi.so", "/usr/lib/libmpifort.so.12"} {
		if fr := s.Symbolize(p, 0x1234); len(fr) != 0 {
			t.Errorf("%s: frames %+v, want none", p, fr)
		}
	}
}

// Without debug information a frame is function+offset; without symbols
// either, module+offset. Never a failure, never a file; one warning per
// module says how to get the lines.
func TestNoDebugInfo(t *testing.T) {
	b := build(t, "-O0")
	st := b.sites["plain"]
	var warned []string
	s := New(Config{Warn: func(w string) { warned = append(warned, w) }})
	fr := s.Symbolize(st.module, st.offset)
	if len(fr) != 1 || !strings.HasPrefix(fr[0].Function, "caller+0x") || fr[0].File != "" || fr[0].Line != 0 {
		t.Errorf("without -g: frames %+v, want caller+0x…", fr)
	}
	s.Symbolize(st.module, st.offset+1)
	if len(warned) != 1 || !strings.Contains(warned[0], st.module+" has no debug information") ||
		!strings.Contains(warned[0], "-dbgsym") {
		t.Errorf("without -g: warnings %q, want one naming %s and -dbgsym", warned, st.module)
	}
	warned = nil
	for _, p := range []string{"/usr/bin/python3.11", "/usr/lib/python3/dist-packages/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so",
		"/usr/lib/R/bin/exec/R", "/usr/lib/R/site-library/Rmpi/libs/Rmpi.so"} {
		if !isInterpreter(p) {
			t.Errorf("%s not taken for an interpreter's module", p)
		}
	}
	if isInterpreter(st.module) {
		t.Errorf("%s taken for an interpreter's module", st.module)
	}
	// In a Python program no module gets the advice (libffi, for ctypes).
	s = New(Config{Warn: func(w string) { warned = append(warned, w) }})
	s.NoteModules([]analyzer.Module{{Path: "/usr/bin/python3.11", Executable: true}})
	s.Symbolize(st.module, st.offset)
	if len(warned) != 0 {
		t.Errorf("in a Python program: warnings %q", warned)
	}
	g := build(t, "-g", "-O0")
	s = New(Config{Warn: func(w string) { warned = append(warned, w) }})
	s.Symbolize(g.sites["plain"].module, g.sites["plain"].offset)
	if len(warned) != 0 {
		t.Errorf("with -g: warnings %q", warned)
	}
	run(t, b.dir, "strip", "prog")
	fr = New(Config{}).Symbolize(st.module, st.offset)
	want := "prog+0x" + strconv.FormatUint(st.offset, 16)
	if len(fr) != 1 || fr[0].Function != want || fr[0].File != "" {
		t.Errorf("stripped: frames %+v, want %s", fr, want)
	}
}

// Addresses outside every module, and pseudo-modules without a file, read
// as addresses; no warning for them.
func TestUnknownModules(t *testing.T) {
	var warned []string
	s := New(Config{Warn: func(w string) { warned = append(warned, w) }})
	if fr := s.Symbolize("", 0x1234); len(fr) != 1 || fr[0].Function != "0x1234" {
		t.Errorf("no module: %+v", fr)
	}
	if fr := s.Symbolize("linux-vdso.so.1", 0x10); len(fr) != 1 || fr[0].Function != "linux-vdso.so.1+0x10" {
		t.Errorf("vdso: %+v", fr)
	}
	if len(warned) != 0 {
		t.Errorf("warnings %q", warned)
	}
}

func fileBuildID(t *testing.T, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := buildID(f)
	if len(id) == 0 {
		t.Fatalf("%s has no build id", path)
	}
	return id
}

// The executable is found at --exe, at the recorded path, or next to the
// traces; a file of another build is refused with a warning.
func TestExecutableLookup(t *testing.T) {
	b := build(t, "-g", "-O0")
	plain := markerLine(t, "prog.c", "PLAIN")
	id := fileBuildID(t, b.exe)
	st := b.sites["plain"]
	gone := "/nonexistent/build/prog" // where the traces say it was
	moved := t.TempDir()
	data, err := os.ReadFile(b.exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(moved, "prog"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another build of the same program, at the recorded path.
	run(t, b.dir, "gcc", "-g", "-O1", "-o", "other", filepath.Join(must(filepath.Abs("testdata")), "prog.c"),
		"-L"+b.dir, "-lcb", "-lother", "-Wl,-rpath,"+b.dir)
	other := filepath.Join(b.dir, "other")

	for _, tc := range []struct {
		name     string
		recorded string
		cfg      Config
		ok       bool
		warning  string
	}{
		{"recorded path", b.exe, Config{}, true, ""},
		{"next to the traces", gone, Config{TraceDir: moved}, true, ""},
		{"--exe", gone, Config{Exe: filepath.Join(moved, "prog")}, true, ""},
		{"--exe before the recorded path", other, Config{Exe: b.exe}, true, ""},
		{"--exe of another build", b.exe, Config{Exe: other}, true, "--exe"},
		{"--exe missing", b.exe, Config{Exe: "/nonexistent/prog"}, true, "--exe"},
		{"other build refused", other, Config{}, false, "different build"},
		{"not found", gone, Config{TraceDir: t.TempDir()}, false, "--exe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warned []string
			tc.cfg.Warn = func(w string) { warned = append(warned, w) }
			s := New(tc.cfg)
			s.NoteModules([]analyzer.Module{{Path: tc.recorded, BuildID: id, Executable: true}})
			fr := s.Symbolize(tc.recorded, st.offset)
			if tc.ok {
				if len(fr) != 1 {
					t.Fatalf("frames %+v (warnings %q)", fr, warned)
				}
				checkFrame(t, "plain call", fr[0], "caller", "prog.c", plain)
			} else {
				want := filepath.Base(tc.recorded) + "+0x" + strconv.FormatUint(st.offset, 16)
				if len(fr) != 1 || fr[0].Function != want {
					t.Errorf("frames %+v, want %s", fr, want)
				}
			}
			if (tc.warning == "") != (len(warned) == 0) || (tc.warning != "" && !strings.Contains(warned[0], tc.warning)) {
				t.Errorf("warnings %q, want one saying %q", warned, tc.warning)
			}
			// Cached: asking again neither warns again nor changes.
			again := s.Symbolize(tc.recorded, st.offset)
			if len(again) != len(fr) || len(warned) > 1 {
				t.Errorf("second lookup %+v, warnings %q", again, warned)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Names reserved by MPI, with or without an offset.
func TestIsMPIName(t *testing.T) {
	for fn, want := range map[string]bool{"MPI_Send": true, "PMPI_Recv+0x12": true, "pmpi_send_": true,
		"MPI_SEND": true, "main": false, "mpi_helper": false, "compute_MPI_x": false} {
		if got := isMPIName(fn); got != want {
			t.Errorf("isMPIName(%q) = %v", fn, got)
		}
	}
}

// Damaged files (a truncated executable, garbage at a library's path) read
// module+offset with a warning, never a failure.
func TestDamagedFiles(t *testing.T) {
	b := build(t, "-g", "-O0")
	st := b.sites["plain"]
	data, err := os.ReadFile(b.exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 16, 64, 1000, len(data) / 3, len(data) - 100} {
		path := filepath.Join(t.TempDir(), "prog")
		if err := os.WriteFile(path, data[:n], 0o755); err != nil {
			t.Fatal(err)
		}
		var warned []string
		s := New(Config{Warn: func(w string) { warned = append(warned, w) }})
		fr := s.Symbolize(path, st.offset)
		if len(fr) != 1 || fr[0].Function == "" {
			t.Errorf("%d bytes: frames %+v", n, fr)
		}
	}
	lib := filepath.Join(t.TempDir(), "libjunk.so")
	if err := os.WriteFile(lib, bytes.Repeat([]byte("\x7fELF junk "), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	s := New(Config{Warn: func(w string) { warned = append(warned, w) }})
	if fr := s.Symbolize(lib, 0x10); len(fr) != 1 || fr[0].Function != "libjunk.so+0x10" || len(warned) != 1 {
		t.Errorf("junk library: frames %+v, warnings %q", fr, warned)
	}
}

// Notes with sizes beyond the data are refused, not read.
func TestNoteBuildID(t *testing.T) {
	le := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		return b
	}
	good := append(le(4, 3, 3), "GNU\x00\x01\x02\x03\x00"...)
	other := append(le(4, 2, 1), "GNU\x00\xaa\xbb\x00\x00"...)
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"build id":       {good, "\x01\x02\x03"},
		"after another":  {append(append([]byte{}, other...), good...), "\x01\x02\x03"},
		"huge name size": {append(le(0xfffffffe, 3, 3), "GNU\x00\x01\x02\x03\x00"...), ""},
		"huge desc size": {append(le(4, 0xffffffff, 3), "GNU\x00\x01\x02\x03\x00"...), ""},
		"truncated":      {good[:14], ""},
		"not GNU":        {append(le(4, 3, 3), "XYZ\x00\x01\x02\x03\x00"...), ""},
	} {
		if got := noteBuildID(tc.data, binary.LittleEndian); string(got) != tc.want {
			t.Errorf("%s: %x, want %x", name, got, tc.want)
		}
	}
}

// A module standing for a source file (a converted OTF2 trace's source
// code location) reads as that file, the offset as its line.
func TestSourceFileModule(t *testing.T) {
	s := New(Config{})
	got := s.Symbolize(traceformat.SourceModulePrefix+"/src/app.c", 42)
	if len(got) != 1 || got[0].File != "/src/app.c" || got[0].Line != 42 || got[0].Function != "" {
		t.Errorf("frames %+v, want /src/app.c:42", got)
	}
}

// The C start-up frames below main are left out under every name glibc
// gives them, symbolized from debug information or from symbols alone.
func TestIsStartup(t *testing.T) {
	for fn, want := range map[string]bool{
		"_start": true, "__libc_start_main": true, "__libc_start_call_main": true,
		"__libc_start_main_impl": true, "main": false, "_start_helper": false, "start": false,
	} {
		if got := isStartup(fn); got != want {
			t.Errorf("isStartup(%q) = %v, want %v", fn, got, want)
		}
		// In a symbol table's strings: at the end of the table, and
		// followed by its NUL and the next name.
		for _, tab := range []string{fn, fn + "\x00", fn + "\x00_start_next\x00"} {
			if got := isStartupName([]byte(tab)); got != want {
				t.Errorf("isStartupName(%q) = %v, want %v", tab, got, want)
			}
		}
	}
	if !isStartup(baseName("__libc_start_call_main+0x7a")) {
		t.Error("a symbol-only start-up frame is not left out")
	}
}

// A stripped library's DWARF and symbols come from its separate debug
// file, found by build id; a return address in a start-up function that
// only the debug file's symbol table names gives no frames, without the
// debug file's DWARF being loaded (the C library's is tens of megabytes
// to decompress).
func TestSeparateDebugFile(t *testing.T) {
	needTool(t, "objcopy")
	b := build(t, "-g", "-O0")
	lib := filepath.Join(b.dir, "libcb.so")
	id := fmt.Sprintf("%x", fileBuildID(t, lib))
	dbg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dbg, ".build-id", id[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, b.dir, "objcopy", "--only-keep-debug", lib, filepath.Join(dbg, ".build-id", id[:2], id[2:]+".debug"))
	run(t, b.dir, "strip", "--strip-all", lib)

	s := New(Config{DebugDirs: []string{dbg}})
	fr := b.symbolize(t, s, "lib")
	if len(fr) != 1 {
		t.Fatalf("frames %+v, want lib_call from the debug file", fr)
	}
	checkFrame(t, "library call", fr[0], "lib_call", "libcb.c", markerLine(t, "libcb.c", "LIBCALL"))

	s = New(Config{DebugDirs: []string{dbg}})
	if fr := b.symbolize(t, s, "startup"); len(fr) != 0 {
		t.Errorf("frames in a start-up function: %+v, want none", fr)
	}
	if m := s.mods[lib]; m == nil || m.dwLoaded {
		t.Errorf("the debug file's DWARF was loaded for a start-up frame")
	}
	// The lines the debug file has for that address, were it not left out.
	if fr := s.mods[lib].frames(b.sites["startup"].offset - 1); len(fr) != 1 || fr[0].Line != markerLine(t, "libcb.c", "STARTUP") {
		t.Errorf("frames %+v from the debug file's DWARF, want __libc_start_fake at the STARTUP line", fr)
	}

	// Without the debug file nothing names the function.
	st := b.sites["startup"]
	want := "libcb.so+0x" + strconv.FormatUint(st.offset, 16)
	if fr := New(Config{DebugDirs: []string{t.TempDir()}}).Symbolize(lib, st.offset); len(fr) != 1 || fr[0].Function != want {
		t.Errorf("without the debug file: frames %+v, want %s", fr, want)
	}
}

// C++ functions named only by the symbol tables (a build without -g, as
// Debian ships OpenFOAM and LAMMPS) read demangled, without parameters or
// template arguments, as pprof shows them: Foam::UPstream::waitRequests,
// not _ZN4Foam8UPstream12waitRequestsEi; a C name stays as it is.
func TestDemangledNames(t *testing.T) {
	exe, _ := buildCxx(t, "-O0")
	symbolizeSyms(t, exe, 5, map[string]report.Frame{
		"_ZN2ns6Solver4stepEi": {Function: "ns::Solver::step+0x5"},
		"_ZN2ns4GridIdE3sumEi": {Function: "ns::Grid::sum+0x5"},
		"c_entry":              {Function: "c_entry+0x5"},
	})
}

// With -g the frames come from DWARF, whose DW_AT_name of a C++ function
// is unqualified (sum, step: a dozen classes may have them); the linkage
// name gives the same qualified name as the symbol table, and a C
// function's name stays as it is.
func TestDemangledNamesDWARF(t *testing.T) {
	exe, src := buildCxx(t, "-g", "-O2")
	symbolizeSyms(t, exe, 2, map[string]report.Frame{
		"_ZN2ns6Solver4stepEi": {Function: "ns::Solver::step", File: src},
		"_ZN2ns4GridIdE3sumEi": {Function: "ns::Grid::sum", File: src},
		"c_entry":              {Function: "c_entry", File: src},
	})
}

// buildCxx compiles a C++ program with a namespace, a class, a template
// and a C function, with flags.
func buildCxx(t *testing.T, flags ...string) (exe, src string) {
	t.Helper()
	needTool(t, "g++")
	dir := t.TempDir()
	src = filepath.Join(dir, "cxx.cc")
	code := `namespace ns {
template <class T> struct Grid { T v; __attribute__((noinline)) T sum(int n) { T s = 0; for (int i = 0; i < n; i++) s += v * i; return s; } };
struct Solver { __attribute__((noinline)) int step(int n); };
int Solver::step(int n) { Grid<double> g{1.5}; return (int)g.sum(n) + n; }
}
extern "C" __attribute__((noinline)) int c_entry(int n) { ns::Solver s; return s.step(n); }
int main(int argc, char **) { return c_entry(argc); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "g++", append(flags, "-o", "cxx", src)...)
	return filepath.Join(dir, "cxx"), src
}

// symbolizeSyms symbolizes an address off bytes into each named symbol of
// exe (looked up one byte back, still inside it) and wants its innermost
// frame's function and file.
func symbolizeSyms(t *testing.T, exe string, off uint64, want map[string]report.Frame) {
	t.Helper()
	s := New(Config{})
	for _, sym := range elfSymbols(t, exe) {
		w, ok := want[sym.Name]
		if !ok {
			continue
		}
		delete(want, sym.Name)
		if fr := s.Symbolize(exe, sym.Value+off); len(fr) == 0 || fr[0].Function != w.Function || fr[0].File != w.File {
			t.Errorf("%s: frames %+v, want %s in %q", sym.Name, fr, w.Function, w.File)
		}
	}
	if len(want) != 0 {
		t.Errorf("symbols missing from the test program: %v", want)
	}
}

// A Python source file's frame (the tracer's Python frames) names the
// function around its line, read from the file, as CPython's qualified
// names do.
func TestPythonFunction(t *testing.T) {
	const src = `"""doc
def not_this():
"""
import x


class C:
    def m(self):
        x.a()  # 10

        def inner():
            x.b()  # 13
        # a comment
        return inner  # 15

    async def am(self):
        s = """
x.c()
"""
        x.d()  # 21


x.e()  # 24
`
	dir := t.TempDir()
	file := filepath.Join(dir, "app.py")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{})
	for line, want := range map[int]string{2: "<module>", 7: "<module>", 8: "C", 10: "C.m", 13: "C.m.<locals>.inner",
		15: "C.m", 19: "C.am", 21: "C.am", 24: "<module>", 99: ""} {
		got := s.Symbolize(traceformat.SourceModulePrefix+file, uint64(line))
		if len(got) != 1 || got[0].Function != want || got[0].File != file || got[0].Line != line {
			t.Errorf("line %d: frames %+v, want function %q", line, got, want)
		}
	}
	if got := s.Symbolize(traceformat.SourceModulePrefix+filepath.Join(dir, "gone.py"), 3); len(got) != 1 || got[0].Function != "" {
		t.Errorf("a file that is not there: frames %+v, want no function", got)
	}
}

// A gfortran module procedure reads as gdb shows it, module::procedure,
// from the symbol table (__solver_MOD_exchange) and from DWARF (whose
// DW_AT_name is exchange alone) alike.
func TestFortranModuleNames(t *testing.T) {
	needTool(t, "gfortran")
	const code = `module solver
contains
  subroutine exchange(x)
    double precision, intent(inout) :: x(8)
    x = x * 2 + 1
  end subroutine exchange
end module solver
program app
  use solver
  double precision :: x(8)
  x = 1
  call exchange(x)
  print *, x(1)
end program app
`
	for _, c := range []struct {
		flags []string
		want  report.Frame
	}{
		{[]string{"-O2", "-fno-inline"}, report.Frame{Function: "solver::exchange+0x2"}},
		{[]string{"-g", "-O2", "-fno-inline"}, report.Frame{Function: "solver::exchange", File: "app.f90"}},
	} {
		dir := t.TempDir()
		src := filepath.Join(dir, "app.f90")
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, "gfortran", append(c.flags, "-o", "app", src)...)
		if c.want.File != "" {
			c.want.File = src
		}
		symbolizeSyms(t, filepath.Join(dir, "app"), 2, map[string]report.Frame{"__solver_MOD_exchange": c.want})
	}
}

// A lambda's operator() has no linkage name in DWARF: it reads as the
// function that holds it, main::<lambda>::operator() (ns::Solver::step's
// here), not operator() alone.
func TestLambdaNames(t *testing.T) {
	needTool(t, "g++")
	dir := t.TempDir()
	src := filepath.Join(dir, "lambda.cc")
	code := `namespace ns {
struct Solver { __attribute__((noinline)) int step(int n); };
int Solver::step(int n) {
  auto f = [&](int k) __attribute__((noinline)) { int s = 0; for (int i = 0; i < k; i++) s += i * n; return s; };
  return f(n) + f(n + 1);
}
}
extern "C" __attribute__((noinline)) int leaf(int k) { return k * 3; }
int main(int argc, char **) {
  ns::Solver s;
  auto g = [&](int k) { return leaf(k + argc) + leaf(k); };
  return s.step(argc) + g(argc);
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "g++", "-g", "-O2", "-o", "lambda", src)
	exe := filepath.Join(dir, "lambda")
	found := false
	for _, sym := range elfSymbols(t, exe) {
		// _ZZN2ns6Solver4stepEiENKUliE_clEi: step's lambda's operator()
		if !strings.Contains(sym.Name, "Solver4step") || !strings.HasSuffix(sym.Name, "clEi") {
			continue
		}
		found = true
		fr := New(Config{}).Symbolize(exe, sym.Value+2)
		if len(fr) == 0 || fr[0].Function != "ns::Solver::step::<lambda>::operator()" || fr[0].File != src {
			t.Errorf("%s: frames %+v, want ns::Solver::step::<lambda>::operator() in %s", sym.Name, fr, src)
		}
	}
	if !found {
		t.Fatal("the lambda was inlined: no symbol of its own")
	}
	// g, inlined into main: its frame has only DWARF's names.
	pc := inlinedAt(t, exe, "operator()")
	if fr := New(Config{}).Symbolize(exe, pc+1); len(fr) < 2 || fr[0].Function != "main::<lambda>::operator()" || fr[1].Function != "main" {
		t.Errorf("inlined lambda at %#x: frames %+v, want main::<lambda>::operator() inlined into main", pc, fr)
	}
}

// elfSymbols is exe's symbol table.
func elfSymbols(t *testing.T, exe string) []elf.Symbol {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

// inlinedAt is the first address of an inlined call of the function named
// name (DW_AT_name of its abstract origin) in exe.
func inlinedAt(t *testing.T, exe, name string) uint64 {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagInlinedSubroutine {
			continue
		}
		off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			continue
		}
		or := d.Reader()
		or.Seek(off)
		oe, err := or.Next()
		if err != nil || oe == nil || oe.Val(dwarf.AttrName) != name {
			continue
		}
		if rs, err := d.Ranges(e); err == nil && len(rs) > 0 {
			return rs[0][0]
		}
	}
	t.Fatalf("%s: no inlined call of %s", exe, name)
	return 0
}
