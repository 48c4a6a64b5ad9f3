package analyzer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dtpa/dtpa/traceformat/tracetest"
)

// collSink keeps, by rank, the ties of calls to collective instances in
// call order: the instances each call joined (Coll, More), then those it
// completed (Done).
type collSink struct{ got [][]sinkTie }

type sinkTie struct {
	coll uint64
	done bool
}

func (s *collSink) Start(ranks int) { s.got = make([][]sinkTie, ranks) }
func (s *collSink) Call(rank int, c *TimelineCall) {
	if c.Coll != 0 {
		s.got[rank] = append(s.got[rank], sinkTie{coll: c.Coll})
	}
	for _, h := range c.More {
		s.got[rank] = append(s.got[rank], sinkTie{coll: h})
	}
	for _, h := range c.Done {
		s.got[rank] = append(s.got[rank], sinkTie{coll: h, done: true})
	}
}
func (s *collSink) Span(int, *TimelineSpan) {}

// TestRandomCollectives: random sequences of blocking collectives
// (MPI_Barrier, MPI_Allreduce, MPI_Bcast and MPI_Reduce from random roots)
// and nonblocking ones (MPI_Ibarrier, MPI_Ibcast, completed by MPI_Wait:
// Potential Sync at the wait, §8.5)
// over MPI_COMM_WORLD, a communicator of all ranks in reverse order and
// one of all but the last rank, each rank entering each call at a random
// time and leaving it at a random time after the last member entered.
// Every member's k-th call on a communicator joins one instance, the
// start of a nonblocking one as a blocking one, and the wait completing a
// start is tied to the start's instance (the timeline sink's Coll and
// Done), and each rank's Potential Sync and Time Variation are those of
// docs/characteristics.md §3.4–3.5 summed by hand: the latest entry less
// its own, the latest exit less its own, whatever the collective's shape
// (DVM's; Scalasca's patterns only split it). With 1, 2 and 4 workers, and
// through analyzeOpts (invariants, the distributed replay).
func TestRandomCollectives(t *testing.T) {
	for seed := range 30 {
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		n := 2 + rng.IntN(4)
		run, ranks := start(n)
		rev := make([]int, n)
		for i := range rev {
			rev[i] = n - 1 - i
		}
		comms := []*tracetest.Comm{run.World(), run.NewComm(rev...), run.NewComm(rev[1:]...)}
		for _, c := range comms[1:] {
			for _, r := range c.Members {
				ranks[r].CommSplit(run.World(), c, us)
			}
		}
		for _, k := range ranks {
			k.At(ms)
		}
		ps, tv := make([]int64, n), make([]int64, n)
		// By rank, the operation (its index) each tie names, in call
		// order, and whether it completes it.
		wantInst, wantDone := make([][]int, n), make([][]bool, n)
		for op := range 40 {
			c := comms[rng.IntN(len(comms))]
			kind := rng.IntN(6)
			rootLocal := int32(rng.IntN(len(c.Members)))
			if kind >= 4 {
				// Nonblocking: each member starts it (1 µs), computes,
				// and completes it with MPI_Wait, which leaves after the
				// last start. Potential Sync at the wait: the last start
				// less the wait's entry, when positive; no Time
				// Variation.
				starts, waits := map[int]int64{}, map[int]int64{}
				lastStart := int64(0)
				for _, r := range c.Members {
					starts[r] = ranks[r].Now() + int64(1+rng.IntN(50))*us
					waits[r] = starts[r] + us + int64(rng.IntN(50))*us
					lastStart = max(lastStart, starts[r])
				}
				for _, r := range c.Members {
					k := ranks[r].At(starts[r])
					var q tracetest.Req
					if kind == 4 {
						q = k.Ibarrier(us, tracetest.On(c))
					} else {
						q = k.Ibcast(rootLocal, 8, us, tracetest.On(c))
					}
					k.At(waits[r]).Wait(q, max(waits[r], lastStart)+int64(1+rng.IntN(20))*us-waits[r])
					ps[r] += max(0, lastStart-waits[r])
					wantInst[r] = append(wantInst[r], op, op)
					wantDone[r] = append(wantDone[r], false, true)
				}
				continue
			}
			entry := map[int]int64{}
			last := int64(0)
			for _, r := range c.Members {
				e := ranks[r].Now() + int64(1+rng.IntN(50))*us
				entry[r] = e
				last = max(last, e)
			}
			exits := map[int]int64{}
			lastExit := int64(0)
			for _, r := range c.Members {
				x := last + int64(1+rng.IntN(20))*us
				exits[r] = x
				lastExit = max(lastExit, x)
			}
			for _, r := range c.Members {
				k := ranks[r].At(entry[r])
				dur := exits[r] - entry[r]
				randomColl(k, kind, rootLocal, dur, tracetest.On(c))
				ps[r] += last - entry[r]
				tv[r] += lastExit - exits[r]
				wantInst[r] = append(wantInst[r], op)
				wantDone[r] = append(wantDone[r], false)
			}
		}
		finish(run)
		dir := t.TempDir()
		if _, err := run.WriteDir(dir, "app"); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 4} {
			name := fmt.Sprintf("seed %d (%d ranks), %d workers", seed, n, w)
			sink := &collSink{}
			rep, warned := analyzeSink(t, Options{Dir: dir, App: "app", MaxLevel: -1, Workers: w}, sink)
			if len(warned) > 0 || rep.Unmatched != nil {
				t.Errorf("%s: warnings %q, unmatched %+v", name, warned, rep.Unmatched)
			}
			// The same global operation, the same instance; different
			// ones, different instances.
			inst := map[int]uint64{}
			seen := map[uint64]int{}
			for r := range n {
				if len(sink.got[r]) != len(wantInst[r]) {
					t.Fatalf("%s: rank %d has %d ties to instances, want %d", name, r, len(sink.got[r]), len(wantInst[r]))
				}
				for i, tie := range sink.got[r] {
					op, h := wantInst[r][i], tie.coll
					if tie.done != wantDone[r][i] {
						t.Errorf("%s: rank %d's tie %d (operation %d): done %v, want %v", name, r, i, op, tie.done, wantDone[r][i])
					}
					if g, ok := inst[op]; ok && g != h {
						t.Errorf("%s: rank %d's call of operation %d joined another instance than the other members'", name, r, op)
					}
					if o, ok := seen[h]; ok && o != op {
						t.Errorf("%s: operations %d and %d joined one instance", name, o, op)
					}
					inst[op], seen[h] = h, op
				}
			}
			iv := find(t, rep)
			for r := range n {
				k := rank(t, iv, r)
				expect(t, name+fmt.Sprintf(": rank %d Potential Sync", r), k.PotentialSync, float64(ps[r])/1e9)
				expect(t, name+fmt.Sprintf(": rank %d Time Variation", r), k.TimeVariation, float64(tv[r])/1e9)
			}
		}
		analyzeOpts(t, Options{Dir: dir, App: "app", MaxLevel: -1})
	}
}

// randomColl records the random tests' blocking collective of kind 0
// (MPI_Barrier), 1 (MPI_Allreduce), 2 (MPI_Bcast from root) or 3
// (MPI_Reduce to root), of 8 bytes.
func randomColl(k *tracetest.Rank, kind int, root int32, dur int64, opt tracetest.Opt) {
	switch kind {
	case 0:
		k.Barrier(dur, opt)
	case 1:
		k.Allreduce(8, dur, opt)
	case 2:
		k.Bcast(root, 8, dur, opt)
	case 3:
		k.Reduce(root, 8, dur, opt)
	}
}
