package traceformat

import (
	"slices"
	"unsafe"
)

// Attr bits say which optional attributes an event carries (trace.proto,
// enum Attr).
type Attr uint32

// Attribute bits.
const (
	AttrComm      Attr = 1 << 0
	AttrSend      Attr = 1 << 1
	AttrRecv      Attr = 1 << 2
	AttrSendBytes Attr = 1 << 3
	AttrRecvBytes Attr = 1 << 4
	AttrRoot      Attr = 1 << 5
	AttrReqs      Attr = 1 << 6
	AttrStatus    Attr = 1 << 7
	AttrNewComm   Attr = 1 << 8
	AttrPcontrol  Attr = 1 << 9
	AttrFlag      Attr = 1 << 10
	// AttrCalls marks an event that stands for a run of consecutive
	// unsuccessful polls (tests with flag false, Testsome with no
	// completion, Iprobe/Improbe with flag false, Request_get_status flag
	// false) of one call site with equal arguments: Calls says how many.
	AttrCalls Attr = 1 << 11
	// AttrInnerGaps, set with AttrCalls (format 2.1), gives the summed
	// gaps between the folded run's calls: InnerGaps.
	AttrInnerGaps Attr = 1 << 12

	// AttrKnown are all the bits this package knows.
	AttrKnown = 1<<13 - 1
	attrKnown = AttrKnown
)

// Status is the actual source and tag of a completed receive (ranks in the
// event's communicator), or NoStatus for completions that are not receives.
type Status struct {
	Source int32
	Tag    int32
}

// Event is one MPI call as recorded by the tracer. Times are local
// nanoseconds. Fields of attributes not set in Attr are zero. Reqs and
// Status alias the reader's buffers and are valid until the next read.
type Event struct {
	// The fields up to RecvBytes are laid out as a shape (shapeLayout),
	// Thread at a shape's thread: the decoders copy an event's shape
	// into it as one block.
	Func      uint32 // Function.id
	Site      uint32 // CallSite.id
	Attr      Attr
	Comm      uint32 // AttrComm: local communicator index
	SendPeer  int32  // AttrSend
	SendTag   int32  // AttrSend
	RecvPeer  int32  // AttrRecv
	RecvTag   int32  // AttrRecv
	Root      int32  // AttrRoot
	Thread    uint32
	SendBytes uint64 // AttrSendBytes
	RecvBytes uint64 // AttrRecvBytes

	Entry int64
	Exit  int64

	Reqs []uint64 // AttrReqs: request ids created/started/completed/freed
	// AttrStatus: one per entry of Reqs when AttrReqs is set, else one.
	Status  []Status
	NewComm uint32 // AttrNewComm
	PcLevel int32  // AttrPcontrol
	PcArg   int64  // AttrPcontrol
	Flag    bool   // AttrFlag
	// AttrCalls: the number of calls the event stands for (>= 2); 0 when
	// the attribute is absent, meaning one call. Dur is then the calls'
	// summed time inside MPI and Exit the last call's exit.
	Calls uint32
	// AttrInnerGaps: the summed time between consecutive calls of the
	// folded run, outside MPI (ns, Calls − 1 gaps): its first call entered
	// at Entry − InnerGaps. Without it (traces before 2.1) those gaps are
	// only known as part of the gap before the event.
	InnerGaps int64
}

// NumCalls is the number of MPI calls e stands for: Calls for a folded
// run of polls, else 1.
func (e *Event) NumCalls() uint32 {
	if e.Calls > 1 {
		return e.Calls
	}
	return 1
}

// Batch is a read-only run of consecutive events of one thread in the
// shape-table form of trace.proto's EventBatch: the values an iterative
// program repeats call after call (function, call site, attributes,
// communicator, peers, tags, byte counts, root) once per distinct shape,
// each event's index into that table, its times and its per-call values.
// A Reader returns one (ReadBatch), a Builder shows its events as one
// (Builder.Batch); read it event by event with a Cursor. Request ids are
// absolute (the delta coding is applied only on disk).
type Batch struct {
	thread uint32
	baseNs int64

	gap      []int64
	dur      []uint64
	shapeIdx []uint32
	shapes   []shape

	nreqs  []uint32
	reqs   []uint64
	status []Status
	rare   [][]uint64 // by rare column (rareCols), values as Column.eventGet gives them

	dec *batchDecoder // decoding scratch, for a batch a Reader reuses
}

// Len is the number of events in the batch.
func (b *Batch) Len() int { return len(b.gap) }

// Thread is the thread of the batch's events.
func (b *Batch) Thread() uint32 { return b.thread }

// BaseNs is the time base: the first event's entry is BaseNs plus its gap.
func (b *Batch) BaseNs() int64 { return b.baseNs }

// Builder builds a batch for a Writer, event by event: the writer's side of
// a Batch. Append takes a whole event; the producers' fast path
// (records.Decode) adds an event's static part with AppendStatic,
// AppendLike, AppendRepeat or RepeatLast and then appends its per-call
// values itself (NReqs, Reqs, Status, AppendRare), as AppendPerCall does.
type Builder struct {
	Thread uint32
	BaseNs int64

	// Gap[k] is the entry time minus the exit time of event k-1 (BaseNs
	// for the first event), Dur[k] the exit time minus the entry time.
	Gap []int64
	Dur []uint64
	// The per-call values of AttrReqs (the number of request ids, then the
	// ids) and AttrStatus (one per request id with AttrReqs, else one).
	NReqs  []uint32
	Reqs   []uint64
	Status []Status
	rare   [][]uint64

	shapeIdx []uint32
	shapes   []shape
	lastExit int64 // exit time of the last appended event

	// shapeID's lookup: the last shape of each call site (index + 1, 0 =
	// none), and all shapes.
	bySite []uint32
	index  map[shape]uint32

	view Batch
}

// shape is the part of an event that an iterative program repeats: the
// function, call site, attribute bits and the static attribute values.
// Attribute values not present in attr are zero, so equal shapes compare
// equal.
//
// Its fields are laid out as the first fields of an Event (shapeLayout),
// so that setShape copies them as one block, at every event decoded,
// rather than with a load and a store per field.
type shape struct {
	fn, site uint32
	attr     Attr
	comm     uint32
	sendPeer int32
	sendTag  int32
	recvPeer int32
	recvTag  int32
	root     int32
	// thread is Event.Thread's place: a LazyBatch sets it to the batch's
	// thread in each of its shapes, once per batch, so that Next copies
	// the whole block and stores no Thread of its own at every event.
	thread    uint32
	sendBytes uint64
	recvBytes uint64
}

// setShape sets e's fields of shape sh, and its Thread to thread.
func (e *Event) setShape(sh *shape, thread uint32) {
	*(*shape)(unsafe.Pointer(e)) = *sh
	e.Thread = thread
}

// setShapeThread sets e's fields of shape sh and its Thread to sh.thread.
func (e *Event) setShapeThread(sh *shape) {
	*(*shape)(unsafe.Pointer(e)) = *sh
}

// shapeLayout fails to compile unless every field of a shape is at the
// offset of its Event field, thread at Thread's.
var _ = [1]struct{}{}[shapeLayout]

const shapeLayout = (unsafe.Offsetof(Event{}.Func) - unsafe.Offsetof(shape{}.fn)) |
	(unsafe.Offsetof(Event{}.Site) - unsafe.Offsetof(shape{}.site)) |
	(unsafe.Offsetof(Event{}.Attr) - unsafe.Offsetof(shape{}.attr)) |
	(unsafe.Offsetof(Event{}.Comm) - unsafe.Offsetof(shape{}.comm)) |
	(unsafe.Offsetof(Event{}.SendPeer) - unsafe.Offsetof(shape{}.sendPeer)) |
	(unsafe.Offsetof(Event{}.SendTag) - unsafe.Offsetof(shape{}.sendTag)) |
	(unsafe.Offsetof(Event{}.RecvPeer) - unsafe.Offsetof(shape{}.recvPeer)) |
	(unsafe.Offsetof(Event{}.RecvTag) - unsafe.Offsetof(shape{}.recvTag)) |
	(unsafe.Offsetof(Event{}.Root) - unsafe.Offsetof(shape{}.root)) |
	(unsafe.Offsetof(Event{}.Thread) - unsafe.Offsetof(shape{}.thread)) |
	(unsafe.Offsetof(Event{}.SendBytes) - unsafe.Offsetof(shape{}.sendBytes)) |
	(unsafe.Offsetof(Event{}.RecvBytes) - unsafe.Offsetof(shape{}.recvBytes)) |
	(unsafe.Sizeof(shape{}) - unsafe.Offsetof(Event{}.Entry))

// equal is s == *o written out: the generated comparison of the struct
// calls memequal, which cost more than the rest of the per-site lookup.
func (s *shape) equal(o *shape) bool {
	return s.fn == o.fn && s.site == o.site && s.attr == o.attr && s.comm == o.comm &&
		s.sendPeer == o.sendPeer && s.sendTag == o.sendTag && s.recvPeer == o.recvPeer && s.recvTag == o.recvTag &&
		s.root == o.root && s.sendBytes == o.sendBytes && s.recvBytes == o.recvBytes
}

// StaticAttrs are the attributes whose values are stored in the shape
// table (FormStatic in the column table, which TestColumnsMatchDescriptor
// checks); the others are stored per event. A constant for the hot paths
// that mask with it.
const StaticAttrs = AttrComm | AttrSend | AttrRecv | AttrSendBytes | AttrRecvBytes | AttrRoot

const staticAttrs = StaticAttrs

// siteCache bounds the per-site cache of shapeID; sites beyond it use the
// map alone.
const siteCache = 1 << 16

// Len is the number of events in the batch.
func (b *Builder) Len() int { return len(b.Gap) }

// Batch shows the events added so far as a read-only Batch, valid until
// the next change of b.
func (b *Builder) Batch() *Batch {
	b.view = Batch{thread: b.Thread, baseNs: b.BaseNs, gap: b.Gap, dur: b.Dur, shapeIdx: b.shapeIdx, shapes: b.shapes,
		nreqs: b.NReqs, reqs: b.Reqs, status: b.Status, rare: b.rare}
	return &b.view
}

// Reset empties the batch, keeping its storage.
func (b *Builder) Reset() {
	rare := b.rare
	for r := range rare {
		rare[r] = rare[r][:0]
	}
	*b = Builder{
		Gap: b.Gap[:0], Dur: b.Dur[:0], NReqs: b.NReqs[:0], Reqs: b.Reqs[:0], Status: b.Status[:0], rare: rare,
		shapeIdx: b.shapeIdx[:0], shapes: b.shapes[:0], bySite: b.bySite, index: b.index,
	}
	clear(b.bySite)
	clear(b.index)
}

// Append adds e at the end of the batch. The first event sets BaseNs; the
// thread of the batch is the thread of its first event. Status entries
// beyond what the attributes call for are ignored, missing ones are padded
// with NoStatus, so that a batch built by Append is always consistent.
func (b *Builder) Append(e *Event) {
	b.AppendStatic(e)
	b.AppendPerCall(e)
}

// AppendStatic adds e's times and static part: function, call site,
// attribute bits and the values of the static attributes (FormStatic). The
// caller then appends the values of e's per-call attributes, as
// AppendPerCall does (one NReqs entry and that many Reqs for AttrReqs, one
// Status per request or one without AttrReqs, AppendRare for the others).
func (b *Builder) AppendStatic(e *Event) {
	if len(b.Gap) == 0 {
		b.BaseNs = e.Entry
		b.lastExit = e.Entry
		b.Thread = e.Thread
	}
	b.Gap = append(b.Gap, e.Entry-b.lastExit)
	b.Dur = append(b.Dur, uint64(e.Exit-e.Entry))
	b.lastExit = e.Exit
	b.shapeIdx = append(b.shapeIdx, b.shapeID(e))
}

// AppendRepeat adds an event of the same static part as the last one
// added (only its times differ): the tracer's path for a run of one call,
// which needs no shape lookup. The batch must not be empty.
func (b *Builder) AppendRepeat(entry, exit int64) {
	b.Gap = append(b.Gap, entry-b.lastExit)
	b.Dur = append(b.Dur, uint64(exit-entry))
	b.lastExit = exit
	b.shapeIdx = append(b.shapeIdx, b.shapeIdx[len(b.shapeIdx)-1])
}

// AppendLike adds an event of the same static part as event i of the
// batch with new times: the tracer's path for a call site seen before in
// the batch, which needs no shape lookup. The caller then appends the
// event's per-call attributes as after AppendStatic.
func (b *Builder) AppendLike(i int, entry, exit int64) {
	b.Gap = append(b.Gap, entry-b.lastExit)
	b.Dur = append(b.Dur, uint64(exit-entry))
	b.lastExit = exit
	b.shapeIdx = append(b.shapeIdx, b.shapeIdx[i])
}

// RepeatLast completes n events that repeat the static part of the last
// event added, whose gaps and durations the caller has appended to Gap and
// Dur itself; exit is the exit time of the last of them. It is
// AppendRepeat for a whole run of one call (the tracer's tight loop),
// whose times the caller converts and appends with the columns held in
// registers.
func (b *Builder) RepeatLast(n int, exit int64) {
	// The index of the last event repeated n times, by doubling copies
	// (memmove) rather than a store per event.
	k := len(b.shapeIdx)
	b.shapeIdx = slices.Grow(b.shapeIdx, n)[:k+n]
	for j := k; j < k+n; {
		j += copy(b.shapeIdx[j:], b.shapeIdx[k-1:j])
	}
	b.lastExit = exit
}

// shapeID returns the index of e's shape, adding it to the table if new.
// A call site nearly always makes the same call, so most events are
// resolved by one comparison with the site's last shape.
func (b *Builder) shapeID(e *Event) uint32 {
	a := e.Attr & attrKnown
	sh := shape{fn: e.Func, site: e.Site, attr: a}
	if a&staticAttrs != 0 {
		if a&AttrComm != 0 {
			sh.comm = e.Comm
		}
		if a&AttrSend != 0 {
			sh.sendPeer, sh.sendTag = e.SendPeer, e.SendTag
		}
		if a&AttrRecv != 0 {
			sh.recvPeer, sh.recvTag = e.RecvPeer, e.RecvTag
		}
		if a&AttrSendBytes != 0 {
			sh.sendBytes = e.SendBytes
		}
		if a&AttrRecvBytes != 0 {
			sh.recvBytes = e.RecvBytes
		}
		if a&AttrRoot != 0 {
			sh.root = e.Root
		}
	}
	cached := sh.site < siteCache
	if cached {
		if int(sh.site) >= len(b.bySite) {
			b.bySite = append(b.bySite, make([]uint32, int(sh.site)+1-len(b.bySite))...)
		}
		if c := b.bySite[sh.site]; c != 0 && b.shapes[c-1].equal(&sh) {
			return c - 1
		}
	}
	if b.index == nil {
		b.index = make(map[shape]uint32)
	}
	id, ok := b.index[sh]
	if !ok {
		id = uint32(len(b.shapes))
		b.index[sh] = id
		b.shapes = append(b.shapes, sh)
	}
	if cached {
		b.bySite[sh.site] = id + 1
	}
	return id
}

// AppendPerCall adds the per-call attribute values of e to the batch: the
// part of Append that AppendStatic's callers do themselves.
func (b *Builder) AppendPerCall(e *Event) {
	a := e.Attr & attrKnown
	if a&^staticAttrs == 0 {
		return
	}
	nst := 1
	if a&AttrReqs != 0 {
		b.NReqs = append(b.NReqs, uint32(len(e.Reqs)))
		b.Reqs = append(b.Reqs, e.Reqs...)
		nst = len(e.Reqs)
	}
	if a&AttrStatus != 0 {
		for i := 0; i < nst; i++ {
			s := Status{Source: NoStatus, Tag: NoStatus}
			if i < len(e.Status) {
				s = e.Status[i]
			}
			b.Status = append(b.Status, s)
		}
	}
	if a&rareAttrs != 0 {
		for r, k := range rareCols {
			if c := &columns[k]; a&c.Attr != 0 {
				b.AppendRare(r, c.eventGet(e))
			}
		}
	}
}

// AppendRare appends a value of rare column r (RareColumn), as the
// column's accessor of Event gives it: a per-call attribute other than
// AttrReqs and AttrStatus.
func (b *Builder) AppendRare(r int, v uint64) {
	if b.rare == nil {
		b.rare = make([][]uint64, len(rareCols))
	}
	b.rare[r] = append(b.rare[r], v)
}

// Cursor walks a Batch event by event. The zero Cursor is at the first
// event; Next fills e and reports whether there was an event. The batch must
// be consistent, as batches from a Reader (checked when decoded) and
// batches built with Append always are.
type Cursor struct {
	i, nreq, req, status int
	rare                 [maxRareCols]int
	t                    int64
}

// maxRareCols bounds the rare columns (init checks the table).
const maxRareCols = 8

func init() {
	if len(rareCols) > maxRareCols {
		panic("traceformat: more rare columns than maxRareCols")
	}
}

// Next decodes the next event of b into e.
func (c *Cursor) Next(b *Batch, e *Event) bool {
	i := c.i
	if i >= len(b.gap) {
		return false
	}
	if i == 0 {
		c.t = b.baseNs
	}
	c.i = i + 1
	entry := c.t + b.gap[i]
	exit := entry + int64(b.dur[i])
	c.t = exit
	e.Entry, e.Exit = entry, exit
	e.setShape(&b.shapes[b.shapeIdx[i]], b.thread)
	if e.Attr&^staticAttrs == 0 {
		clearPerCall(e)
		return true
	}
	c.dynamic(b, e)
	return true
}

// clearPerCall clears an event without per-call attributes (Cursor.Next,
// LazyBatch.Next; small enough to be inlined there). The slices are
// stored only when not nil already: a pointer store costs a write barrier
// while the GC marks, and the Event is usually reused call after call.
func clearPerCall(e *Event) {
	if e.Reqs != nil {
		e.Reqs = nil
	}
	if e.Status != nil {
		e.Status = nil
	}
	clearRare(e)
}

// clearRare zeroes the Event fields of the rare columns
// (TestHotPathsMatchColumns checks that it clears them all): the fields
// from NewComm to the end of Event, as one block of 32 bytes (two stores
// rather than one per field, at every event decoded; rareLayout).
func clearRare(e *Event) {
	*(*[4]uint64)(unsafe.Pointer(&e.NewComm)) = [4]uint64{}
}

// rareLayout fails to compile unless the fields from NewComm to the end
// of an Event are 32 bytes, NewComm at an offset of a multiple of 8
// (clearRare).
var _ = [1]struct{}{}[rareLayout]

const rareLayout = (unsafe.Sizeof(Event{}) - unsafe.Offsetof(Event{}.NewComm) - 32) | unsafe.Offsetof(Event{}.NewComm)%8

// dynamic fills the per-call attributes of e (whose Attr is set).
func (c *Cursor) dynamic(b *Batch, e *Event) {
	a := e.Attr
	nst := 1
	if a&AttrReqs != 0 {
		n := int(b.nreqs[c.nreq])
		c.nreq++
		e.Reqs = b.reqs[c.req : c.req+n : c.req+n]
		c.req += n
		nst = n
	} else if e.Reqs != nil {
		e.Reqs = nil
	}
	if a&AttrStatus != 0 {
		e.Status = b.status[c.status : c.status+nst : c.status+nst]
		c.status += nst
	} else if e.Status != nil {
		e.Status = nil
	}
	clearRare(e)
	if a&rareAttrs != 0 {
		for r, k := range rareCols {
			if col := &columns[k]; a&col.Attr != 0 {
				col.eventSet(e, b.rare[r][c.rare[r]])
				c.rare[r]++
			}
		}
	}
}
