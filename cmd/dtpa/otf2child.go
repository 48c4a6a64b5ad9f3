package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"github.com/dtpa/dtpa/otf2"
)

// libotf2 crashes when a write of the archive fails (a full disk, a
// quota): OTF2_Archive_CloseEvtWriter writes the buffer whose flush
// failed again, from memory it has freed. In dtpa's own process that
// ends dtpa with a Go crash dump of every goroutine and leaves the half
// archive on the disk that has no room. Package otf2 checks for room
// before each write; a write can fail all the same (a quota, another
// process filling the disk meanwhile). So dtpa writes the archive in a
// child process, itself run again with the export's arguments: libotf2's
// first message ("No space left on device") passes through, the crash is
// said in one line, and the half archive is removed.

// otf2IntoEnv names, for the process started to write an archive, the
// fresh directory it writes it into (otf2.PrepareOut's).
const otf2IntoEnv = "DTPA_OTF2_WRITE_INTO"

// otf2Child says whether this executable can be started to write an
// archive: dtpa's main, or a test binary whose TestMain runs Main.
var otf2Child bool

// exitCode is an error that Main turns into its exit code without a
// message: the child process that failed has said why.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// exportOTF2Child writes the archive of opts by a child process; its
// standard output goes to w, its standard error to stderr but for a
// runtime's crash dump, which becomes the error returned.
func exportOTF2Child(ctx context.Context, opts Options, w, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("otf2 export: %w", err)
	}
	into, err := otf2.PrepareOut(opts.Output)
	if err != nil {
		return err
	}
	args := []string{"--export", "otf2", "-o", opts.Output, "--dir", opts.traceDir()}
	if opts.Exe != "" {
		args = append(args, "--exe", opts.Exe)
	}
	cmd := exec.CommandContext(ctx, self, append(args, "--", opts.App)...)
	cmd.Env = append(os.Environ(), otf2IntoEnv+"="+into)
	cmd.Stdout = w
	f := &crashFilter{w: stderr}
	cmd.Stderr = f
	// Interrupted, the child ends as dtpa does (its own context), and
	// removes what it wrote.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err = cmd.Run()
	f.Close()
	if f.crash != "" {
		os.RemoveAll(into)
		if f.first != "" {
			return fmt.Errorf("otf2 export: writing the archive failed (%s) and libotf2 crashed after it (%s); %s was not written", f.first, f.crash, opts.Output)
		}
		return fmt.Errorf("otf2 export: libotf2 crashed writing the archive (%s); %s was not written", f.crash, opts.Output)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.RemoveAll(into)
		if f.first != "" {
			// The child's own last words are libotf2's error code
			// ("INTEGRITY_FAULT"), the cause is the system's.
			return fmt.Errorf("otf2 export: writing the archive failed (%s); %s was not written", f.first, opts.Output)
		}
		if c := ee.ExitCode(); c > 0 {
			return exitCode(c)
		}
		return fmt.Errorf("otf2 export: the process writing the archive ended: %v; %s was not written", err, opts.Output)
	}
	if err != nil {
		os.RemoveAll(into)
		return fmt.Errorf("otf2 export: %w", err)
	}
	return nil
}

// crashStart is the first line of the Go runtime's report of a fatal
// signal or error (in the child, inside libotf2): what follows it is
// the dump of its goroutines and registers.
var crashStart = regexp.MustCompile(`^(SIG[A-Z]+: .*|fatal error: .*|panic: .*)$`)

// crashFilter passes lines to w until a crash report starts, whose first
// line it keeps. Of libotf2's error lines it passes the first only, whose
// cause it remembers: the others are libotf2's own unwinding of it.
type crashFilter struct {
	w     io.Writer
	mu    sync.Mutex
	buf   bytes.Buffer
	crash string
	first string // the cause of the first "[OTF2] …" error line
}

func (f *crashFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf.Write(p)
	for {
		i := bytes.IndexByte(f.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		f.line(string(f.buf.Next(i + 1)))
	}
}

// Close passes on what is left without a newline.
func (f *crashFilter) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.buf.Len() > 0 {
		f.line(f.buf.String())
		f.buf.Reset()
	}
}

func (f *crashFilter) line(l string) {
	if f.crash != "" {
		return
	}
	text := string(bytes.TrimRight([]byte(l), "\n"))
	if crashStart.MatchString(text) {
		f.crash = text
		return
	}
	if m := otf2Msg.FindStringSubmatch(text); m != nil {
		if f.first != "" {
			return
		}
		f.first = m[1]
	}
	io.WriteString(f.w, l)
}

// otf2Msg is libotf2's error line, "[OTF2] src/file.c:123: error: CAUSE:
// WHAT" (CAUSE the system's error message).
var otf2Msg = regexp.MustCompile(`^\[OTF2\] [^ ]+: error: ([^:]+)`)
