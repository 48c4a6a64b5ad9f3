package traceformat

import (
	"errors"
	"fmt"
)

// Sentinel causes carried by CorruptError; test them with errors.Is.
var (
	// ErrTruncated: the file ends in the middle of a frame, or without a
	// footer (the program crashed or was killed, or the disk filled up).
	ErrTruncated = errors.New("trace likely truncated")
	// ErrCorrupt: a frame's checksum or content is wrong.
	ErrCorrupt = errors.New("trace likely corrupt")
	// ErrNotTrace: the file does not start with the trace magic.
	ErrNotTrace = errors.New("not a dtpa trace file")
	// ErrEmpty: the file is empty, a truncation (errors.Is(err,
	// ErrTruncated) holds too) at its very start: the tracer creates the
	// file inside MPI_Init and writes its first bytes, the header, at the
	// end of MPI_Init, so its process ended inside MPI_Init.
	ErrEmpty = fmt.Errorf("%w: the process ended inside MPI_Init, before its trace began", ErrTruncated)
)

// CorruptError reports damage in a trace file: where it is and what was
// found. Every frame before Offset was intact and has been delivered.
type CorruptError struct {
	File   string // file name, when the reader was given one
	Rank   int    // world rank from the header, -1 when unknown
	Offset int64  // byte offset of the damaged frame (or of the end of file)
	Reason string // what was found
	Err    error  // ErrTruncated (or ErrEmpty), ErrCorrupt or ErrNotTrace, possibly wrapping more
}

func (e *CorruptError) Error() string {
	where := e.File
	if where == "" {
		where = "trace"
	}
	if e.Rank >= 0 {
		where = fmt.Sprintf("%s (rank %d)", where, e.Rank)
	}
	return fmt.Sprintf("%s: byte offset %d: %s: %v", where, e.Offset, e.Reason, e.Err)
}

// Unwrap returns the cause, so that errors.Is(err, ErrTruncated) works.
func (e *CorruptError) Unwrap() error { return e.Err }

// VersionError reports a file written in a format version this package does
// not read.
type VersionError struct {
	File         string
	Major, Minor uint16
}

func (e *VersionError) Error() string {
	if e.Major == DeferredMajor {
		return fmt.Sprintf("%s: its events are not compacted yet (the tracer left their encoding to dtrun, which compacts a run's traces when the job ends, but did not here): run `dtrun --compact %s`",
			orTrace(e.File), orTrace(e.File))
	}
	if IsDeferredMajor(e.Major) {
		return fmt.Sprintf("%s: its events are not compacted yet, and are raw records of another tracer version (deferred format %#04x; this one compacts %#04x): run `dtrun --compact %s` with the dtrun of the installation that traced it",
			orTrace(e.File), e.Major, DeferredMajor, orTrace(e.File))
	}
	return fmt.Sprintf("%s: trace format version %d.%d is not supported: this dtpa reads versions %d.x to %d.x; use a dtpa at least as new as the tracer that wrote the file",
		orTrace(e.File), e.Major, e.Minor, MinVersionMajor, VersionMajor)
}

func orTrace(s string) string {
	if s == "" {
		return "trace"
	}
	return s
}
