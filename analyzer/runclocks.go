package analyzer

import (
	"fmt"
	"runtime"

	"github.com/dtpa/dtpa/analyzer/clocks"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// RunClocks are the trace files of one run and each rank's map from local
// to global time, as the analysis aligns them: what a converter to another
// format (package otf2's writer) needs to write the run on the global
// clock without replaying it. Finding them is the analysis's first pass
// (Analyze): the same discovery, refusal of mixed runs and clock model.
type RunClocks struct {
	Size  int
	Ranks []RankTrace // by world rank; Path "" for a missing rank
	// Warnings about unreadable or missing files and the clock samples,
	// one sentence each, as Analyze words them.
	Warnings []string
	copies   *copies
}

// Close removes the compacted copies of deferred traces that FindRun
// made where it could not compact them in place (a read-only directory):
// the Paths of those ranks are not to be read after it.
func (rt *RunClocks) Close() { rt.copies.release() }

// RankTrace is one rank's trace file.
type RankTrace struct {
	Path   string
	Header *tracepb.Header
	// Clock maps the file's local times to the global clock (rank 0's);
	// not safe for concurrent use (Clone it per goroutine).
	Clock *clocks.Map
}

// FindRun discovers the traces of app in dir and aligns their clocks.
func FindRun(dir, app string) (_ *RunClocks, err error) {
	paths, err := discover(dir, app)
	if err != nil {
		return nil, err
	}
	rt := &RunClocks{copies: &copies{}}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	var files []*rankFile
	for _, p := range paths {
		f, note, err := scanCompacting(p, rankOf(p, app), rt.copies)
		if note != "" {
			rt.Warnings = append(rt.Warnings, note)
		}
		if err != nil {
			if isVersionError(err) {
				return nil, err
			}
			rt.Warnings = append(rt.Warnings, leftOut(p, rankOf(p, app), err))
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no readable traces of %q in %s", app, dirName(dir))
	}
	files, size, err := checkRuns(dir, app, files, runtime.GOMAXPROCS(0), func(w string) { rt.Warnings = append(rt.Warnings, w) })
	if err != nil {
		return nil, err
	}
	rt.Size = size
	rt.Ranks = make([]RankTrace, size)
	present := make([]bool, size)
	syncs := make([][]*tracepb.ClockSync, size)
	clks := make([]*tracepb.Clock, size)
	files = withCompanions(dir, app, files, size, runtime.GOMAXPROCS(0))
	for _, f := range files {
		r := int(f.hdr.Rank)
		if present[r] {
			rt.Warnings = append(rt.Warnings, fmt.Sprintf("%s and %s both hold rank %d; the second is left out.", rt.Ranks[r].Path, f.path, r))
			continue
		}
		present[r], syncs[r] = true, f.syncs
		if f.hdr != nil {
			clks[r] = f.hdr.Clock
		}
		rt.Ranks[r] = RankTrace{Path: f.path, Header: f.hdr}
		if f.err != nil {
			rt.Warnings = append(rt.Warnings, damage(r, f.path, f.err))
		}
	}
	if m := missingRanks(present); m != "" {
		rt.Warnings = append(rt.Warnings, fmt.Sprintf("The run had %d processes but traces of rank(s) %s are missing.", size, m))
	}
	model := clocks.Build(syncs, clks, present)
	rt.Warnings = append(rt.Warnings, model.Warnings...)
	for r := range rt.Ranks {
		rt.Ranks[r].Clock = model.Maps[r]
	}
	return rt, nil
}
