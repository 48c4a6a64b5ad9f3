package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/hugeheap"
	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/html"
	"github.com/dtpa/dtpa/report/trpa"
	"github.com/dtpa/dtpa/srcchar"
)

// Options are what one dtpa invocation does, built from the command line by
// the Action so that tests can call Run directly.
type Options struct {
	Dir      string // where <App>.<rank>.trc are
	App      string
	MaxLevel int    // deepest interval level reported; -1 = all
	Exe      string // executable for symbolization
	Output   string // file for the report; "" = w
	JSON     bool   // JSON report instead of .trpa text
	HTML     bool   // self-contained HTML page with a timeline instead of .trpa text
	// Export names a format to write the run in instead of a report:
	// "chrome" (Chrome trace-event JSON), "otf2" (an OTF2 archive in the
	// directory Output); "" none.
	Export string
	// TimelineCalls is the timeline's detail budget for HTML (calls over
	// all ranks); 0 = defaultTimelineCalls.
	TimelineCalls int
	Render        trpa.Options
	// Analyze computes the report; nil means analyzer.Analyze. Tests pass
	// a stand-in that returns a hand-built report, so that rendering,
	// levels, output and exit codes are checked through the whole command.
	Analyze AnalyzeFunc
}

// AnalyzeFunc is the signature of analyzer.Analyze.
type AnalyzeFunc func(context.Context, analyzer.Options) (*report.Report, error)

// analyze is opts.Analyze, or analyzer.Analyze when unset, after the
// heap is prepared for the analysis.
func (opts Options) analyze() AnalyzeFunc {
	f := opts.Analyze
	if f == nil {
		f = analyzer.Analyze
	}
	return func(ctx context.Context, ao analyzer.Options) (*report.Report, error) {
		hugeheap.Prepare(heapAdvised)
		return f(ctx, ao)
	}
}

// traceDir is the directory of the traces, "." for the current one.
func (opts Options) traceDir() string {
	if opts.Dir == "" {
		return "."
	}
	return opts.Dir
}

// heapAdvised is how much of the heap is backed by huge pages where the
// kernel gives them on request (package hugeheap): an analysis of a few
// hundred thousand calls per rank needs tens of megabytes, whose 4 KB
// pages faulted one by one were up to a third of its CPU time. It is
// prepared when an analysis starts, not at every start of dtpa (--help,
// a bad command line, no traces found), since preparing forces a
// collection.
const heapAdvised = 64 << 20

// analyzerOptions are the analyzer's options for the traces in dir (the
// trace directory, "." for the current one); warn gets each warning of
// the analysis, symWarn each of the symbolizer (reading the executable),
// which the report does not list.
func (opts Options) analyzerOptions(dir string, warn, symWarn func(string)) analyzer.Options {
	return analyzer.Options{
		Dir:      opts.Dir,
		App:      opts.App,
		MaxLevel: opts.MaxLevel,
		Exe:      opts.Exe,
		Warn:     warn,
		// The executable is taken from --exe when given, else from the
		// path the traces recorded, else next to the traces (srcchar).
		Symbolizer: srcchar.New(srcchar.Config{Exe: opts.Exe, TraceDir: dir, Warn: symWarn}),
	}
}

// sortedSymWarnings puts the symbolizer's warnings in an order that does
// not depend on which call site happened to be symbolized first: that
// order varies between runs and between dtpa and dtpa-mpi, whose outputs
// must be the same.
func sortedSymWarnings(ws []string) []string {
	slices.Sort(ws)
	return ws
}

// defaultTimelineCalls is the HTML page's timeline detail budget: about
// 40 bytes of page per call with its arrows, so the page stays near 10 MB.
const defaultTimelineCalls = 250_000

// dist describes the process when dtpa runs as dtpa-mpi (mpi.go): on, its
// analysis is an MPI job; silent, this process takes part in it but
// process 0 writes the report, the page or the export.
var dist struct{ on, silent bool }

// errNotDistributed is what dtpa-mpi says of dtpa view.
var errNotDistributed = errors.New("dtpa view is an interactive server of one process: run dtpa view, not dtpa-mpi")

// Run analyses the traces and writes the report to w (or to opts.Output),
// the warnings to stderr once the analysis is over, one line per problem.
func Run(ctx context.Context, opts Options, w, stderr io.Writer) error {
	// The analysis' warnings as found, printed if it fails; else the
	// report's, in their final words (with source positions). Then the
	// symbolizer's, which the report does not list.
	var warns, symWarns []string
	warn := func(msg string) { warns = append(warns, msg) }
	symWarn := func(msg string) { symWarns = append(symWarns, msg) }
	var rep *report.Report
	defer func() {
		if rep != nil {
			warns = rep.Warnings
		}
		for _, msg := range append(report.GroupWarnings(warns), sortedSymWarnings(symWarns)...) {
			fmt.Fprintf(stderr, "dtpa: warning: %s\n", msg)
		}
	}()
	opts, rerr := resolve(opts)
	if rerr != nil {
		return rerr
	}
	dir := opts.traceDir()
	if opts.Export != "" {
		return export(ctx, opts, w, stderr, warn, symWarn)
	}
	aopts := opts.analyzerOptions(dir, warn, symWarn)
	if opts.HTML {
		aopts.Timeline = &analyzer.TimelineRecorder{MaxCalls: opts.TimelineCalls}
		if aopts.Timeline.MaxCalls <= 0 {
			aopts.Timeline.MaxCalls = defaultTimelineCalls
		}
		defer aopts.Timeline.Close()
	}
	var err error
	if isTerminal(stderr) {
		aopts.Progress = &analyzer.Progress{}
		stop := showProgress(stderr, aopts.Progress)
		rep, err = opts.analyze()(ctx, aopts)
		stop()
	} else {
		rep, err = opts.analyze()(ctx, aopts)
	}
	if err != nil {
		rep = nil
		return err
	}
	if dist.silent {
		return nil
	}
	return write(rep, opts, aopts, w)
}

// resolve finds the traces the user named (./app, app.0.trc, some/dir/app
// or a directory, analyzer.FindTraces). When nothing matches, opts stay as
// given and the analysis reports what the directory does hold; a
// directory named that does not hold the traces of one task is an error
// here.
func resolve(opts Options) (Options, error) {
	d, app, err := analyzer.FindTraces(opts.Dir, opts.App)
	if err == nil {
		opts.Dir, opts.App = d, app
		return opts, nil
	}
	p := opts.App
	if !filepath.IsAbs(p) {
		p = filepath.Join(opts.Dir, p)
	}
	if st, serr := os.Stat(p); serr == nil && st.IsDir() {
		return opts, err
	}
	return opts, nil
}

// write renders the report of a finished analysis (rep, err) and writes
// it, with its findings and warnings grouped one line per problem.
func write(rep *report.Report, opts Options, aopts analyzer.Options, w io.Writer) error {
	rep = keepLevels(rep, opts.MaxLevel)
	out := *rep
	out.Findings = report.FindingsOf(&out)
	out.Warnings = report.GroupWarnings(rep.Warnings)
	rep = &out

	if opts.HTML {
		return writeHTML(rep, opts, aopts.Timeline, w)
	}
	// Render completely before writing, and write -o FILE as a temporary
	// file renamed over it (createOutput), so that a failure (a full disk)
	// never leaves half a report there. The JSON is written from the slice it was
	// rendered into: a copy into a buffer was as many bytes again of
	// fresh memory (2 MB for hpcc's report), each page of it faulted in.
	var text []byte
	var err error
	switch {
	case opts.JSON:
		text, err = appendJSON(nil, rep)
	default:
		var buf bytes.Buffer
		err = trpa.Render(&buf, rep, opts.Render)
		text = buf.Bytes()
	}
	if err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	if opts.Output == "" {
		_, err = w.Write(text)
		return err
	}
	if err := writeOutput(opts.Output, text); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// writeOutput writes data to the -o file at path whole or not at all
// (createOutput).
func writeOutput(path string, data []byte) error {
	o, err := createOutput(path, filepath.Dir(path))
	if err != nil {
		return err
	}
	if _, err := o.f.Write(data); err != nil {
		o.abort()
		return err
	}
	return o.commit()
}

// writeHTML writes the page of rep and the timeline tl as it renders it
// (the timeline a lane at a time, analyzer.TimelineRecorder.WriteJSON):
// to w, or to a temporary file beside opts.Output renamed once complete,
// so that a failure never leaves half a page in -o FILE.
func writeHTML(rep *report.Report, opts Options, tl *analyzer.TimelineRecorder, w io.Writer) (err error) {
	var tlJSON func(io.Writer) error
	if tl != nil {
		tlJSON = tl.WriteJSON
	}
	page := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		if err := html.WriteStream(bw, nonNil(rep), tlJSON); err != nil {
			return fmt.Errorf("rendering report: %w", err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		return nil
	}
	if opts.Output == "" {
		return page(w)
	}
	o, err := createOutput(opts.Output, filepath.Dir(opts.Output))
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := page(o.f); err != nil {
		o.abort()
		return err
	}
	if err := o.commit(); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// outFile is an -o output written whole or not at all: a temporary file
// beside it, renamed over it by commit, when the path names a regular file
// or nothing yet; any other path (/dev/null, a FIFO, a terminal, a
// symbolic link) is written in place, since renaming over it would replace
// the device or the link with a file.
type outFile struct {
	f    *os.File
	path string
	tmp  bool
}

// createOutput opens path for writing; tmpDir holds the temporary file.
func createOutput(path, tmpDir string) (*outFile, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		return &outFile{f: f, path: path}, nil
	}
	f, err := os.CreateTemp(tmpDir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &outFile{f: f, path: path, tmp: true}, nil
}

// commit ends the write: the temporary file renamed over the path.
func (o *outFile) commit() error {
	if !o.tmp {
		return o.f.Close()
	}
	if err := o.f.Chmod(0o644); err != nil {
		o.abort()
		return err
	}
	if err := o.f.Close(); err != nil {
		os.Remove(o.f.Name())
		return err
	}
	if err := os.Rename(o.f.Name(), o.path); err != nil {
		os.Remove(o.f.Name())
		return err
	}
	return nil
}

// abort drops the write: the temporary file removed (in place, what was
// written stays).
func (o *outFile) abort() {
	o.f.Close()
	if o.tmp {
		os.Remove(o.f.Name())
	}
}

// export writes the run as Chrome trace-event JSON, streamed: to w, or
// to a temporary file beside opts.Output renamed once complete, so that a
// failure never leaves half a file.
func export(ctx context.Context, opts Options, w, stderr io.Writer, warn, symWarn func(string)) (err error) {
	if opts.Export == "otf2" {
		return exportOTF2(ctx, opts, w, stderr, warn)
	}
	if opts.Export != "chrome" {
		return fmt.Errorf("unknown export format %q", opts.Export)
	}
	dir := opts.traceDir()
	x := &analyzer.ChromeExport{W: w}
	if opts.Output != "" {
		// The spool goes beside the output too: the disk that takes the
		// export takes its spool, a tenth of it, rather than /tmp.
		x.TempDir = filepath.Dir(opts.Output)
	}
	if dist.silent {
		// Its ranks' events go to process 0, which writes the file.
		x.W = io.Discard
	}
	var o *outFile
	if opts.Output != "" && !dist.silent {
		o, err = createOutput(opts.Output, x.TempDir)
		if err != nil && dist.on {
			// The other processes learn it from the analysis, which
			// returns it at once.
			x.OpenErr = fmt.Errorf("writing export: %w", err)
			x.W = io.Discard
			aopts := opts.analyzerOptions(dir, warn, symWarn)
			aopts.Chrome = x
			_, err = opts.analyze()(ctx, aopts)
			if err == nil {
				err = x.OpenErr
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("writing export: %w", err)
		}
		defer func() {
			if o != nil {
				o.abort()
			}
		}()
		x.W = o.f
	}
	aopts := opts.analyzerOptions(dir, warn, symWarn)
	aopts.Chrome = x
	_, err = opts.analyze()(ctx, aopts)
	if err != nil || o == nil {
		return err
	}
	c := o
	o = nil
	if err := c.commit(); err != nil {
		return fmt.Errorf("writing export: %w", err)
	}
	return nil
}

// exportOTF2Archive writes an OTF2 archive: otf2.Export, or under
// dtpa-mpi otf2.ExportDist (mpi.go).
var exportOTF2Archive = otf2.Export

// exportOTF2 writes the run as an OTF2 archive into the directory
// opts.Output (package otf2): in a child process where one can be started
// (exportOTF2Child), else in this one.
func exportOTF2(ctx context.Context, opts Options, w, stderr io.Writer, warn func(string)) error {
	if opts.Output == "" {
		return usagef("--export otf2 writes a directory: give it with -o DIR")
	}
	into := os.Getenv(otf2IntoEnv)
	if into == "" && otf2Child && !dist.on {
		return exportOTF2Child(ctx, opts, w, stderr)
	}
	dir := opts.traceDir()
	_, err := exportOTF2Archive(ctx, otf2.ExportOptions{Dir: opts.Dir, App: opts.App, Out: opts.Output, Warn: warn, Into: into,
		Symbolizer: srcchar.New(srcchar.Config{Exe: opts.Exe, TraceDir: dir, Warn: warn})})
	return err
}

// keepLevels drops intervals deeper than maxLevel. The analyzer is asked
// for the same cut; doing it here too keeps the level promise whatever
// the analyzer returns, without modifying its report.
func keepLevels(r *report.Report, maxLevel int) *report.Report {
	if maxLevel < 0 {
		return r
	}
	out := *r
	out.Intervals = nil
	for _, iv := range r.Intervals {
		if iv.Level <= maxLevel {
			out.Intervals = append(out.Intervals, iv)
		}
	}
	return &out
}

// appendJSON appends the report as documented in docs/report-format.md:
// 2-space indentation, a final newline, and empty arrays rather than null
// so that consumers need not special-case absent lists.
func appendJSON(dst []byte, r *report.Report) ([]byte, error) {
	b, err := report.AppendIndentedJSON(dst, nonNil(r))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func nonNil(r *report.Report) *report.Report {
	out := *r
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	out.Intervals = make([]report.Interval, len(r.Intervals))
	for i, iv := range r.Intervals {
		if iv.Path == nil {
			iv.Path = []int{}
		}
		if iv.Ranks == nil {
			iv.Ranks = []report.Rank{}
		}
		srcs := make([]report.SRC, len(iv.SRC))
		for j, s := range iv.SRC {
			if s.Stack == nil {
				s.Stack = []report.Frame{}
			}
			if s.Ranks == nil {
				s.Ranks = []report.SRCRank{}
			}
			srcs[j] = s
		}
		iv.SRC = srcs
		out.Intervals[i] = iv
	}
	return &out
}
