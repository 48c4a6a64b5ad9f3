package e2e

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
	"github.com/dtpa/dtpa/traceformat"
)

// TestChromeSolver traces the demo program under Open MPI and exports it
// with dtpa --export chrome. The file must hold exactly the program's MPI
// calls on each rank, each with the duration its trace recorded: per rank
// 200 steps of 2 MPI_Irecv, 2 MPI_Isend and one MPI_Waitall, 20
// MPI_Allreduce and the MPI_Comm_rank and MPI_Comm_size before the loop
// (MPI_Init, MPI_Finalize and MPI_Pcontrol are not calls of the export);
// one flow per message, 1200 of them, each from an MPI_Isend to the
// MPI_Waitall of a neighbour; and interval 1 once on every rank.
func TestChromeSolver(t *testing.T) {
	dir, r, file := exportSolver(t, "solver.json", "--export", "chrome")
	tr := readChrome(t, file)
	type key struct {
		rank int
		name string
	}
	count := map[key]int{}
	calls := map[int][]chrometest.Slice{}
	spans := map[int]int{}
	for _, s := range tr.Slices {
		rank := s.Pid - 1
		if s.Cat == "interval" {
			if s.Name != "interval 1" {
				t.Errorf("rank %d: span %q", rank, s.Name)
			}
			spans[rank]++
			continue
		}
		count[key{rank, s.Name}]++
		calls[rank] = append(calls[rank], s)
	}
	for rank := 0; rank < 4; rank++ {
		want := map[string]int{"MPI_Comm_rank": 1, "MPI_Comm_size": 1, "MPI_Irecv": 400, "MPI_Isend": 400, "MPI_Waitall": 200, "MPI_Allreduce": 20}
		n := 0
		for fn, w := range want {
			if got := count[key{rank, fn}]; got != w {
				t.Errorf("rank %d: %d %s, want %d", rank, got, fn, w)
			}
			n += w
		}
		if len(calls[rank]) != n {
			t.Errorf("rank %d: %d calls, want %d", rank, len(calls[rank]), n)
		}
		if spans[rank] != 1 {
			t.Errorf("rank %d: interval 1 %d times", rank, spans[rank])
		}
		if tr.Processes[rank+1] == "" {
			t.Errorf("rank %d: process unnamed", rank)
		}
		// The durations are the trace's: one host, so the alignment only
		// shifts, and maps each rank's nanoseconds through the TSC onto
		// rank 0's (their calibrations differ by well under 100 ppm, a
		// nanosecond or two on these calls); without clock-condition
		// repairs nothing else stretches.
		if r.ClockViolations != nil {
			t.Logf("rank %d: clock-condition repairs: durations not compared", rank)
		} else {
			recorded, err := traceCalls(filepath.Join(dir, fmt.Sprintf("solver.%d.trc", rank)))
			if err != nil {
				t.Fatal(err)
			}
			if len(recorded) != len(calls[rank]) {
				t.Errorf("rank %d: %d calls exported, %d recorded", rank, len(calls[rank]), len(recorded))
				continue
			}
			for i, c := range recorded {
				if s := calls[rank][i]; s.Name != c.name || math.Abs(float64(s.Dur-c.dur)) > 2+1e-4*float64(c.dur) {
					t.Errorf("rank %d call %d: %s %d ns exported, %s %d ns recorded", rank, i, s.Name, s.Dur, c.name, c.dur)
					break
				}
			}
		}
	}
	if len(tr.Flows) != 1200 {
		t.Errorf("%d flows, want 1200 (200 steps, 6 halo messages each)", len(tr.Flows))
	}
	for _, f := range tr.Flows {
		a, b := tr.Slices[f.From], tr.Slices[f.To]
		if a.Name != "MPI_Isend" || b.Name != "MPI_Waitall" || (a.Pid-b.Pid != 1 && b.Pid-a.Pid != 1) {
			t.Errorf("flow %d from %s on rank %d to %s on rank %d", f.ID, a.Name, a.Pid-1, b.Name, b.Pid-1)
			break
		}
	}
	st, _ := os.Stat(file)
	t.Logf("export %d bytes, %d slices, %d flows", st.Size(), len(tr.Slices), len(tr.Flows))
}

// exportSolver traces the demo program (testdata/apps/solver.c) at 4 ranks
// under Open MPI, analyses it, and has bin/dtpa write the traces with flags
// to the file out in the traces' directory dir. It returns dir, the JSON
// report of the same traces and the path of out.
func exportSolver(t *testing.T, out string, flags ...string) (dir string, r *report.Report, file string) {
	t.Helper()
	m := impls[0]
	needMPI(t, m)
	dir = t.TempDir()
	exe := compile(t, m, dir, "solver")
	trace(t, m, dir, nil, 4, exe)
	r, _ = analyse(t, dir, "solver")
	file = filepath.Join(dir, out)
	args := append(append([]string{}, flags...), "-o", file, "solver")
	run(t, dir, nil, time.Minute, filepath.Join(root, "bin", "dtpa"), args...)
	return dir, r, file
}

type recordedCall struct {
	name string
	dur  int64
}

// traceCalls lists the calls of thread 0 between MPI_Init and
// MPI_Finalize, MPI_Pcontrol left out, as a trace recorded them.
func traceCalls(path string) ([]recordedCall, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path})
	if err != nil {
		return nil, err
	}
	var out []recordedCall
	in := false
	for {
		e, err := rd.ReadEvent()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Thread != 0 {
			continue
		}
		name := rd.Definitions().Function(e.Func).GetName()
		switch name {
		case "MPI_Init", "MPI_Init_thread":
			in = true
		case "MPI_Finalize":
			in = false
		case "MPI_Pcontrol":
		default:
			if in {
				out = append(out, recordedCall{name, e.Exit - e.Entry})
			}
		}
	}
}

// exportChrome exports the traces of app in dir with dtpa --export chrome
// and reads the file back.
func exportChrome(t *testing.T, dir, app string) *chrometest.Trace {
	t.Helper()
	file := filepath.Join(dir, app+".json")
	run(t, dir, nil, time.Minute, filepath.Join(root, "bin", "dtpa"), "--export", "chrome", "-o", file, app)
	return readChrome(t, file)
}

// readChrome reads the Chrome trace file at path.
func readChrome(t *testing.T, path string) *chrometest.Trace {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := chrometest.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
