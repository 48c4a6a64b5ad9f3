package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/tracer/records"
)

// initMarkGlob matches the notes the preload stub leaves in the spill
// directory while the MPI library's MPI_Init runs (init.<pid>,
// tracer/rt/dt_initmark.h): "<entry ns> <boot id> <rank>", locked while
// the process lives. A note whose process is gone is one that ended
// inside MPI_Init: a job hung there, before any trace began.
const initMarkGlob = "init.*"

// initMarks reads the notes in dir of the processes that ended inside
// MPI_Init, removes them, and says where those processes were, as the
// lines of calls in progress dtrun prints: "MPI_Init: ranks 0-2, for at
// least 3.998 s (until the job was interrupted)". bound gives, for a
// note, when the job's interrupt found its process alive (0: it did not),
// on this node's clock: from the note's entry to it, the call ran at
// least. A process of another boot of the node (or another node), whose
// clock the entry is not on, gets no time.
func initMarks(dir string, bound func(string) int64) []string {
	files, _ := filepath.Glob(filepath.Join(dir, initMarkGlob))
	boot := records.BootID()
	var calls []report.UnfinishedCall
	var pids []int
	for _, f := range files {
		if records.Held(f) {
			continue // still inside it: left alone
		}
		b, err := os.ReadFile(f)
		os.Remove(f)
		fs := strings.Fields(string(b))
		if err != nil || len(fs) != 3 {
			continue
		}
		entry, err1 := strconv.ParseInt(fs[0], 10, 64)
		rank, err2 := strconv.Atoi(fs[2])
		pid, err3 := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "init."))
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if rank < 0 {
			pids = append(pids, pid)
			continue
		}
		c := report.UnfinishedCall{Rank: rank, Function: "MPI_Init"}
		if at := bound(f); at > 0 && at >= entry && fs[1] == boot && boot != "" {
			s := float64(at-entry) / 1e9
			c.Seconds, c.AtLeast = &s, true
		}
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b report.UnfinishedCall) int { return a.Rank - b.Rank })
	lines := report.UnfinishedLines(calls)
	if len(pids) > 0 {
		slices.Sort(pids)
		what := "processes"
		if len(pids) == 1 {
			what = "process"
		}
		lines = append(lines, fmt.Sprintf("MPI_Init: %s %s (ranks unknown)", what, report.Ranges(pids)))
	}
	return lines
}
