package analyzer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/dtpa/dtpa/internal/memnet"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// rankTotals is every rank's figures per interval, before the report is
// built: what a distributed replay must reproduce exactly.
func rankTotals(reps []*replayer) map[string]*rankTot {
	out := map[string]*rankTot{}
	for r, rp := range reps {
		if rp == nil || rp.defs == nil {
			continue
		}
		nodes := map[string]*gnode{}
		tb := newSiteTable(len(reps))
		total(rp.tr.Root(), tb, newSiteKeyer(rp.defs), nodes, r)
		// The sites by their keys' order, not by the order the table
		// met them.
		used := make([]bool, len(tb.keys))
		for i := range used {
			used[i] = true
		}
		tb.number(used)
		for k, g := range nodes {
			for rr, t := range g.ranks {
				sites := map[int32]*siteTot{}
				for i, s := range t.sites {
					sites[int32(tb.srcID[i])] = s
				}
				t.sites = sites
				out[fmt.Sprintf("%s/%d", k, rr)] = t
			}
		}
	}
	return out
}

// replayOnce is the single-process replay of opts, settled.
func replayOnce(t *testing.T, opts Options) ([]*replayer, *exchange) {
	t.Helper()
	ctx := context.Background()
	sc, err := scanRun(ctx, opts, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	x, s, reps := newReplay(ctx, opts, sc, nil)
	if err := s.run(1); err != nil {
		t.Fatal(err)
	}
	settle(reps, x)
	return reps, x
}

// replayDist replays opts over n processes connected by a memnet.Net and
// returns every rank's replay (from the process that replayed it).
func replayDist(t *testing.T, opts Options, n int) ([]*replayer, []*exchange) {
	t.Helper()
	net := memnet.New(n)
	parts := make([][]*replayer, n)
	xs := make([]*exchange, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[p], xs[p], errs[p] = distReplay(context.Background(), opts, net.Transport(p))
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("process %d of %d: %v", p, n, err)
		}
	}
	all := make([]*replayer, len(parts[0]))
	for _, reps := range parts {
		for r, rp := range reps {
			if rp != nil {
				all[r] = rp
			}
		}
	}
	return all, xs
}

// distReplay is one process's distributed replay, settled.
func distReplay(ctx context.Context, opts Options, tr Transport) ([]*replayer, *exchange, error) {
	sc, err := scanRun(ctx, opts, func(string) {})
	if err != nil {
		return nil, nil, err
	}
	x, s, reps, err := replayPart(ctx, opts, sc, tr)
	if err != nil {
		return nil, nil, err
	}
	_ = s
	settle(reps, x)
	return reps, x, nil
}

// checkDist compares the per-rank figures of the distributed replay of
// opts over 1–4 processes with the single-process replay's, stalls
// included (the replay of the lowest rank gives up its wait in both,
// sched.abortLowest). A test that pins one worker is left out: its
// figures depend on the order the replays run in, which one worker fixes
// and a distributed replay does not (TestCancelledSend: a receive
// replayed before the sender's cancellation takes the message).
func checkDist(t *testing.T, opts Options) {
	t.Helper()
	if opts.Workers == 1 {
		return
	}
	opts.Warn, opts.Timeline, opts.Chrome, opts.Progress = nil, nil, nil, nil
	reps, _ := replayOnce(t, opts)
	want := rankTotals(reps)
	// Each process replays on its worker's stack where it can
	// (replayer.step); at two processes, also in the coroutines alone.
	for i, n := range []int{1, 2, 3, 4, 2} {
		o := opts
		o.noStep = i == 4
		got, _ := replayDist(t, o, n)
		g := rankTotals(got)
		if len(g) != len(want) {
			t.Errorf("%d processes (noStep %v): %d rank intervals, want %d", n, o.noStep, len(g), len(want))
		}
		for k, w := range want {
			if !reflect.DeepEqual(g[k], w) {
				t.Errorf("%d processes (noStep %v): %s:\n got %+v\nwant %+v", n, o.noStep, k, g[k], w)
			}
		}
	}
}

// distOutputs runs the distributed analysis of opts over n processes
// connected by a memnet.Net, each with its own timeline recorder (when
// timeline) and Chrome export (when export, spooled in spool), and
// returns process 0's report, timeline and export.
func distOutputs(t *testing.T, opts Options, n int, timeline, export bool, spool string) (*report.Report, *report.Timeline, []byte) {
	t.Helper()
	net := memnet.New(n)
	reps := make([]*report.Report, n)
	tls := make([]*TimelineRecorder, n)
	errs := make([]error, n)
	var out bytes.Buffer
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		o := opts
		o.Warn, o.Progress, o.Timeline, o.Chrome, o.roundTrip = nil, nil, nil, nil, false
		if timeline {
			tls[p] = &TimelineRecorder{MaxCalls: opts.Timeline.MaxCalls, TempDir: spool}
			o.Timeline = tls[p]
		}
		if export {
			o.Chrome = &ChromeExport{W: io.Discard, TempDir: spool}
			if p == 0 {
				o.Chrome.W = &out
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[p], errs[p] = AnalyzeDist(context.Background(), o, net.Transport(p))
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("process %d of %d: %v", p, n, err)
		}
	}
	var tl *report.Timeline
	if timeline {
		tl = tls[0].Timeline()
		// Written a lane at a time, the same JSON.
		var js bytes.Buffer
		if err := tls[0].WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(tl); !bytes.Equal(js.Bytes(), want) {
			t.Errorf("%d processes: WriteJSON differs from the timeline's JSON:\n got %s\nwant %s", n, js.Bytes(), want)
		}
		for _, r := range tls {
			if err := r.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	return reps[0], tl, out.Bytes()
}

// checkDistOutputs compares the timeline and the Chrome export of the
// distributed analysis of opts over 1–5 processes with Analyze's (rep,
// tl, export), and the reports.
func checkDistOutputs(t *testing.T, opts Options, rep *report.Report, tl *report.Timeline, export []byte) {
	t.Helper()
	for n := 1; n <= 5; n++ {
		spool := t.TempDir()
		got, gotTL, gotEx := distOutputs(t, opts, n, tl != nil, export != nil, spool)
		if err := sameReport(got, rep); err != nil {
			t.Errorf("%d processes: %v", n, err)
		}
		if tl != nil && !reflect.DeepEqual(gotTL, tl) {
			g, _ := json.Marshal(gotTL)
			w, _ := json.Marshal(tl)
			t.Errorf("%d processes: the timeline differs:\n got %s\nwant %s", n, g, w)
		}
		if export != nil && !bytes.Equal(gotEx, export) {
			t.Errorf("%d processes: the Chrome export differs:\n got %s\nwant %s", n, gotEx, export)
		}
		if left, _ := os.ReadDir(spool); len(left) != 0 {
			t.Errorf("%d processes: spool left behind: %v", n, left)
		}
	}
}

// TestAgree: every process gets the first error (process 0's, else the
// lowest process's), and a message that reaches a process before process
// 0's answer (sent by a process answered earlier, which began the
// replay) is received after it, not lost.
func TestAgree(t *testing.T) {
	for _, c := range []struct {
		errs []error
		want string
	}{
		{[]error{nil, nil, nil}, ""},
		{[]error{nil, errors.New("two"), errors.New("one")}, "two"},
		{[]error{errors.New("zero"), errors.New("two"), nil}, "zero"},
	} {
		net := memnet.New(3)
		got := make([]string, 3)
		early := make(chan string, 1)
		var wg sync.WaitGroup
		for p := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tr := Transport(net.Transport(p))
				if p == 2 {
					tr.Send(1, []byte("early"))
				}
				tr, err := agree(tr, c.errs[p])
				if err != nil {
					got[p] = err.Error()
				}
				if p == 1 {
					_, msg, _ := tr.Recv(true)
					early <- string(msg)
				}
			}()
		}
		wg.Wait()
		for p, g := range got {
			if g != c.want {
				t.Errorf("%v: process %d got %q, want %q", c.errs, p, g, c.want)
			}
		}
		if m := <-early; m != "early" {
			t.Errorf("process 1 received %q first, want the message sent before the answer", m)
		}
	}
}

// Flow control across processes: rank 0 sends a flood to rank 3, which
// takes none of it before a chain of ping-pongs between ranks 1 and 2
// ends; rank 0 and rank 3 are replayed by different processes at 2 and
// 3 (and the single process replays rank 0's sends first). With a small
// bound the receiver's process holds at most that many messages of the
// flood at once, the sender waits for it, and every figure and the report
// are those of one process; with the default bound the whole flood is
// held (the test reaches what it tests).
func TestDistFlowControl(t *testing.T) {
	const flood, pings, bound = 400, 50, 8
	run := tracetest.NewRun(4)
	for i := 0; i < 4; i++ {
		run.Rank(i).Init(1 * us)
	}
	r0, r1, r2, r3 := run.Rank(0), run.Rank(1), run.Rank(2), run.Rank(3)
	for i := 0; i < flood; i++ {
		r0.Send(3, 1, 8, 1*us)
	}
	for i := 0; i < pings; i++ {
		r1.Send(2, 2, 8, 1*us)
		r2.Recv(1, 2, 8, 2*us)
		r2.Send(1, 2, 8, 1*us)
		r1.Recv(2, 2, 8, 2*us)
	}
	r2.Send(3, 3, 8, 1*us)
	r3.Compute(1*ms).Recv(2, 3, 8, 1*us)
	for i := 0; i < flood; i++ {
		r3.Recv(0, 1, 8, 1*us)
	}
	for i := 0; i < 4; i++ {
		run.Rank(i).Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	lim := defaultLimits()
	lim.pending = bound
	opts := Options{Dir: dir, App: "app", MaxLevel: -1, limits: &lim}
	want, err := Analyze(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	noWarnings(t, want)
	reps, _ := replayOnce(t, opts)
	totals := rankTotals(reps)
	for _, n := range []int{2, 3} {
		got, _, _ := distOutputs(t, opts, n, false, false, "")
		if err := sameReport(got, want); err != nil {
			t.Errorf("%d processes: %v", n, err)
		}
		all, xs := replayDist(t, opts, n)
		if g := rankTotals(all); !reflect.DeepEqual(g, totals) {
			t.Errorf("%d processes: the ranks' figures differ from one process's", n)
		}
		// Rank 3's process: at most the bound of the flood at once.
		d := xs[n-1].dist
		if d.maxQueued == 0 || d.maxQueued > bound {
			t.Errorf("%d processes: the receiver's process held up to %d messages of one key, want 1…%d", n, d.maxQueued, bound)
		}
		if w := xs[0].dist.flowWaits; w < flood/bound {
			t.Errorf("%d processes: the sender waited %d times, want at least %d", n, w, flood/bound)
		}
		t.Logf("%d processes, bound %d: the receiver's process held up to %d messages of one key; the sender waited %d times", n, bound, d.maxQueued, xs[0].dist.flowWaits)
		var stalls int
		for _, x := range xs {
			stalls += x.stalls
		}
		if stalls != 0 {
			t.Errorf("%d processes: %d stalls", n, stalls)
		}
		def := opts
		def.limits = nil
		_, xs = replayDist(t, def, n)
		if q := xs[n-1].dist.maxQueued; q != flood {
			t.Errorf("%d processes, default bound: the receiver's process held up to %d messages of one key, want the whole flood (%d)", n, q, flood)
		}
	}
}
