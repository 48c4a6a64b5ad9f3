package analyzer

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// TestUnreceivedNamed: messages sent and never received are named by
// sender, receiver, tag and the call site of the first: rank 0 sends two
// messages with tag 7 to rank 1 and rank 1 one with tag 3 to rank 0;
// nobody receives them.
func TestUnreceivedNamed(t *testing.T) {
	run, ranks := start(2)
	ranks[0].Send(1, 7, 8, us).Send(1, 7, 8, us)
	ranks[1].Send(0, 3, 8, us)
	for _, r := range ranks {
		r.Barrier(ms).Finalize(us)
	}
	rep := analyzeRun(t, run)
	srcOf := func(rank int) int {
		for _, s := range rep.Intervals[0].SRC {
			if s.Function == "MPI_Send" && slices.ContainsFunc(s.Ranks, func(r report.SRCRank) bool { return r.Rank == rank }) {
				return s.ID
			}
		}
		t.Fatalf("no MPI_Send of rank %d", rank)
		return 0
	}
	for _, want := range []string{
		fmt.Sprintf("Rank 0: 2 messages to rank 1 with tag 7 never received in the traces, sent by MPI_Send [SRC %d].", srcOf(0)),
		fmt.Sprintf("Rank 1: 1 message to rank 0 with tag 3 never received in the traces, sent by MPI_Send [SRC %d].", srcOf(1)),
		"3 message(s) sent were never received in the traces.",
	} {
		if !slices.Contains(rep.Warnings, want) {
			t.Errorf("no warning %q in %q", want, rep.Warnings)
		}
	}
}

// TestUnreceivedAfterFinishNamed: a message sent to a rank whose replay
// had already finished (rank 1 ends right after it sent rank 0 the
// message rank 0 waits for, and rank 0 then sends it one that nobody
// receives) is named as the queued ones are, whichever replay ran first.
func TestUnreceivedAfterFinishNamed(t *testing.T) {
	run, ranks := start(2)
	ranks[1].Send(0, 1, 8, us).Finalize(us)
	ranks[0].Recv(1, 1, 8, ms).Send(1, 5, 8, us).Finalize(us)
	rep := analyzeRun(t, run)
	id := 0
	for _, s := range rep.Intervals[0].SRC {
		if s.Function == "MPI_Send" && slices.ContainsFunc(s.Ranks, func(r report.SRCRank) bool { return r.Rank == 0 }) {
			id = s.ID
		}
	}
	for _, want := range []string{
		fmt.Sprintf("Rank 0: 1 message to rank 1 with tag 5 never received in the traces, sent by MPI_Send [SRC %d].", id),
		"1 message(s) sent were never received in the traces.",
	} {
		if !slices.Contains(rep.Warnings, want) {
			t.Errorf("no warning %q in %q", want, rep.Warnings)
		}
	}
}

// TestPcontrolWarningPlaced: a warning about a misplaced MPI_Pcontrol
// names the call's source position (fakeSymbolizer: the module's base
// name and the offset's low bits as the line), and the same mistake on
// two ranks is one warning once grouped.
func TestPcontrolWarningPlaced(t *testing.T) {
	run, ranks := start(2)
	for _, r := range ranks {
		r.Pcontrol(101, 4, tracetest.Site("bad", 0x400042)) // leaves interval 4, never entered
		r.Barrier(ms).Finalize(us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, Symbolizer: fakeSymbolizer{}})
	if err != nil {
		t.Fatal(err)
	}
	// Line 0x42 = 66 of module /tmp/app.
	want := "Ranks 0, 1: app:66: MPI_Pcontrol(101, 4) leaves interval 4, which is not open; ignored."
	if got := report.GroupWarnings(rep.Warnings); !slices.Contains(got, want) {
		t.Errorf("no warning %q in %q", want, got)
	}
}
