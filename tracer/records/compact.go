package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// WriterOptions is how traces are compressed, by the tracer and by Compact
// alike: zstd's fastest level, and with rawLiterals without entropy coding
// (the tracer's DT_COMPRESS=fast).
func WriterOptions(rawLiterals bool) traceformat.WriterOptions {
	return traceformat.WriterOptions{Level: zstd.SpeedFastest, RawLiterals: rawLiterals}
}

// PrefixSize is the size of a Prefix as a KindRecords frame stores it
// before the records.
const PrefixSize = 64

// A Prefix says what decoding a KindRecords frame's records needs, and
// what Compact needs to cut the trace where the tracer would have.
type Prefix struct {
	Thread uint32
	Conv   Converter
	Limit  int64 // bytes this rank's trace may take (MaxTraceSize's share); 0 = none
	MaxMB  int64 // MaxTraceSize, for the message of a cut trace
}

// Append appends p's PrefixSize bytes (little endian: thread, flags (1 =
// TSC), NsPerTick, Raw0, Ns0, SkewOff, SkewPPM, Limit, MaxMB).
func (p *Prefix) Append(b []byte) []byte {
	flags := uint32(0)
	if p.Conv.TSC {
		flags = 1
	}
	b = binary.LittleEndian.AppendUint32(b, p.Thread)
	b = binary.LittleEndian.AppendUint32(b, flags)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Conv.NsPerTick))
	b = binary.LittleEndian.AppendUint64(b, p.Conv.Raw0)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Conv.Ns0))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Conv.SkewOff))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Conv.SkewPPM))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Limit))
	return binary.LittleEndian.AppendUint64(b, uint64(p.MaxMB))
}

// ParsePrefix reads a KindRecords payload's prefix and returns the records
// (the tracer's C writer hands its encoder the prefix it writes).
func ParsePrefix(b []byte) (Prefix, []byte, error) {
	if len(b) < PrefixSize {
		return Prefix{}, nil, fmt.Errorf("raw records frame of %d bytes, shorter than its prefix", len(b))
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8+8*i:]) }
	p := Prefix{Thread: binary.LittleEndian.Uint32(b), Conv: Converter{TSC: binary.LittleEndian.Uint32(b[4:])&1 != 0,
		NsPerTick: math.Float64frombits(u(0)), Raw0: u(1), Ns0: int64(u(2)), SkewOff: int64(u(3)),
		SkewPPM: math.Float64frombits(u(4))}, Limit: int64(u(5)), MaxMB: int64(u(6))}
	return p, b[PrefixSize:], nil
}

// IsDeferred tells whether the file at path is a trace whose events are
// still raw records (traceformat.DeferredMajor, or a deferred major of
// another raw layout, which Compact refuses with a traceformat.VersionError
// that says so).
func IsDeferred(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var pre [traceformat.PreambleSize]byte
	if _, err := io.ReadFull(f, pre[:]); err != nil || [8]byte(pre[:8]) != traceformat.Magic {
		return false
	}
	return traceformat.IsDeferredMajor(binary.LittleEndian.Uint16(pre[8:]))
}

// Compact turns a deferred trace (its events written as the tracer's raw
// records during the run, to spare the program the encoding) into an
// ordinary one, in place: the KindRecords frames become the events the
// tracer would have written, consecutive frames of a thread joined into
// one batch (mergeMin), every other frame is copied as it is,
// and the file is cut where MaxTraceSize would have cut it had the tracer
// encoded as it went (Prefix.Limit: the calls after it count as dropped).
// It returns the events it decoded. A file that is not deferred is left
// alone. A frame cut short or damaged ends the copy: what precedes it is
// kept, and the file ends without a footer, as a crashed process leaves
// it (Recover then adds what its buffers held); damage is also returned
// as the error.
func Compact(path string) (int, error) { return compactInto(path, "") }

// CompactCopy is Compact for a trace whose directory cannot be written (a
// read-only file system, another user's directory): the compacted trace
// goes to dir, under the trace's name, and the trace stays as it is. A
// trace that is not deferred gives no copy (0, nil).
func CompactCopy(path, dir string) (int, error) { return compactInto(path, dir) }

// compactInto compacts the trace at path into dir under its name, or in
// place when dir is "". A panic in it is a bug (FuzzCompact looks for
// them), which costs this trace's compaction and not the process that
// compacts it: dtrun while the job still runs (its exit would end the job
// script's wait for the launcher), dtpa amid an analysis of the other
// ranks, a rank's exit. The trace stays deferred, the new file is removed.
func compactInto(path, dir string) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("compacting %s: internal error: %v", path, p)
		}
	}()
	in, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	sc, err := traceformat.NewFrameScanner(in, path)
	if err != nil {
		return 0, err
	}
	if sc.Major != traceformat.DeferredMajor {
		return 0, nil
	}
	fr, err := sc.Next()
	if err != nil {
		return 0, fmt.Errorf("%s: no header: %w", path, orEOF(err))
	}
	hdr := &tracepb.Header{}
	if fr.Kind != traceformat.KindHeader {
		return 0, fmt.Errorf("%s: the first frame is a %s, not the header", path, fr.Kind)
	}
	if err := fr.Unmarshal(hdr); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	dst := path
	if dir != "" {
		dst = filepath.Join(dir, filepath.Base(path))
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(path)+CompactTempMark)
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	defer tmp.Close()           // after a panic; else closed below
	if compactTestHook != nil {
		compactTestHook(path)
	}
	out, err := compact(sc, tmp, hdr)
	if cerr := tmp.Close(); out.werr == nil {
		out.werr = cerr
	}
	if out.werr != nil {
		return 0, fmt.Errorf("compacting %s: %w", path, out.werr)
	}
	if st, serr := in.Stat(); serr == nil {
		os.Chmod(tmp.Name(), st.Mode().Perm())
	}
	if rerr := os.Rename(tmp.Name(), dst); rerr != nil {
		return 0, rerr
	}
	return out.decoded, err
}

// compactTestHook, when set (tests), runs once compactInto has made the
// new file.
var compactTestHook func(path string)

// CompactTempMark marks Compact's new file until it replaces the trace:
// .<trace's name><CompactTempMark><random digits> (os.CreateTemp).
const CompactTempMark = ".compact-"

// CompactTemps lists the new files of compactions in dir that never
// finished (a process killed while it compacted its trace, which it left
// whole): once no process of the run is alive, they can go.
func CompactTemps(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".*.trc"+CompactTempMark+"*"))
	return m
}

type compacted struct {
	decoded int
	werr    error // writing the new file failed: the original stays
}

// mergeMin and mergeMax bound the batches Compact writes from raw frames:
// consecutive frames of one thread are joined until the batch holds
// mergeMin events, and not past mergeMax unless one frame alone does (a
// frame's events are reckoned at the mean size of the records the batch
// holds: a full buffer of 128 KB holds 2 000-3 500 records of 40-60
// bytes, which at the smallest record size, 20 bytes, would have counted
// 6 500 and ended every batch at one buffer). Definitions frames between
// them do not end a batch: they are written before it, which the events
// before them in the file never refer to (ids are never reused). A
// rank that calls MPI rarely hands its buffers over on a timer, a few
// hundred calls each (LAMMPS: ~280): as batches of their own they cost
// the trace a zstd frame and a shape table each (5.7 bytes per call
// against 4.5 joined) and the analyzer a batch's setup and a Huffman
// table each (about 4 % of its instructions per call). mergeMax keeps a
// batch within what the tracer's own buffers make (about 5000 events),
// so that the analyzer's memory per rank held batch stays as it was.
const (
	mergeMin = 4096
	mergeMax = 8192
)

// joinFrames says whether Compact joins frames: not with DT_COMPACT_JOIN=0,
// for tests that read the tracer's hand-overs from the batch boundaries
// (one batch per buffer handed over) and for traces cut as small batches.
func joinFrames() bool { return os.Getenv("DT_COMPACT_JOIN") != "0" }

// compact copies the frames after the header from sc to w, decoding raw
// records (consecutive frames of a thread into one batch, mergeMin) and
// joining consecutive definitions frames (joinDefs); its error is the
// damage that ended the copy, if any.
func compact(sc *traceformat.FrameScanner, w io.Writer, hdr *tracepb.Header) (compacted, error) {
	var res compacted
	tw, err := traceformat.NewWriter(w, hdr, WriterOptions(false))
	if err != nil {
		res.werr = err
		return res, nil
	}
	var b traceformat.Builder
	var limit, maxMB int64
	var cutAt int64   // the offset the cut trace reached; 0 = not cut
	var pending int64 // raw record bytes decoded into b, not written yet
	var dropped, droppedEncoded uint64
	// flush writes b's events as one batch; false when writing failed.
	flush := func() bool {
		if b.Len() == 0 {
			return true
		}
		if res.werr = tw.WriteBatch(&b); res.werr != nil {
			return false
		}
		res.decoded += b.Len()
		b.Reset()
		pending = 0
		if limit > 0 && cutAt == 0 && tw.Offset() >= limit {
			cutAt = tw.Offset()
		}
		return true
	}
	// room says whether raw bytes more can wait in b without MaxTraceSize
	// being reached by them: near the limit frames are written one by
	// one, so that the trace is cut where the tracer would have cut it
	// (an encoded batch takes less than its records, and far less than
	// twice).
	join := joinFrames()
	room := func(raw int64) bool {
		return join && (limit == 0 || tw.Offset()+2*(pending+raw)+64<<10 < limit)
	}
	var defs joinDefs
	for {
		fr, err := sc.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, traceformat.ErrTruncated) {
				err = nil
			}
			if res.werr = defs.write(tw); res.werr != nil || !flush() {
				return res, nil
			}
			return res, err
		}
		if fr.Kind != traceformat.KindDefinitions && fr.Kind != traceformat.KindRecords {
			if res.werr = defs.write(tw); res.werr != nil {
				return res, nil
			}
		}
		if fr.Kind != traceformat.KindRecords && !(fr.Kind == traceformat.KindDefinitions && room(0)) && !flush() {
			return res, nil
		}
		switch fr.Kind {
		case traceformat.KindRecords:
			p, recs, perr := ParsePrefix(fr.Payload())
			if perr != nil {
				if !flush() {
					return res, nil
				}
				res.werr = defs.write(tw)
				return res, perr
			}
			limit, maxMB = p.Limit, p.MaxMB
			raw := int64(len(recs))
			if b.Len() > 0 && (p.Thread != b.Thread || b.Len()+int(raw*int64(b.Len())/max(pending, 1)) > mergeMax || !room(raw)) && !flush() {
				return res, nil
			}
			// Definitions that came since: before the batch this frame
			// joins, or after the one it ended.
			if res.werr = defs.write(tw); res.werr != nil {
				return res, nil
			}
			if cutAt > 0 {
				var d traceformat.Builder
				Decode(&d, recs, p.Thread, &p.Conv)
				dropped += uint64(d.Len())
				continue
			}
			derr := Decode(&b, recs, p.Thread, &p.Conv)
			pending += raw
			if derr != nil {
				// The complete records before the malformed one are
				// kept, with the frames before.
				if !flush() {
					return res, nil
				}
				return res, fmt.Errorf("raw records at byte offset %d: %w", fr.Offset, derr)
			}
			if (b.Len() >= mergeMin || !room(0)) && !flush() {
				return res, nil
			}
		case traceformat.KindEvents:
			if cutAt > 0 {
				var eb tracepb.EventBatch
				if uerr := fr.Unmarshal(&eb); uerr != nil {
					return res, uerr
				}
				droppedEncoded += uint64(eb.Count)
				continue
			}
			if res.werr = tw.CopyFrame(fr); res.werr != nil {
				return res, nil
			}
			if limit > 0 && cutAt == 0 && tw.Offset() >= limit {
				cutAt = tw.Offset()
			}
		case traceformat.KindFooter:
			f := &tracepb.Footer{}
			if uerr := fr.Unmarshal(f); uerr != nil {
				return res, uerr
			}
			// The tracer counted the events it encoded itself.
			f.EventCount = f.EventCount - droppedEncoded + uint64(res.decoded)
			if cutAt > 0 {
				f.DroppedEvents += dropped + droppedEncoded
				msg := f.Message
				if f.StopReason == tracepb.Footer_SIZE_LIMIT {
					// The tracer's own cut, later: its message is replaced.
					if _, rest, ok := strings.Cut(msg, "; "); ok && strings.HasPrefix(msg, "trace reached ") {
						msg = rest
					}
				}
				f.Message = fmt.Sprintf("trace reached %d bytes (MaxTraceSize %d MB over all ranks); %s", cutAt, maxMB, msg)
				f.StopReason = tracepb.Footer_SIZE_LIMIT
			}
			res.werr = tw.Close(f)
			return res, nil
		case traceformat.KindDefinitions:
			if room(0) {
				defs.add(fr)
				continue
			}
			if res.werr = defs.write(tw); res.werr != nil {
				return res, nil
			}
			if res.werr = tw.CopyFrame(fr); res.werr != nil {
				return res, nil
			}
		default:
			if res.werr = tw.CopyFrame(fr); res.werr != nil {
				return res, nil
			}
		}
	}
}

// joinDefs holds consecutive definitions frames, which Compact writes as
// one: the tracer writes the definitions added since its last write
// whenever its queue runs empty (so that a process killed later still has
// them), and a program that reaches new call sites all through its run
// leaves hundreds of frames of a few call sites each (hpcc: 521 of its 610
// frames), whose zstd tables and CRC cost the analyzer about 4 000
// instructions each. One frame alone is copied as it is; frames whose
// messages do not decode are copied as they are too.
type joinDefs struct {
	frames []traceformat.Frame
	buf    []byte
}

// wholeFields says whether b is a sequence of whole protobuf fields, so
// that what follows it in a concatenation starts a field of its own.
func wholeFields(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// add keeps a copy of fr (a FrameScanner reuses its bytes).
func (j *joinDefs) add(fr *traceformat.Frame) {
	c := *fr
	c.Bytes = slices.Clone(fr.Bytes)
	j.frames = append(j.frames, c)
}

// write writes the frames held, as one definitions frame when there are
// several: their messages concatenated, which decode as the entries of
// each in order (the message is not decoded and encoded again: merging
// the function table that way was most of a small trace's compaction).
// Each frame's message must be whole fields, and the joined one must
// decode; else the frames are copied as they are.
func (j *joinDefs) write(tw *traceformat.Writer) error {
	frames := j.frames
	j.frames = j.frames[:0]
	if len(frames) > 1 {
		all := j.buf[:0]
		ok := true
		for i := range frames {
			at := len(all)
			var err error
			if all, err = frames[i].AppendMessage(all); err != nil || !wholeFields(all[at:]) {
				ok = false
				break
			}
		}
		j.buf = all
		if ok && proto.Unmarshal(all, &tracepb.Definitions{}) == nil {
			return tw.WriteDefinitionsMessage(all)
		}
	}
	for i := range frames {
		if err := tw.CopyFrame(&frames[i]); err != nil {
			return err
		}
	}
	return nil
}

func orEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
