package trpa

import (
	"math/rand/v2"
	"testing"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// randomTable is a table of random cells of the kinds the report prints
// (text with spaces anywhere, empty cells, integers), rows of random
// lengths, random headers and column alignments.
func randomTable(rng *rand.Rand) *textTable {
	t := newTable()
	t.separateHeader = rng.IntN(2) == 0
	cell := func() any {
		switch rng.IntN(6) {
		case 0:
			return ""
		case 1:
			return rng.IntN(2000) - 1000
		case 2:
			return int64(rng.IntN(1 << 40))
		}
		const chars = "  ab-#0.9/_x"
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	row := func() table.Row {
		r := make(table.Row, rng.IntN(6))
		for i := range r {
			r[i] = cell()
		}
		return r
	}
	for range rng.IntN(3) {
		t.AppendHeader(row())
	}
	for range rng.IntN(6) {
		t.AppendRow(row())
	}
	aligns := []text.Align{text.AlignDefault, text.AlignLeft, text.AlignRight}
	var cc []table.ColumnConfig
	for range rng.IntN(5) {
		cc = append(cc, table.ColumnConfig{Number: 1 + rng.IntN(6), Align: aligns[rng.IntN(3)], AlignHeader: aligns[rng.IntN(3)]})
	}
	if rng.IntN(2) == 0 {
		cc = append(cc, rightAligned(1+rng.IntN(3), 1+rng.IntN(6))...)
	}
	t.SetColumnConfigs(cc)
	return t
}

// The tables render as go-pretty renders them in the report's style, on
// random tables of the cells render takes itself.
func TestTableMatchesGoPretty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		tb := randomTable(rng)
		got, ok := tb.render()
		if !ok {
			t.Fatalf("table %d: not rendered without go-pretty", i)
		}
		if want := tb.goPretty().Render(); got != want {
			t.Fatalf("table %d (header %q rows %q configs %+v separate header %v):\ngot\n%q\nwant\n%q",
				i, tb.header, tb.rows, tb.configs, tb.separateHeader, got, want)
		}
	}
}

// Cells render leaves to go-pretty: go-pretty lays them out.
func TestTableOtherCells(t *testing.T) {
	for _, c := range []any{"tab\there", "two\nlines", "wide 幅", "esc \x1b[1m", 1.5, uint8(3), struct{}{}} {
		tb := newTable()
		tb.AppendHeader(table.Row{"a", "b"})
		tb.AppendRow(table.Row{c, 7})
		tb.AppendRow(table.Row{"x", "yy"})
		if _, ok := tb.render(); ok {
			t.Errorf("%q rendered without go-pretty", c)
		}
		if got, want := tb.Render(), tb.goPretty().Render(); got != want {
			t.Errorf("%q: got %q, want %q", c, got, want)
		}
	}
}
