package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/otf2"
	"github.com/dtpa/dtpa/otf2/otf2test"
	"github.com/dtpa/dtpa/report"
)

// otf2Programs are the ground-truth programs whose archives
// TestOTF2Export checks, with the program arguments and environment of
// their runs (groundtruth with injected clock skew, so that the archive's
// times must be the aligned ones). allowed are the import warnings the
// round trip may give: mpiapi's intercommunicator collectives and
// neighbourhood collective have no OTF2 collective record (OTF2 has no
// MPI_ROOT/MPI_PROC_NULL roots nor neighbourhood operations), and the
// importer maps no intercommunicator (docs/characteristics.md §10).
var otf2Programs = []struct {
	name    string
	env     []string
	allowed []string
	exact   bool // every figure comes back (with a skewed clock, all but the gaps between calls)
}{
	{"groundtruth", []string{"DT_CLOCK_SKEW=" + clockSkew}, nil, true},
	{"edges_p2p", nil, nil, true},
	{"edges_intervals", nil, nil, true},
	{"mpiapi", nil, []string{"carry no collective record"}, false},
}

// TestOTF2Export traces every ground-truth program under both MPIs and
// writes it with dtpa --export otf2. otf2-print, libotf2's own reader,
// must accept the archive and list, per rank, one ENTER per MPI call the
// trace recorded (per function), and as many message records as the
// report counts sends and receives. dtpa's report of the archive must
// equal the report of the traces (checkRoundTrip).
func TestOTF2Export(t *testing.T) {
	if !otf2test.Available() {
		t.Skip("otf2-print is not installed (make deps)")
	}
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			for _, p := range otf2Programs {
				t.Run(p.name, func(t *testing.T) {
					dir := t.TempDir()
					exe := compile(t, m, dir, p.name)
					trace(t, m, dir, append([]string{"TMPDIR=" + dir}, p.env...), 4, exe)
					r, _ := analyse(t, dir, p.name)
					arch := exportOTF2(t, dir, p.name)
					a, err := otf2test.Print(filepath.Join(arch, otf2.ArchiveName))
					if err != nil {
						t.Fatal(err)
					}
					checkOTF2Counts(t, dir, p.name, r, a)
					checkRoundTrip(t, r, arch, p.allowed, p.exact)
				})
			}
		})
	}
}

// checkRoundTrip analyses the archive with dtpa (which imports it) and
// compares its report with r, the report of the traces
// (otf2test.CompareReports, every figure within one tick). Strict: the
// import reads everything the writer put in the archive (MPI_Pcontrol's
// arguments, nonblocking collectives), so the interval tree, every
// interval's and rank's execution, total and insufficient-parallelism
// time and every call count come back equal. The other differences are
// the residual ones of docs/characteristics.md §10 (SRC numbering,
// intercommunicator and neighbourhood collectives, gaps on the aligned
// clock) and are logged; a program marked exact has none but the gaps.
func checkRoundTrip(t *testing.T, r *report.Report, arch string, allowed []string, exact bool) {
	t.Helper()
	back, stderr := analyse(t, ".", arch)
	for _, w := range []string{"MPI_Pcontrol calls were recorded without their arguments", "carry no collective record",
		"carry no request", "internal error", "persistent requests found no persistent request"} {
		if strings.Contains(stderr, w) && !slices.Contains(allowed, w) {
			t.Errorf("round trip: dtpa warns %q: %s", w, stderr)
		}
	}
	if len(back.Intervals) != len(r.Intervals) {
		t.Errorf("round trip: %d intervals, the traces' report %d", len(back.Intervals), len(r.Intervals))
	}
	var residual []string
	for _, d := range otf2test.CompareReports(r, back) {
		if exact && !strings.HasPrefix(d, ".task:") && !gapDiff.MatchString(d) || strictDiff.MatchString(d) {
			t.Errorf("round trip: %s", d)
		} else if !strings.HasPrefix(d, ".task:") { // the archive's name
			residual = append(residual, d)
		}
	}
	if len(residual) > 0 {
		t.Logf("round trip: %d residual differences (docs/characteristics.md §10), the first: %s", len(residual), residual[0])
	}
}

// gapDiff matches the gaps between calls, measured on each rank's own
// clock in the traces and on the aligned one in the archive: they differ
// by the clock drift groundtruth's injected skew gives.
var gapDiff = regexp.MustCompile(`\.gap_(mean|median): `)

// strictDiff matches the differences checkRoundTrip does not allow: the
// interval tree, the time figures that depend only on the calls' times and
// the calls counted (collective_number is not: the instances of a
// persistent collective are lost with its binding, §10).
var strictDiff = regexp.MustCompile(`^\.intervals(: |\[\d+\]\.(path|level|number|exe_count|(main|ranks\[\d+\])\.(execution_time|total_time|insufficient_parallelism|processors|system_number|wait_number|system_time)|functions\[\d+\]\.(ranks\[\d+\]\.)?(calls|count|time)))`)

// exportOTF2 runs bin/dtpa --export otf2 on the traces of app in dir and
// returns the archive's directory.
func exportOTF2(t *testing.T, dir, app string) string {
	t.Helper()
	out := filepath.Join(dir, app+"-otf2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--export", "otf2", "-o", out, "--dir", dir, app)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dtpa --export otf2 %s: %v\n%s", app, err, b)
	}
	return out
}

// checkOTF2Counts compares the archive's records with the traces of app
// in dir (calls per function and rank, read here from the trace files)
// and with the report r of those traces (sends and receives per rank of
// the whole program). Collective records are fewer than the report's
// collective calls where OTF2 has no record for them (neighbourhood
// collectives, collectives on intercommunicators), never more.
func checkOTF2Counts(t *testing.T, dir, app string, r *report.Report, a *otf2test.Archive) {
	t.Helper()
	type key struct {
		rank uint64
		name string
	}
	enters := map[key]int{}  // by location
	records := map[key]int{} // by rank (its threads' locations together)
	for _, rec := range a.Records {
		if rec.Kind == "ENTER" {
			enters[key{rec.Location, rec.Region}]++
		}
		records[key{rec.Location & (1<<32 - 1), rec.Kind}]++
	}
	calls := 0
	for rank := 0; rank < 4; rank++ {
		// Each thread's calls on its location (thread t of rank r:
		// t<<32 | r).
		for th, want := range traceCallsByThread(t, filepath.Join(dir, app+"."+strconv.Itoa(rank)+".trc")) {
			loc := uint64(th)<<32 | uint64(rank)
			for fn, n := range want {
				calls += n
				if got := enters[key{loc, fn}]; got != n {
					t.Errorf("rank %d, thread %d: %d ENTER %s in the archive, the trace has %d calls", rank, th, got, fn, n)
				}
				delete(enters, key{loc, fn})
			}
		}
	}
	for k, n := range enters {
		t.Errorf("location %d: %d ENTER %s in the archive, none in the trace", k.rank, n, k.name)
	}
	if a.Kinds["ENTER"] != calls || a.Kinds["LEAVE"] != calls {
		t.Errorf("%d ENTER and %d LEAVE records for %d calls", a.Kinds["ENTER"], a.Kinds["LEAVE"], calls)
	}
	whole := r.Intervals[0]
	for _, rk := range whole.Ranks {
		l := uint64(rk.Rank)
		sends := records[key{l, "MPI_SEND"}] + records[key{l, "MPI_ISEND"}]
		// A cancelled receive is a receive of the report (posted) and an
		// MPI_REQUEST_CANCELLED of the archive (no message).
		recvs := records[key{l, "MPI_RECV"}] + records[key{l, "MPI_IRECV"}] + records[key{l, "MPI_REQUEST_CANCELLED"}]
		if int64(sends) != rk.SendNumber || int64(recvs) != rk.ReceiveNumber {
			t.Errorf("rank %d: %d send and %d receive records; the report counts %d sends and %d receives",
				rk.Rank, sends, recvs, rk.SendNumber, rk.ReceiveNumber)
		}
		colls := records[key{l, "MPI_COLLECTIVE_END"}] + records[key{l, "NON_BLOCKING_COLLECTIVE_COMPLETE"}]
		t.Logf("rank %d: %d sends, %d receives, %d collectives (report: %d collective calls)", rk.Rank, sends, recvs, colls, rk.CollectiveNumber)
		if colls == 0 || int64(colls) > rk.CollectiveNumber+int64(records[key{l, "NON_BLOCKING_COLLECTIVE_COMPLETE"}]) {
			t.Errorf("rank %d: %d collective records; the report counts %d collective calls", rk.Rank, colls, rk.CollectiveNumber)
		}
	}
	if a.Kinds["MPI_COLLECTIVE_BEGIN"] != a.Kinds["MPI_COLLECTIVE_END"] ||
		a.Kinds["NON_BLOCKING_COLLECTIVE_REQUEST"] != a.Kinds["NON_BLOCKING_COLLECTIVE_COMPLETE"] ||
		a.Kinds["MPI_IRECV_REQUEST"] != a.Kinds["MPI_IRECV"]+a.Kinds["MPI_REQUEST_CANCELLED"] {
		t.Errorf("unpaired records: %v", a.Kinds)
	}
}
