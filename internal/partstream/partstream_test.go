package partstream

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/dtpa/dtpa/internal/memnet"
)

// TestParts: process 0 receives each process's parts in the order it
// asks for them, every chunk in order, with their trailers, while the
// processes never have more than Window chunks asked for; a part that
// fails ends its Receive with the error, and Stop ends the others.
func TestParts(t *testing.T) {
	const n = 4
	net := memnet.New(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := 1; p < n; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := NewSender(net.Transport(p))
			for part := 0; part < 2; part++ {
				if p == 3 && part == 1 {
					errs[p] = s.Fail(errors.New("process 3 cannot"))
					return
				}
				for c := 0; c < 10; c++ {
					if s.credits > Window {
						errs[p] = fmt.Errorf("%d chunks asked for at once", s.credits)
						return
					}
					if _, err := fmt.Fprintf(s, "%d.%d.%d;", p, part, c); err != nil {
						errs[p] = err
						return
					}
				}
				if err := s.End([]byte(fmt.Sprint("end ", p, part))); err != nil {
					errs[p] = err
					return
				}
			}
		}()
	}
	rcv := NewReceiver(net.Transport(0))
	for part := 0; part < 2; part++ {
		for p := 1; p < n; p++ {
			var got bytes.Buffer
			trailer, err := rcv.Receive(p, func(b []byte) error { got.Write(b); return nil })
			if p == 3 && part == 1 {
				if err == nil || err.Error() != "process 3 cannot" {
					t.Errorf("the failed part: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("process %d part %d: %v", p, part, err)
			}
			var want bytes.Buffer
			for c := 0; c < 10; c++ {
				fmt.Fprintf(&want, "%d.%d.%d;", p, part, c)
			}
			if got.String() != want.String() || string(trailer) != fmt.Sprint("end ", p, part) {
				t.Errorf("process %d part %d: %q, trailer %q", p, part, got.String(), trailer)
			}
		}
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", p, err)
		}
	}

	// Stop: a sender waiting to be asked returns ErrStopped.
	net = memnet.New(2)
	done := make(chan error)
	go func() {
		s := NewSender(net.Transport(1))
		_, err := s.Write([]byte("x"))
		done <- err
	}()
	NewReceiver(net.Transport(0)).Stop()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Errorf("after Stop: %v", err)
	}
}
