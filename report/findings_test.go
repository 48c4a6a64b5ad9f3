package report

import (
	"cmp"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// twoRanks is an interval of two processors of 1 s each: rank 0 spends
// 0.1 s in MPI_Send (SRC 4, b.c:20), rank 1 0.5 s in MPI_Recv (SRC 3,
// a.c:10) of which 0.4 s waiting for rank 0's late send. Derive gives:
// Communications 0.1 and 0.5, Lost 0.6 of Total 2.0 (30 %), Productive
// 0.9 and 0.5, Load imbalance 0 and 0.4 (20 % of Total).
func twoRanks(path []int, exec float64) Interval {
	iv := Interval{Path: path, Level: len(path), SourceFile: "/src/main.c", Line: 5}
	if len(path) > 0 {
		iv.Number = path[len(path)-1]
	}
	iv.Ranks = []Rank{
		{Rank: 0, ExeCount: 1, ExecutionTime: exec, SendRecvTime: 0.1, SendNumber: 1},
		{Rank: 1, ExeCount: 1, ExecutionTime: exec, SendRecvTime: 0.5, RealSync: 0.4, ReceiveNumber: 1},
	}
	iv.SRC = []SRC{
		{ID: 3, Function: "MPI_Recv", Stack: []Frame{{"main", "/src/a.c", 10}},
			Ranks: []SRCRank{{Rank: 1, ExeCount: 1, ExeTime: 0.5, RealSync: 0.4}}},
		{ID: 4, Function: "MPI_Send", Stack: []Frame{{"MPI_Send", "", 0}, {"main", "/src/b.c", 20}},
			Ranks: []SRCRank{{Rank: 0, ExeCount: 1, ExeTime: 0.1}}},
	}
	for i := range iv.SRC {
		DeriveSRC(&iv.SRC[i])
	}
	iv.Waits = []Wait{{Kind: LateSender, WaitingRank: 1, LateRank: 0, Seconds: 0.4, Count: 1, WaitingSRC: 3, LateSRC: 4}}
	Derive(&iv)
	return iv
}

func TestFindings(t *testing.T) {
	// The whole program adds 0.2 s of computation per rank around
	// interval 1, whose 0.6 s of lost time is all the program's: the
	// findings are about interval 1. Interval 2 has no time.
	r := &Report{Intervals: []Interval{twoRanks(nil, 1.2), twoRanks([]int{1}, 1.0), {Path: []int{2}, Level: 1, Number: 2}}}
	f := FindingsOf(r)
	if f == nil {
		t.Fatal("no findings")
	}
	if !reflect.DeepEqual(f.Interval, []int{1}) {
		t.Errorf("interval %v, want [1]", f.Interval)
	}
	want := "Lost time is 30.0 % of total in interval 1 (main.c:5), mostly Real Sync in MPI_Recv at a.c:10; " +
		"rank 0 has the most productive work (Load imbalance 20.0 % of total)."
	if f.Verdict != want {
		t.Errorf("verdict\n%s\nwant\n%s", f.Verdict, want)
	}
	// The largest: rank 1's 0.4 s Real Sync (20 % of 2 s) caused by rank
	// 0; then the 0.1 s in MPI_Send of rank 0 and the 0.1 s rest of rank
	// 1's MPI_Recv (5 % each).
	wantLosses := []Loss{
		{Kind: LossRealSync, Rank: 1, Seconds: 0.4, Share: 0.2, SRC: 3, Function: "MPI_Recv", File: "/src/a.c", Line: 10, LateRank: 0},
		{Kind: LossCommunication, Rank: 0, Seconds: 0.1, Share: 0.05, SRC: 4, Function: "MPI_Send", File: "/src/b.c", Line: 20, LateRank: -1},
		{Kind: LossCommunication, Rank: 1, Seconds: 0.1, Share: 0.05, SRC: 3, Function: "MPI_Recv", File: "/src/a.c", Line: 10, LateRank: -1},
	}
	if len(f.Losses) != len(wantLosses) {
		t.Fatalf("losses %+v", f.Losses)
	}
	for i, l := range f.Losses {
		w := wantLosses[i]
		if math.Abs(l.Seconds-w.Seconds) > 1e-12 || math.Abs(l.Share-w.Share) > 1e-12 {
			t.Errorf("loss %d: %v s, share %v; want %v, %v", i, l.Seconds, l.Share, w.Seconds, w.Share)
		}
		l.Seconds, l.Share = w.Seconds, w.Share
		if l != w {
			t.Errorf("loss %d: %+v\nwant %+v", i, l, w)
		}
	}
}

// TestFindingsFocus: a nested interval holding less than half of its
// parent's lost time is not the focus; the verdict is then about the
// parent, without interval.
func TestFindingsFocus(t *testing.T) {
	small := twoRanks([]int{1}, 1.0)
	small.Ranks[1].SendRecvTime, small.Ranks[1].RealSync = 0.15, 0.1 // lost 0.25 of the program's 0.6
	Derive(&small)
	f := FindingsOf(&Report{Intervals: []Interval{twoRanks(nil, 1.2), small}})
	if len(f.Interval) != 0 {
		t.Errorf("interval %v, want the whole program", f.Interval)
	}
	// 0.6 of 2.4 s.
	want := "Lost time is 25.0 % of total, mostly Real Sync in MPI_Recv at a.c:10; rank 0 has the most productive work (Load imbalance 16.7 % of total)."
	if f.Verdict != want {
		t.Errorf("verdict\n%s\nwant\n%s", f.Verdict, want)
	}
}

// TestFindingsIdle: one rank computing 1 s, the other 0.5 s: the loss is
// the shorter rank's Idle time, the longest rank named.
func TestFindingsIdle(t *testing.T) {
	iv := Interval{Path: []int{}, Ranks: []Rank{{Rank: 0, ExeCount: 1, ExecutionTime: 0.5}, {Rank: 1, ExeCount: 1, ExecutionTime: 1}}}
	Derive(&iv)
	f := FindingsOf(&Report{Intervals: []Interval{iv}})
	// Lost 0.5 (rank 0's idle) of 2 s; Load imbalance 0.5 (25 %).
	want := "Lost time is 25.0 % of total, mostly Idle time: rank 1 runs longest and the others wait for it to finish; " +
		"rank 1 has the most productive work (Load imbalance 25.0 % of total)."
	if f.Verdict != want {
		t.Errorf("verdict\n%s\nwant\n%s", f.Verdict, want)
	}
	if len(f.Losses) != 1 || f.Losses[0].Kind != LossIdle || f.Losses[0].Rank != 0 || f.Losses[0].Seconds != 0.5 {
		t.Errorf("losses %+v", f.Losses)
	}
	if FindingsOf(&Report{}) != nil {
		t.Error("findings of a report without intervals")
	}
}

func TestGroupWarnings(t *testing.T) {
	got := GroupWarnings([]string{
		"Rank 2: tracing stopped early (SIZE_LIMIT); later events are missing.",
		"The run had 8 processes but traces of rank(s) 7 are missing.",
		"Rank 0: tracing stopped early (SIZE_LIMIT); later events are missing.",
		"Rank 1: the tracer dropped 5 events.",
		"Rank 1: tracing stopped early (SIZE_LIMIT); later events are missing.",
		"Rank 5: tracing stopped early (SIZE_LIMIT); later events are missing.",
		"The run had 8 processes but traces of rank(s) 7 are missing.",
		"Rank x: not a rank",
	})
	want := []string{
		"Ranks 0-2, 5: tracing stopped early (SIZE_LIMIT); later events are missing.",
		"The run had 8 processes but traces of rank(s) 7 are missing.",
		"Rank 1: the tracer dropped 5 events.",
		"Rank x: not a rank",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := Ranges([]int{0, 1, 3, 4, 5, 7}); got != "0, 1, 3-5, 7" {
		t.Errorf("Ranges = %q", got)
	}
}

// TestFindingsBalanced: two ranks waiting 0.1 s each for the other with
// equal work: Load imbalance 0, the load is called balanced.
func TestFindingsBalanced(t *testing.T) {
	iv := twoRanks(nil, 1.0)
	iv.Ranks[0].SendRecvTime, iv.Ranks[0].RealSync = 0.5, 0.4
	Derive(&iv)
	f := FindingsOf(&Report{Intervals: []Interval{iv}})
	// Lost 0.5 + 0.5 of 2 s; Real Sync 0.8 of SendRecv 1.0.
	want := "Lost time is 50.0 % of total, mostly Real Sync in MPI_Recv at a.c:10; the load is balanced (Load imbalance 0.0 % of total)."
	if f.Verdict != want {
		t.Errorf("verdict\n%s\nwant\n%s", f.Verdict, want)
	}
}

// TestLossesTopOrder: losses keeps the MaxLosses largest in the order a
// stable sort of all of them gives (ties by rank, call site, then the
// order added: real sync, potential sync, communication), on intervals
// with many equal losses.
func TestLossesTopOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		iv := Interval{Main: Main{TotalTime: 10}}
		for r := range 1 + rng.IntN(4) {
			iv.Ranks = append(iv.Ranks, Rank{Rank: r, IdleTime: float64(rng.IntN(3)), InsufficientParallelism: float64(rng.IntN(3))})
		}
		for id := range rng.IntN(5) {
			s := SRC{ID: 1 + id, Function: "MPI_Recv"}
			for r := range len(iv.Ranks) {
				rs, ps := float64(rng.IntN(3)), float64(rng.IntN(3))
				s.Ranks = append(s.Ranks, SRCRank{Rank: r, RealSync: rs, PotentialSync: ps, ExeTime: rs + ps + float64(rng.IntN(3))})
			}
			iv.SRC = append(iv.SRC, s)
		}
		var all []Loss
		for _, s := range iv.SRC {
			for _, sr := range s.Ranks {
				at := Loss{Rank: sr.Rank, SRC: s.ID, Function: s.Function, LateRank: -1}
				for _, l := range []Loss{{Kind: LossRealSync, Seconds: sr.RealSync}, {Kind: LossPotentialSync, Seconds: sr.PotentialSync}, {Kind: LossCommunication, Seconds: sr.ExeTime - sr.RealSync - sr.PotentialSync}} {
					at.Kind, at.Seconds = l.Kind, l.Seconds
					if at.Seconds > 0 {
						at.Share = at.Seconds / iv.Main.TotalTime
						all = append(all, at)
					}
				}
			}
		}
		for _, rk := range iv.Ranks {
			for _, l := range []Loss{{Kind: LossIdle, Rank: rk.Rank, Seconds: rk.IdleTime, LateRank: -1}, {Kind: LossInsufficient, Rank: rk.Rank, Seconds: rk.InsufficientParallelism, LateRank: -1}} {
				if l.Seconds > 0 {
					l.Share = l.Seconds / iv.Main.TotalTime
					all = append(all, l)
				}
			}
		}
		slices.SortStableFunc(all, func(a, b Loss) int {
			return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.SRC, b.SRC))
		})
		if len(all) > MaxLosses {
			all = all[:MaxLosses]
		}
		if got := losses(&iv); !reflect.DeepEqual(got, all) {
			t.Fatalf("trial %d: losses %+v, want %+v", trial, got, all)
		}
	}
}

// TestLossesLateRank compares the losses' late ranks with the waits
// summed by waiting rank, call site and kind for every processor and call
// site (the partner with the most seconds, the lowest of those tied; -1
// for none with positive seconds), on random intervals whose waits repeat
// keys, tie and cancel out.
func TestLossesLateRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []string{LateSender, LateReceiver, WrongOrder, "early_reduce", "late_broadcast", "wait_at_barrier"}
	for trial := range 2000 {
		iv := Interval{Main: Main{TotalTime: 10}}
		nr := 1 + rng.IntN(4)
		for r := range nr {
			iv.Ranks = append(iv.Ranks, Rank{Rank: r, IdleTime: float64(rng.IntN(2))})
		}
		for id := range 1 + rng.IntN(4) {
			s := SRC{ID: 1 + id, Function: "MPI_Recv", Stack: []Frame{{"main", "a.c", id}}}
			for r := range nr {
				rs, ps := float64(rng.IntN(4)), float64(rng.IntN(4))
				s.Ranks = append(s.Ranks, SRCRank{Rank: r, RealSync: rs, PotentialSync: ps, ExeTime: rs + ps + float64(rng.IntN(2))})
			}
			iv.SRC = append(iv.SRC, s)
		}
		for range rng.IntN(30) {
			iv.Waits = append(iv.Waits, Wait{Kind: kinds[rng.IntN(len(kinds))], WaitingRank: rng.IntN(nr), LateRank: rng.IntN(nr),
				Seconds: float64(rng.IntN(5)-1) / 4, WaitingSRC: rng.IntN(6)})
		}
		type key struct {
			rank, src int
			p2p       bool
		}
		late := map[key]map[int]float64{}
		for _, w := range iv.Waits {
			k := key{w.WaitingRank, w.WaitingSRC, IsP2PWait(w.Kind)}
			if late[k] == nil {
				late[k] = map[int]float64{}
			}
			late[k][w.LateRank] += w.Seconds
		}
		got := losses(&iv)
		for _, l := range got {
			want := -1
			if l.Kind == LossRealSync || l.Kind == LossPotentialSync {
				want = lateRank(late[key{l.Rank, l.SRC, l.Kind == LossRealSync}])
			}
			if l.LateRank != want {
				t.Fatalf("trial %d: loss %+v: late rank %d, want %d (waits %+v)", trial, l, l.LateRank, want, iv.Waits)
			}
		}
	}
}

// TestFindingsCaller: call sites of a program built without -g (frames
// named from the symbol table, func+0xOFF) are named by the function they
// were called from, in the verdict and the losses; a frame with a file
// deeper in the stack keeps file:line instead.
func TestFindingsCaller(t *testing.T) {
	iv := twoRanks(nil, 1.0)
	iv.SRC[0].Stack = []Frame{{"LAMMPS_NS::CommBrick::reverse_comm+0x2bb", "", 0}, {"LAMMPS_NS::Verlet::run+0x375", "", 0}}
	r := &Report{Intervals: []Interval{iv}}
	f := FindingsOf(r)
	if want := "mostly Real Sync in MPI_Recv from LAMMPS_NS::CommBrick::reverse_comm;"; !strings.Contains(f.Verdict, want) {
		t.Errorf("verdict %q lacks %q", f.Verdict, want)
	}
	if l := f.Losses[0]; l.SRC != 3 || l.Caller != "LAMMPS_NS::CommBrick::reverse_comm" || l.File != "" {
		t.Errorf("largest loss %+v, want SRC 3 from LAMMPS_NS::CommBrick::reverse_comm", l)
	}
	if l := f.Losses[1]; l.SRC != 4 || l.Caller != "" || l.File != "/src/b.c" {
		t.Errorf("second loss %+v, want SRC 4 at /src/b.c and no caller", l)
	}
	for _, c := range []struct {
		stack []Frame
		want  string
	}{
		{nil, ""},
		{[]Frame{{"libfoo.so+0x1c0", "", 0}}, "libfoo.so"},
		{[]Frame{{"helper", "", 0}}, "helper"},
		{[]Frame{{"helper+0x10", "", 0}, {"main", "/src/m.c", 3}}, ""},
	} {
		if got := Caller(&SRC{Stack: c.stack}); got != c.want {
			t.Errorf("Caller(%v) = %q, want %q", c.stack, got, c.want)
		}
	}
}
