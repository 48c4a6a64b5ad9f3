package trpa

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/dtpa/dtpa/report"
)

// TopFunctions is how many MPI functions an interval's functions table
// lists (by decreasing time); the JSON report has them all.
const TopFunctions = 10

// MaxMatrixRanks is the largest number of processors whose communication
// matrix is printed; beyond it only the node traffic totals are.
const MaxMatrixRanks = 16

// runFacts prints the run facts block of the header.
func (p *printer) runFacts(r *report.Report) {
	ru := r.Run
	if ru == nil {
		return
	}
	p.printf("\nRun:     %s\n", strings.Join(ru.Command, " "))
	if len(r.Programs) > 0 {
		var ps []string
		for _, pr := range r.Programs {
			ps = append(ps, fmt.Sprintf("%s (ranks %s)", pr.Program, rankRanges(pr.Ranks)))
		}
		p.printf("MPMD:    %s\n", strings.Join(ps, ", "))
	}
	p.printf("MPI:     %s\n", orNotRecorded(ru.MPI))
	p.printf("Start:   %s\n", orNotRecorded(ru.Start))
	if ru.BatchJob != "" {
		p.printf("Job:     %s\n", ru.BatchJob)
	}
	p.printf("Clock:   %s, synchronization error at most %.9f s\n", orNotRecorded(ru.Clock), ru.SyncError)
	p.printf("Tracer:  %s\n", orNotRecorded(ru.TracerVersion))
	bpe := "-"
	if ru.Events > 0 {
		bpe = strconv.FormatFloat(ru.BytesPerEvent, 'f', 1, 64)
	}
	p.printf("Traces:  %s, %d bytes, %d events, %s bytes/event\n", plural(len(ru.Ranks), "file"), ru.TraceBytes, ru.Events, bpe)
	if len(r.Hosts) > 0 {
		var hs []string
		for _, h := range r.Hosts {
			hs = append(hs, fmt.Sprintf("%s (ranks %s)", orUnknown(h.Host), rankRanges(h.Ranks)))
		}
		p.printf("Hosts:   %s\n", strings.Join(hs, ", "))
	}
}

func orNotRecorded(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// rankRanges writes sorted ranks compactly: "0-3, 6".
func rankRanges(rs []int) string {
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		} else {
			parts = append(parts, strconv.Itoa(rs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// profile prints an interval's profile view below its DVM characteristics:
// the functions table, the communication matrix (not with -wp, and only up
// to MaxMatrixRanks processors), the node traffic, the matrices per
// communicator (not with -wp, and not when world is the only one), the
// message sizes and the call mix per processor (not with -wp).
func (p *printer) profile(iv *report.Interval) {
	p.profileMatrices(iv)
	p.messageSizes(iv)
	p.callMix(iv)
}

// profileMatrices prints the functions, the matrices and the traffic.
func (p *printer) profileMatrices(iv *report.Interval) {
	if fs := iv.Functions; len(fs) > 0 {
		n := min(len(fs), TopFunctions)
		p.printf("\n--- MPI functions (%d of %d, by time) ---\n", n, len(fs))
		t := newTable()
		t.AppendHeader(table.Row{"Function", "Calls", "Time", "Bytes", "Min", "Max"})
		for _, f := range fs[:n] {
			t.AppendRow(table.Row{f.Function, f.Calls, seconds(f.Time), f.Bytes, seconds(f.Min), seconds(f.Max)})
		}
		t.SetColumnConfigs(rightAligned(2, 6))
		p.emit(t, "")
	}
	// Runs too large for the dense matrix (comm_pairs instead) still
	// have their node traffic.
	if m := iv.CommMatrix; m != nil && !p.opts.NoPerProcessor && len(m.Messages) <= MaxMatrixRanks {
		p.printf("\n--- Messages sent (row: sender, column: receiver) ---\n")
		p.matrix(m.Messages)
		p.printf("\n--- Bytes sent (row: sender, column: receiver) ---\n")
		p.matrix(m.Bytes)
	}
	if tr := iv.Traffic; tr != nil {
		p.printf("\nNode traffic: intra-node %d messages %d bytes, inter-node %d messages %d bytes\n",
			tr.IntraNode.Messages, tr.IntraNode.Bytes, tr.InterNode.Messages, tr.InterNode.Bytes)
	}
	if !p.opts.NoPerProcessor && !(len(iv.CommMatrices) == 1 && iv.CommMatrices[0].Comm == "world") {
		for _, cm := range iv.CommMatrices {
			if len(cm.Ranks) > MaxMatrixRanks {
				continue
			}
			p.printf("\n--- Messages/bytes sent on %s (world ranks; row: sender, column: receiver) ---\n", cm.Comm)
			p.commMatrix(cm)
		}
	}
}

// messageSizes prints an interval's message size classes.
func (p *printer) messageSizes(iv *report.Interval) {
	if len(iv.MessageSizes) == 0 {
		return
	}
	p.printf("\n--- Message sizes (messages received; latency: send entry to receive exit) ---\n")
	t := newTable()
	t.AppendHeader(table.Row{"Size (bytes)", "Messages", "Bytes", "Latency", "MB/s"})
	for _, b := range iv.MessageSizes {
		size := "0"
		if b.MaxBytes > 0 {
			size = fmt.Sprintf("%d-%d", b.MinBytes, b.MaxBytes)
		}
		t.AppendRow(table.Row{size, b.Messages, b.Bytes, seconds(b.Latency), strconv.FormatFloat(b.Throughput/1e6, 'f', 1, 64)})
	}
	t.SetColumnConfigs(rightAligned(1, 5))
	p.emit(t, "")
}

// TopCallMix is how many functions a processor's row of the call mix
// table names.
const TopCallMix = 3

// callMix prints each processor's calls, MPI time, gaps between calls and
// its main functions by share of MPI time (and of calls); not with -wp.
func (p *printer) callMix(iv *report.Interval) {
	if p.opts.NoPerProcessor || len(iv.Ranks) == 0 {
		return
	}
	has := false
	for _, r := range iv.Ranks {
		has = has || len(r.CallMix) > 0 || r.Gaps > 0
	}
	if !has {
		return
	}
	p.printf("\n--- Call mix and grain per processor (gap: from one MPI call's exit to the next's entry) ---\n")
	t := newTable()
	t.AppendHeader(table.Row{"Rank", "Calls", "MPI time", "Gaps", "Gap mean", "Gap median", "Main functions (% of MPI time / % of calls)"})
	for _, r := range iv.Ranks {
		var calls int64
		var time float64
		var top []string
		for i, c := range r.CallMix {
			calls += c.Calls
			time += c.Time
			if i < TopCallMix {
				top = append(top, fmt.Sprintf("%s %.0f/%.0f", c.Function, 100*c.TimeShare, 100*c.CallShare))
			}
		}
		if len(r.CallMix) > TopCallMix {
			top = append(top, "...")
		}
		t.AppendRow(table.Row{r.Rank, calls, seconds(time), r.Gaps, seconds(r.GapMean), seconds(r.GapMedian), strings.Join(top, ", ")})
	}
	t.SetColumnConfigs(rightAligned(1, 6))
	p.emit(t, "")
}

// commMatrix prints one communicator's matrix, each cell "messages/bytes".
func (p *printer) commMatrix(cm report.CommMatrixOn) {
	t := newTable()
	head := table.Row{""}
	for _, r := range cm.Ranks {
		head = append(head, r)
	}
	t.AppendHeader(head)
	for i, row := range cm.Messages {
		r := table.Row{cm.Ranks[i]}
		for j, x := range row {
			r = append(r, fmt.Sprintf("%d/%d", x, cm.Bytes[i][j]))
		}
		t.AppendRow(r)
	}
	t.SetColumnConfigs(rightAligned(1, len(cm.Ranks)+1))
	p.emit(t, "")
}

func (p *printer) matrix(v [][]int64) {
	t := newTable()
	head := table.Row{""}
	for j := range v {
		head = append(head, j)
	}
	t.AppendHeader(head)
	for i, row := range v {
		r := table.Row{i}
		for _, x := range row {
			r = append(r, x)
		}
		t.AppendRow(r)
	}
	t.SetColumnConfigs(rightAligned(1, len(v)+1))
	p.emit(t, "")
}
