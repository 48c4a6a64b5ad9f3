package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/otf2/otf2test"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
)

// waitedRE is threads.c's report of how long an even rank's thread A
// waited for its message.
var waitedRE = regexp.MustCompile(`threads: rank (\d+) waited ([0-9.]+) s`)

// TestThreads traces testdata/apps/threads.c (MPI_THREAD_MULTIPLE, threads
// exchanging messages while the main thread runs a collective) at 4 ranks
// under Open MPI and MPICH. Every thread's calls are analysed: no warning
// (calls of other threads were left out with one), nothing unmatched, no
// stall. Rank 0's thread A waits for rank 1's sender, which sleeps 0.2 s
// first: Real Sync on rank 0 is that wait, which the program measures
// itself (≥ 0.2 s; more when the loaded machine wakes the sender late); on
// rank 2 the wait the program measured (≈ 0: rank 3 sends at once).
// Nothing else waits on the even ranks (thread B only sends there), so
// their Real Sync is the receive's alone, within tol (a wake-up). Without
// threads analysed, Real Sync is 0 on every rank.
func TestThreads(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "threads")
			out := trace(t, m, dir, nil, 4, exe)
			r, stderr := analyse(t, dir, "threads")
			if len(r.Warnings) != 0 || stderr != "" {
				t.Errorf("warnings %q, stderr %q", r.Warnings, stderr)
			}
			if r.Unmatched != nil {
				t.Errorf("unmatched %+v", *r.Unmatched)
			}
			checkInvariants(t, r, 4)
			waited := map[int]float64{}
			for _, m := range waitedRE.FindAllStringSubmatch(out, -1) {
				rk, _ := strconv.Atoi(m[1])
				waited[rk], _ = strconv.ParseFloat(m[2], 64)
			}
			if len(waited) != 2 {
				t.Fatalf("the program reported the waits of %d ranks, want 2:\n%s", len(waited), out)
			}
			// (Rank 0's thread enters its receive a little after rank 1
			// starts sleeping: the wait is the sleep less that start-up.)
			if waited[0] < 0.15 {
				t.Errorf("rank 0 waited %.6f s, far less than rank 1's 0.2 s sleep", waited[0])
			}
			whole := r.Intervals[0]
			for _, rk := range []int{0, 2} {
				got := rankOf(t, &whole, rk).RealSync
				t.Logf("rank %d: Real Sync %.6f s, waited %.6f s", rk, got, waited[rk])
				if math.Abs(got-waited[rk]) > tol {
					t.Errorf("rank %d: Real Sync %.6f s, want %.6f ± %.2f (the wait the program measured)", rk, got, waited[rk], tol)
				}
			}
			// Even ranks: 10 sends (thread B), 1 receive (thread A); odd
			// ranks the other way round.
			for _, rk := range []int{0, 1, 2, 3} {
				k := rankOf(t, &whole, rk)
				sends, recvs := int64(10), int64(1)
				if rk%2 == 1 {
					sends, recvs = recvs, sends
				}
				if k.SendNumber != sends || k.ReceiveNumber != recvs {
					t.Errorf("rank %d: sends %d, receives %d; want %d, %d", rk, k.SendNumber, k.ReceiveNumber, sends, recvs)
				}
			}
			checkThreadLanes(t, dir)
			checkThreadTracks(t, dir)
			// The OTF2 archive: a location per thread, every call and
			// message on its thread's, and its report the traces'.
			arch := exportOTF2(t, dir, "threads")
			a, err := otf2test.Print(filepath.Join(arch, otf2.ArchiveName))
			if err != nil {
				t.Fatal(err)
			}
			checkOTF2Counts(t, dir, "threads", r, a)
			checkRoundTrip(t, r, arch, nil, true)
		})
	}
}

// checkThreadLanes writes the HTML page of threads.c's traces in dir and
// opens it in headless chromium: each of the 4 ranks has a lane per
// thread calling MPI (the main thread, A and B: 12 lanes), and the 22
// messages (per pair of ranks 1 of thread A, 10 of thread B) run between
// partners' thread lanes, never the main thread's (the first of a rank's
// three lanes), in 4 distinct pairs of lanes.
func checkThreadLanes(t *testing.T, dir string) {
	t.Helper()
	page := filepath.Join(dir, "threads.html")
	run(t, dir, nil, time.Minute, filepath.Join(root, "bin", "dtpa"), "--html", "-o", page, "threads")
	p := headless.Open(t, page)
	headless.CheckReport(t, p)
	tl := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	for _, want := range []string{`data-ranks="4"`, `data-lanes="12"`, `data-messages="22"`, `data-arrows="22"`} {
		if !strings.Contains(tl, want) {
			t.Errorf("timeline element %s lacks %s", tl, want)
		}
	}
	m := regexp.MustCompile(`data-arrow-lanes="([^"]*)"`).FindStringSubmatch(tl)
	if m == nil {
		t.Fatalf("timeline element %s names no arrow lanes", tl)
	}
	pairs := map[string]bool{}
	arrows := strings.Fields(m[1])
	for _, a := range arrows {
		var from, to int
		if _, err := fmt.Sscanf(a, "%d-%d", &from, &to); err != nil {
			t.Fatalf("arrow %q: %v", a, err)
		}
		if from%3 == 0 || to%3 == 0 || from/3 != (to/3)^1 {
			t.Errorf("arrow from lane %d to lane %d: not between partners' threads A or B", from, to)
		}
		pairs[a] = true
	}
	if len(arrows) != 22 || len(pairs) != 4 {
		t.Errorf("%d arrows between %d pairs of lanes (%s), want 22 between 4", len(arrows), len(pairs), m[1])
	}
}

// checkThreadTracks exports threads.c's traces in dir with dtpa --export
// chrome: each rank has a track of calls per thread (the main thread's,
// "MPI calls", holding its MPI_Comm_rank, MPI_Comm_size, MPI_Comm_dup,
// MPI_Barrier, MPI_Allreduce, MPI_Comm_free and MPI_Barrier and nothing
// else; threads A and B), no two calls of a track overlap, and the 22
// messages flow between partners' thread A and B tracks, never the main
// thread's, in 4 distinct pairs of tracks.
func checkThreadTracks(t *testing.T, dir string) {
	t.Helper()
	tr := exportChrome(t, dir, "threads")
	tracks := map[[2]int][]chrometest.Slice{}
	for _, s := range tr.Slices {
		if s.Cat != "interval" {
			k := [2]int{s.Pid, s.Tid}
			tracks[k] = append(tracks[k], s)
		}
	}
	for pid := 1; pid <= 4; pid++ {
		var names []string
		for k, ss := range tracks {
			if k[0] != pid {
				continue
			}
			names = append(names, tr.Threads[k])
			for i := 1; i < len(ss); i++ {
				if ss[i].Ts < ss[i-1].Ts+ss[i-1].Dur {
					t.Errorf("rank %d, track %q: %s at %d ns overlaps %s until %d ns", pid-1, tr.Threads[k],
						ss[i].Name, ss[i].Ts, ss[i-1].Name, ss[i-1].Ts+ss[i-1].Dur)
				}
			}
		}
		slices.Sort(names)
		if want := []string{"MPI calls", "MPI calls, thread 1", "MPI calls, thread 2"}; !slices.Equal(names, want) {
			t.Errorf("rank %d: call tracks %q, want %q", pid-1, names, want)
		}
		var main []string
		for _, s := range tracks[[2]int{pid, pid}] {
			main = append(main, s.Name)
		}
		if want := []string{"MPI_Comm_rank", "MPI_Comm_size", "MPI_Comm_dup", "MPI_Barrier", "MPI_Allreduce", "MPI_Comm_free", "MPI_Barrier"}; !slices.Equal(main, want) {
			t.Errorf("rank %d: main thread's track %v, want %v", pid-1, main, want)
		}
	}
	pairs := map[[2]int]bool{}
	for _, f := range tr.Flows {
		a, b := tr.Slices[f.From], tr.Slices[f.To]
		if a.Tid == a.Pid || b.Tid == b.Pid || (a.Pid-1)^1 != b.Pid-1 {
			t.Errorf("flow %d from rank %d track %q to rank %d track %q: not between partners' threads A or B",
				f.ID, a.Pid-1, tr.Threads[[2]int{a.Pid, a.Tid}], b.Pid-1, tr.Threads[[2]int{b.Pid, b.Tid}])
		}
		pairs[[2]int{a.Tid, b.Tid}] = true
	}
	if len(tr.Flows) != 22 || len(pairs) != 4 {
		t.Errorf("%d flows between %d pairs of tracks, want 22 between 4", len(tr.Flows), len(pairs))
	}
}

// rankOf is rank rk's figures in iv.
func rankOf(t *testing.T, iv *report.Interval, rk int) *report.Rank {
	t.Helper()
	for i := range iv.Ranks {
		if iv.Ranks[i].Rank == rk {
			return &iv.Ranks[i]
		}
	}
	t.Fatalf("no rank %d in interval %v", rk, iv.Path)
	return nil
}
