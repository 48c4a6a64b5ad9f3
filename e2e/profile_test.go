package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// Constants of testdata/apps/profile.c.
const (
	profGaps = 11 // MPI_Comm_rank calls per rank in interval 1
	profRing = 8  // rounds of three MPI_Sendrecv in interval 2
)

// profSelfRE reads profile.c's own timing of its gaps.
var profSelfRE = regexp.MustCompile(`profile: rank (\d+): (\d+) gaps, median ([0-9.]+) s, mean ([0-9.]+) s`)

// TestProfileKnown traces testdata/apps/profile.c at 4 ranks under both
// MPIs, aligned and with injected clock skew, and checks the profile
// views against the construction: the call counts per function, the
// matrices per communicator and overall, the message size classes and
// the node traffic exactly; each rank's gaps against the program's own
// timing of them. One host holds every rank here, so all traffic is
// intra-node; the grouping of ranks by host over several hosts is tested
// on synthetic traces (analyzer.TestProfileViews).
func TestProfileKnown(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			exe := compile(t, m, t.TempDir(), "profile")
			for _, skew := range []bool{false, true} {
				name, env := "aligned", []string(nil)
				if skew {
					name, env = "skewed", []string{"DT_CLOCK_SKEW=" + clockSkew}
				}
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					if err := os.Link(exe, filepath.Join(dir, "profile")); err != nil {
						t.Fatal(err)
					}
					out := trace(t, m, dir, env, 4, "profile")
					if skew {
						checkSkew(t, dir, "profile", 4, injected)
					}
					r, _ := analyse(t, dir, "profile")
					checkInvariants(t, r, 4)
					checkProfileKnown(t, r, out)
				})
			}
		})
	}
}

func checkProfileKnown(t *testing.T, r *report.Report, out string) {
	t.Helper()
	host, _ := os.Hostname()
	if want := []report.Host{{Host: host, Ranks: []int{0, 1, 2, 3}}}; !reflect.DeepEqual(r.Hosts, want) {
		t.Errorf("hosts %+v, want %+v", r.Hosts, want)
	}
	byPath := map[string]*report.Interval{}
	for i := range r.Intervals {
		byPath[fmt.Sprint(r.Intervals[i].Path)] = &r.Intervals[i]
	}
	grain, ring := byPath["[1]"], byPath["[2]"]
	if grain == nil || ring == nil {
		t.Fatalf("intervals [1] and [2] missing: %v", byPath)
	}

	// Interval 1: MPI_Comm_rank only, profGaps calls per rank, each
	// ending one gap (the first starts at MPI_Pcontrol's exit).
	checkOnlyFunction(t, grain, "MPI_Comm_rank", profGaps)
	self := map[int][2]float64{}
	for _, m := range profSelfRE.FindAllStringSubmatch(out, -1) {
		rk, _ := strconv.Atoi(m[1])
		med, _ := strconv.ParseFloat(m[3], 64)
		mean, _ := strconv.ParseFloat(m[4], 64)
		self[rk] = [2]float64{med, mean}
	}
	if len(self) != 4 {
		t.Fatalf("self-timing of %d ranks in the output, want 4:\n%s", len(self), out)
	}
	for _, rk := range grain.Ranks {
		st := self[rk.Rank]
		intended := float64(rk.Rank+1) * 0.010
		t.Logf("rank %d: gap median %.6f s (self-timed %.6f, intended %.3f), mean %.6f s (self-timed %.6f)",
			rk.Rank, rk.GapMedian, st[0], intended, rk.GapMean, st[1])
		if rk.Gaps != profGaps {
			t.Errorf("rank %d: %d gaps, want %d", rk.Rank, rk.Gaps, profGaps)
		}
		// dtpa's gap runs from the tracer's exit timestamp to its entry
		// timestamp, the program's from the return to the call: a few
		// µs more, and the median is estimated within 1/32.
		if d := rk.GapMedian - st[0]; d < -st[0]/32 || d > st[0]/32+0.002 {
			t.Errorf("rank %d: gap median %.6f s, self-timed %.6f s", rk.Rank, rk.GapMedian, st[0])
		}
		if d := rk.GapMean - st[1]; d < -1e-5 || d > 0.002 {
			t.Errorf("rank %d: gap mean %.6f s, self-timed %.6f s", rk.Rank, rk.GapMean, st[1])
		}
		// A sleep never returns early.
		if rk.GapMedian < intended*(1-1.0/32) {
			t.Errorf("rank %d: gap median %.6f s below the %.3f s slept", rk.Rank, rk.GapMedian, intended)
		}
	}

	// Interval 2: the ring, exactly.
	checkOnlyFunction(t, ring, "MPI_Sendrecv", 3*profRing)
	n := int64(profRing)
	msgs, bytes := make([][]int64, 4), make([][]int64, 4)
	world, dup := matrix(4), matrix(4)
	half := [2]report.CommMatrixOn{
		{Comm: "split of world", Size: 2, Ranks: []int{0, 2}, Messages: [][]int64{{0, n}, {n, 0}}, Bytes: [][]int64{{0, 400 * n}, {400 * n, 0}}},
		{Comm: "split of world", Size: 2, Ranks: []int{1, 3}, Messages: [][]int64{{0, n}, {n, 0}}, Bytes: [][]int64{{0, 400 * n}, {400 * n, 0}}},
	}
	for s := 0; s < 4; s++ {
		msgs[s], bytes[s] = make([]int64, 4), make([]int64, 4)
		right, left, partner := (s+1)%4, (s+3)%4, (s+2)%4
		world.Messages[s][right], world.Bytes[s][right] = n, 1000*n
		dup.Messages[s][left], dup.Bytes[s][left] = n, 4096*n
		msgs[s][right] += n
		bytes[s][right] += 1000 * n
		msgs[s][left] += n
		bytes[s][left] += 4096 * n
		msgs[s][partner] += n
		bytes[s][partner] += 400 * n
	}
	if want := (&report.CommMatrix{Messages: msgs, Bytes: bytes}); !reflect.DeepEqual(ring.CommMatrix, want) {
		t.Errorf("comm matrix %+v, want %+v", ring.CommMatrix, want)
	}
	world.Comm, dup.Comm = "world", "dup of world"
	wantOn := []report.CommMatrixOn{world, dup, half[0], half[1]}
	if !reflect.DeepEqual(ring.CommMatrices, wantOn) {
		t.Errorf("comm matrices %+v, want %+v", ring.CommMatrices, wantOn)
	}
	total := report.Volume{Messages: 12 * n, Bytes: 4 * n * (1000 + 4096 + 400)}
	if want := (&report.Traffic{IntraNode: total}); !reflect.DeepEqual(ring.Traffic, want) {
		t.Errorf("traffic %+v, want %+v (one host: all of it intra-node)", ring.Traffic, want)
	}
	classes := []report.SizeBin{
		{MinBytes: 256, MaxBytes: 511, Messages: 4 * n, Bytes: 4 * 400 * n},
		{MinBytes: 512, MaxBytes: 1023, Messages: 4 * n, Bytes: 4 * 1000 * n},
		{MinBytes: 4096, MaxBytes: 8191, Messages: 4 * n, Bytes: 4 * 4096 * n},
	}
	if len(ring.MessageSizes) != len(classes) {
		t.Fatalf("message sizes %+v, want the classes %+v", ring.MessageSizes, classes)
	}
	for i, c := range ring.MessageSizes {
		w := classes[i]
		if c.MinBytes != w.MinBytes || c.MaxBytes != w.MaxBytes || c.Messages != w.Messages || c.Bytes != w.Bytes {
			t.Errorf("message size class %d: %+v, want %+v", i, c, w)
		}
		// Latency: from the send's entry to the receiving call's exit
		// on the corrected clock, never negative.
		if c.Latency < 0 || c.Latency > 1 || (c.Latency > 0 && math.Abs(c.Throughput-float64(c.Bytes)/(c.Latency*float64(c.Messages))) > 1e-6*c.Throughput) {
			t.Errorf("message size class %d: latency %.9f s, throughput %g B/s", i, c.Latency, c.Throughput)
		}
	}
}

func matrix(n int) report.CommMatrixOn {
	m := report.CommMatrixOn{Size: n, Messages: make([][]int64, n), Bytes: make([][]int64, n)}
	for i := range n {
		m.Ranks = append(m.Ranks, i)
		m.Messages[i], m.Bytes[i] = make([]int64, n), make([]int64, n)
	}
	return m
}

// checkOnlyFunction checks that iv's only MPI function is fn, called
// perRank times by each of the 4 ranks, and that each rank's call mix is
// that function alone.
func checkOnlyFunction(t *testing.T, iv *report.Interval, fn string, perRank int64) {
	t.Helper()
	if len(iv.Functions) != 1 || iv.Functions[0].Function != fn || iv.Functions[0].Calls != 4*perRank {
		t.Errorf("interval %v: functions %+v, want %s only, %d calls", iv.Path, iv.Functions, fn, 4*perRank)
	}
	for _, rk := range iv.Ranks {
		if len(rk.CallMix) != 1 || rk.CallMix[0].Function != fn || rk.CallMix[0].Calls != perRank ||
			rk.CallMix[0].CallShare != 1 || rk.CallMix[0].TimeShare != 1 {
			t.Errorf("interval %v rank %d: call mix %+v, want %s only, %d calls", iv.Path, rk.Rank, rk.CallMix, fn, perRank)
		}
	}
}
