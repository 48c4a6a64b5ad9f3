package e2e

import (
	"bytes"
	"fmt"
	"math/bits"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/report"
)

// gmxRuns are TestGROMACS's runs of mdrun at 4 ranks: pme lists the world
// ranks GROMACS makes separate PME ranks (none: every rank does its share
// of the mesh), fns MPI functions the trace must hold.
var gmxRuns = []struct {
	name string
	skew bool
	env  []string
	args []string
	pme  []int
	fns  []string
}{
	// Three domain-decomposition ranks and one PME rank (the last, by
	// GROMACS's default interleaved order): the PP ranks send their
	// coordinates to it (MPI_Isend, MPI_Waitall) and exchange halos with
	// MPI_Sendrecv on a communicator split from world.
	{"pme-rank", false, nil, []string{"-npme", "1", "-ntomp", "1"}, []int{3},
		[]string{"MPI_Comm_split", "MPI_Sendrecv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Recv", "MPI_Allreduce"}},
	// Two PP and two PME ranks on a Cartesian grid (MPI_Cart_create):
	// the PME ranks transpose their grid with MPI_Alltoall.
	{"cartesian-skewed", true, nil, []string{"-npme", "2", "-ntomp", "1", "-ddorder", "cartesian"}, []int{1, 3},
		[]string{"MPI_Cart_create", "MPI_Cart_coords", "MPI_Cart_rank", "MPI_Alltoall", "MPI_Sendrecv", "MPI_Isend", "MPI_Waitall"}},
	// PME on every rank, two OpenMP threads per rank. Eight threads on a
	// shared machine need OpenMP's passive wait: GROMACS's threads spin
	// otherwise, and the run takes minutes instead of a second.
	{"openmp", false, []string{"OMP_WAIT_POLICY=passive"}, []string{"-npme", "0", "-ntomp", "2"}, nil,
		[]string{"MPI_Alltoall", "MPI_Sendrecv", "MPI_Allreduce"}},
}

// gmxTimers maps a function of GROMACS on the call stacks of its MPI calls
// to the row of its own time accounting (md.log, "R E A L   C Y C L E   A N
// D   T I M E   A C C O U N T I N G") that times those calls: the
// coordinate and force halo exchanges of the domain decomposition, the
// coordinates sent to and forces received from PME ranks, the PME ranks'
// waits for the PP ranks, and the 3-D FFT's transposes. A call site counts
// for the innermost of these functions on its stack; gmx_pme_do's own
// calls (the redistribution of atoms among PME ranks, which GROMACS times
// with other work) for none.
var gmxTimers = map[string]string{
	"gmx_pme_do":               "",
	"dd_move_x":                "Comm. coord.",
	"dd_move_f":                "Wait + Comm. F",
	"gmx_pme_send_coordinates": "Send X to PME",
	"gmx_pme_receive_f":        "Wait + Recv. PME F",
	"gmx_pmeonly":              "PME wait for PP",
	"fft5d_execute":            "PME 3D-FFT Comm.",
}

// gmxAccountingRE is a row of GROMACS's time accounting: the name, the
// number of ranks it averages over (absent on "PME wait for PP") and the
// wall time in seconds, an average over those ranks.
var gmxAccountingRE = regexp.MustCompile(`(?m)^ (\S(?:\S| \S)*)\s+(?:(\d+)\s+\d+\s+\d+\s+)?([0-9.]+)\s+[0-9.]+\s+[0-9.]+$`)

// gmxEnergiesRE is a block of energies of md.log.
var gmxEnergiesRE = regexp.MustCompile(`(?s)Energies \(kJ/mol\)\n.*?\n\n`)

// TestGROMACS traces GROMACS's mdrun (Debian's gromacs: gmx_mpi, Open MPI)
// on a box of 1696 SPC waters built at test time with gmx solvate and gmx
// grompp from gromacs-data (testdata/apps/water.mdp: 200 steps with PME
// electrostatics), at 4 ranks, untraced and traced, in the three layouts of
// gmxRuns. mdrun runs with -reprod -dlb no, so that a run's results do not
// depend on its timing: the final coordinates and velocities (md.gro) must
// be the untraced run's byte for byte, as must every energy md.log prints.
// The report must be clean, hold the MPI calls of the layout, name
// GROMACS's C++ functions demangled, and agree with GROMACS's own time
// accounting: the time of the MPI calls under each function of gmxTimers,
// averaged over the ranks GROMACS averages over, is the row's wall time
// within 20 % and 10 ms (they agree to 2 % here: the rows time little
// besides those calls). Separate PME ranks talk to PP ranks only; with one
// PME rank, the PP ranks' halo exchanges run on a communicator of their
// own. Then two simulations exchange replicas (gmxReplicaExchange).
func TestGROMACS(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	testenv.NeedCommands(t, "gmx", "gmx_mpi")
	gmxMPI, _ := exec.LookPath("gmx_mpi")
	dir := t.TempDir()
	for _, f := range []string{"water.mdp", "water.top"} {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "apps", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Eight copies of spc216.gro's equilibrated box of 1.86206 nm: the
	// tiled box is periodic, without the bad contacts of a box cut in
	// the middle of a copy.
	run(t, dir, nil, time.Minute, "gmx", "solvate", "-cs", "spc216.gro", "-box", "3.72412", "3.72412", "3.72412", "-o", "conf.gro", "-p", "water.top")
	run(t, dir, nil, time.Minute, "gmx", "grompp", "-f", "water.mdp", "-c", "conf.gro", "-p", "water.top", "-o", "water.tpr")
	tpr, err := os.ReadFile(filepath.Join(dir, "water.tpr"))
	if err != nil {
		t.Fatal(err)
	}
	gmxRunsHere(t, m, dir, gmxMPI, tpr)
	for _, g := range gmxRuns {
		t.Run(g.name, func(t *testing.T) {
			mdrun := append([]string{gmxMPI, "mdrun", "-s", "water.tpr", "-reprod", "-dlb", "no"}, g.args...)
			launch := append(append([]string{"-np", "4"}, m.args...), mdrun...)
			runIn := func(env []string, name string, args ...string) string {
				d := t.TempDir()
				if err := os.WriteFile(filepath.Join(d, "water.tpr"), tpr, 0o644); err != nil {
					t.Fatal(err)
				}
				run(t, d, env, 2*time.Minute, name, args...)
				return d
			}
			untraced := runIn(g.env, m.mpirun, launch...)
			env := skewEnv(g.env, g.skew)
			traced := runIn(env, filepath.Join(root, "bin", "dtrun"), append([]string{"--mpirun", m.mpirun}, launch...)...)
			read := func(d, f string) []byte {
				b, err := os.ReadFile(filepath.Join(d, f))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			if !bytes.Equal(read(traced, "confout.gro"), read(untraced, "confout.gro")) {
				t.Error("the final coordinates and velocities (confout.gro) differ from the untraced run's")
			}
			log := string(read(traced, "md.log"))
			want, got := gmxEnergiesRE.FindAllString(string(read(untraced, "md.log")), -1), gmxEnergiesRE.FindAllString(log, -1)
			if len(want) < 3 || !slices.Equal(got, want) {
				t.Errorf("md.log's energies differ from the untraced run's:\n%s\nwant:\n%s", strings.Join(got, ""), strings.Join(want, ""))
			}
			r := checkRealReport(t, traced, g.skew, "gmx_mpi", "gmx_mpi", g.fns...)
			iv := r.Intervals[0]
			checkGMXTimers(t, iv, log, g.pme)
			for _, p := range iv.SRC {
				for _, f := range p.Stack {
					if strings.HasPrefix(f.Function, "_Z") {
						t.Errorf("SRC %d: frame %s not demangled", p.ID, f.Function)
					}
				}
			}
			if len(g.pme) == 0 {
				return
			}
			// Each PP rank sends its coordinates to a PME rank and
			// receives its forces, once a step at least; the ranks
			// of a kind talk to each other on communicators of
			// their own.
			pp := func(r int) bool { return !slices.Contains(g.pme, r) }
			for _, c := range iv.CommMatrices {
				if c.Comm != "world" && c.Comm != "cart_create of world" {
					continue
				}
				for s, row := range c.Messages {
					var toOther, fromOther int64
					for d, n := range row {
						if pp(s) == pp(d) && n != 0 {
							t.Errorf("%s: %d messages %d → %d between ranks of the same kind", c.Comm, n, s, d)
						}
						if pp(s) != pp(d) {
							toOther += n
							fromOther += c.Messages[d][s]
						}
					}
					if pp(s) && (toOther < 200 || fromOther < 200) {
						t.Errorf("%s: PP rank %d sent %d messages to PME ranks and received %d, want 200 at least", c.Comm, s, toOther, fromOther)
					}
				}
			}
			if len(g.pme) == 1 {
				var ppComm bool
				for _, c := range iv.CommMatrices {
					ppComm = ppComm || strings.HasPrefix(c.Comm, "split") && slices.Equal(c.Ranks, []int{0, 1, 2})
				}
				if !ppComm {
					t.Errorf("no traffic on a communicator of the PP ranks 0–2: %+v", iv.CommMatrices)
				}
			}
		})
	}
	t.Run("replica-exchange", func(t *testing.T) { gmxReplicaExchange(t, m, dir, gmxMPI) })
}

// gmxRunsHere skips the test where Debian's gmx_mpi cannot run at all:
// it is built to read the clock with rdtscp and refuses to start where
// CPUID does not report the instruction, as on some virtual machines
// (seen on this project's: /proc/cpuinfo lists rdtscp, CPUID leaf
// 0x80000001 does not). Nothing traced is involved; the probe is one rank
// running no step.
func gmxRunsHere(t *testing.T, m mpiImpl, dir, gmxMPI string, tpr []byte) {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "water.tpr"), tpr, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"-np", "1"}, m.args...), gmxMPI, "mdrun", "-s", "water.tpr", "-nsteps", "0", "-ntomp", "1")
	cmd := exec.Command(m.mpirun, args...)
	cmd.Dir = d
	cmd.Env = append(os.Environ(), mpiEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("compiled to use the rdtscp CPU instruction")) {
		t.Skipf("gmx_mpi refuses to run on this machine: built to use rdtscp, which this CPU's CPUID does not report (the program cannot run untraced either)")
	}
}

// gmxReplicaExchange runs two simulations of the water box in dir at 300 K
// and 300.5 K (mdrun -multidir, two ranks each, domain decomposition and
// PME on both) that try to exchange their states every 20 steps, untraced
// and traced. The exchanges' random numbers come from -reseed, so both runs
// accept the same ones: their final states (each directory's confout.gro)
// and energies must be the same. The two simulations are communicators
// split from world, {0, 1} and {2, 3}; the exchanges go between their
// masters, ranks 0 and 2, on a communicator of their own (made from a
// group of world): each accepted exchange swaps the coordinates and
// velocities of all atoms (2 × 5088 × 12 bytes) besides a few scalars, and
// nothing else goes between the simulations.
func gmxReplicaExchange(t *testing.T, m mpiImpl, dir, gmxMPI string) {
	mdp, err := os.ReadFile(filepath.Join(dir, "water.mdp"))
	if err != nil {
		t.Fatal(err)
	}
	for i, temp := range []string{"300", "300.5"} {
		d := filepath.Join(dir, "sim"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^ref_t\s*=.*$`).ReplaceAll(mdp, []byte("ref_t = "+temp))
		if err := os.WriteFile(filepath.Join(d, "water.mdp"), m, 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, d, nil, time.Minute, "gmx", "grompp", "-f", "water.mdp", "-c", "../conf.gro", "-p", "../water.top", "-o", "topol.tpr")
	}
	mdrun := func(launcher string, args ...string) string {
		d := t.TempDir()
		for i := 0; i < 2; i++ {
			sim := "sim" + strconv.Itoa(i)
			tpr, err := os.ReadFile(filepath.Join(dir, sim, "topol.tpr"))
			if err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(d, sim), 0o755)
			if err := os.WriteFile(filepath.Join(d, sim, "topol.tpr"), tpr, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a := append(append(append(args, "-np", "4"), m.args...), gmxMPI, "mdrun", "-multidir", "sim0", "sim1",
			"-replex", "20", "-reseed", "7", "-reprod", "-dlb", "no", "-ntomp", "1")
		run(t, d, nil, 2*time.Minute, launcher, a...)
		return d
	}
	untraced := mdrun(m.mpirun)
	traced := mdrun(filepath.Join(root, "bin", "dtrun"), "--mpirun", m.mpirun)
	var exchanges int
	for i := 0; i < 2; i++ {
		sim := "sim" + strconv.Itoa(i)
		read := func(d, f string) string {
			b, err := os.ReadFile(filepath.Join(d, sim, f))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if read(traced, "confout.gro") != read(untraced, "confout.gro") {
			t.Errorf("%s: the final state (confout.gro) differs from the untraced run's", sim)
		}
		log := read(traced, "md.log")
		if want, got := gmxEnergiesRE.FindAllString(read(untraced, "md.log"), -1), gmxEnergiesRE.FindAllString(log, -1); len(want) < 3 || !slices.Equal(got, want) {
			t.Errorf("%s: md.log's energies differ from the untraced run's", sim)
		}
		exchanges = strings.Count(log, "\nRepl ex  0 x  1")
	}
	if exchanges == 0 {
		t.Fatal("no exchange accepted: nothing to check")
	}
	// The traces are written where mdrun started, not in the
	// simulations' directories it moves to.
	r := checkRealReport(t, traced, false, "gmx_mpi", "gmx_mpi", "MPI_Comm_split", "MPI_Comm_create", "MPI_Sendrecv", "MPI_Alltoall")
	iv := r.Intervals[0]
	var sims, masters int
	for _, c := range iv.CommMatrices {
		switch {
		case strings.HasPrefix(c.Comm, "split") && (slices.Equal(c.Ranks, []int{0, 1}) || slices.Equal(c.Ranks, []int{2, 3})):
			sims++
		case strings.HasPrefix(c.Comm, "create of world") && slices.Equal(c.Ranks, []int{0, 2}):
			masters++
			const state = 2 * 5088 * 12
			for _, d := range [][2]int{{0, 1}, {1, 0}} {
				if b := c.Bytes[d[0]][d[1]]; b < int64(exchanges*state) || b > int64(exchanges*(state+4096)) {
					t.Errorf("%s: %d bytes %d → %d for %d exchanges of %d bytes", c.Comm, b, c.Ranks[d[0]], c.Ranks[d[1]], exchanges, state)
				}
			}
		default:
			t.Errorf("traffic on %s %v", c.Comm, c.Ranks)
		}
	}
	if sims != 2 || masters != 1 {
		t.Errorf("communicators %+v: want traffic in each simulation and between the masters", iv.CommMatrices)
	}
	t.Logf("%d exchanges", exchanges)
}

// checkGMXTimers compares the time of iv's MPI calls under each function
// of gmxTimers with GROMACS's own accounting in md.log (log): per rank on
// average, over the PME ranks pme for "PME wait for PP", else over the
// ranks GROMACS's row counts (the PP ranks, or every rank).
func checkGMXTimers(t *testing.T, iv report.Interval, log string, pme []int) {
	t.Helper()
	acc := map[string][2]float64{}
	i := strings.Index(log, "R E A L   C Y C L E")
	if i < 0 {
		t.Fatal("md.log holds no time accounting")
	}
	for _, mm := range gmxAccountingRE.FindAllStringSubmatch(log[i:], -1) {
		n, _ := strconv.Atoi(mm[2])
		s, _ := strconv.ParseFloat(mm[3], 64)
		acc[strings.TrimSuffix(mm[1], " *")] = [2]float64{float64(n), s}
	}
	acc["PME wait for PP"] = [2]float64{float64(len(pme)), acc["PME wait for PP"][1]}
	got := map[string]float64{}
	for _, p := range iv.SRC {
		for _, f := range p.Stack {
			fn, _, _ := strings.Cut(f.Function, "+0x")
			if row, ok := gmxTimers[fn]; ok {
				for _, rk := range p.Ranks {
					got[row] += rk.ExeTime
				}
				break
			}
		}
	}
	var compared int
	for _, row := range gmxTimers {
		if row == "" {
			continue
		}
		a, ok := acc[row]
		if !ok || a[0] == 0 {
			if got[row] > 0 {
				t.Errorf("%.3f s of MPI calls for %q, which md.log does not time", got[row], row)
			}
			continue
		}
		compared++
		d := got[row] / a[0]
		t.Logf("%-20s GROMACS %.3f s, dtpa %.3f s (per rank, %d ranks)", row, a[1], d, int(a[0]))
		if diff := d - a[1]; diff > 0.2*a[1]+0.01 || -diff > 0.2*a[1]+0.01 {
			t.Errorf("%q: %.3f s per rank of MPI calls, GROMACS times %.3f s", row, d, a[1])
		}
	}
	if compared < 3 {
		t.Errorf("%d rows of GROMACS's accounting compared, want 3 at least: %v", compared, acc)
	}
}

// TestMeep traces testdata/apps/meep2d.py, a 2-D FDTD run with Meep
// (Debian's python3-meep-openmpi: Meep's C++ library under Python, its own
// MPI calls, no mpi4py), untraced and then under dtrun at 4 ranks, aligned
// and with injected skew. The fluxes and the energy it prints must be the
// untraced run's, digit for digit; the report clean, with the time
// stepping as interval 1. Its point-to-point traffic is the slabs' boundary
// exchange: MPI_Isend, MPI_Irecv and MPI_Waitsome, between neighbouring
// ranks only (0–1, 1–2, 2–3), at least one message each way a time step
// (4000 steps). Each rank's SendRecv Time in interval 1 must agree with
// Meep's own "1-1 communication" time, which brackets those calls with
// some bookkeeping: within 70–105 % and 10 ms (95 % here).
func TestMeep(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	if err := exec.Command(python, "-c", "import meep").Run(); err != nil {
		testenv.Missing(t, "Meep not installed (apt-get install python3-meep-openmpi python3-matplotlib)")
	}
	const script = "meep2d.py"
	dir := t.TempDir()
	copyPython(t, dir, script)
	results := func(out string) []string {
		res := meepResultRE.FindAllString(out, -1)
		if len(res) != 2 {
			t.Fatalf("no fluxes and energy in the program's output:\n%s", out)
		}
		return res
	}
	want := results(run(t, dir, nil, 2*time.Minute, m.mpirun, append(append([]string{"-np", "4"}, m.args...), python, script)...))
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			dir := t.TempDir()
			env := skewEnv(nil, skew)
			out := tracePython(t, m, dir, env, 4, script)
			if got := results(out); !slices.Equal(got, want) {
				t.Errorf("results %q, untraced %q", got, want)
			}
			if skew {
				checkSkew(t, dir, "python3", 4, injected)
			}
			r, stderr := analyse(t, dir, "python3")
			checkClean(t, r, stderr, skew, 2)
			steps := r.Intervals[1]
			for _, fn := range []string{"MPI_Isend", "MPI_Irecv", "MPI_Waitsome", "MPI_Allreduce"} {
				if f := function(&steps, fn); f == nil || f.Calls == 0 {
					t.Errorf("interval 1 has no %s", fn)
				}
			}
			if steps.Main.SendNumber < 6*4000 || steps.Main.SendNumber != steps.Main.ReceiveNumber {
				t.Errorf("interval 1: %d sends, %d receives; want as many, 6 × 4000 at least", steps.Main.SendNumber, steps.Main.ReceiveNumber)
			}
			if steps.CommMatrix == nil {
				t.Fatal("no communication matrix")
			}
			for s, row := range steps.CommMatrix.Messages {
				for d, n := range row {
					if near := s-d == 1 || d-s == 1; near && n < 4000 || !near && n != 0 {
						t.Errorf("interval 1: %d messages %d → %d", n, s, d)
					}
				}
			}
			own := meepOneRE.FindStringSubmatch(out)
			if own == nil {
				t.Fatalf("no Meep timing in the program's output:\n%s", out)
			}
			for _, rk := range steps.Ranks {
				meep, _ := strconv.ParseFloat(strings.Fields(own[1])[rk.Rank], 64)
				t.Logf("rank %d: Meep's 1-1 communication %.3f s, dtpa's SendRecv Time %.3f s", rk.Rank, meep, rk.SendRecvTime)
				if rk.SendRecvTime > 1.05*meep+0.01 || rk.SendRecvTime < 0.7*meep-0.01 {
					t.Errorf("rank %d: SendRecv Time %.3f s, Meep's 1-1 communication %.3f s", rk.Rank, rk.SendRecvTime, meep)
				}
			}
		})
	}
}

var (
	meepResultRE = regexp.MustCompile(`meep: (flux|energy) .*`)
	meepOneRE    = regexp.MustCompile(`meep: one ((?:[0-9.]+ ?){4})\n`)
)

// TestExaML traces ExaML (Debian's examl: maximum-likelihood phylogeny,
// Open MPI) on an alignment the test makes: 16 taxa that evolve down a
// balanced tree from one random sequence of 3000 nucleotides, 5 % of the
// sites mutating on each branch, searched from a caterpillar starting tree.
// /usr/bin/examl is a script that runs mpirun itself, so dtrun is given the
// program it runs (the SSE2 build: any x86-64 runs it). Untraced and
// traced, aligned and with injected skew, the best tree and its likelihood
// must be the same, byte for byte; the report clean. ExaML's fine-grain
// parallelism splits the alignment's sites among the ranks, each
// likelihood evaluation an MPI_Reduce of the ranks' partial sums and an
// MPI_Bcast of the next step, so every rank makes the same calls: no
// point-to-point message, and as many MPI_Reduce and MPI_Bcast as any
// other rank, thousands of each.
func TestExaML(t *testing.T) {
	m := impls[0]
	needMPI(t, m)
	const exe = "/usr/lib/examl/bin/examl-sse2"
	testenv.NeedCommands(t, "parse-examl")
	if _, err := os.Stat(exe); err != nil {
		testenv.Missing(t, exe+" missing (apt-get install examl)")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "aln.phy"), examlAlignment(16, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	var tree string
	for i := 15; i >= 2; i-- {
		if tree == "" {
			tree = fmt.Sprintf("t%04b", i)
		} else {
			tree = fmt.Sprintf("(t%04b,%s)", i, tree)
		}
	}
	tree = "(t0000,t0001," + tree + ");\n"
	if err := os.WriteFile(filepath.Join(dir, "start.tree"), []byte(tree), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, nil, time.Minute, "parse-examl", "-s", "aln.phy", "-m", "DNA", "-n", "aln")
	examl := func(env []string, launcher string, args ...string) (string, []byte) {
		d := t.TempDir()
		a := append(append(args, "-np", "4"), m.args...)
		out := run(t, d, env, 2*time.Minute, launcher, append(a, exe, "-s", filepath.Join(dir, "aln.binary"), "-t", filepath.Join(dir, "start.tree"), "-m", "GAMMA", "-n", "x")...)
		lik := examlLikelihoodRE.FindString(out)
		if lik == "" {
			t.Fatalf("no likelihood in ExaML's output:\n%s", out)
		}
		tree, err := os.ReadFile(filepath.Join(d, "ExaML_result.x"))
		if err != nil {
			t.Fatal(err)
		}
		return d, append([]byte(lik+"\n"), tree...)
	}
	_, want := examl(nil, m.mpirun)
	for _, skew := range []bool{false, true} {
		t.Run(skewName(skew), func(t *testing.T) {
			env := skewEnv(nil, skew)
			d, got := examl(env, filepath.Join(root, "bin", "dtrun"), "--mpirun", m.mpirun)
			if !bytes.Equal(got, want) {
				t.Errorf("best tree and likelihood\n%s\nuntraced\n%s", got, want)
			}
			r := checkRealReport(t, d, skew, "examl-sse2", "examl-sse2", "MPI_Reduce", "MPI_Bcast", "MPI_Allreduce", "MPI_Barrier")
			iv := r.Intervals[0]
			if iv.Main.SendNumber+iv.Main.ReceiveNumber != 0 {
				t.Errorf("%d sends, %d receives in a program of collectives", iv.Main.SendNumber, iv.Main.ReceiveNumber)
			}
			for _, fn := range []string{"MPI_Reduce", "MPI_Bcast"} {
				f := function(&iv, fn)
				if f == nil || f.Calls < 4*1000 || len(f.Ranks) != 4 {
					t.Fatalf("%s: %+v, want thousands of calls on each rank", fn, f)
				}
				for _, rk := range f.Ranks {
					if rk.Calls != f.Calls/4 {
						t.Errorf("%s: rank %d made %d calls of %d", fn, rk.Rank, rk.Calls, f.Calls)
					}
				}
			}
		})
	}
}

var examlLikelihoodRE = regexp.MustCompile(`Likelihood of best tree: -[0-9.]+`)

// examlAlignment is a PHYLIP alignment of n taxa (a power of 2), named by
// their path down a balanced tree (t0000 … t1111 for 16), of sites
// nucleotides: one random sequence mutated down the tree, each site of a
// child drawn anew with probability 0.05. The seed is fixed.
func examlAlignment(n, sites int) []byte {
	rng := rand.New(rand.NewSource(3))
	const acgt = "ACGT"
	seq := make([]byte, sites)
	for i := range seq {
		seq[i] = acgt[rng.Intn(4)]
	}
	depth := bits.Len(uint(n)) - 1
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %d\n", n, sites)
	var grow func(s []byte, level int, name string)
	grow = func(s []byte, level int, name string) {
		if level == depth {
			fmt.Fprintf(&b, "%-10s %s\n", name, s)
			return
		}
		for _, c := range "01" {
			child := slices.Clone(s)
			for i := range child {
				if rng.Float64() < 0.05 {
					child[i] = acgt[rng.Intn(4)]
				}
			}
			grow(child, level+1, name+string(c))
		}
	}
	grow(seq, 0, "t")
	return b.Bytes()
}
