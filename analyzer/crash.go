package analyzer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// maxCrashFrames bounds the frames taken from a footer's crash (the tracer
// writes at most 32; more is damage).
const maxCrashFrames = 64

// crashes says where the ranks whose footers record a crash crashed: the
// signal, what the kernel says caused it, and the crashed thread's stack
// symbolized, innermost first. The first frame is the interrupted
// instruction itself (not a return address: it is symbolized as it is);
// frames inside MPI, the tracer or the C start-up code are left out but
// for the first, which names its module, so that a crash inside MPI reads
// "in libmpi.so.40+0x…, called from …".
func crashes(ranks []*rankResult, byRank []*rankFile, sym Symbolizer) []report.Crash {
	var out []report.Crash
	for r, f := range byRank {
		if f == nil {
			continue
		}
		rr := (*rankResult)(nil)
		if r < len(ranks) && ranks[r] != nil && ranks[r].defs != nil {
			rr = ranks[r]
		}
		switch {
		case f.footer.GetCrash() != nil:
			rc := crashOf(r, f.footer.GetCrash())
			rc.After = f.after()
			if rr != nil {
				rc.Frames, rc.At = crashFrames(rr.crash, rr.defs.Modules, f.hdr.GetProgram(), sym, faulted(f.footer.GetCrash()))
				if rc.At < 0 && rc.After == "" {
					rc.LastCall = lastCall(rr, f.hdr.GetProgram(), sym)
				}
			}
			out = append(out, rc)
		case f.footer.GetStopReason() == tracepb.Footer_ABORT && rr != nil && rr.abort != nil:
			// The program gave up: where it called MPI_Abort.
			rc := report.Crash{Rank: r, Signal: "MPI_Abort", Abort: true}
			rc.Frames, rc.At = crashFrames(rr.abort, rr.defs.Modules, f.hdr.GetProgram(), sym, false)
			out = append(out, rc)
		}
	}
	return out
}

// lastCall is rank result rr's last MPI call (report.Crash.LastCall): its
// function and the program's innermost frame with a file of its call
// site (else the innermost with a file); nil when rr has none (several
// threads, no calls).
func lastCall(rr *rankResult, program string, sym Symbolizer) *report.CallPlace {
	if !rr.hasLast {
		return nil
	}
	k := rr.siteKeyer()
	p := &report.CallPlace{Function: k.fnName(rr.lastFn)}
	fr, at := crashFrames(k.siteFrames(rr.lastSite, nil), rr.defs.Modules, program, sym, false)
	if at < 0 {
		at = slices.IndexFunc(fr, func(f report.Frame) bool { return f.File != "" })
	}
	if at >= 0 {
		p.File, p.Line = fr[at].File, fr[at].Line
	}
	return p
}

// CrashOf is where rank r crashed, as the report says it (report.Crash:
// its signal, cause and stack symbolized with sym on the trace's modules
// mods), from the trace at path (its header hdr and footer f), or from
// the crash after the trace's end beside it (readLateCrash), and the
// local time it happened (0: unknown); nil when it did not crash. For
// the exports that read traces without replaying them (OTF2).
func CrashOf(r int, path string, hdr *tracepb.Header, f *tracepb.Footer, mods []*tracepb.Module, sym Symbolizer) (*report.Crash, int64) {
	rf := &rankFile{path: path, hdr: hdr, footer: f}
	rf.readLateCrash()
	c := f.GetCrash()
	if c == nil {
		return nil, 0
	}
	rc := crashOf(r, c)
	rc.After = rf.after()
	mods = crashModules(c, mods)
	rc.Frames, rc.At = crashFrames(crashStack(c, mods), mods, hdr.GetProgram(), sym, faulted(c))
	return &rc, c.LocalNs
}

// crashModules are the modules mods of a trace's definitions followed by
// those crash c brings (Crash.python_files: source files first named by
// a crash after the trace's end), which its stack may refer to; mods
// itself when it brings none.
func crashModules(c *tracepb.Crash, mods []*tracepb.Module) []*tracepb.Module {
	if len(c.GetPythonFiles()) == 0 {
		return mods
	}
	out := slices.Clip(mods)
	for _, m := range c.PythonFiles[:min(len(c.PythonFiles), maxCrashFrames)] {
		if strings.HasPrefix(m.GetPath(), traceformat.SourceModulePrefix) {
			out = append(out, &tracepb.Module{Id: uint32(len(out)), Path: m.Path, Start: m.Start, End: m.End, LoadBias: m.LoadBias})
		}
	}
	return out
}

// crashStack is crash c's stack (its first maxCrashFrames) mapped to the
// modules mods, with a Python program's frames (c.PythonStack) in place
// of the interpreter's: from the stack's first frame after the faulting
// instruction that is the interpreter's (its executable or libpython), or
// after the stack's end. A crash in a C extension so reads as the
// extension's frames, then the lines of the script that called it.
func crashStack(c *tracepb.Crash, mods []*tracepb.Module) []siteFrame {
	py := c.PythonStack[:min(len(c.PythonStack), maxCrashFrames)]
	st := make([]siteFrame, 0, min(len(c.Stack), maxCrashFrames)+len(py))
	for i, pc := range c.Stack[:min(len(c.Stack), maxCrashFrames)] {
		f := frameOf(mods, pc)
		if len(py) > 0 && i > 0 && f.mod >= 0 && interpreterRE.MatchString(filepath.Base(mods[f.mod].Path)) {
			break
		}
		st = append(st, f)
	}
	for _, pc := range py {
		st = append(st, frameOf(mods, pc))
	}
	return st
}

// interpreterRE matches the base names of CPython's executable and
// library (python3.11, libpython3.11.so.1.0).
var interpreterRE = regexp.MustCompile(`^(lib)?python[0-9]`)

// pyLibraryRE matches the source files of Python's own library and of
// installed packages, which are not the program's own code.
var pyLibraryRE = regexp.MustCompile(`/lib/python[0-9.]*/|/(site|dist)-packages/|^<`)

// faulted says whether crash c's stack begins with the instruction a
// signal interrupted (not a return address): every crash but an uncaught
// Python exception, whose frames are its traceback's lines.
func faulted(c *tracepb.Crash) bool { return c.GetException() == "" || len(c.GetStack()) > 0 }

// cxxType is C++ type name n as std::type_info::name() spells it
// (mangled: "St12out_of_range") as the program spells it
// ("std::out_of_range"); n itself when it does not demangle.
func cxxType(n string) string {
	s, err := demangle.ToString("_ZTS"+n, demangle.NoClones)
	if t, ok := strings.CutPrefix(s, "typeinfo name for "); err == nil && ok && t != "" {
		return t
	}
	return n
}

// crashOf is rank r's crash c without its frames (At −1).
func crashOf(r int, c *tracepb.Crash) report.Crash {
	rc := report.Crash{Rank: r, Signal: c.Name, SignalNumber: int(c.Signal), Cause: crashCause(c), At: -1}
	if c.Exception != "" && c.Signal == 0 {
		rc.Signal, rc.Exception, rc.Cause = "uncaught "+c.Exception, c.Exception, c.ExceptionMessage
	} else if c.CxxException != "" {
		rc.Exception = cxxType(c.CxxException)
	}
	if rc.Signal == "" {
		rc.Signal = fmt.Sprintf("signal %d", c.Signal)
	}
	if c.HasThread {
		t := int(c.Thread)
		rc.Thread = &t
	}
	if c.HasAddress {
		a := c.Address
		rc.Address = &a
	}
	return rc
}

// crashFrames symbolizes a crash's stack (crashes), and finds the first
// frame of the program's own code (report.Crash.At): of the executable
// (the module named program, else the first recorded), with a file; else,
// of a Python program, its first frame outside Python's library and
// installed packages, else its first.
// fault says that the first frame is the interrupted instruction, not a
// return address.
func crashFrames(st []siteFrame, mods []*tracepb.Module, program string, sym Symbolizer, fault bool) ([]report.Frame, int) {
	var out []report.Frame
	at, pyOwn, pyAny := -1, -1, -1
	for i, f := range st {
		path, exe := "", false
		if f.mod >= 0 && int(f.mod) < len(mods) {
			path = mods[f.mod].Path
			exe = path == program || (f.mod == 0 && program == "")
		}
		off := f.off
		if i == 0 && fault {
			// Symbolize takes return addresses, and looks up the
			// instruction before; the first frame is the instruction.
			off++
		}
		var fr []report.Frame
		if sym != nil {
			fr = sym.Symbolize(path, off)
		}
		if len(fr) == 0 && i == 0 && fault {
			name := "(unknown code)"
			if path != "" {
				name = filepath.Base(path)
			}
			fr = []report.Frame{{Function: fmt.Sprintf("%s+%#x", name, f.off)}}
		} else if i == 0 && fault && len(fr) == 1 && fr[0].File == "" && fr[0].Function == fmt.Sprintf("%s+%#x", filepath.Base(path), off) {
			// A frame without symbols reads module+offset, of the
			// offset it was given: the instruction's is one less.
			fr = []report.Frame{{Function: fmt.Sprintf("%s+%#x", filepath.Base(path), f.off)}}
		}
		if at < 0 && exe && len(fr) > 0 && fr[0].File != "" {
			at = len(out)
		}
		if file, ok := strings.CutPrefix(path, traceformat.SourceModulePrefix); ok && len(fr) > 0 {
			// A Python frame: the program's own code is the first
			// outside Python's library and installed packages.
			if pyAny < 0 {
				pyAny = len(out)
			}
			if pyOwn < 0 && !pyLibraryRE.MatchString(file) {
				pyOwn = len(out)
			}
		}
		out = append(out, fr...)
	}
	if at < 0 {
		at = pyOwn
	}
	if at < 0 {
		at = pyAny
	}
	return out, at
}

// crashCause is what the kernel's si_code says of a crash's signal
// (Linux's values, signal(7) and sigaction(2)), "" when it says nothing
// the signal's name does not.
func crashCause(c *tracepb.Crash) string {
	codes := map[int32][]string{
		11: {"address not mapped", "invalid permissions for the mapped address", "failed address bound checks", "protection key check failed"},
		7:  {"invalid address alignment", "nonexistent physical address", "object-specific hardware error (a mapped file cut short?)"},
		8:  {"integer divide by zero", "integer overflow", "floating-point divide by zero", "floating-point overflow", "floating-point underflow", "floating-point inexact result", "floating-point invalid operation", "subscript out of range"},
		4:  {"illegal opcode", "illegal operand", "illegal addressing mode", "illegal trap", "privileged opcode", "privileged register", "coprocessor error", "internal stack error"},
	}
	switch {
	case c.Code > 0:
		if cs := codes[c.Signal]; int(c.Code) <= len(cs) {
			return cs[c.Code-1]
		}
	case c.Code == 0:
		return "sent by a process (kill)"
	case c.Code == -6 && c.Signal == 6:
		return "abort() called"
	case c.Code == -6:
		return "sent by the process itself (raise, tgkill)"
	case c.Code == -1:
		return "sent by a process (sigqueue)"
	}
	return ""
}
