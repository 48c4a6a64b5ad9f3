// Command dtrun runs an MPI program under the dtpa tracer:
//
//	dtrun [--mpirun PATH] <the arguments mpirun takes> ./app [args]
//
// Each rank writes <app>.<rank>.trc into the current directory. See
// `dtrun --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The launcher gets the signals too (same process group); dtrun only has
	// to outlive it and return its exit code.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
