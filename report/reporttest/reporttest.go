// Package reporttest builds hand-made report.Report values for renderer and
// command-line tests: a 4-rank run with two nested intervals and call sites
// with stacks, a minimal one-interval run, and a many-rank run. The numbers
// are chosen by hand per processor; the interval totals (Main, Comparative)
// are derived from them by report.Derive, as the analyzer derives them, so
// that the fixtures hold only figures the analyzer can produce.
package reporttest

import (
	"fmt"

	"github.com/dtpa/dtpa/report"
)

// proc is the hand-chosen part of one processor's characteristics, the
// figures the analyzer measures; the rest (Communications, Lost Time,
// Productive Time, Idle Time, Load Imbalance, Main, Comparative) follows
// from report.Derive.
type proc struct {
	rank                          int
	exeCount                      int
	exec, insuf                   float64
	sendRecv, coll, sys, realSync float64
	potSync, timeVar, overlap     float64
	send, recv, wait, ncoll, nsys int64
}

// interval derives the interval from the processors' measured figures.
// collectives is the number of collective instances (counted once,
// characteristics.md §5). A fixture that report.Derive warns about is a mistake in this file.
func interval(path []int, file string, line int, ps []proc, collectives int64, src []report.SRC) report.Interval {
	iv := report.Interval{
		Path: path, Level: len(path), SourceFile: file, Line: line,
		Ranks: make([]report.Rank, len(ps)), SRC: src,
	}
	if len(path) > 0 {
		iv.Number = path[len(path)-1]
	}
	for i, p := range ps {
		iv.Ranks[i] = report.Rank{
			Rank: p.rank, ExeCount: p.exeCount, ExecutionTime: p.exec,
			InsufficientParallelism: p.insuf,
			SendRecvTime:            p.sendRecv, CollectiveTime: p.coll,
			SystemTime: p.sys, RealSync: p.realSync, PotentialSync: p.potSync,
			TimeVariation: p.timeVar, Overlap: p.overlap,
			SendNumber: p.send, ReceiveNumber: p.recv, WaitNumber: p.wait,
			CollectiveNumber: p.ncoll, SystemNumber: p.nsys,
		}
	}
	iv.Main.CollectiveNumber = collectives
	if w := report.Derive(&iv); len(w) > 0 {
		panic(fmt.Sprintf("reporttest: inconsistent fixture: %v", w))
	}
	return iv
}

// site builds a call site from its per-processor values; Comm and the other
// totals are sums over processors.
func site(id int, fn string, stack []report.Frame, rs ...report.SRCRank) report.SRC {
	s := report.SRC{ID: id, Function: fn, Stack: stack, Ranks: rs}
	report.DeriveSRC(&s)
	return s
}

// Stacks shared by the intervals of Full (innermost frame first).
var (
	stackExchangeRecv = []report.Frame{
		{Function: "exchange_halo", File: "jacobi.c", Line: 88},
		{Function: "iterate", File: "jacobi.c", Line: 121},
		{Function: "main", File: "jacobi.c", Line: 170},
	}
	stackExchangeWait = []report.Frame{
		{Function: "exchange_halo", File: "jacobi.c", Line: 95},
		{Function: "iterate", File: "jacobi.c", Line: 121},
		{Function: "main", File: "jacobi.c", Line: 170},
	}
	stackAllreduce = []report.Frame{
		{Function: "residual", File: "norm.c", Line: 31},
		{Function: "iterate", File: "jacobi.c", Line: 130},
		{Function: "main", File: "jacobi.c", Line: 170},
	}
	stackBcast = []report.Frame{
		{Function: "read_input", File: "io.c", Line: 12},
		{Function: "main", File: "jacobi.c", Line: 150},
	}
	// A frame without debug information, as from a library built without -g.
	stackCommSplit = []report.Frame{
		{Function: "", File: "", Line: 0},
		{Function: "setup", File: "jacobi.c", Line: 60},
	}
)

// Full is a 4-rank run of "jacobi": the whole program, interval 1 (the
// solver, entered once) and interval 1/2 (one iteration, entered 10 times
// and executed by ranks 0, 1 and 3 only), with call sites in each.
func Full() *report.Report {
	// Interval 1/2: rank 1 computes less, so it waits in MPI_Recv (Real
	// Sync) and arrives early at the Allreduce (Potential Sync).
	inner := interval([]int{1, 2}, "jacobi.c", 118, []proc{
		{rank: 0, exeCount: 10, exec: 2.0, sendRecv: 0.20, coll: 0.10, realSync: 0.02, potSync: 0.01, timeVar: 0.004, overlap: 0.05, send: 20, recv: 20, wait: 20, ncoll: 10},
		{rank: 1, exeCount: 10, exec: 2.1, sendRecv: 0.55, coll: 0.35, realSync: 0.40, potSync: 0.30, timeVar: 0.001, overlap: 0.02, send: 20, recv: 20, wait: 20, ncoll: 10},
		{rank: 3, exeCount: 10, exec: 1.9, sendRecv: 0.15, coll: 0.05, realSync: 0.00, potSync: 0.00, timeVar: 0.006, overlap: 0.06, send: 10, recv: 10, wait: 10, ncoll: 10},
	}, 10, []report.SRC{
		site(3, "MPI_Allreduce", stackAllreduce,
			report.SRCRank{Rank: 0, ExeCount: 10, ExeTime: 0.10, PotentialSync: 0.01, TimeVariation: 0.004},
			report.SRCRank{Rank: 1, ExeCount: 10, ExeTime: 0.35, PotentialSync: 0.30, TimeVariation: 0.001},
			report.SRCRank{Rank: 3, ExeCount: 10, ExeTime: 0.05, TimeVariation: 0.006}),
		site(1, "MPI_Irecv", stackExchangeRecv,
			report.SRCRank{Rank: 0, ExeCount: 20, ExeTime: 0.02},
			report.SRCRank{Rank: 1, ExeCount: 20, ExeTime: 0.03},
			report.SRCRank{Rank: 3, ExeCount: 10, ExeTime: 0.01}),
		site(2, "MPI_Waitall", stackExchangeWait,
			report.SRCRank{Rank: 0, ExeCount: 20, ExeTime: 0.16, RealSync: 0.02, Overlap: 0.05},
			report.SRCRank{Rank: 1, ExeCount: 20, ExeTime: 0.50, RealSync: 0.40, Overlap: 0.02},
			report.SRCRank{Rank: 3, ExeCount: 10, ExeTime: 0.12, Overlap: 0.06}),
		site(4, "MPI_Isend", stackExchangeRecv[:0:0], // no stack recorded
			report.SRCRank{Rank: 0, ExeCount: 20, ExeTime: 0.02},
			report.SRCRank{Rank: 1, ExeCount: 20, ExeTime: 0.02},
			report.SRCRank{Rank: 3, ExeCount: 10, ExeTime: 0.02}),
	})
	inner.SRC[3].Stack = []report.Frame{{Function: "exchange_halo", File: "jacobi.c", Line: 84}}
	// Its profile: the call sites by function; each message 8192 bytes,
	// ranks 0 and 1 exchanging 10 each way, both sending 10 to rank 3 and
	// rank 3 5 to each of them; ranks 0 and 1 on node1, 2 and 3 on node2.
	fr := func(r int, calls int64, t float64, b int64) report.FunctionRank {
		return report.FunctionRank{Rank: r, Calls: calls, Time: t, Bytes: b}
	}
	inner.Functions = []report.Function{
		{Function: "MPI_Waitall", Calls: 50, Time: 0.78, Min: 0.0002, Max: 0.03,
			Ranks: []report.FunctionRank{fr(0, 20, 0.16, 0), fr(1, 20, 0.50, 0), fr(3, 10, 0.12, 0)}},
		{Function: "MPI_Allreduce", Calls: 30, Time: 0.50, Bytes: 480, Min: 0.001, Max: 0.05,
			Ranks: []report.FunctionRank{fr(0, 10, 0.10, 160), fr(1, 10, 0.35, 160), fr(3, 10, 0.05, 160)}},
		{Function: "MPI_Irecv", Calls: 50, Time: 0.06, Bytes: 409600, Min: 0.0005, Max: 0.002,
			Ranks: []report.FunctionRank{fr(0, 20, 0.02, 163840), fr(1, 20, 0.03, 163840), fr(3, 10, 0.01, 81920)}},
		{Function: "MPI_Isend", Calls: 50, Time: 0.06, Bytes: 409600, Min: 0.0008, Max: 0.0015,
			Ranks: []report.FunctionRank{fr(0, 20, 0.02, 163840), fr(1, 20, 0.02, 163840), fr(3, 10, 0.02, 81920)}},
	}
	inner.CommMatrix = &report.CommMatrix{
		Messages: [][]int64{{0, 10, 0, 10}, {10, 0, 0, 10}, {0, 0, 0, 0}, {5, 5, 0, 0}},
		Bytes:    [][]int64{{0, 81920, 0, 81920}, {81920, 0, 0, 81920}, {0, 0, 0, 0}, {40960, 40960, 0, 0}},
	}
	inner.Traffic = &report.Traffic{IntraNode: report.Volume{Messages: 20, Bytes: 163840}, InterNode: report.Volume{Messages: 30, Bytes: 245760}}
	// By communicator: ranks 0 and 1 exchange on a duplicate of world,
	// the messages to and from rank 3 go over world. Every message is
	// received in the interval (8192 bytes: the 8192-16383 class).
	inner.CommMatrices = []report.CommMatrixOn{
		{Comm: "world", Size: 4, Ranks: []int{0, 1, 2, 3},
			Messages: [][]int64{{0, 0, 0, 10}, {0, 0, 0, 10}, {0, 0, 0, 0}, {5, 5, 0, 0}},
			Bytes:    [][]int64{{0, 0, 0, 81920}, {0, 0, 0, 81920}, {0, 0, 0, 0}, {40960, 40960, 0, 0}}},
		{Comm: "dup of world", Size: 4, Ranks: []int{0, 1, 2, 3},
			Messages: [][]int64{{0, 10, 0, 0}, {10, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
			Bytes:    [][]int64{{0, 81920, 0, 0}, {81920, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}},
	}
	inner.MessageSizes = []report.SizeBin{{MinBytes: 8192, MaxBytes: 16383, Messages: 50, Bytes: 409600, Latency: 0.0004, Throughput: 409600 / 0.02}}
	// The call mix of each processor follows from Functions; the gaps
	// are one per call.
	for i := range inner.Ranks {
		r := &inner.Ranks[i]
		var calls int64
		var time float64
		for _, f := range inner.Functions {
			for _, fr := range f.Ranks {
				if fr.Rank == r.Rank {
					r.CallMix = append(r.CallMix, report.CallMix{Function: f.Function, Calls: fr.Calls, Time: fr.Time})
					calls += fr.Calls
					time += fr.Time
				}
			}
		}
		for j := range r.CallMix {
			r.CallMix[j].CallShare = float64(r.CallMix[j].Calls) / float64(calls)
			r.CallMix[j].TimeShare = r.CallMix[j].Time / time
		}
		r.Gaps = calls
		r.GapMean, r.GapMedian = 0.03*float64(i+1), 0.025*float64(i+1)
	}

	solver := interval([]int{1}, "jacobi.c", 110, []proc{
		{rank: 0, exeCount: 1, exec: 2.4, sendRecv: 0.20, coll: 0.12, realSync: 0.02, potSync: 0.02, timeVar: 0.004, overlap: 0.05, send: 20, recv: 20, wait: 20, ncoll: 11},
		{rank: 1, exeCount: 1, exec: 2.5, sendRecv: 0.55, coll: 0.37, realSync: 0.40, potSync: 0.31, timeVar: 0.001, overlap: 0.02, send: 20, recv: 20, wait: 20, ncoll: 11},
		{rank: 2, exeCount: 1, exec: 2.2, sendRecv: 0.00, coll: 0.30, potSync: 0.29, timeVar: 0.002, ncoll: 1},
		{rank: 3, exeCount: 1, exec: 2.3, sendRecv: 0.15, coll: 0.07, potSync: 0.01, timeVar: 0.006, overlap: 0.06, send: 10, recv: 10, wait: 10, ncoll: 11},
	}, 11, []report.SRC{
		inner.SRC[0], inner.SRC[1], inner.SRC[2], inner.SRC[3],
		site(5, "MPI_Barrier", []report.Frame{{Function: "solve", File: "jacobi.c", Line: 140}, {Function: "main", File: "jacobi.c", Line: 170}},
			report.SRCRank{Rank: 0, ExeCount: 1, ExeTime: 0.02, PotentialSync: 0.01},
			report.SRCRank{Rank: 1, ExeCount: 1, ExeTime: 0.02, PotentialSync: 0.01},
			report.SRCRank{Rank: 2, ExeCount: 1, ExeTime: 0.30, PotentialSync: 0.29, TimeVariation: 0.002},
			report.SRCRank{Rank: 3, ExeCount: 1, ExeTime: 0.02, PotentialSync: 0.01}),
	})

	// The whole program adds input (a sequential section on every rank,
	// broadcast) and communicator setup (system time).
	whole := interval(nil, "jacobi", 0, []proc{
		{rank: 0, exeCount: 1, exec: 3.0, insuf: 0.15, sendRecv: 0.20, coll: 0.13, sys: 0.010, realSync: 0.02, potSync: 0.02, timeVar: 0.004, overlap: 0.05, send: 20, recv: 20, wait: 20, ncoll: 12, nsys: 3},
		{rank: 1, exeCount: 1, exec: 3.0, insuf: 0.15, sendRecv: 0.55, coll: 0.45, sys: 0.012, realSync: 0.40, potSync: 0.39, timeVar: 0.001, overlap: 0.02, send: 20, recv: 20, wait: 20, ncoll: 12, nsys: 3},
		{rank: 2, exeCount: 1, exec: 2.9, insuf: 0.15, sendRecv: 0.00, coll: 0.38, sys: 0.011, potSync: 0.37, timeVar: 0.002, ncoll: 2, nsys: 3},
		{rank: 3, exeCount: 1, exec: 3.0, insuf: 0.15, sendRecv: 0.15, coll: 0.15, sys: 0.009, potSync: 0.09, timeVar: 0.006, overlap: 0.06, send: 10, recv: 10, wait: 10, ncoll: 12, nsys: 3},
	}, 12, append(append([]report.SRC(nil), solver.SRC...),
		site(6, "MPI_Bcast", stackBcast,
			report.SRCRank{Rank: 0, ExeCount: 1, ExeTime: 0.01},
			report.SRCRank{Rank: 1, ExeCount: 1, ExeTime: 0.08, PotentialSync: 0.08},
			report.SRCRank{Rank: 2, ExeCount: 1, ExeTime: 0.08, PotentialSync: 0.08},
			report.SRCRank{Rank: 3, ExeCount: 1, ExeTime: 0.08, PotentialSync: 0.08}),
		site(7, "MPI_Comm_split", stackCommSplit,
			report.SRCRank{Rank: 0, ExeCount: 3, ExeTime: 0.010},
			report.SRCRank{Rank: 1, ExeCount: 3, ExeTime: 0.012},
			report.SRCRank{Rank: 2, ExeCount: 3, ExeTime: 0.011},
			report.SRCRank{Rank: 3, ExeCount: 3, ExeTime: 0.009}),
	))
	return &report.Report{
		Schema: report.Schema, Task: "jacobi", Processors: 4,
		Warnings: []string{
			"rank 2: 3 messages sent to rank 1 were never received",
			"jacobi.c:118: MPI_Pcontrol(100, 2) entered on ranks 0, 1, 3 only",
		},
		ClockViolations: &report.ClockViolations{Count: 2, Worst: 0.000042, WorstRank: 3, Repaired: true, Amortized: 1,
			Unrepaired: 3, UnrepairedWorst: 0.0000125, UnrepairedWorstRank: 1, UnrepairedSyncSends: 2, UnrepairedNonblocking: 1},
		Unmatched: &report.Unmatched{Sends: 3},
		RunFacts: report.RunFacts{
			Run: &report.Run{MPI: "Open MPI v4.1.2", MPILibraryVersion: "Open MPI v4.1.2, package: Debian OpenMPI, ident: 4.1.2, repo rev: v4.1.2, Oct 13, 2021",
				Command: []string{"./jacobi", "-n", "100"}, Program: "/home/user/jacobi", Start: "2026-01-01T12:00:00Z",
				Clock: "TSC", TracerVersion: "0.1.0", BatchJob: "slurm 4242.0", SyncError: 0.000001250, TraceBytes: 4000, Events: 400, BytesPerEvent: 10,
				Ranks: []report.TraceSize{{Rank: 0, Bytes: 1100, Events: 110}, {Rank: 1, Bytes: 1100, Events: 110}, {Rank: 2, Bytes: 600, Events: 60}, {Rank: 3, Bytes: 1200, Events: 120}}},
			Hosts: []report.Host{{Host: "node1", Ranks: []int{0, 1}}, {Host: "node2", Ranks: []int{2, 3}}},
		},
		Intervals: []report.Interval{whole, solver, inner},
	}
}

// Minimal is a 2-rank run with only the whole-program interval, one call
// site and no warnings.
func Minimal() *report.Report {
	stack := []report.Frame{{Function: "main", File: "hello.c", Line: 9}}
	whole := interval(nil, "hello", 0, []proc{
		{rank: 0, exeCount: 1, exec: 0.5, coll: 0.001, potSync: 0.0005, ncoll: 1},
		{rank: 1, exeCount: 1, exec: 0.5, coll: 0.0015, potSync: 0.001, ncoll: 1},
	}, 1, []report.SRC{
		site(1, "MPI_Barrier", stack,
			report.SRCRank{Rank: 0, ExeCount: 1, ExeTime: 0.001, PotentialSync: 0.0005},
			report.SRCRank{Rank: 1, ExeCount: 1, ExeTime: 0.0015, PotentialSync: 0.001}),
	})
	return &report.Report{
		Schema: report.Schema, Task: "hello", Processors: 2,
		Intervals: []report.Interval{whole},
	}
}

// Wide is an n-rank run with the whole-program interval and one call site,
// for the layouts used when there are too many processors for one column
// each.
func Wide(n int) *report.Report {
	ps := make([]proc, n)
	var srs []report.SRCRank
	for i := range ps {
		f := float64(i)
		ps[i] = proc{rank: i, exeCount: 1, exec: 10 - 0.01*f, coll: 0.5 + 0.02*f, potSync: 0.01 * f, timeVar: 0.001, ncoll: 100}
		srs = append(srs, report.SRCRank{Rank: i, ExeCount: 100, ExeTime: 0.5 + 0.02*f, PotentialSync: 0.01 * f, TimeVariation: 0.001})
	}
	whole := interval(nil, "wide", 0, ps, 100, []report.SRC{
		site(1, "MPI_Allreduce", []report.Frame{{Function: "main", File: "wide.c", Line: 42}}, srs...),
	})
	return &report.Report{
		Schema: report.Schema, Task: fmt.Sprintf("wide%d", n), Processors: n,
		Intervals: []report.Interval{whole},
	}
}
