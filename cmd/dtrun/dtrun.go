package main

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dtpa/dtpa/internal/version"
	"github.com/dtpa/dtpa/tracer/records"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// Options is what dtrun needs to launch a traced run.
type Options struct {
	// Args are the launcher arguments and the program with its arguments,
	// passed through untouched.
	Args []string
	// Mpirun is the launcher to use; empty = find one (DT_MPIRUN, then the
	// launcher of the MPI the program is linked with).
	Mpirun string
	// LibDir holds libdtpa_preload.so; empty = ../lib next to the dtrun
	// executable (or DT_LIB).
	LibDir string
	// Stdout and Stderr of the launched job (the defaults are dtrun's).
	Stdout, Stderr io.Writer
	// Getenv looks up environment variables (os.Getenv when nil).
	Getenv func(string) string
}

// ExitError carries the exit code of the launched job.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("job exited with code %d", e.Code) }

// Interrupted is the cause of Run's context when a signal ended the job
// (Ctrl-C, a batch system's SIGTERM). An interrupted job has failed even
// where its launcher exits 0 (MPICH's mpiexec may, having passed the
// signal on): dtrun then exits as a shell reports a signal, 128 + its
// number.
type Interrupted struct{ Signal syscall.Signal }

func (i Interrupted) Error() string { return "interrupted by " + i.Signal.String() }

const usage = `dtrun [--mpirun PATH] <the arguments mpirun takes> ./app [args]
dtrun srun <the arguments srun takes> ./app [args]

Runs an MPI program traced: every rank writes <app>.<rank>.trc into the
current directory. Every argument but --mpirun goes to the MPI launcher
untouched; dtrun adds only what loads the tracer (-x LD_PRELOAD=… for Open MPI,
-genv LD_PRELOAD … for MPICH, --export=ALL,LD_PRELOAD=… for Slurm's srun,
added to your own --export if you give one) and returns the program's exit
code.

The launcher: --mpirun PATH or a launcher named first (srun, mpirun,
mpiexec …), else $DT_MPIRUN, else the launcher of the MPI implementation
the program is linked with (mpirun.openmpi / mpiexec.mpich, then mpirun /
mpiexec). Under Slurm, run dtrun inside the allocation (salloc, sbatch):
dtrun srun -n 64 --mpi=pmix ./app (Open MPI; --mpi=pmi2 for MPICH).

When the job ends, dtrun prints where the traces are, how many and how
large, and warns of every rank that stopped tracing early. dtrun --version
prints its version.

The ranks write their events raw while the job runs (up to DT_DEFER_MB,
default 128 MB per rank; then they encode as they go), which spares the
program the encoding. dtrun compacts the traces of its own node's ranks as
each rank ends, while the job tears down (at the lowest priority:
DT_COMPACT_EARLY=0 leaves it all to after the job), and what is left after
the job, on every core; ranks on other nodes compact theirs as they end.
dtrun --compact TRACE|DIR|APP … does it by hand, for traces that a dtrun
that did not end left as they were.

The ranks load the tracer (lib/libdtpa_<impl>.so, C): MPI_Init costs a
rank a few ms of CPU, MPI_Finalize next to nothing. It loads its encoder
(lib/libdtpa_enc.so, Go) only when it needs one: past DT_DEFER_MB, or to
compact its trace on another node.

A rank killed without warning leaves the records it had not written in its
node's spill directory (/dev/shm/dtpa-…, named by dtrun; the ranks of
other nodes make it there): dtrun adds those of its own node to the traces.
On another node, run there: dtrun --recover /dev/shm/dtpa-… (dtrun names
the node, its ranks that lack their traces' end, and the launcher's
command that runs it there, e.g. srun -w NODE -N 1 -n 1 dtrun --recover
…); it also removes the spill file
of a rank killed inside MPI_Init, which recorded nothing (its trace is
empty). Records that cannot be added yet (the traces' directory full or
read-only) stay there for a later --recover. A job killed together with
its dtrun leaves its spill directory behind: the next dtrun on the host
adds its records to that job's traces; on a node where no dtrun runs,
dtrun --recover without a directory does it for every killed job's there
(run it on each node, e.g. from a batch system's epilog, to free that
memory). DT_SPILL_ROOT=DIR makes the spill directories in DIR instead of
/dev/shm.

Tracer parameters come from ./tracer.par (write one with dtpar) or from the
environment (UserStackSize, MaxTraceSize, TraceBufSize).

Examples:
  dtrun -np 4 ./jacobi 1000
  dtrun srun -n 64 --mpi=pmix ./jacobi 1000
  dtrun --oversubscribe -np 8 ./app input.dat
  dtrun --mpirun mpiexec.mpich -n 4 ./app
  dtrun ./app                  # like: mpirun ./app
`

// Main parses the command line and runs; it returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:            "dtrun",
		Usage:           "run an MPI program under the dtpa tracer",
		UsageText:       usage,
		SkipFlagParsing: true, // everything belongs to the launcher
		HideHelp:        true,
		Writer:          stdout,
		ErrWriter:       stderr,
		Action: func(c *cli.Context) error {
			rest := c.Args().Slice()
			if len(rest) == 0 || rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help" {
				fmt.Fprint(stdout, usage)
				if len(rest) == 0 {
					return &ExitError{Code: 2}
				}
				return nil
			}
			if rest[0] == "--version" {
				fmt.Fprintf(stdout, "dtrun version %s\n", version.String())
				return nil
			}
			if rest[0] == "--compact" {
				if len(rest) < 2 {
					fmt.Fprintln(stderr, "dtrun: --compact takes traces, directories or <app> prefixes")
					return &ExitError{Code: 2}
				}
				if !compactPaths(rest[1:], stderr) {
					return &ExitError{Code: 1}
				}
				return nil
			}
			if rest[0] == "--recover" {
				if len(rest) == 1 {
					return recoverNode(stderr)
				}
				if len(rest) != 2 {
					fmt.Fprintln(stderr, "dtrun: --recover takes one directory, the job's spill directory on this node, or none: every killed job's on this node")
					return &ExitError{Code: 2}
				}
				if kept, _ := recoverSpills(rest[1], nil, stderr); len(kept) > 0 {
					return &ExitError{Code: 1}
				}
				os.Remove(filepath.Join(rest[1], compactMark))
				os.Remove(filepath.Join(rest[1], endedFIFO))
				os.Remove(rest[1]) // when empty: every spill file was recovered
				return nil
			}
			opts := Options{Stdout: stdout, Stderr: stderr}
			for len(rest) > 0 {
				if rest[0] == "--mpirun" && len(rest) > 1 {
					opts.Mpirun, rest = rest[1], rest[2:]
				} else if v, ok := strings.CutPrefix(rest[0], "--mpirun="); ok {
					opts.Mpirun, rest = v, rest[1:]
				} else {
					break
				}
			}
			opts.Args = rest
			return Run(c.Context, opts)
		},
	}
	err := app.RunContext(ctx, args)
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	default:
		fmt.Fprintln(stderr, "dtrun:", err)
		return 1
	}
}

// Run launches the job and waits for it. A non-zero exit of the job is an
// *ExitError with its code.
func Run(ctx context.Context, o Options) error {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	launcher := o.Mpirun
	if launcher == "" && len(o.Args) > 0 && launcherNames[filepath.Base(o.Args[0])] {
		launcher, o.Args = o.Args[0], o.Args[1:]
	}
	if launcher == "" {
		launcher = getenv("DT_MPIRUN")
	}
	opts := styleOf(launcher).valueOpts()
	prog, rest, err := findProgram(o.Args, opts)
	if err != nil {
		return err
	}
	impl, err := mpiOf(prog, rest, 0)
	if err != nil {
		return err
	}
	if impl == "" {
		if n, line := scriptLauncher(prog); n > 0 {
			w := o.Stderr
			if w == nil {
				w = os.Stderr
			}
			fmt.Fprintf(w, "dtrun: warning: %s is a script that starts an MPI job itself (line %d: %s): "+
				"under a launcher each rank would start one of its own; give dtrun the MPI program the script runs\n", prog, n, line)
		}
	}
	dir := traceDir(o.Args, opts)
	if err := writableTraceDir(dir); err != nil {
		return err
	}
	if launcher == "" {
		if launcher, err = findLauncher(impl); err != nil {
			return err
		}
	} else if p, err := exec.LookPath(launcher); err != nil {
		return fmt.Errorf("MPI launcher %q not found: %w", launcher, err)
	} else {
		launcher = p
	}
	stub, err := stubPath(o.LibDir, getenv)
	if err != nil {
		return err
	}
	preload := stub
	if old := getenv("LD_PRELOAD"); old != "" {
		preload += ":" + old
	}
	// The spill directory holds the ranks' trace buffers in shared memory,
	// so that dtrun can save the records of a rank killed without warning.
	warn := o.Stderr
	if warn == nil {
		warn = os.Stderr
	}
	root := getenv("DT_SPILL_ROOT")
	if root == "" {
		root = spillRoot()
	}
	sweepStale(root, warn)
	spill, err := os.MkdirTemp(root, "dtpa-")
	if err != nil {
		return fmt.Errorf("creating the trace buffer directory: %w", err)
	}
	release := holdSpill(spill)
	keepSpill := false
	defer func() {
		if !keepSpill {
			os.RemoveAll(spill)
		}
		release()
	}()
	markCompaction(spill, dir)
	var args []string
	tenv := paramsEnv(getenv, warn)
	style := styleOf(launcher)
	if style != slurmStyle {
		// (srun passes them on in its --export=ALL, which dtrun adds
		// unless told otherwise; its --export list cannot carry a value
		// with a comma, as DT_CLOCK_SKEW's.)
		tenv = append(tenv, forwardedEnv(os.Environ())...)
	}
	switch style {
	case mpichStyle:
		args = []string{"-genv", "LD_PRELOAD", preload, "-genv", "DT_SPILL_DIR", spill}
		for _, kv := range tenv {
			k, v, _ := strings.Cut(kv, "=")
			args = append(args, "-genv", k, v)
		}
		args = append(args, o.Args...)
	case slurmStyle:
		env := append([]string{"LD_PRELOAD=" + preload, "DT_SPILL_DIR=" + spill}, tenv...)
		if args, err = srunArgs(o.Args, env); err != nil {
			return err
		}
	default:
		env := []string{"-x", "LD_PRELOAD=" + preload, "-x", "DT_SPILL_DIR=" + spill}
		for _, kv := range tenv {
			env = append(env, "-x", kv)
		}
		a, removeApps, err := openMPIAppFiles(o.Args, env)
		if err != nil {
			return err
		}
		defer removeApps()
		args = openMPIArgs(a, env...)
	}
	cmd := exec.CommandContext(ctx, launcher, args...)
	cmd.Stdin = os.Stdin
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// When an interrupt reaches dtrun, on the clock of this node's ranks,
	// and which of them were alive then: one killed before its own handler
	// stamped its end had its calls in progress run at least until it
	// (records.RecoverInterrupted).
	var intr interruption
	noted := make(chan struct{})
	// On cancellation this node's ranks get SIGTERM from dtrun, then the
	// launcher SIGINT, which it passes on to the ranks of other nodes.
	// Open MPI's mpirun kills a job it is interrupted in at once, before
	// the ranks' tracers write their traces' ends; signalled first, they
	// write them (each call in progress with its place, and the moment).
	// A launcher still running 5 s later gets a second SIGINT (Open MPI's
	// mpirun, whose abort can hang, then terminates at once), and is
	// killed 20 s after the first.
	cmd.Cancel = func() error {
		<-noted
		step := ""
		if style == slurmStyle {
			step = slurmStep(spill) // while the ranks' spill files are there
			if step == "" {
				step = srunStep(cmd.Process.Pid) // (no task on this node)
			}
		}
		endRanks(spill, endRanksWait)
		sig := style.interruptSignal()
		time.AfterFunc(5*time.Second, func() { cmd.Process.Signal(sig) })
		if step != "" && signalStep(step, syscall.SIGTERM) == nil {
			// Every task of the step, on every node, ends as this
			// node's did, and srun with them; it gets its signal
			// only if it has not ended in 5 s.
			return nil
		}
		return cmd.Process.Signal(sig)
	}
	cmd.WaitDelay = 20 * time.Second
	job := newJobFiles(dir)
	stopNoting := context.AfterFunc(ctx, func() {
		intr = noteInterruption(spill)
		close(noted)
	})
	early := startEarly(spill, job, getenv, cmd.Stderr)
	err = cmd.Run()
	if !stopNoting() {
		<-noted // interrupted: it was noted, or is being
	}
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C, a batch system's SIGTERM): the ranks got
		// the signal too and write what they recorded as they end, which
		// the launcher may not wait for. A second signal ends dtrun at
		// once, leaving the rest to dtpa.
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		waitRanks(spill, job, rankEndWait)
	} else {
		waitRanks(spill, job, outlivedWait)
	}
	early.stop()
	// A rank still running keeps its spill file: the directory stays,
	// for `dtrun --recover` or the next dtrun on the host (sweepStale)
	// once it ends.
	kept, running := recoverSpills(spill, intr.bound, cmd.Stderr)
	keepSpill = len(kept) > 0 || len(running) > 0
	job.stillRunning(running)
	job.stillHeld()
	inInit := initMarks(spill, intr.bound)
	// What is left deferred: the traces of this node's ranks
	// (markCompaction) that were not compacted as they finished
	// (earlyCompactor), and those of ranks killed or cut short, or of
	// DT_COMPACT_AT_END=0; other ranks compacted their own as they ended.
	compactTraces(job.deferred(), cmd.Stderr)
	removeStale(records.CompactTemps(dir), job)
	summarize(cmd.Stderr, job, recoveryOf(style, launcher, spill), inInit)
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		code := xe.ExitCode()
		if code < 0 {
			code = 128 + 15
		}
		return &ExitError{Code: code}
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		// The launcher exited 0, before or after dtrun passed the
		// signal on (exec reports the latter as the context's error).
		code := 128 + int(syscall.SIGINT)
		var in Interrupted
		if errors.As(context.Cause(ctx), &in) {
			code = 128 + int(in.Signal)
		}
		return &ExitError{Code: code}
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", launcher, err)
	}
	return nil
}

// recoveryOf is how to recover, on the node where it died, the last
// records of a rank killed there (summarize): dtrun (this program, by
// its path) run there with the launcher.
func recoveryOf(style launchStyle, launcher, spill string) remoteRecovery {
	self, _ := os.Hostname()
	exe, err := os.Executable()
	if err != nil {
		exe = "dtrun"
	}
	return remoteRecovery{spill: spill, self: self, on: func(hosts []string) string {
		return style.onNodes(launcher, hosts, exe+" --recover "+spill)
	}}
}

// endRanksWait bounds how long an interrupted dtrun waits for the ranks
// it signalled to end before it interrupts the launcher: a rank writes
// its trace's end in milliseconds.
const endRanksWait = 2 * time.Second

// endRanks sends SIGTERM to the processes of this node that hold their
// spill files in dir (SpillInfo.Pid, of this node's boot, and still
// holding that file: not a process that took a finished one's id), and
// waits up to d for them to end (to let their files go). The signal goes
// to each process's main thread (whose id is the process's): where it
// finds the thread is where the program was (Footer.interrupted), which a
// signal to the process, taken by any thread not blocking it (an MPI
// library's helper thread), would not say.
func endRanks(dir string, d time.Duration) {
	boot := records.BootID()
	files, _ := filepath.Glob(filepath.Join(dir, "*.spill"))
	var sent []string
	for _, f := range files {
		info, err := records.ReadSpillInfo(f)
		if err != nil || info.Pid <= 0 || info.Boot != boot || !records.Held(f) || !holds(info.Pid, f) {
			continue
		}
		if syscall.Tgkill(info.Pid, info.Pid, syscall.SIGTERM) == nil {
			sent = append(sent, f)
		}
	}
	if len(sent) > 0 {
		waitReleased(func() []string { return sent }, d)
	}
}

// holds tells whether process pid has file f open.
func holds(pid int, f string) bool {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fds)
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(f)
	if err == nil {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && l == abs {
			return true
		}
	}
	return false
}

// interruption is when an interrupt reached dtrun (a CLOCK_MONOTONIC_RAW
// reading, 0 none) and the spill files of the processes alive then.
type interruption struct {
	at    int64
	alive map[string]bool
}

// noteInterruption reads the clock, then which processes of the job hold
// their spill files in dir, or their notes of being inside MPI_Init
// (initMarks): those were alive when it was read.
func noteInterruption(dir string) interruption {
	in := interruption{at: monotonicRaw(), alive: map[string]bool{}}
	for _, f := range processFiles(dir) {
		if records.Held(f) {
			in.alive[f] = true
		}
	}
	return in
}

// processFiles are the files in dir that the job's processes hold while
// they live: their spill files, and their notes of being inside MPI_Init
// (initMarks).
func processFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.spill"))
	inits, _ := filepath.Glob(filepath.Join(dir, initMarkGlob))
	return append(files, inits...)
}

// bound is when the process of spill file f was known alive, 0 unknown.
func (in interruption) bound(f string) int64 {
	if in.alive[f] {
		return in.at
	}
	return 0
}

// monotonicRaw reads CLOCK_MONOTONIC_RAW in ns, the clock the ranks'
// tracers read (or calibrate their TSC against); 0 when it cannot.
func monotonicRaw() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// rankEndWait bounds how long an interrupted dtrun waits for its ranks to
// end: each one's tracer writes its trace's end within 5 s of the signal.
const rankEndWait = 10 * time.Second

// outlivedWait bounds how long dtrun waits, after the launcher exited by
// itself, for ranks that still run: the launcher may exit before the
// processes it killed are gone (MPICH's mpiexec after an MPI_Abort), and
// a rank caught in its exit still holds its trace or spill file, which
// would be taken for a rank still at work, or its trace for an earlier
// run's. Where every rank has ended, as the launcher normally waits for,
// it costs one look at the spill directory and the traces' locks.
var outlivedWait = 3 * time.Second

// waitRanks waits, at most for d, until no process of the job holds its
// spill file in dir, nor its note of being inside MPI_Init (initMarks),
// then until none holds its trace (job.heldTraces: ranks of other
// nodes): every rank on this node has ended, and every rank elsewhere
// has written its trace. The traces, on a shared file system, are
// listed once: only those held then are looked at again.
func waitRanks(dir string, job *jobFiles, d time.Duration) {
	end := time.Now().Add(d)
	waitReleased(func() []string { return processFiles(dir) }, d)
	held := job.heldTraces()
	waitReleased(func() []string { return held }, time.Until(end))
}

// waitReleased waits up to d until no process holds any of the files
// that files lists (records.Held).
func waitReleased(files func() []string, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !slices.ContainsFunc(files(), records.Held) {
			return
		}
	}
}

// openMPIArgs is Open MPI's mpirun's arguments args with env (its -x
// options) given to every program. Open MPI takes -x per application
// context: in an MPMD job (mpirun -np 2 ./ocean : -np 2 ./atmos) an
// option before the first program reaches that program's processes only,
// and the traced ones would wait forever in MPI_Init for the others to join
// the tracer's collective. So env goes before each context, after every
// ":" that separates them. (MPICH's -genv reaches them all.)
func openMPIArgs(args []string, env ...string) []string {
	out := append(make([]string, 0, len(args)+2*len(env)), env...)
	for _, a := range args {
		out = append(out, a)
		if a == ":" {
			out = append(out, env...)
		}
	}
	return out
}

// spillRoot is a memory file system when there is one: trace buffers live
// there, and writing them must cost no disk I/O.
func spillRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && canWrite("/dev/shm") {
		return "/dev/shm"
	}
	return os.TempDir()
}

// writableTraceDir says why the ranks could not write their traces in
// dir, the job's working directory, before the job runs rather than after
// it ran untraced: each rank would only say so as it starts.
func writableTraceDir(dir string) error {
	err := probeWrite(dir)
	if err == nil || !records.CannotWrite(err) {
		return nil // a -wdir made on the nodes only, say: the ranks tell
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("the ranks cannot write their traces in %s: %v (run the job from a directory you can write, or name one with the launcher's -wdir)", absDir(dir), err)
}

func canWrite(dir string) bool { return probeWrite(dir) == nil }

// probeWrite makes and removes a file in dir: why it cannot, if it cannot.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".dtpa-probe-")
	if err != nil {
		return err
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// recoverSpills appends to their traces the records of ranks that died
// without writing them (their spill files remain), and removes the spill
// files of ranks that died inside MPI_Init, which recorded nothing. It
// returns the spill files it keeps, and says so (keptSpills): those whose
// trace could not be written (no space or quota left, no permission),
// which a later `dtrun --recover` adds once there is room, after the
// job's end too; and, with what they say of their ranks (zero when
// unreadable), those that a process still holds (running), left alone,
// which the same command recovers should the process be killed.
func recoverSpills(dir string, bound func(spill string) int64, w io.Writer) (kept []string, running []records.SpillInfo) {
	for _, f := range records.RemoveAbandoned(dir) {
		fmt.Fprintf(w, "dtrun: %s: the process died inside MPI_Init, before its trace began: it recorded nothing\n",
			strings.TrimSuffix(filepath.Base(f), records.SpillNew))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.spill"))
	var recovered []string
	events := 0
	var keptErr error
	var names []string // of the running
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".spill")
		if records.Held(f) {
			info, _ := records.ReadSpillInfo(f)
			if info.Pid > 0 {
				name = fmt.Sprintf("%s (pid %d)", name, info.Pid)
			}
			running = append(running, info)
			names = append(names, name)
			continue
		}
		var at int64
		if bound != nil {
			at = bound(f)
		}
		n, err := records.RecoverInterrupted(f, at)
		switch {
		case err != nil && records.CannotWrite(err):
			if keptErr == nil {
				keptErr = err
			}
			kept = append(kept, f)
		case err != nil:
			fmt.Fprintf(w, "dtrun: recovering %s: %v\n", filepath.Base(f), err)
		case n > 0:
			recovered = append(recovered, name)
			events += n
		}
	}
	switch len(names) {
	case 0:
	case 1:
		fmt.Fprintf(w, "dtrun: %s: its process is still running: left alone; its trace ends when it does "+
			"(should it be killed first, `dtrun --recover %s` adds its last records)\n", names[0], dir)
	default:
		fmt.Fprintf(w, "dtrun: %d processes are still running (%s): left alone; their traces end when they do "+
			"(should one be killed first, `dtrun --recover %s` adds its last records)\n", len(names), someNames(names), dir)
	}
	// One line for all the processes alike, however many died.
	switch len(recovered) {
	case 0:
	case 1:
		fmt.Fprintf(w, "dtrun: %s: the process died; %d events recovered from its trace buffers\n", recovered[0], events)
	default:
		fmt.Fprintf(w, "dtrun: %d processes died (%s); %d events recovered from their trace buffers\n", len(recovered), someNames(recovered), events)
	}
	if len(kept) > 1 {
		fmt.Fprintf(w, "dtrun: recovering %s: %v (and %d more alike)\n", filepath.Base(kept[0]), keptErr, len(kept)-1)
	} else if len(kept) == 1 {
		fmt.Fprintf(w, "dtrun: recovering %s: %v\n", filepath.Base(kept[0]), keptErr)
	}
	if len(kept) > 0 {
		keptSpills(w, dir, kept)
	}
	return kept, running
}

// someNames lists names, the first eight of them when there are more.
func someNames(names []string) string {
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:8], ", ") + fmt.Sprintf(" and %d more", len(names)-8)
}

// keptSpills says which ranks' last records dtrun keeps in the spill
// directory dir (recoverSpills), what they hold of memory, and how to add
// them to their traces.
func keptSpills(w io.Writer, dir string, kept []string) {
	var size int64
	names := make([]string, len(kept))
	for i, f := range kept {
		names[i] = strings.TrimSuffix(filepath.Base(f), ".spill")
		if st, err := os.Stat(f); err == nil {
			size += st.Size()
		}
	}
	fmt.Fprintf(w, "dtrun: the last records of %s could not be added to their traces: they are kept in %s "+
		"(%.1f MB of memory until then); once their directory can be written, run `dtrun --recover %s`\n",
		someNames(names), dir, float64(size)/(1<<20), dir)
}

// Launcher options that take a value (Open MPI's mpirun and MPICH's hydra
// mpiexec), so that the value is not mistaken for the program.
var valueOpts = map[string]int{
	"-np": 1, "-n": 1, "-c": 1, "--np": 1, "-N": 1, "-npernode": 1, "--npernode": 1, "-npersocket": 1,
	"-H": 1, "-host": 1, "--host": 1, "-hosts": 1, "-hostfile": 1, "--hostfile": 1, "-machinefile": 1,
	"--machinefile": 1, "-f": 1, "-x": 1, "-mca": 2, "--mca": 2, "-gmca": 2, "--gmca": 2, "-am": 1,
	"--map-by": 1, "-map-by": 1, "--bind-to": 1, "-bind-to": 1, "--rank-by": 1, "-rank-by": 1,
	"-wdir": 1, "--wdir": 1, "-wd": 1, "--wd": 1, "-path": 1, "--path": 1, "--prefix": 1, "-prefix": 1,
	"-genv": 2, "-env": 2, "-genvlist": 1, "-envlist": 1, "-ppn": 1, "-iface": 1, "-launcher": 1,
	"-rmk": 1, "-demux": 1, "--tag-output-format": 1, "--output-filename": 1, "-output-filename": 1,
	"--report-bindings-file": 1, "--cpu-set": 1, "--cpus-per-proc": 1, "-cpus-per-proc": 1,
	"--app": 1, "-app": 1, "-configfile": 1, "-timeout": 1, "--timeout": 1, "-s": 1, "--stdin": 1,
	"--personality": 1, "--preload-files": 1, "--tune": 1, "--default-hostfile": 1,
}

// errNoProgram: the launcher arguments name no program.
var errNoProgram = errors.New("no program to run (usage: dtrun [mpirun arguments] ./app [args])")

// appFileOpts name a file of application contexts, one per line, in place
// of a command line's (Open MPI's --app, MPICH's -configfile).
var appFileOpts = map[string]bool{"--app": true, "-app": true, "-configfile": true}

// findProgram returns the path of the program among the launcher
// arguments, or in the first context of an app file they name; opts are
// the launcher's options that take a value (launchStyle.valueOpts).
func findProgram(args []string, opts map[string]int) (string, []string, error) {
	multiProg := false // srun --multi-prog: the first argument is the file of programs
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			continue
		}
		if a == "--multi-prog" {
			multiProg = true
			continue
		}
		if multiProg && !strings.HasPrefix(a, "-") {
			// Its lines are "ranks program args…".
			lines, err := appFileLines(a)
			if err != nil {
				return "", nil, err
			}
			for _, l := range lines {
				if p, rest, err := findProgram(l[1:], opts); !errors.Is(err, errNoProgram) {
					return p, rest, err
				}
			}
			return "", nil, errNoProgram
		}
		if appFileOpts[a] && i+1 < len(args) {
			lines, err := appFileLines(args[i+1])
			if err != nil {
				return "", nil, err
			}
			for _, l := range lines {
				if p, rest, err := findProgram(l, opts); !errors.Is(err, errNoProgram) {
					return p, rest, err
				}
			}
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") {
				i += opts[a]
			}
			continue
		}
		p, err := exec.LookPath(a)
		if err != nil {
			if _, serr := os.Stat(a); serr == nil {
				return "", nil, fmt.Errorf("program %s is not executable", a)
			}
			return "", nil, fmt.Errorf("program %s not found", a)
		}
		return p, args[i+1:], nil
	}
	return "", nil, errNoProgram
}

// appFileLines is the application contexts of the app file at path: its
// lines but blank ones and comments, split at white space (as the
// launchers read them).
func appFileLines(path string) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the launcher's app file: %w", err)
	}
	var lines [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			lines = append(lines, f)
		}
	}
	return lines, nil
}

// openMPIAppFiles gives env (dtrun's -x options) to every context of the
// Open MPI app files args names (--app): Open MPI applies a command line's
// -x to none of them, so that the job would run untraced. It writes a copy
// of each file whose every context starts with env and returns args naming
// the copies, and a function that removes them once the job has ended.
func openMPIAppFiles(args, env []string) ([]string, func(), error) {
	var made []string
	done := func() {
		for _, f := range made {
			os.Remove(f)
		}
	}
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] != "--app" && out[i] != "-app" {
			continue
		}
		lines, err := appFileLines(out[i+1])
		if err != nil {
			done()
			return nil, nil, err
		}
		for _, e := range env {
			if strings.ContainsAny(e, " \t\n") {
				done()
				return nil, nil, fmt.Errorf("%q holds white space, which an Open MPI app file cannot: give the programs on the command line, separated by ':'", e)
			}
		}
		f, err := os.CreateTemp("", "dtrun-app-")
		if err != nil {
			done()
			return nil, nil, fmt.Errorf("writing the traced app file: %w", err)
		}
		made = append(made, f.Name())
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(strings.Join(append(slices.Clone(env), l...), " "))
			b.WriteByte('\n')
		}
		_, err = f.WriteString(b.String())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			done()
			return nil, nil, fmt.Errorf("writing the traced app file: %w", err)
		}
		out[i+1] = f.Name()
		i++
	}
	return out, done, nil
}

// mpiOf tells which MPI a program is linked with, directly or through its
// libraries: "openmpi", "mpich", or "" for programs dtrun cannot inspect
// (scripts, interpreters). An ELF program that uses no MPI at all is an
// error: it would run untraced. A program that runs another one (it
// imports an exec function: env, taskset, numactl, nice, time, Rscript) is
// a wrapper: the traced program is among its arguments args, and the MPI
// is that of the first of them linked with one (a wrapper of a wrapper
// too, to a depth of 4); none, and dtrun trusts the user as it does for a
// script (Rscript's R loads Rmpi's MPI).
func mpiOf(prog string, args []string, depth int) (string, error) {
	f, err := elf.Open(prog)
	if err != nil {
		return "", nil // not ELF: a script or an interpreter, trust the user
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	for _, l := range libs {
		if impl := mpiLibrary(l); impl != "" {
			return impl, nil
		}
	}
	if impl := loadedMPI(f, prog); impl != "" {
		return impl, nil
	}
	if slices.ContainsFunc(libs, func(l string) bool { return strings.HasPrefix(l, "libpython") }) {
		// An interpreter built with its library shared (pyenv's, a
		// site's module): the library imports dlopen, and mpi4py loads
		// MPI at run time.
		return "", nil
	}
	syms, _ := f.ImportedSymbols()
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "MPI_Init") || strings.HasPrefix(s.Name, "mpi_init") {
			return "", nil // MPI through some other library
		}
		if s.Name == "dlopen" {
			return "", nil // may load MPI at run time (python3 with mpi4py)
		}
	}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "exec") || strings.HasPrefix(s.Name, "posix_spawn") {
			return wrappedMPI(args, depth), nil
		}
	}
	if all, err := f.Symbols(); err == nil {
		for _, s := range all {
			if strings.HasPrefix(s.Name, "MPI_Init") || strings.HasPrefix(s.Name, "PMPI_Init") {
				return "", nil // statically linked MPI
			}
		}
	}
	return "", fmt.Errorf("%s is not an MPI program (it is not linked with an MPI library)", prog)
}

// scriptLauncher is the number and text of the first line of the script
// prog (a file starting with "#!") whose command is an MPI launcher
// (mpirun, mpiexec, orterun, also suffixed: mpirun.openmpi, mpiexec.hydra),
// or 0 when it has none. Such a script, e.g. Debian's examl (it picks a
// build for the CPU, then runs mpirun), cannot run under a launcher: each
// rank would start a job of its own, which Open MPI refuses ("mpirun does
// not support recursive calls"), and no rank is traced.
func scriptLauncher(prog string) (int, string) {
	f, err := os.Open(prog)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, b)
	if !strings.HasPrefix(string(b[:n]), "#!") {
		return 0, ""
	}
	for i, l := range strings.Split(string(b[:n]), "\n") {
		w := strings.Fields(l)
		// Shell words that may come before a command, and variable
		// assignments (NP=4 mpirun …).
		for len(w) > 0 && (shellPrefixes[w[0]] || strings.Index(w[0], "=") > 0) {
			w = w[1:]
		}
		if len(w) == 0 {
			continue
		}
		cmd := filepath.Base(strings.Trim(w[0], `"'`))
		for _, name := range []string{"mpirun", "mpiexec", "orterun"} {
			if cmd == name || strings.HasPrefix(cmd, name+".") {
				return i + 1, strings.TrimSpace(l)
			}
		}
	}
	return 0, ""
}

// shellPrefixes are the shell words scriptLauncher skips before a command.
var shellPrefixes = map[string]bool{"exec": true, "then": true, "else": true, "do": true, "time": true,
	"nohup": true, "command": true, "&&": true, "||": true, "{": true, "(": true, "!": true}

// wrappedMPI is the MPI of the first of a wrapper's arguments that is a
// program linked with one, or "" when none is.
func wrappedMPI(args []string, depth int) string {
	if depth >= 4 {
		return ""
	}
	for i, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue // an option of the wrapper, or env's NAME=value
		}
		p, err := exec.LookPath(a)
		if err != nil {
			continue
		}
		if impl, err := mpiOf(p, args[i+1:], depth+1); err == nil && impl != "" {
			return impl
		}
	}
	return ""
}

// mpiLibrary is the MPI whose library lib (a shared object's name) is,
// "" for other libraries.
func mpiLibrary(lib string) string {
	switch {
	// Fortran programs may list only the Fortran library of their MPI.
	case strings.HasPrefix(lib, "libmpi.so"), strings.HasPrefix(lib, "libmpi_mpifh"), strings.HasPrefix(lib, "libmpi_use"):
		return "openmpi"
	case strings.HasPrefix(lib, "libmpich.so"), strings.HasPrefix(lib, "libmpichfort"):
		return "mpich"
	}
	return ""
}

// loadedMPI is the MPI among the libraries the dynamic loader loads for
// prog, those its own libraries need included (OpenFOAM's solvers reach
// MPI through libPstream.so), or "". The loader (prog's ELF interpreter,
// in list mode: it runs none of the program) finds them as it will at run
// time: RUNPATH, LD_LIBRARY_PATH, its cache.
func loadedMPI(f *elf.File, prog string) string {
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A library it does not find fails the listing, not what it found.
	out, _ := exec.CommandContext(ctx, interp, "--list", prog).Output()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			if impl := mpiLibrary(filepath.Base(f[0])); impl != "" {
				return impl
			}
		}
	}
	return ""
}

func findLauncher(impl string) (string, error) {
	cands := []string{"mpirun.openmpi", "mpiexec.mpich", "mpirun", "mpiexec"}
	switch impl {
	case "openmpi":
		cands = []string{"mpirun.openmpi", "mpirun", "mpiexec.openmpi", "mpiexec"}
	case "mpich":
		cands = []string{"mpiexec.mpich", "mpiexec.hydra", "mpiexec", "mpirun.mpich", "mpirun"}
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no MPI launcher found (tried %s); install Open MPI or MPICH (make deps), or give --mpirun PATH",
		strings.Join(cands, ", "))
}

// isMPICH tells MPICH's hydra launcher from Open MPI's by name, then by
// following symlinks (mpirun → /etc/alternatives/… → mpiexec.hydra).
func isMPICH(launcher string) bool {
	names := []string{launcher}
	if r, err := filepath.EvalSymlinks(launcher); err == nil {
		names = append(names, r)
	}
	for _, n := range names {
		b := filepath.Base(n)
		if strings.Contains(b, "mpich") || strings.Contains(b, "hydra") {
			return true
		}
		if strings.Contains(b, "openmpi") || strings.Contains(b, "orterun") || strings.Contains(b, "prterun") {
			return false
		}
	}
	return false
}

func stubPath(dir string, getenv func(string) string) (string, error) {
	if dir == "" {
		dir = getenv("DT_LIB")
	}
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dir = filepath.Join(filepath.Dir(exe), "..", "lib")
	}
	p, err := filepath.Abs(filepath.Join(dir, "libdtpa_preload.so"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("tracer not found: %s missing (run make build)", p)
	}
	return p, nil
}
