package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/report"
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
