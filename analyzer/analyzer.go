// Package analyzer turns the per-rank traces of one run into a
// report.Report: it aligns clocks, matches messages and collectives, builds
// the interval tree and accumulates the characteristics of SPEC.md §3–§5.
package analyzer

import (
	"context"
	"errors"

	"github.com/dtpa/dtpa/report"
)

// Options say what to analyse.
type Options struct {
	Dir      string // directory holding <App>.<rank>.trc
	App      string // application name
	MaxLevel int    // deepest interval level reported; -1 = all
	Workers  int    // goroutines; 0 = GOMAXPROCS
	Exe      string // executable for symbolization, when not found from the trace header
	// Warn, when set, receives each warning as it is found (dtpa prints
	// them on stderr); they are also listed in Report.Warnings.
	Warn func(string)
}

// Analyze reads the traces and computes the report.
func Analyze(ctx context.Context, opts Options) (*report.Report, error) {
	return nil, errors.New("analyzer: not implemented yet")
}
