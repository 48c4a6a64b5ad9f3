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
		keys := newSiteKeyer(rp.defs)
		total(rp.tr.Root(), keys, nodes, r)
		for k, g := range nodes {
			for rr, t := range g.ranks {
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
	for n := 1; n <= 4; n++ {
		got, _ := replayDist(t, opts, n)
		g := rankTotals(got)
		if len(g) != len(want) {
			t.Errorf("%d processes: %d rank intervals, want %d", n, len(g), len(want))
		}
		for k, w := range want {
			if !reflect.DeepEqual(g[k], w) {
				t.Errorf("%d processes: %s:\n got %+v\nwant %+v", n, k, g[k], w)
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
			tls[p] = &TimelineRecorder{MaxCalls: opts.Timeline.MaxCalls}
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
	return reps[0], tls[0].Timeline(), out.Bytes()
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
