package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/dtpa/dtpa/analyzer"
)

// Progress is shown only on a terminal and only for analyses that last:
// a pipe or a file (tests, scripts) gets no progress lines at all.
const (
	progressDelay = 2 * time.Second        // no progress for shorter analyses
	progressEvery = 500 * time.Millisecond // refresh interval
)

// isTerminal tells whether w is a terminal (a character device; /dev/null
// is one too, where the lines are harmless).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// showProgress prints p on w every progressEvery after progressDelay, one
// line rewritten in place, until the returned function is called (which
// clears the line).
func showProgress(w io.Writer, p *analyzer.Progress) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		select {
		case <-done:
			return
		case <-time.After(progressDelay):
		}
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			n, total := p.Events()
			fmt.Fprintf(w, "\r%s\033[K", progressLine(n, total, time.Since(start)))
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// progressLine is one progress report: events replayed of the total,
// their rate, and the time left at that rate when the total is known.
func progressLine(done, total int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	if total <= 0 {
		return fmt.Sprintf("dtpa: %s events, %s events/s", si(float64(done)), si(rate))
	}
	line := fmt.Sprintf("dtpa: %s of %s events (%.0f%%), %s events/s", si(float64(done)), si(float64(total)),
		100*float64(min(done, total))/float64(total), si(rate))
	if rate > 0 && done < total {
		left := time.Duration(float64(total-done) / rate * float64(time.Second))
		line += ", " + left.Round(time.Second).String() + " left"
	}
	return line
}

// si writes a count with an SI prefix: 950, 12.3k, 4.56M, 7.89G.
func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
