package tracer_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledInsideInit kills rank 1 inside MPI_Init, after the tracer
// created its trace and its spill file and before it wrote the header
// (DT_TEST_INIT_STOP stops the rank there), on the simulated node1 under
// both MPIs. The job fails; rank 1's trace is empty, and dtrun and dtpa say
// that it ended inside MPI_Init, naming the file and the rank; the other
// ranks' traces, completed by `dtrun --recover` on each node, are analysed
// (the launcher kills them at some point after their headers);
// and the spill file rank 1 left (named .spill.new) does not keep node1's
// spill directory alive.
func TestKilledInsideInit(t *testing.T) {
	for _, mpi := range []struct{ cc, run string }{{ompi, "mpirun.openmpi"}, {"mpicc.mpich", "mpiexec.mpich"}} {
		t.Run(mpi.run, func(t *testing.T) {
			prog := build(t, "pingpong", mpi.cc)
			dir, base := t.TempDir(), t.TempDir()
			pidFile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtrun"), "--mpirun", mpi.run, "-n", "4", nodes(t, base, prog, 2))
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), mpiEnv...), "DT_TEST_INIT_STOP=1:"+pidFile)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Rank 1 is stopped inside MPI_Init once the others have passed
			// the collective, which write their headers next: kill it once
			// their traces have begun.
			pid := 0
			for pid == 0 || !begun(dir, "pingpong", 0, 2, 3) {
				if ctx.Err() != nil {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("rank 1 never stopped inside MPI_Init, or the others never began their traces:\n%s", out.String())
				}
				time.Sleep(10 * time.Millisecond)
				if b, err := os.ReadFile(pidFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
			}
			trace1 := filepath.Join(dir, "pingpong.1.trc")
			if st, err := os.Stat(trace1); err != nil || st.Size() != 0 {
				t.Fatalf("rank 1 stopped inside MPI_Init: its trace %v (err %v), want an empty file", st, err)
			}
			if !fileExists(filepath.Join(base, "node1", "pingpong.1.spill.new")) {
				t.Fatalf("rank 1 stopped inside MPI_Init: no pingpong.1.spill.new in node1's spill directory")
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("dtrun timed out\n%s", out.String())
			}
			if err == nil {
				t.Fatalf("dtrun: exit 0, want a failure\n%s", out.String())
			}
			if !strings.Contains(out.String(), "rank 1 ended inside MPI_Init, before its trace began: pingpong.1.trc is empty") {
				t.Errorf("dtrun does not say that rank 1 ended inside MPI_Init:\n%s", out.String())
			}
			for _, n := range []string{"node0", "node1"} {
				spill := filepath.Join(base, n)
				rec := dtrun(t, dir, nil, "--recover", spill)
				if rec.code != 0 {
					t.Fatalf("dtrun --recover %s: exit %d\n%s", n, rec.code, rec.out)
				}
				if n == "node1" && !strings.Contains(rec.out, "pingpong.1: the process died inside MPI_Init, before its trace began: it recorded nothing") {
					t.Errorf("dtrun --recover %s does not report rank 1:\n%s", n, rec.out)
				}
				if fileExists(spill) {
					ents, _ := os.ReadDir(spill)
					t.Errorf("%s's spill directory left behind after recovery: %v", n, ents)
				}
			}
			if st, err := os.Stat(trace1); err != nil || st.Size() != 0 {
				t.Errorf("rank 1's trace after recovery: %v (err %v), want it empty", st, err)
			}
			// The others were killed by the launcher at some point after
			// their headers: whole traces once recovered, of one run.
			var run0 []byte
			for _, r := range []int{0, 2, 3} {
				tr := readTrace(t, filepath.Join(dir, "pingpong."+strconv.Itoa(r)+".trc"))
				if tr.err != nil || tr.footer == nil {
					t.Errorf("rank %d after recovery: footer %v, err %v; want a whole trace", r, tr.footer, tr.err)
					continue
				}
				if run0 == nil {
					run0 = tr.hdr.RunId
				} else if !bytes.Equal(tr.hdr.RunId, run0) {
					t.Errorf("rank %d: run id %x, want %x", r, tr.hdr.RunId, run0)
				}
			}
			res := run(t, dir, nil, filepath.Join(root, "bin", "dtpa"), "pingpong")
			if res.code != 0 {
				t.Fatalf("dtpa: exit %d\n%s", res.code, res.out)
			}
			for _, want := range []string{
				"pingpong.1.trc is empty and is left out: rank 1 ended inside MPI_Init, before its trace began",
				"Processors: 4",
			} {
				if !strings.Contains(res.out, want) {
					t.Errorf("dtpa's report lacks %q:\n%s", want, res.out)
				}
			}
		})
	}
}

// begun tells whether the traces of app's ranks in dir have begun: the
// tracer writes a trace's first bytes, its header, at the end of MPI_Init.
func begun(dir, app string, ranks ...int) bool {
	for _, r := range ranks {
		st, err := os.Stat(filepath.Join(dir, app+"."+strconv.Itoa(r)+".trc"))
		if err != nil || st.Size() == 0 {
			return false
		}
	}
	return true
}
