package html

import (
	"strconv"

	"github.com/dtpa/dtpa/report"
)

// MaxMatrixCells is the most rows (and columns) a communication matrix is
// drawn with. A matrix of more processors is drawn in blocks of
// consecutive positions, each cell the sum of its block, so that a run of
// thousands of ranks does not put millions of numbers into the page; the
// page says so above the matrix.
const MaxMatrixCells = 64

// matrixView is one communication matrix as the page draws it: the
// interval's comm_matrix ("all communicators") or one of its
// comm_matrices, aggregated into blocks when larger than MaxMatrixCells.
type matrixView struct {
	Comm  string `json:"comm"`
	Inter bool   `json:"inter,omitempty"`
	// Ranks is the number of processors the matrix spans; Block how many
	// consecutive positions one cell sums (1: one processor per cell).
	Ranks int `json:"ranks"`
	Block int `json:"block"`
	// Labels names each cell's processors by world rank: "5", or
	// "64-127" for a block.
	Labels   []string  `json:"labels"`
	Messages [][]int64 `json:"messages"`
	Bytes    [][]int64 `json:"bytes"`
	// TotalMessages and TotalBytes sum the whole matrix (before
	// aggregation, which keeps them).
	TotalMessages int64 `json:"total_messages"`
	TotalBytes    int64 `json:"total_bytes"`
}

// matrixViews are the matrices of interval iv the page offers: every
// communicator together first, then each communicator; nil without a
// matrix. A run too large for the dense matrix has its nonzero cells
// (comm_pairs) instead: they are drawn as every communicator together, of
// processors world ranks.
func matrixViews(iv *report.Interval, processors int) []matrixView {
	var out []matrixView
	if m := iv.CommMatrix; m != nil {
		ranks := make([]int, len(m.Messages))
		for i := range ranks {
			ranks[i] = i
		}
		out = append(out, aggregate("all communicators", false, ranks, m.Messages, m.Bytes))
	} else if len(iv.CommPairs) > 0 {
		out = append(out, aggregatePairs(processors, iv.CommPairs))
	}
	named := map[string]int{}
	for _, c := range iv.CommMatrices {
		named[c.Comm]++
	}
	for _, c := range iv.CommMatrices {
		name := c.Comm
		if named[name] > 1 {
			// The communicators one MPI_Comm_split call makes (one per
			// colour) share their name; the page's choice of matrix
			// must still tell them apart.
			name += " (ranks " + report.Ranges(c.Ranks) + ")"
		}
		out = append(out, aggregate(name, c.Inter, c.Ranks, c.Messages, c.Bytes))
	}
	return out
}

// aggregate sums msgs and bytes, indexed by position in ranks (world
// ranks), into blocks of at most MaxMatrixCells per side. Rows or columns
// missing from a ragged matrix count as zero.
func aggregate(comm string, inter bool, ranks []int, msgs, bytes [][]int64) matrixView {
	n := max(len(ranks), len(msgs))
	v := blocks(comm, inter, ranks, n)
	add := func(dst [][]int64, src [][]int64, total *int64) {
		for s, row := range src {
			for r, x := range row {
				if s < n && r < n {
					dst[s/v.Block][r/v.Block] += x
					*total += x
				}
			}
		}
	}
	add(v.Messages, msgs, &v.TotalMessages)
	add(v.Bytes, bytes, &v.TotalBytes)
	return v
}

// aggregatePairs sums the nonzero cells pairs of a matrix of n world ranks
// (all communicators) into blocks as aggregate does. Pairs of ranks
// outside [0, n) widen the matrix to hold them rather than being lost.
func aggregatePairs(n int, pairs []report.CommPair) matrixView {
	for _, p := range pairs {
		n = max(n, p.Sender+1, p.Receiver+1)
	}
	v := blocks("all communicators", false, nil, n)
	for _, p := range pairs {
		if p.Sender < 0 || p.Receiver < 0 {
			continue
		}
		s, r := p.Sender/v.Block, p.Receiver/v.Block
		v.Messages[s][r] += p.Messages
		v.Bytes[s][r] += p.Bytes
		v.TotalMessages += p.Messages
		v.TotalBytes += p.Bytes
	}
	return v
}

// blocks is an empty view of a matrix of n positions (world ranks ranks,
// or the positions themselves past its end) in blocks of at most
// MaxMatrixCells per side, labelled.
func blocks(comm string, inter bool, ranks []int, n int) matrixView {
	block := 1
	if n > MaxMatrixCells {
		block = (n + MaxMatrixCells - 1) / MaxMatrixCells
	}
	cells := (n + block - 1) / block
	v := matrixView{Comm: comm, Inter: inter, Ranks: n, Block: block,
		Labels: make([]string, cells), Messages: square(cells), Bytes: square(cells)}
	world := func(p int) int {
		if p < len(ranks) {
			return ranks[p]
		}
		return p
	}
	for c := range v.Labels {
		lo, hi := c*block, min((c+1)*block, n)-1
		v.Labels[c] = strconv.Itoa(world(lo))
		if hi > lo {
			v.Labels[c] += "-" + strconv.Itoa(world(hi))
		}
	}
	return v
}

func square(n int) [][]int64 {
	m := make([][]int64, n)
	for i := range m {
		m[i] = make([]int64, n)
	}
	return m
}

// pageData is the report as the page embeds it: findings derived when the
// report lacks them, and the communication matrices and pairs taken out (the page
// gets them as matrixView, bounded in size, by interval index).
func pageData(r *report.Report) (*report.Report, [][]matrixView) {
	out := *r
	if out.Findings == nil {
		out.Findings = report.FindingsOf(r)
	}
	out.Intervals = make([]report.Interval, len(r.Intervals))
	views := make([][]matrixView, len(r.Intervals))
	for i := range r.Intervals {
		iv := r.Intervals[i]
		views[i] = matrixViews(&iv, r.Processors)
		iv.CommMatrix, iv.CommMatrices, iv.CommPairs = nil, nil, nil
		out.Intervals[i] = iv
	}
	return &out, views
}
