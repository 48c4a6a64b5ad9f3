package report

import (
	"slices"
	"strings"
	"testing"
)

func secsP(v float64) *float64 { return &v }

// UnfinishedLines groups by function, place and thread, lists the ranks
// as ranges and the times they are known for, or known to have lasted at
// least.
func TestUnfinishedLines(t *testing.T) {
	cs := []UnfinishedCall{
		{Rank: 3, Function: "MPI_Recv", File: "/src/hang.c", Line: 20, Seconds: secsP(3.880)},
		{Rank: 0, Function: "MPI_Barrier", File: "/src/hang.c", Line: 18},
		{Rank: 1, Function: "MPI_Recv", File: "/src/hang.c", Line: 20, Seconds: secsP(3.877)},
		{Rank: 2, Function: "MPI_Recv", File: "/src/hang.c", Line: 20},
		{Rank: 5, Function: "MPI_Recv", File: "/src/hang.c", Line: 20, Seconds: secsP(3.9)},
		{Rank: 4, Thread: 2, Function: "MPI_Wait", Seconds: secsP(1)},
		{Rank: 6, Thread: 2, Function: "MPI_Wait", Seconds: secsP(1.0001)}, // the same in ms
		{Rank: 1, Function: "MPI_Probe", Seconds: secsP(2.5), AtLeast: true},
		{Rank: 2, Function: "MPI_Probe", Seconds: secsP(2.25), AtLeast: true},
		{Rank: 1, Function: "MPI_Send", Seconds: secsP(2.5), AtLeast: true},
		{Rank: 2, Function: "MPI_Send", Seconds: secsP(2.75)},
		{Rank: 3, Function: "MPI_Send"},
	}
	want := []string{
		"MPI_Recv at hang.c:20: ranks 1-3, 5, for 3.877–3.900 s (1 of them for an unknown time)",
		"MPI_Barrier at hang.c:18: rank 0",
		"MPI_Wait (thread 2): ranks 4, 6, for 1.000 s",
		"MPI_Probe: ranks 1, 2, for at least 2.250–2.500 s (until the job was interrupted)",
		"MPI_Send: ranks 1-3, for 2.500–2.750 s (1 of them at least, until the job was interrupted; 1 of them for an unknown time)",
	}
	if got := UnfinishedLines(cs); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each line's calls, for a page to find them in its timeline.
	if g := UnfinishedGroups(cs); len(g) != len(want) || !slices.Equal(g[0].Calls, [][2]int{{3, 0}, {1, 0}, {2, 0}, {5, 0}}) ||
		!slices.Equal(g[2].Calls, [][2]int{{4, 2}, {6, 2}}) {
		t.Errorf("groups %+v", g)
	}
	if got := UnfinishedLines(nil); len(got) != 0 {
		t.Errorf("no calls: %q", got)
	}
}

// The verdict of a run that ended inside MPI calls says so first, naming
// at most three places; one that did not is the recipe's alone.
func TestFindingsUnfinished(t *testing.T) {
	r := &Report{Intervals: []Interval{{Main: Main{TotalTime: 2, LostTime: 1}, Ranks: []Rank{{}, {}}}}}
	plain := FindingsOf(r).Verdict
	for i, fn := range []string{"MPI_Recv", "MPI_Send", "MPI_Wait", "MPI_Barrier", "MPI_Bcast"} {
		r.Unfinished = append(r.Unfinished, UnfinishedCall{Rank: i, Function: fn})
	}
	want := "The processes ended inside MPI calls that never returned, whose time no figure holds (MPI_Recv: rank 0; " +
		"MPI_Send: rank 1; MPI_Wait: rank 2; and 2 more). " + plain
	if got := FindingsOf(r).Verdict; got != want {
		t.Errorf("verdict\n%s\nwant\n%s", got, want)
	}
}
