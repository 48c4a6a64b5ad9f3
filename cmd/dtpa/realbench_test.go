package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/hugetext"
	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/internal/realtraces"
	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
)

// BenchmarkDtpaReal runs the whole dtpa command on the traces of real
// programs that BenchmarkAnalyzeReal (package analyzer) analyses: the
// first pass, the replay, symbolization of the call sites, building the
// report and rendering it, as `dtpa --json -o /dev/null <app>` (the json
// sub-benchmarks) and `dtpa <app>` (text) do, the report written to
// io.Discard. BenchmarkAnalyzeReal leaves out what happens outside the
// replay; the difference between the two is that part. Reported per run:
// the program's MPI calls (realtraces.Calls), CPU time per call and calls
// per CPU second (the process's user + system time, which a shared machine
// distorts less than wall time), calls per wall second, events per CPU
// second and the peak RSS of the sub-benchmark.
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
	var events, calls int64
	analyze := func(ctx context.Context, o analyzer.Options) (*report.Report, error) {
		rep, st, err := analyzer.AnalyzeStats(ctx, o)
		events += st.Events
		calls += realtraces.Calls(rep)
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
	b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
	b.ReportMetric(cpu*1e9/float64(calls), "cpu-ns/call")
	b.ReportMetric(float64(calls)/cpu, "calls/cpu-s")
	b.ReportMetric(float64(calls)/wall, "calls/s")
	b.ReportMetric(float64(events)/cpu, "events/cpu-s")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}

// BenchmarkDtpaProcess runs bin/dtpa (make build) as its own process on
// the same traces, `dtpa --json -o /dev/null <app>`, as a user does:
// what BenchmarkDtpaReal leaves out is counted too, the process's start
// (the runtime, package inits, dynamic linking) and every page of fresh
// memory it faults in, which on this project's virtual machines cost
// more than a third of the CPU time of a small trace (docs/performance.md,
// "Fresh memory and the command's start"). Reported per run: the
// program's MPI calls and the trace's events, the child's user + system
// CPU time per call, calls and events per CPU second, its system time,
// minor page faults and peak RSS. The binary's pages are read into the
// page cache in 2 MB folios first, as make build leaves them (package
// hugetext): in 4 KB ones the same bytes start and run 3–12 % slower here,
// so that a figure depended on how the file was last written.
//
//	scripts/realtraces.sh && go test -run '^$' -bench DtpaProcess -benchtime 5x ./cmd/dtpa/
func BenchmarkDtpaProcess(b *testing.B) {
	bin := filepath.Join(testenv.Root(), "bin", "dtpa")
	if _, err := os.Stat(bin); err != nil {
		b.Skip("bin/dtpa missing: run make build")
	}
	if err := hugetext.PageIn(bin); err != nil {
		b.Logf("%s stays in the page cache as it is: %v", bin, err)
	}
	for _, name := range realtraces.Names {
		b.Run(name, func(b *testing.B) {
			dir, app := realtraces.Need(b, name)
			out, err := exec.Command(bin, "--json", "--dir", dir, app).Output()
			if err != nil {
				b.Fatalf("%s: %v", bin, err)
			}
			var rep report.Report
			if err := json.Unmarshal(out, &rep); err != nil || rep.Run == nil || rep.Run.Events == 0 || realtraces.Calls(&rep) == 0 {
				b.Fatalf("no event or call count in the report: %v", err)
			}
			var cpu, sys time.Duration
			var faults, rss int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bin, "--json", "-o", os.DevNull, "--dir", dir, app)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v: %s", bin, err, out)
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				sys += time.Duration(ru.Stime.Nano())
				faults += ru.Minflt
				rss = max(rss, ru.Maxrss)
			}
			b.StopTimer()
			n := float64(b.N)
			calls, events := float64(realtraces.Calls(&rep)), float64(rep.Run.Events)
			b.ReportMetric(calls, "calls/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/n/calls, "cpu-ns/call")
			b.ReportMetric(calls*n/cpu.Seconds(), "calls/cpu-s")
			b.ReportMetric(events, "events/op")
			b.ReportMetric(events*n/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(sys.Microseconds())/n/1e3, "sys-ms/op")
			b.ReportMetric(float64(faults)/n, "faults/op")
			b.ReportMetric(float64(rss)/1024, "peak-RSS-MB")
		})
	}
}
