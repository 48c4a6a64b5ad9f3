// Package memnet connects the processes of a distributed analysis inside
// one program, for tests: each process is a goroutine with a Transport
// (analyzer.Transport) whose messages go, in order, to a mailbox per
// process.
package memnet

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Net is the mailboxes of n processes.
type Net struct {
	boxes []*box
}

type box struct {
	mu   sync.Mutex
	cond sync.Cond
	q    []msg
	n    atomic.Int64 // len(q), read without the lock
}

type msg struct {
	from int
	b    []byte
}

// New connects n processes.
func New(n int) *Net {
	net := &Net{}
	for range n {
		b := &box{}
		b.cond.L = &b.mu
		net.boxes = append(net.boxes, b)
	}
	return net
}

// Transport is process me's end.
func (net *Net) Transport(me int) *Transport { return &Transport{net, me} }

// Transport is one process's end of a Net.
type Transport struct {
	net *Net
	me  int
}

// Rank is the process's number.
func (t *Transport) Rank() int { return t.me }

// Size is the number of processes.
func (t *Transport) Size() int { return len(t.net.boxes) }

// Send queues a copy of m for process to.
func (t *Transport) Send(to int, m []byte) error {
	if to < 0 || to >= len(t.net.boxes) {
		return fmt.Errorf("no process %d", to)
	}
	b := t.net.boxes[to]
	b.mu.Lock()
	b.q = append(b.q, msg{t.me, append([]byte(nil), m...)})
	b.n.Add(1)
	b.cond.Signal()
	b.mu.Unlock()
	return nil
}

// spinFor is how long Recv with wait looks for a message before it
// sleeps on the mailbox's condition variable, as dtpa-mpi's transport
// polls before it yields the core (internal/mpi, dt_probe): a replay of a
// halo exchange waits for the other process once per step, mostly for
// microseconds, and a goroutine's wake-up from a condition variable would
// make each of those waits cost tens of them, which is not what the MPI
// transport's processes pay.
const spinFor = 50 * time.Microsecond

// Recv returns the next message, or nil when there is none and !wait.
func (t *Transport) Recv(wait bool) (int, []byte, error) {
	b := t.net.boxes[t.me]
	if wait {
		for start := time.Now(); b.n.Load() == 0 && time.Since(start) < spinFor; {
			runtime.Gosched()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.q) == 0 {
		if !wait {
			return 0, nil, nil
		}
		b.cond.Wait()
	}
	b.n.Add(-1)
	m := b.q[0]
	b.q = b.q[1:]
	return m.from, m.b, nil
}
