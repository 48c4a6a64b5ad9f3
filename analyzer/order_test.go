package analyzer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// Runs with missing ranks, stalls and lost collective calls give the same
// report, byte for byte as JSON, with 1 to 4 replay workers, and the same
// warnings and unmatched counts in a distributed replay over 1 to 4
// processes (whose figures checkDist compares), and the same JSON.
func TestSameReportAnyOrder(t *testing.T) {
	missing := func() (*tracetest.Run, []int) {
		run := tracetest.NewRun(3)
		for i := 0; i < 3; i++ {
			run.Rank(i).Init(us)
		}
		run.Rank(1).Send(2, 0, 8, us)
		run.Rank(2).Recv(1, 0, 8, ms)
		run.Rank(0).Send(2, 0, 8, us)
		run.Rank(2).Recv(0, 0, 8, ms)
		for i := 0; i < 3; i++ {
			run.Rank(i).Barrier(ms).Finalize(us)
		}
		return run, []int{1}
	}
	ring := func() (*tracetest.Run, []int) {
		const n = 6
		run, ranks := start(n)
		for i, r := range ranks {
			r.Compute(int64(i) * us)
			r.Recv(int32((i+n-1)%n), 0, 8, ms)
			r.Send(int32((i+1)%n), 0, 8, us)
			r.Allreduce(8, ms)
		}
		finish(run)
		return run, nil
	}
	cut := func() (*tracetest.Run, []int) {
		run, ranks := start(4)
		for k := 0; k < 20; k++ {
			for i, r := range ranks {
				r.Compute(int64(1+(i*7+k)%5) * us)
				r.Send(int32((i+1)%4), 0, 8, us).Recv(int32((i+3)%4), 0, 8, 10*us)
				r.Bcast(int32(k%4), 8, 5*us)
			}
		}
		ranks[2].Crash()
		finish(run)
		return run, []int{3}
	}
	for _, c := range []struct {
		name string
		run  func() (*tracetest.Run, []int)
	}{
		{"missing", missing},
		{"ring", ring},
		{"cut", cut},
		{"lost", func() (*tracetest.Run, []int) { return lostCollective(500), nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, gone := c.run()
			dir := t.TempDir()
			if _, err := run.WriteDir(dir, "app"); err != nil {
				t.Fatal(err)
			}
			for _, r := range gone {
				os.Remove(filepath.Join(dir, "app."+itoa(r)+".trc"))
			}
			var want []byte
			var wantRep *report.Report
			for w := 1; w <= 4; w++ {
				rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: w})
				got, err := json.Marshal(rep)
				if err != nil {
					t.Fatal(err)
				}
				if w == 1 {
					want, wantRep = got, rep
					if len(rep.Warnings) == 0 {
						t.Fatal("no warnings: the fixture lost its damage")
					}
				} else if !bytes.Equal(got, want) {
					t.Errorf("%d workers: report differs from 1 worker's:\n%s\n%s", w, got, want)
				}
			}
			for n := 1; n <= 4; n++ {
				rep := analyzeDistReport(t, Options{Dir: dir, App: "app", MaxLevel: -1}, n)
				if strings.Join(rep.Warnings, "\n") != strings.Join(wantRep.Warnings, "\n") {
					t.Errorf("%d processes: warnings\n%q\nwant\n%q", n, rep.Warnings, wantRep.Warnings)
				}
				if !reflect.DeepEqual(rep.Unmatched, wantRep.Unmatched) {
					t.Errorf("%d processes: unmatched %+v, want %+v", n, rep.Unmatched, wantRep.Unmatched)
				}
				if got, _ := json.Marshal(rep); !bytes.Equal(got, want) {
					t.Errorf("%d processes: report differs from dtpa's:\n%s\n%s", n, got, want)
				}
			}
		})
	}
}
