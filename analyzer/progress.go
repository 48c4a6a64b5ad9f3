package analyzer

import "sync/atomic"

// Progress tells how far an analysis is, for a progress display (dtpa on
// a terminal): the events replayed so far out of the events the trace
// footers announce. Set Options.Progress to one and read Events from any
// goroutine while Analyze runs.
type Progress struct {
	done, total atomic.Int64
}

// Events returns the events replayed so far and the total the traces
// announce; total is 0 until the traces are scanned, and stays 0 when a
// trace has no footer (cut short) so that the total is not known.
func (p *Progress) Events() (done, total int64) {
	return p.done.Load(), p.total.Load()
}

// read counts n events replayed; p may be nil.
func (p *Progress) read(n int) {
	if p != nil {
		p.done.Add(int64(n))
	}
}

// announce sets the total from the traces' footers, if every trace has
// one; p may be nil.
func (p *Progress) announce(files []*rankFile) {
	if p == nil {
		return
	}
	var total int64
	for _, f := range files {
		if f == nil {
			continue
		}
		if f.footer == nil {
			return
		}
		total += int64(f.footer.EventCount)
	}
	p.total.Store(total)
}
