package srcchar

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/dtpa/dtpa/report"
	"github.com/ianlancetaylor/demangle"
)

// module is one opened ELF file: its symbols and, when present, its DWARF
// data, indexed lazily per compilation unit.
type module struct {
	path       string
	exe        bool // the program itself
	mpi        bool // inside MPI or the tracer: frames left out
	definesMPI bool // its .dynsym defines MPI_* / PMPI_* functions
	buildID    []byte
	syms       []symbol // functions, in the order their tables list them
	// byAddr indexes syms by address (aliases in the order added), built
	// at the first lookup (symbolAt): most modules are only scanned
	// (definesMPI, startup), and ordering a large library's symbols costs
	// more than the rest of its symbolization. nil until then.
	byAddr []uint32
	// startup are the sized start-up functions (isStartup) of syms and,
	// for a module whose DWARF is in a separate debug file, of that
	// file's symbol table (startupAt), which a stripped library's own
	// tables lack (__libc_start_call_main is local): their ranges, without
	// names.
	startup     []symbol
	ownDWARF    bool // the file itself has .debug_info
	debugSymtab bool // the separate debug file's start-up functions are in startup
	debugDirs   []string
	dwLoaded    bool // dw is loaded on first use: MPI libraries never need it
	dw          *dwarf.Data
	noDebugSaid bool      // the warning that frames have no lines was given (noDebugWarning)
	cus         []cuRange // built on first use; nil until then
	cusBuilt    bool
	units       map[dwarf.Offset]*unit
	names       map[dwarf.Offset]dieNames
	// lambdas qualifies the member functions of C++ lambdas' closure
	// types, which have no linkage name: main::<lambda>, by the offset of
	// the member's DIE (unit).
	lambdas map[dwarf.Offset]string
}

// cuRange is an address range of a compilation unit.
type cuRange struct {
	lo, hi uint64
	cu     *dwarf.Entry
}

// symbol is a function of a symbol table; its name runs on past its NUL
// to the end of the table's strings (symbolSink), but for the copy
// symbolAt returns. The order added orders the
// aliases of an address (symbolAt prefers the last added); sortSymbols
// keeps it.
type symbol struct {
	name       string
	addr, size uint64
}

// unit is a compilation unit's line table and the tree of its functions
// and inlined calls that have code.
type unit struct {
	rows  []lineRow // by address
	funcs []*scope
}

// lineRow is a row of the line table: from addr up to the next row's
// address the code belongs to file:line (end rows close a sequence).
type lineRow struct {
	addr uint64
	file string
	line int
	end  bool
}

// line finds the row covering pc. LineReader.SeekPC would decode the
// table from its start on every call; the rows are decoded once.
func (u *unit) line(pc uint64) (file string, line int, ok bool) {
	i := sort.Search(len(u.rows), func(i int) bool { return u.rows[i].addr > pc }) - 1
	if i < 0 || u.rows[i].end || u.rows[i].file == "" {
		return "", 0, false
	}
	return u.rows[i].file, u.rows[i].line, true
}

// scope is a subprogram or an inlined call with its address ranges.
type scope struct {
	name     string
	ranges   [][2]uint64
	callFile string // where an inlined call was made, in its parent
	callLine int
	children []*scope
}

func (s *scope) contains(pc uint64) bool {
	for _, r := range s.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// openModule reads what symbolization needs from the ELF file at path and
// closes it. A file without symbols or debug information is not an error.
func openModule(path string, debugDirs []string) (*module, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &module{path: path, buildID: buildID(f), debugDirs: debugDirs, ownDWARF: hasDWARF(f),
		units: map[dwarf.Offset]*unit{}, names: map[dwarf.Offset]dieNames{}, lambdas: map[dwarf.Offset]string{}}
	m.addSymbols(f)
	return m, nil
}

// loadDWARF reads the module's DWARF, from the file or a separate debug
// file, the first time a frame needs it.
func (m *module) loadDWARF() {
	if m.dwLoaded || m.path == "" {
		return
	}
	m.dwLoaded = true
	f, err := elf.Open(m.path)
	if err != nil {
		return
	}
	defer f.Close()
	if hasDWARF(f) {
		// A damaged .debug_* section costs the lines, not the module.
		m.dw, _ = f.DWARF()
	} else {
		m.separateDebug(m.debugDirs)
	}
}

func hasDWARF(f *elf.File) bool {
	return f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil
}

// debugFiles are the paths where a separate debug file of the module
// installed by build id may be, in the order they are tried.
func (m *module) debugFiles(dirs []string) []string {
	if len(m.buildID) < 2 {
		return nil
	}
	id := hex.EncodeToString(m.buildID)
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Join(d, ".build-id", id[:2], id[2:]+".debug"))
	}
	return out
}

// separateDebug loads DWARF (and the full symbol table) from a debug file
// installed by build id, as Debian's -dbgsym packages do.
func (m *module) separateDebug(dirs []string) {
	for _, p := range m.debugFiles(dirs) {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		if hasDWARF(f) {
			if dw, err := f.DWARF(); err == nil {
				m.dw = dw
				m.addSymbols(f)
			}
		}
		f.Close()
		if m.dw != nil {
			return
		}
	}
}

// definedFunc says whether s is a function this module defines.
func definedFunc(s elf.Symbol) bool {
	t := elf.ST_TYPE(s.Info)
	return (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && s.Section != elf.SHN_UNDEF && s.Value != 0 && s.Name != ""
}

// addSymbols adds the defined functions of .symtab and .dynsym.
//
// A large library's tables (a C++ library's .dynsym: tens of thousands
// of functions, megabytes of names) are most of what symbolizing a small
// trace allocates, fresh memory touched once: the names are substrings
// of the table funcSymbols read, not of a copy of it, and syms grows once
// per table, to the count funcSymbols announces.
func (m *module) addSymbols(f *elf.File) {
	add := func(dynamic bool) symbolSink {
		var strs string // tab as one string, the names its substrings
		return symbolSink{
			count: func(n int) { m.syms = slices.Grow(m.syms, n) },
			add: func(tab []byte, start int, addr, size uint64) {
				if strs == "" && len(tab) > 0 {
					// tab is this module's alone and never written again.
					strs = unsafe.String(&tab[0], len(tab))
				}
				name := strs[start:] // up to its NUL (cName)
				m.syms = append(m.syms, symbol{name: name, addr: addr, size: size})
				m.byAddr = nil
				if dynamic && !m.definesMPI && hasMPIPrefix(name) {
					m.definesMPI = true
				}
				if size > 0 && isStartupName(tab[start:]) {
					m.startup = append(m.startup, symbol{addr: addr, size: size})
				}
			},
		}
	}
	funcSymbols(f, elf.SHT_SYMTAB, add(false))
	funcSymbols(f, elf.SHT_DYNSYM, add(true))
}

// symbolSink receives a symbol table's defined functions from
// funcSymbols: count (may be nil) first, with at least as many as add
// will receive, then add for each, its name the NUL-terminated string at
// tab[start:] in the table's strings tab (never empty, and never without
// its NUL).
//
// The names' ends are not looked for: a library's tens of thousands of
// functions are read to find a few hundred, and the tests made of their
// names need only their starts (hasMPIPrefix, isStartupName); scanning
// each name for its end was a noticeable part of reading the table.
type symbolSink struct {
	count func(n int)
	add   func(tab []byte, start int, addr, size uint64)
}

// cName is the NUL-terminated name at the start of s.
func cName(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// funcSymbols gives sink each defined function (definedFunc) of f's
// symbol table of type typ (SHT_SYMTAB or SHT_DYNSYM), in the order
// Symbols and DynamicSymbols list them, nothing when they would fail
// (DynamicSymbols fails too on malformed version tables, which are not
// read here). It returns whether the table was read.
// debug/elf makes a Symbol and a string of every entry, most of them
// not functions (imports, objects), and reads the versions of the
// dynamic ones; on a small trace that cost more than the rest of the
// symbolization.
func funcSymbols(f *elf.File, typ elf.SectionType, sink symbolSink) bool {
	if f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		read := f.Symbols
		if typ == elf.SHT_DYNSYM {
			read = f.DynamicSymbols
		}
		syms, err := read()
		if err != nil {
			return false
		}
		// The names in one table, as for the ELF64 little-endian files.
		type entry struct {
			start, end int
			addr, size uint64
		}
		var tab []byte
		var es []entry
		for _, s := range syms {
			if definedFunc(s) {
				es = append(es, entry{len(tab), len(tab) + len(s.Name), s.Value, s.Size})
				tab = append(append(tab, s.Name...), 0)
			}
		}
		if sink.count != nil {
			sink.count(len(es))
		}
		for _, e := range es {
			sink.add(tab, e.start, e.addr, e.size)
		}
		return true
	}
	sec := f.SectionByType(typ)
	if sec == nil {
		return false
	}
	data, err := sec.Data()
	if err != nil || len(data) == 0 || len(data)%elf.Sym64Size != 0 {
		return false
	}
	if sec.Link == 0 || int(sec.Link) >= len(f.Sections) {
		return false
	}
	tab, err := f.Sections[sec.Link].Data()
	if err != nil {
		return false
	}
	// A name without its NUL is read as empty, as debug/elf reads it: only
	// names that start after the table's last NUL have none.
	named := bytes.LastIndexByte(tab, 0)
	le := binary.LittleEndian
	// The first entry is all zeros.
	data = data[elf.Sym64Size:]
	defined := func(e []byte) bool {
		t := elf.ST_TYPE(e[4])
		return (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) &&
			elf.SectionIndex(le.Uint16(e[6:8])) != elf.SHN_UNDEF && le.Uint64(e[8:16]) != 0
	}
	if sink.count != nil {
		n := 0
		for e := data; len(e) >= elf.Sym64Size; e = e[elf.Sym64Size:] {
			if defined(e) {
				n++
			}
		}
		sink.count(n)
	}
	for ; len(data) >= elf.Sym64Size; data = data[elf.Sym64Size:] {
		if !defined(data) {
			continue
		}
		addr := le.Uint64(data[8:16])
		start := int(le.Uint32(data[0:4]))
		if start >= named || tab[start] == 0 {
			continue
		}
		sink.add(tab, start, addr, le.Uint64(data[16:24]))
	}
	return true
}

// sortSymbols orders syms by address in byAddr, aliases in the order
// added (symbolAt prefers the last added): the stable sort on the
// address.
//
// A library's tens of thousands of functions come in its tables' order
// (the dynamic table's is by name hash, close to random), and sorting
// them by comparisons took longer than the rest of the library's
// symbolization: their positions are sorted by the address's digits
// instead (least significant first, which is stable), packed with the
// offset from the lowest address into one integer, in a few passes over
// 8 bytes per symbol; the symbols themselves do not move.
func (m *module) sortSymbols() {
	syms := m.syms
	m.byAddr = make([]uint32, len(syms))
	for i := range m.byAddr {
		m.byAddr[i] = uint32(i)
	}
	if len(syms) < 2 {
		return
	}
	lo, hi, inOrder := syms[0].addr, syms[0].addr, true
	for i := 1; i < len(syms); i++ {
		a := syms[i].addr
		inOrder = inOrder && a >= syms[i-1].addr
		lo, hi = min(lo, a), max(hi, a)
	}
	const posBits, digitBits = 24, 11
	switch {
	case inOrder:
		return
	case len(syms) >= 1<<posBits || hi-lo >= 1<<(64-posBits) || len(syms) < 256:
		slices.SortStableFunc(m.byAddr, func(a, b uint32) int { return cmp.Compare(syms[a].addr, syms[b].addr) })
		return
	}
	keys := make([]uint64, 2*len(syms))
	keys, tmp := keys[:len(syms)], keys[len(syms):]
	for i, s := range syms {
		keys[i] = (s.addr-lo)<<posBits | uint64(i)
	}
	var count [1 << digitBits]uint32
	for shift := uint(posBits); shift < 64 && (hi-lo)>>(shift-posBits) != 0; shift += digitBits {
		clear(count[:])
		for _, k := range keys {
			count[k>>shift&(1<<digitBits-1)]++
		}
		var sum uint32
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range keys {
			d := k >> shift & (1<<digitBits - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	for i, k := range keys {
		m.byAddr[i] = uint32(k & (1<<posBits - 1))
	}
}

// startupAt says whether pc is inside a start-up function (isStartup),
// by the symbol tables of the module and, when its DWARF is in a separate
// debug file, of that file: the frames of such an address are left out
// whatever DWARF would say of them (the C run-time's code below main, and
// whatever it inlined, is nobody's source), so that the module's DWARF,
// tens of megabytes to decompress for the C library, is not loaded for
// them.
func (m *module) startupAt(pc uint64) bool {
	if covers(m.startup, pc) {
		return true
	}
	if m.ownDWARF || m.debugSymtab {
		return false
	}
	m.debugSymtab = true
	for _, p := range m.debugFiles(m.debugDirs) {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		ok := funcSymbols(f, elf.SHT_SYMTAB, symbolSink{add: func(tab []byte, start int, addr, size uint64) {
			if name := tab[start:]; size > 0 && isStartupName(name) {
				m.startup = append(m.startup, symbol{addr: addr, size: size})
			}
		}})
		f.Close()
		if !ok {
			continue
		}
		break
	}
	return covers(m.startup, pc)
}

// covers says whether one of syms covers pc.
func covers(syms []symbol, pc uint64) bool {
	for _, s := range syms {
		if pc >= s.addr && pc-s.addr < s.size {
			return true
		}
	}
	return false
}

// symbolAt is the function symbol covering pc, if any.
func (m *module) symbolAt(pc uint64) (symbol, bool) {
	s, ok := m.symbolIn(pc)
	s.name = cName(s.name)
	return s, ok
}

// symbolIn is symbolAt, the name still running to the end of its table.
func (m *module) symbolIn(pc uint64) (symbol, bool) {
	if m.byAddr == nil {
		m.sortSymbols()
	}
	at := func(i int) *symbol { return &m.syms[m.byAddr[i]] }
	i := sort.Search(len(m.byAddr), func(i int) bool { return at(i).addr > pc }) - 1
	if i < 0 {
		return symbol{}, false
	}
	// Aliases share an address; any of them covering pc will do, but a
	// sized one is preferred to a size-0 marker.
	for j := i; j >= 0 && at(j).addr == at(i).addr; j-- {
		if s := at(j); s.size > 0 && pc < s.addr+s.size {
			return *s, true
		}
	}
	if at(i).size == 0 {
		return *at(i), true
	}
	return symbol{}, false
}

// frames symbolizes pc (an address inside the call instruction), innermost
// first; none when nothing is known about it.
func (m *module) frames(pc uint64) []report.Frame {
	if fr := m.dwarfFrames(pc); len(fr) > 0 {
		return fr
	}
	if s, ok := m.symbolAt(pc); ok {
		return []report.Frame{{Function: fmt.Sprintf("%s+%#x", displayName(s.name), pc+1-s.addr)}}
	}
	return nil
}

// displayName is a symbol's name as the program's author knows the
// function: a C++ name (Itanium ABI: _Z…) demangled without its parameters
// and template arguments, as pprof shows it (Foam::UPstream::waitRequests
// for _ZN4Foam8UPstream12waitRequestsEi, whose full form may run to
// hundreds of characters); a gfortran module procedure as gdb shows it
// (solver::exchange for __solver_MOD_exchange); other names, and those the
// demangler cannot read, as they are. The frame's offset still tells
// overloads apart.
func displayName(name string) string {
	if mod, proc, ok := fortranModule(name); ok {
		return mod + "::" + proc
	}
	if !strings.HasPrefix(name, "_Z") {
		return name
	}
	return localNames(demangle.Filter(name, demangle.NoParams, demangle.NoTemplateParams))
}

// localNames shortens the demangler's names of a function's local
// entities as DWARF-only frames name them (unit): the enclosing
// function's parameters go (ns::Solver::step(int) const::x is
// ns::Solver::step::x), and a lambda's closure type reads <lambda>
// ({lambda(int)#1}; the frame's line tells two lambdas apart).
func localNames(s string) string {
	if !strings.Contains(s, ")::") && !strings.Contains(s, ") const::") && !strings.Contains(s, "{lambda(") {
		return s
	}
	localRes.once.Do(func() {
		localRes.params = regexp.MustCompile(`\([^()]*\)( const)?::`)
		localRes.lambda = regexp.MustCompile(`\{lambda\([^{}]*\)#[0-9]+\}`)
	})
	for {
		t := localRes.params.ReplaceAllLiteralString(s, "::")
		if t == s {
			break
		}
		s = t
	}
	return localRes.lambda.ReplaceAllLiteralString(s, "<lambda>")
}

// localRes are localNames' expressions, compiled when first needed (most
// programs have no local names in their frames).
var localRes struct {
	once           sync.Once
	params, lambda *regexp.Regexp
}

// fortranModule splits gfortran's name of a module procedure,
// __<module>_MOD_<procedure>.
func fortranModule(name string) (mod, proc string, ok bool) {
	rest, ok := strings.CutPrefix(name, "__")
	if !ok {
		return "", "", false
	}
	mod, proc, ok = strings.Cut(rest, "_MOD_")
	return mod, proc, ok && mod != "" && proc != ""
}

func (m *module) dwarfFrames(pc uint64) []report.Frame {
	m.loadDWARF()
	if m.dw == nil {
		return nil
	}
	cu := m.cuAt(pc)
	if cu == nil {
		return nil
	}
	u := m.unit(cu)
	file, line, haveLine := u.line(pc)
	chain := u.chain(pc)
	if len(chain) == 0 {
		if !haveLine {
			return nil
		}
		f := report.Frame{File: file, Line: line}
		if s, ok := m.symbolAt(pc); ok {
			f.Function = displayName(s.name)
		}
		return []report.Frame{f}
	}
	inner := chain[len(chain)-1]
	out := []report.Frame{{Function: inner.name}}
	if haveLine {
		out[0].File, out[0].Line = file, line
	}
	// Each inlined call sits in its parent at its call_file:call_line.
	for k := len(chain) - 1; k > 0; k-- {
		out = append(out, report.Frame{Function: chain[k-1].name, File: chain[k].callFile, Line: chain[k].callLine})
	}
	if out[len(out)-1].Function == "" {
		if s, ok := m.symbolAt(pc); ok {
			out[len(out)-1].Function = displayName(s.name)
		}
	}
	return out
}

// cuAt is the compilation unit covering pc. dwarf.Reader.SeekPC would
// parse every unit's header on each call; a sorted index of the units'
// ranges, built once, keeps a lookup logarithmic in large programs.
func (m *module) cuAt(pc uint64) *dwarf.Entry {
	if !m.cusBuilt {
		m.cusBuilt = true
		r := m.dw.Reader()
		for {
			e, err := r.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
				if rs, err := m.dw.Ranges(e); err == nil {
					for _, rg := range rs {
						if rg[1] > rg[0] {
							m.cus = append(m.cus, cuRange{rg[0], rg[1], e})
						}
					}
				}
			}
			r.SkipChildren()
		}
		sort.Slice(m.cus, func(i, j int) bool { return m.cus[i].lo < m.cus[j].lo })
	}
	i := sort.Search(len(m.cus), func(i int) bool { return m.cus[i].lo > pc }) - 1
	// Ranges of different units do not overlap in practice; a few steps
	// back cover a unit whose range encloses smaller ones.
	for j := i; j >= 0 && j > i-8; j-- {
		if pc < m.cus[j].hi {
			return m.cus[j].cu
		}
	}
	return nil
}

// unit indexes a compilation unit on first use.
func (m *module) unit(cu *dwarf.Entry) *unit {
	if u, ok := m.units[cu.Offset]; ok {
		return u
	}
	u := &unit{}
	m.units[cu.Offset] = u
	var files []*dwarf.LineFile
	if lr, err := m.dw.LineReader(cu); err == nil && lr != nil {
		files = lr.Files()
		var e dwarf.LineEntry
		for lr.Next(&e) == nil {
			r := lineRow{addr: e.Address, line: e.Line, end: e.EndSequence}
			if e.File != nil {
				r.file = e.File.Name
			}
			u.rows = append(u.rows, r)
		}
		// Sequences may come in any order; at an address where one ends
		// and another starts, the start must win.
		sort.SliceStable(u.rows, func(i, j int) bool {
			a, b := u.rows[i], u.rows[j]
			return a.addr < b.addr || a.addr == b.addr && a.end && !b.end
		})
	}
	if !cu.Children {
		return u
	}
	r := m.dw.Reader()
	r.Seek(cu.Offset)
	if _, err := r.Next(); err != nil {
		return u
	}
	// open holds the DIEs whose children are being read: the scope they
	// opened, or nil for DIEs that are not scopes (lexical blocks …);
	// lambda, beside it, "?" for an unnamed class inside a function and
	// the qualified name of a lambda's closure type (main::<lambda>).
	open := []*scope{nil}
	lambda := []string{""}
	for len(open) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			open, lambda = open[:len(open)-1], lambda[:len(lambda)-1]
			continue
		}
		// A closure type is an unnamed class inside a function whose
		// constructors GCC names <lambda>, before its operator().
		if top := &lambda[len(lambda)-1]; *top != "" && e.Tag == dwarf.TagSubprogram {
			n, _ := e.Val(dwarf.AttrName).(string)
			if *top == "?" && n == "<lambda>" {
				q := "<lambda>"
				if p := innermost(open); p != nil && p.name != "" {
					q = p.name + "::" + q
				}
				*top = q
			}
			if *top != "?" {
				m.lambdas[e.Offset] = *top
			}
		}
		closure := ""
		if e.Tag == dwarf.TagClassType || e.Tag == dwarf.TagStructType {
			if _, named := e.Val(dwarf.AttrName).(string); !named && innermost(open) != nil {
				closure = "?"
			}
		}
		var sc *scope
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			if rs, err := m.dw.Ranges(e); err == nil && len(rs) > 0 {
				sc = &scope{name: m.name(e, 0), ranges: rs}
				if e.Tag == dwarf.TagInlinedSubroutine {
					if i, ok := e.Val(dwarf.AttrCallFile).(int64); ok && i >= 0 && int(i) < len(files) && files[i] != nil {
						sc.callFile = files[i].Name
					}
					if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
						sc.callLine = int(l)
					}
				}
				if p := innermost(open); p != nil {
					p.children = append(p.children, sc)
				} else {
					u.funcs = append(u.funcs, sc)
				}
			}
		}
		if e.Children {
			open, lambda = append(open, sc), append(lambda, closure)
		}
	}
	return u
}

func innermost(open []*scope) *scope {
	for i := len(open) - 1; i >= 0; i-- {
		if open[i] != nil {
			return open[i]
		}
	}
	return nil
}

// chain is the function containing pc and the inlined calls inside it that
// contain pc, outermost first.
func (u *unit) chain(pc uint64) []*scope {
	var out []*scope
	level := u.funcs
	for {
		var next *scope
		for _, s := range level {
			if s.contains(pc) {
				next = s
				break
			}
		}
		if next == nil {
			return out
		}
		out = append(out, next)
		level = next.children
	}
}

// name is a subprogram's name, following DW_AT_abstract_origin (inlined
// and out-of-line instances) and DW_AT_specification (C++ definitions).
// A C++ function or a Fortran module procedure is named by its linkage
// name, shown as the symbol table's names are (displayName:
// solver::Halo::exchange, solver::exchange), where DW_AT_name says
// exchange, which a dozen classes or modules of a program may have.
func (m *module) name(e *dwarf.Entry, depth int) string {
	plain, cxx := m.names2(e, depth)
	if cxx != "" {
		return displayName(cxx)
	}
	return plain
}

// dieNames are a DIE's names (names2), kept by offset.
type dieNames struct{ plain, cxx string }

// dwAttrMIPSLinkageName is DW_AT_MIPS_linkage_name, which GCC wrote
// before DWARF 4 named the attribute.
const dwAttrMIPSLinkageName dwarf.Attr = 0x2007

// names2 is e's DW_AT_name and its linkage name if that is C++'s
// (Itanium-mangled) or a Fortran module procedure's, either found on e or
// along its origin and specification.
func (m *module) names2(e *dwarf.Entry, depth int) (plain, cxx string) {
	plain, _ = e.Val(dwarf.AttrName).(string)
	if q, ok := m.lambdas[e.Offset]; ok && plain != "" {
		plain = q + "::" + plain
	}
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, dwAttrMIPSLinkageName} {
		if n, ok := e.Val(a).(string); ok {
			if _, _, fortran := fortranModule(n); fortran || strings.HasPrefix(n, "_Z") {
				return plain, n
			}
		}
	}
	if depth > 4 {
		return plain, ""
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		off, ok := e.Val(a).(dwarf.Offset)
		if !ok {
			continue
		}
		on, ok := m.names[off]
		if !ok {
			r := m.dw.Reader()
			r.Seek(off)
			if oe, err := r.Next(); err == nil && oe != nil {
				on.plain, on.cxx = m.names2(oe, depth+1)
			}
			m.names[off] = on
		}
		if plain == "" {
			plain = on.plain
		}
		if on.cxx != "" {
			return plain, on.cxx
		}
	}
	return plain, ""
}

// buildID is the content of the NT_GNU_BUILD_ID note, from the section or,
// when section headers are gone, the PT_NOTE segments.
func buildID(f *elf.File) []byte {
	if s := f.Section(".note.gnu.build-id"); s != nil {
		if d, err := s.Data(); err == nil {
			if id := noteBuildID(d, f.ByteOrder); id != nil {
				return id
			}
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		d := make([]byte, p.Filesz)
		if _, err := p.ReadAt(d, 0); err != nil {
			continue
		}
		if id := noteBuildID(d, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

func noteBuildID(d []byte, bo binary.ByteOrder) []byte {
	const ntGNUBuildID = 3
	// Sizes come from the file: computed in 64 bits, checked before use.
	align4 := func(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }
	for len(d) >= 12 {
		namesz, descsz, typ := bo.Uint32(d), bo.Uint32(d[4:]), bo.Uint32(d[8:])
		d = d[12:]
		if align4(namesz) > uint64(len(d)) {
			return nil
		}
		name := d[:namesz]
		d = d[align4(namesz):]
		if uint64(descsz) > uint64(len(d)) {
			return nil
		}
		if typ == ntGNUBuildID && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) {
			return append([]byte{}, d[:descsz]...)
		}
		if align4(descsz) > uint64(len(d)) {
			return nil
		}
		d = d[align4(descsz):]
	}
	return nil
}
