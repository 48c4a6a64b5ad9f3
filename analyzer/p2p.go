package analyzer

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Point-to-point matching. MPI matches a receive with the oldest pending
// message of the same communicator, source and tag at the moment the
// receive is posted (the non-overtaking rule), not when it completes. The
// replay follows that with tickets: every receive whose source and tag are
// known when it is posted (a blocking receive, an MPI_Irecv or a started
// persistent receive without wildcards) takes the next ticket of its key
// then, and the ticket's message is the one it gets, whenever it is waited
// for. Receives with ANY_SOURCE or ANY_TAG learn their key only from the
// status at completion and take a ticket then (MPI's choice among pending
// messages of different keys cannot be reconstructed better). A cancelled
// receive returns its ticket, so that later receives of the key still get
// the right message. A blocking MPI_Probe looks at the message of the
// key's next ticket without taking it (exchange.peek): the receive posted
// after it takes that ticket and gets the message the probe saw.
//
// A message also carries what its receiver needs to charge a late receive
// to a blocking or synchronous send (lateInfo): the receiver knows when it
// posted, the sender does not, and the sender must never wait for it.

// fifo holds the messages of one key (communicator, source, destination,
// tag) in send order, as the send's entry time (global ns), and the
// tickets handed to the destination's receives. It belongs to the
// destination's inbox.
//
// A key has one sending replay (the source's) and one receiving replay
// (the destination's), so the queue is single-producer single-consumer
// and neither takes a lock: the sender writes a message into the ring and
// then publishes the count sent; the receiver reads the messages below
// that count and publishes how far it has taken them, so that the sender
// reuses their slots. (The three lock round trips per iteration of a ring
// exchange, send, ticket and receive, took about 8 % of the CPU time at two
// workers.) The counts are atomic except when a single worker runs every
// replay (solo): a coroutine switch orders everything then. Everything else
// — tickets, revocations, out-of-order takes — is the receiver's alone.
type fifo struct {
	// Written by the sender, read by it at every message: the first
	// cache line (fifoLayout).
	sent  uint64                  // messages pushed (atomic unless solo)
	ring  atomic.Pointer[msgRing] // replaced (grown) by the sender
	sring *msgRing                // the sender's copy of ring
	seen  uint64                  // base as the sender last read it
	// dead: swept from the inbox (sweep): cached pointers must look
	// again. Written by the receiver, rarely, read by the sender at
	// every message: kept on the sender's line.
	dead atomic.Bool
	solo bool
	// proxy, for a destination replayed by another process (dist.go),
	// is the key: the fifo stands for the other process's queue and
	// only counts the messages sent into it (sent), so that a
	// cancelled send can name its message there.
	proxy *p2pKey
	// acked, of a proxy: the sender's messages its receiver's process
	// last said were taken (drCredit); win the number not taken past
	// which the sender waits (0: limits.pending), doubled each time a
	// stall releases it (distX.throttle).
	acked, win uint64

	// Written by the receiver, the second cache line: what a receive
	// and a Wait/Test call read of the queue besides sent and ring
	// (doneRecv.arrived, receivedArrived, exchange.ticket).
	base    uint64   // first message not taken (atomic unless solo)
	nooo    uint64   // len(ooo), for the sender (atomic unless solo)
	tickets uint64   // tickets issued
	revoked []uint64 // tickets given back by cancelled receives
	// passed counts the messages of cancelled sends base has passed
	// (passCancelled): every ticket not yet resolved to its message
	// stands for a message that many further on.
	passed uint64
	full   atomic.Bool // the sender waits for pending to drop (flow control)
	// ncanc is the number of messages of cancelled sends (canc), so that
	// the receiver looks only when there are some.
	ncanc atomic.Int32

	ooo []uint64 // messages above base taken out of order (by ticket), sorted
	// Messages of cancelled sends (withdraw), added by the sender under
	// cmu and skipped by the receiver, which removes them as it passes
	// them.
	cmu  sync.Mutex
	canc []uint64
	// roff: in a queue a remote sender posts into, the sender's number
	// of its message 0 (rset once known), to find a message a
	// cancelled send withdraws and to tell the sender's process how
	// many were taken (dist.go); rkey is the queue's key then.
	roff uint64
	rset bool
	rkey p2pKey
	// remote: the key's sender is replayed by another process, so
	// that a step parking on the queue sends what its process holds
	// for the others first (replayer.park), as await does.
	remote bool
	_      [31]byte // (to fifoSize)
}

// fifoLayout fails to compile unless the sender's fields above are the
// first cache line of a fifo, the receiver's the second, and a fifo is
// fifoSize bytes: the allocator's size class of 256 bytes places every
// fifo at a multiple of 256 in its span, so that each part is one line
// and neither shares its line with the other (several workers write them
// at once). With a line per part, a replay of 32 ranks, whose queues have
// left the caches between two visits of a rank, misses fewer of them.
const fifoLayout = (unsafe.Offsetof(fifo{}.base) - 64) | (unsafe.Offsetof(fifo{}.ooo) - 128) | (unsafe.Sizeof(fifo{}) - fifoSize)

var _ = [1]struct{}{}[fifoLayout]

const fifoSize = 256

// msgRing is a fifo's message storage: message m is m[m&mask]. A slot is
// written once by the sender before the message is published and not
// again until the receiver has taken the message and passed it (base), so
// the receiver reads it without a lock; growing copies the messages not
// yet passed into a new ring, and the old one stays valid for a receiver
// still reading it.
type msgRing struct {
	m []msgSlot
	// lr is, by message, what a late receiver needs (lateInfo), written
	// with m and read with it; nil (all zero) until the key's first
	// blocking send that may wait for its receiver, so that the keys of
	// nonblocking sends pay nothing.
	lr   []lateInfo
	mask uint64
}

// msgSlot is one message: its send's entry (global ns), its send's call
// site (file-local to the sender), which the receiver names as the late
// partner, with the computation before it (waits.go), and its recorded
// bytes (the message sizes, profile.go). One slot (half a cache line)
// rather than a slice per field: a push and a take index one slice.
type msgSlot struct {
	t int64
	s sendSite
	b uint64
}

// lateInfo is what a message tells its receiver about its send, so that
// the receiver can charge a late receive to the sender (the sender's
// replay may be anywhere by then): exit is the exit of a blocking send
// that may wait for its receiver (0 for other sends), att where its
// charge goes (lateAtt).
type lateInfo struct {
	exit int64
	att  uint64
}

// lateSync is the bit of lateInfo.att of a synchronous blocking send
// (MPI_Ssend), which cannot complete before its receive is posted: a
// posting at or after its exit counts as at its exit (exchange.taken).
// lateAtt never sets it (an interval index below 2³¹), so that lateInfo
// keeps its size.
const lateSync = 1 << 63

// issendMark is lateInfo.exit of a synchronous nonblocking send, whose
// att is then its serial number (replayer.issendSerial): its receiver
// reports the posting time (exchange.issendPosted).
const issendMark = math.MinInt64

// minRing is the initial ring size: a key's messages in flight are mostly
// few.
const minRing = 4

func newFifo(solo bool) *fifo {
	r := &msgRing{m: make([]msgSlot, minRing), mask: minRing - 1}
	f := &fifo{sring: r, solo: solo}
	f.ring.Store(r)
	return f
}

// load and store access a count shared by the sender and the receiver.
func (f *fifo) load(p *uint64) uint64 {
	return atomic.LoadUint64(p)
}

func (f *fifo) store(p *uint64, v uint64) {
	if f.solo {
		*p = v
	} else {
		atomic.StoreUint64(p, v)
	}
}

// maxPending is the flow-control bound: a sender whose destination has
// this many of its messages (one key) not yet received waits until half
// of them are, so that a replay running far ahead of its receivers does not
// keep the whole trace's messages in memory. The bound is far above what
// MPI itself buffers, and a sender never waits when that would stall the
// replay. It is the default of limits.pending.
const maxPending = 1 << 16

// idle says whether the queue is in its initial state: no message waiting
// and every ticket used, so that dropping it and starting afresh changes
// nothing. By the receiver.
func (f *fifo) idle() bool {
	return f.load(&f.sent) == f.base && f.tickets-uint64(len(f.revoked))+f.passed == f.base
}

// push appends message m (its send's entry, call site and bytes) with its
// late-receiver information li; by the sender. It returns the messages not
// yet received when they may have reached bound (the exchange's
// limits.pending; else 0). m is passed by reference: the send's figures
// go from the caller's frame to the slot without being passed on as
// arguments at every call on the way.
func (f *fifo) push(m *msgSlot, li lateInfo, bound int) int {
	n := f.sent
	r := f.sring
	if n-f.seen >= uint64(len(r.m)) {
		f.seen = f.load(&f.base)
		if n-f.seen >= uint64(len(r.m)) {
			r = f.grow(n, 2*len(r.m), r.lr != nil)
		}
	}
	if r.lr != nil {
		r.lr[n&r.mask] = li
	} else if li.exit != 0 {
		r = f.grow(n, len(r.m), true)
		r.lr[n&r.mask] = li
	}
	r.m[n&r.mask] = *m
	f.store(&f.sent, n+1)
	if n+1-f.seen < uint64(bound) {
		return 0
	}
	f.seen = f.load(&f.base)
	return int(n + 1 - f.seen - f.load(&f.nooo))
}

// grow replaces the ring by one of size messages (with late-receiver
// information when lr), copying the messages from seen to n (some may have
// been taken since: they are copied for nothing). By the sender.
func (f *fifo) grow(n uint64, size int, lr bool) *msgRing {
	old := f.sring
	r := &msgRing{m: make([]msgSlot, size), mask: uint64(size - 1)}
	if lr {
		r.lr = make([]lateInfo, size)
	}
	for m := f.seen; m < n; m++ {
		r.m[m&r.mask] = old.m[m&old.mask]
		if old.lr != nil {
			r.lr[m&r.mask] = old.lr[m&old.mask]
		}
	}
	f.sring = r
	f.ring.Store(r)
	return r
}

// pending is the number of messages not yet received; by the receiver, or
// once every replay has finished.
func (f *fifo) pending() int {
	n := int(f.load(&f.sent) - f.base - uint64(len(f.ooo)))
	if f.ncanc.Load() != 0 {
		f.cmu.Lock()
		for _, c := range f.canc {
			if _, taken := slices.BinarySearch(f.ooo, c); c >= f.base && !taken {
				n--
			}
		}
		f.cmu.Unlock()
	}
	return n
}

// sentPending is pending as the sender sees it (the receiver's counts may
// be a little behind).
func (f *fifo) sentPending() int {
	f.seen = f.load(&f.base)
	return int(f.sent - f.seen - f.load(&f.nooo))
}

// normalize forgets the revoked tickets and the passed cancelled messages
// once the queue is idle: ticket and message numbers then agree again,
// and the list does not grow forever.
func (f *fifo) normalize() {
	if (len(f.revoked) > 0 || f.passed > 0) && f.idle() {
		f.revoked = f.revoked[:0]
		f.tickets, f.passed = f.base, 0
	}
}

// message is the index of the message a ticket stands for. Only the
// receiver changes the revoked tickets, so it stays the same while the
// receiver waits for the message.
func (f *fifo) message(tk uint64) uint64 {
	if f.ncanc.Load() != 0 {
		return f.skipCancelled(f.revokedMessage(tk))
	}
	return f.revokedMessage(tk)
}

func (f *fifo) revokedMessage(tk uint64) uint64 {
	m := tk + f.passed
	for _, r := range f.revoked {
		if r < tk {
			m--
		}
	}
	return m
}

// skipCancelled is the message a receive gets in place of m when the
// messages of cancelled sends are skipped. A cancelled message the
// receiver took already (traces disagreeing on the order) stays taken and
// is forgotten. By the receiver.
func (f *fifo) skipCancelled(m uint64) uint64 {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	slices.Sort(f.canc)
	keep := f.canc[:0]
	for _, c := range f.canc {
		if _, taken := slices.BinarySearch(f.ooo, c); c < f.base || taken {
			continue
		}
		keep = append(keep, c)
		if c <= m {
			m++
		}
	}
	f.canc = keep
	f.ncanc.Store(int32(len(keep)))
	return m
}

// passCancelled moves base b past the messages of cancelled sends at it.
// By the receiver.
func (f *fifo) passCancelled(b uint64) uint64 {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	slices.Sort(f.canc)
	keep := f.canc[:0]
	for _, c := range f.canc {
		if c == b {
			b++
			f.passed++
		} else if c > b {
			keep = append(keep, c)
		}
	}
	f.canc = keep
	f.ncanc.Store(int32(len(keep)))
	return b
}

// advance moves base past the messages of cancelled sends and those taken
// out of order after them. By the receiver.
func (f *fifo) advance() {
	b := f.base
	for {
		nb := f.passCancelled(b)
		k := 0
		for k < len(f.ooo) && f.ooo[k] == nb {
			k++
			nb++
		}
		if k > 0 {
			f.ooo = append(f.ooo[:0], f.ooo[k:]...)
			f.store(&f.nooo, uint64(len(f.ooo)))
		}
		if nb == b {
			break
		}
		b = nb
	}
	f.store(&f.base, b)
}

// withdraw removes message m of queue f, whose send was cancelled (by the
// sender): no receive gets it and it is not counted unreceived.
func (x *exchange) withdraw(f *fifo, m uint64) {
	if f.proxy != nil {
		x.dist.withdraw(*f.proxy, m)
		return
	}
	f.cmu.Lock()
	f.canc = append(f.canc, m)
	f.ncanc.Store(int32(len(f.canc)))
	f.cmu.Unlock()
}

// arrived says whether message m has been sent.
func (f *fifo) arrived(m uint64) bool {
	return m < f.load(&f.sent)
}

// take removes message m (fifo.message of a ticket, arrived) and copies
// its slot (its send's entry, call site and bytes) to out; ok is false if
// it was taken already (inconsistent traces), out then zero. li is the
// message's late-receiver information. By the receiver.
func (f *fifo) take(m uint64, out *msgSlot) (li lateInfo, ok bool) {
	if m < f.base {
		*out = msgSlot{}
		return li, false
	}
	r := f.ring.Load()
	// Read before base passes it: the slot is reused after.
	*out = r.m[m&r.mask]
	if r.lr != nil {
		li = r.lr[m&r.mask]
	}
	if m != f.base {
		i, found := slices.BinarySearch(f.ooo, m)
		if found {
			*out = msgSlot{}
			return li, false
		}
		f.ooo = slices.Insert(f.ooo, i, m)
		f.store(&f.nooo, uint64(len(f.ooo)))
		if f.ncanc.Load() != 0 {
			f.advance()
		}
		return li, true
	}
	// In order (the common case): pass the taken messages.
	b := m + 1
	if len(f.ooo) > 0 {
		k := 0
		for k < len(f.ooo) && f.ooo[k] == b {
			k++
			b++
		}
		f.ooo = append(f.ooo[:0], f.ooo[k:]...)
		f.store(&f.nooo, uint64(len(f.ooo)))
	}
	f.store(&f.base, b)
	if f.ncanc.Load() != 0 {
		f.advance()
	}
	if len(f.revoked) > 0 || f.passed > 0 {
		f.normalize()
	}
	return li, true
}

// fifoCache remembers the queue of the last key a replay used: most
// programs send to the same partners with the same tag over and over, and
// hashing the key is a noticeable part of the replay's cost. A queue swept
// from its inbox is marked dead, so that a cached pointer is looked up
// again.
type fifoCache struct {
	key p2pKey
	f   *fifo
}

// recvQueue returns the fifo of k in rank rs's inbox, creating it; by the
// receiver (rank k.dst).
func (x *exchange) recvQueue(rs *rankSync, k p2pKey, c *fifoCache) *fifo {
	if c.f != nil && c.key == k && !c.f.dead.Load() {
		return c.f
	}
	x.lock(&rs.mu)
	if len(rs.inbox) >= rs.sweepAt {
		// Only the receiver sweeps: a queue it holds a ticket of is
		// not idle, and one it cached is not taken from under it
		// between its check above and its use.
		x.sweep(rs)
	}
	f := rs.queueLocked(k, x.solo, x.remoteSender(k))
	x.unlock(&rs.mu)
	c.key, c.f = k, f
	return f
}

// queueLocked returns the fifo of k in the inbox, creating it. rs.mu is
// held.
//
// The replay's queue caches are its batch's shapes', which start empty
// with each batch: a program of many shapes per batch (LAMMPS: a few
// hundred, against a few keys) looks its keys up here once per shape and
// batch, tens of thousands of times, and hashing the key for the map was
// most of the cost; the inbox's last entries are kept by a cheaper hash.
func (rs *rankSync) queueLocked(k p2pKey, solo, remote bool) *fifo {
	e := &rs.recent[k.slot()]
	if e.f != nil && e.k == k {
		return e.f
	}
	f := rs.inbox[k]
	if f == nil {
		f = newFifo(solo)
		f.remote = remote
		rs.inbox[k] = f
	}
	e.k, e.f = k, f
	return f
}

// remoteSender says whether k's sender is replayed by another process.
func (x *exchange) remoteSender(k p2pKey) bool {
	return x.dist != nil && uint32(k.src) < uint32(len(x.ranks)) && x.ranks[k.src].remote
}

// inboxEntry is an entry of a rank's inbox (rankSync.recent).
type inboxEntry struct {
	k p2pKey
	f *fifo
}

// slot is k's entry of rankSync.recent.
func (k p2pKey) slot() uint32 {
	return (uint32(k.src)*0x9e3779b1 ^ uint32(k.tag)*0x85ebca6b ^ uint32(k.comm)*0xc2b2ae35 ^ uint32(k.dst)) >> 29
}

// minSweep is the inbox size below which idle queues are kept (reused by
// the next message of their key).
const minSweep = 1024

// sweep drops idle queues of rank rs's inbox, so that programs using ever
// new tags (or communicators) do not grow the inbox with the length of the
// trace: it stays bounded by the messages and receives in flight. The
// threshold doubles with what remains, which keeps the cost amortized
// O(1). By the receiver, rs.mu held.
//
// A sender may be pushing into a queue meanwhile without the lock: the
// queue is marked dead first and its count sent read again after, while
// the sender publishes the count first and reads dead after (send), so
// that at least one of them sees the other (both accesses are sequentially
// consistent atomics). A queue that received a message meanwhile is kept;
// a sender that saw it dead looks again under rs.mu (send).
func (x *exchange) sweep(rs *rankSync) {
	for k, f := range rs.inbox {
		if f.idle() {
			f.dead.Store(true)
			if f.load(&f.sent) != f.base {
				f.dead.Store(false)
				continue
			}
			delete(rs.inbox, k)
		}
	}
	clear(rs.recent[:])
	rs.sweepAt = max(minSweep, 2*len(rs.inbox))
}

// send posts message m (its send's entry time, call site and recorded
// bytes) of key k, with its late-receiver information, without a lock,
// unless the key is new to the sender or flow control holds the sender
// back. k and m are read, not kept. It returns the queue the message went
// into and its number there, which a cancelled send withdraws, or nil and
// droppedMsg when the destination had finished.
func (x *exchange) send(k *p2pKey, m *msgSlot, li lateInfo, c *fifoCache) (*fifo, uint64) {
	dst := x.ranks[k.dst]
	if dst.done.Load() {
		// (A message posted while the destination finishes is counted
		// with the unreceived ones at the end, unreceived.)
		x.dropSend(*k, m.s.site)
		return nil, droppedMsg
	}
	if dst.remote {
		x.dist.send(*k, m, li, c)
		return c.f, c.f.sent - 1
	}
	f := c.f
	if f == nil || (k != &c.key && c.key != *k) || f.dead.Load() {
		// (k is c's own key when c is a shape's cache, shapeKey: c
		// then holds k's queue if any.)
		if f = x.sendQueue(dst, *k, m.s.site, c); f == nil {
			return nil, droppedMsg
		}
	}
	// fifo.push's common case written out (a ring with room, below the
	// flow-control bound, that needs no late-receiver information or has
	// it already): its call passed the message's pointer and the bound
	// on, and spilled them for its rare paths.
	ms, r := f.sent, f.sring
	if ms-f.seen >= uint64(len(r.m)) {
		f.seen = f.load(&f.base)
	}
	n := 0
	if ms-f.seen < uint64(len(r.m)) && (r.lr != nil || li.exit == 0) && ms+1-f.seen < uint64(x.lim.pending) {
		if r.lr != nil {
			r.lr[ms&r.mask] = li
		}
		r.m[ms&r.mask] = *m
		f.store(&f.sent, ms+1)
	} else {
		n = f.push(m, li, x.lim.pending)
	}
	q := f
	if f.dead.Load() && !x.solo {
		// (c holds k: repost set it, or it did already.)
		x.repost(dst, *k, f, m, li, c)
		q, ms = c.f, c.f.sent-1
	}
	if w := dst.waitOn.load(); w != nil && (w == f || w == q) && dst.waitOn.take(w, x.solo) {
		// The receiver stores waitOn before it looks at the count sent
		// a last time (await), as the count was stored before waitOn
		// is read here: either it sees the message or it is woken.
		// (q: the queue a repost put the message in.)
		x.wake(k.dst, k.src)
	}
	if n >= x.lim.pending && k.src != k.dst {
		x.throttle(*k, f)
	}
	return q, ms
}

// droppedMsg is send's message number for a message dropped (its
// destination's replay had finished): counted unreceived at once, so that
// its cancellation takes it back off that count (undropSend) instead of
// withdrawing anything from a queue.
const droppedMsg = ^uint64(0)

// repost handles a message posted into queue f while a sweep dropped it
// (send): once the sweep is over (under dst.mu), if the queue was dropped
// without the message being taken, the message is posted again into the
// queue that replaced it. (The sweep may have kept the queue, or the
// receiver may have taken the message and a later sweep dropped the queue:
// a queue is dropped only when every message in it was taken, and nothing
// is taken from it after.)
func (x *exchange) repost(dst *rankSync, k p2pKey, f *fifo, m *msgSlot, li lateInfo, c *fifoCache) {
	x.lock(&dst.mu)
	defer x.unlock(&dst.mu)
	if dst.inbox[k] == f || f.load(&f.base) == f.sent {
		return
	}
	f = dst.queueLocked(k, x.solo, x.remoteSender(k))
	f.push(m, li, x.lim.pending)
	c.key, c.f = k, f
}

// sendQueue looks the queue of k up in the destination's inbox (under its
// lock), creating it; nil when the destination has finished (the message,
// sent from site, is dropped).
func (x *exchange) sendQueue(dst *rankSync, k p2pKey, site uint32, c *fifoCache) *fifo {
	x.lock(&dst.mu)
	defer x.unlock(&dst.mu)
	if dst.done.Load() {
		x.dropSend(k, site)
		return nil
	}
	f := dst.queueLocked(k, x.solo, x.remoteSender(k))
	c.key, c.f = k, f
	return f
}

// throttle holds sender k.src back until the destination has received half
// of the messages of k in flight, or the destination ended, or holding it
// back would stall the replay (the scheduler then releases it).
func (x *exchange) throttle(k p2pKey, f *fifo) {
	me, dst := x.ranks[k.src], x.ranks[k.dst]
	if me.onStack {
		me.dueK, me.dueF, me.stop = k, f, true
		return
	}
	if f.proxy != nil {
		x.dist.throttle(k, f)
		return
	}
	gen := x.throttleGen.Load()
	me.throttled.Store(true)
	x.throttled.Add(1)
	for x.throttleGen.Load() == gen && !dst.done.Load() && f.sentPending() >= x.lim.pending/2 {
		// The receiver wakes the sender (release): full is stored
		// before the counts are read again, as the receiver stores
		// its counts before it reads full.
		f.full.Store(true)
		if f.sentPending() < x.lim.pending/2 {
			break
		}
		if x.park(k.src) {
			break // the analysis was cancelled
		}
	}
	me.throttled.Store(false)
	x.throttled.Add(-1)
}

// release wakes the sender of f held back by flow control once half of its
// messages were received (a sender of another process: tells its process,
// distX.credit). By the receiver, after a take.
func (x *exchange) release(f *fifo, src, dst int32) {
	if f.pending() < x.lim.pending/2 && f.full.CompareAndSwap(true, false) {
		if f.rset {
			x.dist.credit(f)
			return
		}
		x.wake(src, dst)
	}
}

// ticket hands the next ticket of k to a receive of rank k.dst (the
// caller), and the queue it is for: a queue with a ticket out is not idle,
// so no sweep removes it from the inbox, and the receive keeps the pointer
// instead of looking the key up again (recv, revoke).
func (x *exchange) ticket(k p2pKey, c *fifoCache) (*fifo, uint64) {
	f := x.recvQueue(x.ranks[k.dst], k, c)
	tk := f.tickets
	f.tickets++
	return f, tk
}

// revoke gives back the ticket of a cancelled receive of rank dst (the
// caller) on queue f (from ticket).
func (x *exchange) revoke(f *fifo, dst int32, tk uint64) {
	f.revoked = append(f.revoked, tk)
	f.normalize()
}

// recv returns the send entry of message m of queue f (fifo.message of
// the receive's ticket, from ticket) of rank dst (the caller), sent by
// rank src, waiting for it if needed; ok is false when it never comes.
// post is when the receive was posted (its call's entry, or its request's
// start): a blocking send that waited for it is charged (lateReceiver),
// naming the receiving call's site rsite as the late one. site and bytes
// are the send's call site (with its span, causes.go) and recorded bytes.
func (x *exchange) recv(f *fifo, m uint64, src, dst int32, post int64, rsite uint32) (entry int64, site sendSite, bytes uint64, ok bool) {
	if !f.arrived(m) && !x.await(f, m, src, dst) {
		return 0, sendSite{}, 0, false
	}
	var sl msgSlot
	li, ok := f.take(m, &sl)
	if li.exit != 0 || f.full.Load() {
		x.taken(f, sl.t, li, ok, src, dst, post, rsite)
	}
	return sl.t, sl.s, sl.b, ok
}

// taken is what follows the take of a message of queue f (send entry t,
// late-receiver information li, ok from fifo.take) by a receive of rank
// dst posted at post from call site rsite, when li or flow control asks
// for it: the late receiver's charge, and the release of the sender.
//
// A posting time the sender's charge depends on (a synchronous send's, or
// one before the blocking send's exit, which a later posting could turn
// into a charge) is handed to the sender: the receiving call becomes a
// fixed point of the controlled logical clock (rankSync.handed, clc.go),
// so that no backward amortization moves the posting after the charge
// was made from it.
func (x *exchange) taken(f *fifo, t int64, li lateInfo, ok bool, src, dst int32, post int64, rsite uint32) {
	if li.exit != 0 && ok {
		if li.exit == issendMark {
			x.issendPosted(src, li.att, post, dst, rsite)
			x.ranks[dst].handed(t)
		} else if li.att&lateSync != 0 || li.exit > post {
			// A synchronous send's receive posted at or after its exit
			// breaks the clock condition (an alignment error put it
			// there): the send waited for it until its exit
			// (characteristics.md §8.6, as rankSync.issNote), and is
			// counted, not repaired (rankSync.unrSsend). Its charge
			// depends on the posting however late: handed.
			if post > li.exit {
				x.syncPostedLate(li, post, src, dst)
			}
			if p := min(post, li.exit); p > t {
				x.lateReceiver(src, li.att&^lateSync, p-t, dst, rsite)
			}
			x.ranks[dst].handed(t)
		}
	}
	if f.full.Load() {
		x.release(f, src, dst)
	}
}

// syncPostedLate counts, on rank dst (the caller), the message of rank
// src with late-receiver information li whose receive was posted at post,
// after the send's exit, when the send was synchronous: a violation the
// controlled logical clock does not repair (rankSync.unrSsend). Kept out
// of taken, which every blocking send's message goes through.
//
//go:noinline
func (x *exchange) syncPostedLate(li lateInfo, post int64, src, dst int32) {
	if li.att&lateSync != 0 {
		x.ranks[dst].unrSsend.note(post-li.exit, src)
	}
}

// recvNext is ticket and recv, for a blocking receive of rank k.dst (the
// caller) posted at post.
func (x *exchange) recvNext(k p2pKey, c *fifoCache, post int64, rsite uint32) (entry int64, site sendSite, bytes uint64, ok bool) {
	f, tk := x.ticket(k, c)
	return x.recv(f, f.message(tk), k.src, k.dst, post, rsite)
}

// peek is the send entry of the message a receive of rank k.dst (the
// caller) from k.src with k.tag would get if posted now, waiting for it
// if needed, without taking it (MPI_Probe): the message of the key's next
// ticket, so that the receive that follows, taking that ticket, gets the
// same message. ok is false when it never comes.
func (x *exchange) peek(k p2pKey, c *fifoCache) (entry int64, site sendSite, ok bool) {
	f := x.recvQueue(x.ranks[k.dst], k, c)
	m := f.message(f.tickets)
	if !f.arrived(m) && !x.await(f, m, k.src, k.dst) {
		return 0, sendSite{}, false
	}
	// Not taken: m is at or above base, so its slot stays as written.
	r := f.ring.Load()
	sl := &r.m[m&r.mask]
	return sl.t, sl.s, true
}

// ready says whether await would return at once for message m of f, sent
// by rank src: it has arrived, or never will (the sender finished).
func (x *exchange) ready(f *fifo, m uint64, src int32) bool {
	return f.arrived(m) || x.ranks[src].done.Load()
}

// await waits until message m of f, sent by rank src to rank dst (the
// caller), has arrived; false when it never comes.
func (x *exchange) await(f *fifo, m uint64, src, dst int32) bool {
	me := x.ranks[dst]
	for !f.arrived(m) {
		if x.ranks[src].done.Load() {
			// The sender published its messages before it stored
			// done: read after done, the count is final.
			return f.arrived(m)
		}
		// waitOn is stored before the count is read again, and the
		// sender stores the count before it reads waitOn (send):
		// either the message is seen here or the sender wakes the
		// receiver (a wake before it parks puts it back on the run
		// queue as soon as it parks, sched.wakeLocked).
		me.waitOn.set(f, x.solo)
		if f.arrived(m) {
			me.waitOn.set(nil, x.solo)
			return true
		}
		if !x.solo {
			// For the order of wakes after a collective (sortWake).
			if src < dst {
				x.waitUp.Add(1)
			} else {
				x.waitDown.Add(1)
			}
		}
		if x.dist != nil && x.ranks[src].remote {
			// The sender's process may wait for what this one has
			// to send before it gets there.
			x.dist.flush()
		}
		aborted := x.park(dst)
		if me.waitOn.load() != nil {
			// (Mostly cleared by the sender that woke it: a load is
			// cheaper than an atomic store, an exchange on amd64.)
			me.waitOn.set(nil, x.solo)
		}
		if aborted {
			return false
		}
	}
	return true
}

// unreceived counts the messages left in every inbox; once every replay
// has finished.
func (x *exchange) unreceived() (n int64) {
	for _, rs := range x.ranks {
		for _, f := range rs.inbox {
			n += int64(f.pending())
		}
	}
	return n
}
