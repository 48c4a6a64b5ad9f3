package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/headless"
)

// TestMPIAPI traces testdata/apps/mpiapi.c (one MPI API family per
// interval: nonblocking file I/O, a generalized request, MPI_Comm_idup,
// MPI_Ibarrier, MPI_Mprobe with MPI_ANY_SOURCE, persistent point-to-point
// and (MPI 4, MPICH only: Open MPI 4.1 has them as MPIX_ extensions, not
// traced) persistent collectives, a neighbourhood allgather, RMA fences and
// request-based RMA, an intercommunicator, a cancelled receive) under both
// MPIs: every operation must be matched, with no stall and no warning; the
// Chrome export ties the nonblocking and persistent collectives' starts to
// their completions (checkCollTies).
func TestMPIAPI(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "mpiapi")
			// Run as a batch system's job (Cobalt's variable: Open MPI's
			// and MPICH's launchers take Slurm's, PBS's or Flux's for a
			// job to launch through): the traces name it.
			trace(t, m, dir, []string{"TMPDIR=" + dir, "COBALT_JOBID=4242"}, 4, exe)
			r, stderr := analyse(t, dir, "mpiapi")
			checkClean(t, r, stderr, false, -1)
			if r.Run == nil || r.Run.BatchJob != "cobalt 4242" {
				t.Errorf("run facts %+v, want the batch job cobalt 4242", r.Run)
			}
			// One interval per family.
			if n := len(r.Intervals); n < 12 {
				t.Errorf("%d intervals, want the whole program and 11 families", n)
			}
			checkCollTies(t, dir)
		})
	}
}

// checkCollTies exports mpiapi's traces in dir with dtpa --export chrome:
// on each of the 4 ranks, the MPI_Ibarrier and each MPI_Start of a
// persistent collective (3 of MPI_Barrier_init's, 3 of
// MPI_Allreduce_init's, where the MPI has them) name an instance in their
// args (coll), the same on every rank, which the MPI_Wait after it
// completes (completes), and a "collective" flow runs from the start to
// that MPI_Wait. The page of dtpa --html draws as many links on its
// timeline in headless chromium.
func checkCollTies(t *testing.T, dir string) {
	t.Helper()
	tr := exportChrome(t, dir, "mpiapi")
	type rankTies struct {
		starts, pinits int
		ids            []string // of the starts, in call order
		links          int
	}
	ranks := map[int]*rankTies{}
	for _, s := range tr.Slices {
		if s.Cat != "mpi" {
			continue
		}
		k := ranks[s.Pid-1]
		if k == nil {
			k = &rankTies{}
			ranks[s.Pid-1] = k
		}
		id, _ := s.Args["coll"].(string)
		switch {
		case s.Name == "MPI_Barrier_init" || s.Name == "MPI_Allreduce_init":
			k.pinits++
		case s.Name == "MPI_Ibarrier" || s.Name == "MPI_Start" && id != "":
			k.starts++
			k.ids = append(k.ids, id)
		}
	}
	for _, f := range tr.Flows {
		if f.Name != "collective" {
			continue
		}
		a, z := tr.Slices[f.From], tr.Slices[f.To]
		id, _ := a.Args["coll"].(string)
		if a.Pid != z.Pid || z.Name != "MPI_Wait" || id == "" || z.Args["completes"] != id {
			t.Errorf("collective flow from %s (%v) on rank %d to %s (%v) on rank %d", a.Name, a.Args, a.Pid-1, z.Name, z.Args, z.Pid-1)
			continue
		}
		ranks[a.Pid-1].links++
	}
	if len(ranks) != 4 {
		t.Fatalf("%d ranks in the export", len(ranks))
	}
	for r := range 4 {
		k := ranks[r]
		want := 1
		if k.pinits > 0 {
			want += 6
		}
		if k.starts != want || k.links != want {
			t.Errorf("rank %d: %d starts tied to an instance, %d linked to their MPI_Wait, want %d", r, k.starts, k.links, want)
		}
		if strings.Join(k.ids, " ") != strings.Join(ranks[0].ids, " ") {
			t.Errorf("rank %d's instances %q, rank 0's %q", r, k.ids, ranks[0].ids)
		}
		seen := map[string]bool{}
		for _, id := range k.ids {
			if seen[id] {
				t.Errorf("rank %d: two starts joined instance %s", r, id)
			}
			seen[id] = true
		}
	}
	t.Logf("%d collective starts tied on each rank", ranks[0].starts)
	page := filepath.Join(dir, "mpiapi.html")
	run(t, dir, nil, time.Minute, filepath.Join(root, "bin", "dtpa"), "--html", "-o", page, "mpiapi")
	p := headless.Open(t, page)
	headless.CheckReport(t, p)
	tl := regexp.MustCompile(`<div id="timeline"[^>]*>`).FindString(p.DOM)
	if want := fmt.Sprintf(`data-coll-links="%d"`, 4*ranks[0].starts); !strings.Contains(tl, want) {
		t.Errorf("timeline element %s lacks %s", tl, want)
	}
}
