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
	p.printf("MPI:     %s\n", orNotRecorded(ru.MPI))
	p.printf("Start:   %s\n", orNotRecorded(ru.Start))
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
// to MaxMatrixRanks processors) and the node traffic.
func (p *printer) profile(iv *report.Interval) {
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
	m := iv.CommMatrix
	if m == nil {
		return
	}
	if !p.opts.NoPerProcessor && len(m.Messages) <= MaxMatrixRanks {
		p.printf("\n--- Messages sent (row: sender, column: receiver) ---\n")
		p.matrix(m.Messages)
		p.printf("\n--- Bytes sent (row: sender, column: receiver) ---\n")
		p.matrix(m.Bytes)
	}
	if tr := iv.Traffic; tr != nil {
		p.printf("\nNode traffic: intra-node %d messages %d bytes, inter-node %d messages %d bytes\n",
			tr.IntraNode.Messages, tr.IntraNode.Bytes, tr.InterNode.Messages, tr.InterNode.Bytes)
	}
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
