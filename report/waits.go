package report

// Wait is one aggregate of waits in an interval (docs/characteristics.md
// §9): the time processor WaitingRank lost at call site WaitingSRC to a
// partner, LateRank, whose call at LateSRC came late, summed over Count
// instances of that wait (each > 0).
type Wait struct {
	// Kind is one of the WaitKinds.
	Kind        string  `json:"kind"`
	WaitingRank int     `json:"waiting_rank"`
	LateRank    int     `json:"late_rank"`
	Seconds     float64 `json:"seconds"`
	Count       int64   `json:"count"`
	// WaitingSRC and LateSRC are SRC ids (the ids of Interval.SRC, the
	// same over the run); the late partner's call may lie outside the
	// interval (it is then listed in the level-0 interval's SRC).
	WaitingSRC int `json:"waiting_src"`
	LateSRC    int `json:"late_src"`
}

// The point-to-point kinds: they add up to each processor's RealSync.
const (
	LateSender   = "late_sender"
	LateReceiver = "late_receiver"
	WrongOrder   = "wrong_order"
)

// IsP2PWait tells whether a wait kind explains Real Sync (else it is a
// collective kind and explains Potential Sync).
func IsP2PWait(kind string) bool {
	return kind == LateSender || kind == LateReceiver || kind == WrongOrder
}

// checkWaits verifies that an interval's waits explain its Real Sync and
// Potential Sync: per processor, the point-to-point kinds add up to its
// RealSync (the late-receiver kind to its LateReceiver) and the collective
// kinds to its PotentialSync; and that each cause's delay lies within its
// waits. A report without a waits list (nil, from an
// older analyzer) is not checked.
func checkWaits(iv *Interval, fail func(*Interval, string, ...any)) {
	for _, c := range iv.Causes {
		if c.Count <= 0 || c.Waits <= 0 || c.Delay < 0 || (c.Delay > c.Waits && differ(c.Delay, c.Waits)) ||
			c.LateComputation < 0 || c.WaitingComputation < 0 {
			fail(iv, "cause of rank %d (SRC %d … %d): %d waits of %v s, delay %v s, computations %v and %v s",
				c.LateRank, c.FromSRC, c.ToSRC, c.Count, c.Waits, c.Delay, c.LateComputation, c.WaitingComputation)
		}
	}
	if iv.Waits == nil {
		return
	}
	type sums struct{ rs, late, pot float64 }
	by := map[int]*sums{}
	for _, w := range iv.Waits {
		s := by[w.WaitingRank]
		if s == nil {
			s = &sums{}
			by[w.WaitingRank] = s
		}
		if w.Seconds <= 0 || w.Count <= 0 {
			fail(iv, "wait %s of rank %d: %v s in %d instances", w.Kind, w.WaitingRank, w.Seconds, w.Count)
		}
		switch {
		case w.Kind == LateReceiver:
			s.late += w.Seconds
			s.rs += w.Seconds
		case IsP2PWait(w.Kind):
			s.rs += w.Seconds
		default:
			s.pot += w.Seconds
		}
	}
	for _, rk := range iv.Ranks {
		s := by[rk.Rank]
		if s == nil {
			s = &sums{}
		}
		delete(by, rk.Rank)
		if differ(s.rs, rk.RealSync) {
			fail(iv, "rank %d: point-to-point waits add up to %v s, Real Sync is %v s", rk.Rank, s.rs, rk.RealSync)
		}
		if differ(s.late, rk.LateReceiver) {
			fail(iv, "rank %d: late-receiver waits add up to %v s, Late Receiver is %v s", rk.Rank, s.late, rk.LateReceiver)
		}
		if differ(s.pot, rk.PotentialSync) {
			fail(iv, "rank %d: collective waits add up to %v s, Potential Sync is %v s", rk.Rank, s.pot, rk.PotentialSync)
		}
	}
	for r := range by {
		fail(iv, "waits of rank %d, which does not execute the interval", r)
	}
}

// Cause is the computation of a late partner that made others wait, in an
// interval (docs/characteristics.md §9, "Causes"): rank LateRank's code
// between its call at FromSRC (the last call before its late call that
// could wait for another rank; 0 when the span began at the program's
// start) and its late call at ToSRC, over Count waits it caused.
type Cause struct {
	LateRank int   `json:"late_rank"`
	FromSRC  int   `json:"from_src"`
	ToSRC    int   `json:"to_src"`
	Count    int64 `json:"count"`
	// Waits is the time the waits lasted; Delay the part of it that the
	// late partner's longer computation explains: per wait, its
	// computation in the span minus the waiting rank's in its own span
	// before the waiting call, within 0 … the wait.
	Waits float64 `json:"waits"`
	Delay float64 `json:"delay"`
	// LateComputation and WaitingComputation are those computations
	// summed over the waits (divide by Count for one wait's).
	LateComputation    float64 `json:"late_computation"`
	WaitingComputation float64 `json:"waiting_computation"`
}
