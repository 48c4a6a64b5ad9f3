//go:build !view

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// viewProgram is the command that serves `dtpa view`, installed beside
// dtpa: this command built with the view tag (make build).
const viewProgram = "dtpa-view"

// serveView has dtpa-view serve the run, replacing this process with the
// same arguments, environment, standard files and signals. The web server
// (report/view, and net/http with the TLS stack it links) is built into
// dtpa-view only, so that dtpa starts without it: it was a third of the
// binary, and every start of dtpa mapped its code and ran its package
// initialization, a tenth of the CPU time of analysing a small trace
// (docs/performance.md, "Fresh memory and the command's start").
func serveView(_ context.Context, _ Options, _ int, _, _ io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("dtpa view: finding %s: %w", viewProgram, err)
	}
	path := filepath.Join(filepath.Dir(exe), viewProgram)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dtpa view is served by %s, which is not installed beside dtpa (make build builds it)", path)
	}
	if err := syscall.Exec(path, os.Args, os.Environ()); err != nil {
		return fmt.Errorf("dtpa view: running %s: %w", path, err)
	}
	return nil
}
