package e2e

import (
	"bufio"
	"fmt"
	"io"
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

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
)

// TestNodes traces jobs whose ranks run on two nodes, emulated on this
// machine (startNodes: each node a set of Linux namespaces with its own
// host name, network address, /dev/shm, boot id and processes; the
// launchers reach the other node through a remote shell, as through
// ssh). What one node cannot show: the MPI libraries talk TCP between the
// nodes, each node's ranks keep their buffers in their node's /dev/shm,
// which dtrun on the first node cannot see, the ranks of the second node
// compact their own traces, and the clocks of the two nodes are measured
// against each other over the network.
//
//   - waits: waits.c's waits, known by construction, under Open MPI's
//     mpirun, ranks placed round robin (ranks 0 and 2 on dtnode1, 1 and 3
//     on dtnode2), aligned and with clock skew (the skew and the
//     tracer's other variables reach dtnode2's ranks through the
//     launcher, not by inheritance); MPICH's jobs that reach
//     MPI_Finalize do not always end here (finalizes);
//   - kill: rank 1, on dtnode2, is killed without warning (SIGKILL):
//     dtrun names the node and the command that recovers its last
//     records there, and that command, run as dtrun says, completes the
//     trace;
//   - hang: a hung job interrupted with Ctrl-C: Open MPI's mpirun exits
//     before the ranks of the other node have written their traces'
//     ends, and dtrun must wait for them, count them and compact them;
//   - unshared: a job run from a directory of each node's own: dtrun
//     names the ranks whose traces are not in its node's;
//   - stale: a job SIGKILLed whole with its dtrun (a batch system's end)
//     leaves its ranks' last records in each node's /dev/shm, which
//     `dtrun --recover` run on each node adds to their traces;
//   - srun: the waits, the hang (every task writes its end) and the kill
//     under Slurm, srun launching on both; the hang again with every task
//     on dtnode2 (dtrun asks Slurm which step its srun launched);
//   - dtpa-mpi: the analysis as an MPI job across both nodes, its report
//     the same as dtpa's at 1 to 4 processes.
//
// kill and hang run under both MPIs (MPICH's hydra as the launcher).
func TestNodes(t *testing.T) {
	c := startNodes(t)
	ms := c.impls()
	t.Run("waits", func(t *testing.T) {
		quietRunsOn(t, slices.DeleteFunc(slices.Clone(ms), func(m mpiImpl) bool { return !finalizes(m) }), "waits", c.env(), nil, waitsExpects(), checkNodesBugs, compareWaits(t))
	})
	for _, m := range ms {
		t.Run("kill/"+m.name, func(t *testing.T) {
			needMPI(t, m)
			testNodeKilled(t, c, m, c.env())
		})
		t.Run("hang/"+m.name, func(t *testing.T) {
			needMPI(t, m)
			testNodesHang(t, c, m, c.env(), false)
		})
	}
	t.Run("unshared", func(t *testing.T) {
		// A job run from a directory of each node's own (here
		// /dev/shm/…, made on both): dtrun finds the ranks of dtnode2
		// without a trace and says why that may be.
		m := ms[0]
		needMPI(t, m)
		exe := filepath.Join(t.TempDir(), "pingpong")
		if out, err := exec.Command(m.cc, "-g", "-o", exe, filepath.Join(root, "testdata", "c", "pingpong.c")).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", m.cc, err, out)
		}
		dir := fmt.Sprintf("/dev/shm/work-%d", os.Getpid())
		for _, node := range []string{"dtnode1", "dtnode2"} {
			a := append(c.enter(node), "sh", "-c", fmt.Sprintf("mkdir -p %[1]s && cp %[2]s %[1]s/", dir, exe))
			if b, err := exec.Command(a[0], a[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", node, err, b)
			}
		}
		args := append(append(c.on("dtnode1", dir), filepath.Join(root, "bin", "dtrun"), m.mpirun, m.np, "4"), m.args...)
		_, errOut, _ := runJobEnv(t, t.TempDir(), c.env(), args[0], append(args[1:], "./pingpong")...)
		want := "dtrun: warning: ranks 1, 3 of 4: no trace in " + dir + ": they never reached MPI_Init, or ran on other nodes"
		if !strings.Contains(errOut, want) {
			t.Errorf("dtrun does not say that dtnode2's ranks left no trace here:\n%s", errOut)
		}
	})
	t.Run("stale", func(t *testing.T) { testNodesStale(t, c, ms[0]) })
	t.Run("srun", func(t *testing.T) { testNodesSrun(t, c) })
	t.Run("dtpa-mpi", func(t *testing.T) {
		// The analysis as an MPI job across the nodes, its processes
		// exchanging over TCP between them: its report the same as
		// dtpa's at 1 to 4 processes.
		m := ms[0]
		needMPI(t, m)
		dir := t.TempDir()
		exe := compile(t, m, dir, "waits")
		trace(t, m, dir, c.env(), 4, filepath.Base(exe))
		checkDtpaMPIBy(t, dir, "waits", func(np int) (string, string, int) {
			a := append(c.on("dtnode1", dir), "mpirun.openmpi", "-np", strconv.Itoa(np), "--host", "dtnode1:2,dtnode2:2", "--map-by", "node",
				filepath.Join(root, "bin", "dtpa-mpi"), "--json", "waits")
			return runJobEnv(t, dir, c.env(), a[0], a[1:]...)
		})
	})
}

// testNodesSrun runs the jobs of TestNodes under Slurm, srun launching
// the tasks on both nodes through their slurmd (Open MPI, PMIx): the
// waits aligned and skewed (the tracer's variables reach dtnode2's tasks
// in srun's --export), a hung job interrupted (every task writes its
// trace's end: srun's SIGTERM would SIGKILL them, so dtrun has Slurm
// signal the step's tasks first), and a task killed on dtnode2, whose
// last records srun -w dtnode2, as dtrun advises, recovers.
func testNodesSrun(t *testing.T, c *cluster) {
	env := startSlurmOn(t, []slurmNode{{"dtnode1", "10.77.0.1", c.runner("dtnode1")}, {"dtnode2", "10.77.0.2", c.runner("dtnode2")}})
	m := mpiImpl{name: "openmpi", cc: "mpicc.openmpi", mpirun: "srun", np: "-n", args: []string{"-N", "2", "--ntasks-per-node=2", "--distribution=cyclic", "--mpi=pmix"},
		on: func(dir string) []string { return c.on("dtnode1", dir) }}
	t.Run("waits", func(t *testing.T) {
		quietRunsOn(t, []mpiImpl{m}, "waits", env, nil, waitsExpects(), checkNodesBugs, compareWaits(t))
	})
	t.Run("hang", func(t *testing.T) {
		needMPI(t, m)
		testNodesHang(t, c, m, env, true)
	})
	t.Run("hang-elsewhere", func(t *testing.T) {
		// Every task on dtnode2, dtrun on dtnode1: no trace on dtrun's
		// node names the step, which dtrun then asks Slurm for (its
		// srun's host and process id).
		needMPI(t, m)
		r := m
		r.args = []string{"-w", "dtnode2", "-N", "1", "--mpi=pmix"}
		testNodesHangOn(t, c, r, env, true, []report.Host{{Host: "dtnode2", Ranks: []int{0, 1, 2, 3}}})
	})
	t.Run("kill", func(t *testing.T) {
		needMPI(t, m)
		// (srun ends the other tasks when one dies only when told.)
		m.args = append(m.args, "--kill-on-bad-exit=1")
		testNodeKilled(t, c, m, env)
	})
}

// testNodesHang interrupts a hung job (Ctrl-C: SIGINT to dtrun and the
// launcher) on the two nodes and checks that every rank's call in
// progress is found, every trace counted as the job's and compacted.
// Hydra kills the rest with SIGKILL once a rank has ended: a rank of
// dtnode2 still writing its trace's end then loses the race (on dtrun's
// node dtrun lets each rank end first), and dtrun says how to recover its
// last records, which the test does (unless ends: every rank must have
// written its end, as under srun, whose step's tasks dtrun has Slurm
// signal on every node).
func testNodesHang(t *testing.T, c *cluster, m mpiImpl, env []string, ends bool) {
	testNodesHangOn(t, c, m, env, ends, nodesHosts)
}

// testNodesHangOn is testNodesHang with the ranks placed on hosts.
func testNodesHangOn(t *testing.T, c *cluster, m mpiImpl, env []string, ends bool, hosts []report.Host) {
	dir := t.TempDir()
	exe := compile(t, m, dir, "hang")
	args := append([]string{m.mpirun, m.np, "4"}, m.args...)
	text, _ := interruptJobOn(t, dir, env, c.on("dtnode1", dir), append(args, "./"+filepath.Base(exe)), "hang: waiting", true)
	if ranks, _, advice := advised(text); advice != nil {
		if ends {
			t.Errorf("%s killed on dtnode2 before they wrote their traces' ends", ranks)
		}
		t.Logf("%s killed on dtnode2; recovering there", ranks)
		recoverAsAdvised(t, c, dir, env, advice)
	} else {
		checkHangEnded(t, dir, text)
	}
	rep, _ := analyse(t, dir, "hang")
	if len(rep.Unfinished) != 4 {
		t.Errorf("unfinished calls %+v, want one per rank", rep.Unfinished)
	}
	checkHosts(t, rep, hosts)
	if strings.Contains(text, "earlier run") || strings.Contains(text, "still written") {
		t.Errorf("dtrun took the traces of dtnode2's ranks for another run's, or for unfinished")
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "raw records") {
			t.Errorf("a trace was left for dtpa to compact: %s", w)
		}
	}
}

// testNodesStale: a job killed together with its dtrun (a batch system
// ending the whole job: every process SIGKILLed) leaves its ranks' last
// records in each node's /dev/shm; `dtrun --recover` without a
// directory, run on each node, adds them to their traces and frees the
// memory, where no later dtrun would have.
func testNodesStale(t *testing.T, c *cluster, m mpiImpl) {
	needMPI(t, m)
	dir := t.TempDir()
	exe := filepath.Join(dir, "stalehang")
	if err := os.Rename(compile(t, m, dir, "hang"), exe); err != nil {
		t.Fatal(err)
	}
	args := append(append(c.on("dtnode1", dir), filepath.Join(root, "bin", "dtrun"), m.mpirun, m.np, "4"), m.args...)
	cmd := exec.Command(args[0], append(args[1:], "./stalehang")...)
	cmd.Env = append(append(os.Environ(), mpiEnv...), c.env()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "hang: waiting") {
	}
	time.Sleep(time.Second) // every rank in its last call
	// The ranks first, on both nodes, then dtrun and the launcher.
	exec.Command("pkill", "-KILL", "-x", "stalehang").Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	go io.Copy(io.Discard, out)
	cmd.Wait()
	for _, node := range []string{"dtnode2", "dtnode1"} {
		// Left a while ago, as a killed job's directory is when it
		// is swept (claimStale).
		touch := append(c.enter(node), "sh", "-c", "touch -d '-2 min' /dev/shm/dtpa-*")
		if b, err := exec.Command(touch[0], touch[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: no spill directory left: %v\n%s", node, err, b)
		}
		a := append(c.on(node, dir), filepath.Join(root, "bin", "dtrun"), "--recover")
		text, errOut, code := runJobEnv(t, dir, nil, a[0], a[1:]...)
		if code != 0 || !strings.Contains(errOut, "holds the last records of 2 rank(s) of an earlier job") {
			t.Fatalf("dtrun --recover on %s: exit %d\n%s%s", node, code, text, errOut)
		}
		if c.exists(node, "/dev/shm/dtpa-*") {
			t.Errorf("%s: a spill directory left after dtrun --recover", node)
		}
		t.Logf("dtrun --recover on %s:\n%s", node, errOut)
		if _, errOut, _ := runJobEnv(t, dir, nil, a[0], a[1:]...); !strings.Contains(errOut, "no spill directory of a killed job") {
			t.Errorf("dtrun --recover again on %s: %s", node, errOut)
		}
	}
	for _, s := range analyzer.RunTraces(dir, nil) {
		for _, st := range s.Stopped {
			if st.Cut {
				t.Errorf("rank %d's trace, after the recovery on its node: %s", st.Rank, st.Why)
			}
		}
	}
	r, _ := analyse(t, dir, "stalehang")
	checkNodes(t, r)
}

// runner runs commands on node.
func (c *cluster) runner(node string) func(name string, args ...string) *exec.Cmd {
	return func(name string, args ...string) *exec.Cmd {
		a := append(c.enter(node), name)
		return exec.Command(a[0], append(a[1:], args...)...)
	}
}

// checkNodesBugs is checkBugs, and checkNodes, for quietRunsOn.
func checkNodesBugs(t *testing.T, out string, r *report.Report, stderr string, skewed bool) float64 {
	checkNodes(t, r)
	return checkBugs(t, out, r, stderr, skewed)
}

// checkNodes checks that the report places ranks 0 and 2 on dtnode1, 1
// and 3 on dtnode2, as the launchers were told to.
func checkNodes(t *testing.T, r *report.Report) {
	t.Helper()
	checkHosts(t, r, nodesHosts)
}

// nodesHosts is where TestNodes's jobs place their 4 ranks: round robin.
var nodesHosts = []report.Host{{Host: "dtnode1", Ranks: []int{0, 2}}, {Host: "dtnode2", Ranks: []int{1, 3}}}

// checkHosts checks the report's hosts and their ranks.
func checkHosts(t *testing.T, r *report.Report, want []report.Host) {
	t.Helper()
	if !slices.EqualFunc(r.Hosts, want, func(a, b report.Host) bool { return a.Host == b.Host && slices.Equal(a.Ranks, b.Ranks) }) {
		t.Errorf("hosts %+v, want %+v", r.Hosts, want)
	}
}

// testNodeKilled runs testdata/c/crash.c's "kill" under m on the two
// nodes: rank 1, on dtnode2, kills itself (SIGKILL) after its periodic
// flush; the launcher ends the others (Open MPI with SIGTERM, which
// their tracers catch; MPICH with SIGKILL, whose records dtrun recovers on
// its own node, and which leaves rank 3's too on dtnode2). dtrun must name
// dtnode2's killed ranks and give the command that recovers their
// records there; run as given, it must complete their traces.
func testNodeKilled(t *testing.T, c *cluster, m mpiImpl, env []string) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "crash")
	if out, err := exec.Command(m.cc, "-g", "-o", exe, filepath.Join(root, "testdata", "c", "crash.c")).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m.cc, err, out)
	}
	args := append(append(c.on("dtnode1", dir), filepath.Join(root, "bin", "dtrun"), m.mpirun, m.np, "4"), m.args...)
	_, errOut, code := runJobEnv(t, dir, env, args[0], append(args[1:], "./crash", "kill")...)
	if code == 0 {
		t.Fatalf("dtrun exited 0, want the job's failure\n%s", errOut)
	}
	// Rank 3 too when the launcher ends it with SIGKILL (MPICH's hydra;
	// Open MPI's mpirun and srun on a loaded machine, SIGTERM unheeded
	// for long enough).
	ranks, spill, advice := advised(errOut)
	if advice == nil || ranks != "rank 1" && ranks != "ranks 1, 3" {
		t.Fatalf("dtrun does not say that rank 1 died on dtnode2 and how to recover there:\n%s", errOut)
	}
	if m.name == "mpich" && ranks != "ranks 1, 3" {
		t.Errorf("dtrun names %s killed on dtnode2, want ranks 1 and 3 (hydra ends the others with SIGKILL)", ranks)
	}
	if strings.Contains(errOut, "killed on dtnode1") {
		t.Errorf("dtrun asks to recover on its own node, whose ranks it recovered:\n%s", errOut)
	}
	if !c.exists("dtnode2", spill) || c.exists("dtnode1", spill) {
		t.Errorf("%s: on dtnode2 %v, on dtnode1 %v; want on dtnode2 alone", spill, c.exists("dtnode2", spill), c.exists("dtnode1", spill))
	}
	recoverAsAdvised(t, c, dir, env, advice)
	if c.exists("dtnode2", spill) {
		t.Errorf("%s left on dtnode2 after its recovery", spill)
	}
	r, _ := analyse(t, dir, "crash")
	checkNodes(t, r)
}

// adviceRe is what dtrun says of ranks killed on dtnode2.
var adviceRe = regexp.MustCompile("dtrun: (ranks? [0-9, -]+), killed on dtnode2, left \\w+ last records there: run `dtrun --recover (/dev/shm/dtpa-[0-9]+)` on dtnode2 to add them to \\w+ traces?, e.g. `([^`]+)`\n")

// advised is what dtrun's output text says of ranks killed on dtnode2:
// which ranks, their spill directory there, and the command that
// recovers them (nil: none).
func advised(text string) (ranks, spill string, advice []string) {
	g := adviceRe.FindStringSubmatch(text)
	if g == nil {
		return "", "", nil
	}
	return g[1], g[2], strings.Fields(g[3])
}

// recoverAsAdvised runs the command dtrun gave, as given, on dtrun's
// node, and checks that it completed every trace in dir.
func recoverAsAdvised(t *testing.T, c *cluster, dir string, env, advice []string) {
	t.Helper()
	args := append(c.on("dtnode1", dir), advice...)
	out, errOut, code := runJobEnv(t, dir, env, args[0], args[1:]...)
	if code != 0 || !strings.Contains(out+errOut, "recovered from") {
		t.Fatalf("%s: exit %d\n%s%s", strings.Join(advice, " "), code, out, errOut)
	}
	for _, s := range analyzer.RunTraces(dir, nil) {
		for _, st := range s.Stopped {
			if st.Cut {
				t.Errorf("rank %d's trace, after the recovery: %s", st.Rank, st.Why)
			}
		}
	}
}

// cluster is two nodes, dtnode1 and dtnode2, emulated on this machine
// (startNodes).
type cluster struct {
	mark  string // marks the nodes' first processes, for agent to find them
	agent string // the remote shell: agent [options] host command…
}

// startNodes emulates two nodes for the test: each is a process (the
// node's first, which the others descend from) in namespaces of its own:
// UTS (its host name: dtnode1, dtnode2), network (10.77.0.1 and .2, one
// virtual Ethernet pair between them; /etc/hosts names both), mount (its
// own /dev/shm and /sys, and a boot id of its own, as another machine
// has), PID and IPC. The working directories are shared, as a cluster's
// network file system is. dtnode2 is made inside dtnode1's PID namespace,
// so that dtnode1 can enter it (a namespace can be entered from its
// parent only): commands reach dtnode2 from dtnode1 or from the test,
// not the other way. The launchers reach dtnode2 through the agent, a
// remote shell as ssh is (a session of its own, a clean environment),
// which Open MPI (OMPI_MCA_plm_rsh_agent) and MPICH's hydra
// (HYDRA_LAUNCHER_EXEC) are configured to use, as a site configures
// them. It skips the test (fails it under CI) without root or the tools.
func startNodes(t *testing.T) *cluster {
	t.Helper()
	testenv.NeedCommands(t, "unshare", "nsenter", "setsid", "ip", "pgrep")
	if os.Geteuid() != 0 {
		testenv.Missing(t, "nodes emulated with namespaces need root")
	}
	d := t.TempDir()
	os.Chmod(d, 0o755)
	hosts := filepath.Join(d, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n10.77.0.1 dtnode1\n10.77.0.2 dtnode2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cluster{mark: d, agent: filepath.Join(d, "agent")}
	agent := fmt.Sprintf(`#!/bin/sh
# agent [options] host command...: runs command on the emulated node
# host as ssh would: in the home directory, with a clean environment,
# out of reach of the caller's terminal (a session of its own).
while [ "${1#-}" != "$1" ]; do shift; done
h=$1; shift
pid=$(pgrep -f "^bash -c M=%s; hostname $h;" | head -n 1)
[ -n "$pid" ] || { echo "agent: no node $h here" >&2; exit 255; }
exec setsid -w nsenter -t "$pid" -u -m -n -p -i -- env -i PATH="$PATH" HOME="$HOME" sh -c "cd && $*"
`, d)
	if err := os.WriteFile(c.agent, []byte(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	ns := []string{"unshare", "--uts", "--mount", "--net", "--pid", "--ipc", "--fork", "--mount-proc", "--propagation", "private", "--kill-child"}
	for k, node := range []string{"dtnode1", "dtnode2"} {
		boot := filepath.Join(d, node+".boot_id")
		os.WriteFile(boot, []byte(fmt.Sprintf("7c3d0000-0000-4000-8000-%012d\n", k+1)), 0o644)
		// The node's /sys shows its network devices (as UCX and the
		// MPI libraries list them); the machine's cgroups stay mounted
		// in it, as slurmd wants them.
		cg := filepath.Join(d, node+".cgroup")
		os.Mkdir(cg, 0o755)
		script := fmt.Sprintf("M=%s; hostname %s; mount -t tmpfs tmpfs /dev/shm && mount --rbind /sys/fs/cgroup %s && mount -t sysfs sysfs /sys && "+
			"mount --rbind %s /sys/fs/cgroup && mount --bind %s /proc/sys/kernel/random/boot_id", d, node, cg, cg, boot)
		if k == 0 {
			script += " && mount --bind " + hosts + " /etc/hosts"
		}
		script += ` || exit 1; trap "exit 0" TERM; echo up; while :; do sleep 1; done`
		args := append(append([]string{}, ns...), "bash", "-c", script)
		if k == 1 {
			args = append(c.enter("dtnode1"), args...)
		}
		out := filepath.Join(d, node+".out")
		startDaemon(t, exec.Command(args[0], args[1:]...), out)
		// Up once its mounts are made (dtnode2, made inside dtnode1's
		// mount namespace, copies them).
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(out); strings.Contains(string(b), "up\n") && c.pid(node) != 0 {
				break
			}
			if time.Now().After(end) {
				b, _ := os.ReadFile(out)
				t.Fatalf("node %s did not start\n%s", node, b)
			}
		}
	}
	// One virtual Ethernet pair joins the nodes.
	veth := fmt.Sprintf("dtv%d", os.Getpid()%100000)
	for _, cmd := range [][]string{
		{"ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"},
		{"ip", "link", "set", veth + "a", "netns", strconv.Itoa(c.pid("dtnode1"))},
		{"ip", "link", "set", veth + "b", "netns", strconv.Itoa(c.pid("dtnode2"))},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
	for k, node := range []string{"dtnode1", "dtnode2"} {
		dev := veth + string(rune('a'+k))
		script := fmt.Sprintf("ip link set lo up && ip addr add 10.77.0.%d/24 dev %s && ip link set %s up", k+1, dev, dev)
		args := append(c.enter(node), "sh", "-c", script)
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", node, err, out)
		}
	}
	return c
}

// pid is the process id of node's first process, as the test sees it; 0
// when it is not running.
func (c *cluster) pid(node string) int {
	out, _ := exec.Command("pgrep", "-f", fmt.Sprintf("^bash -c M=%s; hostname %s;", c.mark, node)).Output()
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return 0
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// enter is the command prefix that runs a command on node, from the test.
func (c *cluster) enter(node string) []string {
	return []string{"nsenter", "-t", strconv.Itoa(c.pid(node)), "-u", "-m", "-n", "-p", "-i", "--"}
}

// on is the command prefix that runs a command on node in directory dir,
// with the caller's environment (a user's shell on that node). The
// directory is entered once inside the node (nsenter's --wd would leave
// it outside the node's mount namespace, where getcwd cannot name it).
func (c *cluster) on(node, dir string) []string {
	return append(c.enter(node), "sh", "-c", `cd "$0" && exec "$@"`, dir)
}

// env is the environment that makes the launchers reach the other node
// through the agent.
func (c *cluster) env() []string {
	return []string{"OMPI_MCA_plm_rsh_agent=" + c.agent, "HYDRA_LAUNCHER=ssh", "HYDRA_LAUNCHER_EXEC=" + c.agent}
}

// impls are the launchers placing 4 ranks round robin on the two nodes.
func (c *cluster) impls() []mpiImpl {
	return []mpiImpl{
		{name: "openmpi", cc: "mpicc.openmpi", mpirun: "mpirun.openmpi", np: "-np", args: []string{"--host", "dtnode1:2,dtnode2:2", "--map-by", "node"},
			on: func(dir string) []string { return c.on("dtnode1", dir) }},
		{name: "mpich", cc: "mpicc.mpich", mpirun: "mpiexec.mpich", np: "-n", args: []string{"-hosts", "dtnode1,dtnode2"},
			on: func(dir string) []string { return c.on("dtnode1", dir) }},
	}
}

// finalizes tells whether jobs of m whose ranks reach MPI_Finalize end
// reliably on the emulated nodes. Debian's MPICH talks TCP between nodes
// through UCX, whose TCP transport hangs now and then in MPI_Finalize
// when its endpoints close (openucx/ucx#8738; 2 runs of 5 of waits.c
// untraced here): only its jobs that end otherwise (killed, interrupted)
// run there.
func finalizes(m mpiImpl) bool { return m.name != "mpich" }

// exists tells whether path exists on node.
func (c *cluster) exists(node, path string) bool {
	args := append(c.enter(node), "test", "-e", path)
	return exec.Command(args[0], args[1:]...).Run() == nil
}
