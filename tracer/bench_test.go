package tracer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

var (
	nsRE    = regexp.MustCompile(`ns_per_call=([0-9.]+)`)
	stallRE = regexp.MustCompile(`max flush stall (\d+) ns, mean (\d+) ns over (\d+) flushes`)
)

// BenchmarkOverhead measures the time an MPI call takes untraced and traced
// in the same benchmark run (2 ranks bound to one core each), at
// UserStackSize 1 and 4, and reports the difference (ns added per call), the
// bytes on disk per recorded call, and the longest stall of the program
// caused by handing a buffer over (footer message). A third run drops the
// buffers unread (DT_BENCH_DISCARD) and gives the cost of the C recording
// path alone (ns/call-added-C): the rest is the Go encoder and compressor,
// which under core binding share the rank's core. The poll case is an
// MPI_Iprobe that never finds a message: the tracer folds a run of them into
// one record (dt_rec_end_poll), so its B/call is per call made. %dropped is the share of
// calls the tracer dropped for want of a free buffer (README, "When the
// encoder cannot keep up"): B/call is per recorded call.
func BenchmarkOverhead(b *testing.B) {
	iters := map[string]string{"pingpong": "100000", "barrier": "50000", "allreduce": "50000", "cheap": "1000000", "poll": "1000000"}
	for _, mode := range []string{"pingpong", "barrier", "allreduce", "cheap", "poll"} {
		for _, depth := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/depth%d", mode, depth), func(b *testing.B) {
				prog := build(b, "bench", ompi)
				var plain, traced, recOnly, bytes, events, dropped, stall, stallSum, flushes float64
				for i := 0; i < b.N; i++ {
					p := run(b, b.TempDir(), nil, "mpirun.openmpi", "-np", "2", "--bind-to", "core", prog, mode, iters[mode])
					dir := b.TempDir()
					env := []string{"UserStackSize=" + strconv.Itoa(depth), "MaxTraceSize=0"}
					tr := dtrun(b, dir, env, "-np", "2", "--bind-to", "core", prog, mode, iters[mode])
					c := dtrun(b, b.TempDir(), append(env, "DT_BENCH_DISCARD=1"), "-np", "2", "--bind-to", "core", prog, mode, iters[mode])
					pm, tm, cm := nsRE.FindStringSubmatch(p.out), nsRE.FindStringSubmatch(tr.out), nsRE.FindStringSubmatch(c.out)
					if pm == nil || tm == nil || cm == nil {
						b.Fatalf("no measurement:\n%s\n%s\n%s", p.out, tr.out, c.out)
					}
					pv, _ := strconv.ParseFloat(pm[1], 64)
					tv, _ := strconv.ParseFloat(tm[1], 64)
					cv, _ := strconv.ParseFloat(cm[1], 64)
					plain += pv
					traced += tv
					recOnly += cv
					for r := 0; r < 2; r++ {
						path := filepath.Join(dir, "bench."+strconv.Itoa(r)+".trc")
						st, err := os.Stat(path)
						if err != nil {
							b.Fatal(err)
						}
						t := readTrace(b, path)
						if t.footer.GetStopReason() != tracepb.Footer_FINALIZE {
							b.Fatalf("rank %d: footer %v", r, t.footer)
						}
						bytes += float64(st.Size())
						for _, e := range t.events { // a folded event stands for Calls calls
							events += float64(max(1, e.Calls))
						}
						dropped += float64(t.footer.GetDroppedEvents())
						if m := stallRE.FindStringSubmatch(t.footer.Message); m != nil {
							if s, _ := strconv.ParseFloat(m[1], 64); s > stall {
								stall = s
							}
							mean, _ := strconv.ParseFloat(m[2], 64)
							k, _ := strconv.ParseFloat(m[3], 64)
							stallSum += mean * k
							flushes += k
						}
					}
				}
				n := float64(b.N)
				b.ReportMetric(plain/n, "ns/call-untraced")
				b.ReportMetric(traced/n, "ns/call-traced")
				b.ReportMetric((traced-plain)/n, "ns/call-added")
				b.ReportMetric((recOnly-plain)/n, "ns/call-added-C")
				b.ReportMetric(bytes/events, "B/call")
				b.ReportMetric(100*dropped/(events+dropped), "%dropped")
				b.ReportMetric(stall, "max-stall-ns")
				if flushes > 0 {
					b.ReportMetric(stallSum/flushes, "mean-stall-ns")
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
