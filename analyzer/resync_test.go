package analyzer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/memnet"
	"github.com/dtpa/dtpa/traceformat/tracepb"
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

// One copy of a distributed replay's instances ends the same whatever the
// order in which its members' records arrive (each member's in its
// order): process 1 of 4 replays rank 1; rank 0 lacks an MPI_Allreduce
// (its first call on the world here) and calls the MPI_Bcast that follows
// it, of which it is the root, so it leaves it at once and enters the
// MPI_Barrier after it before the others' MPI_Allreduce need come. In
// every order the MPI_Allreduce is instance 0, lacking rank 0, the
// MPI_Bcast instance 1 with rank 0's exit, the MPI_Barrier instance 2.
func TestResyncAnyArrivalOrder(t *testing.T) {
	world := []int32{0, 1, 2, 3}
	const comm = 0
	type ev struct {
		rank   int32
		enter  bool
		wire   uint64
		fn     string
		shape  tracepb.Function_Collective
		root   int32
		t, end int64
	}
	lacker := []ev{
		{rank: 0, enter: true, wire: 0, fn: "MPI_Bcast", shape: tracepb.Function_ONE_TO_ALL, root: 0, t: 1010},
		{rank: 0, wire: 0, end: 1011},
		{rank: 0, enter: true, wire: 1, fn: "MPI_Barrier", shape: tracepb.Function_ALL_TO_ALL, root: -1, t: 2000},
	}
	others := []ev{
		{rank: 1, enter: true, wire: 0, fn: "MPI_Allreduce", shape: tracepb.Function_ALL_TO_ALL, root: -1, t: 1000},
		{rank: 2, enter: true, wire: 0, fn: "MPI_Allreduce", shape: tracepb.Function_ALL_TO_ALL, root: -1, t: 1000},
		{rank: 3, enter: true, wire: 0, fn: "MPI_Allreduce", shape: tracepb.Function_ALL_TO_ALL, root: -1, t: 1000},
	}
	// state describes the copy's instances by key.
	state := func(x *exchange) string {
		var keys []uint64
		for _, in := range x.colls.all() {
			keys = append(keys, in.key.seq)
		}
		slices.Sort(keys)
		var b strings.Builder
		for _, s := range keys {
			in := x.colls.get(collKey{comm: comm, seq: s})
			fmt.Fprintf(&b, "%d %s:", s, in.fn)
			for i, sl := range in.slots {
				switch {
				case sl.gone:
					fmt.Fprintf(&b, " %d gone", in.members[i])
				case sl.hasExit:
					fmt.Fprintf(&b, " %d left", in.members[i])
				case sl.hasEntry:
					fmt.Fprintf(&b, " %d in", in.members[i])
				}
			}
			b.WriteString("; ")
		}
		return b.String()
	}
	const want = "0 MPI_Allreduce: 0 gone 1 in 2 in 3 in; 1 MPI_Bcast: 0 left; 2 MPI_Barrier: 0 in; "
	var orders func(a, b, acc []ev, f func([]ev))
	orders = func(a, b, acc []ev, f func([]ev)) {
		if len(a) == 0 && len(b) == 0 {
			f(acc)
			return
		}
		if len(a) > 0 {
			orders(a[1:], b, append(acc, a[0]), f)
		}
		for i := range b {
			rest := append(append([]ev(nil), b[:i]...), b[i+1:]...)
			orders(a, rest, append(acc, b[i]), f)
		}
	}
	n := 0
	orders(lacker, others, nil, func(seq []ev) {
		n++
		x := newExchange(4, []bool{true, true, true, true}, defaultLimits())
		net := memnet.New(4)
		d := newDist(x, net.Transport(1))
		d.memIn[memKey{comm: comm, first: 0, n: 4}] = world
		for _, e := range seq {
			k := collKey{comm: comm, seq: e.wire}
			switch {
			case e.rank == 1:
				x.collEnterLocked(&collCall{key: k, fn: e.fn, shape: e.shape, root: e.root, members: world, idx: 1, me: 1, entry: e.t})
			case e.enter:
				d.enterRemote(&collRec{key: k, idx: int(e.rank), rank: e.rank, t: e.t, fn: e.fn, shape: e.shape, root: e.root, first: 0, n: 4})
			default:
				d.exitRemote(&collRec{key: k, idx: int(e.rank), rank: e.rank, t: e.end})
			}
		}
		if d.err != nil {
			t.Fatal(d.err)
		}
		if got := state(x); got != want {
			var order []string
			for _, e := range seq {
				order = append(order, fmt.Sprintf("%d:%s/%v", e.rank, e.fn, e.enter))
			}
			t.Errorf("order %v:\n%s\nwant\n%s", order, got, want)
		}
	})
	if n != 120 {
		t.Fatalf("%d orders", n)
	}
}
