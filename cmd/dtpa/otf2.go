package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dtpa/dtpa/otf2"
)

// importOTF2 lets dtpa analyse a Score-P OTF2 archive with every option it
// has for its own traces: when opts.App names an archive (its anchor file
// *.otf2, or the experiment directory holding it), the archive is
// converted into trace files in a temporary directory and opts are pointed
// there. done removes that directory; it is a no-op for dtpa's own traces.
func importOTF2(ctx context.Context, opts *Options, stderr io.Writer) (done func(), err error) {
	done = func() {}
	path := opts.App
	if !filepath.IsAbs(path) && opts.Dir != "" && !otf2.IsArchive(path) {
		path = filepath.Join(opts.Dir, path)
	}
	if !otf2.IsArchive(path) {
		return done, nil
	}
	tmp, err := os.MkdirTemp("", "dtpa-otf2-")
	if err != nil {
		return done, fmt.Errorf("importing %s: %w", path, err)
	}
	done = func() { os.RemoveAll(tmp) }
	anchor, err := otf2.Anchor(path)
	if err != nil {
		return done, err
	}
	// The experiment directory names the run (scorep_<program>_…).
	app := strings.Map(func(r rune) rune {
		if r == '/' || r == '*' || r == '?' || r == '[' {
			return '_'
		}
		return r
	}, filepath.Base(filepath.Dir(anchor)))
	if app == "" || app == "." || strings.HasPrefix(app, "-") {
		app = "otf2"
	}
	warn := func(msg string) { fmt.Fprintf(stderr, "dtpa: warning: %s\n", msg) }
	if _, err := otf2.Import(ctx, anchor, tmp, app, warn); err != nil {
		return done, err
	}
	opts.Dir, opts.App = tmp, app
	return done, nil
}
