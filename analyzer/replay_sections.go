package analyzer

import (
	"github.com/dtpa/dtpa/intervals"
	"github.com/dtpa/dtpa/traceformat"
)

// sectionRun is the part of a completed sequential section execution that
// lies in one interval (intervals.Sections splits executions at interval
// boundaries).
type sectionRun struct {
	node  *rnode
	num   int64
	inst  int
	seqNs int64
}

// end closes the rank's program at global time at.
func (rp *replayer) end(at int64) {
	rp.running = false
	if rp.tr.Ended() {
		return
	}
	for _, r := range rp.secs.Finish(at, rp.mpiNs) {
		rp.sectionEnded(r)
	}
	rp.tr.Finish(at)
}

func (rp *replayer) pcontrol(e *traceformat.Event, entry, exit int64) {
	if e.Attr&traceformat.AttrPcontrol == 0 {
		return
	}
	defer rp.pcw.note(rp, len(rp.warns), e.Site)
	// Each interval gets the part of an open section that lies inside it:
	// the sections move with the interval boundaries (an interval starts
	// at the exit of MPI_Pcontrol(100) and ends at the entry of
	// MPI_Pcontrol(101)).
	switch e.PcLevel {
	case intervals.EnterInterval:
		rp.tr.Enter(e.PcArg, exit, e.Site)
		rp.secs.Move(exit, rp.mpiNs, rp.tr.Current())
	case intervals.LeaveInterval:
		rp.tr.Leave(e.PcArg, entry)
		rp.secs.Move(entry, rp.mpiNs, rp.tr.Current())
	case intervals.StartSection:
		rp.secs.Start(e.PcArg, exit, rp.mpiNs)
	case intervals.EndSection:
		if r, ok := rp.secs.End(e.PcArg, entry, rp.mpiNs); ok {
			rp.sectionEnded(r)
		}
	}
}

// maxSectionRuns bounds the section executions (their pieces, one per
// interval each lies in) a replay remembers one by one (for K per
// instance); past it, figures fall back to K per section number, so that
// memory does not grow with the trace. It is the default of
// limits.sectionRuns.
const maxSectionRuns = 1 << 14

type secAggKey struct {
	node *rnode
	num  int64
}

// sectionEnded records a completed section execution, piece by piece:
// its Insufficient Parallelism goes to the intervals it lay in once K is
// known (build.go).
func (rp *replayer) sectionEnded(r intervals.SectionRun[*rnode]) {
	if rp.secAgg == nil {
		rp.secAgg = map[secAggKey]int64{}
	}
	for _, p := range r.Pieces {
		rp.secAgg[secAggKey{p.Where, r.Number}] += p.SeqNs
	}
	if len(r.Pieces) == 0 {
		// Executed (K counts it) though all its time was in MPI.
		rp.secAgg[secAggKey{rp.tr.Current(), r.Number}] += 0
	}
	if len(rp.secRuns)+len(r.Pieces) <= rp.x.lim.sectionRuns && !rp.x.sectionOverflow.Load() {
		for _, p := range r.Pieces {
			rp.secRuns = append(rp.secRuns, sectionRun{node: p.Where, num: r.Number, inst: r.Instance, seqNs: p.SeqNs})
		}
		rp.x.sectionDone(sectionKey{num: r.Number, inst: r.Instance})
	} else {
		rp.x.sectionOverflow.Store(true)
	}
}
