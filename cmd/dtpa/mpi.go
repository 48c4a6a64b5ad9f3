//go:build mpi

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/mpi"
	"github.com/dtpa/dtpa/report"
)

// dtpa-mpi is this command built with the mpi tag against an MPI library:
// started by mpirun, its processes analyse the run together
// (analyzer.AnalyzeDist, docs/distributed.md) and process 0 writes what
// dtpa would, with dtpa's options and exit codes. The other processes
// print nothing; an error that only some of them meet ends the job.
// --html and --export need every rank's calls in one process: for them
// process 0 runs dtpa's own analysis alone (dist.alone in run.go).
func init() {
	runMain = mpiMain
}

func mpiMain(ctx context.Context) int {
	// Not locked to a thread: the replay's coroutines, created here,
	// run on its worker goroutine (MPI_THREAD_SERIALIZED).
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: %v\n", err)
		return exitError
	}
	stdout, stderr := io.Writer(os.Stdout), io.Writer(os.Stderr)
	dist.on = true
	if w.Rank() != 0 {
		dist.silent = true
		stdout, stderr = io.Discard, io.Discard
	}
	analyze := func(ctx context.Context, opts analyzer.Options) (*report.Report, error) {
		if dist.alone {
			return analyzer.Analyze(ctx, opts) // process 0, as dtpa
		}
		rep, err := analyzer.AnalyzeDist(ctx, opts, w)
		var de *analyzer.DistError
		if errors.As(err, &de) {
			// Met by this process alone, or after the replay began:
			// the others may wait for it forever.
			fmt.Fprintf(os.Stderr, "dtpa-mpi: analysis process %d: %v\n", w.Rank(), err)
			w.Abort(exitError)
		}
		return rep, err
	}
	code := Main(ctx, os.Args, stdout, stderr, analyze)
	if dist.alone {
		code = shareCode(w, code)
	}
	if err := w.Finalize(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: %v\n", err)
		code = exitError
	}
	return code
}

// shareCode gives every process process 0's exit code when process 0
// worked alone (dist.alone), so that the job exits as dtpa would. The
// others wait for it in World.Recv, which sleeps between polls rather
// than taking a core from process 0 as MPI_Finalize might.
func shareCode(w *mpi.World, code int) int {
	if w.Rank() == 0 {
		for p := 1; p < w.Size(); p++ {
			if err := w.Send(p, []byte{byte(code)}); err != nil {
				fmt.Fprintf(os.Stderr, "dtpa-mpi: %v\n", err)
				w.Abort(exitError)
			}
		}
		return code
	}
	_, msg, err := w.Recv(true)
	if err != nil || len(msg) != 1 {
		fmt.Fprintf(os.Stderr, "dtpa-mpi: analysis process %d: no exit code from process 0 (%v)\n", w.Rank(), err)
		return exitError
	}
	return int(msg[0])
}
