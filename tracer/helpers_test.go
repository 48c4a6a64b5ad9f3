package tracer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/internal/version"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// root is the repository root: tests use bin/dtrun and lib/ from there
// (`make test` builds them first).
var root = testenv.Root()

var (
	buildDir  string
	buildOnce sync.Once
	buildMu   sync.Mutex
	built     = map[string]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// needMPI skips (or, under CI, fails) when the MPI compiler is missing, and
// fails when the tracer has not been built.
func needMPI(t testing.TB, cc string) {
	t.Helper()
	testenv.NeedCommands(t, cc)
	for _, p := range []string{"bin/dtrun", "lib/libdtpa_preload.so"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Fatalf("%s missing: run make build", p)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// build compiles testdata/c/<name>.c (or tracer/testdata/c/<name>.c) with cc once per test binary.
func build(t testing.TB, name, cc string) string {
	t.Helper()
	needMPI(t, cc)
	buildMu.Lock()
	defer buildMu.Unlock()
	key := name + "@" + cc
	if p, ok := built[key]; ok {
		return p
	}
	buildOnce.Do(func() {
		var err error
		if buildDir, err = os.MkdirTemp("", "dtpa-tracer-test-"); err != nil {
			t.Fatal(err)
		}
	})
	dir := filepath.Join(buildDir, cc)
	os.MkdirAll(dir, 0o755)
	out := filepath.Join(dir, name)
	src := filepath.Join(root, "testdata", "c", name+".c")
	if own := filepath.Join(root, "tracer", "testdata", "c", name+".c"); fileExists(own) {
		src = own // the tracer's own test programs
	}
	cmd := exec.Command(cc, "-g", "-O0", "-pthread", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", name, err, b)
	}
	built[key] = out
	return out
}

type result struct {
	out  string
	code int
}

// mpiEnv is what OpenMPI needs as root; the Makefile exports the same.
var mpiEnv = append(testenv.MPIEnv[:len(testenv.MPIEnv):len(testenv.MPIEnv)], "OMPI_MCA_rmaps_base_oversubscribe=1")

// run runs a command in dir with the MPI environment plus env.
func run(t testing.TB, dir string, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), mpiEnv...), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: timed out\n%s", name, args, buf.String())
	}
	code := 0
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		code = xe.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return result{out: buf.String(), code: code}
}

// preloaded is the arguments of launcher (mpirun.openmpi or
// mpiexec.mpich) that start 4 ranks of prog (and its arguments) with the
// tracer preloaded and env (KEY=VALUE) set, as dtrun does but without it:
// Open MPI's -x, MPICH's -genv.
func preloaded(launcher string, env []string, prog ...string) []string {
	env = append([]string{"LD_PRELOAD=" + filepath.Join(root, "lib", "libdtpa_preload.so")}, env...)
	args := []string{"-n", "4"}
	if launcher == "mpirun.openmpi" {
		args = append(args, "--oversubscribe")
	}
	for _, kv := range env {
		if launcher == "mpiexec.mpich" {
			k, v, _ := strings.Cut(kv, "=")
			args = append(args, "-genv", k, v)
		} else {
			args = append(args, "-x", kv)
		}
	}
	return append(args, prog...)
}

// dtrun runs bin/dtrun with args in dir.
func dtrun(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	return run(t, dir, env, filepath.Join(root, "bin", "dtrun"), args...)
}

// dtrunOK is dtrun for a job that must succeed: a non-zero exit fails the
// test with dtrun's output.
func dtrunOK(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	res := dtrun(t, dir, env, args...)
	if res.code != 0 {
		t.Fatalf("dtrun: exit %d\n%s", res.code, res.out)
	}
	return res
}

// trace is a whole trace file read back.
type trace struct {
	hdr    *tracepb.Header
	defs   *traceformat.Definitions
	events []traceformat.Event
	syncs  []*tracepb.ClockSync
	footer *tracepb.Footer
	err    error // nil for a complete file
}

// openTrace opens the trace at path for reading; closeFile closes it.
func openTrace(t testing.TB, path string) (r *traceformat.Reader, closeFile func() error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err = traceformat.NewReader(f, traceformat.ReaderOptions{Name: path})
	if err != nil {
		f.Close()
		t.Fatalf("%s: %v", path, err)
	}
	return r, f.Close
}

func readTrace(t testing.TB, path string) *trace {
	t.Helper()
	r, closeFile := openTrace(t, path)
	defer closeFile()
	tr := &trace{hdr: r.Header()}
	for {
		e, err := r.ReadEvent()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				tr.err = err
			}
			break
		}
		e.Reqs = append([]uint64(nil), e.Reqs...)
		e.Status = append([]traceformat.Status(nil), e.Status...)
		tr.events = append(tr.events, e)
	}
	tr.defs, tr.syncs, tr.footer = r.Definitions(), r.ClockSyncs(), r.Footer()
	return tr
}

func readTraces(t testing.TB, dir, app string, n int) []*trace {
	t.Helper()
	var trs []*trace
	for r := 0; r < n; r++ {
		trs = append(trs, readTrace(t, filepath.Join(dir, app+"."+strconv.Itoa(r)+".trc")))
	}
	return trs
}

func (tr *trace) name(e traceformat.Event) string { return tr.defs.Function(e.Func).Name }

// numCalls is the number of MPI calls evs stand for (a folded run counts
// as its calls).
func numCalls(evs []traceformat.Event) int64 {
	var n int64
	for i := range evs {
		n += int64(evs[i].NumCalls())
	}
	return n
}

// calls returns the events of the named functions, in order.
func (tr *trace) calls(names ...string) []traceformat.Event {
	var out []traceformat.Event
	for _, e := range tr.events {
		n := tr.name(e)
		for _, want := range names {
			if n == want {
				out = append(out, e)
			}
		}
	}
	return out
}

func (tr *trace) commID(local uint32) uint64 { return tr.defs.Comm(local).Id }

// checkComplete checks what every normally finished trace must satisfy.
func checkComplete(t *testing.T, trs []*trace) {
	t.Helper()
	for r, tr := range trs {
		if tr.err != nil {
			t.Errorf("rank %d: %v", r, tr.err)
			continue
		}
		if tr.hdr.Rank != uint32(r) || tr.hdr.WorldSize != uint32(len(trs)) {
			t.Errorf("rank %d: header rank %d size %d", r, tr.hdr.Rank, tr.hdr.WorldSize)
		}
		if !bytes.Equal(tr.hdr.RunId, trs[0].hdr.RunId) || len(tr.hdr.RunId) != 16 {
			t.Errorf("rank %d: run id %x, rank 0 has %x", r, tr.hdr.RunId, trs[0].hdr.RunId)
		}
		if tr.hdr.TracerVersion != version.Version {
			t.Errorf("rank %d: tracer version %q, the commands' %q", r, tr.hdr.TracerVersion, version.Version)
		}
		if tr.footer == nil || tr.footer.StopReason != tracepb.Footer_FINALIZE {
			t.Errorf("rank %d: footer %v, want FINALIZE", r, tr.footer)
		} else if tr.footer.EventCount != uint64(len(tr.events)) {
			t.Errorf("rank %d: footer counts %d events, file has %d", r, tr.footer.EventCount, len(tr.events))
		}
		var main []traceformat.Event // the thread that called MPI_Init
		for _, e := range tr.events {
			if e.Thread == 0 {
				main = append(main, e)
			}
		}
		if n := len(main); n < 2 || !strings.HasPrefix(tr.name(main[0]), "MPI_Init") || tr.name(main[n-1]) != "MPI_Finalize" {
			t.Errorf("rank %d: events do not run from MPI_Init to MPI_Finalize", r)
		}
		if tr.hdr.Clock.GetSource() != tracepb.Clock_TSC && tr.hdr.Clock.GetSource() != tracepb.Clock_MONOTONIC_RAW {
			t.Errorf("rank %d: clock source %v", r, tr.hdr.Clock.GetSource())
		}
		var phases []tracepb.ClockSync_Phase
		for _, s := range tr.syncs {
			phases = append(phases, s.Phase)
		}
		if len(phases) != 2 || phases[0] != tracepb.ClockSync_INIT || phases[1] != tracepb.ClockSync_FINALIZE {
			t.Errorf("rank %d: clock-sync phases %v, want INIT FINALIZE", r, phases)
		}
		last := map[uint32]int64{}
		for i, e := range tr.events {
			if e.Exit < e.Entry || e.Entry < last[e.Thread] {
				t.Errorf("rank %d: event %d (%s) times out of order", r, i, tr.name(e))
				break
			}
			last[e.Thread] = e.Exit
		}
	}
}

// inExecutable reports whether pc falls in the traced program's own code.
func (tr *trace) inExecutable(pc uint64) bool {
	for _, m := range tr.defs.Modules {
		if pc >= m.Start && pc < m.End {
			return m.Path == tr.hdr.Program
		}
	}
	return false
}
