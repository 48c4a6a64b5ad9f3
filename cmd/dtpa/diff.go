package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/diff"
)

var flagDiff = switchFlag("diff", "compare two runs: dtpa --diff A B [level] prints their main characteristics side by side per interval and the call sites whose Comm changed most (--json: as JSON)")

// DiffOptions are what one dtpa --diff invocation does.
type DiffOptions struct {
	Dir      string
	A, B     string // the two runs, named as dtpa names one run
	MaxLevel int    // -1 = all
	Exe      string
	Output   string
	JSON     bool
	Analyze  AnalyzeFunc
}

// diffOptionsFrom reads the command line of dtpa --diff A B [level].
func diffOptionsFrom(c *cli.Context) (DiffOptions, error) {
	args := c.Args().Slice()
	if len(args) < 2 || len(args) > 3 {
		return DiffOptions{}, usagef("--diff takes two runs and an optional level: dtpa --diff A B [level]")
	}
	for _, a := range args[:2] {
		if a == "" || strings.HasPrefix(a, "-") {
			return DiffOptions{}, usagef("options must come before the runs: %s", strings.Join(args, " "))
		}
	}
	if c.Bool(flagHTML.Name) || c.IsSet(flagExport.Name) {
		return DiffOptions{}, usagef("--diff prints text or, with --json, JSON; not --html or --export")
	}
	o := DiffOptions{Dir: c.String(flagDir.Name), A: args[0], B: args[1], MaxLevel: -1,
		Exe: c.String(flagExe.Name), Output: c.String(flagOutput.Name), JSON: c.Bool(flagJSON.Name)}
	if len(args) == 3 {
		lvl, err := strconv.Atoi(args[2])
		if err != nil || lvl < 0 {
			return DiffOptions{}, usagef("level must be a non-negative integer, not %q", args[2])
		}
		o.MaxLevel = lvl
	}
	return o, nil
}

// RunDiff analyses both runs and writes their comparison to w (or to
// o.Output); the warnings of each run go to stderr marked with its name.
func RunDiff(ctx context.Context, o DiffOptions, w, stderr io.Writer) error {
	var reps [2]*report.Report
	for i, name := range []string{o.A, o.B} {
		var warns []string
		opts := Options{Dir: o.Dir, App: name, MaxLevel: o.MaxLevel, Exe: o.Exe, Analyze: o.Analyze}
		opts, err := resolve(opts)
		if err != nil {
			return err
		}
		dir := opts.traceDir()
		var symWarns []string
		rep, err := opts.analyze()(ctx, opts.analyzerOptions(dir, func(s string) { warns = append(warns, s) },
			func(s string) { symWarns = append(symWarns, s) }))
		if err == nil && dist.silent {
			continue
		}
		if err == nil {
			warns = rep.Warnings
		}
		for _, msg := range append(report.GroupWarnings(warns), sortedSymWarnings(symWarns)...) {
			fmt.Fprintf(stderr, "dtpa: warning: %s: %s\n", name, msg)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		reps[i] = keepLevels(rep, o.MaxLevel)
	}
	if dist.silent {
		return nil
	}
	d := diff.Compare(reps[0], reps[1])
	var buf bytes.Buffer
	var err error
	if o.JSON {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(d)
	} else {
		err = diff.Write(&buf, d)
	}
	if err != nil {
		return fmt.Errorf("rendering the comparison: %w", err)
	}
	if o.Output == "" {
		_, err = w.Write(buf.Bytes())
		return err
	}
	if err := writeOutput(o.Output, buf.Bytes()); err != nil {
		return fmt.Errorf("writing the comparison: %w", err)
	}
	return nil
}
