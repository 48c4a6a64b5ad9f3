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

// message is the index of the message a ticket stands for.
func (f *fifo) message(tk uint64) uint64 {
	for _, r := range f.revoked {
		if r < tk {
			tk--
		}
	}
	return tk
}

// has says whether the ticket's message has arrived.
func (f *fifo) has(tk uint64) bool {
	m := f.message(tk)
	return m < f.base+uint64(len(f.q)-f.head)
}

// take removes the ticket's message; ok is false if it was taken already
// (inconsistent traces).
func (f *fifo) take(tk uint64) (int64, bool) {
	m := f.message(tk)
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
	f.normalize()
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
	dst.mu.Lock()
	if dst.done.Load() {
		dst.mu.Unlock()
		x.droppedSends.Add(1)
		return
	}
	f := dst.queue(k, c)
	f.push(entry)
	w := dst.waiting
	dst.waiting = false
	full := f.npend >= maxPending && k.src != k.dst
	dst.mu.Unlock()
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
		dst.mu.Lock()
		if x.throttleGen.Load() != gen || dst.done.Load() || f.npend < maxPending/2 {
			dst.mu.Unlock()
			break
		}
		f.full = true // the receiver wakes the sender (fifo.release)
		dst.mu.Unlock()
		x.park(k.src)
	}
	me.throttled.Store(false)
	x.throttled.Add(-1)
}

// ticket hands the next ticket of k to a receive of rank k.dst (the
// caller).
func (x *exchange) ticket(k p2pKey, c *fifoCache) uint64 {
	me := x.ranks[k.dst]
	me.mu.Lock()
	f := me.queue(k, c)
	tk := f.tickets
	f.tickets++
	me.mu.Unlock()
	return tk
}

// revoke gives back the ticket of a cancelled receive.
func (x *exchange) revoke(k p2pKey, tk uint64, c *fifoCache) {
	me := x.ranks[k.dst]
	me.mu.Lock()
	f := me.queue(k, c)
	f.revoked = append(f.revoked, tk)
	f.normalize()
	me.mu.Unlock()
}

// recv returns the send entry of the ticket's message, waiting for it if
// needed; ok is false when it never comes.
func (x *exchange) recv(k p2pKey, tk uint64, c *fifoCache) (entry int64, ok bool) {
	me := x.ranks[k.dst]
	me.mu.Lock()
	f := me.queue(k, c)
	// f stays in the inbox while parked: a queue with a ticket out is not
	// idle, so no sweep removes it.
	for !f.has(tk) {
		// Checked under me.mu: the sender posts (under me.mu) before it
		// is done, so a finished sender's message would be seen above.
		// (The sender's state is looked at only here: usually the
		// message is there, and another rank's state is a cache miss.)
		if x.ranks[k.src].done.Load() {
			me.mu.Unlock()
			return 0, false
		}
		me.waiting = true
		me.mu.Unlock()
		aborted := x.park(k.dst)
		me.mu.Lock()
		me.waiting = false
		if aborted {
			me.mu.Unlock()
			return 0, false
		}
	}
	t, ok := f.take(tk)
	rel := f.release()
	me.mu.Unlock()
	if rel {
		x.wake(k.src, k.dst)
	}
	return t, ok
}
