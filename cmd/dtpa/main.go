// Command dtpa analyses the traces of an MPI run (<app>.<rank>.trc, written
// by dtrun) and prints the performance report: the .trpa text of DVM's
// PPPA opened by its findings, or the JSON report with --json; or compares
// two runs with --diff.
//
//	dtpa [-wp] [-src NN] [-srct NN] <app> [level]
//	dtpa --diff <app A> <app B> [level]
//
// See `dtpa --help` and docs/report-format.md.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/otf2"
)

func main() {
	otf2.ServeAnchorCheck()
	otf2Child = true
	paceGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runMain(ctx)
	stop()
	os.Exit(code)
}

// runMain is Main with the process's arguments and output; dtpa-mpi (the
// mpi build, mpi.go) replaces it.
var runMain = func(ctx context.Context) int {
	return Main(ctx, os.Args, os.Stdout, os.Stderr, analyzer.Analyze)
}
