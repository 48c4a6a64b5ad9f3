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

// TestQueriesFolded checks the folding of hot loops of queries and of
// tests that complete nothing (dt_rec_end_query, dt_rec_end_poll) against
// testdata/c/queries.c, which counts and times its own calls, under both
// MPIs. Per loop of each rank, the trace's events must stand for exactly
// the calls the program made, with no more time inside MPI than the
// program measured around them; runs of MPI_Comm_rank, MPI_Wtime and of
// MPI_Test on a null request must be folded (few events), each folded
// query run with no inner gap above DT_FOLD_GAP_NS (1 µs), and the loops
// whose consecutive calls differ (the communicator) or are 20 µs apart
// must not. The time between the calls in the trace (the folded runs'
// inner gaps plus the gaps between the loop's events) must contain the
// program's own (the trace's gaps run from the wrapper's exit timestamp to
// the next entry timestamp, around the program's), and exceed it by no
// more than the program's in-call time the trace does not show; the loop's
// span in the trace (from the first event's entry less its inner gaps to
// the last exit) must lie inside the program's. dtpa's report then counts
// every call (functions) and one gap per call, whose sum is the trace's.
func TestQueriesFolded(t *testing.T) {
	for _, m := range []struct {
		name, cc string
		launch   []string
	}{{"openmpi", ompi, []string{"--oversubscribe", "-np", "2"}}, {"mpich", "mpicc.mpich", []string{"-n", "2"}}} {
		t.Run(m.name, func(t *testing.T) { checkQueries(t, m.cc, m.launch) })
	}
}

// ownLoop is queries.c's account of one loop (ns by its clock).
type ownLoop struct {
	calls                       int64
	inside, between, span, ends float64
}

// queryLoops are queries.c's loops in program order, each after one
// more MPI_Barrier, with the function they call.
var queryLoops = []struct{ name, fn string }{
	{"MPI_Comm_rank", "MPI_Comm_rank"}, {"MPI_Wtime", "MPI_Wtime"}, {"MPI_Test", "MPI_Test"},
	{"MPI_Comm_size", "MPI_Comm_size"}, {"MPI_Comm_rank/spaced", "MPI_Comm_rank"},
}

func checkQueries(t *testing.T, cc string, launch []string) {
	t.Helper()
	prog := build(t, "queries", cc)
	dir := t.TempDir()
	res := dtrun(t, dir, nil, append(launch[:len(launch):len(launch)], prog)...)
	if res.code != 0 {
		t.Fatalf("dtrun queries: exit %d\n%s", res.code, res.out)
	}
	trs := readTraces(t, dir, "queries", 2)
	checkComplete(t, trs)
	own := map[string]ownLoop{} // "rank loop"
	for _, l := range strings.Split(res.out, "\n") {
		var r int
		var name string
		var o ownLoop
		if n, _ := fmt.Sscanf(l, "rank %d %s calls %d inside %g between %g span %g ends %g",
			&r, &name, &o.calls, &o.inside, &o.between, &o.span, &o.ends); n == 7 {
			own[strconv.Itoa(r)+" "+name] = o
		}
	}
	if len(own) != 2*len(queryLoops) {
		t.Fatalf("%d loops reported, want %d:\n%s", len(own), 2*len(queryLoops), res.out)
	}
	const foldGap = 1000 // ns, DT_FOLD_GAP_NS's default
	for r, tr := range trs {
		// The loop's events: those of its function after its barrier.
		loops := make([][]traceformat.Event, len(queryLoops))
		k := -1
		for _, e := range tr.events {
			switch fn := tr.name(e); {
			case fn == "MPI_Barrier":
				k++
			case k >= 0 && k < len(loops) && fn == queryLoops[k].fn:
				loops[k] = append(loops[k], e)
			}
		}
		for i, lp := range queryLoops {
			key := strconv.Itoa(r) + " " + lp.name
			want := own[key]
			evs := loops[i]
			if len(evs) == 0 {
				t.Errorf("%s: no events", key)
				continue
			}
			var calls, folded int64
			var dur, gaps int64
			for j, e := range evs {
				calls += int64(e.NumCalls())
				dur += e.Exit - e.Entry
				if e.Attr&traceformat.AttrCalls != 0 {
					folded++
					if e.Attr&traceformat.AttrInnerGaps == 0 || e.Calls < 2 {
						t.Errorf("%s: folded event of %d calls without inner gaps (attr %b)", key, e.Calls, e.Attr)
					}
					if lp.fn != "MPI_Test" && e.InnerGaps > int64(e.Calls-1)*(foldGap+1) {
						t.Errorf("%s: %d calls folded with %d ns between them, above %d ns per gap", key, e.Calls, e.InnerGaps, foldGap)
					}
				}
				gaps += e.InnerGaps
				if j > 0 {
					before := e.Entry - e.InnerGaps - evs[j-1].Exit
					if before < -1 {
						t.Errorf("%s: event %d's first call entered %d ns before the previous event's exit", key, j, -before)
					}
					gaps += before
				}
			}
			span := evs[len(evs)-1].Exit - (evs[0].Entry - evs[0].InnerGaps)
			if calls != want.calls {
				t.Errorf("%s: the trace stands for %d calls (%d events), the program made %d", key, calls, len(evs), want.calls)
			}
			// The wrapper's times are taken inside the program's own bracket
			// around each call; 0.1 % and 20 µs allow for the TSC
			// calibration against CLOCK_MONOTONIC_RAW.
			slack := func(v float64) float64 { return v*0.001 + 20e3 }
			if float64(dur) > want.inside+slack(want.inside) {
				t.Errorf("%s: %d ns inside MPI in the trace, the program measured %.0f around the calls", key, dur, want.inside)
			}
			if float64(gaps) < want.between-slack(want.between) || float64(gaps) > want.between+(want.inside-float64(dur))+slack(want.inside+want.between) {
				t.Errorf("%s: %d ns between the calls in the trace; the program measured %.0f between them and %.0f ns in them that the trace does not show",
					key, gaps, want.between, want.inside-float64(dur))
			}
			if float64(span) > want.span+slack(want.span) || float64(span) < want.span-want.ends-slack(want.span) {
				t.Errorf("%s: the loop spans %d ns in the trace, %.0f by the program's clock (its first and last calls %.0f)", key, span, want.span, want.ends)
			}
			t.Logf("%s: %d calls in %d events (%d folded); in MPI %d ns (program %.0f), between %d ns (program %.0f)",
				key, calls, len(evs), folded, dur, want.inside, gaps, want.between)
			switch lp.name {
			case "MPI_Comm_size", "MPI_Comm_rank/spaced":
				if folded != 0 {
					t.Errorf("%s: %d folded events, want none", key, folded)
				}
			case "MPI_Test":
				// Split only by a periodic hand-over or a full buffer.
				if folded == 0 || len(evs) > 6 {
					t.Errorf("%s: %d calls in %d events, %d of them folded", key, calls, len(evs), folded)
				}
			default:
				// Split where a gap exceeds 1 µs (an interrupt, a time slice).
				if folded == 0 || int64(len(evs)) > calls/20 {
					t.Errorf("%s: %d calls in %d events, %d of them folded", key, calls, len(evs), folded)
				}
			}
		}
	}
	checkQueriesReport(t, dir, trs)
}

// checkQueriesReport checks dtpa's report of the traces: per rank and
// function the calls the events stand for, and per rank one gap per call
// between MPI_Init and MPI_Finalize, their sum the trace's.
func checkQueriesReport(t *testing.T, dir string, trs []*trace) {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "bin", "dtpa"), "--json", "--dir", dir, "queries").Output()
	if err != nil {
		t.Fatalf("dtpa --json: %v", err)
	}
	var rep report.Report
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Intervals) == 0 {
		t.Fatalf("the JSON report: %v", err)
	}
	iv := rep.Intervals[0]
	perFunc := map[string]int64{}
	for _, f := range iv.Functions {
		for _, rk := range f.Ranks {
			perFunc[strconv.Itoa(rk.Rank)+" "+f.Function] = rk.Calls
		}
	}
	for r, tr := range trs {
		made := map[string]int64{}
		var gaps, sum int64
		for i, e := range tr.events {
			fn := tr.name(e)
			made[fn] += int64(e.NumCalls())
			if i == 0 || fn == "MPI_Init" || fn == "MPI_Finalize" {
				continue
			}
			gaps += int64(e.NumCalls())
			sum += max(0, e.Entry-tr.events[i-1].Exit)
		}
		for fn, n := range made {
			if key := strconv.Itoa(r) + " " + fn; perFunc[key] != n && fn != "MPI_Init" && fn != "MPI_Finalize" {
				t.Errorf("rank %d %s: %d calls in the report, the trace stands for %d", r, fn, perFunc[key], n)
			}
		}
		var rp *report.RankProfile
		for j := range iv.Ranks {
			if iv.Ranks[j].Rank == r {
				rp = &iv.Ranks[j].RankProfile
			}
		}
		if rp == nil {
			t.Errorf("rank %d: not in the report", r)
			continue
		}
		if rp.Gaps != gaps || abs(rp.GapMean*float64(gaps)-float64(sum)*1e-9) > 1e-9*float64(gaps) {
			t.Errorf("rank %d: %d gaps of mean %.9f s in the report; the trace has %d calls with %d ns between them (mean %.9f s)",
				r, rp.Gaps, rp.GapMean, gaps, sum, float64(sum)*1e-9/float64(gaps))
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
