package traceformat

import (
	"slices"
	"sync"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// MemberTable lets the readers of a run's traces share the member lists
// of their communicators: every rank's trace defines MPI_COMM_WORLD with
// the whole world as members, so that readers holding their own copies
// would hold memory growing with the square of the ranks (4 GB of world
// members alone at 32 768 ranks). Readers given the same table
// (ReaderOptions.Members) keep one copy of each list that several traces
// define identically for the same communicator id. Safe for concurrent
// use.
type MemberTable struct {
	mu     sync.Mutex
	m      map[memberKey][]uint32
	ranges map[int][]uint32 // firstRanks' lists by length
}

type memberKey struct {
	id     uint64
	remote bool
	n      int
}

// minShared is the shortest member list worth sharing.
const minShared = 64

// share returns the table's list equal to members for communicator id
// (remote: its remote group), adding members if there is none; members
// itself when the table holds a different list for id.
func (t *MemberTable) share(id uint64, remote bool, members []uint32) []uint32 {
	if t == nil || len(members) < minShared {
		return members
	}
	k := memberKey{id, remote, len(members)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[memberKey][]uint32{}
	}
	old, ok := t.m[k]
	if !ok {
		t.m[k] = members
		return members
	}
	if slices.Equal(old, members) {
		return old
	}
	return members
}

// firstRanks returns the list 0, 1, …, n−1: the members of a communicator
// given as a range (Communicator.members_range). Readers given the same
// table share one list per length, so that every rank's MPI_COMM_WORLD
// costs one list for the run.
func (t *MemberTable) firstRanks(n int) []uint32 {
	if t == nil || n < minShared {
		return identity(n)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ranges == nil {
		t.ranges = map[int][]uint32{}
	}
	l, ok := t.ranges[n]
	if !ok {
		l = identity(n)
		t.ranges[n] = l
	}
	return l
}

func identity(n int) []uint32 {
	l := make([]uint32, n)
	for i := range l {
		l[i] = uint32(i)
	}
	return l
}

// isRange tells whether members is 0, 1, …, len(members)−1.
func isRange(members []uint32) bool {
	for i, m := range members {
		if m != uint32(i) {
			return false
		}
	}
	return true
}

// sameComm compares two definitions of one communicator index, member
// lists by content (one of them may be a shared list).
func sameComm(a, b *tracepb.Communicator) bool {
	return a.Local == b.Local && a.Id == b.Id && a.Inter == b.Inter && a.Parent == b.Parent &&
		a.CreatedBy == b.CreatedBy && a.MembersRange == b.MembersRange &&
		slices.Equal(a.Members, b.Members) && slices.Equal(a.RemoteMembers, b.RemoteMembers)
}
