package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/traceformat/tracetest"
	"github.com/dtpa/dtpa/tracer/records"
)

func TestFindProgram(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/bin/sh"}, "/bin/sh"},
		{[]string{"-np", "4", "/bin/sh", "-c", "x"}, "/bin/sh"},
		{[]string{"--oversubscribe", "-x", "FOO=1", "--mca", "btl", "self", "/bin/sh"}, "/bin/sh"},
		{[]string{"-genv", "A", "B", "-n", "2", "/bin/sh"}, "/bin/sh"},
		{[]string{"--map-by=core", "/bin/sh"}, "/bin/sh"},
	} {
		got, _, err := findProgram(tc.args, valueOpts)
		if err != nil || got != tc.want {
			t.Errorf("findProgram(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	if _, _, err := findProgram([]string{"-np", "4"}, valueOpts); err == nil || !strings.Contains(err.Error(), "no program") {
		t.Errorf("no program: %v", err)
	}
}

// TestWrappers: a program that runs another (env, taskset, nice, Rscript)
// is not refused as "not an MPI program"; the MPI is that of the program
// it wraps (a shared object linked with Open MPI stands in for one here:
// the tracer's own), else unknown.
func TestWrappers(t *testing.T) {
	lib, err := filepath.Abs(filepath.Join("..", "..", "lib", "libdtpa_openmpi.so"))
	if err != nil {
		t.Fatal(err)
	}
	so, err := os.ReadFile(lib)
	if err != nil {
		t.Skip("no tracer libraries (make build)")
	}
	lib = filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(lib, so, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env")
	}
	prog, rest, err := findProgram([]string{"-np", "2", "env", "FOO=1", "nice", "-n", "1", lib, "x"}, valueOpts)
	if err != nil || prog != env || len(rest) != 6 {
		t.Fatalf("findProgram = %q, %q, %v", prog, rest, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{rest, "openmpi"},                    // through env and nice
		{[]string{"FOO=1", "/bin/true"}, ""}, // wraps no MPI program: trusted
		{[]string{"script.R"}, ""},
	} {
		if impl, err := mpiOf(env, tc.args, 0); err != nil || impl != tc.want {
			t.Errorf("mpiOf(env, %q) = %q, %v; want %q", tc.args, impl, err, tc.want)
		}
	}
	if _, err := mpiOf("/bin/true", nil, 0); err == nil {
		t.Error("mpiOf(/bin/true): no error")
	}
}

// fakeLib makes dir/lib with an empty preload library: Run only checks
// that it is there.
func fakeLib(dir string) string {
	lib := filepath.Join(dir, "lib")
	os.MkdirAll(lib, 0o755)
	os.WriteFile(filepath.Join(lib, "libdtpa_preload.so"), nil, 0o644)
	return lib
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	lib := fakeLib(dir)
	script := filepath.Join(dir, "app.sh") // not ELF: dtrun cannot tell, trusts it
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	notExec := filepath.Join(dir, "data.txt")
	os.WriteFile(notExec, []byte("x"), 0o644)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"missing program", Options{Args: []string{"-np", "2", filepath.Join(dir, "nope")}}, "not found"},
		{"not executable", Options{Args: []string{notExec}}, "not executable"},
		{"not MPI", Options{Args: []string{"-np", "2", "/bin/true"}}, "not an MPI program"},
		{"no launcher", Options{Args: []string{script}, Mpirun: "/nonexistent/mpirun"}, "launcher"},
		{"DT_MPIRUN", Options{Args: []string{script}, Getenv: func(k string) string {
			return map[string]string{"DT_MPIRUN": "/nonexistent/mpiexec"}[k]
		}}, "/nonexistent/mpiexec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.LibDir = lib
			err := Run(context.Background(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNoLauncher(t *testing.T) {
	// An empty PATH: no mpirun anywhere.
	t.Setenv("PATH", t.TempDir())
	if _, err := findLauncher("openmpi"); err == nil || !strings.Contains(err.Error(), "no MPI launcher") {
		t.Errorf("findLauncher: %v", err)
	}
}

func TestMissingTracer(t *testing.T) {
	_, err := stubPath(t.TempDir(), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("stubPath: %v", err)
	}
}

func TestIsMPICH(t *testing.T) {
	for name, want := range map[string]bool{"/usr/bin/mpiexec.mpich": true, "/usr/bin/mpiexec.hydra": true,
		"/usr/bin/mpirun.openmpi": false, "/opt/x/orterun": false} {
		if isMPICH(name) != want {
			t.Errorf("isMPICH(%s) != %v", name, want)
		}
	}
}

func TestMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"dtrun", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Examples") {
		t.Errorf("--help: code %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"dtrun"}, &out, &errb); code != 2 {
		t.Errorf("no arguments: code %d", code)
	}
	if code := Main(context.Background(), []string{"dtrun", "--mpirun", "/nonexistent", "/bin/true"}, &out, &errb); code != 1 {
		t.Errorf("bad launcher: code %d", code)
	}
}

// TestRemoveStaleCompactions: after the job, the unfinished compactions of
// the traces it wrote go; the traces, an older run's leftovers and the
// compaction of another job's trace, which a running process holds, stay.
func TestRemoveStaleCompactions(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Second)
	for _, f := range []string{"app.0.trc", "app.1.trc", ".app.0.trc.compact-123", ".app.1.trc.compact-456", ".old.0.trc.compact-789",
		"other.0.trc", ".other.0.trc.compact-999"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := start.Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, ".old.0.trc.compact-789"), old, old); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "other.0.trc"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records.LockTrace(int(f.Fd()))
	removeStale(records.CompactTemps(dir), &jobFiles{dir: dir, start: start})
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), ".old.0.trc.compact-789 .other.0.trc.compact-999 app.0.trc app.1.trc other.0.trc"; got != want {
		t.Errorf("left %q, want %q", got, want)
	}
}

// Open MPI takes -x per application context: dtrun's environment goes
// before every program of an MPMD command line, or the programs after the
// first would run untraced and the traced ones hang in MPI_Init.
func TestOpenMPIArgs(t *testing.T) {
	env := []string{"-x", "A=1"}
	tests := []struct{ in, want []string }{
		{[]string{"-np", "2", "./app"}, []string{"-x", "A=1", "-np", "2", "./app"}},
		{[]string{"-np", "2", "./ocean", "-v", ":", "-np", "2", "./atmos"},
			[]string{"-x", "A=1", "-np", "2", "./ocean", "-v", ":", "-x", "A=1", "-np", "2", "./atmos"}},
		{[]string{"./a", ":", "./b", ":", "./c"}, []string{"-x", "A=1", "./a", ":", "-x", "A=1", "./b", ":", "-x", "A=1", "./c"}},
	}
	for _, tc := range tests {
		if got := openMPIArgs(tc.in, env...); !slices.Equal(got, tc.want) {
			t.Errorf("openMPIArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// An app file (Open MPI's --app, MPICH's -configfile) lists the job's
// programs one context per line: dtrun finds the program in it, and gives
// each context of an Open MPI app file its -x settings, which Open MPI does
// not take from the command line for them (the job ran untraced).
func TestAppFiles(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "apps")
	if err := os.WriteFile(app, []byte("# two programs\n\n-np 2 true\n  -np 2 false -v\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := exec.LookPath("true")
	for _, opt := range []string{"--app", "-app", "-configfile"} {
		if p, _, err := findProgram([]string{"--oversubscribe", opt, app}, valueOpts); err != nil || p != want {
			t.Errorf("findProgram with %s: %q, %v; want %q", opt, p, err, want)
		}
	}
	if _, _, err := findProgram([]string{"--app", filepath.Join(dir, "none")}, valueOpts); err == nil {
		t.Error("findProgram: no error for a missing app file")
	}
	args, done, err := openMPIAppFiles([]string{"--oversubscribe", "--app", app}, []string{"-x", "A=1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 3 || args[2] == app {
		t.Fatalf("args %q: want the app file replaced", args)
	}
	b, err := os.ReadFile(args[2])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "-x A=1 -np 2 true\n-x A=1 -np 2 false -v\n"; got != want {
		t.Errorf("app file copy %q, want %q", got, want)
	}
	done()
	if _, err := os.Stat(args[2]); !os.IsNotExist(err) {
		t.Errorf("the copy %s was not removed: %v", args[2], err)
	}
	if _, _, err := openMPIAppFiles([]string{"--app", app}, []string{"-x", "LD_PRELOAD=/a b/x.so"}); err == nil {
		t.Error("no error for a setting with a space")
	}
}

// TestMPIThroughLibrary: a program that reaches MPI only through one of
// its own libraries (OpenFOAM's solvers link libPstream.so, which links
// libmpi.so) imports neither an MPI library nor an MPI function; it is an
// MPI program of the MPI that library links, as the dynamic loader
// resolves it (dtrun refused icoFoam as "not an MPI program").
func TestMPIThroughLibrary(t *testing.T) {
	for _, m := range []struct{ cc, want string }{{"mpicc.openmpi", "openmpi"}, {"mpicc.mpich", "mpich"}} {
		t.Run(m.want, func(t *testing.T) {
			if _, err := exec.LookPath(m.cc); err != nil {
				t.Skip(m.cc + " not installed")
			}
			dir := t.TempDir()
			for _, c := range [][]string{
				{m.cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libcomm.so"), "-x", "c", "-"},
				{m.cc, "-o", filepath.Join(dir, "solver"), "-x", "c", "-", "-x", "none", "-L" + dir, "-lcomm", "-Wl,-rpath,$ORIGIN", "-Wl,--as-needed"},
			} {
				src := "#include <mpi.h>\nint comm_init(int *c, char ***v) { return MPI_Init(c, v); }\n"
				if c[1] == "-o" {
					src = "int comm_init(int *, char ***);\nint main(int c, char **v) { return comm_init(&c, &v); }\n"
				}
				cmd := exec.Command(c[0], c[1:]...)
				cmd.Stdin = strings.NewReader(src)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%q: %v\n%s", c, err, b)
				}
			}
			got, err := mpiOf(filepath.Join(dir, "solver"), nil, 0)
			if err != nil || got != m.want {
				t.Errorf("mpiOf = %q, %v; want %q", got, err, m.want)
			}
		})
	}
}

// TestScriptLauncher: a script whose command runs an MPI launcher itself
// (Debian's examl, which picks a build for the CPU and runs mpirun) is
// found, and dtrun warns before launching it (such a job traces nothing:
// each rank starts a job of its own); a launcher named in a comment, in a
// string or as an argument is not a command.
func TestScriptLauncher(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		line       int
	}{
		{"examl", "#!/bin/sh\nEXE=/usr/lib/examl/bin/x\ntest_and_run () {\n        if grep -q \"$1\" /proc/cpuinfo; then\n                mpirun -np \"$NP\" \"${EXE}-$1\" ${CMDARGS}\n        fi\n}\n", 5},
		{"exec", "#!/bin/bash\nexec mpiexec.hydra -n 4 ./app\n", 2},
		{"assignment", "#!/bin/sh\nNP=4 /usr/bin/mpirun.openmpi ./app\n", 2},
		{"comment", "#!/bin/sh\n# run with: mpirun -np 4 app.sh\necho \"mpirun is not needed\"\n./app --launcher mpirun\n", 0},
		{"plain", "#!/bin/sh\nexec ./app \"$@\"\n", 0},
		{"not a script", "mpirun -np 4 ./app\n", 0},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.text), 0o755); err != nil {
			t.Fatal(err)
		}
		if n, _ := scriptLauncher(p); n != tc.line {
			t.Errorf("%s: line %d, want %d", tc.name, n, tc.line)
		}
	}
	lib := fakeLib(dir)
	var stderr strings.Builder
	o := Options{Args: []string{"-np", "2", filepath.Join(dir, "examl")}, Mpirun: "/bin/true", LibDir: lib, Stdout: io.Discard, Stderr: &stderr}
	if err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := "dtrun: warning: " + filepath.Join(dir, "examl") + ` is a script that starts an MPI job itself (line 5: mpirun -np "$NP" "${EXE}-$1" ${CMDARGS})`
	if !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("dtrun printed\n%s\nwant it to start with\n%s", stderr.String(), want)
	}
	stderr.Reset()
	o.Args[2] = filepath.Join(dir, "plain")
	if err := Run(context.Background(), o); err != nil || strings.Contains(stderr.String(), "warning") {
		t.Errorf("plain script: %v, %q", err, stderr.String())
	}
}

// At an interrupt dtrun reads the clock, then notes which processes hold
// their spill files: those were alive at that reading, and only their
// calls in progress are bounded by it.
func TestNoteInterruption(t *testing.T) {
	dir := t.TempDir()
	alive, dead := filepath.Join(dir, "app.0.spill"), filepath.Join(dir, "app.1.spill")
	for _, p := range []string{alive, dead} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(alive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("no locks here: %v", err)
	}
	before := monotonicRaw()
	in := noteInterruption(dir)
	if in.at < before || in.at > monotonicRaw() {
		t.Errorf("read at %d, not between %d and now", in.at, before)
	}
	if in.bound(alive) != in.at || in.bound(dead) != 0 {
		t.Errorf("bounds: alive %d, dead %d; want %d and 0", in.bound(alive), in.bound(dead), in.at)
	}
	if (interruption{}).bound(alive) != 0 {
		t.Error("a job not interrupted bounds its processes")
	}
}

// TestSharedInterpreter: an interpreter whose executable is linked with
// its shared library (libpython3.x.so: pyenv's, a site's module) and
// imports no dlopen itself is not refused as "not an MPI program"; the
// library loads mpi4py, which loads MPI.
func TestSharedInterpreter(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libpython3.99.so")
	src := filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, []byte("int Py_BytesMain(int, char **);\nint main(int c, char **v) { return Py_BytesMain(c, v); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	libSrc := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(libSrc, []byte("int Py_BytesMain(int c, char **v) { (void)v; return c; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "python3.99")
	for _, args := range [][]string{
		{"-shared", "-fPIC", "-o", lib, libSrc},
		{"-o", prog, src, "-L" + dir, "-lpython3.99", "-Wl,-rpath," + dir},
	} {
		if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, b)
		}
	}
	if impl, err := mpiOf(prog, []string{"app.py"}, 0); err != nil || impl != "" {
		t.Errorf("mpiOf(%s) = %q, %v; want \"\", nil", prog, impl, err)
	}
}

// An interrupted job has failed even where its launcher exits 0, as
// MPICH's mpiexec may once it has passed the signal on: dtrun exits as a
// shell reports the signal (128 + its number), or with the launcher's own
// failure.
func TestInterruptedExit(t *testing.T) {
	dir := t.TempDir()
	lib := fakeLib(dir)
	app := filepath.Join(dir, "app.sh")
	os.WriteFile(app, []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct {
		name  string
		exit  int
		cause error
		want  int
	}{
		{"SIGTERM, launcher 0", 0, Interrupted{Signal: syscall.SIGTERM}, 143},
		{"SIGINT, launcher 0", 0, Interrupted{Signal: syscall.SIGINT}, 130},
		{"no cause, launcher 0", 0, nil, 130},
		{"launcher's failure", 7, Interrupted{Signal: syscall.SIGINT}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			launcher := filepath.Join(dir, "launcher.sh")
			script := fmt.Sprintf("#!/bin/sh\ntrap 'exit %d' INT\nwhile :; do sleep 0.02; done\n", tc.exit)
			if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(300*time.Millisecond, func() { cancel(tc.cause) })
			o := Options{Args: []string{"-np", "2", app}, Mpirun: launcher, LibDir: lib, Stdout: io.Discard, Stderr: io.Discard}
			err := Run(ctx, o)
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != tc.want {
				t.Errorf("Run: %v, want exit code %d", err, tc.want)
			}
		})
	}
}

// TestRanksOutliveLauncher: a launcher may exit before its ranks on this
// node are gone (MPICH's mpiexec after an MPI_Abort, which leaves the
// processes it killed to end after it). dtrun waits a while for them
// (outlivedWait): a rank ending in that time has its trace counted as the
// job's, not taken for a running one's or an earlier run's. One that runs
// on is left alone and said to be still running, its trace the job's and
// still written, and the spill directory stays for `dtrun --recover`.
func TestRanksOutliveLauncher(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1)")
	}
	fixture := t.TempDir()
	paths, err := tracetest.NewRun(1).WriteDir(fixture, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		hold string        // how long the rank outlives the launcher
		wait time.Duration // outlivedWait
	}{
		{"ends soon", "0.3", 10 * time.Second},
		{"runs on", "30", 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(w time.Duration) { outlivedWait = w }(outlivedWait)
			outlivedWait = tc.wait
			dir, root := t.TempDir(), t.TempDir()
			lib := fakeLib(t.TempDir())
			app := filepath.Join(dir, "app")
			os.WriteFile(app, []byte("#!/bin/sh\n"), 0o755)
			// The "rank" writes its trace, holds it and its spill file
			// as a running rank does, and outlives the launcher; ending,
			// it removes its spill file, as the tracer does.
			spillFile := filepath.Join(t.TempDir(), "app.0.spill")
			_, fd, err := records.CreateSpill(spillFile, records.SpillInfo{Trace: filepath.Join(dir, "app.0.trc"), Slots: 1, Chunk: 4096})
			if err != nil {
				t.Fatal(err)
			}
			syscall.Close(fd)
			launcher := filepath.Join(dir, "launcher.sh")
			script := fmt.Sprintf(`#!/bin/sh
spill=$(ls -d %[1]s/dtpa-*)
cd %[2]s
cp %[3]s app.0.trc
cp %[5]s "$spill/app.0.spill"
sh -c 'exec 8<"$1" 9<app.0.trc; flock 8; flock 9; echo $$ > pid; touch ready; sleep %[4]s; rm -f "$1"' sh "$spill/app.0.spill" >/dev/null 2>&1 &
while [ ! -e ready ]; do sleep 0.01; done
`, root, dir, paths[0], tc.hold, spillFile)
			if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			getenv := func(k string) string {
				if k == "DT_SPILL_ROOT" {
					return root
				}
				return os.Getenv(k)
			}
			o := Options{Args: []string{"-wdir", dir, "-np", "1", app}, Mpirun: launcher, LibDir: lib, Stdout: io.Discard, Stderr: &out, Getenv: getenv}
			if err := Run(context.Background(), o); err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			got := out.String()
			t.Logf("dtrun said:\n%s", got)
			if strings.Contains(got, "earlier run") {
				t.Errorf("the job's own trace taken for an earlier run's")
			}
			spills, _ := filepath.Glob(filepath.Join(root, "dtpa-*"))
			if tc.wait > time.Second {
				if !strings.Contains(got, "dtrun: 1 trace of app in ") || strings.Contains(got, "still") || len(spills) != 0 {
					t.Errorf("the rank ended within the wait: want its trace counted, nothing still running, no spill directory left (%q)", spills)
				}
				return
			}
			if pid, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
				defer exec.Command("pkill", "-P", strings.TrimSpace(string(pid))).Run() // its sleep
			}
			for _, want := range []string{
				"dtrun: app.0: its process is still running: left alone; its trace ends when it does (should it be killed first, `dtrun --recover " + spills[0] + "` adds its last records)\n",
				"dtrun: app.0.trc in " + dir + " is still written by the job's processes, which outlived the launcher: analyse once they end\n",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("no line %q", want)
				}
			}
			if len(spills) != 1 {
				t.Errorf("spill directories %q: want the job's kept", spills)
			}
		})
	}
}

// TestSrunArgs: srun gets the tracer's variables in --export, added to
// the user's own --export where there is one; its options' values are not
// taken for the program, nor its -D for anything but the trace directory.
func TestSrunArgs(t *testing.T) {
	env := []string{"LD_PRELOAD=/l/stub.so", "DT_SPILL_DIR=/dev/shm/dtpa-1"}
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"-n", "4", "./app", "--export=x"}, []string{"--export=ALL,LD_PRELOAD=/l/stub.so,DT_SPILL_DIR=/dev/shm/dtpa-1", "-n", "4", "./app", "--export=x"}},
		{[]string{"--export=NONE", "./app"}, []string{"--export=LD_PRELOAD=/l/stub.so,DT_SPILL_DIR=/dev/shm/dtpa-1", "./app"}},
		{[]string{"-n", "2", "--export", "ALL,FOO=1", "./app"}, []string{"-n", "2", "--export", "ALL,FOO=1,LD_PRELOAD=/l/stub.so,DT_SPILL_DIR=/dev/shm/dtpa-1", "./app"}},
		{[]string{"-J", "--export=NONE", "./app"}, []string{"--export=ALL,LD_PRELOAD=/l/stub.so,DT_SPILL_DIR=/dev/shm/dtpa-1", "-J", "--export=NONE", "./app"}}, // a job's name
	} {
		got, err := srunArgs(tc.args, env)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("srunArgs(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
		}
	}
	if _, err := srunArgs([]string{"./app"}, []string{"LD_PRELOAD=/a,b.so"}); err == nil {
		t.Error("a value with a comma went into --export")
	}
	app, _ := filepath.Abs(os.Args[0])
	for _, args := range [][]string{
		{"-s", "-n", "2", app},
		{"-p", "debug", "-t", "10", "-N", "2", "--ntasks-per-node", "2", "--mpi", "pmix", app, "-n"},
		{"--export=ALL", "-D", "/tmp", app},
	} {
		if p, _, err := findProgram(args, srunValueOpts); err != nil || p != app {
			t.Errorf("findProgram(%q) under srun = %q, %v", args, p, err)
		}
	}
	// MPMD: srun --multi-prog names a file of "ranks program args" lines.
	conf := filepath.Join(t.TempDir(), "mpmd.conf")
	os.WriteFile(conf, []byte("# ocean and atmosphere\n0-1 "+app+" ocean\n2-3 /bin/true\n"), 0o644)
	if p, rest, err := findProgram([]string{"-n", "4", "--multi-prog", conf}, srunValueOpts); err != nil || p != app || !slices.Equal(rest, []string{"ocean"}) {
		t.Errorf("srun --multi-prog: program %q %q, %v; want %s ocean", p, rest, err, app)
	}
	if d := traceDir([]string{"-n", "2", "-D", "/w", "./app"}, srunValueOpts); d != "/w" {
		t.Errorf("srun -D /w: trace directory %q", d)
	}
	if d := traceDir([]string{"--chdir=/v", "./app"}, srunValueOpts); d != "/v" {
		t.Errorf("srun --chdir=/v: trace directory %q", d)
	}
}

// TestSrunLaunch runs a job under a fake srun named first on dtrun's
// command line (dtrun srun -n 2 ./app): srun gets the tracer's variables
// in --export, the user's arguments untouched, and, when the job is
// interrupted, SIGTERM (a first SIGINT only asks srun for the job's
// status).
func TestSrunLaunch(t *testing.T) {
	dir := t.TempDir()
	lib := fakeLib(dir)
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	app := filepath.Join(dir, "app.sh")
	os.WriteFile(app, []byte("#!/bin/sh\n"), 0o755)
	log := filepath.Join(dir, "srun.log")
	script := fmt.Sprintf("#!/bin/sh\necho \"$@\" > %[1]s\ntrap 'echo TERM >> %[1]s; exit 0' TERM\ntrap 'echo INT >> %[1]s' INT\n[ -n \"$WAIT\" ] || exit 0\nwhile :; do sleep 0.02; done\n", log)
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	o := Options{Args: []string{"srun", "-n", "2", "-p", "debug", app, "x"}, LibDir: lib, Stdout: io.Discard, Stderr: io.Discard}
	if err := Run(context.Background(), o); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, _ := os.ReadFile(log)
	want := regexp.MustCompile(`^--export=ALL,LD_PRELOAD=\S+/libdtpa_preload.so,DT_SPILL_DIR=\S+/dtpa-\d+,DT_PARAMS=[0-9a-f]+ -n 2 -p debug ` + regexp.QuoteMeta(app) + " x\n$")
	if !want.Match(got) {
		t.Errorf("srun got %q", got)
	}

	t.Setenv("WAIT", "1")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(Interrupted{Signal: syscall.SIGINT}) })
	err := Run(ctx, o)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 130 {
		t.Errorf("interrupted: %v, want exit code 130", err)
	}
	if got, _ := os.ReadFile(log); !strings.HasSuffix(string(got), "\nTERM\n") {
		t.Errorf("srun got %q: want SIGTERM", got)
	}
}

// TestStepOfSrun: dtrun finds its srun's step among Slurm's steps by the
// host and process id Slurm records for each step's srun, the host named
// short or in full on either side.
func TestStepOfSrun(t *testing.T) {
	steps := "StepId=4242.0 UserId=0 StartTime=2026-12-07T06:00:00 TimeLimit=UNLIMITED State=RUNNING Partition=debug NodeList=dtnode2 Nodes=1 CPUs=4 Tasks=4 Name=hang Network=(null) TRES=cpu=4,mem=0,node=1 ResvPorts=(null) CPUFreqReq=Default Dist=Block SrunHost:Pid=dtnode1:3117\n" +
		"StepId=4242.1 UserId=0 State=RUNNING NodeList=dtnode1 SrunHost:Pid=dtnode1.cluster:3120\n" +
		"StepId=4243.extern UserId=0 State=RUNNING NodeList=dtnode1 SrunHost:Pid=dtnode1:3125\n" +
		"StepId=4244.0 UserId=0 State=RUNNING NodeList=dtnode3 SrunHost:Pid=dtnode3:3117\n"
	for _, c := range []struct {
		host string
		pid  int
		want string
	}{
		{"dtnode1", 3117, "4242.0"},
		{"dtnode1.cluster", 3117, "4242.0"},
		{"dtnode1", 3120, "4242.1"},
		{"dtnode3", 3117, "4244.0"},
		{"dtnode1", 311, ""},
		{"dtnode2", 3117, ""},
		{"dtnode1", 3125, "4243.extern"},
	} {
		if got := stepOfSrun(steps, c.host, c.pid); got != c.want {
			t.Errorf("stepOfSrun(%s:%d) = %q, want %q", c.host, c.pid, got, c.want)
		}
	}
	if got := stepOfSrun("No job steps in the system\n", "dtnode1", 3117); got != "" {
		t.Errorf("no steps: %q", got)
	}
}
