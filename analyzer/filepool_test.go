package analyzer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// Two files read in alternation, a few bytes at a time, through a pool
// that holds one descriptor: each read reopens its file where it left off.
func TestFilePoolReopensAtOffset(t *testing.T) {
	dir := t.TempDir()
	want := [][]byte{bytes.Repeat([]byte("abcdefg"), 100), bytes.Repeat([]byte("0123456789"), 77)}
	p := newFilePool(1, 2)
	var lfs []*lazyFile
	for i, w := range want {
		path := filepath.Join(dir, string(rune('a'+i)))
		if err := os.WriteFile(path, w, 0o644); err != nil {
			t.Fatal(err)
		}
		lf, err := p.open(path)
		if err != nil {
			t.Fatal(err)
		}
		lfs = append(lfs, lf)
	}
	got := make([][]byte, len(lfs))
	done := make([]bool, len(lfs))
	buf := make([]byte, 13)
	for !done[0] || !done[1] {
		for i, lf := range lfs {
			if done[i] {
				continue
			}
			n, err := lf.Read(buf)
			got[i] = append(got[i], buf[:n]...)
			if err == io.EOF {
				done[i] = true
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("file %d: read %d bytes differing from the %d written", i, len(got[i]), len(want[i]))
		}
	}
	if p.peakOpen != 1 {
		t.Errorf("held %d descriptors at once, want 1", p.peakOpen)
	}
	if p.reopens < 100 {
		t.Errorf("%d reopens, want one per read after the first", p.reopens)
	}
	for _, lf := range lfs {
		if err := lf.Close(); err != nil {
			t.Error(err)
		}
	}
	if p.lru.Len() != 0 {
		t.Errorf("%d descriptors left open after Close", p.lru.Len())
	}
	if _, err := lfs[0].Read(buf); err == nil {
		t.Error("read after Close succeeded")
	}
	if _, err := p.open(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("opening a missing file: %v", err)
	}
}

// Many ranks analysed with a bound of a few open trace files give the
// report that holding every file open gives, and hold no more than the
// bound.
func TestManyRanksFewOpenFiles(t *testing.T) {
	const ranks, iters, bound = 600, 1000, 7
	dir := t.TempDir()
	if _, err := genBench(dir, ranks, iters); err != nil {
		t.Fatal(err)
	}
	analyze := func(openFiles int) ([]byte, Stats) {
		lim := defaultLimits()
		lim.openFiles = openFiles
		rep, st, err := AnalyzeStats(context.Background(), Options{Dir: dir, App: "bench", MaxLevel: -1, roundTrip: true, limits: &lim})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Warnings) != 0 {
			t.Errorf("warnings: %q", rep.Warnings)
		}
		js, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		return js, st
	}
	all, stAll := analyze(ranks)
	few, stFew := analyze(bound)
	if !bytes.Equal(all, few) {
		t.Errorf("reports differ with %d open files and with %d", ranks, bound)
	}
	if stFew.OpenFiles > bound {
		t.Errorf("held %d trace files open at once, bound %d", stFew.OpenFiles, bound)
	}
	if stFew.Reopens == 0 {
		t.Error("no file reopened: the bound was not exercised")
	}
	if stAll.Reopens != 0 {
		t.Errorf("%d reopens with a bound above the ranks", stAll.Reopens)
	}
	if stAll.Events != stFew.Events || stAll.Events < ranks*iters*3 {
		t.Errorf("events %d and %d, want equal and at least %d", stAll.Events, stFew.Events, ranks*iters*3)
	}
	t.Logf("%d ranks, %d events: %d reopens with %d open at most", ranks, stFew.Events, stFew.Reopens, stFew.OpenFiles)
}

// Past maxMatrixRanks ranks the interval profiles have no communication
// matrices but still their traffic and the matrix's nonzero cells as
// pairs, counted by destination sparsely (commSent): every rank sends one
// message per iteration.
func TestManyRanksTrafficWithoutMatrix(t *testing.T) {
	const ranks, iters = maxMatrixRanks + 100, 20
	dir := t.TempDir()
	if _, err := genBench(dir, ranks, iters); err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "bench", MaxLevel: -1, roundTrip: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
	iv := &rep.Intervals[0]
	if iv.CommMatrix != nil || len(iv.CommMatrices) != 0 {
		t.Errorf("%d ranks: communication matrices reported", ranks)
	}
	if iv.Traffic == nil {
		t.Fatal("no traffic")
	}
	if got := iv.Traffic.IntraNode.Messages + iv.Traffic.InterNode.Messages; got != ranks*iters {
		t.Errorf("traffic %d messages, want %d", got, ranks*iters)
	}
	// Rank r sends iters messages of 8·(r mod 4 + 1) bytes to r+1 (the
	// last to 0): one pair per sender, in the order of the senders.
	if len(iv.CommPairs) != ranks {
		t.Fatalf("%d pairs, want %d", len(iv.CommPairs), ranks)
	}
	for r, p := range iv.CommPairs {
		want := report.CommPair{Sender: r, Receiver: (r + 1) % ranks, Messages: iters, Bytes: iters * 8 * int64(r%4+1)}
		if p != want {
			t.Errorf("pair %d: %+v, want %+v", r, p, want)
		}
	}
	first, last := report.CommPair{Sender: 0, Receiver: 1, Messages: 20, Bytes: 160},
		report.CommPair{Sender: 1123, Receiver: 0, Messages: 20, Bytes: 640}
	if iv.CommPairs[0] != first || iv.CommPairs[ranks-1] != last {
		t.Errorf("first and last pairs %+v %+v, want %+v %+v", iv.CommPairs[0], iv.CommPairs[ranks-1], first, last)
	}
}

// Up to maxMatrixRanks ranks the interval has the dense matrix and no
// pairs: ring of 8 ranks, 20 iterations.
func TestFewRanksMatrixWithoutPairs(t *testing.T) {
	const ranks, iters = 8, 20
	dir := t.TempDir()
	if _, err := genBench(dir, ranks, iters); err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), Options{Dir: dir, App: "bench", MaxLevel: -1, roundTrip: true})
	if err != nil {
		t.Fatal(err)
	}
	iv := &rep.Intervals[0]
	if iv.CommPairs != nil {
		t.Errorf("%d ranks: %d comm_pairs", ranks, len(iv.CommPairs))
	}
	if iv.CommMatrix == nil || len(iv.CommMatrices) != 1 {
		t.Fatalf("%d ranks: no matrix (%d per communicator)", ranks, len(iv.CommMatrices))
	}
	// Rank 7 sends 20 messages of 32 bytes to rank 0; rank 0 sends none to 7.
	if m := iv.CommMatrix; m.Messages[7][0] != 20 || m.Bytes[7][0] != 640 || m.Messages[0][7] != 0 {
		t.Errorf("matrix 7→0 %d messages %d bytes, 0→7 %d messages", m.Messages[7][0], m.Bytes[7][0], m.Messages[0][7])
	}
	js, err := json.Marshal(iv)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte(`"comm_pairs"`)) {
		t.Error("comm_pairs in the JSON")
	}
}

// mergePairs sorts by sender then receiver and sums a pair's entries from
// several communicators.
func TestMergePairs(t *testing.T) {
	in := []report.CommPair{
		{Sender: 2000, Receiver: 5, Messages: 1, Bytes: 10},
		{Sender: 3, Receiver: 1500, Messages: 2, Bytes: 20},
		{Sender: 2000, Receiver: 4, Messages: 3, Bytes: 30},
		{Sender: 2000, Receiver: 5, Messages: 4, Bytes: 40},
		{Sender: 3, Receiver: 7, Messages: 5, Bytes: 50},
	}
	want := []report.CommPair{
		{Sender: 3, Receiver: 7, Messages: 5, Bytes: 50},
		{Sender: 3, Receiver: 1500, Messages: 2, Bytes: 20},
		{Sender: 2000, Receiver: 4, Messages: 3, Bytes: 30},
		{Sender: 2000, Receiver: 5, Messages: 5, Bytes: 50},
	}
	if got := mergePairs(in); !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if mergePairs(nil) != nil {
		t.Error("pairs from none")
	}
}
