package analyzer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// analyzeDistReport is the report of AnalyzeDist over n processes
// connected by a memNet (process 0's).
func analyzeDistReport(t *testing.T, opts Options, n int) *report.Report {
	t.Helper()
	net := newMemNet(n)
	reps := make([]*report.Report, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[p], errs[p] = AnalyzeDist(context.Background(), opts, &memTransport{net, p})
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("process %d of %d: %v", p, n, err)
		}
	}
	return reps[0]
}

// Collective instances lacking a member are described by call number
// whatever order they completed in: groups {0, 1, 2} and {3, 4, 5} make 8
// barriers each on their own communicator, and ranks 2 and 5 are missing,
// so the 16 instances complete in an order that depends on the replays'
// (the groups never meet). The warnings name calls 1 to 5 of both
// communicators, in call order, and count 6 more, with any number of
// workers and of analysis processes.
func TestUnmatchedCollectivesInCallOrder(t *testing.T) {
	run, ranks := start(6)
	lo, hi := run.NewComm(0, 1, 2), run.NewComm(3, 4, 5)
	for i, r := range ranks {
		c := lo
		if i >= 3 {
			c = hi
		}
		r.CommSplit(nil, c, us)
		for k := 0; k < 8; k++ {
			r.Compute(int64(1+i%3)*us).Barrier(10*us, tracetest.On(c))
		}
	}
	finish(run)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "app.2.trc"))
	os.Remove(filepath.Join(dir, "app.5.trc"))
	var want []string
	for w := 1; w <= 4; w++ {
		rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: w})
		var got []string
		for _, s := range rep.Warnings {
			if strings.HasPrefix(s, "Collective MPI_Barrier") || strings.Contains(s, "more collective instance") {
				got = append(got, s)
			}
		}
		if w == 1 {
			want = got
			if len(got) != 11 || !strings.HasPrefix(got[10], "6 more") {
				t.Fatalf("warnings %q", got)
			}
			for i, s := range got[:10] {
				if !strings.Contains(s, "(call "+itoa(1+i/2)+" on communicator ") {
					t.Errorf("warning %d: %q", i, s)
				}
			}
		} else if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%d workers: warnings\n%q\nwant\n%q", w, got, want)
		}
	}
	one := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: 2})
	for n := 1; n <= 4; n++ {
		rep := analyzeDistReport(t, Options{Dir: dir, App: "app", MaxLevel: -1}, n)
		if strings.Join(rep.Warnings, "\n") != strings.Join(one.Warnings, "\n") {
			t.Errorf("%d processes: warnings\n%q\nwant\n%q", n, rep.Warnings, one.Warnings)
		}
	}
}
