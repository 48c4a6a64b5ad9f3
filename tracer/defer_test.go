package tracer_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/tracer/records"
)

// callList is what a trace says of each call but its times: function,
// communicator, peers, tags and bytes, in order.
func callList(tr *trace) []string {
	var out []string
	for _, e := range tr.events {
		out = append(out, fmt.Sprintf("%s c%d s%d:%d r%d:%d %d/%d n%d", tr.name(e), e.Comm, e.SendPeer, e.SendTag,
			e.RecvPeer, e.RecvTag, e.SendBytes, e.RecvBytes, e.Calls))
	}
	return out
}

func preambleMajor(t *testing.T, path string) uint16 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < traceformat.PreambleSize {
		t.Fatalf("%s: %v", path, err)
	}
	return binary.LittleEndian.Uint16(b[8:])
}

// TestDeferredEncoding runs the same programs (point-to-point, collectives, and a tight
// loop that fills buffer after buffer) under both MPIs with encoding during
// the run (DT_DEFER_MB=0), deferred with a budget that runs out early
// (1 MB: raw records first, then encoded ones) and deferred throughout
// (the default), compacted by each rank as it ends or, with
// DT_COMPACT_AT_END=0, by dtrun after the job: every trace is then an
// ordinary one, complete, with the same calls.
func TestDeferredEncoding(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		for _, prog := range []struct {
			name string
			args []string
		}{{"pingpong", nil}, {"collectives", nil}, {"loop", []string{"100000"}}} {
			t.Run(mpi.run+"/"+prog.name, func(t *testing.T) {
				bin := build(t, prog.name, mpi.cc)
				var want [][]string
				for _, v := range []struct{ mb, atEnd string }{{"0", ""}, {"1", ""}, {"", ""}, {"", "0"}} {
					mb := v.mb
					dir := t.TempDir()
					var env []string
					if mb != "" {
						env = append(env, "DT_DEFER_MB="+mb)
					}
					if v.atEnd != "" {
						env = append(env, "DT_COMPACT_AT_END="+v.atEnd)
						mb += " DT_COMPACT_AT_END=" + v.atEnd
					}
					args := append([]string{"--mpirun", mpi.run, "-n", "4", bin}, prog.args...)
					if mpi.run == "mpirun.openmpi" {
						args = append([]string{"--mpirun", mpi.run, "--oversubscribe", "-x", "DT_DEFER_MB", "-x", "DT_COMPACT_AT_END",
							"-n", "4", bin}, prog.args...)
					}
					res := dtrun(t, dir, env, args...)
					if res.code != 0 {
						t.Fatalf("DT_DEFER_MB=%q: exit %d\n%s", mb, res.code, res.out)
					}
					trs := readTraces(t, dir, prog.name, 4)
					checkComplete(t, trs)
					for r := range trs {
						if m := preambleMajor(t, filepath.Join(dir, fmt.Sprintf("%s.%d.trc", prog.name, r))); m != traceformat.VersionMajor {
							t.Errorf("DT_DEFER_MB=%q rank %d: major version %#x after dtrun", mb, r, m)
						}
						calls := callList(trs[r])
						if mb == "0" {
							want = append(want, calls)
						} else if strings.Join(calls, "\n") != strings.Join(want[r], "\n") {
							t.Errorf("DT_DEFER_MB=%q rank %d: %d calls differ from the %d of the trace encoded during the run",
								mb, r, len(calls), len(want[r]))
						}
					}
				}
			})
		}
	}
}

// TestDeferredCompactedByRanks: without dtrun to compact them (the program
// run with the tracer preloaded and a spill directory, as dtrun runs it,
// but by the launcher itself), the ranks' deferred traces are ordinary,
// complete ones when the job ends, under both MPIs: each rank compacted its
// own after MPI_Finalize, and left no temporary file.
func TestDeferredCompactedByRanks(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			bin := build(t, "pingpong", mpi.cc)
			dir, spill := t.TempDir(), t.TempDir()
			if res := run(t, dir, nil, mpi.run, preloaded(mpi.run, []string{"DT_SPILL_DIR=" + spill}, bin)...); res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", mpi.run, res.code, res.out)
			}
			for r := 0; r < 4; r++ {
				if m := preambleMajor(t, filepath.Join(dir, fmt.Sprintf("pingpong.%d.trc", r))); m != traceformat.VersionMajor {
					t.Errorf("rank %d: major version %#x, want a compacted trace", r, m)
				}
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

// TestWithoutDtrun: a program started by the launcher alone with the
// tracer preloaded (no spill directory, as one linked with dtcc), under
// both MPIs: the ranks' traces are ordinary and complete when the job
// ends (the ranks compact theirs as they exit); and when a rank is killed without warning, the
// job's traces are analysed by dtpa, which compacts in place those that
// were left deferred.
func TestWithoutDtrun(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			launch := func(dir string, prog ...string) result {
				return run(t, dir, nil, mpi.run, preloaded(mpi.run, nil, prog...)...)
			}
			dir := t.TempDir()
			if res := launch(dir, build(t, "pingpong", mpi.cc)); res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", mpi.run, res.code, res.out)
			}
			for r := 0; r < 4; r++ {
				if m := preambleMajor(t, filepath.Join(dir, fmt.Sprintf("pingpong.%d.trc", r))); m != traceformat.VersionMajor {
					t.Errorf("rank %d: major version %#x, want a compacted trace", r, m)
				}
			}
			trs := readTraces(t, dir, "pingpong", 4)
			checkComplete(t, trs)
			checkPingPong(t, trs)

			dir = t.TempDir()
			if res := launch(dir, build(t, "crash", mpi.cc), "kill"); res.code == 0 {
				t.Fatalf("%s: rank 1 killed itself, yet exit 0\n%s", mpi.run, res.out)
			}
			res := run(t, dir, nil, filepath.Join(root, "bin", "dtpa"), "crash")
			if res.code != 0 || !strings.Contains(res.out, "INTERVAL") {
				t.Fatalf("dtpa: exit %d\n%s", res.code, res.out)
			}
			if !slices.Contains(warnedRanks(res.out, "its trace's events were still raw records"), 1) {
				t.Errorf("dtpa does not say it compacted the killed rank's trace\n%s", res.out)
			}
			for r := 0; r < 4; r++ {
				if records.IsDeferred(filepath.Join(dir, fmt.Sprintf("crash.%d.trc", r))) {
					t.Errorf("rank %d: trace still deferred after dtpa", r)
				}
			}
		})
	}
}

// TestParamsWithoutDtrun: without dtrun, which reads the tracer's
// parameters for its ranks, the ranks read them themselves: tracer.par in
// their working directory, then the environment, as dtrun would; a wrong
// file is said once (rank 0) and the defaults go. Both MPIs.
func TestParamsWithoutDtrun(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			bin := build(t, "pingpong", mpi.cc)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "tracer.par"), []byte("UserStackSize = 2 # the file's\nTraceBufSize = 1M\nMaxTraceSize = 33\n"), 0o644)
			res := run(t, dir, nil, mpi.run, preloaded(mpi.run, []string{"MaxTraceSize=77"}, bin)...)
			if res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", mpi.run, res.code, res.out)
			}
			trs := readTraces(t, dir, "pingpong", 4)
			checkComplete(t, trs)
			for r, tr := range trs {
				if p := tr.hdr.Params; p.UserStackSize != 2 || p.TraceBufSize != 1<<20 || p.MaxTraceSizeMb != 77 {
					t.Errorf("rank %d: params %v; want tracer.par's, MaxTraceSize from the environment", r, p)
				}
			}

			dir = t.TempDir()
			os.WriteFile(filepath.Join(dir, "tracer.par"), []byte("UserStackSize = 99\n"), 0o644)
			res = run(t, dir, nil, mpi.run, preloaded(mpi.run, nil, bin)...)
			if res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", mpi.run, res.code, res.out)
			}
			if n := strings.Count(res.out, "dtpa tracer: tracer.par:1: UserStackSize \"99\""); n != 1 {
				t.Errorf("%d warnings of the wrong tracer.par, want 1:\n%s", n, res.out)
			}
			for r, tr := range readTraces(t, dir, "pingpong", 4) {
				if p := tr.hdr.Params; p.UserStackSize != 4 || p.MaxTraceSizeMb != 500 {
					t.Errorf("rank %d: params %v; want the defaults", r, p)
				}
			}
		})
	}
}

// TestDeferredLeftForCompact: traces that neither the ranks
// (DT_COMPACT_AT_END=0) nor a dtrun compacted, as a dtrun killed before
// the job's end leaves them, are compacted in place by dtpa, which says so
// and analyses them; byte for byte as `dtrun --compact` compacts them, which
// then finds nothing left to do.
func TestDeferredLeftForCompact(t *testing.T) {
	bin := build(t, "pingpong", ompi)
	dir, spill, copyDir := t.TempDir(), t.TempDir(), t.TempDir()
	res := run(t, dir, nil, "mpirun.openmpi", preloaded("mpirun.openmpi", []string{"DT_SPILL_DIR=" + spill, "DT_COMPACT_AT_END=0"}, bin)...)
	if res.code != 0 {
		t.Fatalf("mpirun: exit %d\n%s", res.code, res.out)
	}
	app := filepath.Join(dir, "pingpong")
	if m := preambleMajor(t, app+".0.trc"); m != traceformat.DeferredMajor {
		t.Fatalf("major version %#x, want a deferred trace", m)
	}
	for r := 0; r < 4; r++ {
		name := fmt.Sprintf("pingpong.%d.trc", r)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res = run(t, dir, nil, filepath.Join(root, "bin", "dtpa"), "pingpong")
	if res.code != 0 || !strings.Contains(res.out, "INTERVAL") {
		t.Errorf("dtpa on deferred traces: exit %d; want them analysed\n%s", res.code, res.out)
	}
	if got := warnedRanks(res.out, "its trace's events were still raw records"); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("dtpa says it compacted the traces of ranks %v, want 0-3\n%s", got, res.out)
	}
	trs := readTraces(t, dir, "pingpong", 4)
	checkComplete(t, trs)
	checkPingPong(t, trs)
	if res = dtrun(t, copyDir, nil, "--compact", "pingpong"); res.code != 0 || !strings.Contains(res.out, "4 of 4 traces compacted") {
		t.Fatalf("dtrun --compact: exit %d\n%s", res.code, res.out)
	}
	for r := 0; r < 4; r++ {
		name := fmt.Sprintf("pingpong.%d.trc", r)
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(copyDir, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: dtpa's compaction (%d bytes) differs from dtrun's (%d bytes)", name, len(a), len(b))
		}
	}
	if res = dtrun(t, dir, nil, "--compact", dir); res.code != 0 || !strings.Contains(res.out, "0 of 4 traces compacted") {
		t.Errorf("dtrun --compact after dtpa: exit %d\n%s", res.code, res.out)
	}
}

// TestTraceHeldWhileWritten: each rank holds its trace (records.LockTrace)
// from MPI_Init until its footer is written, so that dtpa never compacts
// in place a deferred trace that a running rank still writes, and lets
// it go when it ends: under both MPIs, with dtrun's writer.
func TestTraceHeldWhileWritten(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			bin := build(t, "crash", mpi.cc)
			dir := t.TempDir()
			// Rank 1 sleeps a second inside the program, then kills itself.
			cmd := exec.Command(filepath.Join(root, "bin", "dtrun"), "--mpirun", mpi.run, "-n", "4", bin, "kill")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), mpiEnv...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			trace := filepath.Join(dir, "crash.1.trc")
			held := false
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !held; time.Sleep(20 * time.Millisecond) {
				if !records.IsDeferred(trace) {
					continue // not written yet
				}
				_, err := records.CompactFinished(trace, 0)
				if held = errors.Is(err, records.ErrBeingWritten); err != nil && !held {
					t.Errorf("CompactFinished while rank 1 runs: %v", err)
					break
				}
			}
			cmd.Wait()
			if !held {
				t.Fatalf("rank 1's trace was never found held while it ran\n%s", out.String())
			}
			for r := 0; r < 4; r++ {
				p := filepath.Join(dir, fmt.Sprintf("crash.%d.trc", r))
				if ok, err := records.CompactFinished(p, 0); ok || err != nil {
					t.Errorf("rank %d after the job: CompactFinished = %v, %v; want a trace no one holds, compacted by dtrun", r, ok, err)
				}
			}
		})
	}
}

// TestNoEncoder: the writer goes on without its encoder
// (lib/libdtpa_enc.so missing): a rank past DT_DEFER_MB writes raw records
// on, and with DT_DEFER_MB=0 writes a deferred trace after all; it says so
// once, and dtrun compacts the traces, which hold every call.
func TestNoEncoder(t *testing.T) {
	lib := t.TempDir()
	libs, _ := filepath.Glob(filepath.Join(root, "lib", "*.so"))
	for _, l := range libs {
		if filepath.Base(l) != "libdtpa_enc.so" {
			if err := os.Symlink(l, filepath.Join(lib, filepath.Base(l))); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := build(t, "loop", ompi)
	for _, mb := range []string{"1", "0"} {
		t.Run("DT_DEFER_MB="+mb, func(t *testing.T) {
			dir := t.TempDir()
			res := dtrun(t, dir, []string{"DT_LIB=" + lib, "DT_DEFER_MB=" + mb}, append(oversub, bin, "200000")...)
			if res.code != 0 || !strings.Contains(res.out, "loop done") {
				t.Fatalf("exit %d\n%s", res.code, res.out)
			}
			if n := strings.Count(res.out, "loading the trace encoder"); n != 4 {
				t.Errorf("%d ranks said they could not load the encoder, want 4:\n%s", n, res.out)
			}
			trs := readTraces(t, dir, "loop", 4)
			checkComplete(t, trs)
			for r, tr := range trs {
				if n := numCalls(tr.calls("MPI_Comm_rank")); n < 200000 {
					t.Errorf("rank %d: %d MPI_Comm_rank calls, want 200000", r, n)
				}
			}
		})
	}
}

// warnedRanks is the ranks that dtpa's warnings in out name before what
// ("Rank 3: what", "Ranks 0-2, 5: what", report.GroupWarnings), in order.
func warnedRanks(out, what string) []int {
	var ranks []int
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimPrefix(l, "dtpa: warning: ")
		list, rest, ok := strings.Cut(l, ": ")
		if !ok || !strings.HasPrefix(rest, what) {
			continue
		}
		list = strings.TrimPrefix(strings.TrimPrefix(list, "Ranks "), "Rank ")
		for _, part := range strings.Split(list, ", ") {
			lo, hi, isRange := strings.Cut(part, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				continue
			}
			b := a
			if isRange {
				b, _ = strconv.Atoi(hi)
			}
			for r := a; r <= b; r++ {
				ranks = append(ranks, r)
			}
		}
	}
	slices.Sort(ranks)
	return ranks
}
