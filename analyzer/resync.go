package analyzer

import "github.com/dtpa/dtpa/traceformat/tracepb"

// Resynchronizing collectives. Every member calls the collectives of a
// communicator in the same order, so instances are keyed by their
// sequence number on the communicator (collKey). A member whose trace
// lacks a call (the tracer dropped it, or a record was lost) would number
// each later call one less than the others and meet them in the wrong
// instances, every one of which disagrees on the function, cascading into
// thousands of unmatched calls and stalls. When a call disagrees with the
// instance it meets on the function or the root, the exchange decides by
// time which side lacks a call: of two calls that disagree, the one
// entered later is ahead (at equal entries, the call of the higher
// rank), since a member that lost call k enters its call k+1 after it
// left call k, which it left after the others entered call k
// (every member of a synchronizing collective enters before any leaves).
// The members in the instance are ahead when each of their calls is
// ahead of the arriving one: their instance moves one further, and so do
// the instances after it that hold their later calls (a member whose call
// waits for nobody, as the root of an MPI_Bcast or a nonblocking start,
// goes on to its next calls before the others come; when a later one
// also holds another member's call, the calls disagree in two places and
// the arriving call is taken as ahead); otherwise the arriving call is
// ahead and leaves the instance for the next one. Two
// calls, or one member's call against calls of the others that all
// entered before (or all after) it, are thus decided the same whichever
// replay got there first, and the instances end up the same: the
// arriving call, or the calls of the members in the instance, go one
// instance further with all that follows them. The member that lacks the
// call is then missing from one instance only: that instance is counted
// unmatched (its other members' calls, one warning), the rest match. A
// member's later calls go as many instances further than its replay
// numbers them as it skipped (rankSync.shifts, added where each call is
// posted, under x.mu): in a distributed replay (dist.go) every process
// counts the skips of every member, its own or not, by the same
// decisions, so that the numbers a member's replay gives its calls,
// which travel with them, are placed alike everywhere.

// maxResync is how many instances an arriving call may skip.
const maxResync = 4

// misfit tells whether participant idx's call (fn, root, members) meets
// instance in, which it should be part of, with another function or root.
func misfit(in *collInst, fn string, root int32, members []int32, idx int) bool {
	return !in.mismatch && (!sameFn(in.fn, fn) || in.root != root) && len(in.members) == len(members) &&
		idx < len(in.members) && !in.slots[idx].hasEntry && !in.slots[idx].gone
}

// resyncLocked finds the instance the call of participant idx (world
// rank me) of k should join, when the instance it meets disagrees with
// it (misfit): in, at key k, is nil when a new one is to be made. left
// lists the participants of the returned key that will never enter it
// (moved one further: the caller marks them gone once the instance
// exists); wake the members to wake. entry is the call's entry. x.mu is
// held.
func (x *exchange) resyncLocked(k *collKey, in *collInst, fn string, root int32, members []int32, idx int, me int32, entry int64) (_ *collInst, left []int, wake []int32) {
	ck := commKey{k.comm, k.group}
	for try := 0; in != nil && misfit(in, fn, root, members, idx) && try < maxResync; try++ {
		next := *k
		next.seq++
		if enteredAfter(in, entry, me) {
			if chain := x.aheadChain(in); chain != nil {
				// The members there are ahead: their instance is the
				// next, and their later calls one further too.
				for i := len(chain) - 1; i >= 0; i-- {
					c := chain[i]
					x.colls.del(c)
					c.key.seq++
					x.colls.put(c)
				}
				for i := range in.slots {
					if in.slots[i].hasEntry {
						x.shiftLocked(in.members[i], ck)
						left = append(left, i)
					}
				}
				return nil, left, wake
			}
		}
		// This call is ahead: it leaves this instance for the next.
		wake = x.leaveLocked(in, idx, wake)
		x.shiftLocked(me, ck)
		*k = next
		in = x.colls.get(next)
	}
	return in, nil, wake
}

// aheadChain lists in and the instances that follow it on its
// communicator without a gap (keys in.key.seq+1, +2, …), when every entry
// in those is of a member that entered in: the calls that move one
// further when in's members are ahead of an arriving call (nil when some
// later instance holds another member's call, which then is not ahead:
// the members' calls disagree in more than one place). x.mu is held.
func (x *exchange) aheadChain(in *collInst) []*collInst {
	chain := []*collInst{in}
	k := in.key
	for {
		k.seq++
		c := x.colls.get(k)
		if c == nil {
			return chain
		}
		if len(c.members) != len(in.members) {
			return nil
		}
		for i := range c.slots {
			if c.slots[i].hasEntry && (c.members[i] != in.members[i] || !in.slots[i].hasEntry) {
				return nil
			}
		}
		chain = append(chain, c)
	}
}

// enteredAfter tells whether some participant entered in and every one
// that did entered after world rank me's call entered at t (at t, when
// its rank is higher).
func enteredAfter(in *collInst, t int64, me int32) bool {
	for i := range in.slots {
		if sl := &in.slots[i]; sl.hasEntry && (sl.entry < t || sl.entry == t && in.members[i] < me) {
			return false
		}
	}
	return in.nEntry > 0
}

// leaveLocked marks participant idx of in as never coming; the members
// waiting for it are appended to wake. x.mu is held.
func (x *exchange) leaveLocked(in *collInst, idx int, wake []int32) []int32 {
	sl := &in.slots[idx]
	if sl.gone || sl.hasEntry {
		return wake
	}
	sl.gone = true
	in.entryGone++
	in.exitGone++
	if in.nEntry+in.entryGone == len(in.members) {
		in.allIn.Store(true)
	}
	// Its waiters may be ready now; those that are not wait on, and
	// must stay listed to be woken by the entries they wait for
	// (collWaitLocked lists a waiter once). Once every entry is in, none
	// waits again (as in postEntryLocked).
	wake = append(wake, in.waiters...)
	if in.allIn.Load() {
		in.waiters = in.waiters[:0]
	}
	x.maybeComplete(in)
	return wake
}

// shiftLocked notes that world rank r skips one instance of communicator
// ck: its later calls there go one instance further. x.mu is held.
func (x *exchange) shiftLocked(r int32, ck commKey) {
	rs := x.ranks[r]
	if rs.shifts == nil {
		rs.shifts = map[commKey]uint64{}
	}
	rs.shifts[ck]++
}

// newCollLocked creates instance k, with the members whose replay has
// ended counted gone. x.mu is held.
func (x *exchange) newCollLocked(k collKey, fn string, shape tracepb.Function_Collective, root int32, members []int32) *collInst {
	x.addPending(commKey{k.comm, k.group}, 1)
	in := x.newCollInst(k, fn, shape, root, members)
	x.colls.put(in)
	for i, m := range members {
		if x.ranks[m].done.Load() {
			if !in.slots[i].hasEntry {
				in.entryGone++
			}
			if !in.slots[i].hasExit {
				in.exitGone++
			}
		}
	}
	return in
}
