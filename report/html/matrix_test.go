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
