package analyzer

import "testing"

// TestInboxRecent: queueLocked answers from the inbox's last entries
// what the inbox map holds, for keys that share an entry too, and a sweep
// leaves none of the queues it dropped there.
func TestInboxRecent(t *testing.T) {
	x := newExchange(4, []bool{true, true, true, true}, defaultLimits())
	rs := x.ranks[0]
	var keys []p2pKey
	for src := range int32(4) {
		for tag := range int32(16) {
			keys = append(keys, p2pKey{comm: 1, src: src, dst: 0, tag: tag})
		}
	}
	for round := range 3 {
		for i, k := range keys {
			f := rs.queueLocked(k, true, false)
			if f == nil || rs.inbox[k] != f {
				t.Fatalf("round %d, key %d %+v: queue %p, inbox holds %p", round, i, k, f, rs.inbox[k])
			}
			if g := rs.queueLocked(k, true, false); g != f {
				t.Fatalf("key %+v: queue %p then %p", k, f, g)
			}
		}
		if len(rs.inbox) != len(keys) {
			t.Fatalf("round %d: inbox of %d queues, want %d", round, len(rs.inbox), len(keys))
		}
		// Every queue is idle: the sweep drops them all, and the keys get
		// new queues, in the inbox, next round.
		x.sweep(rs)
		if len(rs.inbox) != 0 {
			t.Fatalf("round %d: %d queues left after the sweep", round, len(rs.inbox))
		}
		for _, e := range rs.recent {
			if e.f != nil {
				t.Fatalf("round %d: a swept queue of %+v left in the last entries", round, e.k)
			}
		}
	}
}
