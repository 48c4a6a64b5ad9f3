// Command dtpar writes tracer.par, the dtpa tracer's parameter file, holding
// the defaults with comments. See `dtpar --help`.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
