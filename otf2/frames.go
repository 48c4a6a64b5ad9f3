package otf2

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// An OTF2 event or definition file is a sequence of chunks of the size
// the anchor file gives (one for events, one for definitions). A chunk
// begins with a header and holds records up to an end-of-chunk byte; the
// last chunk is written only as far as it is used and ends with an
// end-of-file record.
//
// libotf2 3.0 reads each chunk into a buffer of the full chunk size and
// parses it up to the end of that buffer, not up to the end of what the
// file held: in a file cut short, or whose last records were overwritten
// so that their lengths lead past its end, it parses the buffer's
// uninitialised memory. What that memory held decides what happens; an
// end-of-chunk byte there makes it load the next chunk, which at the end
// of the file leaves a reused buffer as it was, and libotf2 reads the same
// chunks again and again, forever. Whether it does depends on what the
// allocator hands back, so the same cut file hangs on one machine and not
// on another (TestImportCutArchivePoisoned makes it hang every time).
// checkFrames follows the records' framing as libotf2 does and says how
// many records libotf2 may read before the framing leaves the file's
// bytes, so that the importer asks for those and never for one more.

// The framing records (OTF2's buffer format).
const (
	frameEndOfChunk  = 0x00
	frameEndOfFile   = 0x02
	frameChunkHeader = 0x03
	frameTimestamp   = 0x05 // in event files: the time of the records that follow
	frameAttributes  = 0x06 // in event files: attributes of the next event
	frameLittle      = 0x42 // the chunk header's endianness byte
	frameBig         = 0x23
	// chunkHeaderSize is the header: its type and endianness bytes and
	// the numbers of the chunk's first and last event.
	chunkHeaderSize = 2 + 8 + 8
)

// frames is what checkFrames found in one file.
type frames struct {
	// Whole is true when the records of the last chunk lead from its
	// header to an end-of-file record within the file: libotf2 then
	// reads nothing but the file's bytes. (Damage inside an earlier
	// chunk, which libotf2 holds whole, it finds and reports itself.)
	Whole bool
	// Records is, when the file is not whole, how many records (events,
	// or definitions) libotf2 reads before the damage.
	Records uint64
	Size    int64
	At      int64  // where the framing leaves the file, or breaks
	Why     string // what is wrong there
}

// String says where and what the damage is.
func (f frames) String() string {
	return fmt.Sprintf("byte %d of %d: %s", f.At, f.Size, f.Why)
}

// checkFrames checks the framing of an event file (events true) or a
// definition file with chunks of chunkSize bytes. A whole file is
// checked by its last chunk alone; a damaged one is then read from its
// start, to count the records before the damage. The error is for a file
// that cannot be read at all.
func checkFrames(path string, chunkSize uint64, events bool) (frames, error) {
	f, err := os.Open(path)
	if err != nil {
		return frames{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return frames{}, err
	}
	size := st.Size()
	res := frames{Size: size}
	if chunkSize < chunkHeaderSize+1 || chunkSize > 1<<40 {
		res.Why = fmt.Sprintf("the archive's chunk size (%d bytes) is not one libotf2 can read", chunkSize)
		return res, nil
	}
	if size == 0 {
		res.Why = "the file is empty"
		return res, nil
	}
	cs := int64(chunkSize)
	s := &frameScanner{r: bufio.NewReaderSize(nil, 64<<10), events: events}
	last := (size - 1) / cs * cs
	end, err := s.chunk(f, last, size, size, cs)
	if err != nil {
		return res, err
	}
	if end == frameEndOfFile {
		res.Whole = true
		return res, nil
	}
	// Damaged: count what libotf2 can read, chunk by chunk from the start.
	s.records = 0
	for start := int64(0); ; start += cs {
		end, err := s.chunk(f, start, min(start+cs, size), size, cs)
		if err != nil {
			return res, err
		}
		if end == frameEndOfFile {
			// An end before the last chunk: libotf2 stops there.
			res.Whole = true
			return res, nil
		}
		if end == frameEndOfChunk && start+cs < size {
			continue
		}
		res.At, res.Why = s.at, s.why
		if end == frameEndOfChunk {
			res.At, res.Why = size, "its last chunk ends without an end-of-file record (the file was cut where a chunk ends)"
		}
		res.Records = s.records
		return res, nil
	}
}

// frameScanner follows the records of one chunk at a time.
type frameScanner struct {
	r       *bufio.Reader
	events  bool
	last    bool // the chunk is the file's last: its end is the file's
	scratch [chunkHeaderSize]byte
	order   binary.ByteOrder
	pos     int64 // file offset of the next byte of r
	end     int64 // end of the chunk's bytes in the file
	bufEnd  int64 // end of the chunk as libotf2 holds it: its full size
	records uint64
	at      int64 // where the framing broke
	why     string
}

// errFrame marks a break in the framing; the scanner's at and why say
// which.
var errFrame = errors.New("framing broken")

// chunk follows the records of the chunk held in [start, end) of f, a
// file of size bytes, and returns the record that ended it: end of chunk
// or end of file, or 0xff when the framing broke (at and why say where
// and how). Records counts the records passed.
func (s *frameScanner) chunk(f *os.File, start, end, size, chunkSize int64) (byte, error) {
	s.r.Reset(io.NewSectionReader(f, start, end-start))
	s.pos, s.end, s.bufEnd = start, end, start+chunkSize
	s.last = end >= size
	err := s.walk()
	switch {
	case err == nil:
		return frameEndOfChunk, nil
	case errors.Is(err, errFrame):
		return 0xff, nil
	case errors.Is(err, errEOF):
		return frameEndOfFile, nil
	}
	return 0, err
}

// errEOF ends walk at an end-of-file record.
var errEOF = errors.New("end of file")

func (s *frameScanner) walk() error {
	start := s.pos
	hdr, err := s.take(start, chunkHeaderSize, "the chunk's header")
	if err != nil {
		return err
	}
	switch {
	case hdr[0] != frameChunkHeader:
		return s.broken(start, "no chunk header where a chunk begins")
	case hdr[1] == frameLittle:
		s.order = binary.LittleEndian
	case hdr[1] == frameBig:
		s.order = binary.BigEndian
	default:
		return s.broken(start+1, fmt.Sprintf("the chunk header's byte order mark is %#02x", hdr[1]))
	}
	for {
		at := s.pos
		b, err := s.take(at, 1, "an end-of-file record")
		if err != nil {
			return err
		}
		switch t := b[0]; {
		case t == frameEndOfChunk:
			return nil
		case t == frameEndOfFile:
			return errEOF
		case s.events && t == frameTimestamp:
			if _, err := s.take(at, 8, "a timestamp"); err != nil {
				return err
			}
		default:
			// Every other record, known to this libotf2 or not, says its
			// length: one byte, or 0xff and eight.
			l, err := s.take(at, 1, "a record's length")
			if err != nil {
				return err
			}
			n := uint64(l[0])
			if n == 0xff {
				l, err := s.take(at, 8, "a record's length")
				if err != nil {
					return err
				}
				n = s.order.Uint64(l)
			}
			// libotf2 refuses a record that leaves no byte of its chunk
			// after it (for the next one's type), but reads one that
			// runs past the file's bytes into the rest of its buffer.
			if n > uint64(s.end-s.pos) || n >= uint64(s.bufEnd-s.pos) {
				return s.broken(at, fmt.Sprintf("a record of %d bytes there runs past the end of %s", n, s.place()))
			}
			if _, err := s.r.Discard(int(n)); err != nil {
				return err
			}
			s.pos += int64(n)
			if !(s.events && t == frameAttributes) {
				s.records++
			}
		}
	}
}

// take reads n bytes of the chunk, or breaks at the record that begins
// at: the chunk's bytes end before what (a description) does.
func (s *frameScanner) take(at int64, n int, what string) ([]byte, error) {
	if int64(n) > s.end-s.pos {
		return nil, s.broken(at, s.place()+" ends where "+what+" should be")
	}
	b := s.scratch[:n]
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, err
	}
	s.pos += int64(n)
	return b, nil
}

// place names what ends at the chunk's end.
func (s *frameScanner) place() string {
	if s.last {
		return "the file"
	}
	return "its chunk"
}

func (s *frameScanner) broken(at int64, why string) error {
	s.at, s.why = at, why
	return errFrame
}
