//go:build view

package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/view"
)

// serveView analyses the run, then serves it until ctx is done or the
// process gets SIGINT or SIGTERM.
func serveView(ctx context.Context, opts Options, port int, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	warn := func(msg string) { fmt.Fprintf(stderr, "dtpa: warning: %s\n", msg) }
	opts, err := resolve(opts)
	if err != nil {
		return err
	}
	dir := opts.traceDir()
	// Listen first: a port in use fails before a long analysis.
	ln, err := view.Listen(port)
	if err != nil {
		return err
	}
	defer ln.Close()
	analyze := func(ctx context.Context, ao analyzer.Options) (*report.Report, error) {
		rep, err := opts.analyze()(ctx, ao)
		if err != nil {
			return nil, err
		}
		out := *nonNil(keepLevels(rep, opts.MaxLevel))
		out.Findings = report.FindingsOf(&out)
		out.Warnings = report.GroupWarnings(out.Warnings)
		return &out, nil
	}
	srv, st, err := view.Analyze(ctx, opts.analyzerOptions(dir, warn, warn), "", analyze)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(stdout, "dtpa: serving the report of %s at http://%s/ (Ctrl-C stops)\n", opts.App, ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "dtpa: stopped")
	return nil
}
