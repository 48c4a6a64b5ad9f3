package traceformat

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"
)

// decoder is shared by all readers: DecodeAll is safe for concurrent use
// and one decoder per file would cost memory per rank.
var decoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxRaw),
		zstd.WithDecoderMaxWindow(MaxRaw))
})

// zstdSlack is room left after a frame's decompressed bytes: with less
// than a few bytes to spare the decoder copies its last block with its
// slower, bounds-respecting loop (2.39 vs 2.21 ns per event, best of six,
// on a batch of the analyzer's benchmark trace).
const zstdSlack = 64

// Definitions is everything the definition frames read so far declared,
// indexed by id. Entries are never removed, so pointers stay valid.
type Definitions struct {
	Functions []*tracepb.Function // by Function.id; nil where undefined
	CallSites [][]uint64          // by CallSite.id; nil where undefined
	Modules   []*tracepb.Module
	Comms     []*tracepb.Communicator // by Communicator.local; nil where undefined
}

// Function returns the function with the given id, or nil.
func (d *Definitions) Function(id uint32) *tracepb.Function {
	if int(id) < len(d.Functions) {
		return d.Functions[id]
	}
	return nil
}

// Comm returns the communicator with the given local index, or nil.
func (d *Definitions) Comm(local uint32) *tracepb.Communicator {
	if int(local) < len(d.Comms) {
		return d.Comms[local]
	}
	return nil
}

// ReaderOptions tune a Reader.
type ReaderOptions struct {
	// Name is used in error messages (usually the file path).
	Name string
	// SkipEvents makes the reader pass over event batches without reading
	// or decoding them (seeking when the source is an io.Seeker), for a
	// first pass that only needs the definitions, clock-sync samples and
	// footer. ReadBatch then returns no batch, only the final io.EOF or
	// error. Damage inside a skipped batch is not detected.
	SkipEvents bool
	// SkipDefinitions, with SkipEvents, passes over the definition
	// frames too, for a first pass that needs only the header, the
	// clock-sync samples and the footer: a large run's definitions list
	// the world's members in every rank's trace, so that reading them
	// all costs the square of the ranks. Definitions then stays empty,
	// and damage inside a definitions frame is not detected either.
	SkipDefinitions bool
	// BufferSize is the size of the reader's read buffer; zero means
	// 64 KiB. A program that holds many readers at once (one per rank of
	// a large run) passes less, at the cost of more reads.
	BufferSize int
	// Members, when set, is shared by the readers of one run's traces,
	// which then share the communicators' member lists (MemberTable).
	Members *MemberTable
}

// Reader streams a trace file. Its memory holds one frame and one decoded
// batch plus the definitions, whatever the length of the file. Errors are
// sticky: after the first, every call returns it again.
type Reader struct {
	name    string
	r       *bufio.Reader
	off     int64 // offset of the next unread byte
	hdr     *tracepb.Header
	defs    Definitions
	syncs   []*tracepb.ClockSync
	footer  *tracepb.Footer
	frames  int
	batch   Batch
	lazy    LazyBatch
	useLazy bool // decode the next event batch as a LazyBatch
	payload []byte
	raw     []byte
	err     error

	skip     bool
	skipDefs bool      // ReaderOptions.SkipDefinitions
	seeker   io.Seeker // the source, when SkipEvents may seek
	src      io.Reader
	size     int64 // of the source, when seekable
	skipped  int   // event batches skipped

	nfuncs, nsites, ncomms int // definitions read, for the density bound
	members                *MemberTable
}

// NewReader reads the preamble and the header frame. It fails with a
// *VersionError for a format version it does not read, and with a
// *CorruptError when the file is not a trace or is cut before its header.
func NewReader(r io.Reader, opts ...ReaderOptions) (*Reader, error) {
	size := 64 << 10
	if len(opts) > 0 && opts[0].BufferSize > 0 {
		size = opts[0].BufferSize
	}
	tr := &Reader{r: bufio.NewReaderSize(r, size), src: r}
	if len(opts) > 0 {
		tr.name = opts[0].Name
		tr.skip = opts[0].SkipEvents
		tr.skipDefs = tr.skip && opts[0].SkipDefinitions
		tr.members = opts[0].Members
	}
	if s, ok := r.(io.Seeker); ok && tr.skip {
		// Seeking past event batches needs the size, to tell a batch cut
		// short from one that is complete.
		if cur, err := s.Seek(0, io.SeekCurrent); err == nil {
			if end, err := s.Seek(0, io.SeekEnd); err == nil {
				if _, err := s.Seek(cur, io.SeekStart); err == nil {
					tr.seeker, tr.size = s, end-cur
				}
			}
		}
	}
	var pre [PreambleSize]byte
	n, err := io.ReadFull(tr.r, pre[:])
	tr.off = int64(n)
	switch {
	case n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF):
		return nil, tr.corrupt(0, ErrEmpty, "empty file")
	case err == io.ErrUnexpectedEOF:
		if !isPrefix(pre[:min(n, len(Magic))], Magic[:]) {
			return nil, tr.corrupt(0, ErrNotTrace, "bad magic number")
		}
		return nil, tr.corrupt(int64(n), ErrTruncated, "file ends inside the preamble")
	case err != nil:
		return nil, fmt.Errorf("%s: reading preamble: %w", orTrace(tr.name), err)
	}
	if [8]byte(pre[:8]) != Magic {
		return nil, tr.corrupt(0, ErrNotTrace, "bad magic number")
	}
	major, minor := binary.LittleEndian.Uint16(pre[8:]), binary.LittleEndian.Uint16(pre[10:])
	if major < MinVersionMajor || major > VersionMajor {
		return nil, &VersionError{File: tr.name, Major: major, Minor: minor}
	}
	k, err := tr.next()
	if err != nil {
		return nil, err
	}
	if k != KindHeader {
		return nil, tr.corrupt(PreambleSize, ErrCorrupt, fmt.Sprintf("first frame is a %s, not the header", k))
	}
	return tr, nil
}

func isPrefix(p, of []byte) bool {
	return len(p) <= len(of) && string(p) == string(of[:len(p)])
}

// Header is the file's header.
func (r *Reader) Header() *tracepb.Header { return r.hdr }

// Definitions are the definitions read so far (all of them once the reader
// has returned io.EOF).
func (r *Reader) Definitions() *Definitions { return &r.defs }

// ClockSyncs are the clock-sync chunks read so far.
func (r *Reader) ClockSyncs() []*tracepb.ClockSync { return r.syncs }

// Footer is the footer, or nil if it has not been read (yet, or at all for a
// truncated file).
func (r *Reader) Footer() *tracepb.Footer { return r.footer }

// Offset is the byte offset just after the last frame read.
func (r *Reader) Offset() int64 { return r.off }

// Frames is the number of frames read so far, the header included.
func (r *Reader) Frames() int { return r.frames }

// SkippedBatches is the number of event batches passed over (SkipEvents).
func (r *Reader) SkippedBatches() int { return r.skipped }

// ReadBatch returns the next event batch, decoded into columns, reading
// definition, clock-sync and footer frames on the way. It returns io.EOF
// after a complete file. The batch is reused by the next call. Events not
// yet read with ReadEvent from the current batch are passed over.
func (r *Reader) ReadBatch() (*Batch, error) {
	r.useLazy = false
	if err := r.nextBatch(); err != nil {
		return nil, err
	}
	return &r.batch, nil
}

// ReadLazyBatch is ReadBatch for a caller that walks each batch once, in
// order: the batch's events are decoded one by one as LazyBatch.Next asks
// for them, which costs less than ReadBatch and a Cursor, and much less
// when many readers are interleaved (see LazyBatch). A damaged batch is
// refused as ReadBatch refuses it, before any of its events is handed out.
// The batch is valid until the next call of a Read method.
func (r *Reader) ReadLazyBatch() (*LazyBatch, error) {
	r.useLazy = true
	if err := r.nextBatch(); err != nil {
		return nil, err
	}
	return &r.lazy, nil
}

// nextBatch reads frames up to and including the next event batch.
func (r *Reader) nextBatch() error {
	r.lazy.reset() // it aliases the buffers the next frame is read into
	for {
		k, err := r.next()
		if err != nil {
			return err
		}
		if k == KindEvents && !r.skip {
			return nil
		}
	}
}

// ReadEvent returns the next event, or io.EOF after a complete file. The
// event's Reqs and Status alias the reader's buffers until the next call.
// It reads the batches with ReadLazyBatch; events of a batch returned by
// ReadBatch are not returned again.
func (r *Reader) ReadEvent() (Event, error) {
	var e Event
	for !r.lazy.Next(&e) {
		if _, err := r.ReadLazyBatch(); err != nil {
			return Event{}, err
		}
	}
	return e, nil
}

func (r *Reader) corrupt(off int64, cause error, reason string) error {
	rank := -1
	if r.hdr != nil {
		rank = int(r.hdr.Rank)
	}
	return &CorruptError{File: r.name, Rank: rank, Offset: off, Reason: reason, Err: cause}
}

// next reads and decodes one frame and returns its kind. After the footer it
// returns io.EOF (or an error if bytes follow the footer).
func (r *Reader) next() (Kind, error) {
	if r.err != nil {
		return 0, r.err
	}
	k, err := r.readFrame()
	if err != nil {
		r.err = err
	}
	return k, err
}

// NoFooter is the CorruptError reason of a file that ends cleanly, after
// a whole frame, without its footer: what a process killed before it
// wrote its trace's end leaves, rather than damage.
const NoFooter = "file ends without a footer (the traced process may have crashed or been killed)"

func (r *Reader) readFrame() (Kind, error) {
	start := r.off
	var h [FrameHeaderSize]byte
	n, err := io.ReadFull(r.r, h[:])
	r.off += int64(n)
	if r.footer != nil {
		if n == 0 && err == io.EOF {
			return 0, io.EOF
		}
		return 0, r.corrupt(start, ErrCorrupt, "data after the footer")
	}
	switch {
	case n == 0 && err == io.EOF:
		return 0, r.corrupt(start, ErrTruncated, NoFooter)
	case err == io.ErrUnexpectedEOF:
		return 0, r.corrupt(start, ErrTruncated, fmt.Sprintf("file ends inside a frame header (%d of %d bytes)", n, FrameHeaderSize))
	case err != nil:
		return 0, fmt.Errorf("%s: reading at byte offset %d: %w", orTrace(r.name), start, err)
	}
	plen := binary.LittleEndian.Uint32(h[0:])
	kind, enc := Kind(h[4]), Encoding(h[5])
	rawLen := binary.LittleEndian.Uint32(h[6:])
	sum := binary.LittleEndian.Uint32(h[10:])
	// Check every length before allocating anything for it.
	if why := frameHeaderProblem(plen, rawLen, enc); why != "" {
		return 0, r.corrupt(start, ErrCorrupt, why)
	}
	if (kind == KindEvents && r.skip) || (kind == KindDefinitions && r.skipDefs) {
		return kind, r.skipPayload(start, kind, int64(plen))
	}
	r.payload, n, err = appendPayload(r.r, r.payload[:0], int(plen))
	r.off += int64(n)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, r.corrupt(start, ErrTruncated, fmt.Sprintf("file ends inside a %s frame (%d of %d payload bytes)",
				kind, n, plen))
		}
		return 0, fmt.Errorf("%s: reading at byte offset %d: %w", orTrace(r.name), r.off, err)
	}
	if frameCRC(h[:10], r.payload) != sum {
		return 0, r.corrupt(start, ErrCorrupt, fmt.Sprintf("checksum mismatch in a frame announced as %s", kind))
	}
	raw := r.payload
	if enc == EncodingZstd {
		dec, err := decoder()
		if err != nil {
			return 0, fmt.Errorf("creating zstd decoder: %w", err)
		}
		var zh zstd.Header
		if err := zh.Decode(r.payload); err != nil {
			return 0, r.corrupt(start, ErrCorrupt, fmt.Sprintf("%s frame: bad zstd header: %v", kind, err))
		}
		if zh.HasFCS && zh.FrameContentSize != uint64(rawLen) {
			return 0, r.corrupt(start, ErrCorrupt, fmt.Sprintf("%s frame: zstd content size %d, frame says %d", kind, zh.FrameContentSize, rawLen))
		}
		if cap(r.raw) < int(rawLen)+zstdSlack {
			r.raw = make([]byte, 0, int(rawLen)+zstdSlack)
		}
		r.raw, err = dec.DecodeAll(r.payload, r.raw[:0])
		if err != nil {
			return 0, r.corrupt(start, ErrCorrupt, fmt.Sprintf("%s frame: decompressing: %v", kind, err))
		}
		if len(r.raw) != int(rawLen) {
			return 0, r.corrupt(start, ErrCorrupt, fmt.Sprintf("%s frame: decompressed to %d bytes, frame says %d", kind, len(r.raw), rawLen))
		}
		raw = r.raw
	}
	r.frames++
	if err := r.decode(kind, raw); err != nil {
		return 0, r.corrupt(start, ErrCorrupt, err.Error())
	}
	return kind, nil
}

// skipPayload passes over n payload bytes of the frame of kind k starting
// at start: seeking when it can, reading and discarding otherwise.
func (r *Reader) skipPayload(start int64, k Kind, n int64) error {
	truncated := func() error {
		return r.corrupt(start, ErrTruncated, fmt.Sprintf("file ends inside a %s frame", k))
	}
	if r.seeker != nil {
		if r.off+n > r.size {
			return truncated()
		}
		if buffered := int64(r.r.Buffered()); n <= buffered {
			r.r.Discard(int(n))
		} else {
			if _, err := r.seeker.Seek(n-buffered, io.SeekCurrent); err != nil {
				return fmt.Errorf("%s: seeking at byte offset %d: %w", orTrace(r.name), r.off, err)
			}
			r.r.Reset(r.src)
		}
		r.off += n
	} else {
		d, err := r.r.Discard(int(n))
		r.off += int64(d)
		if err != nil {
			if err == io.EOF {
				return truncated()
			}
			return fmt.Errorf("%s: reading at byte offset %d: %w", orTrace(r.name), r.off, err)
		}
	}
	r.frames++
	if k == KindEvents {
		r.skipped++
	}
	return nil
}

func (r *Reader) decode(k Kind, raw []byte) error {
	if k != KindHeader && r.hdr == nil {
		return fmt.Errorf("%s frame before the header", k)
	}
	switch k {
	case KindHeader:
		if r.hdr != nil {
			return errors.New("second header frame")
		}
		h := &tracepb.Header{}
		if err := proto.Unmarshal(raw, h); err != nil {
			return fmt.Errorf("malformed header: %v", err)
		}
		if h.WorldSize == 0 || h.Rank >= h.WorldSize {
			return fmt.Errorf("header: rank %d not in a world of %d", h.Rank, h.WorldSize)
		}
		r.hdr = h
	case KindDefinitions:
		d := &tracepb.Definitions{}
		if err := decodeDefinitions(raw, d); err != nil {
			return fmt.Errorf("malformed definitions: %v", err)
		}
		if cap(r.raw) > 64<<10 || cap(r.payload) > 64<<10 {
			// Definitions come at the start, and those of a large
			// run's world are large: the buffers of a reader held per
			// rank would keep their size (event batches grow them back
			// as they need).
			r.raw, r.payload = nil, nil
		}
		return r.addDefinitions(d)
	case KindEvents:
		if r.useLazy {
			if err := r.lazy.parse(raw); err != nil {
				return err
			}
			if err := r.checkRefs(r.lazy.tab.shapes, nil, r.lazy.lc[lazyOf[colNewComm]].b); err != nil {
				r.lazy.reset()
				return err
			}
			return nil
		}
		if err := decodeBatch(raw, &r.batch); err != nil {
			return err
		}
		return r.checkRefs(r.batch.shapes, r.batch.rare[rareOf[colNewComm]], nil)
	case KindClockSync:
		c := &tracepb.ClockSync{}
		if err := proto.Unmarshal(raw, c); err != nil {
			return fmt.Errorf("malformed clock sync: %v", err)
		}
		if len(c.LocalSendNs) != len(c.RemoteNs) || len(c.LocalSendNs) != len(c.LocalRecvNs) {
			return errors.New("clock sync: sample columns differ in length")
		}
		if c.Reference >= r.hdr.WorldSize {
			return fmt.Errorf("clock sync: reference rank %d not in a world of %d", c.Reference, r.hdr.WorldSize)
		}
		r.syncs = append(r.syncs, c)
	case KindFooter:
		f := &tracepb.Footer{}
		if err := proto.Unmarshal(raw, f); err != nil {
			return fmt.Errorf("malformed footer: %v", err)
		}
		r.footer = f
	case KindRecords:
		// Only a DeferredMajor file has them, and NewReader refuses those.
		return errors.New("raw records in a compacted trace")
	default:
		// A kind added by a later minor version: skipped by design.
	}
	return nil
}

// appendPayload appends a frame's n payload bytes from r to b, a MB at a
// time, so that a length field promising more than the file holds costs no
// more memory than the file. It returns b and how many bytes it read.
func appendPayload(r io.Reader, b []byte, n int) ([]byte, int, error) {
	done := 0
	for done < n {
		step := min(n-done, 1<<20)
		old := len(b)
		b = slices.Grow(b, step)[:old+step]
		k, err := io.ReadFull(r, b[old:])
		done += k
		if err != nil {
			return b[:old+k], done, err
		}
	}
	return b, done, nil
}

// frameCRC is the CRC-32C a frame header stores: of its first 10 bytes,
// then of its payload.
func frameCRC(h10, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, h10), castagnoli, payload)
}

// frameHeaderProblem says what is wrong with a frame header's lengths and
// encoding ("" when nothing is), before anything is allocated for them.
func frameHeaderProblem(plen, rawLen uint32, enc Encoding) string {
	switch {
	case plen > MaxPayload:
		return fmt.Sprintf("frame length %d exceeds the limit %d", plen, MaxPayload)
	case rawLen > MaxRaw:
		return fmt.Sprintf("frame raw length %d exceeds the limit %d", rawLen, MaxRaw)
	case enc == EncodingRaw && rawLen != plen:
		return "raw frame whose two lengths differ"
	case enc == EncodingZstd && uint64(rawLen) > uint64(plen)*maxExpansion:
		return fmt.Sprintf("frame claims %d bytes from %d compressed", rawLen, plen)
	case enc != EncodingRaw && enc != EncodingZstd:
		return fmt.Sprintf("unknown payload encoding %d", enc)
	}
	return ""
}

// dense bounds an id by how many entries of its kind the file has defined:
// writers assign ids densely from 0, and a reader's tables are indexed by
// id, so a sparse id would make it allocate for entries that do not exist.
func dense(id uint32, defined int) bool { return int64(id) < 4*int64(defined)+4096 && id < maxID }

// Dense reports whether a reader takes id for an id of its kind once
// defined entries of that kind are defined: what a writer of definitions
// for ids it did not assign itself (records recovered from a dead
// process's memory) checks first.
func Dense(id uint32, defined int) bool { return dense(id, defined) }

func grow[T any](s []T, id uint32) []T {
	if int(id) >= len(s) {
		s = append(s, make([]T, int(id)+1-len(s))...)
	}
	return s
}

func (r *Reader) addDefinitions(d *tracepb.Definitions) error {
	for _, f := range d.Functions {
		r.nfuncs++
		if !dense(f.Id, r.nfuncs) {
			return fmt.Errorf("function id %d is too large for %d functions defined (ids are assigned densely from 0)", f.Id, r.nfuncs)
		}
		r.defs.Functions = grow(r.defs.Functions, f.Id)
		r.defs.Functions[f.Id] = f
	}
	for _, s := range d.CallSites {
		r.nsites++
		if !dense(s.Id, r.nsites) {
			return fmt.Errorf("call-site id %d is too large for %d call sites defined (ids are assigned densely from 0)", s.Id, r.nsites)
		}
		r.defs.CallSites = grow(r.defs.CallSites, s.Id)
		pcs := s.Pcs
		if pcs == nil {
			pcs = []uint64{} // defined, if empty
		}
		r.defs.CallSites[s.Id] = pcs
	}
	r.defs.Modules = append(r.defs.Modules, d.Modules...)
	for _, c := range d.Communicators {
		r.ncomms++
		if !dense(c.Local, r.ncomms) {
			return fmt.Errorf("communicator index %d is too large for %d communicators defined (indexes are assigned densely from 0)", c.Local, r.ncomms)
		}
		if n := c.MembersRange; n > 0 {
			if len(c.Members) > 0 {
				return fmt.Errorf("communicator %d: both a member list and a member range", c.Local)
			}
			if n > r.hdr.WorldSize {
				return fmt.Errorf("communicator %d: member range of %d ranks in a world of %d", c.Local, n, r.hdr.WorldSize)
			}
			c.Members, c.MembersRange = r.members.firstRanks(int(n)), 0
		} else {
			for _, m := range c.Members {
				if m >= r.hdr.WorldSize && m != OtherWorld {
					return fmt.Errorf("communicator %d: member %d not in a world of %d", c.Local, m, r.hdr.WorldSize)
				}
			}
			c.Members = r.members.share(c.Id, false, c.Members)
		}
		if old := r.defs.Comm(c.Local); old != nil && !sameComm(old, c) {
			return fmt.Errorf("communicator index %d redefined differently (local indexes are never reused)", c.Local)
		}
		c.RemoteMembers = r.members.share(c.Id, true, c.RemoteMembers)
		r.defs.Comms = grow(r.defs.Comms, c.Local)
		r.defs.Comms[c.Local] = c
	}
	return nil
}

// checkRefs verifies that a batch (its shape table and new communicators,
// decoded or as a packed column) only names defined functions, call sites
// and communicators, so that users of the reader can index definitions
// without checks.
func (r *Reader) checkRefs(shapes []shape, newComm []uint64, packedNewComm []byte) error {
	fns, sites, comms := r.defs.Functions, r.defs.CallSites, r.defs.Comms
	for i := range shapes {
		sh := &shapes[i]
		if int(sh.fn) >= len(fns) || fns[sh.fn] == nil {
			return fmt.Errorf("shape %d: undefined function %d", i, sh.fn)
		}
		if int(sh.site) >= len(sites) || sites[sh.site] == nil {
			return fmt.Errorf("shape %d: undefined call site %d", i, sh.site)
		}
		if sh.attr&AttrComm != 0 && (int(sh.comm) >= len(comms) || comms[sh.comm] == nil) {
			return fmt.Errorf("shape %d: undefined communicator %d", i, sh.comm)
		}
	}
	bad := func(c uint32) bool { return c != CommNull && (int(c) >= len(comms) || comms[c] == nil) }
	for _, c := range newComm {
		if c := uint32(c); bad(c) {
			return fmt.Errorf("undefined new communicator %d", c)
		}
	}
	for col := (lcol{b: packedNewComm}); col.p < len(col.b); {
		if c := uint32(col.next()); bad(c) {
			return fmt.Errorf("undefined new communicator %d", c)
		}
	}
	return nil
}
