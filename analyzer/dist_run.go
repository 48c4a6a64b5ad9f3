package analyzer

import "context"

// replayPart replays this process's block of the ranks of sc, exchanging
// what matching needs with the other processes through tr (dist.go); reps
// holds the local ranks only. Every process must call it with the same
// sc.
func replayPart(ctx context.Context, opts Options, sc *runScan, tr Transport) (*exchange, *sched, []*replayer, error) {
	owners := blockOwners(sc.size, tr.Size())
	me := int32(tr.Rank())
	x, s, reps := newReplay(ctx, opts, sc, func(r int) bool { return owners[r] == me })
	d := newDist(x, tr)
	d.s = s
	s.dist = d
	if err := s.run(1); err != nil {
		return nil, nil, nil, err
	}
	if d.err != nil {
		return nil, nil, nil, d.err
	}
	return x, s, reps, ctx.Err()
}
