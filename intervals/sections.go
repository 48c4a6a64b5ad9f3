package intervals

import (
	"fmt"
	"sort"
)

// Sections follows one processor's sequential sections
// (MPI_Pcontrol(102, k) … MPI_Pcontrol(103, k)), characteristics.md §3.8, and splits
// each execution at the interval boundaries it crosses.
//
// The j-th execution of section k on one processor and the j-th execution
// of section k on another are the same section instance: that is how the
// analyzer counts K, the processors that executed an instance. Sections
// with different numbers may overlap; a section cannot overlap itself.
//
// A section need not nest with the intervals: it may start in one interval
// and end in another. Each interval gets the part of the section that lies
// inside it, so the caller says where the processor is (Move, at every
// interval boundary) and an execution comes back as pieces, one per place
// (a T: the analyzer's interval node) it spent time in. Since an interval's
// figures include its nested intervals', every level, the whole program
// included, then gets exactly the part of the section inside it.
type Sections[T comparable] struct {
	open  map[int64]*openSection[T]
	count map[int64]int // executions started so far, by section number
	where T             // the place current since the last Move
	warn  func(string)
	who   string
}

type openSection[T comparable] struct {
	inst int
	// from, mpi: start time and MPI time so far of the current piece.
	from, mpi int64
	pieces    []Piece[T]
}

// Piece is the part of a section execution spent in one place.
type Piece[T comparable] struct {
	Where T
	SeqNs int64 // time in the place minus the time in MPI calls there
}

// SectionRun is one completed execution of a section on this processor.
type SectionRun[T comparable] struct {
	Number   int64
	Instance int   // 0 for the first execution of Number on the processor
	SeqNs    int64 // Tseq: duration minus the time spent in MPI calls inside
	// Pieces split SeqNs by place, in order of first visit; one per place
	// (a place visited again adds to its piece), none for a place where the
	// section spent no time outside MPI.
	Pieces []Piece[T]
}

// NewSections returns an empty tracker whose current place is where; who
// prefixes warnings.
func NewSections[T comparable](who string, where T, warn func(string)) *Sections[T] {
	if warn == nil {
		warn = func(string) {}
	}
	return &Sections[T]{open: map[int64]*openSection[T]{}, count: map[int64]int{}, where: where, warn: warn, who: who}
}

// Start marks the start of section k at time at; mpiNs is the processor's
// total time in MPI calls so far (so that communication inside the section
// is not counted twice, once as Communications and once as Insufficient
// Parallelism).
func (s *Sections[T]) Start(k, at, mpiNs int64) {
	if _, ok := s.open[k]; ok {
		s.warn(fmt.Sprintf("%s: MPI_Pcontrol(102, %d) starts sequential section %d again before it ended; ignored.", s.who, k, k))
		return
	}
	s.open[k] = &openSection[T]{inst: s.count[k], from: at, mpi: mpiNs}
	s.count[k]++
}

// Move says that from time at on the processor is in place where (it
// entered or left an interval then); mpiNs is its MPI time so far. The
// open sections' time since the last boundary goes to the previous place.
func (s *Sections[T]) Move(at, mpiNs int64, where T) {
	for _, o := range s.open {
		s.cut(o, at, mpiNs)
	}
	s.where = where
}

// cut ends o's current piece (in s.where) at time at.
func (s *Sections[T]) cut(o *openSection[T], at, mpiNs int64) {
	seq := (at - o.from) - (mpiNs - o.mpi)
	o.from, o.mpi = at, mpiNs
	if seq <= 0 {
		return
	}
	for i := range o.pieces {
		if o.pieces[i].Where == s.where {
			o.pieces[i].SeqNs += seq
			return
		}
	}
	o.pieces = append(o.pieces, Piece[T]{Where: s.where, SeqNs: seq})
}

// End marks the end of section k; ok is false (and a warning is given)
// when the section was not started.
func (s *Sections[T]) End(k, at, mpiNs int64) (SectionRun[T], bool) {
	o, ok := s.open[k]
	if !ok {
		s.warn(fmt.Sprintf("%s: MPI_Pcontrol(103, %d) ends sequential section %d, which was not started; ignored.", s.who, k, k))
		return SectionRun[T]{}, false
	}
	delete(s.open, k)
	s.cut(o, at, mpiNs)
	r := SectionRun[T]{Number: k, Instance: o.inst, Pieces: o.pieces}
	for _, p := range o.pieces {
		r.SeqNs += p.SeqNs
	}
	return r, true
}

// Finish ends the sections still open at time at and returns them, with a
// warning.
func (s *Sections[T]) Finish(at, mpiNs int64) []SectionRun[T] {
	var out []SectionRun[T]
	keys := make([]int64, 0, len(s.open))
	for k := range s.open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		s.warn(fmt.Sprintf("%s: sequential section %d not ended by MPI_Pcontrol(103, %d); ended at the end of the program.", s.who, k, k))
		r, _ := s.End(k, at, mpiNs)
		out = append(out, r)
	}
	return out
}
