package otf2

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	for r, extra := range l.extraThreads {
		warn(fmt.Sprintf("%s: rank %d has %d more threads (locations %v); only its master thread is imported", anchor, r, len(extra), extra))
	}
	if err := a.selectLocations(l.ranks); err != nil {
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
		limit, damage := ^uint64(0), ""
		if plain {
			localDef := filepath.Join(base, strconv.FormatUint(loc, 10)+".def")
			if hasLocal[r] {
				if fr, err := checkFrames(localDef, defChunk, false); err == nil && !fr.Whole {
					warn(fmt.Sprintf("%s is damaged at %v: rank %d's id mappings and clock offsets cannot be read whole, so its events are not imported", localDef, fr, r))
					continue
				}
			}
			if fr, err := checkFrames(evtFile, evtChunk, true); err == nil && !fr.Whole {
				limit, damage = fr.Records, fr.String()
			}
		}
		n, err := importRank(a, d, l, r, loc, path, evtFile, limit, damage, runID[:16], st.Calls, &pend, warn)
		st.Events += n
		if err != nil {
			return st, err
		}
		st.Files = append(st.Files, path)
	}
	return st, nil
}

// importRank writes rank r's trace file from location loc: its first
// limit events, when its file is damaged after them (where damage says).
func importRank(a *archive, d *defs, l *layout, r int, loc uint64, path, evtFile string, limit uint64, damage string, runID []byte,
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
			"otf2.location":         strconv.FormatUint(loc, 10),
		}},
	}
	w, err := traceformat.NewWriter(f, hdr, traceformat.WriterOptions{Raw: true})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	c := newConverter(d, l, r, w, *pend)
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
	events, localDefs, unknown, rerr := a.readLocation(loc, limit, c.feed)
	if rerr == nil && damage != "" && events >= limit {
		rerr = errors.New("the file is damaged at " + damage)
	}
	if want := d.eventsOf(loc); rerr == nil && want > 0 && events < want {
		// libotf2 reads a file cut at a chunk boundary without complaint;
		// the global definitions say how many events there were.
		rerr = fmt.Errorf("the file ends after %d of the %d events the definitions announce", events, want)
	}
	if !localDefs && rerr == nil {
		warn(fmt.Sprintf("%s: no local definitions for rank %d: its clock offsets and id mappings are not applied", evtFile, r))
	}
	if unknown > 0 {
		warn(fmt.Sprintf("%s: %d events of record types this libotf2 does not know were skipped", evtFile, unknown))
	}
	if ferr := c.flush(true); ferr != nil {
		return events, fmt.Errorf("%s: %w", path, ferr)
	}
	for _, msg := range c.warnings(evtFile) {
		warn(msg)
	}
	for name, n := range c.calls() {
		calls[name] += n
	}
	if rerr != nil {
		if errors.Is(rerr, errOpen) {
			warn(fmt.Sprintf("%s: rank %d cannot be read: %v; its trace is empty", evtFile, r, rerr))
		} else {
			warn(fmt.Sprintf("%s: rank %d's events are damaged after %d events (%.6f s): %v; its trace ends there", evtFile, r, events, float64(c.lastTime)/1e9, rerr))
		}
		return events, nil // no footer: the analyzer treats the file as cut short
	}
	stop := tracepb.Footer_FINALIZE
	if !c.finalized && !c.programEnd {
		stop = tracepb.Footer_EXIT
	}
	if err := w.Close(&tracepb.Footer{StopReason: stop, EndLocalNs: c.lastTime}); err != nil {
		return events, fmt.Errorf("%s: %w", path, err)
	}
	return events, f.Close()
}
