package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/headless"
	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/otf2/otf2test"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/chrome/chrometest"
)

// A job that deadlocked (testdata/apps/hang.c: rank 0 waits in a barrier
// the others never reach, they in receives nobody sends) is ended as
// Ctrl-C ends it: SIGINT to dtrun, the launcher and the ranks alike.
// dtrun waits for the ranks' traces, says in one line per call and place
// where the ranks waited, and dtpa lists each rank's call with its line in
// the program (and for how long it had waited, where the rank's tracer
// wrote its trace's end before the launcher killed it) — under both MPIs,
// whose launchers end the ranks differently (Open MPI's kills them soon
// after the signal; dtrun, interrupted, signals its node's ranks itself
// first); dtpa-mpi says the same as dtpa.
func TestHungJobInterrupted(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "hang")
			args := append([]string{"--mpirun", m.mpirun, "-np", "4"}, m.args...)
			text, jobStart := interruptJob(t, dir, append(args, "./"+filepath.Base(exe)), "hang: waiting", true)
			rep := checkHangEnded(t, dir, text)
			for _, c := range rep.Unfinished {
				fn, line := "MPI_Recv", 20
				if c.Rank == 0 {
					fn, line = "MPI_Barrier", 18
				}
				if c.Function != fn || filepath.Base(c.File) != "hang.c" || c.Line != line || c.Thread != 0 {
					t.Errorf("rank %d: %s at %s:%d (thread %d), want %s at hang.c:%d", c.Rank, c.Function, c.File, c.Line, c.Thread, fn, line)
				}
				// The call began before the test's second of waiting and
				// ended with the interrupt.
				if c.Seconds != nil && (*c.Seconds < 0.9 || *c.Seconds > time.Since(jobStart).Seconds()) {
					t.Errorf("rank %d: waited %.3f s, want at least the test's second and at most the job's time", c.Rank, *c.Seconds)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			txt, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--dir", dir, "hang").Output()
			if err != nil {
				t.Fatalf("dtpa: %v", err)
			}
			lines := report.UnfinishedLines(rep.Unfinished)
			for _, l := range lines {
				if !strings.Contains(string(txt), "  - "+l+"\n") {
					t.Errorf("the text report lacks %q", l)
				}
			}
			if !strings.HasPrefix(lines[0], "MPI_Barrier at hang.c:18: rank 0") || !strings.HasPrefix(lines[1], "MPI_Recv at hang.c:20: ranks 1-3") {
				t.Errorf("grouped lines %q", lines)
			}
			// The findings start with where the job hung.
			if v := rep.Findings.Verdict; !strings.HasPrefix(v, "The processes ended inside MPI calls that never returned, whose time no figure holds (MPI_Barrier at hang.c:18: rank 0") {
				t.Errorf("verdict %q, want it to start with where the ranks waited", v)
			}
			checkHangDrawn(t, dir, rep)
			checkHangOTF2(t, dir, rep)
			// dtpa-mpi places the calls of the ranks other processes
			// replayed as well.
			checkDtpaMPI(t, dir, "hang")
		})
	}
}

// checkHangDrawn: the Chrome export of the hung job holds each rank's
// call that never returned as a slice on the rank's track after its
// last call, of the function and line the report gives, to the process's
// end for as long as the report says, or, where that is unknown, as a
// slice that never ends; the page's timeline draws them all.
func checkHangDrawn(t *testing.T, dir string, rep *report.Report) {
	t.Helper()
	export := filepath.Join(t.TempDir(), "hang.json")
	if _, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), "--export", "chrome", "-o", export, "hang"); code != 0 {
		t.Fatalf("dtpa --export chrome: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := chrometest.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	last := map[int]int64{} // each rank's latest call end
	open := map[int]chrometest.Slice{}
	for _, s := range tr.Slices {
		if s.Cat != "mpi" {
			continue
		}
		if s.Args["unfinished"] != nil {
			open[s.Pid-1] = s
		} else {
			last[s.Pid-1] = max(last[s.Pid-1], s.Ts+s.Dur)
		}
	}
	if len(open) != len(rep.Unfinished) {
		t.Errorf("%d calls that never returned exported, want %d", len(open), len(rep.Unfinished))
	}
	for _, c := range rep.Unfinished {
		s, ok := open[c.Rank]
		switch {
		case !ok:
			t.Errorf("rank %d: its %s is not exported", c.Rank, c.Function)
		case s.Name != c.Function || s.Args["file"] != c.File || s.Args["line"] != float64(c.Line) || s.Ts < last[c.Rank]:
			t.Errorf("rank %d: exported %s at %v:%v from %d ns (its last call ended at %d), want %s at %s:%d",
				c.Rank, s.Name, s.Args["file"], s.Args["line"], s.Ts, last[c.Rank], c.Function, c.File, c.Line)
		case (c.Seconds == nil || c.AtLeast) && !s.Open:
			t.Errorf("rank %d: its process's end is unknown, yet the call ends after %d ns", c.Rank, s.Dur)
		case c.AtLeast:
			if us, _ := s.Args["ran_at_least_us"].(float64); math.Abs(us/1e6-*c.Seconds) > 1e-3 {
				t.Errorf("rank %d: exported as running at least %v µs, the report says %.6f s", c.Rank, s.Args["ran_at_least_us"], *c.Seconds)
			}
		case c.Seconds != nil && (s.Open || math.Abs(float64(s.Dur)/1e9-*c.Seconds) > 1e-3):
			t.Errorf("rank %d: exported for %d ns (open %v), the report says %.6f s", c.Rank, s.Dur, s.Open, *c.Seconds)
		}
	}
	page := filepath.Join(t.TempDir(), "hang.html")
	if _, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), "--html", "-o", page, "hang"); code != 0 {
		t.Fatalf("dtpa --html: exit %d\n%s", code, stderr)
	}
	p := headless.Open(t, page)
	headless.CheckReport(t, p)
	if want := fmt.Sprintf(`data-unfinished="%d"`, len(rep.Unfinished)); !strings.Contains(p.DOM, want) {
		t.Errorf("the page's timeline lacks %s", want)
	}
}

// A job that hangs inside MPI_Init (testdata/apps/initwait.c: its last rank
// never calls it, and the others wait there for it) has no trace when it
// is interrupted: dtrun says so, and where the ranks were, from the notes
// the preload stub keeps while the MPI library's MPI_Init runs — under
// both MPIs, for at least as long as they had waited when the interrupt
// came.
func TestHungInInit(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir, shm := t.TempDir(), t.TempDir()
			exe := compile(t, m, dir, "initwait")
			args := append([]string{"--mpirun", m.mpirun, "-np", "4"}, m.args...)
			cmd := exec.Command(filepath.Join(root, "bin", "dtrun"), append(args, "./"+filepath.Base(exe))...)
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), mpiEnv...), "DT_SPILL_ROOT="+shm)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			// Ranks 0-2 inside MPI_Init: their notes in the job's spill
			// directory.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if marks, _ := filepath.Glob(filepath.Join(shm, "dtpa-*", "init.*")); len(marks) == 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the ranks did not reach MPI_Init in 2 minutes")
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatalf("dtrun did not end within a minute of the interrupt")
			}
			text := out.String()
			t.Logf("dtrun:\n%s", text)
			if !strings.Contains(text, "dtrun: no traces were written in "+dir+": the processes ended inside MPI_Init, before their traces began") {
				t.Errorf("dtrun does not say that no trace began")
			}
			// The line, and the time when the interrupt found the ranks
			// alive: a rank that the launcher's forwarded signal ended
			// before dtrun looked (MPICH's does so within a millisecond)
			// has none.
			line := regexp.MustCompile(`dtrun: in progress when the processes ended: MPI_Init: ranks 0-2(, for at least ([0-9.]+)(?:–([0-9.]+))? s \(until the job was interrupted(?:; [12] of them for an unknown time)?\))?\n`).FindStringSubmatch(text)
			if line == nil {
				t.Fatalf("dtrun does not say that ranks 0-2 were inside MPI_Init")
			}
			if line[1] != "" {
				if lo, _ := strconv.ParseFloat(line[2], 64); lo < 0.9 {
					t.Errorf("the ranks waited at least %.3f s, want at least the test's second", lo)
				}
			}
			if marks, _ := filepath.Glob(filepath.Join(shm, "dtpa-*")); len(marks) != 0 {
				t.Errorf("left behind: %v", marks)
			}
		})
	}
}

// checkHangOTF2: the OTF2 archive of the hung job (libotf2, read back by
// otf2-print) holds each rank's call that never returned after its last
// call, an ENTER marked dtpa::unfinished with the source position the
// report gives and a LEAVE at the process's end, as long after as the
// report says (at the ENTER where that end is unknown); dtpa's report of
// the archive lists the same calls in progress, but for their source
// positions, which an archive keeps as positions, not addresses.
func checkHangOTF2(t *testing.T, dir string, rep *report.Report) {
	t.Helper()
	arch := exportOTF2(t, dir, "hang")
	a, err := otf2test.Print(filepath.Join(arch, otf2.ArchiveName))
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		region, attrs string
		enter, leave  uint64
	}
	open := map[uint64]*span{}
	last := map[uint64]uint64{} // each location's latest LEAVE before it
	for _, r := range a.Records {
		switch {
		case r.Kind == "ENTER" && strings.Contains(r.Attrs, "dtpa::unfinished"):
			open[r.Location] = &span{region: r.Region, attrs: r.Attrs, enter: r.Time}
		case r.Kind == "LEAVE" && open[r.Location] != nil:
			open[r.Location].leave = r.Time
		case r.Kind == "LEAVE":
			last[r.Location] = r.Time
		}
	}
	if len(open) != len(rep.Unfinished) {
		t.Errorf("%d calls that never returned in the archive, want %d", len(open), len(rep.Unfinished))
	}
	for _, c := range rep.Unfinished {
		s := open[uint64(c.Thread)<<32|uint64(c.Rank)]
		switch {
		case s == nil:
			t.Errorf("rank %d: its %s is not in the archive", c.Rank, c.Function)
		case s.region != c.Function || !strings.Contains(s.attrs, fmt.Sprintf("%s:%d", filepath.Base(c.File), c.Line)) || s.enter < last[uint64(c.Rank)]:
			t.Errorf("rank %d: archived %s (%s) from %d ns (its last call ended at %d), want %s at %s:%d",
				c.Rank, s.region, s.attrs, s.enter, last[uint64(c.Rank)], c.Function, c.File, c.Line)
		case c.Seconds == nil && s.leave != s.enter:
			t.Errorf("rank %d: its process's end is unknown, yet the call ends %d ns after its entry", c.Rank, s.leave-s.enter)
		case c.Seconds != nil && math.Abs(float64(s.leave-s.enter)/1e9-*c.Seconds) > 1e-3:
			t.Errorf("rank %d: archived for %d ns, the report says %.6f s", c.Rank, s.leave-s.enter, *c.Seconds)
		}
	}
	back, _ := analyse(t, ".", arch)
	if len(back.Unfinished) != len(rep.Unfinished) {
		t.Fatalf("the archive's report lists %d calls in progress, the traces' %d", len(back.Unfinished), len(rep.Unfinished))
	}
	for i, c := range rep.Unfinished {
		b := back.Unfinished[i]
		if b.Rank != c.Rank || b.Thread != c.Thread || b.Function != c.Function || b.AtLeast != c.AtLeast || (b.Seconds == nil) != (c.Seconds == nil) ||
			(c.Seconds != nil && math.Abs(*b.Seconds-*c.Seconds) > 1e-3) {
			t.Errorf("the archive's report: %+v, the traces' %+v", b, c)
		}
	}
}

// checkHangEnded checks what dtrun said of hang.c's job, interrupted
// (text), and that dtpa finds every rank's call in progress in its traces
// in dir; it returns dtpa's report.
func checkHangEnded(t *testing.T, dir, text string) *report.Report {
	t.Helper()
	for _, want := range []string{
		"dtrun: in progress when the processes ended: MPI_Barrier: rank 0",
		"dtrun: in progress when the processes ended: MPI_Recv: ranks 1-3",
		"dtrun: 4 traces of hang in",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("dtrun's output lacks %q", want)
		}
	}
	rep, _ := analyse(t, dir, "hang")
	if len(rep.Unfinished) != 4 {
		t.Fatalf("unfinished calls %+v, want one per rank", rep.Unfinished)
	}
	return rep
}

// interruptJob runs dtrun with args in dir until a line of the job's
// output holds marker, then, a second later (every rank in its last call
// by then), interrupts it: SIGINT to dtrun's process group (group: as a
// terminal's Ctrl-C reaches dtrun and the launcher), else to dtrun alone
// (a batch system's signal to the job's first process); a job that its
// launcher ended by then is not interrupted. It returns what dtrun and
// the job wrote, and when the job started; dtrun must end within a
// minute, an interrupted job with its failure.
func interruptJob(t *testing.T, dir string, args []string, marker string, group bool) (string, time.Time) {
	t.Helper()
	return interruptJobEnv(t, dir, nil, args, marker, group)
}

// interruptJobEnv is interruptJob with env added to the job's environment.
func interruptJobEnv(t *testing.T, dir string, env, args []string, marker string, group bool) (string, time.Time) {
	t.Helper()
	return interruptJobOn(t, dir, env, nil, args, marker, group)
}

// interruptJobOn is interruptJobEnv with dtrun run by the command prefix
// on (another node: TestNodes), nil: here.
func interruptJobOn(t *testing.T, dir string, env, on, args []string, marker string, group bool) (string, time.Time) {
	t.Helper()
	a := append(append(append([]string{}, on...), filepath.Join(root, "bin", "dtrun")), args...)
	cmd := exec.Command(a[0], a[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), mpiEnv...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, pw
	jobStart := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The job is ended (the whole group) if the test fails early.
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	waiting := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), marker) {
				once = true
				close(waiting)
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-waiting:
	case err := <-done:
		// The launcher ended the job itself.
		done <- err
	case <-time.After(2 * time.Minute):
		t.Fatalf("the job did not reach its deadlock in 2 minutes")
	}
	time.Sleep(time.Second) // every rank is in its last call by now
	pid := cmd.Process.Pid
	if group {
		pid = -pid
	}
	ended := len(done) > 0
	if !ended {
		if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err == nil && !ended {
			t.Errorf("dtrun exited 0 after the interrupt, want the job's failure")
		}
	case <-time.After(time.Minute):
		t.Fatalf("dtrun did not end within a minute of the interrupt")
	}
	pw.Close()
	<-copied
	text := out.String()
	t.Logf("dtrun:\n%s", text)
	return text, jobStart
}

// TestPythonHungJobInterrupted: an mpi4py job whose rank 1 dies of an
// exception nothing catches (testdata/apps/pyhang.py): its exit calls
// MPI_Finalize, which waits for the other ranks, which wait in a barrier
// for it. Interrupted (SIGINT to dtrun alone), dtrun signals the ranks
// first, so that each writes its trace's end, and the report says where
// each rank was: the barrier at the script's line (the thread's Python
// frame, read as the process ended), MPI_Finalize for rank 1, each for
// how long. Open MPI only (Debian's mpi4py); also under the oldest and
// the newest of the other CPython versions the tracer reads, with the
// stand-in for mpi4py (testenv.OtherPythons).
func TestPythonHungJobInterrupted(t *testing.T) {
	needMPI4Py(t)
	m := impls[0]
	needMPI(t, m)
	ips := []testenv.Interp{testenv.Debian()}
	if o := testenv.OtherPythons(t); len(o) > 0 {
		ips = append(ips, o[0], o[len(o)-1])
	}
	for _, ip := range slices.CompactFunc(ips, func(a, b testenv.Interp) bool { return a.Exe == b.Exe }) {
		t.Run(ip.Version, func(t *testing.T) { testPythonHungJobInterrupted(t, m, ip) })
	}
}

// interruptPython runs testdata/apps/<name>.py at 3 ranks under m with
// interpreter ip (its environment set for t) in a directory of t's, and
// interrupts the job once a rank printed "<name>: waiting"
// (interruptJob); it returns the directory, dtrun's output, when the job
// started and the script's markers.
func interruptPython(t *testing.T, m mpiImpl, ip testenv.Interp, name string) (string, string, time.Time, map[string]int) {
	t.Helper()
	for _, e := range ip.Env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	copyPython(t, dir, name+".py")
	marks := markers(t, filepath.Join(root, "testdata", "apps", name+".py"))
	args := append([]string{"--mpirun", m.mpirun, "-np", "3"}, m.args...)
	text, jobStart := interruptJob(t, dir, append(args, ip.Exe, name+".py"), name+": waiting", false)
	return dir, text, jobStart, marks
}

func testPythonHungJobInterrupted(t *testing.T, m mpiImpl, ip testenv.Interp) {
	dir, text, jobStart, marks := interruptPython(t, m, ip, "pyhang")
	line := marks["@wait"]
	if !strings.Contains(text, "ZeroDivisionError") {
		t.Errorf("the job's output lacks rank 1's exception")
	}
	head := "rank 1 crashed: uncaught ZeroDivisionError: division by zero"
	if !strings.Contains(text, "dtrun: "+head+"; dtpa ") {
		t.Errorf("dtrun's summary does not say %q:\n%s", head, text)
	}
	rep, _ := analyse(t, dir, filepath.Base(python))
	// Rank 1's exception, its traceback from the line that raised it.
	want := []string{head, fmt.Sprintf("in work at pyhang.py:%d", marks["@raise"]),
		fmt.Sprintf("called from <module> at pyhang.py:%d", marks["@call"])}
	if len(rep.Crashes) != 1 || !slices.Equal(rep.Crashes[0].Lines(), want) || rep.Crashes[0].At != 0 ||
		rep.Crashes[0].Exception != "ZeroDivisionError" || rep.Crashes[0].Thread == nil || *rep.Crashes[0].Thread != 0 {
		t.Errorf("crashes %+v, want rank 1's exception %q", rep.Crashes, want)
	}
	if v, w := rep.Findings.Verdict, fmt.Sprintf("Rank 1 crashed: uncaught ZeroDivisionError: division by zero, in work at pyhang.py:%d.", marks["@raise"]); !strings.HasPrefix(v, w) {
		t.Errorf("verdict %q, want it to begin %q", v, w)
	}
	if len(rep.Unfinished) != 3 {
		t.Fatalf("unfinished calls %+v, want one per rank", rep.Unfinished)
	}
	for _, c := range rep.Unfinished {
		fn, file, ln := "MPI_Barrier", "pyhang.py", line
		if c.Rank == 1 {
			fn, file, ln = "MPI_Finalize", "", 0 // at the interpreter's exit: no Python frame
		}
		base := ""
		if c.File != "" {
			base = filepath.Base(c.File)
		}
		if c.Function != fn || base != file || c.Line != ln {
			t.Errorf("rank %d: %s at %s:%d, want %s at %s:%d", c.Rank, c.Function, c.File, c.Line, fn, file, ln)
		}
		// Each rank wrote its trace's end: how long the call ran is known.
		if c.Seconds == nil || c.AtLeast || *c.Seconds < 0.9 || *c.Seconds > time.Since(jobStart).Seconds() {
			t.Errorf("rank %d: ran %v s (at least: %v), want the time to its process's end, at least the test's second", c.Rank, c.Seconds, c.AtLeast)
		}
	}
	wait := fmt.Sprintf("MPI_Barrier at pyhang.py:%d: ranks 0, 2, for ", line)
	if v := rep.Findings.Verdict; !strings.Contains(v, "("+wait) || !strings.Contains(v, "; MPI_Finalize: rank 1, for ") {
		t.Errorf("verdict %q, want it to say where each rank waited", v)
	}
}

// TestPythonCtypesHung: an mpi4py job whose ranks 0 and 2 wait in
// MPI_Barrier called through ctypes while rank 1 sleeps
// (testdata/apps/pyctypeshang.py), interrupted: the calls in progress,
// whose return addresses are in libffi (no line), are placed at the
// script's line that made them (UnfinishedCall.python_stack, the first of
// the program's own frames), and rank 1 in no MPI call at its line.
// Open MPI only (Debian's mpi4py).
func TestPythonCtypesHung(t *testing.T) {
	needMPI4Py(t)
	m := impls[0]
	needMPI(t, m)
	dir, _, _, marks := interruptPython(t, m, testenv.Debian(), "pyctypeshang")
	rep, _ := analyse(t, dir, filepath.Base(python))
	var got []string
	for _, c := range rep.Unfinished {
		got = append(got, fmt.Sprintf("%d %s %s:%d", c.Rank, c.Function, filepath.Base(c.File), c.Line))
	}
	slices.Sort(got)
	want := []string{fmt.Sprintf("0 MPI_Barrier pyctypeshang.py:%d", marks["@wait"]), fmt.Sprintf("2 MPI_Barrier pyctypeshang.py:%d", marks["@wait"])}
	if !slices.Equal(got, want) {
		t.Errorf("calls in progress %q, want %q", got, want)
	}
	el := fmt.Sprintf("rank 1: in no MPI call (in <module> at pyctypeshang.py:%d)", marks["@sleep"])
	if l := report.ElsewhereLines(rep.Elsewhere); len(l) != 1 || !strings.HasPrefix(l[0], el) {
		t.Errorf("elsewhere %q, want %q", l, el)
	}
	checkSameAsDtpaMPI(t, dir, filepath.Base(python), rep)
}

// TestPythonSpinInterrupted: an mpi4py job hung because rank 1 computes
// forever and rank 2 sleeps (testdata/apps/pyspin.py), interrupted: the
// report says where the signal found each of them, at the script's line
// (the tracer reads the signalled thread's Python frames), after their
// last MPI call. Open MPI only (Debian's mpi4py).
func TestPythonSpinInterrupted(t *testing.T) {
	needMPI4Py(t)
	m := impls[0]
	needMPI(t, m)
	dir, _, _, marks := interruptPython(t, m, testenv.Debian(), "pyspin")
	rep, _ := analyse(t, dir, filepath.Base(python))
	want := []string{
		fmt.Sprintf("rank 1: in no MPI call (in spin at pyspin.py:%d), after MPI_Barrier at pyspin.py:%d", marks["@spin"], marks["@last"]),
		fmt.Sprintf("rank 2: in no MPI call (in <module> at pyspin.py:%d), after MPI_Barrier at pyspin.py:%d", marks["@sleep"], marks["@last"]),
	}
	if l := report.ElsewhereLines(rep.Elsewhere); !slices.Equal(l, want) {
		t.Errorf("elsewhere %q, want %q", l, want)
	}
	if len(rep.Unfinished) != 1 || rep.Unfinished[0].Rank != 0 || rep.Unfinished[0].Line != marks["@wait"] {
		t.Errorf("calls in progress %+v, want rank 0's at pyspin.py:%d", rep.Unfinished, marks["@wait"])
	}
}

// TestRankLeftEarly: a job whose rank 1 leaves right after a barrier
// while the others wait in MPI_Recv for its message, under both MPIs,
// ended by its launcher (which may then exit 0) or interrupted: beside
// the calls in progress, the report says where rank 1 was: that it had
// exited without MPI_Finalize and how (main returned 3; exit(5) called
// from leave; a Fortran runtime error, whose exit(2) libgfortran called
// below kernel's line), or, in the spin run, that it was in no MPI call
// but computing in spin at its line when the job was interrupted; then
// its last call, MPI_Barrier at its line; in the text report and the
// findings, and, for an exit, the warning; the Chrome export marks the
// moment with the same words (testdata/apps/early.c, fexit.f90).
func TestRankLeftEarly(t *testing.T) {
	for _, c := range []struct {
		name, src string
		args      []string
		how       string // where rank 1 was, with its marker's line for %d
		mark      string
	}{
		{"return", "early.c", nil, "had exited without MPI_Finalize (main returned 3)", ""},
		{"exit", "early.c", []string{"exit"}, "had exited without MPI_Finalize (exit(5) from leave at early.c:%d)", "@exit"},
		{"fortran", "fexit.f90", nil, "had exited without MPI_Finalize (exit(2) from work::kernel at fexit.f90:%d)", "@bound"},
		{"spin", "early.c", []string{"spin"}, "in no MPI call (in spin at early.c:%d)", "@spin"},
	} {
		lines := markers(t, filepath.Join(root, "testdata", "apps", c.src))
		how := c.how
		if c.mark != "" {
			how = fmt.Sprintf(how, lines[c.mark])
		}
		for _, m := range impls {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				how := how
				needMPI(t, m)
				dir := t.TempDir()
				name := strings.TrimSuffix(c.src, filepath.Ext(c.src))
				if filepath.Ext(c.src) == ".c" {
					compile(t, m, dir, name)
				} else {
					fc := f90s[m.name].fc
					testenv.NeedCommands(t, fc)
					if b, err := exec.Command(fc, "-g", "-O0", "-fcheck=bounds", "-o", filepath.Join(dir, name),
						filepath.Join(root, "testdata", "apps", c.src)).CombinedOutput(); err != nil {
						t.Fatalf("compiling %s: %v\n%s", c.src, err, b)
					}
				}
				args := append([]string{"--mpirun", m.mpirun, "-np", "3"}, m.args...)
				// The spin run is interrupted as a batch system ends a job
				// (dtrun alone, which signals its node's ranks, then the
				// launcher).
				out, _ := interruptJob(t, dir, append(append(args, "./"+name), c.args...), name+": waiting", c.name != "spin")
				if c.name == "spin" && strings.Contains(out, "dtrun: early.1: the process died;") {
					// MPICH's launcher kills the other ranks once one died;
					// on a busy node the computing rank's handler may not
					// have run by then (its trace recovered by dtrun has no
					// end to say where it was).
					t.Logf("rank 1 was killed before its trace's end was written:\n%s", out)
					how = "in no MPI call"
				}
				rep, _ := analyse(t, dir, name)
				// Ranks 0 and 2 waited for rank 1 (rank 2 may still have
				// been finishing the barrier; a rank the launcher killed
				// outright before its tracer wrote its module map has
				// no place for its call).
				var got []int
				for _, c := range rep.Unfinished {
					got = append(got, c.Rank)
				}
				if slices.Sort(got); !slices.Equal(got, []int{0, 2}) {
					t.Errorf("calls in progress %+v, want ranks 0 and 2's", rep.Unfinished)
				}
				want := fmt.Sprintf("rank 1: %s, after MPI_Barrier at %s:%d", how, c.src, lines["@last"])
				if l := report.ElsewhereLines(rep.Elsewhere); len(l) != 1 || l[0] != want {
					t.Errorf("elsewhere %q, want %q", l, want)
				}
				if v := rep.Findings.Verdict; !strings.Contains(v, "In none then: "+want+".") {
					t.Errorf("verdict %q, want it to say where rank 1 was", v)
				}
				txt, stderr, code := runJob(t, dir, filepath.Join(root, "bin", "dtpa"), name)
				if code != 0 || !strings.Contains(txt, "  In no MPI call then:\n  - "+want+"\n") {
					t.Errorf("the text report (exit %d) lacks %q:\n%s%s", code, want, txt, stderr)
				}
				if exit, ok := strings.CutPrefix(how, "had exited"); ok {
					w := "Rank 1: the process exited" + exit + "; its figures end at its last MPI call."
					if !slices.Contains(rep.Warnings, w) {
						t.Errorf("warnings %q, want %q", rep.Warnings, w)
					}
				}
				// The Chrome export marks the moment, where the trace
				// says it (a rank MPICH's launcher killed outright has
				// none).
				var ends []string
				for _, in := range exportChrome(t, dir, name).Instants {
					if in.Cat == "end" {
						ends = append(ends, fmt.Sprintf("%d %s %v", in.Pid-1, in.Name, in.Args["end"]))
					}
				}
				wantEnd := map[bool]string{true: "1 exit rank 1: " + how, false: "1 end rank 1: " + how}[strings.HasPrefix(how, "had exited")]
				if !slices.Equal(ends, []string{wantEnd}) && (how != "in no MPI call" || len(ends) != 0) {
					t.Errorf("the Chrome export's end marks %q, want %q", ends, wantEnd)
				}
			})
		}
	}
}
