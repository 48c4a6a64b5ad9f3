package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestGCPacer: after a collection the proportion lets the heap grow by
// gcHeadroom past a small live heap, and as GOGC=100 does past a large
// one.
func TestGCPacer(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	p := newGCPacer()
	big := make([]byte, 2*gcHeadroom)
	for i := range big {
		big[i] = byte(i)
	}
	runtime.GC()
	p.repace()
	if p.percent != 100 {
		t.Errorf("live heap of %d MB: GOGC %d, want 100", len(big)>>20, p.percent)
	}
	runtime.KeepAlive(big)
	big = nil
	runtime.GC()
	p.repace()
	sample := newGCPacer().sample
	metrics.Read(sample)
	var work uint64
	for _, s := range sample {
		work += s.Value.Uint64()
	}
	if want := int(100 * gcHeadroom / work); work >= gcHeadroom || p.percent < want*9/10 || p.percent > want*11/10 {
		t.Errorf("live heap, stacks and globals of %d bytes: GOGC %d, want about %d", work, p.percent, want)
	}
	if got := debug.SetGCPercent(old); got != p.percent {
		t.Errorf("the runtime's GOGC is %d, the pacer's %d", got, p.percent)
	}
}
