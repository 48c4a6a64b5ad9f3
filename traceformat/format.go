// Package traceformat reads and writes dtpa per-rank trace files
// (<app>.<rank>.trc).
//
// A file is a 12-byte preamble (magic and version) followed by
// self-delimiting frames; each frame holds one protobuf chunk (header,
// definitions, event batch, clock-sync samples or footer), usually
// zstd-compressed, protected by a CRC-32C. docs/format/trace.md is the
// byte-level specification and trace.proto the chunk schema.
//
// Reading is streaming: Reader keeps one frame and one decoded batch in
// memory, whatever the file's length (ReadLazyBatch decodes a batch's
// events one by one instead, for readers that walk each batch once), and every size read from the file is
// checked against a limit before anything is allocated for it. A damaged or
// truncated tail yields every intact frame first, then a *CorruptError that
// names the file, rank and byte offset.
package traceformat

// Magic is the first 8 bytes of every trace file. The high first byte and the
// CR LF SUB sequence catch text-mode transfers, as PNG's signature does.
var Magic = [8]byte{0x89, 'D', 'T', 'P', 'A', '\r', '\n', 0x1a}

// Format version written by this package. Readers accept any minor version of
// the major versions they know: minor versions only add fields and frame
// kinds, which older readers skip. A major version changes what an older
// reader would misread, so that such a reader refuses the file instead.
const (
	// Major 2: communicators may give their members as a range
	// (Communicator.members_range), which a 1.x reader would take for an
	// empty group. This package reads 1.x files too.
	VersionMajor = 2
	// Minor 1 (2.1): ATTR_INNER_GAPS, the summed gaps inside a folded run
	// (EventBatch.inner_gaps). A 2.0 reader refuses the bit by name.
	// Minor 2 (2.2): a communicator member may be OtherWorld; a 2.1 reader
	// refuses it as a member outside the world.
	// Minor 3 (2.3): Footer.unfinished, the calls in progress when a
	// fatal signal ended the process; a 2.2 reader skips the field.
	VersionMinor = 3
	// MinVersionMajor is the oldest major version this package reads. 1.1
	// added ATTR_CALLS (folded runs of unsuccessful polls).
	MinVersionMajor = 1
	// DeferredMajor (0xD102: 0xD000, RawLayout << 8 and the major version
	// it becomes) marks a trace whose events are still the tracer's raw
	// records (KindRecords frames): the tracer defers their encoding to
	// after the run, when dtrun compacts the file (tracer/records, Compact)
	// into a VersionMajor.VersionMinor trace. No reader reads such a file:
	// an older one refuses the major version, this one says how to compact
	// it (VersionError).
	DeferredMajor = 0xD000 | RawLayout<<8 | VersionMajor
	// RawLayout is the layout of the records in KindRecords frames
	// (tracer/records): 1, 20-byte headers with the exit as a 32-bit
	// duration and 32-bit byte counts, each with an escape. Layout 0
	// (0xD002: 24-byte headers, the exit reading and byte counts as u64)
	// is refused, not read: a deferred file lives from the run to its
	// compaction at the end of the job by the same installation's code,
	// so only a tracer replaced between the two leaves one, and reading it
	// would keep a second record decoder. VersionError says which dtrun
	// compacts it.
	RawLayout = 1
)

// IsDeferredMajor tells whether a file's major version marks a deferred
// trace, of any raw record layout.
func IsDeferredMajor(major uint16) bool { return major&0xF000 == 0xD000 }

// PreambleSize is the size of the magic and version at the start of a file.
const PreambleSize = 12

// FrameHeaderSize is the size of a frame header: payload length (4), kind (1),
// encoding (1), raw length (4), CRC-32C (4).
const FrameHeaderSize = 14

// Kind says which chunk message a frame holds.
type Kind uint8

// Frame kinds. Unknown kinds are skipped by readers.
const (
	KindHeader      Kind = 1
	KindDefinitions Kind = 2
	KindEvents      Kind = 3
	KindClockSync   Kind = 4
	KindFooter      Kind = 5
	// KindRecords frames hold a thread's records as the tracer's C side
	// wrote them (tracer/records), behind a RecordsPrefix: only in
	// DeferredMajor files, always stored raw (EncodingRaw).
	KindRecords Kind = 6
)

func (k Kind) String() string {
	switch k {
	case KindHeader:
		return "header"
	case KindDefinitions:
		return "definitions"
	case KindEvents:
		return "event batch"
	case KindClockSync:
		return "clock sync"
	case KindFooter:
		return "footer"
	case KindRecords:
		return "raw records"
	}
	return "unknown"
}

// Encoding says how a frame's payload is stored.
type Encoding uint8

// Payload encodings.
const (
	EncodingRaw  Encoding = 0 // protobuf bytes as they are
	EncodingZstd Encoding = 1 // one zstd frame holding the protobuf bytes
)

// Limits checked before allocating. They are far above what the tracer
// writes (batches of at most a few MB) and keep a corrupt length field from
// making a reader allocate gigabytes.
const (
	// MaxPayload bounds a frame's stored payload.
	MaxPayload = 64 << 20
	// MaxRaw bounds a frame's payload after decompression.
	MaxRaw = 256 << 20
	// maxExpansion bounds raw/stored for zstd frames: zstd cannot expand
	// input by much more than its RLE block ratio, so a larger claim is
	// corruption, found before decompressing.
	maxExpansion = 1 << 15
	// MaxBatchEvents bounds EventBatch.count.
	MaxBatchEvents = 1 << 22
	// maxID bounds function, call-site and communicator ids so that tables
	// indexed by id stay small.
	maxID = 1 << 24
)

// OtherWorld is a communicator member (Communicator.members,
// remote_members) that is not in this run's MPI_COMM_WORLD: a process of
// another world joined by MPI_Comm_spawn, MPI_Comm_connect/accept or
// MPI_Comm_join. The member keeps its place, so that the ranks of the
// communicator's other members stay what they are.
const OtherWorld uint32 = 0xFFFFFFFF

// Special values of peers, roots, tags and statuses in events. The tracer
// translates the MPI implementation's own constants into these.
const (
	AnySource int32 = -1
	ProcNull  int32 = -2
	RootInter int32 = -3 // MPI_ROOT on an intercommunicator
	AnyTag    int32 = -1
	NoStatus  int32 = -4 // status of a completed request that is not a receive
	// Cancelled is the status tag (with source NoStatus) of a completed
	// send request whose MPI_Cancel succeeded: its message was never sent.
	Cancelled int32 = -5
	// CommNull is the newcomm value of a call that produced MPI_COMM_NULL.
	CommNull uint32 = 0xFFFFFFFF
)

// Fixed local communicator indexes.
const (
	CommWorld uint32 = 0
	CommSelf  uint32 = 1
)

// SelfCommID is the global id of MPI_COMM_SELF on the given world rank.
func SelfCommID(worldRank uint32) uint64 { return 1<<63 | uint64(worldRank) }

// SourceModulePrefix starts the path of a module that stands for a source
// file rather than a loaded object: a trace converted from a format that
// records call sites as file and line (OTF2's source code locations)
// gives each file such a module, "SourceModulePrefix + file", whose
// offsets are line numbers, and a symbolizer reads a return address in it
// as that file and line without opening any object file.
const SourceModulePrefix = "source-file:"
