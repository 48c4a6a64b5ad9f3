package analyzer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/procstat"
)

// realTracesDir is where scripts/realtraces.sh writes the traces of real
// programs (`make bench` runs it): $DTPA_REAL_TRACES, else
// $TMPDIR/dtpa-bench-traces.
func realTracesDir() string {
	if d := os.Getenv("DTPA_REAL_TRACES"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "dtpa-bench-traces")
}

// realTraces are the traces BenchmarkAnalyzeReal analyses, in the order it
// runs them (see scripts/realtraces.sh for what each program does).
var realTraces = []string{"stencil", "stencil32", "alltoall", "hpcc", "lammps"}

// BenchmarkAnalyzeReal analyses traces that dtrun wrote of real MPI
// programs, one sub-benchmark each: a halo-exchange stencil at 4 and 32
// ranks (Isend, Irecv, Waitall every step, Allreduce every tenth), an
// all-to-all program (Alltoall, Isend to every rank, ANY_SOURCE receives),
// hpcc and LAMMPS. These, not BenchmarkAnalyze's synthetic ring, are the
// traces the analyzer is tuned for: their calls interleave across
// communicators, requests, peers and call sites the way programs do.
//
// The traces are written once per machine by scripts/realtraces.sh (which
// needs Open MPI and bin/dtrun; hpcc and lmp are optional) into
// realTracesDir; a missing one skips its sub-benchmark. Reported per
// analysis: calls, CPU time per call and calls per CPU second ("per core":
// the process's user + system time around the analysis, which a shared
// machine distorts less than wall time), calls per wall second, the cores
// obtained, the peak heap in use (sampled) and the peak RSS of the
// sub-benchmark (the kernel's high-water mark, reset before it).
// docs/performance.md has the figures and CPU profiles of these traces.
//
//	scripts/realtraces.sh && go test -run '^$' -bench AnalyzeReal -benchtime 3x ./analyzer/
func BenchmarkAnalyzeReal(b *testing.B) {
	root := realTracesDir()
	for _, name := range realTraces {
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(root, name)
			if _, err := os.Stat(filepath.Join(dir, "COMPLETE")); err != nil {
				// go test does not print a skipped benchmark's reason.
				msg := fmt.Sprintf("BenchmarkAnalyzeReal/%s skipped: no trace in %s: scripts/realtraces.sh writes it (needs Open MPI and make build; make bench runs it)", name, dir)
				fmt.Fprintln(os.Stderr, msg)
				b.Skip(msg)
			}
			app, size, err := realApp(dir)
			if err != nil {
				b.Fatal(err)
			}
			benchReal(b, dir, app, size)
		})
	}
}

// realApp finds the program name of the traces in dir (<app>.0.trc) and
// the size of its trace files.
func realApp(dir string) (app string, size int64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, err
	}
	var apps []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".0.trc") {
			apps = append(apps, strings.TrimSuffix(n, ".0.trc"))
		}
	}
	if len(apps) != 1 {
		return "", 0, &os.PathError{Op: "finding the one program traced", Path: dir, Err: os.ErrNotExist}
	}
	paths, err := traceFiles(dir, apps[0])
	if err != nil {
		return "", 0, err
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	return apps[0], size, nil
}

func benchReal(b *testing.B, dir, app string, size int64) {
	runtime.GC()
	procstat.ResetPeakRSS()
	b.ResetTimer()
	var events int64
	stopHeap := sampleHeap()
	cpu0 := procstat.CPUTime()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		rep, st, err := AnalyzeStats(context.Background(), Options{Dir: dir, App: app, MaxLevel: -1})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 && len(rep.Warnings) != 0 {
			b.Logf("%s: %d warnings, first: %s", app, len(rep.Warnings), rep.Warnings[0])
		}
		events += st.Events
	}
	wall := time.Since(start).Seconds()
	cpu := (procstat.CPUTime() - cpu0).Seconds()
	peakHeap := stopHeap()
	b.StopTimer()
	b.ReportMetric(float64(events)/float64(b.N), "calls/op")
	b.ReportMetric(cpu*1e9/float64(events), "cpu-ns/call")
	b.ReportMetric(float64(events)/cpu, "calls/cpu-s")
	b.ReportMetric(float64(events)/wall, "calls/s")
	b.ReportMetric(cpu/wall, "cores-used")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(size)*float64(b.N)/float64(events), "trace-B/call")
}

// BenchmarkDecodeReal reads the traces of BenchmarkAnalyzeReal without
// analysing them, as the replay reads them (ReadLazyBatch and Next), one
// file after the other on one goroutine: the decoding's share of the
// replay without the interleaving of ranks. Its instruction count per
// call (valgrind --tool=callgrind, -benchtime 1x) is the measure of the
// decoder's changes that a loaded machine does not blur.
func BenchmarkDecodeReal(b *testing.B) {
	root := realTracesDir()
	for _, name := range realTraces {
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(root, name)
			app, _, err := realApp(dir)
			if err != nil {
				b.Skip(err)
			}
			paths, err := traceFiles(dir, app)
			if err != nil {
				b.Fatal(err)
			}
			var events int64
			cpu0 := procstat.CPUTime()
			for i := 0; i < b.N; i++ {
				for _, p := range paths {
					n, err := decodeAll(p)
					if err != nil {
						b.Fatal(err)
					}
					events += n
				}
			}
			cpu := (procstat.CPUTime() - cpu0).Seconds()
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(cpu*1e9/float64(events), "cpu-ns/event")
		})
	}
}
