package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/view"
)

var flagPort = &cli.IntFlag{
	Name:  "port",
	Usage: "listen on 127.0.0.1:`PORT` (default: a free port)",
}

// viewCommand is `dtpa view [--port N] [--dir DIR] [--exe PATH] <app>
// [level]`: the HTML report served from 127.0.0.1 with the whole run's
// timeline (report/view), until Ctrl-C.
func viewCommand(stdout, stderr io.Writer, analyze AnalyzeFunc) *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "serve the HTML report with every call of the run on a local web server (127.0.0.1 only) until Ctrl-C",
		UsageText: "dtpa view [--port PORT] [--dir DIR] [--exe PATH] <app> [level]",
		Description: "For runs too big for one --html page: the page opens on an overview of every rank and\n" +
			"fetches each window you zoom to, in detail (every call and message) when it holds few enough calls.\n" +
			"The calls are spooled to a temporary file (removed on exit); memory stays bounded.",
		Flags: []cli.Flag{flagPort, flagDir, flagExe},
		Action: func(c *cli.Context) error {
			if dist.on {
				return errNotDistributed
			}
			args := c.Args().Slice()
			if len(args) == 0 || len(args) > 2 {
				return usagef("dtpa view takes <app> [level]")
			}
			opts := Options{App: args[0], Dir: c.String(flagDir.Name), Exe: c.String(flagExe.Name), MaxLevel: -1, Analyze: analyze}
			if opts.App == "" || strings.HasPrefix(opts.App, "-") {
				return usagef("bad application name %q", opts.App)
			}
			if len(args) == 2 {
				lvl, err := strconv.Atoi(args[1])
				if err != nil || lvl < 0 {
					return usagef("level must be a non-negative integer, not %q", args[1])
				}
				opts.MaxLevel = lvl
			}
			port := c.Int(flagPort.Name)
			if port < 0 || port > 65535 {
				return usagef("--port takes 0 to 65535, not %d", port)
			}
			return serveView(c.Context, opts, port, stdout, stderr)
		},
	}
}

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
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
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
