package analyzer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math/bits"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// rankTot is one processor's figures for an interval, nested ones
// included.
type rankTot struct {
	exeCount int
	exec     int64
	// lastExit and openAtEnd are the node's (intervals.Node), for
	// incomplete traces (incomplete.go).
	lastExit  int64
	openAtEnd bool
	a         acc
	sites     map[int32]*siteTot  // by siteTable index
	waits     map[waitKey]waitVal // file-local sites (waits.go)
	causes    map[causeKey]causeVal
	prof      *profAcc // acc.prof, nested intervals included
}

type siteTot struct {
	fn                                string
	count, time, rs, pot, tv, overlap int64
	late                              int64
	minCall, maxCall, bytes           int64 // profile.go
}

// siteRef says where a call site's addresses can be symbolized.
type siteRef struct {
	modules []string
	offsets []uint64
}

// gnode is an interval merged over processors.
type gnode struct {
	path  []int
	ranks map[int]*rankTot
	entry siteRef // call site of the entering MPI_Pcontrol (first processor's)
}

func isVersionError(err error) bool {
	var ve *traceformat.VersionError
	return errors.As(err, &ve)
}

// siteKeyer maps one rank's call sites to keys that agree across ranks:
// the function name and each return address as module path + offset in the
// module's ELF address space (so address-space randomization does not
// matter).
type siteKeyer struct {
	defs *traceformat.Definitions
	// frames, when set, are the call sites' return addresses already
	// mapped to defs.Modules, by call-site id (an unmarshalled result's,
	// rankResult.frames): defs.CallSites is then not used.
	frames [][]siteFrame
	// virt maps a virtual site (sitefns.go) to the call site it stands
	// for: a site's frames are looked up under real(site).
	virt  map[uint32]uint32
	cache map[[2]uint32]string
}

// real is the call site that site stands for: site itself unless it is a
// virtual site.
func (k *siteKeyer) real(site uint32) uint32 {
	if r, ok := k.virt[site]; ok {
		return r
	}
	return site
}

// siteFrame is a return address as the module holding it (an index in
// Definitions.Modules, −1 for none) and its offset there (the address
// itself for none).
type siteFrame struct {
	mod int32
	off uint64
}

// frameOf maps return address pc to the first module of mods holding
// it.
func frameOf(mods []*tracepb.Module, pc uint64) siteFrame {
	for i, m := range mods {
		if pc >= m.Start && pc < m.End {
			return siteFrame{int32(i), pc - m.LoadBias}
		}
	}
	return siteFrame{-1, pc}
}

// siteFrames are site's return addresses mapped to modules: the
// unmarshalled result's, or mapped into buf.
func (k *siteKeyer) siteFrames(site uint32, buf []siteFrame) []siteFrame {
	site = k.real(site)
	if k.frames != nil {
		if int(site) < len(k.frames) {
			return k.frames[site]
		}
		return nil
	}
	if int(site) >= len(k.defs.CallSites) {
		return nil
	}
	buf = buf[:0]
	for _, pc := range k.defs.CallSites[site] {
		buf = append(buf, frameOf(k.defs.Modules, pc))
	}
	return buf
}

// newSiteKeyer is the siteKeyer of the rank whose definitions are defs.
func newSiteKeyer(defs *traceformat.Definitions) *siteKeyer {
	return &siteKeyer{defs: defs, cache: map[[2]uint32]string{}}
}

func (k *siteKeyer) key(site uint32, fn uint32) string {
	ck := [2]uint32{site, fn}
	if s, ok := k.cache[ck]; ok {
		return s
	}
	s, _, _ := k.make(site, fn, nil)
	k.cache[ck] = s
	return s
}

// fnName is the name of function fn, "?" when the rank defines none.
func (k *siteKeyer) fnName(fn uint32) string {
	if f := k.defs.Function(fn); f != nil {
		return f.Name
	}
	return "?"
}

// make builds the key of call site site calling fn, with the function's
// name and where the site's addresses are; frames, when not nil, are the
// site's (siteFrames).
func (k *siteKeyer) make(site uint32, fn uint32, frames []siteFrame) (key, name string, ref siteRef) {
	name = k.fnName(fn)
	if frames == nil {
		frames = k.siteFrames(site, nil)
	}
	ref = k.refOf(frames)
	n := len(name)
	for i := range ref.modules {
		n += len(ref.modules[i]) + 4 + 16
	}
	b := make([]byte, 0, n)
	b = append(b, name...)
	for i := range ref.modules {
		// "|module+0xoffset", as "|%s+%#x" would print it.
		b = append(b, '|')
		b = append(b, ref.modules[i]...)
		b = append(b, "+0x"...)
		b = appendHex(b, ref.offsets[i])
	}
	return string(b), name, ref
}

// appendHex appends v in lower-case hexadecimal without leading zeros, as
// strconv.AppendUint(b, v, 16) does.
func appendHex(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	n := max(1, (bits.Len64(v)+3)/4)
	b = slices.Grow(b, n)
	d := b[len(b) : len(b)+n]
	for i := n - 1; i >= 0; i-- {
		d[i] = digits[v&15]
		v >>= 4
	}
	return b[:len(b)+n]
}

// siteTable numbers the run's call sites once for the report: each
// rank's (file-local call site, function) maps to an index of its key
// (siteKeyer), the same index on every rank whose site has that key, so
// that the report's merging, numbering and lookups go by integer and
// each key is built and hashed once per rank and site.
type siteTable struct {
	keys  []string  // by index
	fns   []string  // the function's name, by index
	refs  []siteRef // the site's addresses, by index
	index map[string]int32
	// byFrames maps the function's name and the frames as module numbers
	// (mods) and offsets, in binary, to the index: the ranks' same sites
	// found without building their keys again.
	byFrames map[string]int32
	mods     map[string]uint32 // module paths, numbered
	// modOf numbers a rank's modules (Definitions.Modules), by rank.
	modOf [][]uint32
	buf   []byte
	fbuf  []siteFrame
	// local has each rank's indexes by call site, by rank.
	local []rankSites
	// srcID is the report's SRC id of each index (0 for an index no
	// reported interval has), set by number.
	srcID []int
}

// rankSites are one rank's call sites' indexes in a siteTable. The
// rank's sites are numbered from 0 (Definitions.CallSites), so those are
// found by slice; the rest by map.
type rankSites struct {
	// fn and idx are, by call site, 1 + the first function found calling
	// there (0: none yet) and its index.
	fn  []uint32
	idx []int32
	// more has the other (call site, function) pairs: further functions
	// at a site, virtual sites (sitefns.go).
	more map[[2]uint32]int32
	// last is, by call site, 1 + the index of the last function found
	// calling there in a preorder walk of the rank's intervals (the SRC
	// ids of the waits, causes and unreceived messages), 0 for none;
	// lastMore the same for the sites past the slice.
	last     []int32
	lastMore map[uint32]int32
}

func (s *rankSites) get(site, fn uint32) (int32, bool) {
	if f := fn + 1; f != 0 && int(site) < len(s.fn) && s.fn[site] == f {
		return s.idx[site], true
	}
	i, ok := s.more[[2]uint32{site, fn}]
	return i, ok
}

func (s *rankSites) put(site, fn uint32, i int32) {
	if f := fn + 1; f != 0 && int(site) < len(s.fn) && s.fn[site] == 0 {
		s.fn[site], s.idx[site] = f, i
		return
	}
	if s.more == nil {
		s.more = map[[2]uint32]int32{}
	}
	s.more[[2]uint32{site, fn}] = i
}

func (s *rankSites) setLast(site uint32, i int32) {
	if int(site) < len(s.last) {
		s.last[site] = i + 1
		return
	}
	if s.lastMore == nil {
		s.lastMore = map[uint32]int32{}
	}
	s.lastMore[site] = i + 1
}

// lastOf is 1 + the index of the last function found calling at site, 0
// for none.
func (s *rankSites) lastOf(site uint32) int32 {
	if int(site) < len(s.last) {
		return s.last[site]
	}
	return s.lastMore[site]
}

func newSiteTable(ranks int) *siteTable {
	return &siteTable{index: map[string]int32{}, byFrames: map[string]int32{}, mods: map[string]uint32{},
		modOf: make([][]uint32, ranks), local: make([]rankSites, ranks)}
}

// framesKey is the binary key (byFrames) of rank's site calling fn, whose
// frames (siteFrames) are frames.
func (tb *siteTable) framesKey(rank int, keys *siteKeyer, fn uint32, frames []siteFrame) []byte {
	mods := keys.defs.Modules
	if tb.modOf[rank] == nil {
		m := make([]uint32, len(mods)+1) // [0]: no module
		for i, md := range mods {
			n, ok := tb.mods[md.Path]
			if !ok {
				n = uint32(len(tb.mods))
				tb.mods[md.Path] = n
			}
			m[i+1] = n
		}
		if n, ok := tb.mods[""]; ok {
			m[0] = n
		} else {
			m[0] = uint32(len(tb.mods))
			tb.mods[""] = m[0]
		}
		tb.modOf[rank] = m
	}
	mod := tb.modOf[rank]
	name := keys.fnName(fn)
	// The name's length first: the key reads back one way only, whatever
	// bytes the name holds.
	b := binary.AppendUvarint(tb.buf[:0], uint64(len(name)))
	b = append(b, name...)
	for _, f := range frames {
		// Paths are numbered once over the run: equal numbers are equal
		// paths, on any rank.
		b = binary.LittleEndian.AppendUint32(b, mod[f.mod+1])
		b = binary.LittleEndian.AppendUint64(b, f.off)
	}
	tb.buf = b
	return b
}

// of is the index of rank's call site site calling fn (keys is the
// rank's siteKeyer).
func (tb *siteTable) of(rank int, keys *siteKeyer, site, fn uint32) int32 {
	loc := &tb.local[rank]
	if loc.fn == nil {
		n := len(keys.defs.CallSites)
		if keys.frames != nil {
			n = len(keys.frames)
		}
		loc.fn, loc.idx, loc.last = make([]uint32, n), make([]int32, n), make([]int32, n)
	}
	i, ok := loc.get(site, fn)
	if !ok {
		frames := keys.siteFrames(site, tb.fbuf)
		if keys.frames == nil {
			tb.fbuf = frames
		}
		fk := tb.framesKey(rank, keys, fn, frames)
		if i, ok = tb.byFrames[string(fk)]; !ok {
			key, name, ref := keys.make(site, fn, frames)
			if i, ok = tb.index[key]; !ok {
				i = int32(len(tb.keys))
				tb.index[key] = i
				tb.keys = append(tb.keys, key)
				tb.fns = append(tb.fns, name)
				tb.refs = append(tb.refs, ref)
			}
			tb.byFrames[string(fk)] = i
		}
		loc.put(site, fn, i)
	}
	loc.setLast(site, i)
	return i
}

// number gives the indexes marked in used the SRC ids 1, 2, … in the
// order of their keys, and returns the ids by key.
func (tb *siteTable) number(used []bool) map[string]int {
	var idx []int32
	for i, u := range used {
		if u {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(tb.keys[a], tb.keys[b]) })
	tb.srcID = make([]int, len(tb.keys))
	siteID := make(map[string]int, len(idx))
	for n, i := range idx {
		tb.srcID[i] = n + 1
		siteID[tb.keys[i]] = n + 1
	}
	return siteID
}

// srcOf is the SRC id of rank's call site site (rankSites.last), 0 when
// it has none.
func (tb *siteTable) srcOf(rank int32, site uint32) int {
	if rank < 0 || int(rank) >= len(tb.local) {
		return 0
	}
	i := tb.local[rank].lastOf(site)
	if i == 0 {
		return 0
	}
	return tb.srcID[i-1]
}

// srcIDsOf is, for each rank r, the report's SRC id of its call site
// site calling fn (0 when the report has none; nil when keys(r) is nil,
// a rank without definitions): by the index tb gave the site when the
// report was built, else by its key (keys(r)) in siteID. The timeline
// and the Chrome export number their calls' sites so; the index spares
// building every site's key a second time.
func srcIDsOf(tb *siteTable, siteID map[string]int, keys func(r int) *siteKeyer) func(r int) func(site, fn uint32) int {
	return func(r int) func(site, fn uint32) int {
		k := keys(r)
		if k == nil {
			return nil
		}
		var loc *rankSites
		if tb != nil && r < len(tb.local) {
			loc = &tb.local[r]
		}
		return func(site, fn uint32) int {
			if loc != nil {
				if i, ok := loc.get(site, fn); ok {
					return tb.srcID[i]
				}
			}
			return siteID[k.key(site, fn)]
		}
	}
}

// ref maps a call site's return addresses to modules and offsets.
func (k *siteKeyer) ref(site uint32) siteRef {
	return k.refOf(k.siteFrames(site, nil))
}

// refOf is the modules' paths and offsets of frames.
func (k *siteKeyer) refOf(frames []siteFrame) siteRef {
	var ref siteRef
	if len(frames) == 0 {
		return ref
	}
	ref.modules, ref.offsets = make([]string, len(frames)), make([]uint64, len(frames))
	for i, f := range frames {
		if f.mod >= 0 {
			ref.modules[i] = k.defs.Modules[f.mod].Path
		}
		ref.offsets[i] = f.off
	}
	return ref
}

// total sums n's subtree for one processor.
func total(n *rnode, tb *siteTable, keys *siteKeyer, out map[string]*gnode, rank int) *rankTot {
	used := len(n.Value.bigSites)
	for id := range n.Value.sites {
		if n.Value.sites[id].used {
			used++
		}
	}
	t := &rankTot{exeCount: n.ExeCount, exec: n.ExecNs, lastExit: n.LastExit, openAtEnd: n.OpenAtEnd,
		sites: make(map[int32]*siteTot, used)}
	// The node's sites' figures, allocated at once.
	slab := make([]siteTot, 0, used)
	addAcc(&t.a, n.Value)
	t.addWaits(&n.Value.culprits)
	t.addCauses(&n.Value.causes)
	addProf(&t.prof, n.Value.prof)
	for id := range n.Value.sites {
		s := &n.Value.sites[id]
		if !s.used {
			continue
		}
		addSite(t.sites, &slab, tb, tb.of(rank, keys, uint32(id), s.fn), s)
	}
	for id, s := range n.Value.bigSites {
		addSite(t.sites, &slab, tb, tb.of(rank, keys, id, s.fn), s)
	}
	for _, c := range n.Children {
		ct := total(c, tb, keys, out, rank)
		addAcc(&t.a, &ct.a)
		t.addWaitVals(ct.waits)
		t.addCauseVals(ct.causes)
		addProf(&t.prof, ct.prof)
		for k, s := range ct.sites {
			d := t.sites[k]
			if d == nil {
				d = &siteTot{fn: s.fn}
				t.sites[k] = d
			}
			d.add(s)
		}
	}
	if t.exeCount > 0 {
		key := n.Key()
		g := out[key]
		if g == nil {
			g = &gnode{path: n.Path, ranks: map[int]*rankTot{}}
			if len(n.Path) > 0 {
				g.entry = keys.ref(n.Site)
			}
			out[key] = g
		}
		g.ranks[rank] = t
	}
	return t
}

func addAcc(d, s *acc) {
	d.p2p += s.p2p
	d.coll += s.coll
	d.sys += s.sys
	d.realSync += s.realSync
	d.potSync += s.potSync
	d.timeVar += s.timeVar
	d.overlap += s.overlap
	d.lateRecv += s.lateRecv
	d.insuf += s.insuf
	d.sends += s.sends
	d.recvs += s.recvs
	d.waits += s.waits
	d.sysCalls += s.sysCalls
	d.collCalls += s.collCalls
	d.collInst += s.collInst
}

// addSite adds s to the figures of index k in m, new ones appended to
// slab.
func addSite(m map[int32]*siteTot, slab *[]siteTot, tb *siteTable, k int32, s *siteAcc) {
	d := m[k]
	if d == nil {
		*slab = append(*slab, siteTot{fn: tb.fns[k]})
		d = &(*slab)[len(*slab)-1]
		m[k] = d
	}
	d.add(&siteTot{count: s.count, time: s.time, rs: s.realSync, pot: s.pot, tv: s.tv, overlap: s.overlap,
		late: s.lateRecv, minCall: s.minCall, maxCall: s.maxCall, bytes: s.bytes})
}

// add merges another processor's or a nested interval's figures of the
// same call site into d.
func (d *siteTot) add(s *siteTot) {
	d.mergeProfile(s.count, s.minCall, s.maxCall, s.bytes)
	d.count += s.count
	d.time += s.time
	d.rs += s.rs
	d.pot += s.pot
	d.tv += s.tv
	d.overlap += s.overlap
	d.late += s.late
}

func sec(ns int64) float64 { return float64(ns) / 1e9 }

// build merges the processors' interval trees into the report; warn
// receives what report.Derive finds. siteID numbers the call sites by
// their keys (siteKeyer) as the report's SRC ids, for the timeline and the
// exports; tb has them by rank and file-local site too.
func build(res *replayResult, byRank []*rankFile, opts Options, warn func(string)) (rep *report.Report, siteID map[string]int, tb *siteTable) {
	program := ""
	for _, f := range byRank {
		if f != nil {
			program = filepath.Base(f.hdr.Program)
			break
		}
	}
	if mn, ok := opts.Symbolizer.(ModuleNoter); ok {
		mn.NoteModules(recordedModules(res.ranks, byRank))
	}
	nodes := map[string]*gnode{}
	insufficientParallelism(res)
	tb = newSiteTable(len(res.ranks))
	for r, rr := range res.ranks {
		if rr == nil || rr.defs == nil {
			continue
		}
		total(rr.root, tb, rr.siteKeyer(), nodes, r)
	}
	var order []*gnode
	for _, g := range nodes {
		if opts.MaxLevel >= 0 && len(g.path) > opts.MaxLevel {
			continue
		}
		order = append(order, g)
	}
	sort.Slice(order, func(i, j int) bool { return lessPath(order[i].path, order[j].path) })
	// SRC numbers agree across intervals: sorted by key over the run.
	used := make([]bool, len(tb.keys))
	for _, g := range order {
		for _, t := range g.ranks {
			for k := range t.sites {
				used[k] = true
			}
		}
	}
	siteID = tb.number(used)
	states := rankStates(res.ranks, byRank)
	pc := newProfileCtx(res.ranks, byRank)
	rep = &report.Report{Schema: report.Schema, Intervals: []report.Interval{}}
	rep.Unfinished = unfinishedCalls(res.ranks, byRank, opts.Symbolizer)
	rep.Crashes = crashes(res.ranks, byRank, opts.Symbolizer)
	rep.Elsewhere = elsewhere(res.ranks, byRank, rep.Unfinished, rep.Crashes, opts.Symbolizer)
	for _, g := range order {
		iv, ws := interval(g, program, tb, opts.Symbolizer)
		markIncomplete(&iv, g, states)
		iv.Waits = reportWaits(g, tb)
		iv.Causes = reportCauses(g, tb)
		profileInterval(&iv, g, pc)
		for _, w := range ws {
			warn(w)
		}
		rep.Intervals = append(rep.Intervals, iv)
	}
	return rep, siteID, tb
}

// recordedModules lists the modules of every rank's module map once per
// path, marking the executable.
func recordedModules(ranks []*rankResult, byRank []*rankFile) []Module {
	var out []Module
	seen := map[string]bool{}
	for r, rp := range ranks {
		if rp == nil || rp.defs == nil {
			continue
		}
		exe := ""
		if f := byRank[r]; f != nil && f.hdr != nil {
			exe = f.hdr.Program
		}
		if !slices.ContainsFunc(rp.defs.Modules, func(m *tracepb.Module) bool { return m.Path == exe }) && len(rp.defs.Modules) > 0 {
			exe = rp.defs.Modules[0].Path
		}
		for _, m := range rp.defs.Modules {
			if m.Path == "" || seen[m.Path] {
				continue
			}
			seen[m.Path] = true
			out = append(out, Module{Path: m.Path, BuildID: m.BuildId, Executable: m.Path == exe})
		}
	}
	return out
}

// insufficientParallelism adds Tseq·(K−1)/K to the intervals the sections
// lay in (each interval the part of Tseq inside it). K, the processors that
// executed a section instance, is known once every replay ended. When some processor executed more
// sections than the replay remembers one by one, K falls back to the
// processors that executed the section number at all (exact whenever the
// same processors execute every instance, the usual case).
func insufficientParallelism(res *replayResult) {
	ranks := res.ranks
	if !res.proc.sectionOverflow {
		for _, rp := range ranks {
			if rp == nil {
				continue
			}
			for _, s := range rp.secRuns {
				k := res.proc.sections[sectionKey{num: s.num, inst: s.inst}]
				if k > 0 {
					s.node.Value.insuf += float64(s.seqNs) * float64(k-1) / float64(k)
				}
			}
		}
		return
	}
	procs := map[int64]int{}
	for _, rp := range ranks {
		if rp == nil {
			continue
		}
		seen := map[int64]bool{}
		for k := range rp.secAgg {
			if !seen[k.num] {
				seen[k.num] = true
				procs[k.num]++
			}
		}
	}
	for _, rp := range ranks {
		if rp == nil {
			continue
		}
		for k, seq := range rp.secAgg {
			n := procs[k.num]
			k.node.Value.insuf += float64(seq) * float64(n-1) / float64(n)
		}
	}
}

func lessPath(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// interval computes one interval's characteristics (docs/characteristics.md §3–§6): the
// measured figures of each processor, completed by report.Derive; warnings
// are Derive's.
func interval(g *gnode, program string, tb *siteTable, sym Symbolizer) (iv report.Interval, warnings []string) {
	iv = report.Interval{Path: append([]int{}, g.path...), Level: len(g.path), SourceFile: program,
		Ranks: []report.Rank{}, SRC: []report.SRC{}}
	if len(g.path) > 0 {
		iv.Number = g.path[len(g.path)-1]
		// The interval's source position is the entering MPI_Pcontrol's
		// caller: the innermost frame with a file (frames inside MPI, a
		// Fortran binding for instance, are not the user's).
		if sym != nil {
		entry:
			for i := range g.entry.modules {
				for _, fr := range sym.Symbolize(g.entry.modules[i], g.entry.offsets[i]) {
					if fr.File != "" {
						iv.SourceFile, iv.Line = fr.File, fr.Line
						break entry
					}
				}
			}
		}
	}
	ranks := make([]int, 0, len(g.ranks))
	for r := range g.ranks {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	for _, r := range ranks {
		t := g.ranks[r]
		a := &t.a
		iv.Ranks = append(iv.Ranks, report.Rank{
			Rank: r, ExeCount: t.exeCount, ExecutionTime: sec(t.exec),
			SendRecvTime: sec(a.p2p), CollectiveTime: sec(a.coll), SystemTime: sec(a.sys),
			RealSync: sec(a.realSync), LateReceiver: sec(a.lateRecv), PotentialSync: sec(a.potSync), TimeVariation: sec(a.timeVar),
			Overlap: sec(a.overlap), InsufficientParallelism: a.insuf / 1e9,
			SendNumber: a.sends, ReceiveNumber: a.recvs, WaitNumber: a.waits,
			CollectiveNumber: a.collCalls, SystemNumber: a.sysCalls,
		})
		iv.Main.CollectiveNumber += a.collInst
	}
	warnings = report.Derive(&iv)
	iv.SRC = srcs(g, ranks, tb, sym)
	return iv, warnings
}

// srcs merges the call sites of an interval over processors.
func srcs(g *gnode, ranks []int, tb *siteTable, sym Symbolizer) []report.SRC {
	// The interval's sites in the order of their SRC ids (unique to a
	// site), each once, the processors' records appended in ranks' order.
	var ks []int32
	pos := make([]int32, len(tb.keys)) // 1 + the site's position in ks; then its position in out
	for _, r := range ranks {
		for k := range g.ranks[r].sites {
			if pos[k] == 0 {
				ks = append(ks, k)
				pos[k] = int32(len(ks))
			}
		}
	}
	slices.SortFunc(ks, func(a, b int32) int { return cmp.Compare(tb.srcID[a], tb.srcID[b]) })
	out := make([]report.SRC, len(ks))
	for i, k := range ks {
		pos[k] = int32(i)
		out[i].ID = tb.srcID[k]
	}
	for _, r := range ranks {
		for k, s := range g.ranks[r].sites {
			p := &out[pos[k]]
			if p.Ranks == nil {
				p.Function, p.Stack, p.Ranks = s.fn, []report.Frame{}, make([]report.SRCRank, 0, len(ranks))
				if sym != nil {
					pcs := tb.refs[k]
					for i := range pcs.modules {
						p.Stack = append(p.Stack, sym.Symbolize(pcs.modules[i], pcs.offsets[i])...)
					}
				}
			}
			p.Ranks = append(p.Ranks, report.SRCRank{Rank: r, ExeCount: s.count, ExeTime: sec(s.time),
				RealSync: sec(s.rs), LateReceiver: sec(s.late), PotentialSync: sec(s.pot), TimeVariation: sec(s.tv), Overlap: sec(s.overlap)})
		}
	}
	for i := range out {
		report.DeriveSRC(&out[i])
	}
	return out
}
