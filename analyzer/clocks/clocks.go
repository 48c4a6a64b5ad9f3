// Package clocks aligns the local clocks of the ranks of one run on the
// clock of world rank 0, from the ping-pong samples the tracer stored
// (trace.proto, ClockSync).
//
// Per synchronization phase (INIT, FINALIZE, INTERMEDIATE) and rank, the
// sample with the smallest round trip gives one anchor: the local time
// (send+recv)/2 corresponds to the reference's time remote, with an error of
// at most half the round trip. Anchors are mapped through the reference's
// own alignment, so offsets compose along the tree of references up to
// rank 0. A rank's map from local to global time is the piecewise linear
// function through its anchors (drift between phases), extended beyond the
// first and last anchors with the slope of the nearest segment (offset only,
// slope 1, with a single anchor).
package clocks

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// Map converts one rank's local nanoseconds to global (rank-0) nanoseconds.
// The zero Map is the identity.
type Map struct {
	// Anchors sorted by local time: Local[i] ↦ Global[i].
	Local, Global []int64
	seg           int // segment of the previous conversion (times mostly increase)
}

// Identity reports whether the map leaves times unchanged.
func (m *Map) Identity() bool {
	if len(m.Local) == 0 {
		return true
	}
	if len(m.Local) == 1 {
		return m.Local[0] == m.Global[0]
	}
	for i := range m.Local {
		if m.Local[i] != m.Global[i] {
			return false
		}
	}
	return true
}

// At converts a local time. A Map is not safe for concurrent use (it caches
// the last segment); Clone one per goroutine.
func (m *Map) At(t int64) int64 {
	n := len(m.Local)
	switch n {
	case 0:
		return t
	case 1:
		return t + (m.Global[0] - m.Local[0])
	case 2:
		x0, off, eps, _ := m.Line()
		return t + off + int64(float64(t-x0)*eps)
	}
	// Segment i spans [Local[i], Local[i+1]]; the first and last extend
	// outwards.
	i := m.seg
	if i > n-2 {
		i = n - 2
	}
	for i > 0 && t < m.Local[i] {
		i--
	}
	for i < n-2 && t >= m.Local[i+1] {
		i++
	}
	m.seg = i
	x0, x1, y0, y1 := m.Local[i], m.Local[i+1], m.Global[i], m.Global[i+1]
	if x1 == x0 {
		return t + (y0 - x0)
	}
	slope := float64(y1-y0) / float64(x1-x0)
	return y0 + int64(math.Round(float64(t-x0)*slope))
}

// Line gives a map of two anchors (one line through and beyond them: a
// rank mapped through the TSC onto its host leader's clock, or aligned by
// two clock-sync phases) as t ↦ t + off + int64(float64(t−x0)·eps), eps
// its slope minus one: At computes it so, and a replay that converts
// every time inlines it, with the same result to the nanosecond.
func (m *Map) Line() (x0, off int64, eps float64, ok bool) {
	if len(m.Local) != 2 || m.Local[1] == m.Local[0] {
		return 0, 0, 0, false
	}
	x0, x1, y0, y1 := m.Local[0], m.Local[1], m.Global[0], m.Global[1]
	return x0, y0 - x0, float64((y1-y0)-(x1-x0)) / float64(x1-x0), true
}

// Clone returns an independent copy (sharing the anchors).
func (m *Map) Clone() *Map { c := *m; c.seg = 0; return &c }

// Model holds the maps of every rank of a run.
type Model struct {
	Maps []*Map // by world rank; never nil
	// Warnings about missing or inconsistent samples, one sentence each.
	Warnings []string
	// MaxErrorNs is the largest half round trip of the samples used: an
	// upper bound on the alignment error between a rank and its reference.
	MaxErrorNs int64
	// ErrorNs bounds, by world rank, the error of the rank's alignment on
	// rank 0's clock at its anchors: the half round trip of each phase's
	// chosen sample plus its reference's bound (errors add along the tree
	// of references), the largest over the rank's phases. Drift between
	// anchors is assumed linear; it is not part of the bound.
	ErrorNs []int64
}

// Build aligns the ranks given their clock-sync chunks (syncs[r] for world
// rank r; nil for a missing rank) and the clocks their timestamps were read
// from (clks[r], the trace header's; nil or short when unknown). present[r]
// says whether rank r's file exists at all.
func Build(syncs [][]*tracepb.ClockSync, clks []*tracepb.Clock, present []bool) *Model {
	n := len(syncs)
	m := &Model{Maps: make([]*Map, n), ErrorNs: make([]int64, n)}
	state := make([]int, n) // 0 todo, 1 in progress, 2 done
	var noSync []int
	var build func(r int) *Map
	build = func(r int) *Map {
		switch state[r] {
		case 2:
			return m.Maps[r]
		case 1:
			m.Warnings = append(m.Warnings, fmt.Sprintf("Clock references of rank %d form a cycle; its clock is left unaligned.", r))
			return &Map{}
		}
		state[r] = 1
		mp := &Map{}
		if r != 0 && present[r] {
			var local, global []int64
			if len(syncs[r]) == 0 {
				noSync = append(noSync, r)
			}
			for _, c := range syncs[r] {
				ref := int(c.Reference)
				if ref == r || ref >= n {
					continue
				}
				var x, y, half int64
				if c.SameClock {
					// Same clock as the reference: this rank's map is the
					// reference's, through the shared counter when both
					// converted it to nanoseconds with their own
					// calibration.
					ra := build(ref)
					m.ErrorNs[r] = max(m.ErrorNs[r], m.ErrorNs[ref])
					if a, ok := tscOf(clockOf(clks, r)); ok {
						if b, ok := tscOf(clockOf(clks, ref)); ok && a.shares(b) {
							l, g := a.through(b, ra.Clone())
							local, global = append(local, l...), append(global, g...)
							continue
						}
					}
					if len(ra.Local) == 0 {
						local, global = append(local, 0), append(global, 0)
					}
					local = append(local, ra.Local...)
					global = append(global, ra.Global...)
					continue
				} else {
					best := -1
					var bestRTT int64
					for i := range c.LocalSendNs {
						rtt := c.LocalRecvNs[i] - c.LocalSendNs[i]
						if rtt < 0 {
							continue
						}
						if best < 0 || rtt < bestRTT {
							best, bestRTT = i, rtt
						}
					}
					if best < 0 {
						m.Warnings = append(m.Warnings, fmt.Sprintf("Rank %d: %s clock-sync phase has no usable sample; ignored.", r, c.Phase))
						continue
					}
					half = bestRTT / 2
					if half > m.MaxErrorNs {
						m.MaxErrorNs = half
					}
					// mid = (send+recv)/2 without overflow.
					s, rv := c.LocalSendNs[best], c.LocalRecvNs[best]
					x = s + (rv-s)/2
					y = c.RemoteNs[best]
				}
				if !present[ref] {
					m.Warnings = append(m.Warnings, fmt.Sprintf("Rank %d measured its clock against rank %d, whose trace is missing; that link is taken as exact.", r, ref))
				}
				refMap := build(ref).Clone()
				m.ErrorNs[r] = max(m.ErrorNs[r], half+m.ErrorNs[ref])
				local = append(local, x)
				global = append(global, refMap.At(y))
			}
			mp = newMap(local, global)
		}
		m.Maps[r] = mp
		state[r] = 2
		return mp
	}
	for r := 0; r < n; r++ {
		build(r)
	}
	if len(noSync) > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("Rank(s) %s have no clock-sync samples; their clocks are assumed to agree with rank 0's.", ranges(noSync)))
	}
	return m
}

func clockOf(clks []*tracepb.Clock, r int) *tracepb.Clock {
	if r < len(clks) {
		return clks[r]
	}
	return nil
}

// tscConv is how a rank's tracer turned time-stamp counter readings into
// its local nanoseconds: ns = ns0 + (tsc − raw0)·nsPerTick, with nsPerTick
// from the rank's own calibration against CLOCK_MONOTONIC_RAW at MPI_Init.
// Ranks on one host read one counter, but each calibrated it over a few
// milliseconds, so their nanoseconds run apart at the difference of their
// calibrations (0.05 ppm seen here, up to a few ppm possible: 2 µs over a
// 40 s run, tens of microseconds over an hour, more than a message's
// latency). A rank that shares its reference's clock is therefore mapped
// through the counter onto the reference's nanoseconds.
type tscConv struct {
	raw0      uint64
	ns0       int64
	nsPerTick float64
}

// tscOf reads a header's conversion; false for another clock, a missing
// or degenerate calibration, or an injected skew (tests: the rank's times
// are not the counter's any more).
func tscOf(c *tracepb.Clock) (tscConv, bool) {
	if c == nil || c.Source != tracepb.Clock_TSC || len(c.Calibration) < 2 || c.InjectedOffsetNs != 0 || c.InjectedDriftPpm != 0 {
		return tscConv{}, false
	}
	p0, p1 := c.Calibration[0], c.Calibration[1]
	if p0 == nil || p1 == nil || p1.Tsc <= p0.Tsc || p1.MonotonicRawNs <= p0.MonotonicRawNs {
		return tscConv{}, false
	}
	// The tracer's own arithmetic (dt_clock.c), so that the inverse is
	// exact to the nanosecond.
	npt := float64(p1.MonotonicRawNs-p0.MonotonicRawNs) / float64(p1.Tsc-p0.Tsc)
	if !(npt > 0) || math.IsInf(npt, 0) {
		return tscConv{}, false
	}
	return tscConv{raw0: p0.Tsc, ns0: p0.MonotonicRawNs, nsPerTick: npt}, true
}

// to converts local time t of a's rank to the local time of b's rank.
func (a tscConv) to(b tscConv, t int64) int64 {
	ticks := float64(t-a.ns0)/a.nsPerTick + float64(int64(a.raw0-b.raw0))
	return b.ns0 + int64(math.Round(ticks*b.nsPerTick))
}

// shares reports whether the two conversions can be of one counter: rates
// within 100 ppm of each other (calibrations err by a few ppm at most),
// and each calibration point read on the other's conversion within a
// millisecond of CLOCK_MONOTONIC_RAW, which the two ranks share too.
// Otherwise (two machines under one host name) the ranks are taken to
// agree as they are.
func (a tscConv) shares(b tscConv) bool {
	if math.Abs(a.nsPerTick/b.nsPerTick-1) > 100e-6 {
		return false
	}
	const ms = 1_000_000
	d1, d2 := a.to(b, a.ns0)-a.ns0, b.to(a, b.ns0)-b.ns0
	return d1 > -ms && d1 < ms && d2 > -ms && d2 < ms
}

// through returns the anchors of the map of a's rank given b's rank's map
// ref: a's local time goes onto b's clock through the counter, then
// through ref. ref is linear between and beyond its anchors, so the
// composition's anchors are ref's, moved onto a's clock, and two more
// (a's calibration point and one 10^15 ns, 11.6 days, later: the slope
// between them exact to 10^-15) when ref has fewer than two.
func (a tscConv) through(b tscConv, ref *Map) (local, global []int64) {
	for i, u := range ref.Local {
		local = append(local, b.to(a, u))
		global = append(global, ref.Global[i])
	}
	if len(ref.Local) < 2 {
		for _, x := range []int64{a.ns0, a.ns0 + 1_000_000_000_000_000} {
			local = append(local, x)
			global = append(global, ref.At(a.to(b, x)))
		}
	}
	return local, global
}

// ranges writes sorted ranks compactly: "1, 3-5".
func ranges(rs []int) string {
	var b strings.Builder
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if i == j {
			fmt.Fprintf(&b, "%d", rs[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", rs[i], rs[j])
		}
		i = j + 1
	}
	return b.String()
}

// newMap sorts anchors by local time and merges anchors at the same local
// time (averaging their global times).
func newMap(local, global []int64) *Map {
	idx := make([]int, len(local))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return local[idx[a]] < local[idx[b]] })
	m := &Map{}
	for _, i := range idx {
		if k := len(m.Local); k > 0 && m.Local[k-1] == local[i] {
			m.Global[k-1] = m.Global[k-1]/2 + global[i]/2
			continue
		}
		m.Local = append(m.Local, local[i])
		m.Global = append(m.Global, global[i])
	}
	return m
}
