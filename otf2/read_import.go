package otf2

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// ImportStats summarizes an import.
type ImportStats struct {
	Archive string // the anchor file read
	Version string // OTF2 version that wrote the archive
	Creator string // e.g. "Score-P 8.4"
	Ranks   int
	// Events is the number of OTF2 events read, over all ranks.
	Events uint64
	// Calls counts the MPI calls written, by function name.
	Calls map[string]uint64
	// Files are the trace files written, by world rank.
	Files []string
}

// Anchor returns the anchor file of an archive given as the anchor itself
// (…/traces.otf2) or the experiment directory holding it.
func Anchor(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("OTF2 archive: %w", err)
	}
	if !st.IsDir() {
		return path, nil
	}
	matches, _ := filepath.Glob(filepath.Join(path, "*.otf2"))
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("%s holds no OTF2 anchor file (*.otf2)", path)
	case 1:
		return matches[0], nil
	}
	for _, m := range matches {
		if filepath.Base(m) == "traces.otf2" {
			return m, nil
		}
	}
	return "", fmt.Errorf("%s holds several OTF2 anchor files (%s); name one", path, strings.Join(matches, ", "))
}

// IsArchive reports whether path names an OTF2 archive: an anchor file
// (*.otf2) or a directory holding one.
func IsArchive(path string) bool {
	if strings.HasSuffix(path, ".otf2") {
		return true
	}
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(path, "*.otf2"))
	return len(m) > 0
}

// Import converts the OTF2 archive (its anchor file or the experiment
// directory holding it) into our trace files <outDir>/<app>.<rank>.trc,
// one per MPI rank, which the analyzer then reads like the tracer's.
// What the archive lacks or the format cannot carry goes to warn, one
// sentence each. A location whose events are damaged is converted up to
// the damage and its file left without a footer, as the tracer leaves the
// file of a process that died; the other ranks are converted whole. The
// files are written without zstd compression: they are made to be
// analysed (dtpa removes its temporary conversion afterwards), and the
// compression would cost more than the whole conversion otherwise (the
// shape-table coding alone gives about 8 bytes per call).
func Import(ctx context.Context, archivePath, outDir, app string, warn func(string)) (ImportStats, error) {
	if warn == nil {
		warn = func(string) {}
	}
	var st ImportStats
	anchor, err := Anchor(archivePath)
	if err != nil {
		return st, err
	}
	st.Archive = anchor
	base := strings.TrimSuffix(anchor, ".otf2")
	defFile := base + ".def"
	if _, err := os.Stat(defFile); err != nil {
		return st, fmt.Errorf("%s: the archive's global definitions file is missing or unreadable: %w", anchor, err)
	}
	if err := checkAnchor(ctx, anchor); err != nil {
		return st, err
	}
	libMu.Lock()
	defer libMu.Unlock()
	// libotf2's error messages are kept per thread (read_cb.c).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, err := openArchive(anchor)
	if err != nil {
		return st, err
	}
	defer a.close()
	st.Version, st.Creator = a.version(), a.creator()
	evtChunk, defChunk, plain := a.chunkSizes()
	if plain {
		// A file checkFrames cannot read is left to libotf2 to report.
		if fr, err := checkFrames(defFile, defChunk, false); err == nil && !fr.Whole {
			return st, fmt.Errorf("%s: the global definitions are damaged at %v", defFile, fr)
		}
	}
	d, err := a.readDefs(defFile)
	if err != nil {
		return st, err
	}
	l, err := d.mpiLayout(defFile)
	if err != nil {
		return st, err
	}
	setAttributes(d)
	if !d.haveClock {
		warn(fmt.Sprintf("%s has no clock properties; timestamps are taken as nanoseconds", defFile))
	}
	sel := slices.Clone(l.ranks)
	for r := range l.ranks {
		sel = append(sel, l.extraThreads[r]...)
	}
	if err := a.selectLocations(sel); err != nil {
		return st, err
	}
	st.Ranks = len(l.ranks)
	st.Calls = map[string]uint64{}
	// Local definition files hold the id mappings and clock offsets of
	// their location; OTF2 makes them optional. When the archive has them
	// for some ranks, a rank without one cannot be read faithfully.
	hasLocal := make([]bool, len(l.ranks))
	anyLocal := false
	for r, loc := range l.ranks {
		if _, err := os.Stat(filepath.Join(base, strconv.FormatUint(loc, 10)+".def")); err == nil {
			hasLocal[r], anyLocal = true, true
		}
	}
	// The queue of calls, sized for the largest location (calls are at
	// most half its events), within reason.
	var most uint64
	for _, loc := range l.ranks {
		most = max(most, d.eventsOf(loc))
	}
	pend := make([]traceformat.Event, 0, min(most/2+flushEvery, 1<<16))
	runID := sha256.Sum256([]byte(fmt.Sprintf("otf2:%s:%d", anchor, d.globalOffset)))
	for r, loc := range l.ranks {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		path := filepath.Join(outDir, fmt.Sprintf("%s.%d.trc", app, r))
		evtFile := filepath.Join(base, strconv.FormatUint(loc, 10)+".evt")
		if anyLocal && !hasLocal[r] {
			warn(fmt.Sprintf("%s is missing: rank %d's id mappings and clock offsets are unknown, so its events are not imported", filepath.Join(base, strconv.FormatUint(loc, 10)+".def"), r))
			continue
		}
		in := locIn{loc: loc, evtFile: evtFile}
		if plain && hasLocal[r] {
			localDef := filepath.Join(base, strconv.FormatUint(loc, 10)+".def")
			if fr, err := checkFrames(localDef, defChunk, false); err == nil && !fr.Whole {
				warn(fmt.Sprintf("%s is damaged at %v: rank %d's id mappings and clock offsets cannot be read whole, so its events are not imported", localDef, fr, r))
				continue
			}
		}
		in.check(plain, evtChunk)
		locs := []locIn{in}
		for i, loc := range l.extraThreads[r] {
			t := locIn{loc: loc, evtFile: filepath.Join(base, strconv.FormatUint(loc, 10)+".evt")}
			localDef := filepath.Join(base, strconv.FormatUint(loc, 10)+".def")
			if _, err := os.Stat(localDef); anyLocal && err != nil {
				warn(fmt.Sprintf("%s is missing: the id mappings and clock offsets of rank %d's thread %d are unknown, so its events are not imported", localDef, r, i+1))
				continue
			}
			if plain && anyLocal {
				if fr, err := checkFrames(localDef, defChunk, false); err == nil && !fr.Whole {
					warn(fmt.Sprintf("%s is damaged at %v: the id mappings and clock offsets of rank %d's thread %d cannot be read whole, so its events are not imported", localDef, fr, r, i+1))
					continue
				}
			}
			t.check(plain, evtChunk)
			locs = append(locs, t)
		}
		n, err := importRank(a, d, l, r, locs, path, runID[:16], st.Calls, &pend, warn)
		st.Events += n
		if err != nil {
			return st, err
		}
		st.Files = append(st.Files, path)
	}
	return st, nil
}

// locIn is a location to import: the file of its events, and how many of
// them can be read (all, or those before the damage, which damage says).
type locIn struct {
	loc     uint64
	evtFile string
	limit   uint64
	damage  string
}

// check finds the damage in the location's event file, when the archive
// is written without compression (plain) in chunks of chunk bytes.
func (in *locIn) check(plain bool, chunk uint64) {
	in.limit = ^uint64(0)
	if !plain {
		return
	}
	if fr, err := checkFrames(in.evtFile, chunk, true); err == nil && !fr.Whole {
		in.limit, in.damage = fr.Records, fr.String()
	}
}

// threadRecords is how many events of a thread's location are read at a
// time when a rank has several: the threads' calls then reach the trace
// in about their time order, as the tracer writes them, which the
// analysis's merge of the threads expects (it reads a window of calls
// ahead).
const threadRecords = 1 << 11

// importRank writes rank r's trace file from locs: its master thread's
// location, then its other threads' (threads 1, 2 … in that order), read
// in turns, each at most its limit of events.
func importRank(a *archive, d *defs, l *layout, r int, locs []locIn, path string, runID []byte,
	calls map[string]uint64, pend *[]traceformat.Event, warn func(string)) (uint64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	realtime := int64(0)
	if d.realtime != ^uint64(0) && d.realtime < 1<<63 {
		realtime = int64(d.realtime)
	}
	hdr := &tracepb.Header{
		Rank: uint32(r), WorldSize: uint32(len(l.ranks)), Hostname: l.hosts[r], RunId: runID,
		Program: filepath.Base(filepath.Dir(a.anchor)), StartUnixNs: realtime,
		Clock:         &tracepb.Clock{Source: tracepb.Clock_SOURCE_UNSPECIFIED},
		TracerVersion: "otf2 import of " + strings.TrimSpace(a.creator()+" (OTF2 "+a.version()+")"),
		Params: &tracepb.TracerParams{Other: map[string]string{
			"otf2.archive":          a.anchor,
			"otf2.timer_resolution": strconv.FormatUint(d.resolution, 10),
			"otf2.global_offset":    strconv.FormatUint(d.globalOffset, 10),
			"otf2.location":         strconv.FormatUint(locs[0].loc, 10),
		}},
	}
	if len(locs) > 1 {
		// The archive does not say what MPI_Init_thread provided; its
		// threads are analysed as MPI_THREAD_MULTIPLE's, whatever they
		// called.
		hdr.ThreadLevel = threadLevelMultiple
		var ts []string
		for _, in := range locs[1:] {
			ts = append(ts, strconv.FormatUint(in.loc, 10))
		}
		hdr.Params.Other["otf2.thread_locations"] = strings.Join(ts, ",")
	}
	w, err := traceformat.NewWriter(f, hdr, traceformat.WriterOptions{Raw: true})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	rd := newRankDefs()
	c := newThreadConverter(rd, d, l, r, 0, w, *pend)
	defer func() { *pend = c.pend }()
	if err := w.WriteDefinitions(&tracepb.Definitions{Communicators: c.rc.defs}); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if r != 0 {
		// libotf2 has applied the archive's clock offsets already (linear
		// interpolation between each location's ClockOffset definitions):
		// every rank's times are on the global clock.
		if err := w.WriteClockSync(&tracepb.ClockSync{Phase: tracepb.ClockSync_INIT, Reference: 0, SameClock: true}); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	// One reader and converter per location; the master thread's first.
	type thread struct {
		in   locIn
		lr   *locReader
		c    *converter
		rerr error
	}
	var ts []*thread
	for i, in := range locs {
		t := &thread{in: in, c: c}
		if i > 0 {
			t.c = newThreadConverter(rd, d, l, r, uint32(i), w, nil)
		}
		t.lr, t.rerr = a.openLocation(in.loc, in.limit)
		if t.rerr == nil {
			defer t.lr.close()
		}
		ts = append(ts, t)
	}
	chunk := uint64(recordsPerRead)
	if len(ts) > 1 {
		chunk = threadRecords
	}
	for {
		// The thread whose last event read is the earliest.
		var next *thread
		for _, t := range ts {
			if t.rerr == nil && !t.lr.done && (next == nil || t.c.lastTime < next.c.lastTime) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.rerr = next.lr.read(chunk, next.c.feed)
	}
	var events uint64
	for i, t := range ts {
		if t.lr != nil {
			events += t.lr.events
			if t.rerr == nil && t.in.damage != "" && t.lr.events >= t.in.limit {
				t.rerr = errors.New("the file is damaged at " + t.in.damage)
			}
			if want := d.eventsOf(t.in.loc); t.rerr == nil && want > 0 && t.lr.events < want {
				// libotf2 reads a file cut at a chunk boundary without
				// complaint; the global definitions say how many events
				// there were.
				t.rerr = fmt.Errorf("the file ends after %d of the %d events the definitions announce", t.lr.events, want)
			}
			if !t.lr.localDefs && t.rerr == nil {
				warn(fmt.Sprintf("%s: no local definitions for %s: its clock offsets and id mappings are not applied", t.in.evtFile, who(r, i)))
			}
			if t.lr.unknown > 0 {
				warn(fmt.Sprintf("%s: %d events of record types this libotf2 does not know were skipped", t.in.evtFile, t.lr.unknown))
			}
		}
		if ferr := t.c.flush(true); ferr != nil {
			return events, fmt.Errorf("%s: %w", path, ferr)
		}
		for _, msg := range t.c.warnings(t.in.evtFile) {
			warn(msg)
		}
		if i == 0 {
			// (The functions, with their counts, are the rank's: its
			// threads share them.)
			for name, n := range t.c.calls() {
				calls[name] += n
			}
		}
		if t.rerr != nil && i > 0 {
			if errors.Is(t.rerr, errOpen) {
				warn(fmt.Sprintf("%s: %s cannot be read: %v; it has no calls", t.in.evtFile, who(r, i), t.rerr))
			} else {
				warn(fmt.Sprintf("%s: %s's events are damaged after %d events (%.6f s): %v; its calls end there", t.in.evtFile, who(r, i), t.lr.events, float64(t.c.lastTime)/1e9, t.rerr))
			}
		}
	}
	if rerr := ts[0].rerr; rerr != nil {
		if errors.Is(rerr, errOpen) {
			warn(fmt.Sprintf("%s: rank %d cannot be read: %v; its trace is empty", locs[0].evtFile, r, rerr))
		} else {
			warn(fmt.Sprintf("%s: rank %d's events are damaged after %d events (%.6f s): %v; its trace ends there", locs[0].evtFile, r, ts[0].lr.events, float64(c.lastTime)/1e9, rerr))
		}
		return events, nil // no footer: the analyzer treats the file as cut short
	}
	stop := tracepb.Footer_FINALIZE
	if !c.finalized && !c.programEnd {
		stop = tracepb.Footer_EXIT
	}
	end := c.lastTime
	var unf []*tracepb.UnfinishedCall
	var how uint8
	var leave int64
	for _, t := range ts {
		end = max(end, t.c.lastTime)
		if len(t.c.unf) > 0 && len(unf) == 0 {
			how, leave = t.c.unfHow, t.c.unfLeave
		}
		unf = append(unf, t.c.unf...)
	}
	// A call its location never left, the location read to its end (an
	// archive of a run that was killed, whose writer did not close the
	// region): a call in progress when the trace ended, whose end nothing
	// tells.
	var open []*tracepb.UnfinishedCall
	for i, t := range ts {
		if t.rerr != nil || !t.c.inCall || t.c.curFn == nil {
			continue
		}
		open = append(open, &tracepb.UnfinishedCall{Thread: t.c.thread, Function: t.c.curFn.id, Name: t.c.curFn.name, EntryLocalNs: t.c.cur.Entry})
		warn(fmt.Sprintf("%s: %s's %s, entered at %.6f s, was never left (the location ends inside it): it is taken as in progress when the process ended", t.in.evtFile, who(r, i), t.c.curFn.name, float64(t.c.cur.Entry)/1e9))
	}
	ft := &tracepb.Footer{StopReason: stop, EndLocalNs: end}
	if len(open) > 0 && len(unf) == 0 && !c.finalized {
		ft.Unfinished, ft.EndLocalNs = open, 0
	}
	if len(unf) > 0 && !c.finalized {
		// Calls in progress at the end (dtpa::unfinished, which only
		// dtpa's export writes): the process ended on a signal, as the
		// tracer's footer said, at their Leave — or when the job was
		// interrupted, or at a time nothing tells.
		ft.StopReason, ft.Unfinished = tracepb.Footer_SIGNAL, unf
		switch how {
		case unfAtLeast:
			ft.EndLocalNs, ft.InterruptedLocalNs = 0, leave
		case unfEndUnknown:
			ft.EndLocalNs = 0
		}
	}
	if err := w.Close(ft); err != nil {
		return events, fmt.Errorf("%s: %w", path, err)
	}
	return events, f.Close()
}

// who names rank r's thread i in a warning: the rank for its master
// thread (0).
func who(r, i int) string {
	if i == 0 {
		return "rank " + strconv.Itoa(r)
	}
	return fmt.Sprintf("rank %d's thread %d", r, i)
}

// threadLevelMultiple is MPI_THREAD_MULTIPLE in the trace header.
const threadLevelMultiple = 3
