package trpa

import (
	"bytes"
	"flag"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func render(t *testing.T, r *report.Report, opts Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, r, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestGolden renders the hand-built reports with the option sets the
// command line produces and compares with testdata/*.trpa.
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		rep  *report.Report
		opts Options
	}{
		{"full", reporttest.Full(), Options{}},
		{"full-wp", reporttest.Full(), Options{NoPerProcessor: true}},
		{"full-src20", reporttest.Full(), Options{SRC: []SRCListing{{Order: ByComm, Cut: 20}}}},
		{"full-srct10-wp", reporttest.Full(), Options{NoPerProcessor: true, SRC: []SRCListing{{Order: BySource, Cut: 10}}}},
		{"minimal", reporttest.Minimal(), Options{}},
		{"minimal-wp-src100-srct100", reporttest.Minimal(), Options{NoPerProcessor: true,
			SRC: []SRCListing{{Order: ByComm, Cut: 100}, {Order: BySource, Cut: 100}}}},
		{"wide12", reporttest.Wide(12), Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(t, tt.rep, tt.opts)
			reporttest.Golden(t, filepath.Join("testdata", tt.name+".trpa"), []byte(got), *update)
		})
	}
}

var srcHeader = regexp.MustCompile(`(?m)^SRC (\d+) `)

// srcIDs lists the call-site ids in the order printed, per interval.
func srcIDs(out string) [][]string {
	var ids [][]string
	for _, part := range strings.Split(out, "\nINTERVAL ")[1:] {
		var these []string
		for _, m := range srcHeader.FindAllStringSubmatch(part, -1) {
			these = append(these, m[1])
		}
		ids = append(ids, these)
	}
	return ids
}

// TestSRCOrderAndCut checks the -src/-srct semantics on the inner interval
// of Full, whose Communications is 1.4 s: Waitall 0.78 (55.7%), Allreduce
// 0.5 (35.7%), Irecv and Isend 0.06 each (4.3%).
func TestSRCOrderAndCut(t *testing.T) {
	inner := reporttest.Full()
	inner.Intervals = inner.Intervals[2:]
	tests := []struct {
		name string
		src  []SRCListing
		want [][]string
	}{
		{"default all by comm, ties by id", nil, [][]string{{"2", "3", "1", "4"}}},
		{"src 0 keeps all", []SRCListing{{ByComm, 0}}, [][]string{{"2", "3", "1", "4"}}},
		{"src 30", []SRCListing{{ByComm, 30}}, [][]string{{"2", "3"}}},
		{"src 35.8 stops before Allreduce", []SRCListing{{ByComm, 35.8}}, [][]string{{"2"}}},
		{"src 100", []SRCListing{{ByComm, 100}}, [][]string{nil}},
		{"srct 0 source order", []SRCListing{{BySource, 0}}, [][]string{{"4", "1", "2", "3"}}},
		{"srct 4 keeps all in source order", []SRCListing{{BySource, 4}}, [][]string{{"4", "1", "2", "3"}}},
		{"srct 30", []SRCListing{{BySource, 30}}, [][]string{{"2", "3"}}},
		{"both", []SRCListing{{ByComm, 30}, {BySource, 0}}, [][]string{{"2", "3", "4", "1", "2", "3"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := srcIDs(render(t, inner, Options{SRC: tt.src}))
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("SRC ids = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSRCCutWithoutCommunications: an interval with no communication time
// prints no point for a positive cut rather than every zero-time point.
func TestSRCCutWithoutCommunications(t *testing.T) {
	r := reporttest.Minimal()
	iv := &r.Intervals[0]
	iv.Main.Communications = 0
	iv.SRC[0].Comm = 0
	if got := srcIDs(render(t, r, Options{SRC: []SRCListing{{ByComm, 50}}})); got[0] != nil {
		t.Errorf("SRC ids = %v, want none", got)
	}
	if got := srcIDs(render(t, r, Options{})); len(got[0]) != 1 {
		t.Errorf("SRC ids = %v, want the one point without a cut", got)
	}
}

// TestSourceOrderWithoutFiles: points whose frames have no file sort after
// those with one, by id.
func TestSourceOrderWithoutFiles(t *testing.T) {
	a := &report.SRC{ID: 9, Stack: []report.Frame{{Function: "f"}}}
	b := &report.SRC{ID: 2}
	c := &report.SRC{ID: 5, Stack: []report.Frame{{}, {File: "z.c", Line: 1}}}
	s := []*report.SRC{a, b, c}
	slices.SortFunc(s, compareSource)
	if s[0] != c || s[1] != b || s[2] != a {
		t.Errorf("order = %d %d %d, want 5 2 9", s[0].ID, s[1].ID, s[2].ID)
	}
}

// TestNoPerProcessor: -wp removes the execution characteristics and the
// per-processor SRC tables, and nothing else.
func TestNoPerProcessor(t *testing.T) {
	full := render(t, reporttest.Full(), Options{})
	wp := render(t, reporttest.Full(), Options{NoPerProcessor: true})
	for _, s := range []string{"--- The execution characteristics ---", "Proc  ExeCount"} {
		if !strings.Contains(full, s) {
			t.Errorf("full report lacks %q", s)
		}
		if strings.Contains(wp, s) {
			t.Errorf("-wp report contains %q", s)
		}
	}
	for _, s := range []string{"--- The main characteristics ---", "--- The comparative characteristics ---",
		"--- The SRC characteristics ---", "#0 exchange_halo"} {
		if strings.Count(full, s) != strings.Count(wp, s) {
			t.Errorf("%q: %d times in full, %d with -wp", s, strings.Count(full, s), strings.Count(wp, s))
		}
	}
}

// TestRankOrientation: processors are columns up to RankColumns, rows
// beyond, and stay readable (bounded width) at 256 ranks.
func TestRankOrientation(t *testing.T) {
	cols := render(t, reporttest.Wide(8), Options{})
	if !strings.Contains(cols, "\nProcessor  ") {
		t.Errorf("8 ranks: want one column per processor")
	}
	rows := render(t, reporttest.Wide(9), Options{})
	if !strings.Contains(rows, "\nProc  ExeCount  Execution") {
		t.Errorf("9 ranks: want one row per processor")
	}
	if got := render(t, reporttest.Wide(9), Options{RankColumns: 9}); !strings.Contains(got, "\nProcessor  ") {
		t.Errorf("RankColumns 9: want columns")
	}
	big := render(t, reporttest.Wide(256), Options{})
	for i, line := range strings.Split(big, "\n") {
		if len(line) > 132 {
			t.Fatalf("256 ranks: line %d is %d wide: %s", i+1, len(line), line)
		}
	}
}

// TestZeroComponentsLeftOut: no sequential sections means no Insufficient
// parallelism line anywhere; MPI classes never called have no line.
func TestZeroComponentsLeftOut(t *testing.T) {
	out := render(t, reporttest.Minimal(), Options{})
	if strings.Contains(out, "Insufficient parallelism") {
		t.Errorf("minimal report shows Insufficient parallelism")
	}
	main := out[strings.Index(out, "--- The main"):strings.Index(out, "--- The comparative")]
	for _, s := range []string{"SendRecv time", "System time"} {
		if strings.Contains(main, s) {
			t.Errorf("minimal main characteristics show %q", s)
		}
	}
	if !strings.Contains(main, "    Collective time") {
		t.Errorf("minimal report lacks Collective time")
	}
	full := render(t, reporttest.Full(), Options{})
	if !strings.Contains(full, "  Insufficient parallelism") {
		t.Errorf("full report lacks Insufficient parallelism")
	}
}

// TestPrecision: seconds always have 6 decimals, efficiency 4 plus a
// percentage.
func TestPrecision(t *testing.T) {
	out := render(t, reporttest.Minimal(), Options{})
	for _, s := range []string{"Execution time              0.500000", "Parallelization efficiency    0.9975  (99.75%)"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// TestWarningsListed: the report lists the warnings at the top.
func TestWarningsListed(t *testing.T) {
	out := render(t, reporttest.Full(), Options{})
	w := strings.Index(out, "Warnings (2):\n  - rank 2: 3 messages")
	if w < 0 || w > strings.Index(out, "INTERVAL") {
		t.Errorf("warnings not listed before the first interval")
	}
	if strings.Contains(render(t, reporttest.Minimal(), Options{}), "Warnings") {
		t.Errorf("minimal report without warnings has a Warnings heading")
	}
}

// TestClockViolationsNotRepaired: a report whose clock-condition
// violations were all of the kinds not repaired (count 0) says so in one
// line, with no line for the repaired ones; without them, no line about
// them.
func TestClockViolationsNotRepaired(t *testing.T) {
	r := reporttest.Minimal()
	r.ClockViolations = &report.ClockViolations{Repaired: true, Unrepaired: 2, UnrepairedWorst: 0.00025, UnrepairedWorstRank: 1,
		UnrepairedThreaded: 2}
	out := render(t, r, Options{})
	want := "\nClock-condition violations not repaired: 2 (synchronous sends 0, nonblocking collectives 0, threaded collectives 2), worst 0.000250000 s on processor 1\n"
	if !strings.Contains(out, want) || strings.Contains(out, "Clock-condition violations: ") {
		t.Errorf("the header lacks %q, or has a line for repaired ones:\n%s", want, out[:strings.Index(out, "INTERVAL")])
	}
	r.ClockViolations = &report.ClockViolations{Count: 1, Worst: 0.001, Repaired: true}
	if out := render(t, r, Options{}); strings.Contains(out, "not repaired") {
		t.Errorf("a line about violations not repaired, with none:\n%s", out[:strings.Index(out, "INTERVAL")])
	}
}

// TestDoesNotModifyReport: rendering sorts copies, never the report.
func TestDoesNotModifyReport(t *testing.T) {
	r := reporttest.Full()
	before := render(t, r, Options{SRC: []SRCListing{{BySource, 0}}})
	ids := make([]int, 0)
	for _, s := range r.Intervals[0].SRC {
		ids = append(ids, s.ID)
	}
	want := []int{3, 1, 2, 4, 5, 6, 7}
	if !slices.Equal(ids, want) {
		t.Errorf("SRC order in the report changed to %v", ids)
	}
	if after := render(t, r, Options{SRC: []SRCListing{{BySource, 0}}}); after != before {
		t.Errorf("second rendering differs")
	}
}

// TestEmpty: a report with nothing in it still renders its header, and an
// interval nobody executed renders without per-processor or SRC sections.
func TestEmpty(t *testing.T) {
	out := render(t, &report.Report{Schema: report.Schema, Task: "x"}, Options{})
	if out != "dtpa performance report\nTask: x    Processors: 0    Intervals: 0\n" {
		t.Errorf("empty report:\n%s", out)
	}
	out = render(t, &report.Report{Task: "x", Intervals: []report.Interval{{Path: []int{3}, Level: 1, Number: 3}}}, Options{})
	for _, s := range []string{"INTERVAL 3  LEVEL=1  NUMBER=3  SOURCE=??  LINE=0  EXE_CNT=0", "--- The comparative characteristics ---"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"execution characteristics", "SRC characteristics"} {
		if strings.Contains(out, s) {
			t.Errorf("report has %q:\n%s", s, out)
		}
	}
}

// TestLateReceiverShown: the Late receiver part of Real Sync appears (main
// characteristics, execution characteristics, SRC point) only when some
// processor has one.
func TestLateReceiverShown(t *testing.T) {
	if out := render(t, reporttest.Full(), Options{}); strings.Contains(out, "Late receiver") {
		t.Errorf("a report without late receivers shows Late receiver")
	}
	r := reporttest.Full()
	iv := &r.Intervals[0]
	iv.Main.LateReceiver = 0.125
	iv.Ranks[0].LateReceiver = 0.125
	iv.SRC[0].LateReceiver = 0.125
	out := render(t, r, Options{})
	for _, s := range []string{"Real sync 0.420000  Late receiver 0.125000  Send", "  Late receiver           0.125000  0.000000", "    Late receiver  0.125000"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
}

// TestTrafficWithoutMatrix: an interval with comm_pairs and no dense
// matrix (a run past 1 024 ranks) still prints its node traffic, and no
// matrix.
func TestTrafficWithoutMatrix(t *testing.T) {
	r := reporttest.Full()
	n := 0
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		if iv.CommMatrix == nil {
			continue
		}
		n++
		iv.CommPairs = []report.CommPair{{Sender: 0, Receiver: 1, Messages: 10, Bytes: 81920}}
		iv.CommMatrix, iv.CommMatrices = nil, nil
	}
	if n == 0 {
		t.Fatal("no interval with a matrix in reporttest.Full")
	}
	out := render(t, r, Options{})
	if !strings.Contains(out, "Node traffic: intra-node 20 messages 163840 bytes, inter-node 30 messages 245760 bytes") {
		t.Errorf("no node traffic:\n%s", out)
	}
	if strings.Contains(out, "--- Messages sent") || strings.Contains(out, "--- Messages/bytes sent on") {
		t.Errorf("a matrix printed:\n%s", out)
	}
}
