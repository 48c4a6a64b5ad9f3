// Package srcchar symbolizes the call sites of the SRC characteristics
// (docs/characteristics.md §6): it turns a recorded return address, given as a module path
// and an offset in that module's ELF address space (the analyzer applies
// the recorded module map), into stack frames with function, source file
// and line. It implements analyzer.Symbolizer and analyzer.ModuleNoter.
//
// # Where the files come from
//
// Each module is opened once, on the first address that needs it. The
// executable is looked for, in order, at the --exe path (Config.Exe: given
// explicitly, the user means it), at the path the traces recorded (the
// trace header's program), and next to the traces (Config.TraceDir joined
// with the file's base name, for traces copied elsewhere together with the
// program). A shared library is looked for at its recorded path, then next
// to the traces. When the traces recorded a build id, a candidate whose
// build id differs is refused (its lines would be wrong) and the next one
// tried. A module that cannot be found or read is no failure: its frames
// read module+offset, with one warning per module.
//
// # What a frame says
//
// A return address points after the call; the address looked up is one
// less, so that the line is the call's own line even when the call is the
// last instruction of its line. With DWARF (.debug_line and .debug_info,
// from the file or from /usr/lib/debug/.build-id) a frame has the
// function, file and line; when the call was inlined (DW_TAG_inlined_subroutine)
// one return address gives several frames: the innermost at the line of
// the line table, each outer one at the DW_AT_call_file/DW_AT_call_line of
// the inlined call it contains. Without debug information, a symbol from
// .symtab or .dynsym gives "function+0xoff" with no file; without a symbol,
// "module+0xoff" (the module's base name). docs/report-format.md: file and
// line are empty / 0 when unknown.
//
// # Frames left out
//
// Users want to see their own code, so frames inside the tracer and inside
// the MPI library (a Fortran binding calling the C function, an MPI
// function calling another through PMPI) are left out. A shared object is
// recognized as such when its base name matches a known MPI or tracer
// library (mpiLibPrefixes: libmpi*, libmpich*, libpmpi*, libopen-pal/rte,
// Open MPI's mca_* plugins, libdtpa_* …) or when its .dynsym defines a
// function named MPI_* / PMPI_* / pmpi_*: the MPI standard reserves these
// names for the implementation and profiling layers, so this catches
// renamed or vendor MPI libraries and other PMPI tools as well. In the
// executable (where MPI or a tool may be linked statically) only frames
// whose function itself is named MPI_* or PMPI_* are left out. So is the C
// start-up code below main (_start, glibc's __libc_start_*): a return
// address inside such a function by the symbol tables (a separate debug
// file's too, which names glibc's local __libc_start_call_main) gives no
// frames, whatever DWARF would say of it, and that DWARF is not loaded
// (the C library's is tens of megabytes to decompress, in most programs
// for this frame alone).
//
// Symbolization runs once per distinct (module, offset): results are
// cached, and a module's DWARF compilation units are indexed lazily, one
// at a time, the first time an address falls into them.
package srcchar

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
)

// Config says where to find the files of the recorded modules.
type Config struct {
	// Exe is the executable to use (dtpa --exe); it is tried before the
	// recorded path.
	Exe string
	// TraceDir is the directory of the traces, where a copied executable
	// or library is looked for by base name.
	TraceDir string
	// Warn, when set, receives one sentence per module that cannot be
	// used (not found, unreadable, different build).
	Warn func(string)
	// DebugDirs are the global debug directories searched for separate
	// debug files by build id; nil means /usr/lib/debug.
	DebugDirs []string
}

// Symbolizer maps return addresses to frames. It is safe for concurrent
// use.
type Symbolizer struct {
	cfg Config

	mu    sync.Mutex
	noted map[string]analyzer.Module
	mods  map[string]*module // by recorded path; opened lazily
	cache map[siteAddr][]report.Frame
	py    map[string]pyFuncs // Python source files read (pyFunction)
	// interpreted: the program is the Python or R interpreter
	// (noDebugWarning).
	interpreted bool
}

type siteAddr struct {
	module string
	offset uint64
}

// New returns a Symbolizer that finds files as cfg says.
func New(cfg Config) *Symbolizer {
	if cfg.DebugDirs == nil {
		cfg.DebugDirs = []string{"/usr/lib/debug"}
	}
	return &Symbolizer{cfg: cfg, noted: map[string]analyzer.Module{}, mods: map[string]*module{},
		cache: map[siteAddr][]report.Frame{}}
}

// NoteModules records the modules' build ids and which one is the
// executable (analyzer.ModuleNoter).
func (s *Symbolizer) NoteModules(mods []analyzer.Module) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range mods {
		if old, ok := s.noted[m.Path]; ok && old.Executable {
			continue
		}
		s.noted[m.Path] = m
		if m.Executable && isInterpreter(m.Path) {
			s.interpreted = true
		}
	}
}

// Symbolize returns the frames of the return address at offset in the
// module recorded as path, innermost first; none when the frame is inside
// MPI or the tracer. It never fails: what cannot be symbolized reads
// module+offset.
func (s *Symbolizer) Symbolize(path string, offset uint64) []report.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := siteAddr{path, offset}
	if fr, ok := s.cache[k]; ok {
		return fr
	}
	fr := s.safeSymbolize(path, offset)
	s.cache[k] = fr
	return fr
}

// safeSymbolize keeps a file that debug/elf or debug/dwarf cannot cope
// with from costing more than its own frames: the analysis must go on.
func (s *Symbolizer) safeSymbolize(path string, offset uint64) (fr []report.Frame) {
	defer func() {
		if p := recover(); p != nil {
			if s.cfg.Warn != nil {
				s.cfg.Warn(fmt.Sprintf("Reading %s for call stacks failed (%v); its frames read module+offset.", path, p))
			}
			s.mods[path] = &module{}
			fr = []report.Frame{{Function: fmt.Sprintf("%s+%#x", filepath.Base(path), offset)}}
		}
	}()
	return s.symbolize(path, offset)
}

func (s *Symbolizer) symbolize(path string, offset uint64) []report.Frame {
	if path == "" {
		// Outside every recorded module (JIT code, a module map cut short).
		return []report.Frame{{Function: fmt.Sprintf("%#x", offset)}}
	}
	if file, ok := strings.CutPrefix(path, traceformat.SourceModulePrefix); ok {
		// A source file standing for a module: the offset is the line.
		return []report.Frame{{Function: s.pyFunction(file, int(offset)), File: file, Line: int(offset)}}
	}
	m := s.module(path)
	if m.mpi {
		return nil
	}
	// The return address follows the call; offset-1 is inside it.
	pc := offset
	if pc > 0 {
		pc--
	}
	if m.startupAt(pc) {
		// The C start-up code below main is nobody's source.
		return nil
	}
	frames := m.frames(pc)
	s.noDebugWarning(m, path)
	if len(frames) == 0 {
		return []report.Frame{{Function: fmt.Sprintf("%s+%#x", filepath.Base(path), offset)}}
	}
	if m.exe {
		// MPI (or a tool) linked statically into the program.
		for _, f := range frames {
			if isMPIName(f.Function) {
				return nil
			}
		}
	}
	// The C start-up code below main is nobody's source.
	return slices.DeleteFunc(frames, func(f report.Frame) bool { return isStartup(baseName(f.Function)) })
}

// noDebugWarning says once per module whose frames reach the report
// without file and line (no DWARF in the file, none installed by build
// id) how to get them: a Debian binary such as /usr/bin/hpcc is stripped,
// and a reader seeing "hpcc+0x1c14e ??" is not told by the frame itself
// that a -dbgsym package would name the function and line.
func (s *Symbolizer) noDebugWarning(m *module, path string) {
	if m.dw != nil || m.noDebugSaid || s.cfg.Warn == nil {
		return
	}
	m.noDebugSaid = true
	if isInterpreter(path) || s.interpreted {
		// The interpreter's own lines, or those of the libraries it
		// calls through (libffi for ctypes), would not help a Python
		// or R user.
		return
	}
	what := "Library " + path
	if m.exe {
		what = "Executable " + path
	}
	if m.path == "" {
		// Not found or not usable: open already said so.
		return
	}
	s.cfg.Warn(fmt.Sprintf("%s has no debug information: its call-stack frames have no file and line "+
		"(install its -dbgsym package, read from %s/.build-id, or rebuild it with -g).", what, s.cfg.DebugDirs[0]))
}

// isInterpreter tells the modules of the Python and R interpreters and
// of their packages (mpi4py's MPI.cpython-*.so, Rmpi.so), by path.
func isInterpreter(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "python") || strings.HasPrefix(b, "libpython") || b == "R" || b == "libR.so" ||
		strings.Contains(path, "/dist-packages/") || strings.Contains(path, "/site-packages/") ||
		strings.Contains(path, "/lib/R/")
}

// isStartup tells the C run-time's functions that call main: _start and
// glibc's __libc_start_* (__libc_start_main, __libc_start_call_main, and
// __libc_start_main_impl, the name glibc 2.34+ gives __libc_start_main in
// its debug information). The tracer unwinds through them with their
// unwind tables.
func isStartup(fn string) bool {
	return fn == "_start" || strings.HasPrefix(fn, "__libc_start")
}

// isStartupName is isStartup of the NUL-terminated name at the start of
// fn, in a symbol table's strings.
func isStartupName(fn []byte) bool {
	const p, s = "__libc_start", "_start"
	return len(fn) >= len(p) && string(fn[:len(p)]) == p ||
		len(fn) >= len(s) && string(fn[:len(s)]) == s && (len(fn) == len(s) || fn[len(s)] == 0)
}

// baseName strips the +0xoff of a symbol-only frame.
func baseName(fn string) string {
	if i := strings.IndexByte(fn, '+'); i >= 0 {
		return fn[:i]
	}
	return fn
}

// module opens the file of a recorded module, once.
func (s *Symbolizer) module(path string) *module {
	if m, ok := s.mods[path]; ok {
		return m
	}
	noted, ok := s.noted[path]
	if !ok {
		noted = analyzer.Module{Path: path}
	}
	m := s.open(noted)
	s.mods[path] = m
	return m
}

func (s *Symbolizer) open(rec analyzer.Module) *module {
	if isMPILibrary(rec.Path) {
		return &module{mpi: true}
	}
	var candidates []string
	if rec.Executable && s.cfg.Exe != "" {
		candidates = append(candidates, s.cfg.Exe)
	}
	candidates = append(candidates, rec.Path)
	if s.cfg.TraceDir != "" {
		candidates = append(candidates, filepath.Join(s.cfg.TraceDir, filepath.Base(rec.Path)))
	}
	var problems []string
	tried := map[string]bool{}
	for i, c := range candidates {
		abs, err := filepath.Abs(c)
		if err != nil || tried[abs] {
			continue
		}
		tried[abs] = true
		if _, err := os.Stat(c); err != nil {
			if i == 0 && c == s.cfg.Exe && rec.Executable {
				problems = append(problems, fmt.Sprintf("--exe %s: %v", c, err))
			}
			continue
		}
		m, err := openModule(c, s.cfg.DebugDirs)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		if len(rec.BuildID) > 0 && string(m.buildID) != string(rec.BuildID) {
			problems = append(problems, fmt.Sprintf("%s is a different build (build id %x, the traces recorded %x)", c, m.buildID, rec.BuildID))
			continue
		}
		m.exe = rec.Executable
		m.mpi = !m.exe && m.definesMPI
		if len(problems) > 0 && rec.Executable && s.cfg.Exe != "" && s.cfg.Warn != nil {
			// The user named a file that was not used: say so.
			s.cfg.Warn(fmt.Sprintf("The executable given with --exe is not used (%s); call stacks come from %s.", strings.Join(problems, "; "), c))
		}
		return m
	}
	m := &module{exe: rec.Executable}
	// Pseudo-modules such as linux-vdso.so.1 have no file: no warning.
	if s.cfg.Warn != nil && (rec.Executable || strings.Contains(rec.Path, "/")) {
		s.cfg.Warn(moduleWarning(rec, problems))
	}
	return m
}

func moduleWarning(rec analyzer.Module, problems []string) string {
	what := "Library " + rec.Path
	hint := ""
	if rec.Executable {
		what = "Executable " + rec.Path
		hint = " (give its path with --exe)"
	}
	if len(problems) == 0 {
		return fmt.Sprintf("%s not found; its call-stack frames read module+offset%s.", what, hint)
	}
	return fmt.Sprintf("%s cannot be used for call stacks (%s); its frames read module+offset%s.", what, strings.Join(problems, "; "), hint)
}

// mpiLibPrefixes are base-name prefixes of shared objects that belong to
// MPI implementations (Open MPI, MPICH and derivatives) or to the tracer.
var mpiLibPrefixes = []string{
	"libdtpa_", // the tracer's preload stub and Go libraries
	"libmpi", "libpmpi", "libmpich", "libmpl.", "libmpifort", "libmpicxx", "libfmpich",
	"libopen-pal", "libopen-rte", "libompitrace", "libmca_common_", "mca_",
	"libpmix", "libprrte", "libopal",
}

// isMPILibrary says, from its path alone, whether a module is an MPI or
// tracer library.
func isMPILibrary(path string) bool {
	base := filepath.Base(path)
	for _, p := range mpiLibPrefixes {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// isMPIName says whether a function name is one the MPI standard reserves
// for MPI and its profiling interface. Fortran bindings use lower case
// (mpi_send_); only the pmpi_ form is unambiguous enough to count.
func isMPIName(fn string) bool {
	return hasMPIPrefix(baseName(fn))
}

// hasMPIPrefix is isMPIName of a symbol's name (no +0xoff to strip).
func hasMPIPrefix(fn string) bool {
	return strings.HasPrefix(fn, "MPI_") || strings.HasPrefix(fn, "PMPI_") || strings.HasPrefix(fn, "pmpi_")
}
