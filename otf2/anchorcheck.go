package otf2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// A damaged anchor file can keep libotf2 busy for minutes or longer
// before it reports the damage: one changed byte of the creator string
// makes OTF2_Reader_Open count through a field read as a length, with a
// page fault per step (45 s for one such byte in a 283-byte file, found
// by FuzzImport). The anchor is therefore first read in a child process,
// which is killed after AnchorTimeout; a crash of libotf2 there is a
// clear error too, not the end of dtpa.
//
// The child is the program itself: a program that imports archives calls
// ServeAnchorCheck first thing in main (or TestMain). Without that call
// Import reads the anchor in-process, as before.

// anchorCheckEnv names the anchor file a process started to check it
// reads.
const anchorCheckEnv = "DTPA_OTF2_CHECK_ANCHOR"

// AnchorTimeout bounds the child's reading of an anchor file, which takes
// well under a millisecond when the file is whole. The environment
// variable DTPA_OTF2_ANCHOR_TIMEOUT (a Go duration, "2s") sets it in a
// program that calls ServeAnchorCheck: for a file system slow to answer,
// and for tests, which cannot wait for how long a damaged file keeps
// libotf2 busy on a given machine (seconds to minutes).
var AnchorTimeout = 10 * time.Second

// anchorTimeoutEnv names the variable that sets AnchorTimeout.
const anchorTimeoutEnv = "DTPA_OTF2_ANCHOR_TIMEOUT"

var anchorChild bool

// ServeAnchorCheck makes Import read anchor files in a child process
// first. If this process is that child, it reads the anchor file, prints
// libotf2's error, if any, to standard error and exits (1 on an error).
func ServeAnchorCheck() {
	if path := os.Getenv(anchorCheckEnv); path != "" {
		a, err := openArchive(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		a.close()
		os.Exit(0)
	}
	anchorChild = true
	if d, err := time.ParseDuration(os.Getenv(anchorTimeoutEnv)); err == nil && d > 0 {
		AnchorTimeout = d
	}
}

// checkAnchor reads anchor in a child process (ServeAnchorCheck). Only a
// child that does not end in time, or dies of a signal, is an error here:
// one that reports an error leaves it to the reading in this process,
// which says it the same way.
func checkAnchor(ctx context.Context, anchor string) error {
	if !anchorChild {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, AnchorTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), anchorCheckEnv+"="+anchor)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%s: the anchor file is damaged: libotf2 did not finish reading it in %v", anchor, AnchorTimeout)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			msg := strings.TrimSpace(stderr.String())
			if msg != "" {
				msg = ": " + lastLine(msg)
			}
			return fmt.Errorf("%s: libotf2 crashed reading the anchor file (%v)%s", anchor, ws.Signal(), msg)
		}
	}
	return nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
