package analyzer

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
// the right message.

// fifo holds the messages of one key (communicator, source, destination,
// tag) in send order, as the send's entry time (global ns), and the
// tickets handed to the destination's receives. It belongs to the
// destination's inbox and is guarded by the destination's lock.
type fifo struct {
	q       []msg // message base+i is q[head+i]
	head    int
	base    uint64
	tickets uint64   // tickets issued
	revoked []uint64 // tickets given back by cancelled receives
	dead    bool     // removed from the inbox (cached pointers must look again)
	npend   int      // messages not yet received
	full    bool     // the sender waits for npend to drop (flow control)
}

// msg is a message in a fifo: its send's entry time, and whether a
// receive took it (receives may take them out of order, by ticket).
type msg struct {
	t     int64
	taken bool
}

// maxPending is the flow-control bound: a sender whose destination has
// this many of its messages (one key) not yet received waits until half
// of them are, so that a replay running far ahead of its receivers does not
// keep the whole trace's messages in memory. The bound is far above what
// MPI itself buffers, and a sender never waits when that would stall the
// replay.
var maxPending = 1 << 16

// idle says whether the queue is in its initial state: no message waiting
// and every ticket used, so that dropping it and starting afresh changes
// nothing.
func (f *fifo) idle() bool {
	return len(f.q) == f.head && f.tickets-uint64(len(f.revoked)) == f.base
}

func (f *fifo) push(t int64) {
	f.q = append(f.q, msg{t: t})
	f.npend++
}

// pending is the number of messages not yet received.
func (f *fifo) pending() int { return f.npend }

// normalize forgets the revoked tickets once the queue is idle: ticket and
// message numbers then agree again, and the list does not grow forever.
func (f *fifo) normalize() {
	if len(f.revoked) > 0 && f.idle() {
		f.revoked = f.revoked[:0]
		f.tickets = f.base
	}
}

// message is the index of the message a ticket stands for. Only the
// receiver changes the revoked tickets, so it stays the same while the
// receiver waits for the message.
func (f *fifo) message(tk uint64) uint64 {
	if len(f.revoked) == 0 {
		return tk
	}
	for _, r := range f.revoked {
		if r < tk {
			tk--
		}
	}
	return tk
}

// arrived says whether message m has been sent.
func (f *fifo) arrived(m uint64) bool {
	return m < f.base+uint64(len(f.q)-f.head)
}

// take removes message m (fifo.message of a ticket, arrived); ok is false
// if it was taken already (inconsistent traces).
func (f *fifo) take(m uint64) (int64, bool) {
	if m < f.base {
		return 0, false
	}
	i := f.head + int(m-f.base)
	if f.q[i].taken {
		return 0, false
	}
	t := f.q[i].t
	f.q[i].taken = true
	f.npend--
	if i == f.head {
		// In order (the common case): pass the taken messages.
		for f.head < len(f.q) && f.q[f.head].taken {
			f.head++
			f.base++
		}
		if f.head == len(f.q) {
			f.q, f.head = f.q[:0], 0
		} else if f.head > 64 && f.head*2 > len(f.q) {
			n := copy(f.q, f.q[f.head:])
			f.q, f.head = f.q[:n], 0
		}
	}
	if len(f.revoked) > 0 {
		f.normalize()
	}
	return t, true
}

// release says whether a sender held back by flow control may go on now.
func (f *fifo) release() bool {
	if f.full && f.npend < maxPending/2 {
		f.full = false
		return true
	}
	return false
}

// fifoCache remembers the queue of the last key a replay used: most
// programs send to the same partners with the same tag over and over, and
// hashing the key is a noticeable part of the replay's cost. Queues are
// never removed from an inbox while its rank runs, so a cached pointer
// stays valid (after the rank finished, done is checked first).
type fifoCache struct {
	key p2pKey
	f   *fifo
}

// queue returns the fifo of k in rank rs's inbox, creating it. rs.mu is
// held.
func (rs *rankSync) queue(k p2pKey, c *fifoCache) *fifo {
	if c.f != nil && c.key == k && !c.f.dead {
		return c.f
	}
	return rs.queueSlow(k, c)
}

func (rs *rankSync) queueSlow(k p2pKey, c *fifoCache) *fifo {
	f := rs.inbox[k]
	if f == nil {
		if len(rs.inbox) >= rs.sweepAt {
			rs.sweep()
		}
		f = &fifo{}
		rs.inbox[k] = f
	}
	c.key, c.f = k, f
	return f
}

// minSweep is the inbox size below which idle queues are kept (reused by
// the next message of their key).
const minSweep = 1024

// sweep drops idle queues, so that programs using ever new tags (or
// communicators) do not grow the inbox with the length of the trace: it
// stays bounded by the messages and receives in flight. The threshold
// doubles with what remains, which keeps the cost amortized O(1).
func (rs *rankSync) sweep() {
	for k, f := range rs.inbox {
		if f.idle() {
			f.dead = true
			delete(rs.inbox, k)
		}
	}
	rs.sweepAt = max(minSweep, 2*len(rs.inbox))
}

// send posts a message (its send's entry time). Only the destination's
// lock is taken, unless flow control holds the sender back.
func (x *exchange) send(k p2pKey, entry int64, c *fifoCache) {
	dst := x.ranks[k.dst]
	x.lock(&dst.mu)
	if dst.done.Load() {
		x.unlock(&dst.mu)
		x.droppedSends.Add(1)
		return
	}
	f := dst.queue(k, c)
	f.push(entry)
	w := dst.waiting
	dst.waiting = false
	full := f.npend >= maxPending && k.src != k.dst
	x.unlock(&dst.mu)
	if w {
		x.wake(k.dst, k.src)
	}
	if full {
		x.throttle(k, f)
	}
}

// throttle holds sender k.src back until the destination has received half
// of the messages of k in flight, or the destination ended, or holding it
// back would stall the replay (the scheduler then releases it).
func (x *exchange) throttle(k p2pKey, f *fifo) {
	me, dst := x.ranks[k.src], x.ranks[k.dst]
	gen := x.throttleGen.Load()
	me.throttled.Store(true)
	x.throttled.Add(1)
	for {
		x.lock(&dst.mu)
		if x.throttleGen.Load() != gen || dst.done.Load() || f.npend < maxPending/2 {
			x.unlock(&dst.mu)
			break
		}
		f.full = true // the receiver wakes the sender (fifo.release)
		x.unlock(&dst.mu)
		x.park(k.src)
	}
	me.throttled.Store(false)
	x.throttled.Add(-1)
}

// ticket hands the next ticket of k to a receive of rank k.dst (the
// caller), and the queue it is for: a queue with a ticket out is not idle,
// so no sweep removes it from the inbox, and the receive keeps the pointer
// instead of looking the key up again (recv, revoke).
func (x *exchange) ticket(k p2pKey, c *fifoCache) (*fifo, uint64) {
	me := x.ranks[k.dst]
	x.lock(&me.mu)
	f := me.queue(k, c)
	tk := f.tickets
	f.tickets++
	x.unlock(&me.mu)
	return f, tk
}

// revoke gives back the ticket of a cancelled receive of rank dst (the
// caller) on queue f (from ticket).
func (x *exchange) revoke(f *fifo, dst int32, tk uint64) {
	me := x.ranks[dst]
	x.lock(&me.mu)
	f.revoked = append(f.revoked, tk)
	f.normalize()
	x.unlock(&me.mu)
}

// recv returns the send entry of the message of ticket tk of queue f (from
// ticket) of rank dst (the caller), sent by rank src, waiting for it if
// needed; ok is false when it never comes.
func (x *exchange) recv(f *fifo, src, dst int32, tk uint64) (entry int64, ok bool) {
	me := x.ranks[dst]
	x.lock(&me.mu)
	if m := f.message(tk); f.arrived(m) {
		// recvLocked's common case written out: the message is there.
		t, ok := f.take(m)
		rel := f.full && f.release()
		x.unlock(&me.mu)
		if rel {
			x.wake(src, dst)
		}
		return t, ok
	}
	return x.recvLocked(me, f, src, dst, tk)
}

// recvNext is ticket and recv under one hold of the lock, for a blocking
// receive of rank k.dst (the caller).
func (x *exchange) recvNext(k p2pKey, c *fifoCache) (entry int64, ok bool) {
	me := x.ranks[k.dst]
	x.lock(&me.mu)
	f := me.queue(k, c)
	tk := f.tickets
	f.tickets++
	return x.recvLocked(me, f, k.src, k.dst, tk)
}

// recvLocked is recv with me.mu held; it releases it.
func (x *exchange) recvLocked(me *rankSync, f *fifo, src, dst int32, tk uint64) (entry int64, ok bool) {
	m := f.message(tk)
	for !f.arrived(m) {
		// Checked under me.mu: the sender posts (under me.mu) before it
		// is done, so a finished sender's message would be seen above.
		// (The sender's state is looked at only here: usually the
		// message is there, and another rank's state is a cache miss.)
		if x.ranks[src].done.Load() {
			x.unlock(&me.mu)
			return 0, false
		}
		me.waiting = true
		x.unlock(&me.mu)
		aborted := x.park(dst)
		x.lock(&me.mu)
		me.waiting = false
		if aborted {
			x.unlock(&me.mu)
			return 0, false
		}
	}
	t, ok := f.take(m)
	rel := f.full && f.release()
	x.unlock(&me.mu)
	if rel {
		x.wake(src, dst)
	}
	return t, ok
}
