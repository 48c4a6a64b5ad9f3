package traceformat

import (
	"slices"
	"sync"
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
	mu sync.Mutex
	m  map[memberKey][]uint32
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
