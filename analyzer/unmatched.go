package analyzer

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxCollWarnings bounds the unmatched collective instances described one
// by one; the others are counted.
const maxCollWarnings = 10

// unmatchedColls describes the collective instances that completed
// without every member of their communicator: the first maxCollWarnings
// by call number (collWarning.before) one by one, the rest counted. Which
// instances are described, and in which order, so do not depend on the
// order they completed in, nor on which process of a distributed replay
// noted them (mergeResults keeps the first of every process's). Guarded
// by exchange.mu.
type unmatchedColls struct {
	described []collWarning
	more      int
}

// collWarning describes one instance (text) named by its key.
type collWarning struct {
	key  collKey
	text string
}

// before orders instances by call number on their communicator, then
// by communicator.
func (a collWarning) before(b collWarning) int {
	return cmp.Or(cmp.Compare(a.key.seq, b.key.seq), cmp.Compare(a.key.comm, b.key.comm),
		cmp.Compare(a.key.group, b.key.group), cmp.Compare(a.key.split, b.key.split))
}

// add keeps w if it is among the first maxCollWarnings described, and
// counts the one it displaces, or itself, in more.
func (u *unmatchedColls) add(w collWarning) {
	if len(u.described) < maxCollWarnings {
		u.described = append(u.described, w)
		return
	}
	u.more++
	if last := u.last(); w.before(u.described[last]) < 0 {
		u.described[last] = w
	}
}

// keeps tells whether an instance of key k would be described (add).
func (u *unmatchedColls) keeps(k collKey) bool {
	return len(u.described) < maxCollWarnings || (collWarning{key: k}).before(u.described[u.last()]) < 0
}

// last is the index of the last described instance in call order.
func (u *unmatchedColls) last() int {
	last := 0
	for i := range u.described {
		if u.described[i].before(u.described[last]) > 0 {
			last = i
		}
	}
	return last
}

// note records instance in, which is complete (every member left it or is
// gone) but lacks some members' calls. x.mu is held.
//
// Its Potential Sync and Time Variation are counted over the members
// present (exchange.maybeComplete): the latest entry and exit among them
// are at most the true ones, so each present member's figures are lower
// bounds of what it really lost, never more; leaving them out would lose
// real waits among the members that were traced.
func (u *unmatchedColls) note(in *collInst, size int) {
	if !u.keeps(in.key) {
		u.more++
		return
	}
	var missing []int32
	gone := false
	for i, m := range in.members {
		if !in.slots[i].hasExit {
			missing = append(missing, m)
		}
		gone = gone || in.slots[i].gone
	}
	why := "their traces end before it, or they never made the call"
	switch {
	case gone:
		// resync.go: their calls matched the next instances.
		why = "the members' calls disagree on the function or the root here: their traces lack this call, their later calls matched the next instances"
	case in.mismatch:
		why = "the members' calls disagree on the function, the root or the communicator's members"
	}
	name := commName(in.key.comm, in.members, size)
	if len(missing) == 0 {
		// Every member's call is in: the call that disagreed came from
		// a rank whose trace defines the communicator with other members
		// in another order (a count of members of its own makes an
		// instance of its own: collKey.n), or a rank entered twice
		// (collEnterLocked). It is counted unmatched, as are the members'
		// calls that came after it (collJoin, collStep).
		u.add(collWarning{key: in.key, text: fmt.Sprintf(
			"Collective %s (call %d on %s) was also met by a call that disagrees on the function, the root or the communicator's members (the traces define this communicator differently); its Potential Sync and Time Variation are counted over its members' calls.",
			in.fn, in.key.seq+1, name)})
		return
	}
	u.add(collWarning{key: in.key, text: fmt.Sprintf(
		"Collective %s (call %d on %s) lacks rank(s) %s (%s); its Potential Sync and Time Variation are counted over the ranks present, a lower bound.",
		in.fn, in.key.seq+1, name, rankList(missing), why)})
}

// warnings are the descriptions in call order, with a count of those left
// out.
func (u *unmatchedColls) warnings() []string {
	ws := slices.Clone(u.described)
	slices.SortFunc(ws, collWarning.before)
	var out []string
	for _, w := range ws {
		out = append(out, w.text)
	}
	if u.more > 0 {
		out = append(out, fmt.Sprintf("%d more collective instance(s) lack some of their communicator's ranks.", u.more))
	}
	return out
}

// commName names a communicator in a warning: MPI_COMM_WORLD when it holds
// every rank in order, else its id and world ranks.
func commName(id uint64, members []int32, size int) string {
	world := len(members) == size
	for i, m := range members {
		world = world && int(m) == i
	}
	if world {
		return "MPI_COMM_WORLD"
	}
	return fmt.Sprintf("communicator %#x of world rank(s) %s", id, rankList(members))
}

// rankList prints ranks compactly: "0, 2-5, 7" (runs of consecutive ranks
// as ranges, in the given order).
func rankList(rs []int32) string {
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(int(rs[i])))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
