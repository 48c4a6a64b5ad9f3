package traceformat

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"
)

// A FrameScanner reads a trace frame by frame, checking each frame's
// lengths and checksum but decoding nothing: what compacts a deferred trace
// (tracer/records, Compact) copies the frames it does not change as they
// are. Unlike a Reader it reads DeferredMajor files.
type FrameScanner struct {
	r            *bufio.Reader
	name         string
	off          int64
	Major, Minor uint16
	f            Frame
}

// A Frame is one frame as stored: its 14-byte header and its payload.
// Bytes is reused by the scanner's next call.
type Frame struct {
	Kind   Kind
	Enc    Encoding
	Offset int64  // of the frame's first byte in the file
	Bytes  []byte // header and payload
}

// Payload is the frame's stored payload.
func (f *Frame) Payload() []byte { return f.Bytes[FrameHeaderSize:] }

// Unmarshal decodes the frame's chunk message into m.
func (f *Frame) Unmarshal(m proto.Message) error {
	raw := f.Payload()
	if f.Enc == EncodingZstd {
		var err error
		if raw, err = f.decompress(nil); err != nil {
			return err
		}
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		return fmt.Errorf("%s frame at byte offset %d: %w", f.Kind, f.Offset, err)
	}
	return nil
}

// AppendMessage appends the frame's chunk message, encoded, to dst: its
// payload, decompressed.
func (f *Frame) AppendMessage(dst []byte) ([]byte, error) {
	if f.Enc != EncodingZstd {
		return append(dst, f.Payload()...), nil
	}
	return f.decompress(dst)
}

func (f *Frame) decompress(dst []byte) ([]byte, error) {
	dec, err := decoder()
	if err != nil {
		return dst, err
	}
	out, err := dec.DecodeAll(f.Payload(), dst)
	if err != nil {
		return dst, fmt.Errorf("%s frame at byte offset %d: decompressing: %w", f.Kind, f.Offset, err)
	}
	return out, nil
}

// NewFrameScanner reads the preamble. name is the file's name in errors.
// Its buffer holds frame headers and small frames: a payload larger than
// the buffer is read into the frame's own, past it. A buffer of a
// megabyte, fresh memory faulted in page by page, was a third of the page
// faults of compacting a small trace.
func NewFrameScanner(r io.Reader, name string) (*FrameScanner, error) {
	s := &FrameScanner{r: bufio.NewReaderSize(r, 64<<10), name: name}
	var pre [PreambleSize]byte
	n, err := io.ReadFull(s.r, pre[:])
	s.off = int64(n)
	switch {
	case n == 0 && err == io.EOF:
		return nil, s.corrupt(0, ErrEmpty, "empty file")
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, s.corrupt(int64(n), ErrTruncated, "file ends inside the preamble")
	case err != nil:
		return nil, fmt.Errorf("%s: reading preamble: %w", orTrace(name), err)
	case [8]byte(pre[:8]) != Magic:
		return nil, s.corrupt(0, ErrNotTrace, "bad magic number")
	}
	s.Major, s.Minor = binary.LittleEndian.Uint16(pre[8:]), binary.LittleEndian.Uint16(pre[10:])
	if (s.Major < MinVersionMajor || s.Major > VersionMajor) && s.Major != DeferredMajor {
		return nil, &VersionError{File: name, Major: s.Major, Minor: s.Minor}
	}
	return s, nil
}

// Next returns the next intact frame. At the end of the file it returns
// io.EOF; a frame cut short or damaged is a *CorruptError at its offset
// (every frame before it was returned).
func (s *FrameScanner) Next() (*Frame, error) {
	start := s.off
	b := s.f.Bytes[:0]
	if cap(b) < FrameHeaderSize {
		b = make([]byte, 0, 1<<17)
	}
	b = b[:FrameHeaderSize]
	n, err := io.ReadFull(s.r, b)
	s.off += int64(n)
	switch {
	case n == 0 && err == io.EOF:
		return nil, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, s.corrupt(start, ErrTruncated, "file ends inside a frame header")
	case err != nil:
		return nil, fmt.Errorf("%s: reading at byte offset %d: %w", orTrace(s.name), start, err)
	}
	plen, rawLen := binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint32(b[6:])
	kind, enc := Kind(b[4]), Encoding(b[5])
	if why := frameHeaderProblem(plen, rawLen, enc); why != "" {
		return nil, s.corrupt(start, ErrCorrupt, why)
	}
	b, n, err = appendPayload(s.r, b, int(plen))
	s.off += int64(n)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, s.corrupt(start, ErrTruncated, fmt.Sprintf("file ends inside a %s frame", kind))
	case err != nil:
		return nil, fmt.Errorf("%s: reading at byte offset %d: %w", orTrace(s.name), s.off, err)
	case frameCRC(b[:10], b[FrameHeaderSize:]) != binary.LittleEndian.Uint32(b[10:]):
		return nil, s.corrupt(start, ErrCorrupt, fmt.Sprintf("checksum mismatch in a frame announced as %s", kind))
	}
	s.f = Frame{Kind: kind, Enc: enc, Offset: start, Bytes: b}
	return &s.f, nil
}

func (s *FrameScanner) corrupt(off int64, cause error, reason string) error {
	return &CorruptError{File: s.name, Rank: -1, Offset: off, Reason: reason, Err: cause}
}
