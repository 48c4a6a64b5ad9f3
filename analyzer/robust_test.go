package analyzer

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

func TestNoTraces(t *testing.T) {
	dir := t.TempDir()
	_, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "app.<rank>.trc") {
		t.Fatalf("error %v should name the directory and the pattern", err)
	}
}

// TestMixedRunsRefused: traces of two runs, neither of them whole, are
// refused, naming each file's run.
func TestMixedRunsRefused(t *testing.T) {
	dir := t.TempDir()
	a := lateSender()
	if _, err := a.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	b := lateSender()
	b.RunID = []byte("another run.....")
	data, err := b.Bytes(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.1.trc"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
	if err == nil || !strings.Contains(err.Error(), "app.0.trc") || !strings.Contains(err.Error(), "app.1.trc") ||
		!strings.Contains(err.Error(), "different runs") {
		t.Fatalf("error %v should refuse mixed runs and name the files", err)
	}
}

// TestOverwrittenRun: a run of 2 ranks wrote app.0.trc and app.1.trc over
// those of an earlier run of 4, whose app.2.trc and app.3.trc remain. The
// whole run is analysed, as if it were alone, and the other files are
// named in a warning.
func TestOverwrittenRun(t *testing.T) {
	old := tracetest.NewRun(4)
	old.RunID = []byte("the earlier run.")
	for r := 0; r < 4; r++ {
		old.Rank(r).Init(1 * us).Compute(5 * ms).Barrier(10 * us).Finalize(1 * us)
	}
	dir, alone := t.TempDir(), t.TempDir()
	if _, err := old.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	run := lateSender()
	run.Start = time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for _, d := range []string{dir, alone} {
		if _, err := run.WriteDir(d, "app"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Analyze(context.Background(), Options{Dir: alone, App: "app", MaxLevel: -1, roundTrip: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 1 || !strings.HasPrefix(got.Warnings[0], "app.2.trc, app.3.trc are left from an earlier run (run 746865206561726c6965722072756e2e, 4 processes, started 2026-01-01 00:00:00 UTC)") ||
		!strings.Contains(got.Warnings[0], "left out. The run analysed is") || !strings.Contains(got.Warnings[0], "(2 processes, started 2026-01-01 00:01:00 UTC)") {
		t.Errorf("warnings %q", got.Warnings)
	}
	got.Warnings = want.Warnings
	if err := sameReport(got, want); err != nil {
		t.Errorf("the whole run analysed beside the other's files differs from it alone: %v", err)
	}
	rc, err := FindRun(dir, "app")
	if err != nil || rc.Size != 2 {
		t.Errorf("run clocks: size %v, %v; want the 2-rank run", rc, err)
	}
}

// A missing rank: its partners' operations are unmatched, nothing hangs.
func TestMissingRank(t *testing.T) {
	run := tracetest.NewRun(3)
	for i := 0; i < 3; i++ {
		run.Rank(i).Init(1 * us)
	}
	run.Rank(1).Send(2, 0, 8, 1*us)
	run.Rank(2).Recv(1, 0, 8, 1*ms)
	run.Rank(0).Send(2, 0, 8, 1*us)
	run.Rank(2).Recv(0, 0, 8, 1*ms)
	for i := 0; i < 3; i++ {
		run.Rank(i).Barrier(1 * ms).Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "app.1.trc"))
	rep := analyzeDir(t, dir)
	if !hasWarning(rep, "rank(s) 1 are missing") || !hasWarning(rep, "1 receive(s) found no matching send") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if rep.Processors != 3 || len(find(t, rep).Ranks) != 2 {
		t.Errorf("processors %d ranks %d", rep.Processors, len(find(t, rep).Ranks))
	}
	// The barrier lacks rank 1; rank 0's call (0.002 … 1.002 ms) waits
	// for rank 2's entry at 2.001 ms whichever replay got there first: a
	// clock-condition violation of 0.999 ms, and Potential Sync 1.999 ms.
	if !hasWarning(rep, "1 clock-condition violation(s) found after clock alignment (the worst, 0.000999000 s, on rank 0)") ||
		!hasWarning(rep, "Collective MPI_Barrier (call 1 on MPI_COMM_WORLD) lacks rank(s) 1 (their traces end before it") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	expect(t, "rank 0 Potential Sync", rank(t, find(t, rep), 0).PotentialSync, 0.001999)
	expect(t, "rank 2 Potential Sync", rank(t, find(t, rep), 2).PotentialSync, 0)
}

// A rank cut short (no footer, or a partial last frame): the intact prefix
// is analysed, the damage reported with file, rank and offset, and its
// partners do not wait forever.
func TestTruncatedRank(t *testing.T) {
	build := func() *tracetest.Run {
		run := tracetest.NewRun(2)
		for i := 0; i < 2; i++ {
			run.Rank(i).Init(1 * us)
		}
		run.Rank(0).Compute(10*ms).Send(1, 0, 8, 1*us)
		run.Rank(1).Recv(0, 0, 8, 20*ms)
		for k := 0; k < 5; k++ {
			for i := 0; i < 2; i++ {
				run.Rank(i).Barrier(1 * ms)
			}
		}
		for i := 0; i < 2; i++ {
			run.Rank(i).Finalize(1 * us)
		}
		return run
	}
	run := build()
	run.Rank(1).Crash()
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "Rank 1") || !hasWarning(rep, "truncated") || !hasWarning(rep, "byte offset") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	expect(t, "Real Sync of the intact prefix", rank(t, find(t, rep), 1).RealSync, 0.01)

	// Cut inside the last frame: rank 0 loses its events after the
	// first batch, i.e. all of them; rank 1 waits for nothing forever.
	dir := t.TempDir()
	paths, err := build().WriteDir(dir, "app")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(paths[0])
	if err := os.WriteFile(paths[0], data[:len(data)-30], 0o644); err != nil {
		t.Fatal(err)
	}
	rep = analyzeDir(t, dir)
	if !hasWarning(rep, "Rank 0") || !hasWarning(rep, "truncated") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}

// Corrupted and random files never make Analyze panic or hang.
func TestCorruptTracesNeverPanic(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	base := mixed()
	var files [][]byte
	for i := 0; i < base.Size(); i++ {
		d, err := base.Bytes(i)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, d)
	}
	for iter := 0; iter < 60; iter++ {
		dir := t.TempDir()
		for i, d := range files {
			d = append([]byte(nil), d...)
			switch iter % 4 {
			case 0: // flip bytes
				for k := 0; k < 1+rng.Intn(8); k++ {
					d[rng.Intn(len(d))] ^= byte(1 + rng.Intn(255))
				}
			case 1: // cut
				d = d[:rng.Intn(len(d))]
			case 2: // random garbage with a valid preamble
				g := make([]byte, rng.Intn(200))
				rng.Read(g)
				d = append(d[:12:12], g...)
			case 3: // drop a rank
				if i == iter%base.Size() {
					continue
				}
			}
			os.WriteFile(filepath.Join(dir, "app."+itoa(i)+".trc"), d, 0o644)
		}
		rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
		if err != nil {
			continue // a clear error is fine
		}
		if rep == nil {
			t.Fatal("nil report without error")
		}
		for _, w := range rep.Warnings {
			if strings.Contains(w, "internal error") {
				t.Errorf("iteration %d: %s", iter, w)
			}
		}
	}
}

// Unknown format versions are a clear error.
func TestUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	paths, err := lateSender().WriteDir(dir, "app")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(paths[1])
	data[8] = 9 // major version 9
	os.WriteFile(paths[1], data, 0o644)
	_, err = Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
	if err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("error %v", err)
	}
	_ = errors.New
}

// Traces that disagree (each rank receives first, from the other): the
// replay stalls, reports it and goes on (releasing rank 0, the lowest,
// is enough here: its send then satisfies rank 1). Rank 1's receive
// (0 … 1 ms) gets Real Sync up to rank 0's send, entered at 1 ms.
func TestInconsistentTracesStall(t *testing.T) {
	run, ranks := start(2)
	for i, r := range ranks {
		r.Recv(int32(1-i), 0, 8, 1*ms)
		r.Send(int32(1-i), 0, 8, 1*us)
		r.Barrier(1 * ms)
		r.Finalize(1 * us)
	}
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "stalled") || !hasWarning(rep, "1 receive(s) found no matching send") || !hasWarning(rep, "1 message(s) sent were never received") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if find(t, rep).Main.CollectiveNumber != 1 {
		t.Errorf("the barrier after the stall was not replayed")
	}
	expect(t, "Real Sync of rank 0", rank(t, find(t, rep), 0).RealSync, 0)
	expect(t, "Real Sync of rank 1", rank(t, find(t, rep), 1).RealSync, 0.001)
}

// A ring whose every rank receives before it sends (traces that disagree
// with any real run) stalls once: the scheduler makes the replay of the
// lowest rank give up its receive, its send then satisfies the next rank,
// and so on around the ring; with any number of workers exactly one
// receive, rank 0's, is unmatched and one message left over.
func TestRingStallReleasesOne(t *testing.T) {
	const n = 8
	run := tracetest.NewRun(n)
	for i := 0; i < n; i++ {
		r := run.Rank(i)
		r.Init(1 * us)
		r.Recv(int32((i+n-1)%n), 0, 8, 1*ms)
		r.Send(int32((i+1)%n), 0, 8, 1*us)
		r.Barrier(1 * ms)
		r.Finalize(1 * us)
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 2, 5} {
		rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if !hasWarning(rep, "stalled 1 time(s)") || !hasWarning(rep, "1 receive(s) found no matching send") || !hasWarning(rep, "1 message(s) sent were never received") {
			t.Errorf("%d workers: warnings %q", w, rep.Warnings)
		}
		if got := find(t, rep).Main.ReceiveNumber; got != n {
			t.Errorf("%d workers: %d receives, want %d", w, got, n)
		}
		if find(t, rep).Main.CollectiveNumber != 1 {
			t.Errorf("%d workers: the barrier after the stall was not replayed", w)
		}
		want := report.Unmatched{Receives: 1, Sends: 1, Stalls: 1}
		if un := rep.Unmatched; un == nil || *un != want {
			t.Errorf("%d workers: unmatched %+v, want %+v", w, un, want)
		}
		// Rank 0, the lowest, gave up its receive; every other
		// receive (1 µs … 1.001 ms) waited for its send, entered
		// at 1.001 ms.
		for r := 0; r < n; r++ {
			want := 0.001
			if r == 0 {
				want = 0
			}
			expect(t, itoa(w)+" workers: Real Sync of rank "+itoa(r), rank(t, find(t, rep), r).RealSync, want)
		}
	}
}

// Collective calls that disagree between ranks are reported. Both are
// entered at the same time, so the call of the higher rank is taken as
// the one ahead (resync.go): rank 1 lacks the MPI_Barrier (call 1), rank 0
// the MPI_Allreduce (call 2), whichever replay ran first, and in a
// distributed replay over 1 to 4 processes.
func TestCollectiveMismatch(t *testing.T) {
	run := tracetest.NewRun(2)
	run.Rank(0).Init(1 * us).Barrier(1 * ms).Finalize(1 * us)
	run.Rank(1).Init(1*us).Allreduce(8, 1*ms).Finalize(1 * us)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep := analyzeDir(t, dir)
	sameDistReport(t, dir, rep)
	if !hasWarning(rep, "2 collective call(s) could not be matched") ||
		!hasWarning(rep, "Collective MPI_Barrier (call 1 on MPI_COMM_WORLD) lacks rank(s) 1 (the members' calls disagree on the function") ||
		!hasWarning(rep, "Collective MPI_Allreduce (call 2 on MPI_COMM_WORLD) lacks rank(s) 0 ") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}

// TestCollectiveCommSizeMismatch: traces that define one communicator id
// with different members (rank 1's has three, those of ranks 0 and 2 two)
// give the same figures and warnings whatever the number of workers, which
// changes the order the ranks reach the instance in: each definition makes
// an instance of its own (collKey.n).
func TestCollectiveCommSizeMismatch(t *testing.T) {
	run := tracetest.NewRun(3)
	pair := run.NewComm(0, 2)
	all := run.NewComm(0, 1, 2)
	all.ID = pair.ID
	// Ranks 0 and 2 meet in the pair's barrier (rank 0 waits 3 ms for
	// rank 2), rank 1 waits alone in its own definition's; all meet
	// again in MPI_COMM_WORLD's barrier at 4.002 ms, where rank 1 waits
	// 3 ms. Every rank is then parked: the stall gives up the lowest
	// ranks' waits (ranks 0 and 2 in MPI_COMM_WORLD's barrier), which
	// leaves rank 1's own barrier and MPI_COMM_WORLD's unmatched.
	run.Rank(0).Init(1*us).CommSplit(run.World(), pair, 1*us).Barrier(4*ms, tracetest.On(pair)).Barrier(1 * ms).Finalize(1 * us)
	run.Rank(1).Init(1*us).CommSplit(run.World(), all, 1*us).Barrier(1*ms, tracetest.On(all)).Barrier(4 * ms).Finalize(1 * us)
	run.Rank(2).Init(1*us).CommSplit(run.World(), pair, 1*us).Compute(3*ms).Barrier(1*ms, tracetest.On(pair)).Barrier(1 * ms).Finalize(1 * us)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Collective MPI_Barrier (call 1 on MPI_COMM_WORLD) lacks rank(s) 0, 2 (their traces end before it, or they never made the call); its Potential Sync and Time Variation are counted over the ranks present, a lower bound.",
		"2 collective call(s) could not be matched with all participants of their communicator.",
		"The replay stalled 2 time(s) because the traces disagree on which operations match; each time one waiting operation was given up and is reported unmatched.",
	}
	for _, workers := range []int{1, 2, 3} {
		for range 5 {
			rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: workers})
			if strings.Join(rep.Warnings, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%d workers: warnings %q, want %q", workers, rep.Warnings, want)
			}
			iv := find(t, rep)
			expect(t, "Potential Sync of rank 0", rank(t, iv, 0).PotentialSync, 3e-3)
			expect(t, "Potential Sync of rank 1", rank(t, iv, 1).PotentialSync, 3e-3)
			expect(t, "Potential Sync of rank 2", rank(t, iv, 2).PotentialSync, 0)
		}
	}
}

// Traces that define one communicator (one id, its first member and size)
// with its members in different orders: rank 2's definition puts it second,
// where ranks 0 and 1 have rank 1, so that rank 2's call meets the members'
// instance while it is open at a slot already taken and is refused there
// (collEnterLocked's mismatch); on one worker, whose replay order is fixed,
// that happens on the worker's stack (exchange.collStep), which analyzeOpts
// compares with the coroutines' replay and the distributed one. (With
// several workers which calls are refused depends on the order: there is
// no right match for such traces.) The stray call is counted unmatched, the
// members' waits are counted, and the warning says what happened instead of
// listing no missing rank.
func TestCollectiveCommMembersDisagree(t *testing.T) {
	run := tracetest.NewRun(4)
	mine := run.NewComm(0, 1, 2)
	other := run.NewComm(0, 2, 1)
	other.ID = mine.ID
	// Rank 1 enters at 1.002 ms and takes the slot rank 2's definition
	// gives rank 2, which comes at 3.002 ms and is refused; rank 0 waits
	// 1 ms for rank 1, the member present.
	run.Rank(0).Init(1*us).CommSplit(run.World(), mine, 1*us).Barrier(4*ms, tracetest.On(mine)).Finalize(1 * us)
	run.Rank(1).Init(1*us).CommSplit(run.World(), mine, 1*us).Compute(1*ms).Barrier(3*ms, tracetest.On(mine)).Finalize(1 * us)
	run.Rank(2).Init(1*us).CommSplit(run.World(), other, 1*us).Compute(3*ms).Barrier(1*ms, tracetest.On(other)).Finalize(1 * us)
	run.Rank(3).Init(1 * us).Compute(4 * ms).Finalize(1 * us)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	rep := analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: 1})
	if want := []string{
		"Collective MPI_Barrier (call 1 on communicator 0x3e8 of world rank(s) 0-2) lacks rank(s) 2 (the members' calls disagree on the function, the root or the communicator's members); its Potential Sync and Time Variation are counted over the ranks present, a lower bound.",
		"3 collective call(s) could not be matched with all participants of their communicator.",
	}; strings.Join(rep.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings %q, want %q", rep.Warnings, want)
	}
	iv := find(t, rep)
	expect(t, "Potential Sync of rank 0", rank(t, iv, 0).PotentialSync, 1e-3)
	expect(t, "Potential Sync of rank 1", rank(t, iv, 1).PotentialSync, 0)
	expect(t, "Potential Sync of rank 2", rank(t, iv, 2).PotentialSync, 0)
}

func TestCancelled(t *testing.T) {
	dir := t.TempDir()
	if _, err := mixed().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Analyze(ctx, Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// FuzzAnalyze mutates one rank's file of a consistent run: Analyze must
// neither panic (an "internal error") nor hang.
func FuzzAnalyze(f *testing.F) {
	run := mixed()
	var files [][]byte
	for i := 0; i < run.Size(); i++ {
		d, err := run.Bytes(i)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, d)
	}
	f.Add(files[1])
	f.Add(files[1][:len(files[1])/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for i, d := range files {
			if i == 1 {
				d = data
			}
			if err := os.WriteFile(filepath.Join(dir, "app."+itoa(i)+".trc"), d, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		_, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Minute { // a hang, not slowness: CI machines are loaded
			t.Fatalf("analysis took %v", d)
		}
	})
}

// Damage in the middle of a file (found by the replay, not by the first
// pass, which seeks over event batches) is reported with its offset, and
// the intact prefix analysed.
func TestCorruptBatch(t *testing.T) {
	run := tracetest.NewRun(1)
	r := run.Rank(0)
	r.Init(1 * us)
	for i := 0; i < 10000; i++ {
		r.Compute(int64(1+i%7) * us).Barrier(1 * us)
	}
	r.Finalize(1 * us)
	dir := t.TempDir()
	paths, err := run.WriteDir(dir, "app")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(paths[0])
	data[len(data)*9/10] ^= 0xff // inside the last batch
	os.WriteFile(paths[0], data, 0o644)
	rep := analyzeDir(t, dir)
	if !hasWarning(rep, "Rank 0: "+paths[0]) || !hasWarning(rep, "byte offset") || !hasWarning(rep, "corrupt") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if n := find(t, rep).Main.CollectiveNumber; n < 1000 || n >= 10000 {
		t.Errorf("%d barriers analysed; want the intact prefix", n)
	}
}

// Files of one run id that disagree on the world size are refused.
func TestWorldSizeDisagreement(t *testing.T) {
	dir := t.TempDir()
	a := lateSender()
	if _, err := a.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	b := mixed() // three ranks
	b.RunID = a.RunID
	data, err := b.Bytes(2)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "app.2.trc"), data, 0o644)
	_, err = Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
	if err == nil || !strings.Contains(err.Error(), "inconsistent") {
		t.Fatalf("error %v", err)
	}
}

// Sparse ids (far beyond the number of definitions) would make tables
// indexed by id huge: the reader refuses them (trace.proto: ids are dense),
// and the analysis says which file and where, without a panic.
func TestLargeIDs(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "app.0.trc"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := traceformat.NewWriter(f, &tracepb.Header{Rank: 0, WorldSize: 1, RunId: []byte("x"), Program: "/p/app"},
		traceformat.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const fi, fb, ff, site, comm = 1 << 20, 1<<20 + 1, 1<<20 + 2, 1<<23 + 5, 1<<22 + 3
	defs := &tracepb.Definitions{
		Functions: []*tracepb.Function{mpifunc.Function(fi, "MPI_Init"), mpifunc.Function(fb, "MPI_Barrier"), mpifunc.Function(ff, "MPI_Finalize")},
		CallSites: []*tracepb.CallSite{{Id: site, Pcs: []uint64{0x401000}}},
		Communicators: []*tracepb.Communicator{{Local: 0, Id: 0, Members: []uint32{0}},
			{Local: comm, Id: 77, Members: []uint32{0}}},
	}
	if err := w.WriteDefinitions(defs); err != nil {
		t.Fatal(err)
	}
	var b traceformat.Builder
	for _, e := range []traceformat.Event{
		{Func: fi, Site: site, Entry: 0, Exit: 1000},
		{Func: fb, Site: site, Entry: 2000, Exit: 5000, Attr: traceformat.AttrComm, Comm: comm},
		{Func: ff, Site: site, Entry: 9000, Exit: 9500},
	} {
		b.Append(&e)
	}
	if err := w.WriteBatch(&b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(&tracepb.Footer{EventCount: 3, StopReason: tracepb.Footer_FINALIZE}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "app", MaxLevel: -1, roundTrip: true})
	if err == nil {
		if !hasWarning(rep, "too large") {
			t.Errorf("warnings %q", rep.Warnings)
		}
	} else if !strings.Contains(err.Error(), "too large") {
		t.Errorf("error %v", err)
	}
}

// Calls of other threads are left out, with a warning.
func TestOtherThreads(t *testing.T) {
	run := lateSender()
	run.Rank(1).Call("MPI_Comm_rank", 5*us, traceformat.Event{Thread: 1})
	rep := analyzeRun(t, run)
	if !hasWarning(rep, "Rank 1: 1 calls made by threads other") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	expect(t, "Real Sync", rank(t, find(t, rep), 1).RealSync, 0.2)
}

// A larger run (32 ranks, ring and allreduces) with one rank missing and
// one cut in the middle still finishes, with warnings.
func TestLargeRunWithDamage(t *testing.T) {
	dir := t.TempDir()
	if _, err := genBench(dir, 32, 6000); err != nil { // two batches per rank
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "bench.17.trc"))
	p := filepath.Join(dir, "bench.20.trc")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, data[:len(data)*3/4], 0o644) // inside the second batch
	p = filepath.Join(dir, "bench.25.trc")
	data, _ = os.ReadFile(p)
	os.WriteFile(p, data[:len(data)/4], 0o644) // inside the first: no event left
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "bench", MaxLevel: -1, roundTrip: true})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, rep)
	if !hasWarning(rep, "rank(s) 17 are missing") || !hasWarning(rep, "Rank 20") || !hasWarning(rep, "Rank 25") ||
		!hasWarning(rep, "no matching send") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	// Rank 25 has no event left: it is in no interval.
	if n := len(find(t, rep).Ranks); n != 30 {
		t.Errorf("%d ranks in the report, want 30", n)
	}
}

// A nonblocking collective recorded without its request (as a converted
// trace may have it) completes at its start: it gives and takes no
// Potential Sync, and the rank is warned about, never an internal error.
// Rank r computes r·10 ms, starts MPI_Ibarrier (1 µs, no request) at
// 0.001 + 10·r ms and enters MPI_Barrier at 0.002 + 10·r ms; every
// barrier returns at 30 ms. Barrier Potential Sync: latest entry 20.002
// ms − own entry = 20, 10, 0 ms; no Time Variation; the starts get 0.
// Collective time: 1 µs + (30 − 0.002 − 10·r) ms.
func TestNonblockingCollectiveWithoutRequest(t *testing.T) {
	run := tracetest.NewRun(3)
	for r := 0; r < 3; r++ {
		k := run.Rank(r)
		k.Init(us).Compute(int64(r) * 10 * ms)
		k.Call("MPI_Ibarrier", us, traceformat.Event{})
		k.Barrier(30*ms - k.Now()).Finalize(us)
	}
	rep := analyzeRun(t, run)
	for r := 0; r < 3; r++ {
		if !hasWarning(rep, "Rank "+itoa(r)+": 1 nonblocking collective call(s) carry no request") {
			t.Errorf("rank %d: no warning about the missing request in %q", r, rep.Warnings)
		}
	}
	if hasWarning(rep, "internal error") || hasWarning(rep, "could not be matched") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	iv := find(t, rep)
	for r, want := range []float64{0.020, 0.010, 0} {
		rk := rank(t, iv, r)
		expect(t, "Potential Sync rank "+itoa(r), rk.PotentialSync, want)
		expect(t, "Time Variation rank "+itoa(r), rk.TimeVariation, 0)
		expect(t, "Collective rank "+itoa(r), rk.CollectiveTime, 1e-6+0.030-0.000002-float64(r)*0.010)
	}
	expect(t, "start Potential Sync", srcPoint(t, iv, "MPI_Ibarrier").PotentialSync, 0)
	checkInvariants(t, rep)
}

// A footer's message in a warning keeps why tracing stopped and leaves
// out the writer's account of its own cost, which the C writer's starts
// with "C writer;".
func TestFooterDetail(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"SIGSEGV (Segmentation fault); C writer; max flush stall 1 ns, mean 1 ns over 2 flushes", ": SIGSEGV (Segmentation fault)"},
		{"C writer; max flush stall 1 ns", ""},
		{"max flush stall 1 ns, mean 1 ns", ""},
		{"the process died without writing a footer; dtrun recovered 34 events from its trace buffers", ": the process died without writing a footer; dtrun recovered 34 events from its trace buffers"},
	} {
		if got := detail(c.msg); got != c.want {
			t.Errorf("detail(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}
