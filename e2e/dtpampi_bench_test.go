package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/realtraces"
)

// BenchmarkDtpaMPI analyses the traces of real programs that
// scripts/realtraces.sh writes once per machine (into $DTPA_REAL_TRACES,
// default $TMPDIR/dtpa-bench-traces; the analyzer's BenchmarkAnalyzeReal
// reads them too) with dtpa and with dtpa-mpi at 1, 2 and 4 analysis
// processes, in turns within each iteration, one sub-benchmark per trace.
// Reported per kind of run (medians over the iterations): wall seconds,
// CPU seconds of the whole job (mpirun and its processes), and the
// speed-up of dtpa-mpi from 1 to 2 processes (wall time).
//
//	scripts/realtraces.sh && go test -run '^$' -bench DtpaMPI -benchtime 3x ./e2e/
func BenchmarkDtpaMPI(b *testing.B) {
	if _, err := exec.LookPath("mpirun.openmpi"); err != nil {
		b.Skip("Open MPI not installed")
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "dtpa-mpi")); err != nil {
		b.Skip("bin/dtpa-mpi missing: make build")
	}
	for _, name := range realtraces.Names {
		b.Run(name, func(b *testing.B) {
			d, app := realtraces.Need(b, name)
			kinds := []struct {
				name string
				np   int // 0: dtpa
			}{{"dtpa", 0}, {"np1", 1}, {"np2", 2}, {"np4", 4}}
			wall := make([][]float64, len(kinds))
			cpu := make([][]float64, len(kinds))
			for i := 0; i < b.N; i++ {
				for j := range kinds {
					k := kinds[(i+j)%len(kinds)] // each kind takes its turn first
					idx := (i + j) % len(kinds)
					name, args := filepath.Join(root, "bin", "dtpa"), []string{"--json", "-o", os.DevNull, app}
					if k.np > 0 {
						args = append([]string{"-np", strconv.Itoa(k.np), "--oversubscribe", filepath.Join(root, "bin", "dtpa-mpi")}, args...)
						name = "mpirun.openmpi"
					}
					cmd := exec.Command(name, args...)
					cmd.Dir = d
					cmd.Env = append(os.Environ(), mpiEnv...)
					start := time.Now()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%s: %v\n%s", k.name, err, out)
					}
					wall[idx] = append(wall[idx], time.Since(start).Seconds())
					st := cmd.ProcessState
					cpu[idx] = append(cpu[idx], (st.UserTime() + st.SystemTime()).Seconds())
				}
			}
			for j, k := range kinds {
				b.ReportMetric(median(wall[j]), "s-"+k.name)
				b.ReportMetric(median(cpu[j]), "cpu-s-"+k.name)
			}
			b.ReportMetric(median(wall[1])/median(wall[2]), "speedup-1to2")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// appOf is the application name of the traces in dir (<app>.0.trc).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
