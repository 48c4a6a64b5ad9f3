package otf2

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// FuzzImport damages one file of a real Score-P archive (bytes overwritten
// at an offset, or the file cut there) and imports it, then analyses what
// was imported: libotf2 must report the damage, never crash, and what
// Import wrote must analyse to a consistent report or a clear error.
func FuzzImport(f *testing.F) { fuzzImport(f, "scorep_ls4") }

// FuzzImportLAMMPS is FuzzImport on a real application's archive: its
// collectives, nonblocking requests and communicators.
func FuzzImportLAMMPS(f *testing.F) { fuzzImport(f, "scorep_lammps_melt") }

// FuzzImportThreads is FuzzImport on dtpa's own archive of a run of two
// MPI_THREAD_MULTIPLE ranks (threadedRun): a location per thread, read in
// turns.
func FuzzImportThreads(f *testing.F) { fuzzArchive(f, "threads", exportThreaded(f)) }

// FuzzImportUnfinished is FuzzImport on dtpa's archive of a run whose
// processes ended in calls in progress (unfinishedRun): Enter records
// marked dtpa::unfinished, on a thread's location too.
func FuzzImportUnfinished(f *testing.F) { fuzzArchive(f, "unfinished", exportOf(f, unfinishedRun())) }

// exportThreaded writes the archive of threadedRun(3) and returns its
// directory.
func exportThreaded(t testing.TB) string { return exportOf(t, threadedRun(3)) }

// exportOf writes the archive of run and returns its directory.
func exportOf(t testing.TB, run *tracetest.Run) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "app-otf2")
	if _, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: out}); err != nil {
		t.Fatal(err)
	}
	return out
}

func fuzzImport(f *testing.F, name string) { fuzzArchive(f, name, archivePath(f, name)) }

// fuzzArchive is FuzzImport on the archive in directory src, named name.
func fuzzArchive(f *testing.F, name, src string) {
	var names []string
	files := map[string][]byte{}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		names = append(names, rel)
		files[rel] = b
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	sort.Strings(names)
	// A damaged anchor file can keep libotf2 busy for minutes; the child
	// that reads it first is stopped sooner here (the fuzzer takes 10 s
	// for a hang).
	defer func(d time.Duration) { AnchorTimeout = d }(AnchorTimeout)
	AnchorTimeout = time.Second
	for i := range names {
		f.Add(uint8(i), uint32(len(files[names[i]])/2), []byte{0xff, 0x00, 0x7f}, false)
		f.Add(uint8(i), uint32(len(files[names[i]])/3), []byte{}, true)
		f.Add(uint8(i), uint32(7), []byte{0x01}, false)
	}
	f.Fuzz(func(t *testing.T, which uint8, off uint32, data []byte, cut bool) {
		dir := t.TempDir()
		archive := filepath.Join(dir, name)
		victim := names[int(which)%len(names)]
		for _, n := range names {
			b := append([]byte(nil), files[n]...)
			if n == victim {
				o := int(off) % (len(b) + 1)
				if cut {
					b = b[:o]
				} else {
					for i, c := range data {
						if o+i < len(b) {
							b[o+i] = c
						}
					}
				}
			}
			p := filepath.Join(archive, n)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(dir, "out")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Import(context.Background(), archive, out, "app", nil); err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		rep, err := analyzer.Analyze(context.Background(), analyzer.Options{Dir: out, App: "app", MaxLevel: -1})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		for _, err := range report.Check(rep) {
			t.Errorf("%s damaged: the report is inconsistent: %v", victim, err)
		}
	})
}
