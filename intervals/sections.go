package intervals

import (
	"fmt"
	"sort"
)

// Sections follows one processor's sequential sections
// (MPI_Pcontrol(102, k) … MPI_Pcontrol(103, k)), SPEC §3.8.
//
// The j-th execution of section k on one processor and the j-th execution
// of section k on another are the same section instance: that is how the
// analyzer counts K, the processors that executed an instance. Sections
// with different numbers may overlap; a section cannot overlap itself.
type Sections struct {
	open  map[int64]openSection
	count map[int64]int // executions started so far, by section number
	warn  func(string)
	who   string
}

type openSection struct {
	at, mpi int64
	inst    int
}

// SectionRun is one completed execution of a section on this processor.
type SectionRun struct {
	Number   int64
	Instance int   // 0 for the first execution of Number on the processor
	SeqNs    int64 // Tseq: duration minus the time spent in MPI calls inside
}

// NewSections returns an empty tracker; who prefixes warnings.
func NewSections(who string, warn func(string)) *Sections {
	if warn == nil {
		warn = func(string) {}
	}
	return &Sections{open: map[int64]openSection{}, count: map[int64]int{}, warn: warn, who: who}
}

// Start marks the start of section k at time at; mpiNs is the processor's
// total time in MPI calls so far (so that communication inside the section
// is not counted twice, once as Communications and once as Insufficient
// Parallelism).
func (s *Sections) Start(k, at, mpiNs int64) {
	if _, ok := s.open[k]; ok {
		s.warn(fmt.Sprintf("%s: MPI_Pcontrol(102, %d) starts sequential section %d again before it ended; ignored.", s.who, k, k))
		return
	}
	s.open[k] = openSection{at: at, mpi: mpiNs, inst: s.count[k]}
	s.count[k]++
}

// End marks the end of section k; ok is false (and a warning is given)
// when the section was not started.
func (s *Sections) End(k, at, mpiNs int64) (SectionRun, bool) {
	o, ok := s.open[k]
	if !ok {
		s.warn(fmt.Sprintf("%s: MPI_Pcontrol(103, %d) ends sequential section %d, which was not started; ignored.", s.who, k, k))
		return SectionRun{}, false
	}
	delete(s.open, k)
	seq := (at - o.at) - (mpiNs - o.mpi)
	if seq < 0 {
		seq = 0
	}
	return SectionRun{Number: k, Instance: o.inst, SeqNs: seq}, true
}

// Finish ends the sections still open at time at and returns them, with a
// warning.
func (s *Sections) Finish(at, mpiNs int64) []SectionRun {
	var out []SectionRun
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
