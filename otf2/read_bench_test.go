package otf2

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/dtpa/dtpa/internal/procstat"
)

// BenchmarkImport converts an archive into our trace files: OTF2 events
// per second of wall time and per CPU second (Import is sequential; the
// CPU time, the garbage collector's included, is what a loaded machine
// does not distort), and the process's peak resident memory. Large is a
// synthetic ring of 4 ranks × 1,000,001 events (read_gen_test.go);
// LAMMPS the real Score-P archive of 77,352 events, where opening the
// archive and the per-rank files weighs more.
func BenchmarkImport(b *testing.B) {
	b.Run("Large", func(b *testing.B) {
		benchImport(b, writeMPIArchive(b, b.TempDir(), 4, 100_000))
	})
	b.Run("LAMMPS", func(b *testing.B) { benchImport(b, archivePath(b, "scorep_lammps_melt")) })
}

func benchImport(b *testing.B, archive string) {
	var events uint64
	cpu0 := cpuSeconds()
	for b.Loop() {
		st, err := Import(context.Background(), archive, b.TempDir(), "app", nil)
		if err != nil {
			b.Fatal(err)
		}
		events += st.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/(cpuSeconds()-cpu0), "events/cpu-s")
	b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-RSS-MB")
}

// BenchmarkReadOnly is libotf2's reading with the records decoded but not
// converted: the C reader's own rate, for comparison.
func BenchmarkReadOnly(b *testing.B) {
	b.Run("Large", func(b *testing.B) {
		benchReadOnly(b, writeMPIArchive(b, b.TempDir(), 4, 100_000))
	})
	b.Run("LAMMPS", func(b *testing.B) { benchReadOnly(b, archivePath(b, "scorep_lammps_melt")) })
}

func benchReadOnly(b *testing.B, archive string) {
	anchor, err := Anchor(archive)
	if err != nil {
		b.Fatal(err)
	}
	var events uint64
	cpu0 := cpuSeconds()
	for b.Loop() {
		a, err := openArchive(anchor)
		if err != nil {
			b.Fatal(err)
		}
		d, err := a.readDefs(strings.TrimSuffix(anchor, ".otf2") + ".def")
		if err != nil {
			b.Fatal(err)
		}
		l, err := d.mpiLayout("defs")
		if err != nil {
			b.Fatal(err)
		}
		if err := a.selectLocations(l.ranks); err != nil {
			b.Fatal(err)
		}
		for _, loc := range l.ranks {
			n, _, _, err := a.readLocation(loc, ^uint64(0), func([]rec) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			events += n
		}
		a.close()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/(cpuSeconds()-cpu0), "events/cpu-s")
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
