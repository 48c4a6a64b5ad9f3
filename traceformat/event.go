package traceformat

import "slices"

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

	attrKnown = 1<<12 - 1
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
	Thread uint32
	Func   uint32 // Function.id
	Entry  int64
	Exit   int64
	Site   uint32 // CallSite.id
	Attr   Attr

	Comm      uint32   // AttrComm: local communicator index
	SendPeer  int32    // AttrSend
	SendTag   int32    // AttrSend
	RecvPeer  int32    // AttrRecv
	RecvTag   int32    // AttrRecv
	SendBytes uint64   // AttrSendBytes
	RecvBytes uint64   // AttrRecvBytes
	Root      int32    // AttrRoot
	Reqs      []uint64 // AttrReqs: request ids created/started/completed/freed
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
}

// NumCalls is the number of MPI calls e stands for: Calls for a folded
// run of polls, else 1.
func (e *Event) NumCalls() uint32 {
	if e.Calls > 1 {
		return e.Calls
	}
	return 1
}

// Batch is a run of consecutive events of one thread in columnar form.
//
// A Batch has two forms. Built with Append (the writer's form), every
// column below is filled: per-event columns have Len() entries, attribute
// columns one entry per event carrying the attribute. Returned by a Reader
// or built with AppendStatic (the decoded form), the values repeated call after call (function, call
// site, attributes, communicator, peers, tags, byte counts, root) live in
// the batch's shape table instead, and only Thread, BaseNs, Gap, Dur and the
// per-call attribute columns (NReqs, Reqs, Status, NewComm, PcLevel, PcArg,
// Flag, Calls) are filled. Read either form event by event with a Cursor.
// Reqs holds absolute request ids (the delta coding is applied only on
// disk).
type Batch struct {
	Thread uint32
	BaseNs int64

	Func []uint32
	Gap  []int64
	Dur  []uint64
	Site []uint32
	Attr []Attr

	Comm      []uint32
	SendPeer  []int32
	SendTag   []int32
	RecvPeer  []int32
	RecvTag   []int32
	SendBytes []uint64
	RecvBytes []uint64
	Root      []int32
	NReqs     []uint32
	Reqs      []uint64
	Status    []Status
	NewComm   []uint32
	PcLevel   []int32
	PcArg     []int64
	Flag      []uint32
	Calls     []uint32

	lastExit   int64   // exit time of the last appended event
	statusTags []int32 // decode scratch, kept for reuse
	statusSrc  []int32 // decode scratch
	dynAttr    []Attr  // decode scratch: per-call attribute bits by shape

	// Decoded form: the shape table and each event's index into it.
	shapes   []shape
	shapeIdx []uint32

	// AppendStatic's shape lookup: the last shape of each call site (index
	// + 1, 0 = none), and all shapes.
	bySite []uint32
	index  map[shape]uint32
}

// shape is the part of an event that an iterative program repeats: the
// function, call site, attribute bits and the static attribute values.
// Attribute values not present in attr are zero, so equal shapes compare
// equal.
type shape struct {
	fn, site  uint32
	attr      Attr
	comm      uint32
	sendPeer  int32
	sendTag   int32
	recvPeer  int32
	recvTag   int32
	root      int32
	sendBytes uint64
	recvBytes uint64
}

// Attributes whose values are stored in the shape table; the others are
// stored per event.
const staticAttrs = AttrComm | AttrSend | AttrRecv | AttrSendBytes | AttrRecvBytes | AttrRoot

// Len is the number of events in the batch.
func (b *Batch) Len() int { return len(b.Gap) }

// Reset empties the batch, keeping its storage.
func (b *Batch) Reset() {
	*b = Batch{
		Func: b.Func[:0], Gap: b.Gap[:0], Dur: b.Dur[:0], Site: b.Site[:0], Attr: b.Attr[:0],
		Comm: b.Comm[:0], SendPeer: b.SendPeer[:0], SendTag: b.SendTag[:0],
		RecvPeer: b.RecvPeer[:0], RecvTag: b.RecvTag[:0],
		SendBytes: b.SendBytes[:0], RecvBytes: b.RecvBytes[:0], Root: b.Root[:0],
		NReqs: b.NReqs[:0], Reqs: b.Reqs[:0], Status: b.Status[:0], NewComm: b.NewComm[:0],
		PcLevel: b.PcLevel[:0], PcArg: b.PcArg[:0], Flag: b.Flag[:0], Calls: b.Calls[:0], statusTags: b.statusTags[:0], statusSrc: b.statusSrc[:0], dynAttr: b.dynAttr[:0],
		shapes: b.shapes[:0], shapeIdx: b.shapeIdx[:0], bySite: b.bySite, index: b.index,
	}
	clear(b.bySite)
	clear(b.index)
}

// AppendStatic adds e at the end of a batch in the shape-table form, the
// form a Reader returns, which a Writer encodes without building the table
// again: it is the fast path for producers (the tracer). It takes e's
// times and static part: function, call site, attribute bits and the
// values of AttrComm, AttrSend, AttrRecv, AttrSendBytes, AttrRecvBytes and
// AttrRoot. The caller then appends the values of e's per-call attributes
// to NReqs, Reqs, Status, NewComm, PcLevel, PcArg, Flag and Calls, as Append does
// (one NReqs entry and len(Reqs) ids for AttrReqs, one Status per request
// or one without AttrReqs, and so on). A batch holds events of one form:
// do not mix Append and AppendStatic in one batch.
func (b *Batch) AppendStatic(e *Event) {
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
// AppendStatic or AppendRepeat added (only its times differ): the tracer's
// path for a run of one call, which needs no shape lookup. The batch must
// not be empty.
func (b *Batch) AppendRepeat(entry, exit int64) {
	b.Gap = append(b.Gap, entry-b.lastExit)
	b.Dur = append(b.Dur, uint64(exit-entry))
	b.lastExit = exit
	b.shapeIdx = append(b.shapeIdx, b.shapeIdx[len(b.shapeIdx)-1])
}

// AppendLike adds an event of the same static part as event i of the
// batch (an earlier event added by AppendStatic, AppendRepeat, AppendLike
// or RepeatLast) with new times: the tracer's path for a call site seen
// before in the batch, which needs no shape lookup. The caller then appends
// the event's per-call attributes as after AppendStatic.
func (b *Batch) AppendLike(i int, entry, exit int64) {
	b.Gap = append(b.Gap, entry-b.lastExit)
	b.Dur = append(b.Dur, uint64(exit-entry))
	b.lastExit = exit
	b.shapeIdx = append(b.shapeIdx, b.shapeIdx[i])
}

// RepeatLast completes n events that repeat the static part of the last
// event added by AppendStatic, AppendRepeat, AppendLike or RepeatLast,
// whose gaps and durations the caller has appended to Gap and Dur itself;
// exit is the exit time of the last of them. It is AppendRepeat for a
// whole run of one call (the tracer's tight loop), whose times the caller
// converts and appends with the columns held in registers: Gap[k] is the
// entry time minus the exit time of event k-1, Dur[k] the exit time minus
// the entry time.
func (b *Batch) RepeatLast(n int, exit int64) {
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
func (b *Batch) shapeID(e *Event) uint32 {
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

// Append adds e at the end of the batch. The first event sets BaseNs; the
// thread of the batch is the thread of its first event. Status entries
// beyond what the attributes call for are ignored, missing ones are padded
// with NoStatus, so that a batch built by Append is always consistent.
func (b *Batch) Append(e *Event) {
	if len(b.Func) == 0 {
		b.BaseNs = e.Entry
		b.lastExit = e.Entry
		b.Thread = e.Thread
	}
	b.Func = append(b.Func, e.Func)
	b.Gap = append(b.Gap, e.Entry-b.lastExit)
	b.Dur = append(b.Dur, uint64(e.Exit-e.Entry))
	b.lastExit = e.Exit
	b.Site = append(b.Site, e.Site)
	a := e.Attr & attrKnown
	b.Attr = append(b.Attr, a)
	if a == 0 {
		return
	}
	if a&AttrComm != 0 {
		b.Comm = append(b.Comm, e.Comm)
	}
	if a&AttrSend != 0 {
		b.SendPeer = append(b.SendPeer, e.SendPeer)
		b.SendTag = append(b.SendTag, e.SendTag)
	}
	if a&AttrRecv != 0 {
		b.RecvPeer = append(b.RecvPeer, e.RecvPeer)
		b.RecvTag = append(b.RecvTag, e.RecvTag)
	}
	if a&AttrSendBytes != 0 {
		b.SendBytes = append(b.SendBytes, e.SendBytes)
	}
	if a&AttrRecvBytes != 0 {
		b.RecvBytes = append(b.RecvBytes, e.RecvBytes)
	}
	if a&AttrRoot != 0 {
		b.Root = append(b.Root, e.Root)
	}
	b.appendPerCall(e, a)
}

// appendPerCall adds the per-call attributes of e (attribute bits a) to b's
// columns: the part of Append that AppendStatic's callers do themselves.
func (b *Batch) appendPerCall(e *Event, a Attr) {
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
	if a&AttrNewComm != 0 {
		b.NewComm = append(b.NewComm, e.NewComm)
	}
	if a&AttrPcontrol != 0 {
		b.PcLevel = append(b.PcLevel, e.PcLevel)
		b.PcArg = append(b.PcArg, e.PcArg)
	}
	if a&AttrFlag != 0 {
		var f uint32
		if e.Flag {
			f = 1
		}
		b.Flag = append(b.Flag, f)
	}
	if a&AttrCalls != 0 {
		b.Calls = append(b.Calls, e.Calls)
	}
}

// Cursor walks a Batch event by event. The zero Cursor is at the first
// event; Next fills e and reports whether there was an event. The batch must
// be consistent, as batches from a Reader (checked when decoded) and
// batches built with Append always are.
type Cursor struct {
	i, comm, send, recv, sbytes, rbytes, root, nreq, req, status, newcomm, pc, flag, calls int
	t                                                                                      int64
}

// Next decodes the next event of b into e.
func (c *Cursor) Next(b *Batch, e *Event) bool {
	i := c.i
	if i >= len(b.Gap) {
		return false
	}
	if i == 0 {
		c.t = b.BaseNs
	}
	c.i = i + 1
	entry := c.t + b.Gap[i]
	exit := entry + int64(b.Dur[i])
	c.t = exit
	e.Thread, e.Entry, e.Exit = b.Thread, entry, exit
	if len(b.shapeIdx) != 0 {
		// Decoded form: static values come from the event's shape.
		sh := &b.shapes[b.shapeIdx[i]]
		e.Func, e.Site, e.Attr = sh.fn, sh.site, sh.attr
		e.Comm, e.SendPeer, e.SendTag, e.RecvPeer, e.RecvTag = sh.comm, sh.sendPeer, sh.sendTag, sh.recvPeer, sh.recvTag
		e.SendBytes, e.RecvBytes, e.Root = sh.sendBytes, sh.recvBytes, sh.root
	} else {
		c.static(b, e, i)
	}
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
	e.NewComm, e.PcLevel, e.PcArg, e.Flag, e.Calls = 0, 0, 0, false, 0
}

// static fills the static attributes of event i of a batch in writer form
// from its per-event columns.
func (c *Cursor) static(b *Batch, e *Event, i int) {
	a := b.Attr[i]
	e.Func, e.Site, e.Attr = b.Func[i], b.Site[i], a
	e.Comm, e.SendPeer, e.SendTag, e.RecvPeer, e.RecvTag = 0, 0, 0, 0, 0
	e.SendBytes, e.RecvBytes, e.Root = 0, 0, 0
	if a&staticAttrs == 0 {
		return
	}
	if a&AttrComm != 0 {
		e.Comm = b.Comm[c.comm]
		c.comm++
	}
	if a&AttrSend != 0 {
		e.SendPeer, e.SendTag = b.SendPeer[c.send], b.SendTag[c.send]
		c.send++
	}
	if a&AttrRecv != 0 {
		e.RecvPeer, e.RecvTag = b.RecvPeer[c.recv], b.RecvTag[c.recv]
		c.recv++
	}
	if a&AttrSendBytes != 0 {
		e.SendBytes = b.SendBytes[c.sbytes]
		c.sbytes++
	}
	if a&AttrRecvBytes != 0 {
		e.RecvBytes = b.RecvBytes[c.rbytes]
		c.rbytes++
	}
	if a&AttrRoot != 0 {
		e.Root = b.Root[c.root]
		c.root++
	}
}

// dynamic fills the per-call attributes of e (whose Attr is set) from the
// per-event attribute columns, the same in both forms.
func (c *Cursor) dynamic(b *Batch, e *Event) {
	a := e.Attr
	nst := 1
	if a&AttrReqs != 0 {
		n := int(b.NReqs[c.nreq])
		c.nreq++
		e.Reqs = b.Reqs[c.req : c.req+n : c.req+n]
		c.req += n
		nst = n
	} else if e.Reqs != nil {
		e.Reqs = nil
	}
	if a&AttrStatus != 0 {
		e.Status = b.Status[c.status : c.status+nst : c.status+nst]
		c.status += nst
	} else if e.Status != nil {
		e.Status = nil
	}
	e.NewComm, e.PcLevel, e.PcArg, e.Flag, e.Calls = 0, 0, 0, false, 0
	if a&(AttrNewComm|AttrPcontrol|AttrFlag|AttrCalls) == 0 {
		return
	}
	if a&AttrNewComm != 0 {
		e.NewComm = b.NewComm[c.newcomm]
		c.newcomm++
	}
	if a&AttrPcontrol != 0 {
		e.PcLevel, e.PcArg = b.PcLevel[c.pc], b.PcArg[c.pc]
		c.pc++
	}
	if a&AttrFlag != 0 {
		e.Flag = b.Flag[c.flag] != 0
		c.flag++
	}
	if a&AttrCalls != 0 {
		e.Calls = b.Calls[c.calls]
		c.calls++
	}
}
