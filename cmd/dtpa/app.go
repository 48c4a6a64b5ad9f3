package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dtpa/dtpa/internal/version"
	"github.com/dtpa/dtpa/report/trpa"
)

// Exit codes, as in common Unix tools: 2 for a command line that cannot be
// run, 1 for a run that failed.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a command-line mistake: reported with a pointer to --help
// and exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// Flags are package variables, read through their Name in the Action
// (s5cmd style), so the help text and the parsing cannot disagree.
var (
	flagWP     = switchFlag("wp", "without per-processor output: no execution characteristics, no per-processor lines in SRC")
	flagSRC    = percentFlag("src", "SRC points by decreasing Comm, down to the first below `NN` % of the interval's Communications")
	flagSRCT   = percentFlag("srct", "SRC points that reach `NN` % of the interval's Communications, by source position (file, line)")
	flagOutput = &cli.StringFlag{
		Name:  "o",
		Usage: "write the report to `FILE` instead of standard output",
	}
	flagJSON   = switchFlag("json", "print the JSON report (docs/report-format.md) instead of the .trpa text")
	flagHTML   = switchFlag("html", "write a self-contained HTML page (charts, tables, a timeline of every rank) instead of the .trpa text; use with -o FILE")
	flagExport = &cli.StringFlag{
		Name:  "export",
		Usage: "write the run as `FORMAT` instead of a report; chrome: trace-event JSON for Perfetto UI or chrome://tracing (MPI calls per rank, a flow per message, intervals), use with -o FILE; otf2: an OTF2 archive for Vampir, Scalasca and the OTF2 tools, use with -o DIR",
	}
	flagDir = &cli.StringFlag{
		Name:  "dir",
		Value: ".",
		Usage: "directory `DIR` holding the traces <app>.<rank>.trc",
	}
	flagExe = &cli.StringFlag{
		Name:  "exe",
		Usage: "executable `PATH` for symbolizing call stacks (default: the path the traces recorded, else <DIR>/<its name>)",
	}
)

// switchFlag is a flag present or absent: its help shows no default.
func switchFlag(name, usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: name, DisableDefaultText: true, Usage: usage}
}

// percentFlag is an optional percentage, off when absent.
func percentFlag(name, usage string) *cli.Float64Flag {
	return &cli.Float64Flag{Name: name, DefaultText: "off", Usage: usage}
}

const helpTemplate = `NAME:
   {{.Name}} - {{.Usage}}

USAGE:
   {{.UsageText}}

ARGUMENTS:
   app     the traces <app>.0.trc, <app>.1.trc ... (from dtrun), named by the program as run
           (app, ./app, some/dir/app), by one of them (app.0.trc) or by the directory
           holding them; when none match, dtpa lists the tasks whose traces it sees;
           or a Score-P OTF2 archive: its experiment directory or its traces.otf2 anchor file
   level   deepest interval nesting level reported; absent = all, 0 = whole program only

OPTIONS (one or two dashes: -wp and --wp are the same; options come before <app>):
{{range .VisibleFlags}}   {{.}}
{{end}}
SRC ORDER:
   Neither -src nor -srct: every call site, by decreasing Comm.
   Both: two SRC listings per interval, the -src one, then the -srct one.
   -src 100 -srct 100 prints only call sites that alone account for all communications.

CALL STACKS:
   Build with -g for function, file and line per frame (frames inside MPI and the tracer are left
   out). The executable is read from --exe, else from the path the traces recorded, else from
   DIR/<its name>; a file of another build (build id) is refused with a warning. Without debug
   information a frame reads function+0xOFF, without symbols module+0xOFF.

EXAMPLES:
   # Full report of jacobi.*.trc in the current directory, kept in a file:
   dtpa jacobi > jacobi.trpa
   # Minimal report: the whole program only, no per-processor lines, (almost) no SRC:
   dtpa -wp -src 100 -srct 100 jacobi 0
   # Intervals down to level 1; call sites down to 5 % of each interval's communications:
   dtpa -src 5 jacobi 1
   # Call sites with at least 10 % of communications, in source order:
   dtpa -wp -srct 10 jacobi
   # Traces copied from the cluster; the executable (built with -g) is elsewhere:
   dtpa --dir run42 --exe ~/build/jacobi jacobi
   # JSON report of the traces in run42/, written to r.json:
   dtpa --json --dir run42 -o r.json jacobi
   # The page to open in a browser: summary, charts, SRC tables, timeline:
   dtpa --html -o jacobi.html jacobi
   # Two runs side by side (here at 4 and at 1 processes, traced in run4/ and run1/):
   dtpa --diff run4/jacobi run1/jacobi
   # Every MPI call and message, to open in https://ui.perfetto.dev or chrome://tracing:
   dtpa --export chrome -o jacobi.json jacobi
   # The run as an OTF2 archive (open jacobi-otf2/traces.otf2 in Vampir, or scout.mpi it):
   dtpa --export otf2 -o jacobi-otf2 jacobi

EXIT STATUS:
   0 report written, 1 analysis or output failed, 2 bad command line.
`

// newApp builds the command line; Main runs it. Its Action runs analyze
// (nil: analyzer.Analyze).
func newApp(stdout, stderr io.Writer, analyze AnalyzeFunc) *cli.App {
	return &cli.App{
		Name:                  "dtpa",
		Usage:                 "performance report of a traced MPI run (DVM PPPA characteristics)",
		UsageText:             "dtpa [-wp] [-src NN] [-srct NN] [-o FILE] [--json | --html | --export chrome|otf2] [--dir DIR] [--exe PATH] <app> [level]\n   dtpa --diff [--json] [-o FILE] [--dir DIR] <app A> <app B> [level]",
		CustomAppHelpTemplate: helpTemplate,
		Flags:                 []cli.Flag{flagWP, flagSRC, flagSRCT, flagOutput, flagJSON, flagHTML, flagExport, flagDiff, flagDir, flagExe},
		HideHelpCommand:       true,
		Version:               version.String(),
		Commands:              []*cli.Command{viewCommand(stdout, stderr, analyze)},
		Writer:                stdout,
		ErrWriter:             stderr,
		// Errors are reported by Main; without these urfave/cli would print
		// help on flag errors and could call os.Exit itself.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err.Error()}
		},
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errNoArgs
			}
			if c.Bool(flagDiff.Name) {
				o, err := diffOptionsFrom(c)
				if err != nil {
					return err
				}
				o.Analyze = analyze
				return RunDiff(c.Context, o, stdout, stderr)
			}
			opts, err := optionsFrom(c)
			if err != nil {
				return err
			}
			opts.Analyze = analyze
			done, err := importOTF2(c.Context, &opts, stderr)
			defer done()
			if err != nil {
				return err
			}
			return Run(c.Context, opts, stdout, stderr)
		},
	}
}

var errNoArgs = errors.New("no arguments")

// optionsFrom turns the parsed command line into Options.
func optionsFrom(c *cli.Context) (Options, error) {
	args := c.Args().Slice()
	if len(args) > 2 {
		if strings.HasPrefix(args[1], "-") || strings.HasPrefix(args[2], "-") {
			return Options{}, usagef("options must come before <app>: %s", strings.Join(args, " "))
		}
		return Options{}, usagef("too many arguments: %s", strings.Join(args, " "))
	}
	opts := Options{
		App:      args[0],
		Dir:      c.String(flagDir.Name),
		Exe:      c.String(flagExe.Name),
		Output:   c.String(flagOutput.Name),
		JSON:     c.Bool(flagJSON.Name),
		HTML:     c.Bool(flagHTML.Name),
		Export:   c.String(flagExport.Name),
		MaxLevel: -1,
	}
	if opts.JSON && opts.HTML {
		return Options{}, usagef("--json and --html exclude each other")
	}
	if c.IsSet(flagExport.Name) {
		if opts.Export != "chrome" && opts.Export != "otf2" {
			return Options{}, usagef("--export knows the formats chrome and otf2; not %q", opts.Export)
		}
		if opts.Export == "otf2" && opts.Output == "" {
			return Options{}, usagef("--export otf2 writes a directory: give it with -o DIR")
		}
		if opts.JSON || opts.HTML {
			return Options{}, usagef("--export excludes --json and --html")
		}
	}
	if opts.App == "" || strings.HasPrefix(opts.App, "-") {
		return Options{}, usagef("bad application name %q", opts.App)
	}
	if len(args) == 2 {
		lvl, err := strconv.Atoi(args[1])
		if err != nil || lvl < 0 {
			if strings.HasPrefix(args[1], "-") {
				return Options{}, usagef("options must come before <app>: %s", args[1])
			}
			return Options{}, usagef("level must be a non-negative integer, not %q", args[1])
		}
		opts.MaxLevel = lvl
	}
	opts.Render.NoPerProcessor = c.Bool(flagWP.Name)
	for _, f := range []struct {
		flag  *cli.Float64Flag
		order trpa.SRCOrder
	}{{flagSRC, trpa.ByComm}, {flagSRCT, trpa.BySource}} {
		if !c.IsSet(f.flag.Name) {
			continue
		}
		nn := c.Float64(f.flag.Name)
		if nn < 0 || nn > 100 {
			return Options{}, usagef("-%s takes a percentage from 0 to 100, not %v", f.flag.Name, nn)
		}
		opts.Render.SRC = append(opts.Render.SRC, trpa.SRCListing{Order: f.order, Cut: nn})
	}
	return opts, nil
}

// Main runs dtpa with args (args[0] is the program name) and returns the
// exit code; everything it prints goes to stdout and stderr. analyze
// computes the report (nil: analyzer.Analyze).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, analyze AnalyzeFunc) int {
	app := newApp(stdout, stderr, analyze)
	err := app.RunContext(ctx, args)
	var ue usageError
	var xc exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &xc):
		return int(xc)
	case errors.Is(err, errNoArgs):
		// Usage is what the user asked for by typing just "dtpa", but it is
		// not a report: stderr, and a status that scripts notice.
		app.Writer = stderr
		_ = cli.ShowAppHelp(cli.NewContext(app, nil, nil))
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "dtpa: %s\nRun 'dtpa --help' for usage.\n", ue.msg)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "dtpa: %s\n", err)
		return exitError
	}
}
