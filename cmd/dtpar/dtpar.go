package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dtpa/dtpa/tracer/params"
	"github.com/urfave/cli/v2"
)

// Options says where dtpar writes.
type Options struct {
	// Dir is the directory of tracer.par ("." by default).
	Dir string
	// Stdout prints the file instead of writing it.
	Stdout bool
	// Force overwrites an existing tracer.par.
	Force bool
}

var (
	flagStdout = &cli.BoolFlag{Name: "stdout", Usage: "print the parameters instead of writing tracer.par"}
	flagForce  = &cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "overwrite an existing tracer.par"}
	flagDir    = &cli.StringFlag{Name: "dir", Value: ".", Usage: "directory to write tracer.par into"}
)

// Main parses the command line and runs; it returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:  "dtpar",
		Usage: "write tracer.par with the default tracer parameters",
		UsageText: `dtpar [--stdout] [--force] [--dir DIR]

Writes a commented tracer.par holding the defaults (UserStackSize,
MaxTraceSize, TraceBufSize) into the current directory, where dtrun's
tracer reads it. Edit it, then run dtrun from the same directory.

Examples:
  dtpar && sed -i 's/^UserStackSize = .*/UserStackSize = 1/' tracer.par
  dtpar --stdout`,
		Flags:     []cli.Flag{flagStdout, flagForce, flagDir},
		Writer:    stdout,
		ErrWriter: stderr,
		Action: func(c *cli.Context) error {
			return Run(c.Context, Options{Dir: c.String(flagDir.Name), Stdout: c.Bool(flagStdout.Name),
				Force: c.Bool(flagForce.Name)}, stdout)
		},
	}
	if err := app.RunContext(ctx, args); err != nil {
		fmt.Fprintln(stderr, "dtpar:", err)
		return 1
	}
	return 0
}

// Run writes tracer.par (or prints it to w with Stdout set) and says where.
func Run(_ context.Context, o Options, w io.Writer) error {
	if o.Stdout {
		return params.WriteDefault(w)
	}
	dir := o.Dir
	if dir == "" {
		dir = "."
	}
	path := filepath.Join(dir, params.FileName)
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if !o.Force {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists (use --force to overwrite it)", path)
	}
	if err != nil {
		return err
	}
	if err := params.WriteDefault(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s\n", path)
	return nil
}
