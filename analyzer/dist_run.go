package analyzer

import (
	"context"
	"errors"
	"fmt"

	"github.com/dtpa/dtpa/report"
)

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

// DistError is an error of a distributed analysis that the other
// processes may not share (met during or after the replay, which they
// run together): they cannot go on without this one, so the job must
// end.
type DistError struct{ Err error }

func (e *DistError) Error() string { return e.Err.Error() }
func (e *DistError) Unwrap() error { return e.Err }

// AnalyzeDist is Analyze as one process of an analysis that is an MPI job
// (dtpa-mpi; tr connects its processes): each process replays a block of
// the ranks, and process 0 gathers what they accumulated and returns the
// report, equal to Analyze's; the others return nil. Every process must
// call it with the same options. Errors met before the replay (no traces,
// traces of different runs) are the same in every process and returned
// as they are; the others are DistErrors. The timeline and the Chrome
// export need every rank's calls in one process and are refused.
func AnalyzeDist(ctx context.Context, opts Options, tr Transport) (rep *report.Report, err error) {
	if opts.Timeline != nil || opts.Chrome != nil {
		return nil, errors.New("the timeline and the exports need the analysis in one process")
	}
	defer func() {
		if p := recover(); p != nil {
			rep, err = nil, &DistError{fmt.Errorf("internal error: analysing %s: %v", opts.App, p)}
		}
	}()
	warns, warn := warnings(opts)
	sc, err := scanRun(ctx, opts, warn)
	if err != nil {
		return nil, err
	}
	x, _, reps, err := replayPart(ctx, opts, sc, tr)
	if err != nil {
		return nil, &DistError{err}
	}
	settle(reps, x)
	res := collectResult(reps, x)
	if tr.Rank() != 0 {
		b, err := res.marshal()
		if err == nil {
			err = tr.Send(0, append([]byte{dmResult}, b...))
		}
		if err != nil {
			return nil, &DistError{err}
		}
		return nil, nil
	}
	parts := make([]*replayResult, tr.Size())
	parts[0] = res
	for got := 1; got < tr.Size(); {
		from, msg, err := tr.Recv(true)
		if err != nil {
			return nil, &DistError{err}
		}
		if len(msg) == 0 || msg[0] != dmResult || from <= 0 || from >= len(parts) || parts[from] != nil {
			continue
		}
		if parts[from], err = unmarshalResult(append([]byte(nil), msg[1:]...)); err != nil {
			return nil, &DistError{fmt.Errorf("the results of analysis process %d: %v", from, err)}
		}
		got++
	}
	merged, err := mergeResults(sc.size, parts...)
	if err != nil {
		return nil, &DistError{err}
	}
	rep, _, err = finishReport(merged, nil, sc.byRank, sc.model, opts, *warns, opts.Warn)
	if err != nil {
		return nil, &DistError{err}
	}
	return rep, nil
}
