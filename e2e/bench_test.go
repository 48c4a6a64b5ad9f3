package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/traceformat"
)

// BenchmarkHPCC measures what tracing costs a real program, the way its user
// sees it: the wall time of the HPC Challenge benchmark (Debian's hpcc,
// Open MPI, 4 ranks on this machine's cores, testdata/apps/hpccinf.txt with
// N = 1000: ~10 s, ~80 000 MPI calls per rank of every kind) run untraced
// (mpirun) and traced (dtrun) one after the other in each iteration, so
// that both see the same machine. Reported: the slowdown (traced ÷
// untraced wall time, best runs and median of the pairs; Score-P's tracing
// measured 1.09× and mpiP 2.07× on this machine), the MPI calls recorded per
// second of the traced runs, and
// bytes on disk per recorded call (whole files: header, definitions,
// clock sync and footer included).
//
//	flock /tmp/dtpa-bench.lock go test -run '^$' -bench HPCC -benchtime 5x ./e2e/
//
// DTPA_HPCC_N=500 sets the problem size (a short run, ~4 s, where
// MPI_Init, MPI_Finalize and the per-call cost weigh more). With
// DTPA_BENCH_BASE=<another checkout, built> each iteration also runs hpcc
// under that checkout's dtrun, after this one's, and reports its figures
// with the suffix -base: a change and its base on the same machine state.
// DTPA_BENCH_BASE_ENV adds variables (space-separated NAME=value) to the
// base's runs.
// The ra- metrics are the same ratios of hpcc's own timing of its two
// MPIRandomAccess runs ("Real time used", hpccoutf.txt): the part of the
// run that polls (~1 M MPI_Testany per rank), without the launcher's
// start and end, which move the wall time by as much as tracing does.
func BenchmarkHPCC(b *testing.B) {
	m := impls[0]
	for _, c := range []string{m.cc, m.mpirun} {
		if _, err := exec.LookPath(c); err != nil {
			b.Skipf("%s not installed", c)
		}
	}
	exe, err := exec.LookPath("hpcc")
	if err != nil {
		b.Skip("hpcc not installed (apt-get install --no-install-recommends hpcc)")
	}
	in, err := os.ReadFile(filepath.Join(root, "testdata", "apps", "hpccinf.txt"))
	if err != nil {
		b.Fatal(err)
	}
	n := "1000"
	if v := os.Getenv("DTPA_HPCC_N"); v != "" {
		n = v
	}
	in = bytes.Replace(in, []byte("\n200          Ns"), []byte("\n"+n+strings.Repeat(" ", max(1, 13-len(n)))+"Ns"), 1)
	roots := []string{root}
	if base := os.Getenv("DTPA_BENCH_BASE"); base != "" {
		roots = append(roots, base)
	}
	var plain, plainRA []float64              // seconds per run
	traced := make([][]float64, len(roots))   // per tracer build
	tracedRA := make([][]float64, len(roots)) // MPIRandomAccess's seconds
	var bytesOnDisk, events float64
	for i := 0; i < b.N; i++ {
		dirs := make([]string, 1+len(roots))
		order := []int{0, 1, 2}[:len(dirs)]
		if i%2 == 1 { // the two builds take turns in running first
			slices.Reverse(order[1:])
		}
		for _, k := range order {
			dir := b.TempDir()
			dirs[k] = dir
			if err := os.WriteFile(filepath.Join(dir, "hpccinf.txt"), in, 0o644); err != nil {
				b.Fatal(err)
			}
			name, args := m.mpirun, []string{"-np", "4"}
			if k > 0 {
				name, args = filepath.Join(roots[k-1], "bin", "dtrun"), []string{"--mpirun", m.mpirun, "-np", "4"}
			}
			args = append(append(args, m.args...), exe)
			cmd := exec.Command(name, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), mpiEnv...)
			if k == 2 {
				cmd.Env = append(cmd.Env, strings.Fields(os.Getenv("DTPA_BENCH_BASE_ENV"))...)
			}
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
			}
			wall := time.Since(start).Seconds()
			ra, err := randomAccessSeconds(dir)
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				plain, plainRA = append(plain, wall), append(plainRA, ra)
			} else {
				traced[k-1] = append(traced[k-1], wall)
				tracedRA[k-1] = append(tracedRA[k-1], ra)
			}
		}
		for r := 0; r < 4; r++ {
			path := filepath.Join(dirs[1], "hpcc."+strconv.Itoa(r)+".trc")
			n, size, err := countEvents(path)
			if err != nil {
				b.Fatalf("%s: %v", path, err)
			}
			events += float64(n)
			bytesOnDisk += float64(size)
		}
	}
	// With 4 ranks on 2 cores a run's wall time swings by up to 2× (the
	// ranks yield to each other in every wait; hpcc's RandomAccess, ~half
	// of the run, moves most): the best run of each kind and the median of
	// the pairs' ratios say more than means.
	b.ReportMetric(slices.Min(plain), "s-untraced-best")
	for k, tr := range traced {
		sfx := ""
		if k > 0 {
			sfx = "-base"
		}
		ratios := pairRatios(tr, plain)
		b.ReportMetric(slices.Min(tr), "s-traced-best"+sfx)
		b.ReportMetric(slices.Min(tr)/slices.Min(plain), "slowdown-best"+sfx)
		b.ReportMetric(ratios[len(ratios)/2], "slowdown-median"+sfx)
		b.ReportMetric(ratios[0], "slowdown-min"+sfx)
		b.ReportMetric(ratios[len(ratios)-1], "slowdown-max"+sfx)
		ra := pairRatios(tracedRA[k], plainRA)
		b.ReportMetric(slices.Min(tracedRA[k])/slices.Min(plainRA), "ra-slowdown-best"+sfx)
		b.ReportMetric(ra[len(ra)/2], "ra-slowdown-median"+sfx)
		if k == 0 {
			var sum float64
			for _, t := range tr {
				sum += t
			}
			b.ReportMetric(events/sum, "calls/s")
		}
	}
	b.ReportMetric(bytesOnDisk/events, "B/call")
	b.ReportMetric(0, "ns/op")
}

// pairRatios returns a[i] / b[i], sorted.
func pairRatios(a, b []float64) []float64 {
	r := make([]float64, len(b))
	for i := range b {
		r[i] = a[i] / b[i]
	}
	slices.Sort(r)
	return r
}

// randomAccessSeconds sums hpcc's "Real time used" of its MPIRandomAccess
// runs (hpccoutf.txt in dir; their verifications are left out).
func randomAccessSeconds(dir string) (float64, error) {
	out, err := os.ReadFile(filepath.Join(dir, "hpccoutf.txt"))
	if err != nil {
		return 0, err
	}
	var sum float64
	n := 0
	for _, sec := range strings.Split(string(out), "Begin of MPIRandomAccess")[1:] {
		for _, line := range strings.Split(sec, "\n") {
			v, ok := strings.CutPrefix(line, "Real time used = ")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, " seconds"), 64)
			if err != nil {
				return 0, fmt.Errorf("hpccoutf.txt: %q: %w", line, err)
			}
			sum += f
			n++
			break
		}
	}
	if n == 0 {
		return 0, errors.New("hpccoutf.txt: no MPIRandomAccess timing")
	}
	return sum, nil
}

// countEvents reads a whole trace file and returns the MPI calls its events
// stand for (a folded run of polls is its Calls calls) and its size.
func countEvents(path string) (int, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path})
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for {
		e, err := rd.ReadEvent()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return n, st.Size(), err
		}
		n += int(e.NumCalls())
	}
	if rd.Footer() == nil || rd.Footer().DroppedEvents != 0 {
		return n, st.Size(), errors.New("no footer, or dropped events")
	}
	return n, st.Size(), nil
}
