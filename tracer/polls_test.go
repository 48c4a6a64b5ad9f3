package tracer_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
)

// TestPollsFolded checks the folding of unsuccessful tests and probes
// (dt_rec_end_poll) against testdata/c/polls.c, which counts and times its
// own calls: per polling loop, the trace's events must stand for exactly the
// calls the program made (Calls summed), with no more time inside MPI than
// the program measured around those calls, and a run of unsuccessful calls
// of one call site must be one event or, split by a periodic hand-over or a
// full buffer, a few. dtpa's report then counts every call the program
// made (SRC ExeCount).
func TestPollsFolded(t *testing.T) { checkPolls(t, ompi, oversub, 8) }

// TestPollsFoldedMPICH adds a ninth loop, of MPI_Parrived (MPI 4
// partitioned communication, which Open MPI 4.1 has only as MPIX_).
func TestPollsFoldedMPICH(t *testing.T) { checkPolls(t, "mpicc.mpich", []string{"-n", "4"}, 9) }

// checkPolls runs polls.c built with cc, which makes that many polling
// loops per even rank.
func checkPolls(t *testing.T, cc string, launch []string, loops int) {
	t.Helper()
	prog := build(t, "polls", cc)
	dir := t.TempDir()
	res := dtrun(t, dir, nil, append(launch[:len(launch):len(launch)], prog)...)
	if res.code != 0 {
		t.Fatalf("dtrun polls: exit %d\n%s", res.code, res.out)
	}
	trs := readTraces(t, dir, "polls", 4)
	checkComplete(t, trs)
	type loop struct {
		calls int64
		ns    float64
	}
	own := map[string]loop{} // "rank fn" → the program's own count and time
	for _, l := range strings.Split(res.out, "\n") {
		var r int
		var fn string
		var lp loop
		if n, _ := fmt.Sscanf(l, "rank %d %s calls %d ns %g", &r, &fn, &lp.calls, &lp.ns); n == 4 {
			own[strconv.Itoa(r)+" "+fn] = lp
		}
	}
	if len(own) != 2*loops {
		t.Fatalf("%d loops reported, want %d:\n%s", len(own), 2*loops, res.out)
	}
	for r := 0; r < 4; r += 2 {
		tr := trs[r]
		// Group the events by loop: tests by call site in order of first
		// use, probes by tag.
		type group struct {
			events, calls, maxCalls, folded int64
			dur                             uint64
		}
		groups := map[string]*group{}
		sites := map[string][]uint32{}
		for _, e := range tr.calls("MPI_Test", "MPI_Testany", "MPI_Testsome", "MPI_Testall", "MPI_Request_get_status", "MPI_Iprobe", "MPI_Parrived") {
			fn := tr.name(e)
			key := fn
			switch fn {
			case "MPI_Test":
				k := -1
				for i, s := range sites[fn] {
					if s == e.Site {
						k = i
					}
				}
				if k < 0 {
					sites[fn] = append(sites[fn], e.Site)
					k = len(sites[fn]) - 1
				}
				if k == 1 {
					key = "MPI_Test/broken"
				}
			case "MPI_Iprobe":
				if e.RecvTag != 2 {
					key = "MPI_Iprobe/alternating"
				}
			}
			g := groups[key]
			if g == nil {
				g = &group{}
				groups[key] = g
			}
			n := int64(1)
			if e.Attr&traceformat.AttrCalls != 0 {
				n = int64(e.Calls)
				g.folded++
				if n < 2 || !(e.Attr&traceformat.AttrFlag != 0 && !e.Flag) && fn != "MPI_Testsome" {
					t.Errorf("rank %d %s: folded event of %d calls, flag %v (attr %b)", r, key, n, e.Flag, e.Attr)
				}
			}
			g.events++
			g.calls += n
			g.maxCalls = max(g.maxCalls, n)
			g.dur += uint64(e.Exit - e.Entry)
		}
		for key, g := range groups {
			want, ok := own[strconv.Itoa(r)+" "+key]
			if !ok {
				t.Errorf("rank %d: %s in the trace, not in the program's output", r, key)
				continue
			}
			if g.calls != want.calls {
				t.Errorf("rank %d %s: the trace stands for %d calls (%d events), the program made %d", r, key, g.calls, g.events, want.calls)
			}
			// The wrapper's times are taken inside the program's own bracket
			// around each call; 0.1 % and 20 µs allow for the TSC
			// calibration against CLOCK_MONOTONIC_RAW.
			if float64(g.dur) > want.ns*1.001+20e3 {
				t.Errorf("rank %d %s: %d ns inside MPI in the trace, the program measured %.0f around the calls", r, key, g.dur, want.ns)
			}
			switch key {
			case "MPI_Iprobe/alternating":
				if g.folded != 0 {
					t.Errorf("rank %d %s: %d folded events, want none (the call site changes at every call)", r, key, g.folded)
				}
			case "MPI_Test/broken":
				if g.maxCalls > 3 {
					t.Errorf("rank %d %s: an event of %d calls, want at most 3 (another call every third test)", r, key, g.maxCalls)
				}
			default:
				// One run of unsuccessful calls, then the successful one(s):
				// two completions for the pairs of Testany and Testsome.
				if want.calls >= 4 && (g.folded == 0 || g.events > 6) {
					t.Errorf("rank %d %s: %d calls in %d events, %d of them folded", r, key, g.calls, g.events, g.folded)
				}
			}
		}
		if len(groups) != loops {
			t.Errorf("rank %d: %d polling loops in the trace, want %d", r, len(groups), loops)
		}
	}
	// The report: per rank and function, the calls of all its loops.
	out, err := exec.Command(filepath.Join(root, "bin", "dtpa"), "--json", "--dir", dir, "polls").Output()
	if err != nil {
		t.Fatalf("dtpa --json: %v", err)
	}
	var rep report.Report
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Intervals) == 0 {
		t.Fatalf("the JSON report: %v", err)
	}
	iv := rep.Intervals[0]
	counted := map[string]int64{} // "rank fn" → ExeCount summed over points
	for _, p := range iv.SRC {
		for _, rk := range p.Ranks {
			counted[strconv.Itoa(rk.Rank)+" "+p.Function] += rk.ExeCount
		}
	}
	// The profile views count the same calls: functions per rank, and
	// each rank's call_mix.
	perFunc, mix := map[string]int64{}, map[string]int64{}
	for _, f := range iv.Functions {
		for _, rk := range f.Ranks {
			perFunc[strconv.Itoa(rk.Rank)+" "+f.Function] = rk.Calls
		}
	}
	for _, rk := range iv.Ranks {
		for _, c := range rk.CallMix {
			mix[strconv.Itoa(rk.Rank)+" "+c.Function] = c.Calls
		}
	}
	made := map[string]int64{}
	for key, lp := range own {
		made[strings.SplitN(key, "/", 2)[0]] += lp.calls
	}
	for key, n := range made {
		if counted[key] != n || perFunc[key] != n || mix[key] != n {
			t.Errorf("rank and function %s: ExeCount %d, functions calls %d, call_mix calls %d in the report; the program made %d calls",
				key, counted[key], perFunc[key], mix[key], n)
		}
	}
}

// TestFortranPollsFolded checks the folding in the Fortran wrappers (their
// flag is a LOGICAL, the status may be the binding's MPI_STATUS_IGNORE):
// per even rank, the MPI_Test and MPI_Iprobe events stand for exactly the
// calls testdata/fortran/polls.f90 made, and runs were folded.
func TestFortranPollsFolded(t *testing.T) {
	for _, m := range fortranMPIs {
		t.Run(m.name, func(t *testing.T) {
			prog := buildFortran(t, "polls", m.fc)
			dir := t.TempDir()
			res := dtrunOK(t, dir, nil, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
			trs := readTraces(t, dir, "polls", 4)
			checkComplete(t, trs)
			made := map[string]int64{}
			for _, l := range strings.Split(res.out, "\n") {
				var r int
				var tests, probes int64
				if n, _ := fmt.Sscanf(strings.TrimSpace(l), "rank %d tests %d probes %d", &r, &tests, &probes); n == 3 {
					made[strconv.Itoa(r)+" MPI_Test"], made[strconv.Itoa(r)+" MPI_Iprobe"] = tests, probes
				}
			}
			if len(made) != 4 {
				t.Fatalf("%d loops reported, want 4:\n%s", len(made), res.out)
			}
			for r := 0; r < 4; r += 2 {
				for _, fn := range []string{"MPI_Test", "MPI_Iprobe"} {
					var calls, folded int64
					for _, e := range trs[r].calls(fn) {
						calls += int64(e.NumCalls())
						if e.Attr&traceformat.AttrCalls != 0 {
							folded++
						}
					}
					want := made[strconv.Itoa(r)+" "+fn]
					if calls != want || want >= 4 && folded == 0 {
						t.Errorf("rank %d %s: the trace stands for %d calls (%d folded events), the program made %d", r, fn, calls, folded, want)
					}
				}
			}
		})
	}
}

// TestPollRuns checks, event by event, how a run of unsuccessful polls
// ends (testdata/c/pollruns.c, rank 0, both MPIs): at a plain record, at
// a success of the same call site, at changed attributes and at another
// call site of the same function and arguments (nothing folded across
// either), and at the periodic hand-over (a run longer than the epoch is
// split there, every call still counted). Each run's events must be
// exactly those the program expects, with the calls it made and no more
// time inside MPI than it measured around them.
func TestPollRuns(t *testing.T) {
	for _, m := range []struct {
		name, cc string
		launch   []string
	}{{"openmpi", ompi, []string{"-np", "2"}}, {"mpich", "mpicc.mpich", []string{"-n", "2"}}} {
		t.Run(m.name, func(t *testing.T) {
			prog := build(t, "pollruns", m.cc)
			dir := t.TempDir()
			res := dtrun(t, dir, nil, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
			if res.code != 0 {
				t.Fatalf("dtrun pollruns: exit %d\n%s", res.code, res.out)
			}
			trs := readTraces(t, dir, "pollruns", 2)
			checkComplete(t, trs)
			type run struct {
				name, want string
				calls      int64
				ns         float64
			}
			var runs []run
			for _, l := range strings.Split(res.out, "\n") {
				var r run
				if n, _ := fmt.Sscanf(l, "run %s calls %d ns %g want %s", &r.name, &r.calls, &r.ns, &r.want); n == 4 {
					runs = append(runs, r)
				}
			}
			if len(runs) != 6 {
				t.Fatalf("%d runs reported, want 6:\n%s", len(runs), res.out)
			}
			// Rank 0's events from its first MPI_Test to its last poll,
			// cut into runs: each run starts with its first poll, the
			// records the program makes between runs (the self message's
			// MPI_Irecv, MPI_Isend and MPI_Wait) left out.
			tr := trs[0]
			var evs []traceformat.Event
			for _, e := range tr.events {
				switch tr.name(e) {
				case "MPI_Test", "MPI_Iprobe", "MPI_Barrier":
					evs = append(evs, e)
				}
			}
			// The last MPI_Barrier is on MPI_COMM_WORLD, after the runs.
			if len(evs) == 0 || tr.name(evs[len(evs)-1]) != "MPI_Barrier" {
				t.Fatalf("rank 0: no final MPI_Barrier")
			}
			evs = evs[:len(evs)-1]
			for _, r := range runs {
				var got []string
				var calls int64
				var dur uint64
				polls := r.calls
				for polls > 0 && len(evs) > 0 {
					e := evs[0]
					evs = evs[1:]
					if tr.name(e) == "MPI_Barrier" {
						got = append(got, "e")
						continue
					}
					n := int64(e.NumCalls())
					if e.Attr&traceformat.AttrCalls != 0 && (n < 2 || e.Flag) {
						t.Errorf("run %s: folded event of %d calls, flag %v", r.name, n, e.Flag)
					}
					got = append(got, strconv.FormatInt(n, 10))
					calls += n
					polls -= n
					dur += uint64(e.Exit - e.Entry)
				}
				if calls != r.calls {
					t.Errorf("run %s: the trace stands for %d calls, the program made %d", r.name, calls, r.calls)
				}
				if float64(dur) > r.ns*1.001+20e3 {
					t.Errorf("run %s: %d ns inside MPI in the trace, the program measured %.0f around the calls", r.name, dur, r.ns)
				}
				switch r.want {
				case "?": // the self message's send was not complete at the sixth test
					t.Logf("run %s: events %v (the success did not come at the sixth test)", r.name, got)
				case "split":
					// Folded runs, the call that saw the epoch move alone
					// (its record is moved to the fresh buffer): n, 1, n, …
					folded := 0
					for _, g := range got {
						if g != "1" {
							folded++
						}
					}
					if len(got) < 3 || folded < 2 {
						t.Errorf("run %s: events %v, want folded runs split by the periodic hand-over", r.name, got)
					}
				default:
					if w := strings.Join(got, ","); w != r.want {
						t.Errorf("run %s: events %s, want %s", r.name, w, r.want)
					}
				}
			}
			if len(evs) != 0 {
				t.Errorf("rank 0: %d events left after the runs", len(evs))
			}
		})
	}
}
