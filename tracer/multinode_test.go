package tracer_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// nodes writes a wrapper that runs prog as if the ranks were on k nodes:
// node<r%k> for rank r (DT_HOSTNAME), with that node's spill
// directory under base (DT_SPILL_DIR; dtrun's own stays unused, as on a
// node other than dtrun's). The rank comes from the launcher's environment.
func nodes(t *testing.T, base, prog string, k int) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "node.sh")
	body := fmt.Sprintf(`#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}
n=node$((r %% %d))
DT_HOSTNAME=$n DT_SPILL_DIR=%s/$n exec %s "$@"
`, k, base, prog)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// sync is the trace's clock-sync record of phase, nil if it has none.
func (tr *trace) sync(phase tracepb.ClockSync_Phase) *tracepb.ClockSync {
	var s *tracepb.ClockSync
	for _, c := range tr.syncs {
		if c.Phase == phase {
			s = c
		}
	}
	return s
}

// TestMultiNode runs 4 ranks on two simulated nodes (node0: ranks 0 and 2,
// node1: ranks 1 and 3) under both MPIs: each node's ranks share a clock
// led by its lowest rank, the leaders are measured against each other, the
// headers name the nodes, and each node's spill directory is made by the
// ranks and gone at the end.
func TestMultiNode(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			prog := build(t, "pingpong", mpi.cc)
			dir, base := t.TempDir(), t.TempDir()
			dtrunOK(t, dir, nil, "--mpirun", mpi.run, "-n", "4", nodes(t, base, prog, 2))
			trs := readTraces(t, dir, "pingpong", 4)
			checkComplete(t, trs)
			checkPingPong(t, trs)
			for r, tr := range trs {
				if want := fmt.Sprintf("node%d", r%2); tr.hdr.Hostname != want {
					t.Errorf("rank %d: host %q, want %q", r, tr.hdr.Hostname, want)
				}
				leader := r % 2
				for _, phase := range []tracepb.ClockSync_Phase{tracepb.ClockSync_INIT, tracepb.ClockSync_FINALIZE} {
					s := tr.sync(phase)
					switch {
					case s == nil:
						t.Errorf("rank %d: no %v clock sync", r, phase)
					case r == 1: // node1's leader, measured against node0's
						if s.SameClock || s.Reference != 0 || len(s.LocalSendNs) < 10 {
							t.Errorf("rank 1 %v: same %v reference %d, %d samples; want rank 0's clock measured", phase, s.SameClock, s.Reference, len(s.LocalSendNs))
						}
					case !s.SameClock || int(s.Reference) != leader:
						t.Errorf("rank %d %v: same %v reference %d, want rank %d's clock", r, phase, s.SameClock, s.Reference, leader)
					}
				}
			}
			for _, n := range []string{"node0", "node1"} {
				if fileExists(filepath.Join(base, n)) {
					t.Errorf("spill directory of %s left behind", n)
				}
			}
		})
	}
}

// TestMultiNodeKill kills rank 1 (SIGKILL) on the simulated node1: dtrun,
// on another node, cannot recover its last records and says how; `dtrun
// --recover` on that node's spill directory completes the trace.
func TestMultiNodeKill(t *testing.T) {
	prog := build(t, "crash", ompi)
	dir, base := t.TempDir(), t.TempDir()
	res := dtrun(t, dir, nil, append(oversub[:len(oversub):len(oversub)], nodes(t, base, prog, 2), "kill")...)
	if res.code == 0 {
		t.Fatalf("exit 0, want a failure\n%s", res.out)
	}
	if !strings.Contains(res.out, "dtrun --recover ") {
		t.Errorf("dtrun does not say how to recover rank 1's records:\n%s", res.out)
	}
	path := filepath.Join(dir, "crash.1.trc")
	if tr := readTrace(t, path); tr.footer != nil {
		t.Fatalf("rank 1 has a footer before recovery: %v", tr.footer)
	}
	spill := filepath.Join(base, "node1")
	rec := dtrun(t, dir, nil, "--recover", spill)
	if rec.code != 0 || !strings.Contains(rec.out, "events recovered") {
		t.Fatalf("dtrun --recover: exit %d\n%s", rec.code, rec.out)
	}
	tr := readTrace(t, path)
	if tr.err != nil || tr.footer.GetStopReason() != tracepb.Footer_SIGNAL || len(tr.calls("MPI_Comm_size")) != 1 {
		t.Errorf("rank 1 after recovery: footer %v err %v, %d events; want the events up to MPI_Comm_size", tr.footer, tr.err, len(tr.events))
	}
	if fileExists(spill) {
		t.Errorf("%s left behind after recovery", spill)
	}
	// Node 0's ranks end when the launcher stops the job, by SIGTERM
	// and, on a loaded machine, SIGKILL before they wrote their traces'
	// end: their spill directory is then left for recovery, as node 1's.
	if spill0 := filepath.Join(base, "node0"); fileExists(spill0) {
		if rec := dtrun(t, dir, nil, "--recover", spill0); rec.code != 0 {
			t.Fatalf("dtrun --recover %s: exit %d\n%s", spill0, rec.code, rec.out)
		}
	}
	trs := readTraces(t, dir, "crash", 4)
	checkSurvivors(t, trs, 1)
}

// TestClockGroupsTree runs 3, 5 and 7 ranks (and 5 under MPICH) on three
// simulated nodes (rank r on node r%3): the groups' exchange at MPI_Init and
// the barriers of the leaders' clock sync are point-to-point messages up and
// down a binomial tree (dt_clock.c, tree_allgather), and rank counts that are
// not powers of two cut its subtrees short. Every rank must get the same run
// id and its node's leader (ranks 1 and 2 measured against rank 0), and the
// program's own collectives after MPI_Init must be unaffected.
func TestClockGroupsTree(t *testing.T) {
	for _, k := range []struct {
		cc, run string
		np      int
	}{{ompi, "mpirun.openmpi", 3}, {ompi, "mpirun.openmpi", 5}, {ompi, "mpirun.openmpi", 7}, {"mpicc.mpich", "mpiexec.mpich", 5}} {
		t.Run(fmt.Sprintf("%s/np%d", k.run, k.np), func(t *testing.T) {
			prog := build(t, "initcost", k.cc)
			dir, base := t.TempDir(), t.TempDir()
			script := nodes(t, base, prog, 3)
			args := []string{"--mpirun", k.run, "-n", strconv.Itoa(k.np), script}
			if k.run == "mpirun.openmpi" {
				args = append([]string{"--mpirun", k.run, "--oversubscribe"}, args[2:]...)
			}
			dtrunOK(t, dir, nil, args...)
			trs := readTraces(t, dir, "initcost", k.np)
			checkComplete(t, trs)
			for r, tr := range trs {
				if !bytes.Equal(tr.hdr.RunId, trs[0].hdr.RunId) || len(tr.hdr.RunId) != 16 {
					t.Errorf("rank %d: run id %x, rank 0's %x", r, tr.hdr.RunId, trs[0].hdr.RunId)
				}
				if len(tr.calls("MPI_Reduce")) != 1 || len(tr.calls("MPI_Barrier")) != 1 {
					t.Errorf("rank %d: %d MPI_Reduce, %d MPI_Barrier, want 1 each", r, len(tr.calls("MPI_Reduce")), len(tr.calls("MPI_Barrier")))
				}
				for _, phase := range []tracepb.ClockSync_Phase{tracepb.ClockSync_INIT, tracepb.ClockSync_FINALIZE} {
					s := tr.sync(phase)
					switch {
					case s == nil:
						t.Errorf("rank %d: no %v clock sync", r, phase)
					case r == 1 || r == 2: // leaders of node1 and node2, measured against node0's
						if s.SameClock || s.Reference != 0 || len(s.LocalSendNs) < 10 {
							t.Errorf("rank %d %v: same %v reference %d, %d samples; want rank 0's clock measured", r, phase, s.SameClock, s.Reference, len(s.LocalSendNs))
						}
					case !s.SameClock || int(s.Reference) != r%3:
						t.Errorf("rank %d %v: same %v reference %d, want rank %d's clock", r, phase, s.SameClock, s.Reference, r%3)
					}
				}
			}
		})
	}
}

// TestMultiNodeCompaction runs 4 ranks on two simulated nodes, by the
// launcher itself (no dtrun to compact after the job):
// node0's spill directory holds dtrun's mark naming the trace directory,
// as dtrun's own node's does, and its ranks leave their traces deferred
// for dtrun; node1's lacks it, as another node's, and its ranks compact
// their own as they end (rt/dt_cw.c, dtrun_compacts). dtrun --compact
// then completes node0's, and all four are the ping-pong's.
func TestMultiNodeCompaction(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			prog := build(t, "pingpong", mpi.cc)
			dir, base := t.TempDir(), t.TempDir()
			os.MkdirAll(filepath.Join(base, "node0"), 0o700)
			if err := os.WriteFile(filepath.Join(base, "node0", ".dtrun"), []byte(dir), 0o600); err != nil {
				t.Fatal(err)
			}
			script := nodes(t, base, prog, 2)
			if res := run(t, dir, nil, mpi.run, preloaded(mpi.run, nil, script)...); res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", mpi.run, res.code, res.out)
			}
			for r := 0; r < 4; r++ {
				want := uint16(traceformat.VersionMajor)
				if r%2 == 0 {
					want = traceformat.DeferredMajor
				}
				if m := preambleMajor(t, filepath.Join(dir, fmt.Sprintf("pingpong.%d.trc", r))); m != want {
					t.Errorf("rank %d (node%d): major version %#x, want %#x", r, r%2, m, want)
				}
			}
			if res := dtrun(t, dir, nil, "--compact", "pingpong"); res.code != 0 || !strings.Contains(res.out, "2 of 4 traces compacted") {
				t.Fatalf("dtrun --compact: exit %d\n%s", res.code, res.out)
			}
			trs := readTraces(t, dir, "pingpong", 4)
			checkComplete(t, trs)
			checkPingPong(t, trs)
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
