package tracer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

var (
	nsRE    = regexp.MustCompile(`ns_per_call=([0-9.]+)`)
	finRE   = regexp.MustCompile(`finalize_ns=([0-9.]+)`)
	pairRE  = regexp.MustCompile(`clock_pair_ns=([0-9.]+)`)
	stallRE = regexp.MustCompile(`max flush stall (\d+) ns, mean (\d+) ns over (\d+) flushes`)
	encRE   = regexp.MustCompile(`encoder CPU (\d+) ns`)
	auxRE   = regexp.MustCompile(`encoder sleeps (\d+) \((\d+) idle\); aux CPU (\d+) ns,(?: (\d+) wake-ups,)? (\d+) spill slots made(?: \((\d+) in hand-overs\))?`)
)

// BenchmarkOverhead measures the time an MPI call takes untraced and traced
// in the same benchmark run (2 ranks bound to one core each), at
// UserStackSize 1 and 4, and reports the difference (ns added per call), the
// bytes on disk per recorded call, and the longest stall of the program
// caused by handing a buffer over (footer message). A third run drops the
// buffers unread (DT_BENCH_DISCARD) and gives the cost of the C recording
// path alone (ns/call-added-C): the rest is the Go encoder and compressor,
// which under core binding share the rank's core. A fourth run keeps the
// wrappers but stops recording right after MPI_Init (DT_BENCH_BARE): what
// intercepting the calls alone costs on the machine state at hand
// (ns/call-added-bare), the floor under the C path (README, "What any
// interposer costs a ping-pong here"). The untraced run is repeated after
// the traced ones, and each iteration's figures are taken against the mean
// of the two; state-flips counts the iterations whose two untraced runs
// differ by more than a quarter (this machine switches between a fast and a
// slow state for the same code, README), whose added figures mean little.
// The poll case is an
// MPI_Iprobe that never finds a message: the tracer folds a run of them into
// one record (dt_rec_end_poll), so its B/call is per call made; testany
// likewise polls a pending receive with MPI_Testany of one request, as
// hpcc's RandomAccess does. %dropped is the share of
// calls the tracer dropped for want of a free buffer (README, "When the
// encoder cannot keep up"): B/call is per recorded call. ms-finalize-added
// is how much longer the traced MPI_Finalize took (rank 0): the encoding of
// what was still queued is written there. enc-ns/event is the encoder
// thread's CPU time per recorded event (footer), which under core binding
// the ranks' cores pay. ns/clock-pair is what two back-to-back reads of the
// TSC cost in the untraced run, both ranks reading at once: the tracer
// reads it at each call's entry and exit, so that this is the floor of
// ns/call-added on the machine at hand (it varies with the host's load
// more than the instructions around it do). aux-ns/event is the aux
// thread's CPU (spill slots made ahead of need, the epoch) per recorded
// event, enc-sleeps/flush how often the encoder slept per buffer handed
// over (each sleep is a wake-up later, on the rank's core), slots/rank the
// spill slots made per rank (each ~0.1 ms of CPU), slots-handover/rank
// those of them a program thread made in a hand-over, the aux thread having
// fallen behind, and aux-wakeups/rank the aux thread's wake-ups (these two
// from footers that say so). The -min/-max of aux-ns/event and slots/rank
// are the spread of the iterations' figures, and max-stall-ns-min the
// smallest of the iterations' longest stalls (one outlier or every run).
//
// With DTPA_BENCH_BASE=<another checkout, built> each iteration also runs
// that checkout's dtrun right after this one's, so that a change is
// compared with its base on the same machine state; its metrics carry the
// suffix -base. DTPA_BENCH_BASE_ENV adds variables (space-separated
// NAME=value) to the base's runs.
// The -min/-max metrics are the spread over the iterations.
//
//	flock /tmp/dtpa-bench.lock go test -run '^$' -bench Overhead -benchtime 3x ./tracer/
func BenchmarkOverhead(b *testing.B) {
	iters := map[string]string{"pingpong": "100000", "barrier": "50000", "allreduce": "50000", "cheap": "1000000", "poll": "1000000", "testany": "1000000"}
	type tree struct {
		suffix, root string
		env          []string
	}
	trees := []tree{{"", root, nil}}
	if base := os.Getenv("DTPA_BENCH_BASE"); base != "" {
		trees = append(trees, tree{"-base", base, strings.Fields(os.Getenv("DTPA_BENCH_BASE_ENV"))})
	}
	for _, mode := range []string{"pingpong", "barrier", "allreduce", "cheap", "poll", "testany"} {
		for _, depth := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/depth%d", mode, depth), func(b *testing.B) {
				prog := build(b, "bench", ompi)
				args := []string{"-np", "2", "--bind-to", "core", prog, mode, iters[mode]}
				env := []string{"UserStackSize=" + strconv.Itoa(depth), "MaxTraceSize=0"}
				var plain, plainFin, pair []float64
				flips := 0
				ms := make([]overheadRuns, len(trees))
				for i := 0; i < b.N; i++ {
					p := run(b, b.TempDir(), nil, "mpirun.openmpi", args...)
					pv, pf := benchFigures(b, p.out)
					if m := pairRE.FindStringSubmatch(p.out); m != nil {
						v, _ := strconv.ParseFloat(m[1], 64)
						pair = append(pair, v)
					}
					type runs struct{ traced, c, bare string }
					outs := make([]runs, len(trees))
					dirs := make([]string, len(trees))
					for j := range trees {
						k := j
						if i%2 == 1 { // the builds take turns in running first
							k = len(trees) - 1 - j
						}
						tr := trees[k]
						dtrun := filepath.Join(tr.root, "bin", "dtrun")
						dirs[k] = b.TempDir()
						tenv := append(env[:len(env):len(env)], tr.env...)
						outs[k].traced = run(b, dirs[k], tenv, dtrun, args...).out
						outs[k].c = run(b, b.TempDir(), append(tenv, "DT_BENCH_DISCARD=1"), dtrun, args...).out
						outs[k].bare = run(b, b.TempDir(), append(tenv, "DT_BENCH_BARE=1"), dtrun, args...).out
					}
					pv2, pf2 := benchFigures(b, run(b, b.TempDir(), nil, "mpirun.openmpi", args...).out)
					if max(pv, pv2) > 1.25*min(pv, pv2) {
						flips++
					}
					pv, pf = (pv+pv2)/2, (pf+pf2)/2
					plain, plainFin = append(plain, pv), append(plainFin, pf)
					for k := range trees {
						tv, tf := benchFigures(b, outs[k].traced)
						cv, _ := benchFigures(b, outs[k].c)
						bv, _ := benchFigures(b, outs[k].bare)
						ms[k].added = append(ms[k].added, tv-pv)
						ms[k].addedC = append(ms[k].addedC, cv-pv)
						ms[k].addedBare = append(ms[k].addedBare, bv-pv)
						ms[k].traced = append(ms[k].traced, tv)
						ms[k].fin = append(ms[k].fin, tf-pf)
						ms[k].footers(b, dirs[k])
						ms[k].spread()
					}
				}
				b.ReportMetric(mean(plain), "ns/call-untraced")
				b.ReportMetric(mean(plainFin)/1e6, "ms-finalize-untraced")
				b.ReportMetric(slices.Min(plain), "ns/call-untraced-min")
				b.ReportMetric(slices.Max(plain), "ns/call-untraced-max")
				b.ReportMetric(float64(flips), "state-flips")
				if len(pair) > 0 {
					b.ReportMetric(mean(pair), "ns/clock-pair")
				}
				for k, tr := range trees {
					m := ms[k]
					sfx := tr.suffix
					b.ReportMetric(mean(m.traced), "ns/call-traced"+sfx)
					b.ReportMetric(mean(m.added), "ns/call-added"+sfx)
					b.ReportMetric(slices.Min(m.added), "ns/call-added-min"+sfx)
					b.ReportMetric(slices.Max(m.added), "ns/call-added-max"+sfx)
					b.ReportMetric(mean(m.addedC), "ns/call-added-C"+sfx)
					b.ReportMetric(mean(m.addedBare), "ns/call-added-bare"+sfx)
					b.ReportMetric(slices.Max(m.fin)/1e6, "ms-finalize-added-max"+sfx)
					b.ReportMetric(mean(m.fin)/1e6, "ms-finalize-added"+sfx)
					b.ReportMetric(m.bytes/m.events, "B/call"+sfx)
					b.ReportMetric(100*m.dropped/(m.events+m.dropped), "%dropped"+sfx)
					b.ReportMetric(m.stall, "max-stall-ns"+sfx)
					b.ReportMetric(slices.Min(m.stallIter), "max-stall-ns-min"+sfx)
					if m.encEvents > 0 {
						b.ReportMetric(m.encNs/m.encEvents, "enc-ns/event"+sfx)
					}
					if m.flushes > 0 {
						b.ReportMetric(m.stallSum/m.flushes, "mean-stall-ns"+sfx)
					}
					if m.auxEvents > 0 {
						b.ReportMetric(m.auxNs/m.auxEvents, "aux-ns/event"+sfx)
					}
					if m.auxFlushes > 0 {
						b.ReportMetric(m.sleeps/m.auxFlushes, "enc-sleeps/flush"+sfx)
					}
					if m.auxRanks > 0 {
						b.ReportMetric(m.slots/m.auxRanks, "slots/rank"+sfx)
					}
					if len(m.auxIter) > 0 {
						b.ReportMetric(slices.Min(m.auxIter), "aux-ns/event-min"+sfx)
						b.ReportMetric(slices.Max(m.auxIter), "aux-ns/event-max"+sfx)
						b.ReportMetric(slices.Min(m.slotsIter), "slots/rank-min"+sfx)
						b.ReportMetric(slices.Max(m.slotsIter), "slots/rank-max"+sfx)
					}
					if m.hoRanks > 0 {
						b.ReportMetric(m.hoSlots/m.hoRanks, "slots-handover/rank"+sfx)
						b.ReportMetric(m.wakeups/m.hoRanks, "aux-wakeups/rank"+sfx)
					}
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkCriticalPath measures, untraced, what k steps of work cost a
// 0-byte ping-pong (2 ranks bound to cores) when each rank runs them right
// before its sends (ns/call-added-kN-before) or right after them
// (-after): bench's BENCH_WORK. A tool's per-call work that sits between a
// receive's completion and the next send lengthens the round trip; work
// after the send overlaps the message's flight. On a machine whose cores
// exchange cache lines slowly the first few ns before a send cost several
// times their own duration (README, "What any interposer costs a
// ping-pong here"), and this benchmark shows how much on the machine at
// hand, next to BenchmarkOverhead's ns/call-added-bare.
//
//	flock /tmp/dtpa-bench.lock go test -run '^$' -bench CriticalPath -benchtime 3x ./tracer/
func BenchmarkCriticalPath(b *testing.B) {
	prog := build(b, "bench", ompi)
	args := []string{"-np", "2", "--bind-to", "core", prog, "pingpong", "100000"}
	steps := []int{2, 8, 32}
	added := map[string][]float64{}
	var plain []float64
	for i := 0; i < b.N; i++ {
		p0, _ := benchFigures(b, run(b, b.TempDir(), nil, "mpirun.openmpi", args...).out)
		cur := map[string]float64{}
		for _, k := range steps {
			for _, after := range []string{"0", "1"} {
				env := []string{"BENCH_WORK=" + strconv.Itoa(k), "BENCH_WORK_AFTER=" + after}
				v, _ := benchFigures(b, run(b, b.TempDir(), env, "mpirun.openmpi", args...).out)
				name := fmt.Sprintf("k%d-before", k)
				if after == "1" {
					name = fmt.Sprintf("k%d-after", k)
				}
				cur[name] = v
			}
		}
		p1, _ := benchFigures(b, run(b, b.TempDir(), nil, "mpirun.openmpi", args...).out)
		pv := (p0 + p1) / 2
		plain = append(plain, pv)
		for name, v := range cur {
			added[name] = append(added[name], v-pv)
		}
	}
	b.ReportMetric(mean(plain), "ns/call-untraced")
	for name, v := range added {
		b.ReportMetric(mean(v), "ns/call-added-"+name)
	}
	b.ReportMetric(0, "ns/op")
}

// overheadRuns collects one tracer build's figures over the iterations.
type overheadRuns struct {
	added, addedC, addedBare, traced, fin            []float64
	bytes, events, dropped, stall, stallSum, flushes float64
	encNs, encEvents                                 float64    // encoder CPU and the events of the traces that report it
	auxNs, auxEvents, sleeps, auxFlushes             float64    // aux CPU, encoder sleeps, and the events and flushes of the traces that report them
	slots, auxRanks, wakeups, hoSlots, hoRanks       float64    // spill slots made, aux wake-ups and slots made in hand-overs, and the ranks that report them
	auxIter, slotsIter                               []float64  // per iteration: aux ns per event, slots per rank
	auxMark                                          [3]float64 // auxNs, auxEvents, slots when the iteration began (spread)
	ranksMark, iterStall                             float64    // auxRanks when the iteration began; the iteration's longest stall
	stallIter                                        []float64  // per iteration: the longest stall
}

// spread notes the iteration just read (footers) in auxIter, slotsIter and
// stallIter.
func (m *overheadRuns) spread() {
	ns, ev, sl, rk := m.auxNs-m.auxMark[0], m.auxEvents-m.auxMark[1], m.slots-m.auxMark[2], m.auxRanks-m.ranksMark
	if ev > 0 && rk > 0 {
		m.auxIter = append(m.auxIter, ns/ev)
		m.slotsIter = append(m.slotsIter, sl/rk)
	}
	m.stallIter = append(m.stallIter, m.iterStall)
	m.iterStall = 0
	m.auxMark = [3]float64{m.auxNs, m.auxEvents, m.slots}
	m.ranksMark = m.auxRanks
}

// footers reads the two ranks' traces in dir: size, calls, drops and the
// hand-over stalls the footer reports.
func (m *overheadRuns) footers(b *testing.B, dir string) {
	for r := 0; r < 2; r++ {
		path := filepath.Join(dir, "bench."+strconv.Itoa(r)+".trc")
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		t := readTrace(b, path)
		if t.footer.GetStopReason() != tracepb.Footer_FINALIZE {
			b.Fatalf("rank %d: footer %v", r, t.footer)
		}
		m.bytes += float64(st.Size())
		for _, e := range t.events { // a folded event stands for Calls calls
			m.events += float64(max(1, e.Calls))
		}
		if s := encRE.FindStringSubmatch(t.footer.Message); s != nil {
			v, _ := strconv.ParseFloat(s[1], 64)
			m.encNs += v
			m.encEvents += float64(len(t.events))
		}
		m.dropped += float64(t.footer.GetDroppedEvents())
		if s, f := auxRE.FindStringSubmatch(t.footer.Message), stallRE.FindStringSubmatch(t.footer.Message); s != nil && f != nil {
			sl, _ := strconv.ParseFloat(s[1], 64)
			ns, _ := strconv.ParseFloat(s[3], 64)
			k, _ := strconv.ParseFloat(f[3], 64)
			m.sleeps += sl
			m.auxNs += ns
			m.auxEvents += float64(len(t.events))
			m.auxFlushes += k
			v, _ := strconv.ParseFloat(s[5], 64)
			m.slots += v
			m.auxRanks++
			if s[4] != "" && s[6] != "" {
				w, _ := strconv.ParseFloat(s[4], 64)
				v, _ := strconv.ParseFloat(s[6], 64)
				m.wakeups += w
				m.hoSlots += v
				m.hoRanks++
			}
		}
		if s := stallRE.FindStringSubmatch(t.footer.Message); s != nil {
			v, _ := strconv.ParseFloat(s[1], 64)
			m.stall = max(m.stall, v)
			m.iterStall = max(m.iterStall, v)
			mean, _ := strconv.ParseFloat(s[2], 64)
			k, _ := strconv.ParseFloat(s[3], 64)
			m.stallSum += mean * k
			m.flushes += k
		}
	}
}

// benchFigures reads the bench program's ns per call and MPI_Finalize time.
func benchFigures(b *testing.B, out string) (nsPerCall, finalizeNs float64) {
	m, f := nsRE.FindStringSubmatch(out), finRE.FindStringSubmatch(out)
	if m == nil || f == nil {
		b.Fatalf("no measurement:\n%s", out)
	}
	nsPerCall, _ = strconv.ParseFloat(m[1], 64)
	finalizeNs, _ = strconv.ParseFloat(f[1], 64)
	return nsPerCall, finalizeNs
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
