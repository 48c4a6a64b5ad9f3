package analyzer

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// lostCollective: 4 ranks make 1000 collective calls on MPI_COMM_WORLD,
// cycling through MPI_Barrier, MPI_Allreduce and MPI_Bcast, every call
// entered 1 ms after the previous one's exit; rank 1's trace lacks call
// number lost (as when the tracer dropped it).
func lostCollective(lost int) *tracetest.Run { return lostCollectiveOf(1, lost) }

// lostCollectiveOf is lostCollective with rank lacker's trace lacking the
// call.
func lostCollectiveOf(lacker, lost int) *tracetest.Run {
	run, ranks := start(4)
	for i := 0; i < 1000; i++ {
		for r, k := range ranks {
			k.Compute(ms)
			if r == lacker && i == lost {
				k.Compute(10 * us)
				continue
			}
			switch i % 3 {
			case 0:
				k.Barrier(10 * us)
			case 1:
				k.Allreduce(8, 10*us)
			default:
				k.Bcast(0, 8, 10*us)
			}
		}
	}
	finish(run)
	return run
}

// One call lost in the middle of 1000 costs the instance it belonged to,
// nothing else: one warning naming rank 1, no stall, and the other 999
// instances matched in the right places (every rank enters each at the
// same time, so a call matched one instance off would show 1 ms of
// Potential Sync). The instance lacking rank 1 counts its members' calls
// unmatched when they waited for rank 1 (MPI_Barrier, MPI_Allreduce: 3);
// a broadcast's members wait for the root only (0).
func TestLostCollectiveResync(t *testing.T) {
	for _, c := range []struct {
		lost    int
		fn      string
		unmatch int64
	}{{498, "MPI_Barrier", 3}, {499, "MPI_Allreduce", 3}, {500, "MPI_Bcast", 0}} {
		t.Run(c.fn, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := lostCollective(c.lost).WriteDir(dir, "app"); err != nil {
				t.Fatal(err)
			}
			rep := analyzeDir(t, dir)
			sameDistReport(t, dir, rep)
			want := 1
			if c.unmatch > 0 {
				want++ // "3 collective call(s) could not be matched …"
			}
			if len(rep.Warnings) != want || !hasWarning(rep, "Collective "+c.fn+" (call "+itoa(c.lost+1)+" on MPI_COMM_WORLD) lacks rank(s) 1 ") {
				t.Errorf("warnings %q", rep.Warnings)
			}
			var un, stalls int64
			if u := rep.Unmatched; u != nil {
				un, stalls = u.Collectives, u.Stalls
			}
			if un != c.unmatch || stalls != 0 {
				t.Errorf("unmatched collectives %d, stalls %d; want %d, 0", un, stalls, c.unmatch)
			}
			iv := find(t, rep)
			expect(t, "Potential Sync", iv.Main.PotentialSync, 0)
			if iv.Main.CollectiveNumber != 1000 {
				t.Errorf("collective number %d", iv.Main.CollectiveNumber)
			}
		})
	}
}

// sameDistReport checks that the distributed replay of the run in dir
// over 1 to 4 processes gives rep, byte for byte as JSON.
func sameDistReport(t *testing.T, dir string, rep any) {
	t.Helper()
	want, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 4; n++ {
		got, err := json.Marshal(analyzeDistReport(t, Options{Dir: dir, App: "app", MaxLevel: -1}, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d processes: report\n%s\nwant\n%s", n, got, want)
		}
	}
}

// A lost call resynchronizes the same way whichever rank lacks it and
// whichever function it is, in dtpa with 1 to 4 workers and in a
// distributed replay over 1 to 4 processes (so on the lacking rank's
// process or another, alone or not): the same report.
func TestLostCollectiveAnyRank(t *testing.T) {
	for lacker := 0; lacker < 4; lacker++ {
		for lost := 498; lost <= 500; lost++ {
			t.Run(itoa(lacker)+"/"+itoa(lost), func(t *testing.T) {
				dir := t.TempDir()
				if _, err := lostCollectiveOf(lacker, lost).WriteDir(dir, "app"); err != nil {
					t.Fatal(err)
				}
				var want []byte
				for w := 1; w <= 4; w++ {
					rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: w})
					if !hasWarning(rep, "lacks rank(s) "+itoa(lacker)+" ") || rep.Unmatched != nil && rep.Unmatched.Stalls != 0 {
						t.Errorf("%d workers: warnings %q, unmatched %+v", w, rep.Warnings, rep.Unmatched)
					}
					got, err := json.Marshal(rep)
					if err != nil {
						t.Fatal(err)
					}
					if w == 1 {
						want = got
						sameDistReport(t, dir, rep)
					} else if !bytes.Equal(got, want) {
						t.Errorf("%d workers: report differs from 1 worker's:\n%s\n%s", w, got, want)
					}
				}
			})
		}
	}
}
