package intervals

import (
	"fmt"
	"strings"
	"testing"
)

type counter struct{ n int }

func newTracker(warns *[]string) *Tracker[*counter] {
	return NewTracker("rank 0", func() *counter { return &counter{} }, func(s string) { *warns = append(*warns, s) })
}

func TestNestingAndExeCount(t *testing.T) {
	var warns []string
	tr := newTracker(&warns)
	tr.Start(0)
	for i := int64(0); i < 3; i++ {
		tr.Enter(1, 10+100*i, 5)
		tr.Enter(2, 20+100*i, 6)
		tr.Current().Value.n++
		tr.Leave(2, 30+100*i)
		tr.Leave(1, 40+100*i)
	}
	tr.Finish(1000)
	tr.SortChildren()
	root := tr.Root()
	one := root.Children[0]
	two := one.Children[0]
	if root.ExeCount != 1 || root.ExecNs != 1000 || one.ExeCount != 3 || one.ExecNs != 90 ||
		two.ExeCount != 3 || two.ExecNs != 30 || two.Value.n != 3 || two.Key() != "1/2" || two.Level() != 2 || one.Site != 5 {
		t.Errorf("root %+v one %+v two %+v", root, one, two)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
}

func TestMalformed(t *testing.T) {
	var warns []string
	tr := newTracker(&warns)
	tr.Enter(1, 0, 0) // before Start: ignored
	tr.Start(0)
	tr.Leave(3, 1)    // not open
	tr.Enter(0, 2, 0) // not positive
	tr.Enter(1, 10, 0)
	tr.Enter(2, 20, 0)
	tr.Leave(1, 30) // crosses 2
	tr.Enter(4, 40, 0)
	tr.Finish(50) // 4 left open
	want := []string{"not open", "must be from 1 to", "crosses interval(s) 2", "4 not left"}
	if len(warns) != len(want) {
		t.Fatalf("warnings %q", warns)
	}
	for i, w := range want {
		if !strings.Contains(warns[i], w) {
			t.Errorf("warning %d %q lacks %q", i, warns[i], w)
		}
	}
	if n := tr.Root().Children[0].Children[0]; n.ExecNs != 10 {
		t.Errorf("crossed interval closed at %d", n.ExecNs)
	}
}

func TestSections(t *testing.T) {
	var warns []string
	s := NewSections("rank 1", "root", func(w string) { warns = append(warns, w) })
	s.Start(1, 100, 0)
	s.Start(1, 150, 0) // already open
	r, ok := s.End(1, 300, 50)
	if !ok || r.SeqNs != 150 || r.Instance != 0 {
		t.Errorf("first run %+v", r)
	}
	s.Start(1, 400, 50)
	r, _ = s.End(1, 410, 50)
	if r.Instance != 1 || r.SeqNs != 10 {
		t.Errorf("second run %+v", r)
	}
	if _, ok := s.End(2, 500, 50); ok {
		t.Error("ending a section never started")
	}
	s.Start(3, 600, 50)
	if runs := s.Finish(700, 60); len(runs) != 1 || runs[0].SeqNs != 90 {
		t.Errorf("finish %+v", runs)
	}
	if len(warns) != 3 {
		t.Errorf("warnings %q", warns)
	}
}

// TestSectionPieces: a section crossing interval boundaries is split at
// them, its MPI time taken out of the piece where it was spent; a place
// visited twice gets one piece.
func TestSectionPieces(t *testing.T) {
	s := NewSections("rank 0", "root", nil)
	s.Start(1, 0, 0)    // section 1 starts in root at 0
	s.Move(500, 0, "1") // enter interval 1 at 500: 500 in root
	s.Start(2, 520, 0)  // section 2 starts inside interval 1
	// 30 of MPI between 520 and 600
	r, ok := s.End(1, 600, 30) // 100 − 30 in interval 1
	if !ok || r.SeqNs != 570 || fmt.Sprint(r.Pieces) != "[{root 500} {1 70}]" {
		t.Errorf("section 1: %+v", r)
	}
	s.Move(650, 30, "root")  // leave interval 1 at 650: section 2 had 130 − 30 there
	s.Move(700, 30, "1")     // in root 50
	s.Move(710, 40, "root")  // interval 1 again: 10 − 10 of MPI, no time
	r, _ = s.End(2, 800, 40) // 90 more in root
	if r.SeqNs != 240 || fmt.Sprint(r.Pieces) != "[{1 100} {root 140}]" {
		t.Errorf("section 2: %+v", r)
	}
}

// TestObserve: every entry and exit of an interval (not the root) is
// reported, those closed by a crossing leave and at the end included.
func TestObserve(t *testing.T) {
	var warns, seen []string
	tr := newTracker(&warns)
	tr.Observe = func(n *Node[*counter], at int64, enter bool) {
		seen = append(seen, fmt.Sprintf("%v %s@%d", enter, n.Key(), at))
	}
	tr.Start(0)
	tr.Enter(1, 10, 0)
	tr.Enter(2, 20, 0)
	tr.Leave(1, 30) // crosses 2: both close at 30
	tr.Enter(3, 40, 0)
	tr.Finish(50)
	want := "true 1@10 true 1/2@20 false 1/2@30 false 1@30 true 3@40 false 3@50"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("observed %q, want %q", got, want)
	}
}
