package otf2

import (
	"fmt"
	"strconv"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// globalDefs gathers the archive's global definitions while the ranks are
// written; they are written once every rank's events are (write), as OTF2
// requires of a serial writer. Their number grows with the program's
// functions, communicators and call sites, not with the trace's length.
type globalDefs struct {
	strs    map[string]uint32
	strList []string

	regions    map[string]uint32
	regionList []regionDef

	comms    map[uint64]uint32 // global communicator id → OTF2 comm
	commList []commDef
	selfComm uint32 // +1; 0 = not defined yet

	scls    map[[2]string]uint32 // file, line → source code location
	sclList []sclDef
	sites   map[string]uint32 // call site (module+offset of each frame) → source code location or undefinedU32

	// added, when set, is told of each region, communicator and source
	// code location as it is added (a part of a distributed export,
	// write_dist.go).
	added func(kind byte, id uint32)
}

type regionDef struct {
	name string
	role int
}

type commDef struct {
	name    string
	key     uint64   // the global id of the trace's communicator (trace.proto)
	members []uint64 // world ranks
	self    bool
	parent  uint64 // global id of the parent
	hasPar  bool
	// An intercommunicator: members are one group, remote the other.
	inter   bool
	remote  []uint64
	created bool // a CommCreate record names it
}

type sclDef struct {
	file string
	line uint32
	key  int // the line as the symbolizer gave it, part of the scls key
}

// Kinds of definitions (globalDefs.added).
const (
	defRegion = 1 + iota
	defComm
	defSCL
)

func newGlobalDefs() *globalDefs {
	return &globalDefs{strs: map[string]uint32{}, regions: map[string]uint32{}, comms: map[uint64]uint32{},
		scls: map[[2]string]uint32{}, sites: map[string]uint32{}}
}

// str interns s as a string definition.
func (g *globalDefs) str(s string) uint32 {
	if id, ok := g.strs[s]; ok {
		return id
	}
	id := uint32(len(g.strList))
	g.strs[s] = id
	g.strList = append(g.strList, s)
	return id
}

func (g *globalDefs) region(f *tracepb.Function) uint32 {
	return g.addRegion(f.Name, regionRole(f))
}

func (g *globalDefs) addRegion(name string, role int) uint32 {
	if id, ok := g.regions[name]; ok {
		return id
	}
	id := uint32(len(g.regionList))
	g.regions[name] = id
	g.regionList = append(g.regionList, regionDef{name: name, role: role})
	if g.added != nil {
		g.added(defRegion, id)
	}
	return id
}

// selfBit marks the global id of a rank's MPI_COMM_SELF (trace.proto).
const selfBit = 1 << 63

// comm is the OTF2 communicator of d, a communicator of a rank whose
// definitions are defs. Every rank's MPI_COMM_SELF is one OTF2
// communicator, as Score-P writes it.
func (g *globalDefs) comm(d *tracepb.Communicator, defs *traceformat.Definitions) uint32 {
	if d.Id&selfBit != 0 {
		return g.addComm(commDef{self: true})
	}
	if id, ok := g.comms[d.Id]; ok {
		return id
	}
	c := commDef{key: d.Id}
	if d.Id != 0 {
		if p := defs.Comm(d.Parent); p != nil && d.Parent != d.Local {
			c.parent, c.hasPar = p.Id, true
		}
	}
	// (A communicator with another MPI world's processes is not written:
	// rankWriter.comm; these guards keep a damaged list from naming them.)
	for _, m := range d.Members {
		if m != traceformat.OtherWorld {
			c.members = append(c.members, uint64(m))
		}
	}
	if d.Inter {
		c.inter, c.hasPar = true, false
		for _, m := range d.RemoteMembers {
			if m != traceformat.OtherWorld {
				c.remote = append(c.remote, uint64(m))
			}
		}
	}
	return g.addComm(c)
}

// addComm adds c (its name aside) unless a communicator of its key, or
// MPI_COMM_SELF when c is, is there already.
func (g *globalDefs) addComm(c commDef) uint32 {
	if c.self {
		if g.selfComm == 0 {
			g.commList = append(g.commList, commDef{name: "MPI_COMM_SELF", self: true})
			g.selfComm = uint32(len(g.commList))
			if g.added != nil {
				g.added(defComm, g.selfComm-1)
			}
		}
		return g.selfComm - 1
	}
	if id, ok := g.comms[c.key]; ok {
		return id
	}
	id := uint32(len(g.commList))
	c.name = "Comm " + strconv.FormatUint(uint64(id), 10)
	if c.key == 0 {
		c.name = "MPI_COMM_WORLD"
	}
	g.comms[c.key] = id
	g.commList = append(g.commList, c)
	if g.added != nil {
		g.added(defComm, id)
	}
	return id
}

// site is the source code location of a call site given as return
// addresses: the innermost frame with a source file.
func (g *globalDefs) site(pcs []uint64, mods []*tracepb.Module, sym analyzer.Symbolizer) uint32 {
	key := make([]byte, 0, 64)
	type ref struct {
		mod string
		off uint64
	}
	refs := make([]ref, 0, len(pcs))
	for _, pc := range pcs {
		r := ref{off: pc}
		for _, m := range mods {
			if pc >= m.Start && pc < m.End {
				r = ref{m.Path, pc - m.LoadBias}
				break
			}
		}
		refs = append(refs, r)
		key = append(key, r.mod...)
		key = append(key, '+')
		key = strconv.AppendUint(key, r.off, 16)
		key = append(key, '|')
	}
	if id, ok := g.sites[string(key)]; ok {
		return id
	}
	id := undefinedU32
	for _, r := range refs {
		for _, f := range sym.Symbolize(r.mod, r.off) {
			if f.File == "" {
				continue
			}
			id = g.addSCL(f.File, f.Line)
			break
		}
		if id != undefinedU32 {
			break
		}
	}
	g.sites[string(key)] = id
	return id
}

// addSCL is the source code location of line of file, added if new.
func (g *globalDefs) addSCL(file string, line int) uint32 {
	k := [2]string{file, strconv.Itoa(line)}
	if id, ok := g.scls[k]; ok {
		return id
	}
	id := uint32(len(g.sclList))
	g.scls[k] = id
	g.sclList = append(g.sclList, sclDef{file: file, line: uint32(max(line, 0)), key: line})
	if g.added != nil {
		g.added(defSCL, id)
	}
	return id
}

// Groups of the archive: the MPI ranks as locations, MPI_COMM_SELF's,
// then one per distinct member list of a communicator.
const (
	groupLocations = 0
	groupSelf      = 1
)

// write writes the global definitions: strings first, then what refers
// to them.
func (g *globalDefs) write(ca *cArchive, x *exporter) error {
	size := x.rt.Size
	empty := g.str("")
	mpi := g.str("MPI")
	machine := g.str("machine")
	nodeClass := g.str("node")
	thread := g.str("Master thread")
	// The other threads as Score-P names a process's threads that are
	// not OpenMP's: "Pthread thread N", N the tracer's number of the
	// thread in its process.
	threadName := map[uint32]uint32{}
	for _, ls := range x.locs {
		for _, l := range ls {
			if _, ok := threadName[l.thread]; !ok && l.thread != 0 {
				threadName[l.thread] = g.str("Pthread thread " + strconv.FormatUint(uint64(l.thread), 10))
			}
		}
	}
	hostNode := map[string]uint32{}
	var hosts []string
	rankName := make([]uint32, size)
	for r, rk := range x.rt.Ranks {
		h := "unknown host"
		if rk.Header != nil && rk.Header.Hostname != "" {
			h = rk.Header.Hostname
		}
		if _, ok := hostNode[h]; !ok {
			hostNode[h] = uint32(len(hosts) + 1)
			hosts = append(hosts, h)
		}
		rankName[r] = g.str("MPI Rank " + strconv.Itoa(r))
	}
	for _, h := range hosts {
		g.str(h)
	}
	for _, r := range g.regionList {
		g.str(r.name)
	}
	for _, s := range g.sclList {
		g.str(s.file)
	}
	type attr struct {
		name, desc string
		typ        int
	}
	attrs := []attr{
		attrSCL:     {"SOURCE_CODE_LOCATION", "Source code location", typeSCL},
		attrCalls:   {"dtpa::calls", "Calls of one call site that the tracer folded into this call (unsuccessful polls, runs of queries)", typeUint32},
		attrPcLevel: {"dtpa::pcontrol_level", "MPI_Pcontrol level argument", typeInt32},
		attrPcArg:   {"dtpa::pcontrol_arg", "MPI_Pcontrol second argument", typeInt64},
		attrFlag:    {"dtpa::flag", "Flag the call returned (tests, probes)", typeUint8},
		attrStSrc:   {"dtpa::status_source", "Source of the message MPI_Probe found", typeInt32},
		attrStTag:   {"dtpa::status_tag", "Tag of the message MPI_Probe found", typeInt32},
		attrStComm:  {"dtpa::status_comm", "Communicator MPI_Probe looked in", typeComm},
		attrBytes:   {"dtpa::bytes", "Bytes of a send or receive addressed to MPI_PROC_NULL", typeUint64},
		attrInner:   {"dtpa::inner_gaps", "Summed time between the calls of a folded run, outside MPI (timer ticks)", typeUint64},
		attrUnf:     {"dtpa::unfinished", "The call never returned: it was in progress when its process ended (a crash, a kill, a hang). Its Leave is that end (1), when the job was interrupted, which the process outlived (2), or its Enter, the end being unknown (3)", typeUint8},
	}
	for _, a := range attrs {
		g.str(a.name)
		g.str(a.desc)
	}
	for _, c := range g.commList {
		g.str(c.name)
	}
	for id, s := range g.strList {
		if err := ca.defString(uint32(id), s); err != nil {
			return err
		}
	}

	first, length := x.first, x.last-x.first
	realtime := undefinedTimestamp
	if x.realtimeStart > 0 {
		realtime = x.realtimeStart + first
	}
	if err := ca.defClock(resolution, first, length, realtime); err != nil {
		return err
	}
	if err := ca.defParadigmMPI(mpi); err != nil {
		return err
	}
	if err := ca.defSystemTreeNode(0, machine, machine, undefinedU32); err != nil {
		return err
	}
	for i, h := range hosts {
		if err := ca.defSystemTreeNode(uint32(i+1), g.strs[h], nodeClass, 0); err != nil {
			return err
		}
	}
	for r, rk := range x.rt.Ranks {
		if !x.written[r] {
			continue
		}
		h := "unknown host"
		if rk.Header != nil && rk.Header.Hostname != "" {
			h = rk.Header.Hostname
		}
		if err := ca.defLocationGroup(uint32(r), rankName[r], hostNode[h]); err != nil {
			return err
		}
	}
	for r := range x.rt.Ranks {
		if !x.written[r] {
			continue
		}
		for _, l := range x.locs[r] {
			name := thread
			if l.thread != 0 {
				name = threadName[l.thread]
			}
			if err := ca.defLocation(locationID(r, l.thread), name, l.events, uint32(r)); err != nil {
				return err
			}
		}
	}
	for id, r := range g.regionList {
		if err := ca.defRegion(uint32(id), g.strs[r.name], mpi, r.role); err != nil {
			return err
		}
	}
	for id, s := range g.sclList {
		if err := ca.defSourceCodeLocation(uint32(id), g.strs[s.file], s.line); err != nil {
			return err
		}
	}
	for id, a := range attrs {
		if err := ca.defAttribute(uint32(id), g.strs[a.name], g.strs[a.desc], a.typ); err != nil {
			return err
		}
	}
	world := make([]uint64, size)
	for r := range world {
		world[r] = uint64(r)
	}
	if err := ca.defGroup(groupLocations, mpi, wGroupCommLocations, world); err != nil {
		return err
	}
	if err := ca.defGroup(groupSelf, empty, wGroupCommSelf, nil); err != nil {
		return err
	}
	groups := map[string]uint32{}
	commGroup := make([]uint32, len(g.commList))
	remoteGroup := make([]uint32, len(g.commList))
	next := uint32(groupSelf + 1)
	group := func(members []uint64) (uint32, error) {
		k := fmt.Sprint(members)
		if grp, ok := groups[k]; ok {
			return grp, nil
		}
		grp := next
		next++
		groups[k] = grp
		return grp, ca.defGroup(grp, empty, wGroupComm, members)
	}
	for id, c := range g.commList {
		if c.self {
			commGroup[id] = groupSelf
			continue
		}
		var err error
		if commGroup[id], err = group(c.members); err != nil {
			return err
		}
		if c.inter {
			if remoteGroup[id], err = group(c.remote); err != nil {
				return err
			}
		}
	}
	for id, c := range g.commList {
		if c.inter {
			if err := ca.defInterComm(uint32(id), g.strs[c.name], commGroup[id], remoteGroup[id]); err != nil {
				return err
			}
			continue
		}
		parent := undefinedComm
		if c.hasPar {
			if p, ok := g.comms[c.parent]; ok {
				parent = p
			}
		}
		if err := ca.defComm(uint32(id), g.strs[c.name], commGroup[id], parent, c.created); err != nil {
			return err
		}
	}
	return nil
}
