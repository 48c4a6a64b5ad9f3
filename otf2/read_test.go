package otf2

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

var nan = math.NaN()

var traces = []string{"scorep_ls4", "scorep_coll4", "scorep_lammps_melt"}

// Every MPI call otf2-print lists (ENTER of an MPI_* region) is one call
// of the imported traces, per function, and the event totals agree.
func TestImportCallCountsEqualOTF2Print(t *testing.T) {
	for _, name := range traces {
		t.Run(name, func(t *testing.T) {
			im := importArchive(t, archivePath(t, name))
			want := map[string]uint64{}
			var events uint64
			for _, e := range printedEvents(t, im.stats.Archive) {
				events++
				if e.kind == "ENTER" && strings.HasPrefix(e.region, "MPI_") {
					want[e.region]++
				}
			}
			if fmt.Sprint(im.stats.Calls) != fmt.Sprint(want) {
				t.Errorf("MPI calls by function:\n got  %v\n want %v (otf2-print)", im.stats.Calls, want)
			}
			if im.stats.Events != events {
				t.Errorf("events read: %d, otf2-print lists %d", im.stats.Events, events)
			}
			if im.stats.Ranks != 4 || len(im.stats.Files) != 4 {
				t.Errorf("ranks %d, files %v; want 4", im.stats.Ranks, im.stats.Files)
			}
			// And the analyzer counts the same calls in the files written,
			// but for MPI_Init and MPI_Finalize, which bound the analysed
			// run rather than lie in it.
			delete(want, "MPI_Init")
			delete(want, "MPI_Finalize")
			rep, _ := im.analyze(t)
			got := map[string]uint64{}
			for _, f := range rep.Intervals[0].Functions {
				got[f.Function] += uint64(f.Calls)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the analyzer's calls by function:\n got  %v\n want %v (otf2-print)", got, want)
			}
			if len(im.warns) > 0 {
				t.Errorf("unexpected import warnings: %q", im.warns)
			}
		})
	}
}

// Scalasca 2.6's figures on the same traces (../shared/otf2/README.md),
// seconds summed over the 4 processes.
var scalasca = []struct {
	trace string
	// Late Sender (incl. wrong order) + Late Receiver: our Real Sync.
	realSync float64
	// Wait at Barrier + Wait at N x N + Late Broadcast + Early Reduce +
	// Early Scan; comparable with our Potential Sync when every rooted
	// collective's latest participant is its root (Bcast) or a sender
	// that entered with the first (Reduce): docs/characteristics.md §10.
	potentialSync float64
	potComparable bool
	// Wait at Barrier + Wait at N x N alone: the same definition in both.
	allToAll float64
}{
	{"scorep_ls4", 1.0025431690 + 0.0000074370, 2.0079236360, true, 2.0079236360},
	{"scorep_coll4", 0, 1.2040183440 + 0.9079055860 + 0.1024510450, true, 1.2040183440},
	{"scorep_lammps_melt", 0.0080528130 + 0.1903377690,
		0.0082306350 + 0.0135571160 + 0.0049706780 + 0.0001863760 + 0.0000283980, false, 0.0082306350 + 0.0135571160},
}

func TestRealAndPotentialSyncMatchScalasca(t *testing.T) {
	for _, c := range scalasca {
		t.Run(c.trace, func(t *testing.T) {
			rep, _ := importArchive(t, archivePath(t, c.trace)).analyze(t)
			var rs, ps float64
			for _, rk := range rep.Intervals[0].Ranks {
				rs += rk.RealSync
				ps += rk.PotentialSync
			}
			if !within(rs, c.realSync) {
				t.Errorf("Real Sync %.6f s, Scalasca's Late Sender + Late Receiver %.6f s", rs, c.realSync)
			}
			if c.potComparable && !within(ps, c.potentialSync) {
				t.Errorf("Potential Sync %.6f s, Scalasca's collective waits %.6f s", ps, c.potentialSync)
			}
			w := waitsBy(rep)
			var a2a float64
			for _, k := range []string{"wait_at_barrier", "wait_at_nxn"} {
				for _, s := range w[k] {
					a2a += s
				}
			}
			if !within(a2a, c.allToAll) {
				t.Errorf("Wait at Barrier + Wait at N x N: ours %.6f s, Scalasca's %.6f s", a2a, c.allToAll)
			}
			t.Logf("Real Sync %.6f (Scalasca %.6f), Potential Sync %.6f (Scalasca %.6f), all-to-all %.6f (%.6f)",
				rs, c.realSync, ps, c.potentialSync, a2a, c.allToAll)
		})
	}
}

// Scalasca's per-process figures where the README gives them, by our wait
// kind (report.Wait.Kind); NaN where it gives none: Early Reduce is the
// root's alone in Scalasca, while our Potential Sync also counts the
// senders' wait for the latest sender (§10).
var scalascaPerProcess = []struct {
	trace, kind string
	byRank      [4]float64
}{
	{"scorep_ls4", "late_sender", [4]float64{0, 1.00234, 0, 0.000198}},
	{"scorep_ls4", "wait_at_barrier", [4]float64{0.000946, 0, 1.0036, 1.00337}},
	{"scorep_coll4", "wait_at_nxn", [4]float64{0.600982, 0.401726, 0.201311, 0}},
	{"scorep_coll4", "late_broadcast", [4]float64{0, 0.302731, 0.302326, 0.302848}},
	{"scorep_coll4", "early_reduce", [4]float64{nan, nan, nan, 0.1024510450}},
}

func TestWaitKindsPerProcessMatchScalasca(t *testing.T) {
	reps := map[string]map[string]map[int]float64{}
	for _, c := range scalascaPerProcess {
		w, ok := reps[c.trace]
		if !ok {
			rep, _ := importArchive(t, archivePath(t, c.trace)).analyze(t)
			w = waitsBy(rep)
			reps[c.trace] = w
		}
		for r, want := range c.byRank {
			if math.IsNaN(want) {
				continue
			}
			if got := w[c.kind][r]; !within(got, want) {
				t.Errorf("%s: %s of rank %d: ours %.6f s, Scalasca's %.6f s", c.trace, c.kind, r, got, want)
			}
		}
	}
}

// Rooted and prefix collectives: our Potential Sync is, at every
// collective, the latest participant's entry minus one's own (§3.4); its
// kinds split it into the part Scalasca's pattern explains (for a
// broadcast, the root's entry minus a non-root's: Late Broadcast) and the
// rest, wait_at_collective (§9.1). Both are recomputed here from
// otf2-print's timestamps: late_broadcast must equal the root's lateness
// and Scalasca's Late Broadcast, and the rooted and prefix kinds with
// wait_at_collective must add up to the latest-entry definition, which
// shows the figures differ by definition only (docs/characteristics.md §10).
func TestRootedCollectivesByDefinition(t *testing.T) {
	// Scalasca 2.6's Late Broadcast, Early Reduce and Early Scan sums
	// (../shared/otf2/README.md): our kinds must equal them within 0.1 %
	// or 1 µs, much closer than the 2 % the issue asks of Real and
	// Potential Sync.
	scalasca := map[string]map[string]float64{
		"scorep_coll4":       {"MPI_Bcast": 0.9079055860, "MPI_Reduce": 0.1024510450},
		"scorep_lammps_melt": {"MPI_Bcast": 0.0049706780, "MPI_Reduce": 0.0001863760, "MPI_Scan": 0.0000283980},
	}
	near := func(got, want float64) bool { d := math.Abs(got - want); return d <= 1e-6 || d <= 1e-3*want }
	kinds := map[string]string{"MPI_Bcast": "late_broadcast", "MPI_Reduce": "early_reduce", "MPI_Scan": "wait_at_scan"}
	for _, name := range []string{"scorep_coll4", "scorep_lammps_melt"} {
		t.Run(name, func(t *testing.T) {
			im := importArchive(t, archivePath(t, name))
			rep, _ := im.analyze(t)
			w := waitsBy(rep)
			// Entries of each function per rank, in order (all on WORLD
			// in these programs, root 0 for MPI_Bcast).
			entries := map[string]map[int][]uint64{}
			for _, e := range printedEvents(t, im.stats.Archive) {
				if e.kind == "ENTER" && kinds[e.region] != "" {
					if entries[e.region] == nil {
						entries[e.region] = map[int][]uint64{}
					}
					entries[e.region][e.loc] = append(entries[e.region][e.loc], e.time)
				}
			}
			fns := make([]string, 0, len(entries))
			for fn := range entries {
				fns = append(fns, fn)
			}
			sort.Strings(fns)
			sum := func(kind string) float64 {
				var s float64
				for _, v := range w[kind] {
					s += v
				}
				return s
			}
			var allLatest, allOurs float64
			for _, fn := range fns {
				byRank := entries[fn]
				var latestMinusOwn, rootMinusOwn float64
				for i := range byRank[0] {
					var latest uint64
					for r := 0; r < 4; r++ {
						latest = max(latest, byRank[r][i])
					}
					for r := 0; r < 4; r++ {
						latestMinusOwn += float64(latest-byRank[r][i]) / 1e9
						if r > 0 && byRank[0][i] > byRank[r][i] {
							rootMinusOwn += float64(byRank[0][i]-byRank[r][i]) / 1e9
						}
					}
				}
				ours := sum(kinds[fn])
				allLatest += latestMinusOwn
				allOurs += ours
				t.Logf("%s: our %s %.6f, latest entry − own entry %.6f", fn, kinds[fn], ours, latestMinusOwn)
				if want, ok := scalasca[name][fn]; ok && !near(ours, want) {
					t.Errorf("%s: our %s %.9f s, Scalasca's %.9f s", fn, kinds[fn], ours, want)
				}
				if fn != "MPI_Bcast" {
					continue
				}
				// Sub-microsecond shifts: the analyzer repairs Score-P's
				// few clock-condition violations before computing waits.
				if d := ours - rootMinusOwn; d > 1e-5 || d < -1e-5 {
					t.Errorf("%s: our late_broadcast %.9f s, root's entry − own entry %.9f s", fn, ours, rootMinusOwn)
				}
			}
			allOurs += sum("wait_at_collective")
			if d := allOurs - allLatest; d > 2e-5 || d < -2e-5 {
				t.Errorf("rooted and prefix kinds with wait_at_collective %.9f s, latest entry − own entry %.9f s", allOurs, allLatest)
			}
		})
	}
}

func fmtCalls(m map[string]uint64) string { return fmt.Sprint(m) }
