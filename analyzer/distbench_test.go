package analyzer

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/dtpa/dtpa/internal/memnet"
	"github.com/dtpa/dtpa/internal/procstat"
	"github.com/dtpa/dtpa/internal/realtraces"
)

// BenchmarkAnalyzeDistReal analyses BenchmarkAnalyzeReal's traces as
// dtpa-mpi does (AnalyzeDist), its processes goroutines of this one
// connected in memory (internal/memnet), at 1 and 2 processes: what
// distributing the replay costs per call without mpirun's start and MPI's
// latency (e2e's BenchmarkDtpaMPI has those). At 1 process it should cost
// what Analyze with one worker does; at 2, the processes wait for each
// other once per step of a halo exchange, on a transport that looks for
// a message for 50 µs before it sleeps, as dtpa-mpi's polls before it
// yields its core. Reported: CPU seconds per analysis and calls per CPU
// second.
//
//	scripts/realtraces.sh && go test -run '^$' -bench AnalyzeDistReal -benchtime 3x ./analyzer/
func BenchmarkAnalyzeDistReal(b *testing.B) {
	for _, name := range realtraces.Names {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/np%d", name, n), func(b *testing.B) {
				dir, app := realtraces.Need(b, name)
				var calls int64
				cpu0 := procstat.CPUTime()
				for i := 0; i < b.N; i++ {
					opts := Options{Dir: dir, App: app, MaxLevel: -1}
					net := memnet.New(n)
					var wg sync.WaitGroup
					for p := 0; p < n; p++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							rep, err := AnalyzeDist(context.Background(), opts, net.Transport(p))
							if err != nil {
								b.Error(err)
							}
							if rep != nil {
								calls += realtraces.Calls(rep)
							}
						}()
					}
					wg.Wait()
				}
				cpu := (procstat.CPUTime() - cpu0).Seconds()
				b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(calls)/cpu, "calls/cpu-s")
			})
		}
	}
}
