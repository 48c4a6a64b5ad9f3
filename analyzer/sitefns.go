package analyzer

import "math"

// A call site is a call stack: its return addresses, as the tracer names
// it. The report's SRC point is a call site calling one MPI function, but
// one site can be reached with several functions: a call through a
// function pointer, or every call a Python program makes through ctypes
// (one return address in libffi). Counted under the site alone, their
// figures would be summed under whichever function came last. So the
// replay counts each further (site, function) pair of a rank under an id
// of its own, a virtual site counted down from the largest id: the
// accumulators, waits, messages and timeline all carry that id, and the
// report maps it back to the site's frames (siteKeyer.real). The first
// function seen at a site keeps the site's own id, so a program that calls
// one function per site (nearly all) sees nothing of this.
type siteFns struct {
	// first is, by site id below denseSites, 1 + the first function seen
	// at the site (0: none yet); firstBig the same for larger ids.
	first    []uint32
	firstBig map[uint32]uint32
	// virt maps a further (site, function) pair to its virtual site, and
	// pair a virtual site back to the pair.
	virt map[[2]uint32]uint32
	pair map[uint32][2]uint32
	next uint32 // the next virtual site, counted down
}

// of is the id under which a call of function fn at site is counted: site
// itself unless another function was seen there first. An id of already
// is returned as it is (an event handed on twice).
func (s *siteFns) of(site, fn uint32) uint32 {
	if int(site) < len(s.first) && s.first[site] == fn+1 {
		return site
	}
	return s.slow(site, fn)
}

func (s *siteFns) slow(site, fn uint32) uint32 {
	if p, ok := s.pair[site]; ok {
		if p[1] == fn {
			return site
		}
		// A site id the trace uses that is also a virtual site (ids far
		// beyond those defined): a pair of its own.
		return s.virtual(site, fn)
	}
	if site < denseSites {
		if int(site) >= len(s.first) {
			n := max(int(site)+1, 2*len(s.first), 64)
			f := make([]uint32, min(n, denseSites))
			copy(f, s.first)
			s.first = f
		}
		if first(&s.first[site], fn) {
			return site
		}
		return s.virtual(site, fn)
	}
	if s.firstBig == nil {
		s.firstBig = map[uint32]uint32{}
	}
	f := s.firstBig[site]
	ok := first(&f, fn)
	s.firstBig[site] = f
	if ok {
		return site
	}
	return s.virtual(site, fn)
}

// first says whether fn is the first function seen at a site whose record
// (1 + that function, 0 for none yet) is *f, making it so if none was.
func first(f *uint32, fn uint32) bool {
	if *f == 0 {
		*f = fn + 1
	}
	return *f == fn+1
}

// virtual is the virtual site of the pair (site, fn).
func (s *siteFns) virtual(site, fn uint32) uint32 {
	k := [2]uint32{site, fn}
	if v, ok := s.virt[k]; ok {
		return v
	}
	if s.virt == nil {
		s.virt, s.pair, s.next = map[[2]uint32]uint32{}, map[uint32][2]uint32{}, math.MaxUint32
	}
	for {
		if s.next < denseSites {
			// Four billion pairs: counted under the site after all.
			return site
		}
		v := s.next
		s.next--
		if _, used := s.firstBig[v]; !used {
			s.virt[k], s.pair[v] = v, k
			return v
		}
	}
}

// sites maps the rank's virtual sites to the sites they stand for (nil
// when there are none), for the report (rankResult.virt).
func (s *siteFns) sites() map[uint32]uint32 {
	if len(s.pair) == 0 {
		return nil
	}
	m := make(map[uint32]uint32, len(s.pair))
	for v, p := range s.pair {
		m[v] = p[0]
	}
	return m
}
