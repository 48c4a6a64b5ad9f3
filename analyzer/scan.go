package analyzer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"
)

// The first pass needs the clock-sync chunks, which the tracer writes at
// both ends of the file, and the footer. Decoding every event batch for
// them would double the cost of the analysis (decoding dominates), so
// scanFrames walks the frame headers and seeks over event batches, decoding
// only the small chunks it needs. Damage inside a skipped batch is found
// and reported by the replay, which decodes everything.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var zdec = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(traceformat.MaxRaw))
})

func init() { scan = scanFrames }

func scanFrames(path string) (*rankFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path})
	if err != nil {
		return nil, err
	}
	rf := &rankFile{path: path, hdr: rd.Header()}
	off := rd.Offset()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	damaged := func(at int64, reason string, cause error) {
		rf.err = &traceformat.CorruptError{File: path, Rank: int(rf.hdr.Rank), Offset: at, Reason: reason, Err: cause}
		rf.off = at
	}
	var h [traceformat.FrameHeaderSize]byte
	for {
		if rf.footer != nil {
			if off != size {
				damaged(off, "data after the footer", traceformat.ErrCorrupt)
			}
			break
		}
		if off == size {
			damaged(off, "file ends without a footer (the traced process may have crashed or been killed)", traceformat.ErrTruncated)
			break
		}
		if _, err := f.ReadAt(h[:], off); err != nil {
			damaged(off, "file ends inside a frame header", traceformat.ErrTruncated)
			break
		}
		plen := binary.LittleEndian.Uint32(h[0:])
		kind, enc := traceformat.Kind(h[4]), traceformat.Encoding(h[5])
		rawLen := binary.LittleEndian.Uint32(h[6:])
		if plen > traceformat.MaxPayload || rawLen > traceformat.MaxRaw {
			damaged(off, "frame length exceeds the limit", traceformat.ErrCorrupt)
			break
		}
		end := off + traceformat.FrameHeaderSize + int64(plen)
		if end > size {
			damaged(off, fmt.Sprintf("file ends inside a %s frame", kind), traceformat.ErrTruncated)
			break
		}
		if kind == traceformat.KindClockSync || kind == traceformat.KindFooter {
			if err := readSmallFrame(f, off, h, plen, rawLen, kind, enc, rf); err != nil {
				damaged(off, err.Error(), traceformat.ErrCorrupt)
				break
			}
		}
		off = end
	}
	return rf, nil
}

func readSmallFrame(f *os.File, off int64, h [traceformat.FrameHeaderSize]byte, plen, rawLen uint32,
	kind traceformat.Kind, enc traceformat.Encoding, rf *rankFile) error {
	payload := make([]byte, plen)
	if _, err := f.ReadAt(payload, off+traceformat.FrameHeaderSize); err != nil && err != io.EOF {
		return err
	}
	crc := crc32.Update(0, castagnoli, h[:10])
	crc = crc32.Update(crc, castagnoli, payload)
	if crc != binary.LittleEndian.Uint32(h[10:]) {
		return fmt.Errorf("checksum mismatch in a frame announced as %s", kind)
	}
	raw := payload
	switch enc {
	case traceformat.EncodingRaw:
	case traceformat.EncodingZstd:
		d, err := zdec()
		if err != nil {
			return err
		}
		raw, err = d.DecodeAll(payload, make([]byte, 0, rawLen))
		if err != nil || len(raw) != int(rawLen) {
			return fmt.Errorf("%s frame: decompressing failed", kind)
		}
	default:
		return fmt.Errorf("unknown payload encoding %d", enc)
	}
	switch kind {
	case traceformat.KindClockSync:
		c := &tracepb.ClockSync{}
		if err := proto.Unmarshal(raw, c); err != nil {
			return fmt.Errorf("malformed clock sync: %v", err)
		}
		if len(c.LocalSendNs) != len(c.RemoteNs) || len(c.LocalSendNs) != len(c.LocalRecvNs) || c.Reference >= rf.hdr.WorldSize {
			return fmt.Errorf("inconsistent clock sync")
		}
		rf.syncs = append(rf.syncs, c)
	case traceformat.KindFooter:
		ft := &tracepb.Footer{}
		if err := proto.Unmarshal(raw, ft); err != nil {
			return fmt.Errorf("malformed footer: %v", err)
		}
		rf.footer = ft
	}
	return nil
}
