package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
)

// traceDir is where the ranks write their traces: their working
// directory, which the launcher's -wdir (Open MPI: --wdir, -wd; MPICH:
// -wdir; srun: -D, --chdir) sets, else dtrun's. opts are the launcher's
// options that take a value (launchStyle.valueOpts).
func traceDir(args []string, opts map[string]int) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break // the program: the rest are its arguments
		}
		switch a {
		case "-wdir", "--wdir", "-wd", "--wd", "-D", "--chdir":
			if i+1 < len(args) {
				return args[i+1]
			}
		}
		for _, p := range []string{"--wdir=", "-wdir=", "--wd=", "-wd=", "--chdir=", "-D="} {
			if v, ok := strings.CutPrefix(a, p); ok {
				return v
			}
		}
		if !strings.Contains(a, "=") {
			i += opts[a]
		}
	}
	return "."
}

// summarize tells where the job's traces are (those in its directory that
// it wrote), how many and how large, warns of every rank that stopped
// tracing early, names the traces of the same program that an earlier
// run left there (dtpa leaves them out), and says how to analyse them.
//
// A trace without its end is that of a rank killed without warning: its
// unwritten records were in the spill directory on its node; those of
// dtrun's node are already recovered, so the rest are on other nodes,
// where `dtrun --recover` adds them (rec says how).
func summarize(w io.Writer, job *jobFiles, rec remoteRecovery, inInit []string) {
	dir := job.dir
	sets := analyzer.RunTraces(dir, job.keep)
	// Processes that ended inside the MPI library's MPI_Init (initMarks)
	// have no trace: where they were closes the summary.
	defer func() {
		for _, l := range inInit {
			fmt.Fprintf(w, "dtrun: in progress when the processes ended: %s\n", l)
		}
	}()
	// Ranks that outlived the launcher (outlivedWait) still write theirs.
	held := job.running
	defer func() {
		if len(held) > 0 {
			fmt.Fprintf(w, "dtrun: %s in %s %s still written by the job's processes, which outlived the launcher: analyse once they end\n",
				someNames(held), absDir(dir), isAre(len(held)))
		}
	}()
	if len(sets) == 0 && len(inInit) > 0 {
		fmt.Fprintf(w, "dtrun: no traces were written in %s: the processes ended inside MPI_Init, before their traces began\n", absDir(dir))
		return
	}
	if len(sets) == 0 {
		if len(held) == 0 {
			fmt.Fprintf(w, "dtrun: no traces were written in %s (did the program reach MPI_Init?)\n", absDir(dir))
		}
		return
	}
	for _, s := range sets {
		of := s.Task
		if len(s.Tasks) > 1 {
			of = strings.Join(s.Tasks, " and ") + " (one MPMD run)"
		}
		fmt.Fprintf(w, "dtrun: %d %s of %s in %s, %s in all; analyse with: dtpa %s\n",
			s.Files, plural(s.Files, "trace"), of, absDir(dir), size(s.Bytes), dtpaArg(dir, s.Task))
		if len(s.Missing) > 0 {
			// As when the job ran from a directory of each node's own
			// (/tmp, /dev/shm) rather than one they share.
			fmt.Fprintf(w, "dtrun: warning: %s of %d: no trace in %s: they never reached MPI_Init, or ran on other nodes, which wrote theirs in their own %s (run from a directory the nodes share, or gather the traces here before dtpa)\n",
				report.RanksOf(s.Missing), s.World, absDir(dir), absDir(dir))
		}
		if old := job.others(append([]string{s.Task}, s.Tasks...)); len(old) > 0 {
			fmt.Fprintf(w, "dtrun: %s in %s %s an earlier run's, which dtpa leaves out\n", strings.Join(old, ", "), absDir(dir), isAre(len(old)))
		}
		var cut []analyzer.StoppedRank
		var stopped []string
		var unfinished []report.UnfinishedCall
		for _, st := range s.Stopped {
			unfinished = append(unfinished, st.Unfinished...)
			if st.Empty {
				fmt.Fprintf(w, "dtrun: warning: rank %d %s; dtpa leaves it out\n", st.Rank, st.Why)
				continue
			}
			stopped = append(stopped, fmt.Sprintf("Rank %d: %s; its trace lacks the rest of the run", st.Rank, st.Why))
			if st.Cut {
				cut = append(cut, st)
			}
		}
		// Ranks that stopped alike (the launcher ending all but the one
		// that crashed) make one line.
		for _, l := range report.GroupWarnings(stopped) {
			fmt.Fprintf(w, "dtrun: warning: %s\n", l)
		}
		// Which ranks crashed (dtpa, which symbolizes, says where), during
		// the run or after their traces were complete.
		for _, st := range s.Stopped {
			if st.Crash != nil {
				fmt.Fprintf(w, "dtrun: %s; dtpa %s says where\n", st.Crash.Lines()[0], dtpaArg(dir, s.Task))
			}
		}
		for _, c := range s.Late {
			fmt.Fprintf(w, "dtrun: %s; its trace is complete; dtpa %s says where\n", c.Lines()[0], dtpaArg(dir, s.Task))
		}
		// Where a job that hung was waiting when it was ended.
		for _, l := range report.UnfinishedLines(unfinished) {
			fmt.Fprintf(w, "dtrun: in progress when the processes ended: %s\n", l)
		}
		rec.advise(w, cut)
	}
}

// remoteRecovery tells how to recover the last records of ranks killed on
// other nodes: they are in the job's spill directory there (the same path
// on every node), which `dtrun --recover` run on that node adds to their
// traces.
type remoteRecovery struct {
	spill string // "" when the job had none
	self  string // dtrun's node, whose ranks' records it recovered itself
	// on is the launcher's command that runs `dtrun --recover spill` as
	// one task on each of hosts (nil: none to give).
	on func(hosts []string) string
}

// maxNamed bounds the nodes whose ranks advise lists one by one.
const maxNamed = 8

// advise says which of the cut ranks left their last records on other
// nodes, by the nodes' names, which the traces' headers give, and the
// launcher's command that recovers them there: one line, however many
// nodes (a job that lost ranks on 500 nodes gets one command for all).
func (rec remoteRecovery) advise(w io.Writer, cut []analyzer.StoppedRank) {
	if rec.spill == "" {
		return
	}
	byHost := map[string][]int{}
	var elsewhere, unknown []int // ranks of named nodes, of unknown ones
	var names []string
	for _, st := range cut {
		switch {
		case sameHost(st.Host, rec.self):
		case st.Host == "":
			unknown = append(unknown, st.Rank)
		default:
			if _, ok := byHost[st.Host]; !ok {
				names = append(names, st.Host)
			}
			byHost[st.Host] = append(byHost[st.Host], st.Rank)
			elsewhere = append(elsewhere, st.Rank)
		}
	}
	cmd := "dtrun --recover " + rec.spill
	if len(unknown) > 0 {
		who, their, traces := rankWords(unknown)
		fmt.Fprintf(w, "dtrun: %s, killed on another node, left %s last records there: run `%s` on that node to add them to %s %s\n", who, their, cmd, their, traces)
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	slices.Sort(elsewhere)
	who, their, traces := rankWords(elsewhere)
	where, on := names[0], "on "+names[0]
	if len(names) > 1 {
		var each []string
		for i, h := range names {
			if i == maxNamed {
				each = append(each, fmt.Sprintf("and %d more", len(names)-maxNamed))
				break
			}
			each = append(each, h+": "+report.Ranges(byHost[h]))
		}
		where, on = fmt.Sprintf("%d other nodes (%s)", len(names), strings.Join(each, "; ")), "on each"
	}
	eg := ""
	if rec.on != nil {
		eg = fmt.Sprintf(", e.g. `%s`", rec.on(names))
	}
	fmt.Fprintf(w, "dtrun: %s, killed on %s, left %s last records there: run `%s` %s to add them to %s %s%s\n", who, where, their, cmd, on, their, traces, eg)
}

// rankWords names ranks (report.RanksOf), and their traces, in the
// singular or plural.
func rankWords(ranks []int) (who, their, traces string) {
	if len(ranks) == 1 {
		return report.RanksOf(ranks), "its", "trace"
	}
	return report.RanksOf(ranks), "their", "traces"
}

// sameHost tells whether host names a and b are one node's, one of them
// maybe with its domain.
func sameHost(a, b string) bool {
	a, _, _ = strings.Cut(a, ".")
	b, _, _ = strings.Cut(b, ".")
	return a != "" && a == b
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func plural(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

// dtpaArg is how dtpa is told where the traces are, from dtrun's
// directory.
func dtpaArg(dir, task string) string {
	if dir == "." || dir == "" {
		return task
	}
	return filepath.Join(dir, task)
}

func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// size writes a byte count with a binary prefix: 950 B, 12.3 KiB, 4.56 MiB.
func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
