package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/internal/realtraces"
	"github.com/dtpa/dtpa/report"
)

// BenchmarkDtpaReal runs the whole dtpa command on the traces of real
// programs that BenchmarkAnalyzeReal (package analyzer) analyses: the
// first pass, the replay, symbolization of the call sites, building the
// report and rendering it, as `dtpa --json -o /dev/null <app>` (the json
// sub-benchmarks) and `dtpa <app>` (text) do, the report written to
// io.Discard. BenchmarkAnalyzeReal leaves out what happens outside the
// replay; the difference between the two is that part. Reported per run:
// calls, CPU time per call and calls per CPU second (the process's user +
// system time, which a shared machine distorts less than wall time),
// calls per wall second and the peak RSS of the sub-benchmark.
// docs/performance.md has the figures.
//
//	scripts/realtraces.sh && go test -run '^$' -bench DtpaReal -benchtime 3x ./cmd/dtpa/
func BenchmarkDtpaReal(b *testing.B) {
	for _, name := range realtraces.Names {
		for _, format := range []string{"json", "text"} {
			b.Run(name+"/"+format, func(b *testing.B) {
				dir, app := realtraces.Need(b, name)
				args := []string{"dtpa", "--dir", dir, app}
				if format == "json" {
					args = []string{"dtpa", "--json", "--dir", dir, app}
				}
				benchDtpa(b, args)
			})
		}
	}
}

func benchDtpa(b *testing.B, args []string) {
	var events int64
	analyze := func(ctx context.Context, o analyzer.Options) (*report.Report, error) {
		rep, st, err := analyzer.AnalyzeStats(ctx, o)
		events += st.Events
		return rep, err
	}
	procstat.ResetPeakRSS() // reset the peak RSS
	b.ResetTimer()
	cpu0 := procstat.CPUTime()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		var stderr bytes.Buffer
		if code := Main(context.Background(), args, io.Discard, &stderr, analyze); code != 0 {
			b.Fatalf("dtpa exited with %d: %s", code, stderr.String())
		}
	}
	wall := time.Since(start).Seconds()
	cpu := (procstat.CPUTime() - cpu0).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(events)/float64(b.N), "calls/op")
	b.ReportMetric(cpu*1e9/float64(events), "cpu-ns/call")
	b.ReportMetric(float64(events)/cpu, "calls/cpu-s")
	b.ReportMetric(float64(events)/wall, "calls/s")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}
