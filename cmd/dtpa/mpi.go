//go:build mpi

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/mpi"
	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/report"
)

// dtpa-mpi is this command built with the mpi tag against an MPI library:
// started by mpirun, its processes analyse the run together
// (analyzer.AnalyzeDist, docs/distributed.md) and process 0 writes what
// dtpa would, with dtpa's options and exit codes: the report, the page
// (each process records its ranks' part of the timeline) and the exports
// (each process converts its ranks, process 0 writes the file from the
// parts: analyzer.AnalyzeDist, otf2.ExportDist). The other processes
// print nothing; an error that only some of them meet ends the job.
func init() {
	runMain = mpiMain
}

// flowBound reads DTPA_MPI_FLOW, the bound of flow control
// (analyzer.FlowControl): set, every process uses it and prints how flow
// control went on stderr, for diagnosis and tests (docs/distributed.md).
func flowBound() (int, error) {
	v := os.Getenv("DTPA_MPI_FLOW")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		return 0, fmt.Errorf("DTPA_MPI_FLOW=%q: want a number of messages, at least 2", v)
	}
	return n, nil
}

func mpiMain(ctx context.Context) int {
	// Not locked to a thread: the replay's coroutines, created here,
	// run on its worker goroutine (MPI_THREAD_SERIALIZED).
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: %v\n", err)
		return exitError
	}
	if procs, cpus := w.NodeShare(); procs > cpus && w.Rank() == 0 {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: %s\n", oversubscribed(procs, cpus))
	}
	stdout, stderr := io.Writer(os.Stdout), io.Writer(os.Stderr)
	dist.on = true
	if w.Rank() != 0 {
		dist.silent = true
		stdout, stderr = io.Discard, io.Discard
	}
	// abortOn ends the job on an error this process may meet alone, or
	// after the others began waiting for it.
	abortOn := func(err error) {
		var de *analyzer.DistError
		if errors.As(err, &de) {
			fmt.Fprintf(os.Stderr, "dtpa-mpi: analysis process %d: %v\n", w.Rank(), err)
			w.Abort(exitError)
		}
	}
	flow, err := flowBound()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: %v\n", err)
		w.Abort(exitUsage)
	}
	analyze := func(ctx context.Context, opts analyzer.Options) (*report.Report, error) {
		if flow > 0 {
			opts.Flow = &analyzer.FlowControl{Bound: flow}
		}
		rep, err := analyzer.AnalyzeDist(ctx, opts, w)
		abortOn(err)
		if opts.Flow != nil && err == nil {
			fmt.Fprintf(os.Stderr, "dtpa-mpi: analysis process %d: flow control at %d messages: held at most %d messages of one key from other processes; senders waited %d times for another process\n",
				w.Rank(), flow, opts.Flow.MaxHeld, opts.Flow.Waits)
		}
		return rep, err
	}
	exportOTF2Archive = func(ctx context.Context, opts otf2.ExportOptions) (otf2.ExportStats, error) {
		st, err := otf2.ExportDist(ctx, opts, w)
		abortOn(err)
		return st, err
	}
	code := Main(ctx, os.Args, stdout, stderr, analyze)
	if err := w.Finalize(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: %v\n", err)
		code = exitError
	}
	return code
}

// oversubscribed is the note process 0 prints when more analysis
// processes than processors share its node. The processes poll for each
// other's messages (MPI offers no wait that gives up the processor): a
// replay waits for another process wherever the program waited for
// another rank, and a waiting process then holds a processor the process
// it waits for needs. On a halo exchange of 4 ranks, 4 processes on 2
// processors took ten times as long as 2 (docs/performance.md).
func oversubscribed(procs, cpus int) string {
	return fmt.Sprintf("%d analysis processes share this node's %d processors: the processes poll for each other's messages, so the analysis can take many times as long as with %d processes; run at most one per processor", procs, cpus, cpus)
}
