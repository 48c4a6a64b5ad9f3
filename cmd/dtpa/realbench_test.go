package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/report"
)

// realTracesDir is where scripts/realtraces.sh writes the traces of real
// programs: $DTPA_REAL_TRACES, else $TMPDIR/dtpa-bench-traces (as
// analyzer's BenchmarkAnalyzeReal finds them).
func realTracesDir() string {
	if d := os.Getenv("DTPA_REAL_TRACES"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "dtpa-bench-traces")
}

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
	root := realTracesDir()
	for _, name := range []string{"stencil", "stencil32", "alltoall", "hpcc", "lammps"} {
		for _, format := range []string{"json", "text"} {
			b.Run(name+"/"+format, func(b *testing.B) {
				dir := filepath.Join(root, name)
				if _, err := os.Stat(filepath.Join(dir, "COMPLETE")); err != nil {
					msg := fmt.Sprintf("BenchmarkDtpaReal/%s skipped: no trace in %s: scripts/realtraces.sh writes it", name, dir)
					fmt.Fprintln(os.Stderr, msg)
					b.Skip(msg)
				}
				app, err := realApp(dir)
				if err != nil {
					b.Fatal(err)
				}
				args := []string{"dtpa", "--dir", dir, app}
				if format == "json" {
					args = []string{"dtpa", "--json", "--dir", dir, app}
				}
				benchDtpa(b, args)
			})
		}
	}
}

// realApp is the program whose traces dir holds (<app>.0.trc).
func realApp(dir string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.0.trc"))
	if err != nil || len(m) != 1 {
		return "", fmt.Errorf("%s: want the traces of one program, found %v (%v)", dir, m, err)
	}
	return strings.TrimSuffix(filepath.Base(m[0]), ".0.trc"), nil
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
