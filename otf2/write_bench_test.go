package otf2

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/dtpa/dtpa/traceformat/tracetest"
)

// haloRun is a 4-rank halo exchange of steps steps: per step and rank two
// MPI_Irecv, two MPI_Isend and an MPI_Waitall, and every tenth step an
// MPI_Allreduce (5.1 calls per step and rank).
func haloRun(steps int) *Run {
	run := NewRun(4)
	for i := 0; i < 4; i++ {
		run.Rank(i).Init(1 * US)
	}
	for s := 0; s < steps; s++ {
		for i := 0; i < 4; i++ {
			r := run.Rank(i)
			left, right := int32((i+3)%4), int32((i+1)%4)
			r.Compute(10 * US)
			q := []Req{r.Irecv(left, 1, 800, 1*US), r.Irecv(right, 2, 800, 1*US),
				r.Isend(right, 1, 800, 1*US), r.Isend(left, 2, 800, 1*US)}
			r.Waitall(q, 5*US)
		}
		if s%10 == 9 {
			end := int64(0)
			for i := 0; i < 4; i++ {
				end = max(end, run.Rank(i).Now())
			}
			for i := 0; i < 4; i++ {
				r := run.Rank(i)
				r.Allreduce(8, end+2*US-r.Now())
			}
		}
	}
	for i := 0; i < 4; i++ {
		run.Rank(i).Finalize(1 * US)
	}
	return run
}

// benchTraces writes haloRun(steps) into a temporary directory.
func benchTraces(b *testing.B, steps int) string {
	dir := b.TempDir()
	if _, err := haloRun(steps).WriteDir(dir, "halo"); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkExport measures Export: calls (our events) and OTF2 records
// written per second, and the peak resident memory of a process that only
// exports (a child process, so that the fixture's construction does not
// count), for a run of 10 000 and one of 100 000 steps: bounded memory
// shows as equal peaks.
func BenchmarkExport(b *testing.B) {
	for _, steps := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			dir := benchTraces(b, steps)
			var st ExportStats
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out := filepath.Join(dir, fmt.Sprintf("out%d", i))
				var err error
				if st, err = Export(context.Background(), ExportOptions{Dir: dir, App: "halo", Out: out}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(st.Calls)/sec, "calls/s")
			b.ReportMetric(float64(st.Records)/sec, "records/s")
			b.StopTimer()
			b.ReportMetric(childPeakMB(b, dir), "peak-MB")
		})
	}
}

// childPeakMB runs this test binary to export dir alone and returns its
// peak resident set size in MB (VmHWM: rusage's maxrss would count the
// parent's memory, inherited across fork and exec).
func childPeakMB(b *testing.B, dir string) float64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestExportChild$", "-test.v")
	cmd.Env = append(os.Environ(), "DTPA_OTF2_EXPORT_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("export child: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "VmHWM:")
	if i < 0 {
		b.Fatalf("export child:\n%s", out)
	}
	f := strings.Fields(string(out[i+len("VmHWM:"):]))
	kb, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return kb / 1024
}

// TestExportChild is BenchmarkExport's child process; it does nothing
// unless run as one.
func TestExportChild(t *testing.T) {
	dir := os.Getenv("DTPA_OTF2_EXPORT_CHILD")
	if dir == "" {
		t.Skip("the child process of BenchmarkExport")
	}
	out := filepath.Join(dir, "child-out")
	defer os.RemoveAll(out)
	if _, err := Export(context.Background(), ExportOptions{Dir: dir, App: "halo", Out: out}); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			t.Log(l)
		}
	}
}
