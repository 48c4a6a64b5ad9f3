package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// gcHeadroom is how far the heap may grow past what the last collection
// found live before the next one, at the least: GOGC=100 alone collects
// when the heap has doubled, which for the few megabytes live of a trace
// of a few hundred thousand calls per rank means a collection every few
// megabytes allocated, each of them marking, turning on the write
// barriers of the replay and touching fresh memory for its own state.
// On such traces the collector was a large share of the CPU time
// (docs/performance.md, "What a small trace costs besides its calls").
const gcHeadroom = 16 << 20

// runtimeMinHeap is the Go runtime's heap goal before its first
// collection at GOGC=100 (heapMinimum), scaled by GOGC like the goal.
const runtimeMinHeap = 4 << 20

// paceGC lets the heap grow by gcHeadroom past the live heap before a
// collection, or by what GOGC=100 allows when that is more (the live
// heap, the goroutines' stacks and the globals): the peak heap is at
// most GOGC=100's or the live heap plus gcHeadroom, bounded as before
// and larger by at most gcHeadroom. After each collection the proportion
// is set again from what it found. A GOGC in the environment is the
// user's choice and is left alone.
func paceGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	pace := newGCPacer()
	debug.SetGCPercent(pace.percent)
	pace.arm()
}

func newGCPacer() *gcPacer {
	return &gcPacer{percent: 100 * gcHeadroom / runtimeMinHeap, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
}

// gcPacer sets GOGC after each collection: a finalizer of an object
// left unreachable runs once the collection that found it so is done.
type gcPacer struct {
	percent int
	sample  []metrics.Sample
}

// gcSentinel is large enough not to be one of the tiny allocator's
// shared blocks, whose finalizers may never run.
type gcSentinel struct{ _ [2]*byte }

func (p *gcPacer) arm() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		p.repace()
		p.arm()
	})
}

// repace sets GOGC from what the last collection found: the runtime's
// goal is the live heap plus GOGC percent of the live heap, stacks and
// globals together (their scan work).
func (p *gcPacer) repace() {
	metrics.Read(p.sample)
	var work uint64
	for _, s := range p.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		work += s.Value.Uint64()
	}
	percent := 100
	if work < gcHeadroom {
		percent = int(100 * gcHeadroom / max(work, 1<<10))
	}
	if percent != p.percent {
		p.percent = percent
		debug.SetGCPercent(percent)
	}
}
