package main

import (
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
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
