package html

import (
	"slices"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// TestAggregate: 130 positions make blocks of 3 (ceil(130/64)), 44 cells;
// a message from 0 to 129 lands in cell [0][43], from 2 to 3 in [0][1],
// from 129 to 128 in [43][42]; totals are kept.
func TestAggregate(t *testing.T) {
	const n = 130
	msgs := square(n)
	msgs[0][129], msgs[2][3], msgs[129][128] = 5, 7, 1
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = 1000 + i
	}
	v := aggregate("c", false, ranks, msgs, square(n))
	if v.Block != 3 || len(v.Labels) != 44 || len(v.Messages) != 44 || v.Ranks != n {
		t.Fatalf("block %d, %d labels, %d rows, ranks %d", v.Block, len(v.Labels), len(v.Messages), v.Ranks)
	}
	if v.Messages[0][43] != 5 || v.Messages[0][1] != 7 || v.Messages[43][42] != 1 || v.TotalMessages != 13 || v.TotalBytes != 0 {
		t.Errorf("cells %d %d %d, total %d", v.Messages[0][43], v.Messages[0][1], v.Messages[43][42], v.TotalMessages)
	}
	if v.Labels[0] != "1000-1002" || v.Labels[43] != "1129" {
		t.Errorf("labels %q … %q", v.Labels[0], v.Labels[43])
	}
	small := aggregate("c", false, []int{0, 1}, [][]int64{{0, 2}, {3, 0}}, [][]int64{{0, 16}, {24, 0}})
	if small.Block != 1 || !slices.Equal(small.Labels, []string{"0", "1"}) || small.Bytes[1][0] != 24 || small.TotalBytes != 40 {
		t.Errorf("2 ranks: %+v", small)
	}
}

// TestPageData: the page's report has findings (derived when absent) and
// no matrices; the views hold them, all communicators first.
func TestPageData(t *testing.T) {
	r := &report.Report{Intervals: []report.Interval{{Main: report.Main{TotalTime: 1, LostTime: 0.5, IdleTime: 0.5},
		Ranks: []report.Rank{{Rank: 0, IdleTime: 0.5}},
		Profile: report.Profile{CommMatrix: &report.CommMatrix{Messages: [][]int64{{1}}, Bytes: [][]int64{{8}}},
			CommMatrices: []report.CommMatrixOn{{Comm: "world", Size: 1, Ranks: []int{0}, Messages: [][]int64{{1}}, Bytes: [][]int64{{8}}}}}}}}
	d, views := pageData(r)
	if d.Findings == nil || len(d.Findings.Losses) != 1 || d.Intervals[0].CommMatrix != nil || d.Intervals[0].CommMatrices != nil {
		t.Errorf("page data %+v", d)
	}
	if r.Intervals[0].CommMatrix == nil || r.Findings != nil {
		t.Error("the report was changed")
	}
	if len(views) != 1 || len(views[0]) != 2 || views[0][0].Comm != "all communicators" || views[0][1].Comm != "world" || views[0][1].TotalBytes != 8 {
		t.Errorf("views %+v", views)
	}
}

// TestPageDataPairs: a run past the dense matrix (1124 ranks, comm_pairs
// only) is drawn as all communicators in blocks of 18 (ceil(1124/64)), 63
// cells: 0→1 lands in [0][0], 1123→0 in [62][0], 40→41 in [2][2]; the
// page's report has no pairs.
func TestPageDataPairs(t *testing.T) {
	r := &report.Report{Processors: 1124, Intervals: []report.Interval{{Profile: report.Profile{CommPairs: []report.CommPair{
		{Sender: 0, Receiver: 1, Messages: 20, Bytes: 160},
		{Sender: 40, Receiver: 41, Messages: 3, Bytes: 24},
		{Sender: 1123, Receiver: 0, Messages: 20, Bytes: 640},
	}}}}}
	d, views := pageData(r)
	if d.Intervals[0].CommPairs != nil || r.Intervals[0].CommPairs == nil {
		t.Error("pairs left in the page's report, or taken from the report")
	}
	if len(views) != 1 || len(views[0]) != 1 {
		t.Fatalf("views %+v", views)
	}
	v := views[0][0]
	if v.Comm != "all communicators" || v.Ranks != 1124 || v.Block != 18 || len(v.Labels) != 63 || len(v.Messages) != 63 {
		t.Fatalf("%q: ranks %d, block %d, %d labels, %d rows", v.Comm, v.Ranks, v.Block, len(v.Labels), len(v.Messages))
	}
	if v.Messages[0][0] != 20 || v.Bytes[62][0] != 640 || v.Messages[2][2] != 3 || v.TotalMessages != 43 || v.TotalBytes != 824 {
		t.Errorf("cells %d %d %d, totals %d %d", v.Messages[0][0], v.Bytes[62][0], v.Messages[2][2], v.TotalMessages, v.TotalBytes)
	}
	if v.Labels[0] != "0-17" || v.Labels[62] != "1116-1123" {
		t.Errorf("labels %q … %q", v.Labels[0], v.Labels[62])
	}
	// A pair naming a rank past the processors widens the matrix; a
	// negative rank is left out.
	w := aggregatePairs(2, []report.CommPair{{Sender: 2, Receiver: 0, Messages: 1}, {Sender: -1, Receiver: 0, Messages: 5}})
	if w.Ranks != 3 || w.Messages[2][0] != 1 || w.TotalMessages != 1 {
		t.Errorf("out of range: %+v", w)
	}
}

// TestMatrixViewsSameName: the two communicators of one MPI_Comm_split
// with two colours share the report's name; the page's choice of matrix
// names each by its world ranks, and a communicator whose name is its own
// keeps it.
func TestMatrixViewsSameName(t *testing.T) {
	one := [][]int64{{0, 1}, {1, 0}}
	iv := &report.Interval{Profile: report.Profile{CommMatrices: []report.CommMatrixOn{
		{Comm: "split of world", Size: 2, Ranks: []int{0, 2}, Messages: one, Bytes: one},
		{Comm: "split of world", Size: 2, Ranks: []int{1, 3}, Messages: one, Bytes: one},
		{Comm: "dup of world", Size: 4, Ranks: []int{0, 1, 2, 3}, Messages: square(4), Bytes: square(4)},
	}}}
	var names []string
	for _, v := range matrixViews(iv, 4) {
		names = append(names, v.Comm)
	}
	if want := []string{"split of world (ranks 0, 2)", "split of world (ranks 1, 3)", "dup of world"}; !slices.Equal(names, want) {
		t.Errorf("views %q, want %q", names, want)
	}
}
