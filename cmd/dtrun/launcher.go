package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dtpa/dtpa/tracer/records"
)

// launchStyle is how a launcher is told what the ranks need in their
// environment (the tracer's LD_PRELOAD, the spill directory, the
// parameters), which options take a value, and how it is interrupted.
type launchStyle int

const (
	openMPIStyle launchStyle = iota // mpirun -x NAME=value
	mpichStyle                      // mpiexec -genv NAME value (hydra)
	slurmStyle                      // srun --export=ALL,NAME=value
)

// styleOf tells a launcher's style by its name, following symlinks.
func styleOf(launcher string) launchStyle {
	if isSrun(launcher) {
		return slurmStyle
	}
	if isMPICH(launcher) {
		return mpichStyle
	}
	return openMPIStyle
}

// isSrun tells Slurm's srun by its name, or that of the file it links to.
func isSrun(launcher string) bool {
	if filepath.Base(launcher) == "srun" {
		return true
	}
	r, err := filepath.EvalSymlinks(launcher)
	return err == nil && filepath.Base(r) == "srun"
}

// launcherNames are the launchers a command line may start with, as in
// `dtrun srun -n 64 ./app` or `dtrun mpirun -np 4 ./app`: the first
// argument then names the launcher, as --mpirun does.
var launcherNames = map[string]bool{
	"srun": true, "mpirun": true, "mpiexec": true, "mpirun.openmpi": true, "mpiexec.openmpi": true,
	"mpiexec.mpich": true, "mpirun.mpich": true, "mpiexec.hydra": true, "orterun": true, "prterun": true,
}

// valueOpts are the style's launcher options that take a value, so that
// the value is not mistaken for the program.
func (s launchStyle) valueOpts() map[string]int {
	if s == slurmStyle {
		return srunValueOpts
	}
	return valueOpts
}

// srunValueOpts are srun's options that take a value as the next
// argument (srun's -s is --oversubscribe, hydra's takes the ranks that
// read stdin: the two cannot share a table).
var srunValueOpts = map[string]int{
	"-A": 1, "--account": 1, "-b": 1, "--begin": 1, "-c": 1, "--cpus-per-task": 1, "-C": 1, "--constraint": 1,
	"-d": 1, "--dependency": 1, "-D": 1, "--chdir": 1, "-e": 1, "--error": 1, "-G": 1, "--gpus": 1,
	"-i": 1, "--input": 1, "-J": 1, "--job-name": 1, "-L": 1, "--licenses": 1, "-m": 1, "--distribution": 1,
	"-M": 1, "--clusters": 1, "-n": 1, "--ntasks": 1, "-N": 1, "--nodes": 1, "-o": 1, "--output": 1,
	"-p": 1, "--partition": 1, "-q": 1, "--qos": 1, "-r": 1, "--relative": 1, "-S": 1, "--core-spec": 1,
	"-t": 1, "--time": 1, "-T": 1, "--threads": 1, "-w": 1, "--nodelist": 1, "-W": 1, "--wait": 1,
	"-x": 1, "--exclude": 1, "--mem": 1, "--mem-per-cpu": 1, "--mem-per-gpu": 1, "--gres": 1,
	"--ntasks-per-node": 1, "--ntasks-per-socket": 1, "--ntasks-per-core": 1, "--mpi": 1, "--cpu-bind": 1,
	"--reservation": 1, "--signal": 1, "--export": 1, "--hint": 1, "--comment": 1, "--time-min": 1,
	"--cpu-freq": 1, "--gpus-per-task": 1, "--gpus-per-node": 1, "--cpus-per-gpu": 1, "--mem-bind": 1,
	"--network": 1, "--het-group": 1, "--cores-per-socket": 1,
	"--sockets-per-node": 1, "--threads-per-core": 1, "--tmp": 1, "--uid": 1, "--gid": 1, "--prolog": 1,
	"--epilog": 1, "--task-prolog": 1, "--task-epilog": 1, "--container": 1,
}

// srunArgs is srun's arguments args with env (NAME=value) given to every
// task: --export=ALL,env… before them, or env added to the user's own
// --export (ALL or a list: env joins it; NONE: env alone, which with
// srun's SLURM_* variables is what the tasks get). A value with a comma
// cannot be said in --export's list.
func srunArgs(args, env []string) ([]string, error) {
	for _, kv := range env {
		if strings.Contains(kv, ",") {
			k, _, _ := strings.Cut(kv, "=")
			return nil, fmt.Errorf("%s cannot go through srun --export: its value has a comma (%s)", k, kv)
		}
	}
	ours := strings.Join(env, ",")
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			break // the program
		}
		val, at := "", -1
		if v, ok := strings.CutPrefix(a, "--export="); ok {
			val, at = v, i
		} else if a == "--export" && i+1 < len(out) {
			val, at = out[i+1], i+1
		} else if !strings.Contains(a, "=") {
			i += srunValueOpts[a]
			continue
		}
		if at < 0 {
			continue
		}
		switch strings.ToUpper(val) {
		case "NONE", "NIL":
			val = ours
		default:
			val += "," + ours
		}
		if at == i {
			out[i] = "--export=" + val
		} else {
			out[at] = val
		}
		return out, nil
	}
	return append([]string{"--export=ALL," + ours}, out...), nil
}

// interruptSignal is how an interrupt is passed on to the launcher:
// SIGINT, which mpirun and mpiexec pass to the ranks (a second one 5 s
// later ends an Open MPI mpirun whose abort hangs); srun takes a first
// SIGINT for a request of its status, so it gets SIGTERM, which ends its
// tasks at once with SIGKILL: dtrun first has Slurm give the step's
// tasks SIGTERM (signalStep), and srun gets its own only if it has not
// ended with them.
func (s launchStyle) interruptSignal() os.Signal {
	if s == slurmStyle {
		return syscall.SIGTERM
	}
	return os.Interrupt
}

// onNodes is the command that runs cmd as one task on each node of hosts
// with launcher (its path), as dtrun advises it: `dtrun --recover` where
// ranks were killed.
func (s launchStyle) onNodes(launcher string, hosts []string, cmd string) string {
	list, k := strings.Join(hosts, ","), len(hosts)
	switch s {
	case slurmStyle:
		return fmt.Sprintf("%s -w %s -N %d -n %d %s", launcher, list, k, k, cmd)
	case mpichStyle:
		return fmt.Sprintf("%s -hosts %s -n %d %s", launcher, list, k, cmd)
	}
	// (Each host named once is one slot.)
	return fmt.Sprintf("%s --host %s -np %d %s", launcher, list, k, cmd)
}

// slurmStep is the Slurm job step ("4242.0") the ranks of this node run
// in, as their traces' headers say (Header.batch_job), read from the
// spill files in dir; "" when none says.
func slurmStep(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.spill"))
	for _, f := range files {
		info, err := records.ReadSpillInfo(f)
		if err != nil || info.Trace == "" {
			continue
		}
		if step, ok := strings.CutPrefix(headerOf(info.Trace).GetBatchJob(), "slurm "); ok && strings.Contains(step, ".") {
			return step
		}
	}
	return ""
}

// srunStep is the Slurm job step that srun, process pid of this host,
// launched, as Slurm records it (scontrol show step: SrunHost:Pid): the
// step of a job none of whose tasks run on dtrun's node, where slurmStep
// finds no trace to read it from. "" when Slurm does not say (within
// 3 s: the job is being interrupted).
func srunStep(pid int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "show", "step", "-o").Output()
	if err != nil {
		return ""
	}
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	return stepOfSrun(string(out), host, pid)
}

// stepOfSrun finds, in the one-line records of `scontrol show step -o`,
// the step whose srun is process pid of host (Slurm may name the host
// short or in full: sameHost).
func stepOfSrun(steps, host string, pid int) string {
	for _, line := range strings.Split(steps, "\n") {
		var id, srun string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "StepId="); ok {
				id = v
			} else if v, ok := strings.CutPrefix(f, "SrunHost:Pid="); ok {
				srun = v
			}
		}
		i := strings.LastIndexByte(srun, ':')
		if i < 0 || !strings.Contains(id, ".") || srun[i+1:] != strconv.Itoa(pid) {
			continue
		}
		if sameHost(srun[:i], host) {
			return id
		}
	}
	return ""
}

// signalStep sends sig to every task of the Slurm job step (scancel
// --signal), on every node, through Slurm: srun itself turns a SIGTERM
// into a SIGKILL of its tasks, which would leave the ranks of other nodes
// no time to write their traces' ends.
func signalStep(step string, sig syscall.Signal) error {
	return exec.Command("scancel", "--signal="+strings.TrimPrefix(unix.SignalName(sig), "SIG"), step).Run()
}
