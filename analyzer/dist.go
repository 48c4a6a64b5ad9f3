package analyzer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// A distributed replay (dtpa-mpi, docs/distributed.md) splits the traced
// ranks into contiguous blocks over the processes of an analysis job;
// each process replays its block with the single-process machinery
// (exchange, sched) and a distX that stands in for the ranks the others
// replay:
//
//   - A message to a rank replayed elsewhere is sent to that process,
//     which posts it into the rank's inbox as the rank's own sender would:
//     the receiving side, where the matching happens, is always local.
//     What a receiver hands back to a sender (a late receiver's charge,
//     a synchronous send's posting time) goes the other way.
//   - Every process that replays a member of a communicator keeps its
//     own copy of each collective instance on it; each entry and exit of
//     a member is sent to the other processes that hold a copy, so that
//     all copies end with the same slots and compute the same
//     contributions, each process keeping those of its own members.
//     A process makes an instance when the first entry for it comes,
//     from a local member or another process (a member list goes to
//     each process once, drMembers, before the first entry that needs
//     it).
//   - A lost collective call is resynchronized (resync.go) on every copy:
//     an entry travels with the number its member's replay gave the call,
//     and every process places it as its own replay's calls are placed,
//     that number plus the instances this process counted the member
//     skipping, resynchronizing it from there against the entries it has
//     by the same rule. Each copy sees every member's entries in that
//     member's order, and the rule decides two disagreeing calls by their
//     entries alone and moves a member's later calls with it, so the
//     copies decide alike where dtpa's decision does not depend on the
//     order of the replays (docs/characteristics.md §8.1). An exit names
//     its entry by that number too (rankSync.open): the instance's key may
//     have changed on either side by then.
//   - A rank whose replay ends is announced to every process: waits for
//     it give up there as they would locally.
//
// Everything one process sends another travels in order (Transport), so
// a rank's messages arrive before its end, an entry before its exit.
//
// Termination and stalls: a process with nothing to run reports its
// state to process 0 and waits for messages. Process 0 decides, as the
// scheduler does alone (sched.stall), once every process has reported
// itself idle and as many data messages were received as sent, confirmed
// by a second round of replies with unchanged counts (Mattern's
// four-counter rule: no message was in flight): the replay has ended if
// no replay is live anywhere; else flow control gives way, or one parked
// replay gives up its wait.
//
// Flow control (throttle) holds a sender back until its receiver, in this
// process or another, has taken half of the messages of a key in flight,
// and gives way whenever that would stall the replay, here or anywhere.

// Transport carries the messages of a distributed replay between its
// processes. Messages from one process to another arrive in the order
// they were sent.
type Transport interface {
	Rank() int // this process, 0 … Size()-1
	Size() int
	// Send queues msg for process to without waiting for it to be
	// received; the caller may reuse msg when it returns.
	Send(to int, msg []byte) error
	// Recv returns the next message from any process; when none is
	// there, nil, or with wait, blocks until one arrives. msg is valid
	// until the next call.
	Recv(wait bool) (from int, msg []byte, err error)
}

// Kinds of messages (their first byte).
const (
	dmData      = 1 + iota // records (below)
	dmReport               // a process is idle: distState, to process 0
	dmProbe                // process 0 asks whether its reports still hold: epoch
	dmAck                  // the reply: epoch, distState, idle
	dmRelease              // flow control gives way
	dmAbort                // the lowest-ranked parked replay gives up its wait (sched.abortLowest)
	dmTerm                 // every replay has ended
	dmResult               // a process's results, to process 0 (replayResult)
	dmObs                  // what its observers recorded, to process 0 (dist_obs.go)
	dmChromeRun            // the Chrome export's layout, from process 0 (dist_obs.go)
	dmStart                // whether a process can begin the replay, and process 0's answer (agree)
)

// Kinds of records in a data message.
const (
	drSend     = 1 + iota // a message to a rank of the receiving process
	drLate                // a late receiver's charge to a send of its rank
	drIss                 // a synchronous send's posting time, to its sender
	drEnter               // a member entered a collective instance
	drExit                // a member left one
	drDone                // a rank's replay ended
	drWithdraw            // a send was cancelled: its message is taken back
	drMembers             // the members of the instances of a memKey, before its first entry
	drFull                // a sender waits until the receiver has taken half of a key's messages
	drCredit              // how many of a key's messages the receiver has taken, to the sender
)

// flushBytes is the batch size at which records are sent at once; below
// it they wait for flushEvery resumes, or for the process to be idle.
const (
	flushBytes = 32 << 10
	flushEvery = 16
)

// distState is what process 0 needs of a process to decide.
type distState struct {
	sent, recvd int64 // data messages
	live        int64 // replays not finished
	parked      int64 // replays waiting
	throttled   int64 // of those, held back by flow control
	idle        bool
}

// distX is one process's side of a distributed replay.
type distX struct {
	x     *exchange
	s     *sched
	tr    Transport
	me, n int
	owner []int32 // by world rank: the process that replays it

	out         [][]byte // records to send, by process
	outBytes    int
	sinceFlush  int
	sent, recvd int64
	// active: something happened since the last report (a replay ran,
	// a message came).
	active bool
	term   bool
	err    error

	peers map[*int32][]int // by communicator member list: the other processes replaying members
	// memSent: the processes told the members of each memKey; memIn:
	// the members other processes told of.
	memSent map[memKey][]bool
	memIn   map[memKey][]int32
	// caches are the inbox queues last used by each remote sender.
	caches map[int32]*fifoCache
	// dropFrom is, by key, the first message (in the sender's
	// numbering) a remote sender sent after the local destination's
	// replay had finished: it and all after it were dropped, so their
	// withdrawals take them back off the dropped count (undropSend).
	dropFrom map[p2pKey]uint64
	// proxies number the messages sent to each key of another process
	// (fifo.proxy).
	proxies map[p2pKey]*fifo
	wake    []int32

	// Flow control across processes (throttle): the most messages of
	// one key from another process this one held at once, and how
	// often a local sender waited for another process's receiver.
	maxQueued uint64
	flowWaits int64

	// Process 0: the latest report of each process, whether it is
	// still valid, and the probe in progress.
	reports []distState
	have    []bool
	epoch   uint64
	probing bool
	snap    []distState
	acks    []distState
	nacks   int
}

// memKey names the members of a collective instance: those of the
// instances of a communicator, or of an intercommunicator's rooted
// collective, whose members begin with the root.
type memKey struct {
	comm         uint64
	group, split int32
	first        int32
	n            int
}

func memKeyOf(in *collInst) memKey {
	return memKey{comm: in.key.comm, group: in.key.group, split: in.key.split, first: in.members[0], n: len(in.members)}
}

// collRec is a member's entry or exit as sent between processes.
type collRec struct {
	key             collKey
	idx             int
	rank            int32
	t               int64 // entry or exit
	site, span      uint32
	comp, dur       int64
	fn              string
	shape           tracepb.Function_Collective
	root            int32
	first           int32 // the instance's first member and number of members (memKey)
	n               int
	nonblocking, nb bool
	quiet           bool // the entering call sends no data (collAtt.quiet)
}

// blockOwners splits size ranks into n contiguous blocks.
func blockOwners(size, n int) []int32 {
	o := make([]int32, size)
	for p := 0; p < n; p++ {
		for r := p * size / n; r < (p+1)*size/n; r++ {
			o[r] = int32(p)
		}
	}
	return o
}

func newDist(x *exchange, tr Transport) *distX {
	n := tr.Size()
	d := &distX{x: x, tr: tr, me: tr.Rank(), n: n, owner: blockOwners(len(x.ranks), n),
		out: make([][]byte, n), peers: map[*int32][]int{},
		memSent: map[memKey][]bool{}, memIn: map[memKey][]int32{},
		caches: map[int32]*fifoCache{}, proxies: map[p2pKey]*fifo{}, active: true}
	if d.me == 0 {
		d.reports, d.have, d.acks, d.snap = make([]distState, n), make([]bool, n), make([]distState, n), make([]distState, n)
	}
	for r, rs := range x.ranks {
		if d.owner[r] != int32(d.me) && rs.present {
			rs.remote = true
		}
	}
	x.dist = d
	return d
}

// local says whether rank r is replayed by this process.
func (d *distX) local(r int32) bool { return d.owner[r] == int32(d.me) }

// record starts a record of kind k to process p.
func (d *distX) record(p int, k byte) []byte {
	b := d.out[p]
	if len(b) == 0 {
		b = append(b, dmData)
	}
	return append(b, k)
}

// put stores a record to process p and sends the batch when it is big.
func (d *distX) put(p int, b []byte) {
	d.outBytes += len(b) - len(d.out[p])
	d.out[p] = b
	if d.outBytes >= flushBytes {
		d.flush()
	}
}

func av(b []byte, v int64) []byte   { return binary.AppendVarint(b, v) }
func auv(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// send forwards a message to a rank of another process (exchange.send);
// c caches the key's proxy queue, which numbers the messages.
func (d *distX) send(k p2pKey, m *msgSlot, li lateInfo, c *fifoCache) {
	f := c.f
	if f == nil || c.key != k {
		if f = d.proxies[k]; f == nil {
			f = &fifo{proxy: &k}
			d.proxies[k] = f
		}
		c.key, c.f = k, f
	}
	seq := f.sent
	f.sent++
	p := int(d.owner[k.dst])
	b := d.record(p, drSend)
	b = auv(b, seq)
	b = av(b, int64(k.src))
	b = av(b, int64(k.dst))
	b = auv(b, k.comm)
	b = av(b, int64(k.tag))
	b = av(b, m.t)
	b = auv(b, uint64(m.s.site))
	b = auv(b, uint64(m.s.span))
	b = av(b, m.s.comp)
	b = auv(b, m.b)
	b = av(b, li.exit)
	b = auv(b, li.att)
	d.put(p, b)
	win := f.win
	if win == 0 {
		win = uint64(d.x.lim.pending)
	}
	if f.sent-f.acked >= win {
		d.x.throttle(k, f) // (distX.throttle, after the step's event if on its stack)
	}
}

// throttle holds sender k.src back, as exchange.throttle does for a
// receiver of its own process, until the receiver's process says that
// half of the messages of k in flight were taken (drFull, answered by
// drCredit), or the receiver's replay ended, or holding it back would
// stall the distributed replay: process 0 then releases it (distX.act)
// and its window doubles, so that a trace whose receiver needs more
// messages before it takes any (it waits for a later one) costs a
// stall per doubling, not per message. f is the key's proxy.
func (d *distX) throttle(k p2pKey, f *fifo) {
	x := d.x
	me, dst := x.ranks[k.src], x.ranks[k.dst]
	d.keyed(int(d.owner[k.dst]), drFull, k, f.sent)
	// The receiver's process may be waiting for nothing else.
	d.flush()
	d.flowWaits++
	gen := x.throttleGen.Load()
	me.throttled.Store(true)
	x.throttled.Add(1)
	f.full.Store(true)
	for x.throttleGen.Load() == gen && !dst.done.Load() && f.full.Load() {
		if x.park(k.src) {
			break // the analysis was cancelled
		}
	}
	if f.full.Load() && x.throttleGen.Load() != gen {
		// Released by a stall: the receiver needs more before it
		// takes any.
		f.win = 2 * (f.sent - f.acked)
	}
	f.full.Store(false)
	me.throttled.Store(false)
	x.throttled.Add(-1)
}

// credit tells the process of the sender of f, a queue of a local
// receiver that another process's sender posts into, how many of its
// messages were taken (in the sender's numbering, fifo.roff).
func (d *distX) credit(f *fifo) {
	d.creditN(f.rkey, f.roff+f.sent-uint64(f.pending()))
}

func (d *distX) creditN(k p2pKey, taken uint64) { d.keyed(int(d.owner[k.src]), drCredit, k, taken) }

// withdraw takes message seq of key k back from the receiver's process
// (a cancelled send).
func (d *distX) withdraw(k p2pKey, seq uint64) { d.keyed(int(d.owner[k.dst]), drWithdraw, k, seq) }

// keyed sends process p a record of kind kind about key k with one count.
func (d *distX) keyed(p int, kind byte, k p2pKey, n uint64) {
	b := d.record(p, kind)
	b = av(b, int64(k.src))
	b = av(b, int64(k.dst))
	b = auv(b, k.comm)
	b = av(b, int64(k.tag))
	d.put(p, auv(b, n))
}

// lateReceiver forwards a late receiver's charge to the sender's process.
func (d *distX) lateReceiver(src int32, att uint64, dur int64, dst int32, rsite uint32) {
	p := int(d.owner[src])
	b := d.record(p, drLate)
	b = av(b, int64(src))
	b = auv(b, att)
	b = av(b, dur)
	b = av(b, int64(dst))
	b = auv(b, uint64(rsite))
	d.put(p, b)
}

// issendPosted forwards a synchronous send's posting time to the
// sender's process.
func (d *distX) issendPosted(src int32, serial uint64, post int64, dst int32, rsite uint32) {
	p := int(d.owner[src])
	b := d.record(p, drIss)
	b = av(b, int64(src))
	b = auv(b, serial)
	b = av(b, post)
	b = av(b, int64(dst))
	b = auv(b, uint64(rsite))
	d.put(p, b)
}

func appendKey(b []byte, k collKey) []byte {
	b = auv(b, k.comm)
	b = av(b, int64(k.group))
	b = auv(b, k.seq)
	b = av(b, int64(k.split))
	return auv(b, uint64(k.n))
}

// peersOf lists the other processes replaying members of in.
func (d *distX) peersOf(in *collInst) []int {
	if len(in.members) == 0 {
		return nil
	}
	key := &in.members[0]
	if p, ok := d.peers[key]; ok {
		return p
	}
	seen := make([]bool, d.n)
	var out []int
	for _, m := range in.members {
		if m < 0 || int(m) >= len(d.owner) {
			continue
		}
		p := int(d.owner[m])
		if p != d.me && !seen[p] && d.x.ranks[m].present {
			seen[p] = true
			out = append(out, p)
		}
	}
	d.peers[key] = out
	return out
}

// entered sends a local member's entry to the other copies of in. wire
// is the instance key the member's replay numbered the call with:
// every copy adds the member's skips to it and resynchronizes from there
// (enterRemote), by the same rule, against the entries it has.
func (d *distX) entered(in *collInst, wire collKey, shape tracepb.Function_Collective, idx int, me int32, entry int64, att collAtt, nonblocking bool) {
	peers := d.peersOf(in)
	if len(peers) == 0 {
		return
	}
	mk := memKeyOf(in)
	told := d.memSent[mk]
	if told == nil {
		told = make([]bool, d.n)
		d.memSent[mk] = told
	}
	for _, p := range peers {
		if !told[p] {
			// The receiver makes the instances this member enters
			// (resynchronizing, as here) when its entry arrives.
			told[p] = true
			b := d.record(p, drMembers)
			b = appendKey(b, collKey{comm: mk.comm, group: mk.group, split: mk.split, n: int64(mk.n)})
			b = auv(b, uint64(len(in.members)))
			for _, m := range in.members {
				b = av(b, int64(m))
			}
			d.put(p, b)
		}
		b := d.record(p, drEnter)
		b = appendKey(b, wire)
		b = av(b, int64(idx))
		b = av(b, int64(me))
		b = av(b, entry)
		b = auv(b, uint64(att.site))
		b = auv(b, uint64(att.span))
		b = av(b, att.comp)
		b = auv(b, uint64(len(in.fn)))
		b = append(b, in.fn...)
		b = av(b, int64(in.root))
		b = av(b, int64(shape))
		b = av(b, int64(in.members[0]))
		b = auv(b, uint64(len(in.members)))
		b = append(b, boolByte(nonblocking)|boolByte(att.quiet)<<1)
		d.put(p, b)
	}
}

// left sends a local member's exit to the other copies of in (nb: posted
// by icollDone, with the completing call's duration dur), naming the
// instance by the member and the number its entry went with.
func (d *distX) left(in *collInst, idx int, exit, dur int64, nb bool) {
	wire := in.key
	wire.seq = in.slots[idx].wire
	for _, p := range d.peersOf(in) {
		b := d.record(p, drExit)
		b = appendKey(b, wire)
		b = av(b, int64(idx))
		b = av(b, int64(in.members[idx]))
		b = av(b, exit)
		b = av(b, dur)
		b = append(b, boolByte(nb))
		d.put(p, b)
	}
}

// finished announces the end of local rank me's replay to every process.
func (d *distX) finished(me int32) {
	for p := 0; p < d.n; p++ {
		if p != d.me {
			d.put(p, av(d.record(p, drDone), int64(me)))
		}
	}
}

// notes says whether this process reports instance in as unmatched: the
// one replaying its first present member, so that it is reported once.
func (d *distX) notes(in *collInst) bool {
	for _, m := range in.members {
		if m >= 0 && int(m) < len(d.owner) && d.x.ranks[m].present {
			return d.local(m)
		}
	}
	return true
}

// enterRemote posts the entry of another process's member, numbered
// r.key by its replay, as a local call's (exchange.collEnterLocked):
// placed the instances further that this process counted the member
// skipping, resynchronized or made there. Every copy of an instance sees
// the entries in an order that keeps each member's, and decides as the
// others do. x.mu is held.
func (d *distX) enterRemote(r *collRec) {
	x := d.x
	rs := d.remoteRank(r, "entry")
	if rs == nil {
		return
	}
	k := r.key
	k.seq += rs.shifts[commKey{k.comm, k.group}]
	in := x.colls.get(k)
	members := d.memIn[memKey{comm: k.comm, group: k.group, split: k.split, first: r.first, n: r.n}]
	if in != nil {
		members = in.members
	} else if members == nil {
		d.fail(fmt.Errorf("analysis process sent an entry of %v without its members", r.key))
		return
	}
	var left []int
	var woken []int32
	if in != nil && r.idx >= 0 && r.idx < len(members) && members[r.idx] == r.rank && misfit(in, r.fn, r.root, members, r.idx) {
		in, left, woken = x.resyncLocked(&k, in, r.fn, r.root, members, r.idx, r.rank, r.t)
	}
	if in == nil {
		in = x.newCollLocked(k, r.fn, r.shape, r.root, members)
		for _, i := range left {
			woken = x.leaveLocked(in, i, woken)
		}
	}
	if d.applyEnter(in, r) {
		rs.open = append(rs.open, openColl{in: in, wire: r.key})
	}
	x.wakeAll(woken, -1)
}

// exitRemote posts the exit of another process's member from the
// instance its entry numbered r.key was posted to. x.mu is held.
func (d *distX) exitRemote(r *collRec) {
	rs := d.remoteRank(r, "exit")
	if rs == nil {
		return
	}
	// From the latest: a blocking call's exit follows its entry.
	for i := len(rs.open) - 1; i >= 0; i-- {
		if o := rs.open[i]; o.wire == r.key {
			// Its entry came (the rank's records arrive in order); none
			// is open when it was not posted (the calls disagreed), and
			// then its exit is not posted either.
			rs.open = append(rs.open[:i], rs.open[i+1:]...)
			if r.idx < 0 || r.idx >= len(o.in.members) || o.in.members[r.idx] != r.rank {
				d.fail(fmt.Errorf("analysis process sent an exit of rank %d as member %d of %v", r.rank, r.idx, r.key))
				return
			}
			d.applyExit(o.in, r)
			return
		}
	}
}

// remoteRank is the state of r's rank, which another process must own;
// nil, with the analysis failed, when r names no rank or one of this
// process's. what names the record ("entry", "exit"). x.mu is held.
func (d *distX) remoteRank(r *collRec, what string) *rankSync {
	if r.rank < 0 || int(r.rank) >= len(d.x.ranks) || d.local(r.rank) {
		d.fail(fmt.Errorf("analysis process sent an %s of rank %d, not its own", what, r.rank))
		return nil
	}
	return d.x.ranks[r.rank]
}

// applyEnter posts the entry r into in, and tells whether it did (not
// when the calls disagree). x.mu is held.
func (d *distX) applyEnter(in *collInst, r *collRec) bool {
	if in.fn != r.fn || in.root != r.root || r.idx < 0 || r.idx >= len(in.members) || in.members[r.idx] != r.rank || in.slots[r.idx].hasEntry {
		in.mismatch = true
		return false
	}
	if r.nonblocking && !in.mismatch {
		in.nonblocking = true
	}
	d.wake = d.x.postEntryLocked(in, r.idx, r.t, r.site, r.span, r.comp, r.quiet, d.wake[:0])
	d.x.wakeAll(d.wake, -1)
	return true
}

func (d *distX) applyExit(in *collInst, r *collRec) {
	if r.idx < 0 || r.idx >= len(in.members) {
		in.mismatch = true
		return
	}
	if r.nb {
		d.x.icollExitLocked(in, r.idx, r.t, r.dur, collAtt{})
	} else {
		d.x.collExitLocked(in, r.idx, r.t)
	}
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// flush sends the records waiting for each process.
func (d *distX) flush() {
	d.sinceFlush = 0
	if d.outBytes == 0 {
		return
	}
	for p, b := range d.out {
		if len(b) <= 1 {
			continue
		}
		d.out[p] = b[:0]
		d.sent++
		d.fail(d.tr.Send(p, b))
	}
	d.outBytes = 0
}

func (d *distX) fail(err error) {
	if err != nil && d.err == nil {
		d.err = err
	}
}

// busy is called between two replays' turns: records go out and messages
// are taken in every so often, so that the other processes need not wait
// until this one is idle.
func (d *distX) busy() {
	d.active = true
	if d.sinceFlush++; d.sinceFlush >= flushEvery {
		d.flush()
		d.poll(false)
	}
}

// idle is called when no local replay can run; it returns true once the
// distributed replay has ended (or failed).
func (d *distX) idle() bool {
	d.flush()
	if d.poll(false) || d.term || d.err != nil {
		return d.term || d.err != nil
	}
	if d.s.ctx != nil && d.s.ctx.Err() != nil && d.state(true).parked > 0 {
		// Cancelled: the replays give up their waits and end soon.
		d.s.cancelled()
		return false
	}
	if d.active && d.pollFor(reportAfter) {
		return false
	}
	if d.active {
		d.active = false
		st := d.state(true)
		if d.me == 0 {
			d.reports[0], d.have[0] = st, true
		} else {
			d.fail(d.tr.Send(0, d.encodeState(dmReport, 0, st)))
		}
	}
	if d.me == 0 {
		d.decide()
		if d.term || d.active {
			return d.term
		}
	}
	d.poll(true)
	return d.term || d.err != nil
}

// state is this process's distState. Only an idle one's counts of
// parked replays matter: every live replay is parked then, the
// throttled ones among them.
func (d *distX) state(idle bool) distState {
	live := int64(d.s.live)
	return distState{sent: d.sent, recvd: d.recvd, live: live, parked: live, throttled: int64(d.x.throttled.Load()), idle: idle}
}

func (d *distX) encodeState(kind byte, epoch uint64, st distState) []byte {
	b := []byte{kind}
	b = auv(b, epoch)
	b = av(b, st.sent)
	b = av(b, st.recvd)
	b = av(b, st.live)
	b = av(b, st.parked)
	b = av(b, st.throttled)
	return append(b, boolByte(st.idle))
}

// decide is process 0's turn when it is idle itself: start a probe once
// every process reported idle with balanced counts, and act once the
// replies confirm the reports.
func (d *distX) decide() {
	d.reports[0], d.have[0] = d.state(true), true
	if d.probing {
		if d.nacks < d.n-1 {
			return
		}
		d.probing = false
		d.acks[0] = d.reports[0]
		var all distState
		ok := true
		for p := 0; p < d.n && ok; p++ {
			a := d.acks[p]
			ok = a.idle && a.sent == d.snap[p].sent && a.recvd == d.snap[p].recvd
			all.sent += a.sent
			all.recvd += a.recvd
			all.live += a.live
			all.throttled += a.throttled
		}
		if ok && all.sent == all.recvd {
			d.act(all)
			return
		}
		// Something moved meanwhile: the reports that came since may
		// already say it has settled.
	}
	var sent, recvd int64
	for p := 0; p < d.n; p++ {
		if !d.have[p] || !d.reports[p].idle {
			return
		}
		sent += d.reports[p].sent
		recvd += d.reports[p].recvd
	}
	if sent != recvd {
		return
	}
	d.epoch++
	d.probing, d.nacks = true, 0
	copy(d.snap, d.reports)
	for p := 1; p < d.n; p++ {
		d.fail(d.tr.Send(p, auv([]byte{dmProbe}, d.epoch)))
	}
	if d.n == 1 {
		d.decide()
	}
}

// act is what process 0 decides once nothing moves anywhere.
func (d *distX) act(all distState) {
	tell := func(p int, kind byte) {
		if p == 0 {
			d.handle(0, []byte{kind})
			return
		}
		d.have[p] = false
		d.fail(d.tr.Send(p, []byte{kind}))
	}
	switch {
	case all.live == 0:
		for p := 1; p < d.n; p++ {
			d.fail(d.tr.Send(p, []byte{dmTerm}))
		}
		d.term = true
	case all.throttled > 0:
		for p := 0; p < d.n; p++ {
			if d.acks[p].throttled > 0 {
				tell(p, dmRelease)
			}
		}
	default:
		// The lowest process with a parked replay replays the lowest
		// parked rank, which gives up its wait as in one process
		// (sched.abortLowest).
		for p := 0; p < d.n; p++ {
			if d.acks[p].parked > 0 {
				tell(p, dmAbort)
				return
			}
		}
		d.err = fmt.Errorf("internal error: %d replays live but none parked", all.live)
	}
}

// reportAfter is how long a process that ran out of work looks for
// messages before it reports itself idle to process 0. A replay of a
// tightly coupled program (a halo exchange) waits for another process
// once per step, and the answer usually comes within microseconds: a
// report per wait would double the messages and make process 0 start
// probes that the next message cancels.
const reportAfter = 20 * time.Microsecond

// pollFor takes in the messages that come within d (true: some did).
func (d *distX) pollFor(dur time.Duration) bool {
	start := time.Now()
	for {
		if d.poll(false) {
			return true
		}
		if d.err != nil || d.term || time.Since(start) >= dur {
			return false
		}
	}
}

// poll takes in the messages that are there (with wait, at least one);
// true when it took any.
func (d *distX) poll(wait bool) bool {
	got := false
	for d.err == nil && !d.term {
		from, msg, err := d.tr.Recv(wait && !got)
		if err != nil {
			d.fail(err)
			break
		}
		if msg == nil {
			break
		}
		got = true
		d.handle(from, msg)
	}
	return got
}

// handle acts on one message.
func (d *distX) handle(from int, msg []byte) {
	if len(msg) == 0 {
		d.fail(fmt.Errorf("empty message from analysis process %d", from))
		return
	}
	rd := &drd{b: msg[1:]}
	switch msg[0] {
	case dmData:
		d.recvd++
		d.active = true
		if d.probing {
			d.probing = false
		}
		for len(rd.b) > 0 && rd.err == nil {
			d.record1(rd)
		}
	case dmReport, dmAck:
		epoch := rd.uv()
		st := distState{sent: rd.v(), recvd: rd.v(), live: rd.v(), parked: rd.v(), throttled: rd.v(), idle: rd.byte1() == 1}
		if d.me != 0 || from <= 0 || from >= d.n {
			break
		}
		if msg[0] == dmReport {
			d.reports[from], d.have[from] = st, true
		} else if d.probing && epoch == d.epoch {
			d.acks[from] = st
			d.nacks++
		}
	case dmProbe:
		// Idle: nothing happened since the last report.
		if epoch := rd.uv(); rd.err == nil {
			d.fail(d.tr.Send(0, d.encodeState(dmAck, epoch, d.state(!d.active))))
		}
	case dmRelease:
		d.active = true
		d.s.releaseThrottled()
	case dmAbort:
		d.active = true
		d.x.stalls++
		d.s.abortLowest()
	case dmTerm:
		d.term = true
	default:
		rd.err = fmt.Errorf("unknown message kind %d", msg[0])
	}
	if rd.err != nil {
		d.fail(fmt.Errorf("analysis process %d sent a damaged message: %v", from, rd.err))
	}
}

// record1 applies one record of a data message.
func (d *distX) record1(rd *drd) {
	x := d.x
	kind := rd.byte1()
	switch kind {
	case drSend:
		seq := rd.uv()
		k := p2pKey{src: rd.rank(len(x.ranks)), dst: rd.rank(len(x.ranks))}
		k.comm = rd.uv()
		k.tag = int32(rd.v())
		entry := rd.v()
		site := sendSite{site: uint32(rd.uv()), span: uint32(rd.uv()), comp: rd.v()}
		bytes := rd.uv()
		li := lateInfo{exit: rd.v(), att: rd.uv()}
		if rd.err == nil {
			d.deliver(k, seq, entry, site, bytes, li)
		}
	case drLate:
		src, att, dur, dst, rsite := rd.rank(len(x.ranks)), rd.uv(), rd.v(), rd.rank(len(x.ranks)), uint32(rd.uv())
		if rd.err == nil && d.local(src) {
			x.lateReceiver(src, att, dur, dst, rsite)
		}
	case drIss:
		src, serial, post, dst, rsite := rd.rank(len(x.ranks)), rd.uv(), rd.v(), rd.rank(len(x.ranks)), uint32(rd.uv())
		if rd.err == nil && d.local(src) {
			x.issendPosted(src, serial, post, dst, rsite)
		}
	case drEnter, drExit:
		r := collRec{key: collKey{comm: rd.uv(), group: int32(rd.v()), seq: rd.uv(), split: int32(rd.v()), n: int64(rd.uv())}, idx: int(rd.v())}
		enter := kind == drEnter
		if enter {
			r.rank, r.t = int32(rd.v()), rd.v()
			r.site, r.span, r.comp = uint32(rd.uv()), uint32(rd.uv()), rd.v()
			r.fn = rd.str()
			r.root = int32(rd.v())
			r.shape = tracepb.Function_Collective(rd.v())
			r.first, r.n = int32(rd.v()), int(rd.uv())
			fl := rd.byte1()
			r.nonblocking, r.quiet = fl&1 != 0, fl&2 != 0
		} else {
			r.rank, r.t, r.dur = int32(rd.v()), rd.v(), rd.v()
			r.nb = rd.byte1() == 1
		}
		if rd.err != nil {
			return
		}
		if enter {
			d.enterRemote(&r)
		} else {
			d.exitRemote(&r)
		}
	case drMembers:
		k := collKey{comm: rd.uv(), group: int32(rd.v()), seq: rd.uv(), split: int32(rd.v()), n: int64(rd.uv())}
		n := rd.uv()
		if rd.err == nil && n > uint64(len(x.ranks)) {
			rd.err = fmt.Errorf("%d members", n)
		}
		if rd.err != nil || n == 0 {
			return
		}
		m := make([]int32, n)
		for i := range m {
			m[i] = rd.rank(len(x.ranks))
		}
		if rd.err == nil {
			d.memIn[memKey{comm: k.comm, group: k.group, split: k.split, first: m[0], n: len(m)}] = m
		}
	case drWithdraw:
		k := rd.p2pKey(len(x.ranks))
		seq := rd.uv()
		if rd.err == nil && d.local(k.dst) {
			if first, ok := d.dropFrom[k]; ok && seq >= first {
				x.undropSend(k)
			} else if f := x.ranks[k.dst].inbox[k]; f != nil && f.rset && seq >= f.roff {
				x.withdraw(f, seq-f.roff)
			}
		}
	case drFull:
		k := rd.p2pKey(len(x.ranks))
		sent := rd.uv()
		if rd.err == nil && d.local(k.dst) && !d.local(k.src) {
			d.full(k, sent)
		}
	case drCredit:
		k := rd.p2pKey(len(x.ranks))
		taken := rd.uv()
		if rd.err == nil && d.local(k.src) {
			if f := d.proxies[k]; f != nil && taken <= f.sent {
				f.acked = max(f.acked, taken)
				if f.sent-f.acked < uint64(x.lim.pending/2) {
					f.win = 0
					if f.full.Load() {
						f.full.Store(false)
						x.wake(k.src, -1)
					}
				}
			}
		}
	case drDone:
		r := rd.rank(len(x.ranks))
		if rd.err == nil && !d.local(r) {
			x.doneLocked(r)
		}
	default:
		rd.err = fmt.Errorf("unknown record kind %d", kind)
	}
}

// deliver posts a message from a rank of another process into the local
// destination's inbox, as its sender would locally (exchange.send).
func (d *distX) deliver(k p2pKey, seq uint64, entry int64, site sendSite, bytes uint64, li lateInfo) {
	x := d.x
	if !d.local(k.dst) {
		return
	}
	dst := x.ranks[k.dst]
	if dst.done.Load() {
		x.dropSend(k, site.site)
		if _, ok := d.dropFrom[k]; !ok {
			if d.dropFrom == nil {
				d.dropFrom = map[p2pKey]uint64{}
			}
			d.dropFrom[k] = seq
		}
		return
	}
	c := d.caches[k.src]
	if c == nil {
		c = &fifoCache{}
		d.caches[k.src] = c
	}
	f := c.f
	if f == nil || c.key != k || f.dead.Load() {
		if f = x.sendQueue(dst, k, site.site, c); f == nil {
			return
		}
	}
	if !f.rset {
		f.roff, f.rset, f.rkey = seq-f.sent, true, k
	}
	f.push(&msgSlot{t: entry, s: site, b: bytes}, li, x.lim.pending)
	if n := f.sent - f.base - f.nooo; n > d.maxQueued {
		d.maxQueued = n
	}
	if w := dst.waitOn.load(); w == f && dst.waitOn.take(f, x.solo) {
		x.wake(k.dst, -1)
	}
}

// full answers a sender of another process waiting until half of the
// messages of k it sent (sent, all delivered before this record) are
// taken: at once when they are, else when the receiver has taken them
// (exchange.release).
func (d *distX) full(k p2pKey, sent uint64) {
	x := d.x
	dst := x.ranks[k.dst]
	x.lock(&dst.mu)
	f := dst.inbox[k]
	x.unlock(&dst.mu)
	if f == nil || !f.rset || dst.done.Load() {
		// Every message was taken (the queue was idle and swept), or
		// the receiver ended: none will be.
		d.creditN(k, sent)
		return
	}
	if f.pending() < x.lim.pending/2 {
		d.credit(f)
		return
	}
	f.full.Store(true)
}

// drd reads a message; the first error sticks and reads give zero after.
type drd struct {
	b   []byte
	err error
}

func (r *drd) v() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *drd) uv() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *drd) byte1() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errors.New("message ends early")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *drd) str() string {
	n := r.uv()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errors.New("string past the end")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// p2pKey reads a key (keyed), its ranks checked against the
// run's size.
func (r *drd) p2pKey(size int) p2pKey {
	k := p2pKey{src: r.rank(size), dst: r.rank(size)}
	k.comm, k.tag = r.uv(), int32(r.v())
	return k
}

// rank reads a world rank, checked against the run's size.
func (r *drd) rank(size int) int32 {
	v := r.v()
	if r.err == nil && (v < 0 || v >= int64(size)) {
		r.err = fmt.Errorf("rank %d out of range", v)
		return 0
	}
	return int32(v)
}
