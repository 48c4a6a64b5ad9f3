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
	// The launcher gets the signals too (same process group); dtrun has to
	// outlive it and return its exit code, or the signal's where it
	// exited 0 (Interrupted).
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		cancel(Interrupted{Signal: s.(syscall.Signal)})
	}()
	code := Main(ctx, os.Args, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}
