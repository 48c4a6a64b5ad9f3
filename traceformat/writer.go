package traceformat

import (
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriterOptions tune a Writer. The zero value is sensible.
type WriterOptions struct {
	// Level is the zstd level; zero means zstd.SpeedDefault, which measured
	// here gives the best bytes per event at a cost the tracer's background
	// encoder affords (see BenchmarkEncode).
	Level zstd.EncoderLevel
	// Raw stores payloads uncompressed (for debugging and tests).
	Raw bool
	// RawLiterals compresses without entropy coding (zstd's literals are
	// stored as they are, matches still found): the tracer's cheaper
	// setting, about a third less CPU per event for about a quarter more
	// bytes (tracer/records BenchmarkDecodeEncode128K). The frames are
	// ordinary zstd: readers need nothing new.
	RawLiterals bool
	// Deferred writes a DeferredMajor file, whose events are raw records
	// (WriteRecords) until it is compacted. Its other frames are stored
	// uncompressed too, until Compress, and the compaction compresses
	// them (CopyFrame): a traced rank then makes and warms no zstd encoder
	// inside MPI_Init, only as it ends, where its compaction needs one.
	Deferred bool
}

// Writer writes one trace file: the preamble and header at creation, then
// any number of definition, event and clock-sync frames, and a footer at
// Close. Each frame is complete on disk when its Write call returns, so a
// process that dies later leaves a readable file. A Writer is not safe for
// concurrent use.
type Writer struct {
	w       io.Writer
	off     int64
	enc     *zstd.Encoder // made at the first compressed frame
	encKey  encKey
	raw     bool   // frames are stored uncompressed (for now: Compress)
	canZstd bool   // the options compress
	buf     []byte // protobuf encoding of the current chunk
	batches batchEncoder
	frame   []byte // frame header + payload
	events  uint64
	err     error // sticky: after a failed write nothing more is written
	closed  bool

	// Before Start (NewWriterAhead): the preamble, and the frames written
	// so far, which follow the header.
	held    []byte
	holding bool
}

// NewWriter writes the preamble and the header frame to w.
func NewWriter(w io.Writer, hdr *tracepb.Header, opts WriterOptions) (*Writer, error) {
	tw, err := NewWriterAhead(w, opts)
	if err != nil {
		return nil, err
	}
	if err := tw.Start(hdr); err != nil {
		return nil, err
	}
	return tw, nil
}

// NewWriterAhead makes a Writer that writes nothing to w until Start gives
// it the header: frames written before (definitions) are encoded at once
// and kept in memory, and Start writes them after the header. The tracer
// encodes its definitions this way while MPI_Init still waits for the run
// id that its header carries.
func NewWriterAhead(w io.Writer, opts WriterOptions) (*Writer, error) {
	tw := &Writer{w: w, raw: opts.Raw || opts.Deferred, canZstd: !opts.Raw, holding: true}
	if !opts.Raw {
		level := opts.Level
		if level == 0 {
			level = zstd.SpeedDefault
		}
		tw.encKey = encKey{level, opts.RawLiterals}
	}
	var pre [PreambleSize]byte
	copy(pre[:], Magic[:])
	major := uint16(VersionMajor)
	if opts.Deferred {
		major = DeferredMajor
	}
	binary.LittleEndian.PutUint16(pre[8:], major)
	binary.LittleEndian.PutUint16(pre[10:], VersionMinor)
	tw.held = append(tw.held, pre[:]...)
	return tw, nil
}

// Start writes the preamble, the header frame and the frames written since
// NewWriterAhead, in one Write call. A Writer from NewWriter is started.
func (w *Writer) Start(hdr *tracepb.Header) error {
	if !w.holding {
		return errors.New("trace writer already started")
	}
	frames := w.held[PreambleSize:]
	w.held = w.held[:PreambleSize:PreambleSize] // the header frame is appended to a copy of the preamble
	if err := w.writeMessage(KindHeader, hdr); err != nil {
		return err
	}
	all := append(w.held, frames...)
	w.held, w.holding = nil, false
	return w.write(all)
}

// Compress has the frames written from now on compressed, as the options
// say: a Deferred writer's frames are stored uncompressed until then (the
// tracer calls it when it starts encoding its events as it goes).
func (w *Writer) Compress() { w.raw = !w.canZstd }

// Offset is the number of bytes written so far (the file size), which the
// tracer compares with MaxTraceSize: 0 before Start.
func (w *Writer) Offset() int64 { return w.off }

// Events is the number of events written so far.
func (w *Writer) Events() uint64 { return w.events }

// Err is the first write error, if any.
func (w *Writer) Err() error { return w.err }

// WriteDefinitions writes a definitions frame. A communicator whose members
// are world ranks 0 … n−1 in order is written as that range
// (Communicator.members_range); d itself is left as it is.
func (w *Writer) WriteDefinitions(d *tracepb.Definitions) error {
	copied := false
	for i, c := range d.Communicators {
		if len(c.Members) < 2 || !isRange(c.Members) {
			continue
		}
		if !copied {
			cs := slices.Clone(d.Communicators)
			d = &tracepb.Definitions{Functions: d.Functions, CallSites: d.CallSites, Modules: d.Modules, Communicators: cs}
			copied = true
		}
		// Every field but the members (a clone would copy the list only
		// to drop it).
		d.Communicators[i] = &tracepb.Communicator{Local: c.Local, Id: c.Id, Inter: c.Inter,
			RemoteMembers: c.RemoteMembers, Parent: c.Parent, CreatedBy: c.CreatedBy,
			MembersRange: uint32(len(c.Members))}
	}
	return w.writeMessage(KindDefinitions, d)
}

// WriteClockSync writes a clock-sync frame.
func (w *Writer) WriteClockSync(c *tracepb.ClockSync) error {
	return w.writeMessage(KindClockSync, c)
}

// WriteBatch writes the events of b as one frame. An empty batch writes
// nothing. b is not modified and may be reused after the call.
func (w *Writer) WriteBatch(b *Builder) error {
	if b.Len() == 0 {
		return w.err
	}
	if b.Len() > MaxBatchEvents {
		return fmt.Errorf("batch of %d events exceeds the limit of %d", b.Len(), MaxBatchEvents)
	}
	w.buf = w.batches.appendBatch(w.buf[:0], b.Batch())
	if err := w.writeFrame(KindEvents, w.buf); err != nil {
		return err
	}
	w.events += uint64(b.Len())
	return nil
}

// WriteRecords writes a KindRecords frame: prefix then recs, stored as they
// are (a deferred trace's events; the caller counts them).
func (w *Writer) WriteRecords(prefix, recs []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("trace writer closed")
	}
	n := len(prefix) + len(recs)
	if n > MaxPayload {
		return fmt.Errorf("%d bytes of records exceed the frame limit of %d", n, MaxPayload)
	}
	if v, ok := w.w.(VectorWriter); ok && !w.holding {
		// Header and prefix, then the records from where they are: the
		// copy of a 128 KB buffer was a sixth of writing it.
		h := append(append(w.frame[:0], make([]byte, FrameHeaderSize)...), prefix...)
		binary.LittleEndian.PutUint32(h[0:], uint32(n))
		h[4], h[5] = byte(KindRecords), byte(EncodingRaw)
		binary.LittleEndian.PutUint32(h[6:], uint32(n))
		crc := crc32.Update(0, castagnoli, h[:10])
		crc = crc32.Update(crc, castagnoli, h[FrameHeaderSize:])
		binary.LittleEndian.PutUint32(h[10:], crc32.Update(crc, castagnoli, recs))
		w.frame = h
		return w.account(v.Writev(h, recs))
	}
	f := append(append(append(w.frame[:0], make([]byte, FrameHeaderSize)...), prefix...), recs...)
	seal(f, KindRecords, EncodingRaw, n)
	w.frame = f
	return w.write(f)
}

// A VectorWriter writes two byte slices as one (writev): the tracer's trace
// file, so that WriteRecords need not copy the records behind their header.
type VectorWriter interface {
	Writev(a, b []byte) (int, error)
}

// CopyFrame writes a frame read by a FrameScanner as it is, unless the
// frame holds a protobuf chunk stored uncompressed and w compresses: then
// its payload is compressed (a Deferred writer's frames, compacted).
func (w *Writer) CopyFrame(f *Frame) error {
	if w.closed {
		return errors.New("trace writer closed")
	}
	if f.Enc == EncodingRaw && !w.raw && f.Kind >= KindHeader && f.Kind <= KindFooter {
		return w.writeFrame(f.Kind, f.Payload())
	}
	return w.write(f.Bytes)
}

// WriteDefinitionsMessage writes a definitions frame holding m, a
// Definitions message already encoded, as it is: several definitions
// frames' messages concatenated, say, which decode as their merge
// (protobuf appends the repeated fields of a later message to those of an
// earlier one). The communicators' member ranges are the encoder's
// business (WriteDefinitions).
func (w *Writer) WriteDefinitionsMessage(m []byte) error {
	return w.writeFrame(KindDefinitions, m)
}

// Close writes the footer. When f.EventCount is zero it is set to the number
// of events written. Close does not close the underlying writer.
func (w *Writer) Close(f *tracepb.Footer) error {
	if w.closed {
		return errors.New("trace writer already closed")
	}
	w.closed = true
	if f == nil {
		f = &tracepb.Footer{}
	}
	if f.EventCount == 0 {
		f = proto.CloneOf(f)
		f.EventCount = w.events
	}
	err := w.writeMessage(KindFooter, f)
	if w.enc != nil {
		putEncoder(w.encKey, w.enc)
		w.enc = nil
	}
	return err
}

// encKey is what makes two Writers' zstd encoders interchangeable.
type encKey struct {
	level       zstd.EncoderLevel
	rawLiterals bool
}

// encoders keeps the zstd encoders of closed Writers for the next Writer
// with the same options. A new encoder's hash table (256 KB at the fastest
// level) is faulted in page by page at its first use, ~65 page faults of
// several microseconds each on virtual machines: a rank that compacts its
// own trace after writing it, and dtrun compacting several, pay them
// once. EncodeAll keeps nothing of one call for the next, so that a reused
// encoder writes the same bytes as a new one.
var encoders struct {
	sync.Mutex
	free map[encKey][]*zstd.Encoder
}

// maxFreeEncoders bounds the encoders kept per options (the memory of a
// process that closed many Writers at once); the others are closed.
const maxFreeEncoders = 4

func getEncoder(k encKey) (*zstd.Encoder, error) {
	encoders.Lock()
	if l := encoders.free[k]; len(l) > 0 {
		e := l[len(l)-1]
		encoders.free[k] = l[:len(l)-1]
		encoders.Unlock()
		return e, nil
	}
	encoders.Unlock()
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(k.level), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), // the frame has its own CRC
		zstd.WithNoEntropyCompression(k.rawLiterals))
}

func putEncoder(k encKey, e *zstd.Encoder) {
	encoders.Lock()
	if len(encoders.free[k]) < maxFreeEncoders {
		if encoders.free == nil {
			encoders.free = make(map[encKey][]*zstd.Encoder)
		}
		encoders.free[k] = append(encoders.free[k], e)
		encoders.Unlock()
		return
	}
	encoders.Unlock()
	e.Close()
}

func (w *Writer) writeMessage(k Kind, m proto.Message) error {
	if w.err != nil {
		return w.err
	}
	var err error
	w.buf, err = proto.MarshalOptions{}.MarshalAppend(w.buf[:0], m)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", k, err)
	}
	return w.writeFrame(k, w.buf)
}

// writeFrame compresses raw and writes it as one frame with a single Write
// call, so that an io.Writer backed by a file gets whole frames.
func (w *Writer) writeFrame(k Kind, raw []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed && k != KindFooter {
		return errors.New("trace writer closed")
	}
	if len(raw) > MaxRaw {
		return fmt.Errorf("%s chunk of %d bytes exceeds the limit of %d", k, len(raw), MaxRaw)
	}
	f := append(w.frame[:0], make([]byte, FrameHeaderSize)...)
	enc := EncodingRaw
	if !w.raw {
		if w.enc == nil {
			e, err := getEncoder(w.encKey)
			if err != nil {
				return fmt.Errorf("creating zstd encoder: %w", err)
			}
			w.enc = e
		}
		f = w.enc.EncodeAll(raw, f)
		enc = EncodingZstd
	} else {
		f = append(f, raw...)
	}
	payload := len(f) - FrameHeaderSize
	if payload > MaxPayload {
		return fmt.Errorf("%s frame of %d bytes exceeds the limit of %d", k, payload, MaxPayload)
	}
	seal(f, k, enc, len(raw))
	w.frame = f
	return w.write(f)
}

// seal fills in the header of frame f, whose payload follows the header's
// room: rawLen is the payload's length once decompressed.
func seal(f []byte, k Kind, enc Encoding, rawLen int) {
	binary.LittleEndian.PutUint32(f[0:], uint32(len(f)-FrameHeaderSize))
	f[4] = byte(k)
	f[5] = byte(enc)
	binary.LittleEndian.PutUint32(f[6:], uint32(rawLen))
	binary.LittleEndian.PutUint32(f[10:], frameCRC(f[:10], f[FrameHeaderSize:]))
}

func (w *Writer) write(p []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.holding {
		w.held = append(w.held, p...)
		return nil
	}
	n, err := w.w.Write(p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	return w.account(n, err)
}

// account notes a write of n bytes that ended with err.
func (w *Writer) account(n int, err error) error {
	w.off += int64(n)
	if err != nil {
		w.err = fmt.Errorf("writing trace at byte offset %d: %w", w.off, err)
	}
	return w.err
}
