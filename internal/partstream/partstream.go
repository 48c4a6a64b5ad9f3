// Package partstream brings to process 0 of an MPI job the parts of one
// output that the other processes produce (dtpa-mpi's Chrome export and
// OTF2 archive, docs/distributed.md), part by part in the order process 0
// asks for them, each in chunks under flow control: a process sends a
// chunk only once process 0 has asked for it, and process 0 asks for at
// most Window chunks ahead of those it has written. Memory on either side
// is therefore a few chunks, whatever the size of the parts, and no
// process sends one message the size of its part.
//
// Its messages go over the transport of the distributed analysis
// (analyzer.Transport) and are told apart by their first byte, from
// KindBase on; any other message is left to the caller (Sender.Recv) or
// ignored.
package partstream

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Transport is analyzer.Transport: byte messages between the processes,
// in order from one process to another.
type Transport interface {
	Rank() int
	Size() int
	Send(to int, msg []byte) error
	Recv(wait bool) (from int, msg []byte, err error)
}

// Kinds of messages (their first byte). The distributed replay's own
// kinds are below KindBase (analyzer/dist.go).
const (
	KindBase  = 0x70
	kindAsk   = KindBase + iota // process 0 asks for a chunk: part number
	kindChunk                   // a chunk: part number, then its bytes
	kindEnd                     // a part's end: part number, then the trailer
	kindFail                    // a part failed: part number, then the error's text
	kindStop                    // process 0 gives up: no more parts
)

// Window is how many chunks process 0 asks for ahead of those it wrote.
const Window = 2

// ErrStopped is what a Sender returns once process 0 said it wants no
// more parts (it met an error of its own).
var ErrStopped = errors.New("process 0 stopped the output")

// Sender sends this process's parts, one after the other, to process 0.
// Write sends a chunk of the current part once process 0 asked for it;
// End ends the part.
type Sender struct {
	tr      Transport
	part    uint64 // the part being sent
	credits int    // chunks of it process 0 asked for and not yet sent
	stopped bool
	msg     []byte
}

// NewSender is the sender of this process, whose first part is part 0.
func NewSender(tr Transport) *Sender { return &Sender{tr: tr} }

// Recv is tr.Recv for a process that also sends parts: it keeps the
// requests for chunks process 0 sent, and returns every other message.
// Once process 0 stopped, it returns ErrStopped.
func (s *Sender) Recv(wait bool) (int, []byte, error) {
	for {
		if s.stopped {
			return 0, nil, ErrStopped
		}
		from, msg, err := s.tr.Recv(wait)
		if err != nil || msg == nil {
			return from, msg, err
		}
		if !s.take(from, msg) {
			return from, msg, nil
		}
	}
}

// take handles msg if it is one of process 0's requests (true).
func (s *Sender) take(from int, msg []byte) bool {
	if from != 0 || len(msg) == 0 {
		return false
	}
	switch msg[0] {
	case kindAsk:
		if p, n := binary.Uvarint(msg[1:]); n > 0 && p == s.part {
			s.credits++
		}
		return true // requests for an earlier part are stale
	case kindStop:
		s.stopped = true
		return true
	}
	return false
}

// wait waits until process 0 asks for a chunk of the current part.
func (s *Sender) wait() error {
	for s.credits == 0 {
		if s.stopped {
			return ErrStopped
		}
		// Other messages are not this process's any more: the
		// replay's last ones.
		from, msg, err := s.tr.Recv(true)
		if err != nil {
			return err
		}
		s.take(from, msg)
	}
	s.credits--
	return nil
}

func (s *Sender) send(kind byte, b []byte) error {
	if err := s.wait(); err != nil {
		return err
	}
	s.msg = binary.AppendUvarint(append(s.msg[:0], kind), s.part)
	s.msg = append(s.msg, b...)
	return s.tr.Send(0, s.msg)
}

// Write sends b as a chunk of the current part (an empty b sends
// nothing), once process 0 asked for it.
func (s *Sender) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if err := s.send(kindChunk, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// End ends the current part, handing process 0 trailer with it (what
// the part's receiver needs once it has every chunk: counts); the next
// Write begins the next part.
func (s *Sender) End(trailer []byte) error {
	err := s.send(kindEnd, trailer)
	s.part++
	s.credits = 0
	return err
}

// Fail tells process 0, once it asks for the current part, that the part
// cannot be made: its Receive returns err's text.
func (s *Sender) Fail(err error) error {
	e := s.send(kindFail, []byte(err.Error()))
	s.part++
	s.credits = 0
	if errors.Is(e, ErrStopped) {
		return nil
	}
	return e
}

// Receiver is process 0's side: it receives the parts of each process in
// the order it asks for them.
type Receiver struct {
	tr   Transport
	next []uint64 // the next part of each process
	msg  []byte
}

// NewReceiver is process 0's receiver.
func NewReceiver(tr Transport) *Receiver {
	return &Receiver{tr: tr, next: make([]uint64, tr.Size())}
}

// Receive receives the next part of process from: each of its chunks,
// in order, goes to chunk (which must not keep it), and its trailer is
// returned. An error of chunk, or a part that failed, ends it with that
// error; the process's later chunks of the part are ignored, and the
// caller should Stop every process.
func (r *Receiver) Receive(from int, chunk func([]byte) error) ([]byte, error) {
	if from <= 0 || from >= len(r.next) {
		return nil, fmt.Errorf("no process %d to receive a part from", from)
	}
	part := r.next[from]
	r.next[from]++
	ask := binary.AppendUvarint(append(r.msg[:0], kindAsk), part)
	r.msg = ask
	for i := 0; i < Window; i++ {
		if err := r.tr.Send(from, ask); err != nil {
			return nil, err
		}
	}
	for {
		f, msg, err := r.tr.Recv(true)
		if err != nil {
			return nil, err
		}
		if f != from || len(msg) == 0 || msg[0] < kindChunk || msg[0] > kindFail {
			continue // the replay's last messages, or another's stale part
		}
		p, n := binary.Uvarint(msg[1:])
		if n <= 0 || p != part {
			continue
		}
		body := msg[1+n:]
		switch msg[0] {
		case kindChunk:
			if err := chunk(body); err != nil {
				return nil, err
			}
			if err := r.tr.Send(from, ask); err != nil {
				return nil, err
			}
		case kindEnd:
			return append([]byte(nil), body...), nil
		case kindFail:
			return nil, errors.New(string(body))
		}
	}
}

// Stop tells every other process that no more parts are wanted: their
// Senders return ErrStopped.
func (r *Receiver) Stop() {
	for p := 1; p < r.tr.Size(); p++ {
		_ = r.tr.Send(p, []byte{kindStop})
	}
}
