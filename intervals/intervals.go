// Package intervals follows the interval structure of one processor's trace
// (characteristics.md §2): the whole program as level 0, MPI_Pcontrol(100, n) entering
// interval n inside the current one, MPI_Pcontrol(101, n) leaving it, and
// the sequential sections marked by MPI_Pcontrol(102/103, k).
//
// A Tracker builds one processor's tree of nodes, identified by their path
// of interval numbers, and says at every moment which node is current. It
// knows nothing about what is measured: each node carries a value of the
// caller's type T (the analyzer's accumulators), created on first entry.
// Trees of different processors are merged by path (Node.Key).
//
// Malformed Pcontrol sequences never stop the analysis; they are reported
// through the warn function:
//   - leaving an interval that is not open: ignored;
//   - leaving an open interval that is not the innermost (crossing pairs):
//     the intervals opened after it are closed at the same time;
//   - intervals still open at the end: closed at the end of the program.
package intervals

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pcontrol levels with a meaning for dtpa; other levels pass through.
const (
	EnterInterval = 100
	LeaveInterval = 101
	StartSection  = 102
	EndSection    = 103
)

// Node is one interval of one processor.
type Node[T any] struct {
	Path     []int // interval numbers from the root; empty for level 0
	Parent   *Node[T]
	Children []*Node[T] // in order of first entry
	// ExeCount is the number of entries; ExecNs the summed time inside
	// (entry → exit of each entry), nested intervals included.
	ExeCount int
	ExecNs   int64
	// Site is the call-site id (file-local) of the first MPI_Pcontrol that
	// entered the interval, kept for symbolization (SourceFile/Line).
	Site  uint32
	Value T
	// LastExit is the time of the latest exit; OpenAtEnd says the interval
	// was still open when Finish closed it (at the end of the program, or
	// of a trace cut short: then its figures lack what came after).
	LastExit  int64
	OpenAtEnd bool

	enteredAt int64
	open      bool
	byNum     map[int]*Node[T]
}

// Level is the nesting level (0 for the whole program).
func (n *Node[T]) Level() int { return len(n.Path) }

// Number is the interval number (0 for the whole program).
func (n *Node[T]) Number() int {
	if len(n.Path) == 0 {
		return 0
	}
	return n.Path[len(n.Path)-1]
}

// Key identifies the node across processors ("" for the root, "1/2" …).
func (n *Node[T]) Key() string { return PathKey(n.Path) }

// PathKey is the Key of a path.
func PathKey(p []int) string {
	var b strings.Builder
	for i, x := range p {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// Walk calls f on n and its descendants, parents before children.
func (n *Node[T]) Walk(f func(*Node[T])) {
	f(n)
	for _, c := range n.Children {
		c.Walk(f)
	}
}

// Tracker follows one processor's intervals.
type Tracker[T any] struct {
	root    *Node[T]
	stack   []*Node[T]
	newVal  func() T
	warn    func(string)
	started bool
	ended   bool
	Who     string // prefix of warnings, e.g. "rank 3"
	// Observe, when set, is told of every interval (not the root)
	// entered (enter true) or left, at the time of the entry or exit,
	// including those closed at a crossing MPI_Pcontrol(101) or at the
	// end (drawing tools follow the intervals with it).
	Observe func(n *Node[T], at int64, enter bool)
}

// NewTracker returns a tracker whose nodes get values from newVal. warn
// receives each problem found (may be nil).
func NewTracker[T any](who string, newVal func() T, warn func(string)) *Tracker[T] {
	if warn == nil {
		warn = func(string) {}
	}
	root := &Node[T]{Path: []int{}, Value: newVal()}
	return &Tracker[T]{root: root, newVal: newVal, warn: warn, Who: who}
}

// Root is the level-0 node.
func (t *Tracker[T]) Root() *Node[T] { return t.root }

// Started says whether Start was called.
func (t *Tracker[T]) Started() bool { return t.started }

// Ended says whether Finish was called.
func (t *Tracker[T]) Ended() bool { return t.ended }

// Current is the innermost open interval (the root before Start and after
// Finish, so that stray events still land somewhere harmless).
func (t *Tracker[T]) Current() *Node[T] {
	if len(t.stack) == 0 {
		return t.root
	}
	return t.stack[len(t.stack)-1]
}

// Start opens the whole program at time at.
func (t *Tracker[T]) Start(at int64) {
	if t.started {
		return
	}
	t.started = true
	t.open(t.root, at)
}

func (t *Tracker[T]) open(n *Node[T], at int64) {
	n.ExeCount++
	n.enteredAt = at
	n.open = true
	t.stack = append(t.stack, n)
	if t.Observe != nil && n != t.root {
		t.Observe(n, at, true)
	}
}

func (t *Tracker[T]) close(n *Node[T], at int64) {
	if d := at - n.enteredAt; d > 0 {
		n.ExecNs += d
	}
	n.LastExit = max(n.LastExit, at)
	n.open = false
	t.stack = t.stack[:len(t.stack)-1]
	if t.Observe != nil && n != t.root {
		t.Observe(n, at, false)
	}
}

// maxIntervalNum is the largest interval number (they are ints of the
// report, and paths of them are keys).
const maxIntervalNum = 1 << 30

// Enter opens interval num inside the current one at time at; site is the
// call site of the entering MPI_Pcontrol.
func (t *Tracker[T]) Enter(num int64, at int64, site uint32) {
	if !t.started || t.ended {
		return
	}
	if num <= 0 || num > maxIntervalNum {
		t.warn(fmt.Sprintf("%s: MPI_Pcontrol(100, %d) ignored: interval numbers must be from 1 to %d.", t.Who, num, maxIntervalNum))
		return
	}
	cur := t.Current()
	if cur.byNum == nil {
		cur.byNum = map[int]*Node[T]{}
	}
	n := cur.byNum[int(num)]
	if n == nil {
		path := append(append([]int{}, cur.Path...), int(num))
		n = &Node[T]{Path: path, Parent: cur, Site: site, Value: t.newVal()}
		cur.byNum[int(num)] = n
		cur.Children = append(cur.Children, n)
	}
	t.open(n, at)
}

// Leave closes interval num at time at.
func (t *Tracker[T]) Leave(num int64, at int64) {
	if !t.started || t.ended {
		return
	}
	idx := -1
	for i := len(t.stack) - 1; i >= 1; i-- {
		if int64(t.stack[i].Number()) == num {
			idx = i
			break
		}
	}
	if idx < 0 {
		t.warn(fmt.Sprintf("%s: MPI_Pcontrol(101, %d) leaves interval %d, which is not open; ignored.", t.Who, num, num))
		return
	}
	if idx != len(t.stack)-1 {
		var inner []string
		for _, n := range t.stack[idx+1:] {
			inner = append(inner, strconv.Itoa(n.Number()))
		}
		t.warn(fmt.Sprintf("%s: MPI_Pcontrol(101, %d) crosses interval(s) %s still open inside it; they are closed at the same time.",
			t.Who, num, strings.Join(inner, ", ")))
	}
	for len(t.stack) > idx {
		t.close(t.Current(), at)
	}
}

// Finish closes everything still open at time at (the end of the program);
// intervals other than the root left open are reported. A tracker that
// never started stays empty (root ExeCount 0).
func (t *Tracker[T]) Finish(at int64) {
	if t.ended {
		return
	}
	if !t.started {
		// Nothing happened (an empty or cut trace): the processor did not
		// execute anything we can analyse, not even level 0.
		t.ended = true
		return
	}
	if len(t.stack) > 1 {
		var open []string
		for _, n := range t.stack[1:] {
			open = append(open, PathKey(n.Path))
		}
		t.warn(fmt.Sprintf("%s: interval(s) %s not left by MPI_Pcontrol(101); closed at the end of the program.",
			t.Who, strings.Join(open, ", ")))
	}
	for len(t.stack) > 0 {
		t.Current().OpenAtEnd = true
		t.close(t.Current(), at)
	}
	t.ended = true
}

// SortChildren orders every node's children by interval number, so that a
// depth-first walk is deterministic.
func (t *Tracker[T]) SortChildren() {
	t.root.Walk(func(n *Node[T]) {
		sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].Number() < n.Children[j].Number() })
	})
}
