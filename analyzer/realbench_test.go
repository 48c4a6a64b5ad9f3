package analyzer

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/internal/realtraces"
)

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
// realtraces.Dir; a missing one skips its sub-benchmark. Reported per
// analysis: the program's MPI calls (realtraces.Calls: a folded run of
// polls counts as its calls) and the trace's events, CPU time per call and
// calls per CPU second ("per core": the process's user + system time around
// the analysis, which a shared machine distorts less than wall time),
// events per CPU second, calls per wall second, the cores obtained, the
// peak heap in use (sampled), the peak RSS of the sub-benchmark (the
// kernel's high-water mark, reset before it) and trace bytes per call and
// per event.
// docs/performance.md has the figures and CPU profiles of these traces.
//
//	scripts/realtraces.sh && go test -run '^$' -bench AnalyzeReal -benchtime 3x ./analyzer/
func BenchmarkAnalyzeReal(b *testing.B) {
	for _, name := range realtraces.Names {
		b.Run(name, func(b *testing.B) {
			dir, app := realtraces.Need(b, name)
			benchReal(b, dir, app, traceBytes(b, dir, app))
		})
	}
}

// traceBytes is the size of app's trace files in dir.
func traceBytes(b *testing.B, dir, app string) int64 {
	paths, err := traceFiles(dir, app)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	return size
}

func benchReal(b *testing.B, dir, app string, size int64) {
	runtime.GC()
	procstat.ResetPeakRSS()
	b.ResetTimer()
	var events, calls int64
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
		calls += realtraces.Calls(rep)
	}
	wall := time.Since(start).Seconds()
	cpu := (procstat.CPUTime() - cpu0).Seconds()
	peakHeap := stopHeap()
	b.StopTimer()
	b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
	b.ReportMetric(cpu*1e9/float64(calls), "cpu-ns/call")
	b.ReportMetric(float64(calls)/cpu, "calls/cpu-s")
	b.ReportMetric(float64(calls)/wall, "calls/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(float64(events)/cpu, "events/cpu-s")
	b.ReportMetric(cpu/wall, "cores-used")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(size)*float64(b.N)/float64(calls), "trace-B/call")
	b.ReportMetric(float64(size)*float64(b.N)/float64(events), "trace-B/event")
}

// BenchmarkDecodeReal reads the traces of BenchmarkAnalyzeReal without
// analysing them, as the replay reads them (ReadLazyBatch and Next), one
// file after the other on one goroutine: the decoding's share of the
// replay without the interleaving of ranks. Its instruction count per
// call (valgrind --tool=callgrind, -benchtime 1x) is the measure of the
// decoder's changes that a loaded machine does not blur.
func BenchmarkDecodeReal(b *testing.B) {
	for _, name := range realtraces.Names {
		b.Run(name, func(b *testing.B) {
			dir, app := realtraces.Need(b, name)
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
