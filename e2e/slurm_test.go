package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
)

// TestSrun traces jobs that Slurm's srun launches, as on a cluster
// (`dtrun srun -n 4 --mpi=pmix ./app`), on a one-node Slurm cluster of its
// own (startSlurm: Debian's slurmctld, slurmd and munge; root only): srun
// starts the ranks through slurmd, not through mpirun, and passes them the
// tracer in --export. waits.c's waits, known by construction, must be
// found under Open MPI (PMIx) and MPICH (PMI-2), aligned and skewed, and
// the coupled model of TestMPMD run by srun --multi-prog; a hung job
// interrupted with Ctrl-C (SIGINT to dtrun and srun, as a terminal sends
// it) must end with every rank's trace and where each waited.
func TestSrun(t *testing.T) {
	env := startSlurm(t)
	ms := []mpiImpl{
		{name: "openmpi", cc: "mpicc.openmpi", mpirun: "srun", np: "-n", args: []string{"--mpi=pmix"}},
		{name: "mpich", cc: "mpicc.mpich", mpirun: "srun", np: "-n", args: []string{"--mpi=pmi2"}},
	}
	t.Run("waits", func(t *testing.T) {
		quietRunsOn(t, ms, "waits", env, nil, waitsExpects(), checkBugs, compareWaits(t))
	})
	for _, m := range ms {
		t.Run("mpmd/"+m.name, func(t *testing.T) {
			needMPI(t, m)
			testMPMD(t, m, "multiprog", env)
		})
	}
	t.Run("hang", func(t *testing.T) {
		m := ms[0]
		needMPI(t, m)
		dir := t.TempDir()
		exe := compile(t, m, dir, "hang")
		// dtrun named first, as a user types it.
		args := append([]string{"srun", "-n", "4"}, m.args...)
		text, _ := interruptJobEnv(t, dir, env, append(args, "./"+filepath.Base(exe)), "hang: waiting", true)
		checkHangEnded(t, dir, text)
	})
}

// startSlurm starts a one-node Slurm cluster for the test, on free ports,
// with its own munge daemon, configuration and state in a temporary
// directory, and returns the environment that points srun at it
// (SLURM_CONF). It skips the test (fails it under CI) without root or
// without Slurm and munge installed.
func startSlurm(t *testing.T) []string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	// The node by its address in the configuration, not by what its name
	// resolves to.
	return startSlurmOn(t, []slurmNode{{name: host, addr: "127.0.0.1", run: exec.Command}})
}

// slurmNode is a node of the test's Slurm cluster: its name, its
// address, and how a command is run there.
type slurmNode struct {
	name, addr string
	run        func(name string, args ...string) *exec.Cmd
}

// startSlurmOn starts a Slurm cluster of nodes (the controller on the
// first), with its own munge daemon, configuration and state in a
// temporary directory, and returns the environment that points srun at
// it (SLURM_CONF); srun, sinfo and scancel reach the controller from the
// first node. Each node's temporary files (TmpFS: PMIx's directories,
// named by job and step) go in its /dev/shm, which is its own where /tmp
// is shared (TestNodes).
func startSlurmOn(t *testing.T, nodes []slurmNode) []string {
	t.Helper()
	testenv.NeedCommands(t, "srun", "sinfo", "scancel", "slurmctld", "slurmd", "munged", "mungekey")
	if os.Geteuid() != 0 {
		testenv.Missing(t, "a Slurm cluster of the test's own needs root (its slurmd starts the jobs' tasks)")
	}
	d, err := os.MkdirTemp("", "dtpa-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("sh", "-c", "tail -n 15 "+d+"/*.log").CombinedOutput()
			t.Logf("the Slurm daemons' logs:\n%s", logs)
		}
		os.RemoveAll(d)
	})
	os.Chmod(d, 0o755)
	sock := filepath.Join(d, "munge.socket")
	if out, err := exec.Command("mungekey", "--create", "--keyfile="+filepath.Join(d, "munge.key")).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v\n%s", err, out)
	}
	munged := exec.Command("munged", "--foreground", "--force", "--socket="+sock, "--key-file="+filepath.Join(d, "munge.key"),
		"--pid-file="+filepath.Join(d, "munged.pid"), "--log-file="+filepath.Join(d, "munged.log"), "--seed-file="+filepath.Join(d, "munged.seed"))
	startDaemon(t, munged, filepath.Join(d, "munged.out"))
	ports := freePorts(t, 2)
	conf := filepath.Join(d, "slurm.conf")
	os.MkdirAll(filepath.Join(d, "ctld"), 0o755)
	var names, nodeLines []string
	for _, n := range nodes {
		os.MkdirAll(filepath.Join(d, "spool-"+n.name), 0o755)
		names = append(names, n.name)
		nodeLines = append(nodeLines, fmt.Sprintf("NodeName=%s NodeAddr=%s CPUs=8 State=UNKNOWN", n.name, n.addr))
	}
	text := fmt.Sprintf(`ClusterName=dtpatest
SlurmctldHost=%[1]s(%[6]s)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[5]s/ctld
SlurmdSpoolDir=%[5]s/spool-%%n
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd-%%n.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd-%%n.log
ReturnToService=2
TmpFS=/dev/shm
MpiDefault=none
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
%[7]s
PartitionName=dtpa Nodes=%[8]s Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
`, nodes[0].name, ports[0], ports[1], sock, d, nodes[0].addr, strings.Join(nodeLines, "\n"), strings.Join(names, ","))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLURM_CONF=" + conf}
	first := nodes[0].run
	ctld := first("slurmctld", "-D", "-f", conf)
	ctld.Env = append(os.Environ(), env...)
	startDaemon(t, ctld, filepath.Join(d, "slurmctld.out"))
	for _, n := range nodes {
		cmd := n.run("slurmd", "-D", "-f", conf, "-N", n.name)
		cmd.Env = append(os.Environ(), env...)
		startDaemon(t, cmd, filepath.Join(d, "slurmd-"+n.name+".out"))
	}
	// Before the daemons stop (cleanups run last first): the tasks of a
	// job a failed test left behind are ended, not orphaned.
	t.Cleanup(func() {
		cmd := first("scancel", "--full", "--user", strconv.Itoa(os.Geteuid()))
		cmd.Env = append(os.Environ(), env...)
		cmd.Run()
		time.Sleep(500 * time.Millisecond)
	})
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cmd := first("sinfo", "-h", "-o", "%t")
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.Output()
		if s := strings.TrimSpace(string(out)); s == "idle" || s == "mix" {
			break
		}
		if time.Now().After(end) {
			logs, _ := exec.Command("sh", "-c", "tail -n 20 "+d+"/*.log "+d+"/*.out").CombinedOutput()
			t.Fatalf("the test's Slurm cluster is not up after 30 s (sinfo: %q)\n%s", out, logs)
		}
	}
	return env
}

// startDaemon starts cmd, its output to file out, and stops it when the
// test ends.
func startDaemon(t *testing.T, cmd *exec.Cmd, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
}

// freePorts returns n TCP ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
