package otf2

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/memnet"
	"github.com/dtpa/dtpa/otf2/otf2test"
	. "github.com/dtpa/dtpa/traceformat/tracetest"
)

// checkExportDist exports run with Export and with ExportDist over 1–5
// processes (more than the ranks included) and fails unless the archives
// hold the same files with the same bytes, but for the anchor's trace
// identifier, with the same warnings and stats.
func checkExportDist(t *testing.T, run *Run, sym analyzer.Symbolizer) {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "want")
	var wantWarns []string
	wantSt, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: want, Symbolizer: sym,
		Warn: func(s string) { wantWarns = append(wantWarns, s) }})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 5; n++ {
		got := filepath.Join(dir, "got"+strconv.Itoa(n))
		net := memnet.New(n)
		sts := make([]ExportStats, n)
		errs := make([]error, n)
		warns := make([][]string, n)
		var wg sync.WaitGroup
		for p := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sts[p], errs[p] = ExportDist(context.Background(), ExportOptions{Dir: dir, App: "app", Out: got, Symbolizer: sym,
					Warn: func(s string) { warns[p] = append(warns[p], s) }}, net.Transport(p))
			}()
		}
		wg.Wait()
		for p, err := range errs {
			if err != nil {
				t.Fatalf("%d processes: process %d: %v", n, p, err)
			}
			if p > 0 && (len(warns[p]) > 0 || sts[p] != ExportStats{}) {
				t.Errorf("%d processes: process %d warned %q, stats %+v", n, p, warns[p], sts[p])
			}
		}
		if sts[0] != wantSt {
			t.Errorf("%d processes: stats %+v, want %+v", n, sts[0], wantSt)
		}
		if !slices.Equal(warns[0], wantWarns) {
			t.Errorf("%d processes: warnings %q, want %q", n, warns[0], wantWarns)
		}
		sameArchive(t, got, want)
	}
}

// sameArchive fails unless the archives in the directories got and want
// hold the same files with the same bytes, but for the anchor's trace
// identifier (8 bytes that libotf2 draws at random).
func sameArchive(t *testing.T, got, want string) {
	t.Helper()
	files, err := otf2test.Files(want)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %d files, %v", want, len(files), err)
	}
	if gf, _ := otf2test.Files(got); len(gf) != len(files) {
		t.Errorf("%s holds %d files, %s %d", got, len(gf), want, len(files))
	}
	for _, f := range files {
		g, err1 := os.ReadFile(got + f)
		w, err2 := os.ReadFile(want + f)
		if err1 != nil || err2 != nil {
			t.Errorf("%s: %v, %v", f, err1, err2)
			continue
		}
		if f == "/"+ArchiveName && len(g) == len(w) {
			var diff []int
			for i := range g {
				if g[i] != w[i] {
					diff = append(diff, i)
				}
			}
			if len(diff) == 0 || diff[len(diff)-1]-diff[0] < 8 {
				continue
			}
		}
		if !bytes.Equal(g, w) {
			t.Errorf("%s differs (%d bytes, want %d)", f, len(g), len(w))
		}
	}
}

// TestExportDist: ExportDist writes Export's archive of mixedRun (every
// kind of record), of folded runs with inner gaps, of a run with source
// code locations and an intercommunicator, and of a run of 7 ranks with
// communicators that processes meet in different orders.
func TestExportDist(t *testing.T) {
	checkExportDist(t, mixedRun(), nil)
	checkExportDist(t, mixedRun(), lineSymbolizer{})
	checkExportDist(t, TwoMessages(), nil)
	checkExportDist(t, innerGapsRun(true), nil)
	checkExportDist(t, sourceLocationsRun(), lineSymbolizer{})
	checkExportDist(t, threadedRun(3), nil)
	checkExportDist(t, unfinishedRun(), lineSymbolizer{})
	checkExportDist(t, crashMarksRun(), lineSymbolizer{})

	const n = 7
	run := NewRun(n)
	half, odd := run.NewComm(0, 2, 4, 6), run.NewComm(1, 3, 5)
	ranks := make([]*Rank, n)
	for i := range ranks {
		ranks[i] = run.Rank(i)
		ranks[i].Init(US)
	}
	for i, k := range ranks {
		c := half
		if i%2 == 1 {
			c = odd
		}
		k.CommSplit(nil, c, 2*US)
		k.Barrier(US, Site("bar", 0x401000+uint64(10+i%3)), On(c))
		k.Send(int32((i+1)%n), 1, 8, US, Site("send", 0x401000+uint64(20+i)))
		k.Recv(int32((i+n-1)%n), 1, 8, US, Site("recv", 0x401000+30))
		k.Allreduce(8, US)
		k.Finalize(US)
	}
	checkExportDist(t, run, lineSymbolizer{})
}
