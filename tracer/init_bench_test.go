package tracer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var initRE = regexp.MustCompile(`init_ms=([0-9.]+) init_cpu_ms=([0-9.]+)`)

// BenchmarkInit measures what the tracer adds to MPI_Init and MPI_Finalize:
// the longest call over the ranks (wall clock, and CPU time of the process
// with all its threads), untraced and traced alternated in the same
// benchmark run, at 4 and 8 ranks on this machine's cores, under both MPIs
// (testdata initcost.c). Reported: the medians of each and of the
// differences of the pairs, and the spread of the differences (min, max).
// Run it with -benchtime=Nx: N pairs. With DTPA_BENCH_BASE=<a built
// checkout>, each pair also runs traced with that checkout's tracer
// (lib/), alternated with the others: its figures are "-base".
// DTPA_BENCH_BASE_ENV adds variables (space-separated NAME=value) to those
// runs.
func BenchmarkInit(b *testing.B) {
	for _, mpi := range []struct{ name, cc, run string }{
		{"openmpi", ompi, "mpirun.openmpi"}, {"mpich", "mpicc.mpich", "mpiexec.mpich"},
	} {
		for _, np := range []int{4, 8} {
			b.Run(fmt.Sprintf("%s/np%d", mpi.name, np), func(b *testing.B) {
				prog := build(b, "initcost", mpi.cc)
				launch := []string{"-n", strconv.Itoa(np)}
				if mpi.name == "openmpi" {
					launch = append([]string{"--oversubscribe"}, launch...)
				}
				// one runs the program and returns its 4 figures (ms): MPI_Init
				// wall and CPU, MPI_Finalize wall and CPU, each the maximum
				// over the ranks.
				one := func(traced bool, env ...string) [4]float64 {
					dir := b.TempDir()
					args := append(launch[:len(launch):len(launch)], prog, dir)
					var res result
					if traced {
						res = dtrun(b, dir, env, append([]string{"--mpirun", mpi.run}, args...)...)
					} else {
						res = run(b, dir, nil, mpi.run, args...)
					}
					m := initRE.FindStringSubmatch(res.out)
					if res.code != 0 || m == nil {
						b.Fatalf("traced=%v: exit %d, no measurement:\n%s", traced, res.code, res.out)
					}
					var f [4]float64
					f[0], _ = strconv.ParseFloat(m[1], 64)
					f[1], _ = strconv.ParseFloat(m[2], 64)
					for r := 0; r < np; r++ {
						data, err := os.ReadFile(filepath.Join(dir, "fin."+strconv.Itoa(r)))
						if err != nil {
							b.Fatal(err)
						}
						var w, c float64
						if _, err := fmt.Sscan(strings.TrimSpace(string(data)), &w, &c); err != nil {
							b.Fatalf("fin.%d: %v", r, err)
						}
						f[2], f[3] = max(f[2], w), max(f[3], c)
					}
					return f
				}
				base := os.Getenv("DTPA_BENCH_BASE")
				var plain, traced, added, baseAdded [4][]float64
				for i := 0; i < b.N; i++ {
					p, t := one(false), one(true)
					var o [4]float64
					if base != "" {
						o = one(true, append([]string{"DT_LIB=" + filepath.Join(base, "lib")}, strings.Fields(os.Getenv("DTPA_BENCH_BASE_ENV"))...)...)
					}
					for k := range p {
						plain[k] = append(plain[k], p[k])
						traced[k] = append(traced[k], t[k])
						added[k] = append(added[k], t[k]-p[k])
						baseAdded[k] = append(baseAdded[k], o[k]-p[k])
					}
				}
				for k, name := range []string{"init", "init-cpu", "fin", "fin-cpu"} {
					b.ReportMetric(median(plain[k]), name+"-ms-untraced")
					b.ReportMetric(median(traced[k]), name+"-ms-traced")
					b.ReportMetric(median(added[k]), name+"-ms-added")
					sort.Float64s(added[k])
					b.ReportMetric(added[k][0], name+"-ms-added-min")
					b.ReportMetric(added[k][len(added[k])-1], name+"-ms-added-max")
					if base != "" {
						b.ReportMetric(median(baseAdded[k]), name+"-ms-added-base")
						sort.Float64s(baseAdded[k])
						b.ReportMetric(baseAdded[k][0], name+"-ms-added-base-min")
						b.ReportMetric(baseAdded[k][len(baseAdded[k])-1], name+"-ms-added-base-max")
					}
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
