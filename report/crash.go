package report

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Lines say where c happened, its headline first, then a line per frame:
//
//	rank 1 crashed: SIGSEGV (Segmentation fault), address not mapped (0x0)
//	in kernel at crash.c:12
//	called from solve at crash.c:20
//	called from main at crash.c:31
//
// or, for a rank that called MPI_Abort, "rank 1 called MPI_Abort", then
// its call's frames; for an uncaught Python exception, "rank 1 crashed:
// uncaught ZeroDivisionError: division by zero", then its traceback's
// lines; for a C++ exception no handler caught, "rank 1 crashed: SIGABRT
// (Aborted), abort() called: uncaught std::out_of_range"; for a crash
// after the trace ended, "rank 1 crashed after MPI_Finalize: …".
func (c *Crash) Lines() []string {
	head := fmt.Sprintf("rank %d crashed: %s", c.Rank, c.Signal)
	if c.Thread != nil && *c.Thread != 0 {
		head = fmt.Sprintf("rank %d (thread %d) crashed: %s", c.Rank, *c.Thread, c.Signal)
	}
	if c.Abort {
		head = fmt.Sprintf("rank %d called %s", c.Rank, c.Signal)
	}
	if c.After != "" {
		head = strings.Replace(head, " crashed: ", " crashed after "+c.After+": ", 1)
	}
	switch {
	case c.Exception != "" && c.SignalNumber != 0 && c.Cause != "":
		head += ", " + c.Cause + ": uncaught " + c.Exception
	case c.Exception != "" && c.SignalNumber != 0:
		head += ": uncaught " + c.Exception
	case c.Exception != "" && c.Cause != "":
		head += ": " + c.Cause
	case c.Cause != "" && c.Address != nil:
		head += fmt.Sprintf(", %s (%#x)", c.Cause, *c.Address)
	case c.Cause != "":
		head += ", " + c.Cause
	case c.Address != nil:
		head += fmt.Sprintf(" at address %#x", *c.Address)
	}
	out := []string{head}
	for i, f := range c.Frames {
		s := "called from "
		if i == 0 {
			s = "in "
		}
		s += f.name()
		if f.File != "" {
			s += fmt.Sprintf(" at %s:%d", filepath.Base(f.File), f.Line)
		}
		out = append(out, s)
	}
	if len(c.Frames) == 0 {
		out = append(out, "(its stack is unknown)")
	}
	if c.LastCall != nil {
		out = append(out, "after its last MPI call, "+c.LastCall.String())
	}
	return out
}

// String is "MPI_Barrier at crash.py:7", or the function alone.
func (p CallPlace) String() string {
	if p.File == "" {
		return p.Function
	}
	return fmt.Sprintf("%s at %s:%d", p.Function, filepath.Base(p.File), p.Line)
}

// CrashesHeading names a list of crashes: "Crashes", "MPI_Abort" when
// every one is a call of MPI_Abort, "Crashes and MPI_Abort" when some are.
func CrashesHeading(cs []Crash) string {
	aborts := 0
	for _, c := range cs {
		if c.Abort {
			aborts++
		}
	}
	switch aborts {
	case 0:
		return "Crashes"
	case len(cs):
		return "MPI_Abort"
	}
	return "Crashes and MPI_Abort"
}

// Where is c's headline and its program's innermost frame (At; else the
// innermost frame with a file), in one line: "rank 1 crashed: SIGSEGV
// (Segmentation fault), address not mapped (0x0), in kernel at
// crash.c:12", "rank 1 crashed: SIGABRT (Aborted), abort() called, called
// from check at segv.c:25"; then the rank's last MPI call when the report
// gives it (LastCall: no frame is the program's).
func (c *Crash) Where() string {
	w := c.where()
	if c.LastCall != nil {
		w += ", after its last MPI call, " + c.LastCall.String()
	}
	return w
}

func (c *Crash) where() string {
	l := c.Lines()
	if c.At >= 0 && c.At < len(c.Frames) && c.Frames[c.At].File != "" {
		f := c.Frames[c.At]
		in := "in"
		if c.At > 0 {
			in = "called from"
		}
		return fmt.Sprintf("%s, %s %s at %s:%d", l[0], in, f.name(), filepath.Base(f.File), f.Line)
	}
	for _, f := range c.Frames {
		if f.File != "" {
			return fmt.Sprintf("%s, in %s at %s:%d", l[0], f.name(), filepath.Base(f.File), f.Line)
		}
	}
	if len(c.Frames) > 0 {
		return l[0] + ", " + l[1]
	}
	return l[0]
}

// name is f's function, "??" when unknown (a Python frame of a file dtpa
// cannot read, as the interpreter's frozen modules).
func (f Frame) name() string {
	if f.Function == "" {
		return "??"
	}
	return f.Function
}
