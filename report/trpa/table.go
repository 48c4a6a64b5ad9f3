package trpa

import (
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// textTable is a table in the report's plain ASCII style: no outer
// border, a dashed line under the header (unless separateHeader is
// off), two spaces after every column, headers as written, no trailing
// spaces. It is laid out as go-pretty lays such a table out (rendered by
// go-pretty itself, goPretty, when a cell is anything but printable ASCII
// text or an integer), without go-pretty's cost per table: a report has
// several tables per call site, and go-pretty's set-up of each (styles,
// maps, row copies) outweighs laying out its few rows.
// TestTableMatchesGoPretty compares the two on random tables.
type textTable struct {
	header         []table.Row
	rows           []table.Row
	configs        []table.ColumnConfig
	separateHeader bool
}

// newTable returns an empty table with a dashed line under its header.
func newTable() *textTable { return &textTable{separateHeader: true} }

// AppendHeader adds a header row.
func (t *textTable) AppendHeader(r table.Row) { t.header = append(t.header, r) }

// AppendRow adds a row.
func (t *textTable) AppendRow(r table.Row) { t.rows = append(t.rows, r) }

// SetColumnConfigs sets the columns' alignments (go-pretty's column
// configurations by Number).
func (t *textTable) SetColumnConfigs(cc []table.ColumnConfig) { t.configs = cc }

// Render lays the table out, lines joined by newlines, with no newline at
// the end ("" for a table without columns).
func (t *textTable) Render() string {
	if s, ok := t.render(); ok {
		return s
	}
	return t.goPretty().Render()
}

// goPretty is the table as a go-pretty table in the report's style.
func (t *textTable) goPretty() table.Writer {
	w := table.NewWriter()
	st := table.StyleDefault
	st.Options = table.OptionsNoBordersAndSeparators
	st.Options.SeparateHeader = t.separateHeader
	st.Box.PaddingLeft = ""
	st.Box.PaddingRight = "  "
	st.Format.Header = text.FormatDefault
	w.SetStyle(st)
	w.SuppressTrailingSpaces()
	for _, r := range t.header {
		w.AppendHeader(r)
	}
	for _, r := range t.rows {
		w.AppendRow(r)
	}
	w.SetColumnConfigs(t.configs)
	return w
}

// cellText is a cell as go-pretty prints it, and whether it is a number
// (go-pretty aligns columns of numbers to the right); ok is false for a
// cell that render leaves to go-pretty: a type other than a string or an
// integer, or a string with a byte outside printable ASCII (tabs,
// newlines, escape sequences and wide characters, which go-pretty
// expands, splits or measures).
func cellText(c any) (s string, num, ok bool) {
	switch v := c.(type) {
	case string:
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return "", false, false
			}
		}
		return v, false, true
	case int:
		return strconv.Itoa(v), true, true
	case int32:
		return strconv.FormatInt(int64(v), 10), true, true
	case int64:
		return strconv.FormatInt(v, 10), true, true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true, true
	case uint64:
		return strconv.FormatUint(v, 10), true, true
	}
	return "", false, false
}

// render is Render without go-pretty, for tables whose cells cellText
// takes; ok is false for the others.
func (t *textTable) render() (string, bool) {
	// Cells as text; a column is numeric when every body cell in it is a
	// number (header cells do not count).
	cols := 0
	var nonNumeric []bool
	strs := func(rows []table.Row, body bool) ([][]string, bool) {
		out := make([][]string, len(rows))
		for i, r := range rows {
			if len(r) > cols {
				cols = len(r)
				for len(nonNumeric) < cols {
					nonNumeric = append(nonNumeric, false)
				}
			}
			out[i] = make([]string, len(r))
			for j, c := range r {
				s, num, ok := cellText(c)
				if !ok {
					return nil, false
				}
				if body && !num {
					nonNumeric[j] = true
				}
				out[i][j] = s
			}
		}
		return out, true
	}
	body, ok := strs(t.rows, true)
	if !ok {
		return "", false
	}
	head, ok := strs(t.header, false)
	if !ok || cols == 0 {
		return "", ok
	}
	width := make([]int, cols)
	for _, rows := range [][][]string{head, body} {
		for _, r := range rows {
			for j, s := range r {
				width[j] = max(width[j], len(s))
			}
		}
	}
	// Alignment: the column's configuration (the last one naming it),
	// else right for numeric columns and left for the others.
	cfg := map[int]table.ColumnConfig{}
	for _, c := range t.configs {
		if c.Number <= 0 {
			return "", false // configured by name: go-pretty's business
		}
		cfg[c.Number-1] = c
	}
	right := func(j int, header bool) (bool, bool) {
		a := text.AlignDefault
		if c, ok := cfg[j]; ok {
			a = c.Align
			if header {
				a = c.AlignHeader
			}
		}
		switch a {
		case text.AlignDefault:
			return !nonNumeric[j], true
		case text.AlignLeft:
			return false, true
		case text.AlignRight:
			return true, true
		}
		return false, false
	}
	var out []byte
	lines := 0
	newLine := func() int {
		if lines > 0 {
			out = append(out, '\n')
		}
		lines++
		return len(out)
	}
	line := func(r []string, header bool) bool {
		if len(r) == 0 {
			return true // go-pretty prints no line for an empty row
		}
		start := newLine()
		for j := range cols {
			s := ""
			if j < len(r) {
				s = r[j]
			}
			rt, ok := right(j, header)
			if !ok {
				return false
			}
			if rt {
				s = strings.TrimLeft(s, " ")
				out = pad(out, width[j]-len(s))
				out = append(out, s...)
			} else {
				s = strings.TrimRight(s, " ")
				out = append(out, s...)
				out = pad(out, width[j]-len(s))
			}
			out = append(out, "  "...)
		}
		// No trailing spaces (the line is ASCII: spaces are the only
		// white space in it).
		for len(out) > start && out[len(out)-1] == ' ' {
			out = out[:len(out)-1]
		}
		return true
	}
	for _, r := range head {
		if !line(r, true) {
			return "", false
		}
	}
	if len(head) > 0 && t.separateHeader {
		newLine()
		for j := range cols {
			for range width[j] + 2 {
				out = append(out, '-')
			}
		}
	}
	for _, r := range body {
		if !line(r, false) {
			return "", false
		}
	}
	return string(out), true
}

// pad appends n spaces to b (none for n ≤ 0).
func pad(b []byte, n int) []byte {
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	return b
}
