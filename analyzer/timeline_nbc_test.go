package analyzer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// nbcRun is a run of three ranks that ties calls to collective instances
// in every way: MPI_Ibarrier and MPI_Ibcast completed together with a
// ring of MPI_Isend/MPI_Irecv by one MPI_Waitall; a blocking MPI_Barrier;
// a persistent MPI_Barrier_init started twice, completed once by MPI_Wait
// and once by MPI_Test; and MPI_Startall of a persistent barrier and
// broadcast, completed by one MPI_Waitall. Each rank starts 10 µs after
// the one before; every completion ends after the last start.
func nbcRun() *tracetest.Run {
	run, ranks := start(3)
	for i, k := range ranks {
		k.Compute(int64(i) * 10 * us)
		a := k.Ibarrier(us)
		b := k.Ibcast(0, 8, us)
		s := k.Isend(int32((i+1)%3), 0, 8, us)
		q := k.Irecv(int32((i+2)%3), 0, 8, us)
		k.Waitall([]tracetest.Req{a, b, s, q}, 1*ms-k.Now())
		k.Barrier(us)
		p := k.CollInit("MPI_Barrier_init", -1, us)
		k.Compute(int64(i) * 10 * us)
		k.Start(p, us)
		k.Wait(p, 2*ms-k.Now())
		k.Start(p, us)
		k.Test(p, true, 3*ms-k.Now())
		p1 := k.CollInit("MPI_Barrier_init", -1, us)
		p2 := k.CollInit("MPI_Bcast_init", 0, us)
		k.Compute(int64(i) * 10 * us)
		k.Startall([]tracetest.Req{p1, p2}, us)
		k.Waitall([]tracetest.Req{p1, p2}, 4*ms-k.Now())
		k.RequestFree(p, us).RequestFree(p1, us).RequestFree(p2, us)
	}
	finish(run)
	return run
}

// nbcCall is a call of nbcRun as the timeline should tie it: the
// instance it joined (Lane.Coll) and its other ties (Lane.Ties), numbered
// as the timeline numbers the instances (in order of rank 0's calls).
type nbcCall struct {
	name string
	coll int
	ties []nbcTie
}

type nbcTie struct {
	coll int
	done bool
}

var nbcWant = []nbcCall{
	{"MPI_Ibarrier", 0, nil}, {"MPI_Ibcast", 1, nil}, {"MPI_Isend", -1, nil}, {"MPI_Irecv", -1, nil},
	{"MPI_Waitall", -1, []nbcTie{{0, true}, {1, true}}},
	{"MPI_Barrier", 2, nil},
	{"MPI_Barrier_init", -1, nil},
	{"MPI_Start", 3, nil}, {"MPI_Wait", -1, []nbcTie{{3, true}}},
	{"MPI_Start", 4, nil}, {"MPI_Test", -1, []nbcTie{{4, true}}},
	{"MPI_Barrier_init", -1, nil}, {"MPI_Bcast_init", -1, nil},
	{"MPI_Startall", 5, []nbcTie{{6, false}}},
	{"MPI_Waitall", -1, []nbcTie{{5, true}, {6, true}}},
	{"MPI_Request_free", -1, nil}, {"MPI_Request_free", -1, nil}, {"MPI_Request_free", -1, nil},
}

// nbcSink keeps every call's function and ties as the sink gets them.
type nbcSink struct{ calls [][]TimelineCall }

func (s *nbcSink) Start(ranks int) { s.calls = make([][]TimelineCall, ranks) }
func (s *nbcSink) Call(rank int, c *TimelineCall) {
	k := *c
	k.More, k.Done, k.Msgs = slices.Clone(c.More), slices.Clone(c.Done), nil
	s.calls[rank] = append(s.calls[rank], k)
}
func (s *nbcSink) Span(int, *TimelineSpan) {}

// TestTimelineNonblockingCollectives: on every member, the start of a
// nonblocking or persistent collective joins the instance a blocking
// collective would (Lane.Coll; TimelineCall.Coll and More), and the
// Wait/Test call completing its request is tied to it (Lane.Ties with
// done; TimelineCall.Done), one tie per collective request of a call that
// completes several; the same instance on every member, distinct
// instances apart. With 1, 2 and 4 workers; the distributed analysis
// writes the same timeline and Chrome export.
func TestTimelineNonblockingCollectives(t *testing.T) {
	run := nbcRun()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 2, 4} {
		name := fmt.Sprintf("%d workers", w)
		sink := &nbcSink{}
		rec := &TimelineRecorder{Sink: sink}
		var out bytes.Buffer
		spool := t.TempDir()
		x := &ChromeExport{W: &out, TempDir: spool}
		rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Workers: w, Timeline: rec, Chrome: x})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Unmatched != nil || len(rep.Warnings) > 0 {
			t.Fatalf("%s: unmatched %+v, warnings %q", name, rep.Unmatched, rep.Warnings)
		}
		tl := rec.Timeline()
		checkNbcLanes(t, name, tl)
		checkNbcSink(t, name, sink, rec, tl)
		tr, err := chrometest.Read(out.Bytes())
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out.Bytes())
		}
		checkNbcChrome(t, name, tr)
		if w == 2 {
			checkDistOutputs(t, Options{Dir: dir, App: "app", MaxLevel: -1, Timeline: &TimelineRecorder{}}, rep, tl, out.Bytes())
		}
		if left, _ := os.ReadDir(spool); len(left) != 0 {
			t.Errorf("%s: spool left behind: %v", name, left)
		}
	}
	analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1})
}

func checkNbcLanes(t *testing.T, name string, tl *report.Timeline) {
	t.Helper()
	if len(tl.Lanes) != 3 {
		t.Fatalf("%s: %d lanes", name, len(tl.Lanes))
	}
	for _, ln := range tl.Lanes {
		var got []nbcCall
		for i := range ln.Start {
			got = append(got, nbcCall{name: tl.Funcs[ln.Func[i]].Name, coll: ln.Coll[i]})
		}
		if ln.Ties != nil {
			tt := ln.Ties
			if len(tt.Coll) != len(tt.Call) || len(tt.Done) != len(tt.Call) {
				t.Fatalf("%s: rank %d: ties of %d, %d and %d", name, ln.Rank, len(tt.Call), len(tt.Coll), len(tt.Done))
			}
			for k, i := range tt.Call {
				if k > 0 && i < tt.Call[k-1] {
					t.Errorf("%s: rank %d: ties out of call order", name, ln.Rank)
				}
				got[i].ties = append(got[i].ties, nbcTie{tt.Coll[k], tt.Done[k]})
			}
		}
		if !reflect.DeepEqual(got, nbcWant) {
			t.Errorf("%s: rank %d's calls:\n got %v\nwant %v", name, ln.Rank, got, nbcWant)
		}
	}
}

// checkNbcSink: the sink's instances, mapped to the timeline's numbers
// through rank 0's calls, tie every rank's calls as the lanes do.
func checkNbcSink(t *testing.T, name string, sink *nbcSink, rec *TimelineRecorder, tl *report.Timeline) {
	t.Helper()
	ids := map[uint64]int{}
	id := func(h uint64) int {
		if h == 0 {
			return -1
		}
		if _, ok := ids[h]; !ok {
			ids[h] = len(ids)
		}
		return ids[h]
	}
	for r, calls := range sink.calls {
		var got []nbcCall
		for _, c := range calls {
			k := nbcCall{name: tl.Funcs[rec.LaneFuncs(r)[c.Func]].Name, coll: id(c.Coll)}
			for _, h := range c.More {
				k.ties = append(k.ties, nbcTie{id(h), false})
			}
			for _, h := range c.Done {
				k.ties = append(k.ties, nbcTie{id(h), true})
			}
			got = append(got, k)
		}
		if !reflect.DeepEqual(got, nbcWant) {
			t.Errorf("%s: the sink's rank %d:\n got %v\nwant %v", name, r, got, nbcWant)
		}
	}
}

// checkNbcChrome: each call's args name the instances it joined (coll)
// and completed (completes), the same ids on every member and distinct
// ids apart, and a "collective" flow runs from each start to the call
// that completed it, on its rank.
func checkNbcChrome(t *testing.T, name string, tr *chrometest.Trace) {
	t.Helper()
	ids := map[string]int{}
	id := func(s string) int {
		if _, ok := ids[s]; !ok {
			ids[s] = len(ids)
		}
		return ids[s]
	}
	byPid := map[int][]int{}
	for i, s := range tr.Slices {
		if s.Cat == chromeCat {
			byPid[s.Pid] = append(byPid[s.Pid], i)
		}
	}
	for r := range 3 {
		var got []nbcCall
		for _, i := range byPid[r+1] {
			s := tr.Slices[i]
			k := nbcCall{name: s.Name, coll: -1}
			if v, ok := s.Args["coll"].(string); ok {
				f := strings.Fields(v)
				k.coll = id(f[0])
				for _, x := range f[1:] {
					k.ties = append(k.ties, nbcTie{id(x), false})
				}
			}
			if v, ok := s.Args["completes"].(string); ok {
				for _, x := range strings.Fields(v) {
					k.ties = append(k.ties, nbcTie{id(x), true})
				}
			}
			got = append(got, k)
		}
		if !reflect.DeepEqual(got, nbcWant) {
			t.Errorf("%s: the Chrome export's rank %d:\n got %v\nwant %v", name, r, got, nbcWant)
		}
	}
	// The flows of the collectives: from the start to its completion,
	// named by the calls' positions in nbcWant.
	var links []string
	msgs := 0
	for _, f := range tr.Flows {
		from, to := tr.Slices[f.From], tr.Slices[f.To]
		switch f.Name {
		case chromeFlow:
			msgs++
		case chromeCollFlow:
			if from.Pid != to.Pid || from.Tid != to.Tid {
				t.Errorf("%s: a collective flow from %d/%d to %d/%d", name, from.Pid, from.Tid, to.Pid, to.Tid)
			}
			links = append(links, fmt.Sprintf("rank %d %s@%d→%s@%d", from.Pid-1, from.Name, from.Ts, to.Name, to.Ts))
		default:
			t.Errorf("%s: flow named %q", name, f.Name)
		}
	}
	if msgs != 3 || len(links) != 18 {
		t.Errorf("%s: %d message flows, %d collective flows (want 3, 18): %q", name, msgs, len(links), links)
	}
	for _, l := range links {
		if !strings.Contains(l, "MPI_I") && !strings.Contains(l, "MPI_Start") {
			t.Errorf("%s: collective flow %s", name, l)
		}
	}
}
