package e2e

import (
	"bytes"
	"errors"
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
	in = bytes.Replace(in, []byte("\n200          Ns"), []byte("\n1000         Ns"), 1)
	var plain, traced []float64 // seconds per run
	var bytesOnDisk, events float64
	for i := 0; i < b.N; i++ {
		dirs := [2]string{b.TempDir(), b.TempDir()}
		for k, dir := range dirs {
			if err := os.WriteFile(filepath.Join(dir, "hpccinf.txt"), in, 0o644); err != nil {
				b.Fatal(err)
			}
			name, args := m.mpirun, []string{"-np", "4"}
			if k == 1 {
				name, args = filepath.Join(root, "bin", "dtrun"), []string{"--mpirun", m.mpirun, "-np", "4"}
			}
			args = append(append(args, m.args...), exe)
			cmd := exec.Command(name, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), mpiEnv...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
			}
			if k == 0 {
				plain = append(plain, time.Since(start).Seconds())
			} else {
				traced = append(traced, time.Since(start).Seconds())
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
	ratios := make([]float64, len(plain))
	for i := range plain {
		ratios[i] = traced[i] / plain[i]
	}
	slices.Sort(ratios)
	b.ReportMetric(slices.Min(plain), "s-untraced-best")
	b.ReportMetric(slices.Min(traced), "s-traced-best")
	b.ReportMetric(slices.Min(traced)/slices.Min(plain), "slowdown-best")
	b.ReportMetric(ratios[len(ratios)/2], "slowdown-median")
	var sum float64
	for _, t := range traced {
		sum += t
	}
	b.ReportMetric(events/sum, "calls/s")
	b.ReportMetric(bytesOnDisk/events, "B/call")
	b.ReportMetric(0, "ns/op")
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
