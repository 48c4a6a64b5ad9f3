package analyzer

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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

// newSiteKeyer is the siteKeyer of the rank whose definitions are defs.
func newSiteKeyer(defs *traceformat.Definitions) *siteKeyer {
	return &siteKeyer{defs: defs, cache: map[[2]uint32]string{}}
}

func (k *siteKeyer) key(site uint32, fn uint32) string {
	ck := [2]uint32{site, fn}
	if s, ok := k.cache[ck]; ok {
		return s
	}
	s, _, _ := k.make(site, fn)
	k.cache[ck] = s
	return s
}

// make builds the key of call site site calling fn, with the function's
// name and where the site's addresses are.
func (k *siteKeyer) make(site uint32, fn uint32) (key, name string, ref siteRef) {
	name = "?"
	if f := k.defs.Function(fn); f != nil {
		name = f.Name
	}
	ref = k.ref(site)
	n := len(name)
	for i := range ref.modules {
		n += len(ref.modules[i]) + 4 + 16
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(name)
	var num [16]byte
	for i := range ref.modules {
		// "|module+0xoffset", as "|%s+%#x" would print it.
		b.WriteByte('|')
		b.WriteString(ref.modules[i])
		b.WriteString("+0x")
		b.Write(strconv.AppendUint(num[:0], ref.offsets[i], 16))
	}
	return b.String(), name, ref
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
	// local maps a rank's (call site, function) to its index, by rank.
	local []map[[2]uint32]int32
	// bySite maps a rank's call site to the index of the last function
	// found calling there in a preorder walk of its intervals (the SRC
	// ids of the waits, causes and unreceived messages), by rank.
	bySite []map[uint32]int32
	// srcID is the report's SRC id of each index (0 for an index no
	// reported interval has), set by number.
	srcID []int
}

func newSiteTable(ranks int) *siteTable {
	return &siteTable{index: map[string]int32{}, byFrames: map[string]int32{}, mods: map[string]uint32{},
		modOf: make([][]uint32, ranks), local: make([]map[[2]uint32]int32, ranks), bySite: make([]map[uint32]int32, ranks)}
}

// framesKey is the binary key (byFrames) of rank's site calling fn.
func (tb *siteTable) framesKey(rank int, keys *siteKeyer, site, fn uint32) []byte {
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
	name := "?"
	if f := keys.defs.Function(fn); f != nil {
		name = f.Name
	}
	var frames []siteFrame
	site = keys.real(site)
	if keys.frames != nil {
		if int(site) < len(keys.frames) {
			frames = keys.frames[site]
		}
	} else if int(site) < len(keys.defs.CallSites) {
		frames = tb.fbuf[:0]
		for _, pc := range keys.defs.CallSites[site] {
			frames = append(frames, frameOf(mods, pc))
		}
		tb.fbuf = frames
	}
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
	loc := tb.local[rank]
	if loc == nil {
		n := len(keys.defs.CallSites)
		if keys.frames != nil {
			n = len(keys.frames)
		}
		loc = make(map[[2]uint32]int32, n)
		tb.local[rank] = loc
		tb.bySite[rank] = make(map[uint32]int32, n)
	}
	ck := [2]uint32{site, fn}
	i, ok := loc[ck]
	if !ok {
		fk := tb.framesKey(rank, keys, site, fn)
		if i, ok = tb.byFrames[string(fk)]; !ok {
			key, name, ref := keys.make(site, fn)
			if i, ok = tb.index[key]; !ok {
				i = int32(len(tb.keys))
				tb.index[key] = i
				tb.keys = append(tb.keys, key)
				tb.fns = append(tb.fns, name)
				tb.refs = append(tb.refs, ref)
			}
			tb.byFrames[string(fk)] = i
		}
		loc[ck] = i
	}
	tb.bySite[rank][site] = i
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

// srcOf is the SRC id of rank's call site site (bySite), 0 when it has
// none.
func (tb *siteTable) srcOf(rank int32, site uint32) int {
	if rank < 0 || int(rank) >= len(tb.bySite) || tb.bySite[rank] == nil {
		return 0
	}
	i, ok := tb.bySite[rank][site]
	if !ok {
		return 0
	}
	return tb.srcID[i]
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
		var loc map[[2]uint32]int32
		if tb != nil && r < len(tb.local) {
			loc = tb.local[r]
		}
		return func(site, fn uint32) int {
			if i, ok := loc[[2]uint32{site, fn}]; ok {
				return tb.srcID[i]
			}
			return siteID[k.key(site, fn)]
		}
	}
}

// ref maps a call site's return addresses to modules and offsets.
func (k *siteKeyer) ref(site uint32) siteRef {
	var ref siteRef
	site = k.real(site)
	n := 0
	if k.frames != nil {
		if int(site) < len(k.frames) {
			n = len(k.frames[site])
		}
	} else if int(site) < len(k.defs.CallSites) {
		n = len(k.defs.CallSites[site])
	}
	if n > 0 {
		ref.modules, ref.offsets = make([]string, 0, n), make([]uint64, 0, n)
	}
	add := func(f siteFrame) {
		mod := ""
		if f.mod >= 0 {
			mod = k.defs.Modules[f.mod].Path
		}
		ref.modules = append(ref.modules, mod)
		ref.offsets = append(ref.offsets, f.off)
	}
	if k.frames != nil {
		if int(site) < len(k.frames) {
			for _, f := range k.frames[site] {
				add(f)
			}
		}
		return ref
	}
	if int(site) < len(k.defs.CallSites) {
		for _, pc := range k.defs.CallSites[site] {
			add(frameOf(k.defs.Modules, pc))
		}
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
	addAcc(&t.a, n.Value)
	t.addWaits(n.Value.culprits)
	t.addCauses(n.Value.causes)
	addProf(&t.prof, n.Value.prof)
	for id := range n.Value.sites {
		s := &n.Value.sites[id]
		if !s.used {
			continue
		}
		addSite(t.sites, tb, tb.of(rank, keys, uint32(id), s.fn), s)
	}
	for id, s := range n.Value.bigSites {
		addSite(t.sites, tb, tb.of(rank, keys, id, s.fn), s)
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

func addSite(m map[int32]*siteTot, tb *siteTable, k int32, s *siteAcc) {
	d := m[k]
	if d == nil {
		d = &siteTot{fn: tb.fns[k]}
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
	byKey := map[int32]*report.SRC{}
	if len(ranks) > 0 {
		byKey = make(map[int32]*report.SRC, len(g.ranks[ranks[0]].sites))
	}
	for _, r := range ranks {
		for k, s := range g.ranks[r].sites {
			p := byKey[k]
			if p == nil {
				p = &report.SRC{ID: tb.srcID[k], Function: s.fn, Stack: []report.Frame{}, Ranks: make([]report.SRCRank, 0, len(ranks))}
				if sym != nil {
					pcs := tb.refs[k]
					for i := range pcs.modules {
						p.Stack = append(p.Stack, sym.Symbolize(pcs.modules[i], pcs.offsets[i])...)
					}
				}
				byKey[k] = p
			}
			p.Ranks = append(p.Ranks, report.SRCRank{Rank: r, ExeCount: s.count, ExeTime: sec(s.time),
				RealSync: sec(s.rs), LateReceiver: sec(s.late), PotentialSync: sec(s.pot), TimeVariation: sec(s.tv), Overlap: sec(s.overlap)})
		}
	}
	out := make([]report.SRC, 0, len(byKey))
	for _, p := range byKey {
		report.DeriveSRC(p)
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
