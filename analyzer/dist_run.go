package analyzer

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/dtpa/dtpa/internal/partstream"
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
	if opts.Flow != nil {
		opts.Flow.MaxHeld, opts.Flow.Waits = int64(d.maxQueued), d.flowWaits
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
// as they are; the others are DistErrors, but for those of writing the
// Chrome export, which process 0 returns once it told the others to stop.
//
// A timeline (opts.Timeline) is recorded by each process for its ranks
// and finished by process 0 (dist_obs.go), whose Timeline is Analyze's.
// A Chrome export (opts.Chrome) is written by process 0 to its W (the
// others' is not used: io.Discard), each process writing its ranks'
// events; the bytes are Analyze's.
func AnalyzeDist(ctx context.Context, opts Options, tr Transport) (rep *report.Report, err error) {
	if opts.Timeline != nil && opts.Timeline.Sink != nil {
		return nil, errors.New("a timeline sink needs the analysis in one process")
	}
	defer func() {
		if p := recover(); p != nil {
			rep, err = nil, &DistError{fmt.Errorf("internal error: analysing %s: %v", opts.App, p)}
		}
	}()
	warns, warn := warnings(opts)
	opts.copies = &copies{}
	defer opts.copies.release()
	if tr.Size() > 1 {
		// Process 0 alone compacts the traces left deferred, and warns of
		// them as Analyze does; the others wait for it.
		if tr.Rank() == 0 {
			for _, n := range compactAllLeft(opts.Dir, opts.App, runtime.GOMAXPROCS(0)) {
				warn(n)
			}
		}
		if tr, err = agree(tr, nil); err != nil {
			return nil, err
		}
	}
	sc, err := scanRun(ctx, opts, warn)
	if err != nil {
		return nil, err
	}
	if opts.Chrome != nil {
		// Opening the output or the spool may fail in some processes
		// only: they agree before the replay.
		tr, err = agree(tr, opts.Chrome.start(sc.size))
		if err != nil {
			return nil, err
		}
		defer opts.Chrome.cleanup()
	}
	x, _, reps, err := replayPart(ctx, opts, sc, tr)
	if err != nil {
		return nil, &DistError{err}
	}
	settle(reps, x)
	res := collectResult(reps, x)
	observe := opts.Timeline != nil || opts.Chrome != nil
	var ownST map[int]map[int64]uint32
	if opts.Chrome != nil {
		if err := opts.Chrome.flushSpool(); err != nil {
			return nil, &DistError{err}
		}
		if ownST, err = opts.Chrome.ownSendThreads(); err != nil {
			return nil, &DistError{err}
		}
	}
	own := ownRanks(sc.size, tr.Size(), tr.Rank())
	if tr.Rank() != 0 {
		b, err := res.marshal()
		if err == nil {
			err = tr.Send(0, append([]byte{dmResult}, b...))
		}
		if err == nil && observe {
			err = tr.Send(0, append([]byte{dmObs}, marshalObs(opts, ownST)...))
		}
		// The timeline's recordings, then the export's parts, go to
		// process 0 in chunks when it asks for them.
		var snd *partstream.Sender
		if err == nil && (opts.Timeline != nil || opts.Chrome != nil) {
			snd = partstream.NewSender(tr)
		}
		if err == nil && opts.Timeline != nil {
			err = sendTimeline(opts.Timeline, snd)
		}
		if err == nil && opts.Chrome != nil {
			err = sendChromeParts(opts.Chrome, snd, sc.size, own, reps)
		}
		if err != nil {
			return nil, &DistError{err}
		}
		return nil, nil
	}
	var rcv *partstream.Receiver
	if opts.Timeline != nil || opts.Chrome != nil {
		// The others wait for process 0 to ask for their timeline or
		// for the export's layout: on an error, they are told to stop.
		rcv = partstream.NewReceiver(tr)
		defer func() {
			if err != nil {
				rcv.Stop()
			}
		}()
	}
	parts := make([]*replayResult, tr.Size())
	parts[0] = res
	var sums []chromeRankSum
	if opts.Chrome != nil {
		sums = opts.Chrome.sums()
	}
	sendThreads := ownST
	obsGot := make([]bool, tr.Size())
	for got := 1; got < tr.Size(); {
		from, msg, err := tr.Recv(true)
		if err != nil {
			return nil, &DistError{err}
		}
		if len(msg) == 0 || from <= 0 || from >= len(parts) {
			continue
		}
		switch {
		case msg[0] == dmResult && parts[from] == nil:
			if parts[from], err = unmarshalResult(append([]byte(nil), msg[1:]...)); err != nil {
				return nil, &DistError{fmt.Errorf("the results of analysis process %d: %v", from, err)}
			}
		case msg[0] == dmObs && observe && !obsGot[from]:
			obsGot[from] = true
			if err := addObs(msg[1:], opts, sc.size, sums, sendThreads); err != nil {
				return nil, &DistError{fmt.Errorf("the recordings of analysis process %d: %v", from, err)}
			}
		default:
			continue
		}
		if parts[from] != nil && (obsGot[from] || !observe) {
			got++
		}
	}
	if t := opts.Timeline; t != nil {
		t.spool.budget = timelineBudget(t, sc.size)
		for p := 1; p < tr.Size(); p++ {
			if err := t.spool.receive(rcv, p, t.TempDir); err != nil {
				return nil, &DistError{err}
			}
		}
	}
	merged, err := mergeResults(sc.size, parts...)
	if err != nil {
		return nil, &DistError{err}
	}
	var fin obsFinish
	var outErr error
	if observe {
		fin = func(rep *report.Report, siteID map[string]int, tb *siteTable, hosts []string, ends map[int]string) error {
			if opts.Timeline != nil {
				err := opts.Timeline.finish(srcIDsOf(tb, siteID, func(r int) *siteKeyer {
					if merged.ranks[r] == nil || merged.ranks[r].defs == nil {
						return nil
					}
					return merged.ranks[r].siteKeyer()
				}), hosts, ends)
				if err != nil {
					return err
				}
			}
			if opts.Chrome != nil {
				outErr = writeChromeDist(opts.Chrome, tr, rcv, sums, sendThreads, own, reps, siteID, rep, hosts, ends)
				return outErr
			}
			return nil
		}
	}
	rep, _, err = finishReport(merged, fin, sc.byRank, sc.model, opts, *warns, opts.Warn)
	if outErr != nil {
		return nil, outErr
	}
	if err != nil {
		return nil, &DistError{err}
	}
	return rep, nil
}

// timelineBudget is the most calls a rank of a run of size ranks keeps
// in detail in t (TimelineRecorder.rank), which another process's part
// may not exceed.
func timelineBudget(t *TimelineRecorder, size int) int {
	max := t.MaxCalls
	if max <= 0 {
		max = DefaultTimelineCalls
	}
	return (max / size) + 1
}

// addObs adds the observer part b of another process to this one's
// (process 0's): its export summaries to sums and sendThreads.
func addObs(b []byte, opts Options, size int, sums []chromeRankSum, sendThreads map[int]map[int64]uint32) error {
	p, err := unmarshalObs(b, size)
	if err != nil {
		return err
	}
	if opts.Chrome == nil && len(p.sums) > 0 {
		return errors.New("an export that was not asked for")
	}
	for r, s := range p.sums {
		if sums[r].present {
			return fmt.Errorf("rank %d exported twice", r)
		}
		sums[r] = s
	}
	for r, st := range p.sendThreads {
		sendThreads[r] = st
	}
	return nil
}
