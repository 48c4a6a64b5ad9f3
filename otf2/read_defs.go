package otf2

import (
	"fmt"
	"strings"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// OTF2 enumeration values the importer needs (OTF2_Definitions.h,
// OTF2_GeneralDefinitions.h, OTF2_Events.h of OTF2 3.0).
const (
	undefined32 = ^uint32(0)

	paradigmMPI               = 4
	paradigmMeasurementSystem = 2

	groupCommLocations = 4
	groupCommGroup     = 5
	groupCommSelf      = 6

	locationCPUThread    = 1
	locationGroupProcess = 1

	collCreateHandle  = 17
	collDestroyHandle = 18

	measurementOn = 1
)

// defs are the global definitions of an archive, as libotf2 hands them over.
type defs struct {
	resolution, globalOffset, traceLength, realtime uint64
	haveClock                                       bool

	strings   map[uint32]string
	nodes     map[uint32]treeNode
	regions   map[uint32]region
	locGroups map[uint32]locGroup
	locations []location
	groups    map[uint32]group
	comms     []comm
	// attrs are the attribute definitions (id → name string and OTF2
	// type); scls the source code locations (id → file string, line).
	attrs map[uint32]attribute
	scls  map[uint32]scl
}

type attribute struct {
	name uint32
	typ  uint8
}

type scl struct{ file, line uint32 }

// OTF2 types of the attributes read (OTF2_Type).
const (
	otf2Uint8  = 1
	otf2Uint32 = 3
	otf2Uint64 = 4
	otf2Int32  = 7
	otf2Int64  = 8
	otf2Comm   = 17
	otf2SCL    = 20
)

// attribute returns the id of the attribute named name of type typ, or
// undefined32. The writer (write_defs.go) names its own attributes
// "dtpa::…"; SOURCE_CODE_LOCATION is also what Score-P may name its.
func (d *defs) attribute(name string, typ uint8) uint32 {
	for id, a := range d.attrs {
		if a.typ == typ && d.strings[a.name] == name {
			return id
		}
	}
	return undefined32
}

type treeNode struct{ name, class, parent uint32 }

type region struct {
	name           uint32
	role, paradigm uint8
	file, line     uint32
}

type locGroup struct {
	name   uint32
	typ    uint8
	parent uint32
}

type location struct {
	id     uint64
	typ    uint8
	events uint64
	group  uint32
}

type group struct {
	typ, paradigm uint8
	members       []uint64
}

type comm struct{ id, name, group, parent uint32 }

func newDefs() *defs {
	return &defs{strings: map[uint32]string{}, nodes: map[uint32]treeNode{}, regions: map[uint32]region{},
		locGroups: map[uint32]locGroup{}, groups: map[uint32]group{}, attrs: map[uint32]attribute{}, scls: map[uint32]scl{}}
}

// layout is what the definitions say about the MPI run: which location is
// which world rank, and every MPI communicator with its members.
type layout struct {
	ranks []uint64 // location id of each world rank
	// extraThreads are the other CPU-thread locations of each rank's
	// process, in definition order: imported as its threads 1, 2 …
	extraThreads map[int][]uint64
	world        uint32 // OTF2 comm id of MPI_COMM_WORLD, or undefined32
	comms        map[uint32]*mpiComm
	order        []uint32 // OTF2 comm ids in definition order
	hosts        []string // by world rank
}

// mpiComm is an MPI communicator: its members (world ranks in
// communicator-rank order), or self.
type mpiComm struct {
	id      uint32
	self    bool
	members []uint32
	parent  uint32
}

// mpiLayout finds the MPI processes. The MPI paradigm's COMM_LOCATIONS
// group lists one location per world rank, in rank order; MPI groups of
// type COMM_GROUP list ranks in that group, i.e. world ranks.
func (d *defs) mpiLayout(defFile string) (*layout, error) {
	var locs []uint64
	found := false
	for _, g := range d.groups {
		if g.typ == groupCommLocations && g.paradigm == paradigmMPI {
			locs, found = g.members, true
			break
		}
	}
	if !found || len(locs) == 0 {
		return nil, fmt.Errorf("%s defines no MPI processes (no MPI communication-locations group): a serial or non-MPI run, which dtpa cannot analyse", defFile)
	}
	l := &layout{ranks: locs, world: undefined32, comms: map[uint32]*mpiComm{}, extraThreads: map[int][]uint64{}}
	rankOfLoc := map[uint64]int{}
	for r, loc := range locs {
		rankOfLoc[loc] = r
	}
	// Other CPU threads of the same process.
	groupRank := map[uint32]int{}
	for _, loc := range d.locations {
		if r, ok := rankOfLoc[loc.id]; ok {
			groupRank[loc.group] = r
		}
	}
	for _, loc := range d.locations {
		if _, ok := rankOfLoc[loc.id]; ok {
			continue
		}
		if r, ok := groupRank[loc.group]; ok && loc.typ == locationCPUThread {
			l.extraThreads[r] = append(l.extraThreads[r], loc.id)
		}
	}
	l.hosts = make([]string, len(locs))
	locGroupOf := map[uint64]uint32{}
	for _, loc := range d.locations {
		locGroupOf[loc.id] = loc.group
	}
	for r, loc := range locs {
		if g, ok := d.locGroups[locGroupOf[loc]]; ok {
			if n, ok := d.nodes[g.parent]; ok {
				l.hosts[r] = d.strings[n.name]
			}
		}
	}
	n := uint32(len(locs))
	for _, c := range d.comms {
		g, ok := d.groups[c.group]
		if !ok || g.paradigm != paradigmMPI {
			continue
		}
		mc := &mpiComm{id: c.id, parent: c.parent}
		switch g.typ {
		case groupCommSelf:
			mc.self = true
		case groupCommGroup:
			bad := false
			for _, m := range g.members {
				if m >= uint64(n) {
					bad = true
				}
				mc.members = append(mc.members, uint32(m))
			}
			if bad {
				return nil, fmt.Errorf("%s: communicator %d has a member beyond the %d MPI processes", defFile, c.id, n)
			}
		default:
			continue
		}
		l.comms[c.id] = mc
		l.order = append(l.order, c.id)
		if l.world == undefined32 && !mc.self && d.strings[c.name] == "MPI_COMM_WORLD" {
			l.world = c.id
		}
	}
	if l.world == undefined32 {
		// No communicator named so: the first parentless one of all ranks.
		for _, id := range l.order {
			mc := l.comms[id]
			if !mc.self && mc.parent == undefined32 && isIdentity(mc.members, n) {
				l.world = id
				break
			}
		}
	}
	if l.world == undefined32 {
		return nil, fmt.Errorf("%s defines no MPI_COMM_WORLD (no MPI communicator of all %d processes)", defFile, n)
	}
	return l, nil
}

func isIdentity(m []uint32, n uint32) bool {
	if uint32(len(m)) != n {
		return false
	}
	for i, x := range m {
		if x != uint32(i) {
			return false
		}
	}
	return true
}

// rankComms are one rank's communicators: the OTF2 comm id's local index
// and the definitions of our format.
type rankComms struct {
	local map[uint32]uint32
	defs  []*tracepb.Communicator
}

// commsOf numbers the communicators rank r belongs to: WORLD 0, SELF 1,
// then the others in definition order. Global ids: WORLD 0, SELF of world
// rank r traceformat.SelfCommID(r), others the OTF2 id + 1 (never 0).
func (l *layout) commsOf(r int) *rankComms {
	rc := &rankComms{local: map[uint32]uint32{}}
	var world []uint32
	for i := range l.ranks {
		world = append(world, uint32(i))
	}
	rc.defs = append(rc.defs,
		&tracepb.Communicator{Local: traceformat.CommWorld, Id: 0, Members: world},
		&tracepb.Communicator{Local: traceformat.CommSelf, Id: traceformat.SelfCommID(uint32(r)), Members: []uint32{uint32(r)}})
	rc.local[l.world] = traceformat.CommWorld
	for _, id := range l.order {
		mc := l.comms[id]
		if id == l.world {
			continue
		}
		if mc.self {
			rc.local[id] = traceformat.CommSelf
			continue
		}
		member := false
		for _, m := range mc.members {
			if m == uint32(r) {
				member = true
			}
		}
		if !member {
			continue
		}
		local := uint32(len(rc.defs))
		rc.local[id] = local
		parent, ok := rc.local[mc.parent]
		if !ok {
			parent = traceformat.CommWorld
		}
		rc.defs = append(rc.defs, &tracepb.Communicator{Local: local, Id: uint64(id) + 1, Members: mc.members, Parent: parent})
	}
	return rc
}

// mpiFunction is the MPI function a region stands for, or "" for a
// region that is not an MPI function (user code: computation).
func (d *defs) mpiFunction(id uint32) string {
	rg, ok := d.regions[id]
	if !ok {
		return ""
	}
	name := d.strings[rg.name]
	if rg.paradigm == paradigmMPI || strings.HasPrefix(name, "MPI_") {
		if strings.HasPrefix(name, "MPI_") {
			return name
		}
	}
	return ""
}

// isFlushRegion tells Score-P's buffer-flush region.
func (d *defs) isFlushRegion(id uint32) bool {
	rg, ok := d.regions[id]
	return ok && rg.paradigm == paradigmMeasurementSystem && d.strings[rg.name] == "TRACE BUFFER FLUSH"
}

// eventsOf is the number of events the definitions announce for a
// location (0 when unknown).
func (d *defs) eventsOf(loc uint64) uint64 {
	for _, l := range d.locations {
		if l.id == loc {
			return l.events
		}
	}
	return 0
}
