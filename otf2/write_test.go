package otf2

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/internal/testenv"
	"github.com/dtpa/dtpa/otf2/otf2test"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	. "github.com/dtpa/dtpa/traceformat/tracetest"
)

// exportRun writes run's traces and exports them; it returns the archive
// as otf2-print lists it.
func exportRun(t *testing.T, run *Run) (*otf2test.Archive, ExportStats) {
	t.Helper()
	if !otf2test.Available() {
		t.Skip("otf2-print is not installed (make deps)")
	}
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "app-otf2")
	var warns []string
	st, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: out, Warn: func(s string) { warns = append(warns, s) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Logf("warning: %s", w)
	}
	a, err := otf2test.Print(filepath.Join(out, ArchiveName))
	if err != nil {
		t.Fatal(err)
	}
	return a, st
}

// mixedRun has one call of each kind the writer maps to its own records,
// with rank 1's clock 2.5 s ahead and 100 ppm fast: the archive must show
// rank 1 on rank 0's clock.
//
//	rank 0: Init [0, 1µs]; Pcontrol(100, 1) at 1 µs; Send to 1 (tag 7, 8 B)
//	        at 100.001 ms for 10 µs; Isend to 2 (tag 5, 32 B) [100.011,
//	        100.012]; Wait [100.012, 100.020]; Comm_split {0, 2}; Bcast
//	        root 0 on it; Barrier; Pcontrol(101, 1); Finalize
//	rank 1: Init; Recv from 0 [1 µs, 100.021 ms]; Test folded 3 polls;
//	        Barrier; Finalize
//	rank 2: Init; Irecv from 0 (tag 5) ; Waitall; Comm_split; Bcast; Barrier
func mixedRun() *Run { return mixedRunOf(true) }

// mixedRunOf is mixedRun, without the interval and the folded polls when
// marks is false.
func mixedRunOf(marks bool) *Run {
	run := NewRun(3)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	r1.Skew(2_500*MS, 100)
	for _, r := range []*Rank{r0, r1, r2} {
		r.Init(1 * US)
	}
	sub := run.NewComm(0, 2)
	if marks {
		r0.Pcontrol(100, 1)
	}
	r0.Compute(100*MS).Send(1, 7, 8, 10*US)
	q := r0.Isend(2, 5, 32, 1*US)
	r0.Wait(q, 8*US)
	r0.CommSplit(nil, sub, 5*US)
	r0.Bcast(0, 64, 3*US, On(sub))

	r1.Recv(0, 7, 8, 100*MS+20*US)
	q1 := r1.Irecv(2, 9, 4, 1*US)
	if marks {
		r1.Test(q1, false, 2*US, Folded(3))
	} else {
		r1.Test(q1, false, 2*US)
	}

	rq := r2.Irecv(0, 5, 32, 1*US)
	r2.Compute(100 * MS)
	r2.Waitall([]Req{rq}, 30*US)
	r2.Send(1, 9, 4, 1*US)
	r2.CommSplit(nil, sub, 5*US)
	r2.Bcast(0, 64, 3*US, On(sub))

	r1.Wait(q1, 5*US)
	end := max(r0.Now(), r1.Now(), r2.Now()) + 10*US
	for _, r := range []*Rank{r0, r1, r2} {
		r.Barrier(end - r.Now())
	}
	if marks {
		r0.Pcontrol(101, 1)
	}
	for _, r := range []*Rank{r0, r1, r2} {
		r.Finalize(1 * US)
	}
	return run
}

func TestExportRecords(t *testing.T) {
	run := mixedRun()
	a, st := exportRun(t, run)
	events := 0
	for i := 0; i < run.Size(); i++ {
		events += run.Rank(i).Events()
	}
	if a.Kinds["ENTER"] != events || a.Kinds["LEAVE"] != events || st.Calls != int64(events) {
		t.Errorf("%d ENTER, %d LEAVE, %d calls written; the traces hold %d calls", a.Kinds["ENTER"], a.Kinds["LEAVE"], st.Calls, events)
	}
	want := map[string]int{
		"MPI_SEND": 2, "MPI_RECV": 1, "MPI_ISEND": 1, "MPI_ISEND_COMPLETE": 1,
		"MPI_IRECV_REQUEST": 2, "MPI_IRECV": 2,
		"MPI_COLLECTIVE_BEGIN": 5, "MPI_COLLECTIVE_END": 5, // 2 Bcast, 3 Barrier
		"COMM_CREATE": 2,
	}
	for k, w := range want {
		if a.Kinds[k] != w {
			t.Errorf("%d %s records, want %d", a.Kinds[k], k, w)
		}
	}
	if st.Sends != 3 || st.Recvs != 3 || st.Colls != 5 {
		t.Errorf("stats: %d sends, %d receives, %d collectives; want 3, 3, 5", st.Sends, st.Recvs, st.Colls)
	}
	if int64(len(a.Records)) != st.Records {
		t.Errorf("otf2-print lists %d records, the writer wrote %d", len(a.Records), st.Records)
	}
	if a.Enters["MPI_Pcontrol"] != 2 || a.Enters["MPI_Bcast"] != 2 {
		t.Errorf("enters: %v", a.Enters)
	}
	// Rank 1's clock is undone: its MPI_Recv ends at 100.021 ms on rank
	// 0's clock, within one tick.
	var recvLeave, sendEnter uint64
	for _, r := range a.Records {
		switch {
		case r.Kind == "LEAVE" && r.Location == 1 && r.Region == "MPI_Recv":
			recvLeave = r.Time
		case r.Kind == "ENTER" && r.Location == 0 && r.Region == "MPI_Send":
			sendEnter = r.Time
		case r.Kind == "MPI_RECV":
			if !strings.Contains(r.Attrs, "Sender: 0") || !strings.Contains(r.Attrs, "Tag: 7") || !strings.Contains(r.Attrs, "Length: 8") {
				t.Errorf("MPI_RECV: %s", r.Attrs)
			}
		case r.Kind == "MPI_COLLECTIVE_END" && strings.Contains(r.Attrs, "BCAST"):
			if !strings.Contains(r.Attrs, "Root: 0") || !strings.Contains(r.Attrs, "Sent: 64") {
				t.Errorf("MPI_COLLECTIVE_END of the Bcast: %s", r.Attrs)
			}
		case r.Kind == "ENTER" && r.Region == "MPI_Test":
			if !strings.Contains(r.Attrs, `"dtpa::calls"`) || !strings.Contains(r.Attrs, "3") {
				t.Errorf("folded MPI_Test: %s", r.Attrs)
			}
		case r.Kind == "ENTER" && r.Region == "MPI_Pcontrol":
			if !strings.Contains(r.Attrs, `"dtpa::pcontrol_level"`) {
				t.Errorf("MPI_Pcontrol: %s", r.Attrs)
			}
		}
	}
	if d := int64(recvLeave) - (100*MS + 21*US); d < -1 || d > 1 {
		t.Errorf("rank 1's MPI_Recv leaves at %d ns, want 100021000 ± 1", recvLeave)
	}
	if sendEnter != uint64(100*MS+1*US) {
		t.Errorf("rank 0's MPI_Send enters at %d ns, want 100001000", sendEnter)
	}
	for _, s := range []string{"Ticks per Seconds: 1000000000", `"MPI Rank 2"`, `Type: COMM_GROUP`, `"MPI_COMM_WORLD"`, `Role: BARRIER`, `Role: POINT2POINT`, `Role: COLL_ONE2ALL`} {
		if !strings.Contains(a.Defs, s) {
			t.Errorf("definitions lack %s:\n%s", s, a.Defs)
		}
	}
}

// TestExportInnerGaps: a folded run's inner gaps go, as timer ticks on the
// global clock, into the attribute dtpa::inner_gaps of its ENTER record:
// rank 1's 899 100 ns, which its clock, 100 ppm fast, read as 899 190;
// MPI_Wtime's 5000 clamped to the 1000 ns since the previous call's exit;
// and none on the run traced without them (MPI_Comm_size), which keeps its
// dtpa::calls alone.
func TestExportInnerGaps(t *testing.T) {
	a, _ := exportRun(t, innerGapsRun(true))
	inner := regexp.MustCompile(`\("dtpa::inner_gaps" <\d+>; UINT64; (\d+)\)`)
	want := map[string]struct {
		calls      string
		inner, tol int64 // inner < 0: no attribute
	}{
		"MPI_Comm_rank": {"1000", 899_100, 1}, "MPI_Wtime": {"3", 1000, 1},
		"MPI_Iprobe": {"4", 3000, 0}, "MPI_Comm_size": {"3", -1, 0},
	}
	seen := 0
	for _, r := range a.Records {
		w, ok := want[r.Region]
		if r.Kind != "ENTER" || !ok {
			continue
		}
		seen++
		if !strings.Contains(r.Attrs, `("dtpa::calls" `) || !strings.Contains(r.Attrs, "; UINT32; "+w.calls+")") {
			t.Errorf("%s: %s; want dtpa::calls %s", r.Region, r.Attrs, w.calls)
		}
		m := inner.FindStringSubmatch(r.Attrs)
		if w.inner < 0 {
			if m != nil {
				t.Errorf("%s: %s; want no dtpa::inner_gaps", r.Region, r.Attrs)
			}
			continue
		}
		if m == nil {
			t.Errorf("%s: %s; want dtpa::inner_gaps %d", r.Region, r.Attrs, w.inner)
			continue
		}
		if v, _ := strconv.ParseInt(m[1], 10, 64); v < w.inner-w.tol || v > w.inner+w.tol {
			t.Errorf("%s: dtpa::inner_gaps %d, want %d ± %d", r.Region, v, w.inner, w.tol)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d folded runs found", seen, len(want))
	}
	if !strings.Contains(a.Defs, `"dtpa::inner_gaps"`) {
		t.Errorf("definitions lack dtpa::inner_gaps:\n%s", a.Defs)
	}
}

// TestExportOutExists: an archive is never written over a directory that
// holds something.
func TestExportOutExists(t *testing.T) {
	dir := t.TempDir()
	if _, err := mixedRun().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("export into a non-empty directory: %v", err)
	}
}

// lineSymbolizer gives every address of /tmp/app the frame app.c, line
// offset−0x1000 (the offsets TestExportSourceLocations chooses), and a
// frame without a file to the others.
type lineSymbolizer struct{}

func (lineSymbolizer) Symbolize(module string, offset uint64) []report.Frame {
	if module != "/tmp/app" || offset < 0x401000 {
		return []report.Frame{{Function: "inner"}}
	}
	return []report.Frame{{Function: "main", File: "app.c", Line: int(offset - 0x401000)}}
}

// sourceLocationsRun is a message between the two groups of an
// intercommunicator, sent from an address inside MPI (no file) above the
// program's line 42; rank 1 loads the program at another address.
func sourceLocationsRun() *Run {
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r1.LoadBias(0x10000)
	ic := run.NewInterComm([]int{0}, []int{1})
	for _, r := range []*Rank{r0, r1} {
		r.Init(1 * US)
		r.IntercommCreate(ic, 2*US)
	}
	r0.Send(0, 3, 8, 1*US, Site("send", 0x400100, 0x401000+42), On(ic.Of(0)))
	r1.Recv(0, 3, 8, 5*US, Site("recv", 0x401000+57), On(ic.Of(1)))
	for _, r := range []*Rank{r0, r1} {
		r.Finalize(1 * US)
	}
	return run
}

// TestExportSourceLocations: a call site is written as the source position
// of its innermost frame with a file (the symbolizer's), shared by ranks
// whose sites symbolize alike, and an intercommunicator as an InterComm
// whose messages name ranks of the remote group; rank 1 loads the program
// at another address.
func TestExportSourceLocations(t *testing.T) {
	if !otf2test.Available() {
		t.Skip("otf2-print is not installed (make deps)")
	}
	run := sourceLocationsRun()
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "otf2")
	if _, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: out, Symbolizer: lineSymbolizer{}}); err != nil {
		t.Fatal(err)
	}
	a, err := otf2test.Print(filepath.Join(out, ArchiveName))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range a.Records {
		switch {
		case r.Kind == "ENTER" && r.Region == "MPI_Send":
			if !strings.Contains(r.Attrs, `"app.c:42"`) {
				t.Errorf("MPI_Send: %s", r.Attrs)
			}
		case r.Kind == "ENTER" && r.Region == "MPI_Recv":
			if !strings.Contains(r.Attrs, `"app.c:57"`) {
				t.Errorf("MPI_Recv: %s", r.Attrs)
			}
		case r.Kind == "MPI_SEND", r.Kind == "MPI_RECV":
			if !strings.Contains(r.Attrs, "Communicator: \"Comm 0\"") {
				t.Errorf("%s not on the intercommunicator: %s", r.Kind, r.Attrs)
			}
		}
	}
	if a.Kinds["MPI_SEND"] != 1 || a.Kinds["MPI_RECV"] != 1 {
		t.Errorf("records: %v", a.Kinds)
	}
	if !strings.Contains(a.Defs, "INTER_COMM") {
		t.Errorf("no intercommunicator defined:\n%s", a.Defs)
	}
}

// TestExportOtherWorld: a communicator shared with another MPI world
// (traceformat.OtherWorld members: MPI_Intercomm_merge after
// MPI_Comm_spawn) has no OTF2 definition, as OTF2 cannot name those
// ranks: its calls are written as regions, without message or collective
// records that would name the wrong processes; the rest is written.
func TestExportOtherWorld(t *testing.T) {
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	merged := &Comm{ID: 77, Members: []int{-1, 0, 1}}
	for _, r := range []*Rank{r0, r1} {
		r.Init(1 * US)
		r.CommSplit(nil, merged, 5*US)
	}
	r0.Send(2, 5, 8, 10*US, On(merged))
	r1.Recv(1, 5, 8, 20*US, On(merged))
	r0.Send(1, 6, 8, 10*US) // on MPI_COMM_WORLD
	r1.Recv(0, 6, 8, 20*US)
	for _, r := range []*Rank{r0, r1} {
		r.Bcast(0, 8, 3*US, On(merged))
		r.Finalize(1 * US)
	}
	a, st := exportRun(t, run)
	if a.Kinds["ENTER"] != 12 || a.Kinds["MPI_SEND"] != 1 || a.Kinds["MPI_RECV"] != 1 || a.Kinds["MPI_COLLECTIVE_END"] != 0 {
		t.Errorf("%d ENTER, %d MPI_SEND, %d MPI_RECV, %d MPI_COLLECTIVE_END; want 12, 1, 1, 0 (only the messages on MPI_COMM_WORLD)",
			a.Kinds["ENTER"], a.Kinds["MPI_SEND"], a.Kinds["MPI_RECV"], a.Kinds["MPI_COLLECTIVE_END"])
	}
	if st.Sends != 1 || st.Recvs != 1 {
		t.Errorf("stats: %d sends, %d receives; want 1, 1", st.Sends, st.Recvs)
	}
}

// TestExportNoRoom: Export itself (dtpa-mpi's process 0 calls it in
// process) onto a file system without room for the archive: each flush
// of libotf2 is checked first (dtpa_w_pre_flush), so the export fails with
// one error instead of libotf2's crash after the failed write, and leaves
// nothing. Small archives still fit in the room a disk has left.
func TestExportNoRoom(t *testing.T) {
	full := testenv.Tmpfs(t, "256k", 0)
	dir := t.TempDir()
	run := NewRun(2)
	r0, r1 := run.Rank(0), run.Rank(1)
	r0.Init(1 * US)
	r1.Init(1 * US)
	for i := 0; i < 200000; i++ {
		r0.Compute(10*US).Send(1, 1, 8, 2*US)
		r1.Recv(0, 1, 8, 12*US)
	}
	r0.Finalize(1 * US)
	r1.Finalize(1 * US)
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	_, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: filepath.Join(full, "big")})
	if err == nil || !strings.Contains(err.Error(), "no room for the archive on the file system of "+full) {
		t.Errorf("exporting 400 000 events into 256 KB: %v", err)
	}
	if ents, _ := os.ReadDir(full); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
	small := t.TempDir()
	if _, err := mixedRun().WriteDir(small, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(context.Background(), ExportOptions{Dir: small, App: "app", Out: filepath.Join(full, "small")}); err != nil {
		t.Errorf("a small archive on the same file system: %v", err)
	}
}

// threadedRun: two ranks of MPI_THREAD_MULTIPLE (level 3), each with a
// second thread that exchanges a message with the other's, while the
// master threads exchange theirs. Rank 0's thread 1 starts an MPI_Irecv
// that its master thread completes (MPI_Wait), and its batch is recorded
// after its master thread's MPI_Finalize, as a buffer handed over at the
// end. At level, 1 (MPI_THREAD_FUNNELED) the same calls are recorded
// but the threads' are not replayed.
//
//	rank 0: thread 0: Init [0, 1µs]; Send to 1 (tag 0) at 50 ms; Wait for
//	        thread 1's Irecv [250, 250.01] ms; Finalize at 300 ms
//	        thread 1: Recv from 1 (tag 1) [1, 201.02] ms; Irecv from 1
//	        (tag 2) at 210 ms
//	rank 1: thread 0: Init; Recv from 0 (tag 0) at 60 ms; Finalize
//	        thread 1: Send to 0 (tag 1) at 201 ms; Send (tag 2) at 220 ms
func threadedRun(level uint32) *Run {
	run := NewRun(2)
	run.ThreadLevel = level
	r0, r1 := run.Rank(0), run.Rank(1)
	for _, r := range []*Rank{r0, r1} {
		r.Init(1 * US)
		r.Thread(1).Thread(0)
	}
	r0.At(50*MS).Send(1, 0, 8, 10*US)
	r1.At(60*MS).Recv(0, 0, 8, 10*US)
	r1.Thread(1).At(201*MS).Send(0, 1, 8, 10*US)
	r1.At(220*MS).Send(0, 2, 4, 10*US)
	r1.Thread(0).At(300 * MS).Finalize(US)
	r0.Thread(1).At(1*MS).Recv(1, 1, 8, 200*MS+20*US)
	q := r0.At(210*MS).Irecv(1, 2, 4, US)
	r0.Thread(0).At(250*MS).Wait(q, 10*US)
	r0.At(300 * MS).Finalize(US)
	return run
}

// TestExportThreads: each thread of a rank is a location of its own
// (t<<32 | rank, "Pthread thread t", in the rank's location group), with
// its calls and messages in time order; a receive completed by another
// thread than the one that started it is an MPI_RECV where it completed.
// Below MPI_THREAD_SERIALIZED only the master threads are written, as the
// analysis replays only theirs.
func TestExportThreads(t *testing.T) {
	a, st := exportRun(t, threadedRun(3))
	const t1 = 1 << 32
	locs := map[uint64]map[string]int{}
	last := map[uint64]uint64{}
	for _, r := range a.Records {
		if locs[r.Location] == nil {
			locs[r.Location] = map[string]int{}
		}
		k := r.Kind
		if k == "ENTER" {
			k += " " + r.Region
		}
		locs[r.Location][k]++
		if r.Time < last[r.Location] {
			t.Errorf("location %d goes back in time at %+v", r.Location, r)
		}
		last[r.Location] = r.Time
	}
	want := map[uint64]map[string]int{
		0:      {"ENTER MPI_Init": 1, "ENTER MPI_Send": 1, "MPI_SEND": 1, "ENTER MPI_Wait": 1, "MPI_RECV": 1, "ENTER MPI_Finalize": 1, "LEAVE": 4},
		t1:     {"ENTER MPI_Recv": 1, "MPI_RECV": 1, "ENTER MPI_Irecv": 1, "MPI_IRECV_REQUEST": 1, "LEAVE": 2},
		1:      {"ENTER MPI_Init": 1, "ENTER MPI_Recv": 1, "MPI_RECV": 1, "ENTER MPI_Finalize": 1, "LEAVE": 3},
		t1 | 1: {"ENTER MPI_Send": 2, "MPI_SEND": 2, "LEAVE": 2},
	}
	for loc, w := range want {
		for k, n := range w {
			if locs[loc][k] != n {
				t.Errorf("location %d: %d %s, want %d (all: %v)", loc, locs[loc][k], k, n, locs[loc])
			}
		}
	}
	if len(locs) != len(want) {
		t.Errorf("records on %d locations, want %d: %v", len(locs), len(want), locs)
	}
	if st.Calls != 11 || st.Sends != 3 || st.Recvs != 3 || st.Ranks != 2 {
		t.Errorf("stats %+v: want 11 calls, 3 sends, 3 receives, 2 ranks", st)
	}
	// The receive that rank 0's master thread completed carries thread
	// 1's Irecv's message (tag 2 from rank 1) at the Wait's exit.
	for _, r := range a.Records {
		if r.Kind == "MPI_RECV" && r.Location == 0 {
			if !strings.Contains(r.Attrs, "Sender: 1") || !strings.Contains(r.Attrs, "Tag: 2") || r.Time != uint64(250*MS+10*US) {
				t.Errorf("the Wait's receive: %+v", r)
			}
		}
	}
	for _, s := range []string{
		`LOCATION +4294967296  Name: "Pthread thread 1" <\d+>, Type: CPU_THREAD, # Events: 6, Group: "MPI Rank 0"`,
		`LOCATION +4294967297  Name: "Pthread thread 1" <\d+>, Type: CPU_THREAD, # Events: 6, Group: "MPI Rank 1"`,
		`LOCATION +0  Name: "Master thread" <\d+>, Type: CPU_THREAD, # Events: 10, Group: "MPI Rank 0"`,
	} {
		if !regexp.MustCompile(s).MatchString(a.Defs) {
			t.Errorf("definitions lack %s:\n%s", s, a.Defs)
		}
	}

	a, st = exportRun(t, threadedRun(1))
	for _, r := range a.Records {
		if r.Location > 1 {
			t.Fatalf("a thread's record at MPI_THREAD_FUNNELED: %+v", r)
		}
	}
	if strings.Contains(a.Defs, "Pthread") || st.Calls != 7 {
		t.Errorf("MPI_THREAD_FUNNELED: %d calls written, want the master threads' 7; definitions:\n%s", st.Calls, a.Defs)
	}
}

// unfinishedRun ends three of its four ranks in a call in progress, each
// as a footer tells it: rank 1 in MPI_Recv from 0x401000+77, 300 ms before
// the process ended (its clock skewed); rank 2 in MPI_Wait on its thread
// 1 (MPI_THREAD_MULTIPLE), killed with no end known; rank 3 in MPI_Send,
// alive when the job was interrupted 100 ms after its entry. Rank 0's
// MPI_Test returned true.
func unfinishedRun() *Run { return unfinishedRunOf(true) }

// unfinishedRunOf is unfinishedRun, rank 1's clock skewed when skew is
// true.
func unfinishedRunOf(skew bool) *Run {
	run := NewRun(4)
	run.ThreadLevel = 3
	var rs []*Rank
	for i := range 4 {
		r := run.Rank(i)
		r.Init(US)
		r.Compute(10 * MS).Barrier(MS)
		rs = append(rs, r)
	}
	// (A test that succeeded: its flag's value is an attribute too.)
	rs[0].Compute(5*MS).Call("MPI_Test", US, traceformat.Event{Attr: traceformat.AttrFlag, Flag: true}).Finalize(US)
	rs[1].Compute(2*MS).Unfinished(0, "MPI_Recv", rs[1].Now(), 0x401000+77).Compute(300 * MS).StopReason(tracepb.Footer_SIGNAL)
	if skew {
		rs[1].Skew(7*MS, 50)
	}
	rs[2].Compute(MS).Unfinished(1, "MPI_Wait", rs[2].Now(), 0).NoEndTime().StopReason(tracepb.Footer_SIGNAL)
	rs[3].Compute(3*MS).Unfinished(0, "MPI_Send", rs[3].Now(), 0).InterruptedAt(rs[3].Now() + 100*MS).StopReason(tracepb.Footer_SIGNAL)
	return run
}

// TestExportUnfinishedPython: a call in progress that C code below
// Python made (its return address in libffi, no line) has the source
// position of the thread's innermost Python frame with one.
func TestExportUnfinishedPython(t *testing.T) {
	if !otf2test.Available() {
		t.Skip("otf2-print is not installed (make deps)")
	}
	const py, lib = 0xF000000000000000, 0x7f0000000000
	run := NewRun(2)
	for i := range 2 {
		run.Rank(i).Modules(&tracepb.Module{Path: "/usr/lib/x86_64-linux-gnu/libffi.so.8", Start: lib, End: lib + 1<<24, LoadBias: lib},
			&tracepb.Module{Path: traceformat.SourceModulePrefix + "/home/u/app.py", Start: py, End: py + 1<<32, LoadBias: py}).
			Init(US).Compute(10 * MS).Barrier(MS)
	}
	run.Rank(0).Finalize(US)
	run.Rank(1).Compute(MS).Unfinished(0, "MPI_Barrier", run.Rank(1).Now(), lib+0x10).UnfinishedPython(py+27, py+40).
		Compute(100 * MS).StopReason(tracepb.Footer_SIGNAL)
	dir := t.TempDir()
	if _, err := run.WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "otf2")
	if _, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: out, Symbolizer: pyLineSymbolizer{}}); err != nil {
		t.Fatal(err)
	}
	a, err := otf2test.Print(filepath.Join(out, ArchiveName))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range a.Records {
		if r.Kind == "ENTER" && strings.Contains(r.Attrs, "dtpa::unfinished") {
			n++
			if !strings.Contains(r.Attrs, `"app.py:27"`) {
				t.Errorf("the call in progress's attributes %s, want the source position app.py:27", r.Attrs)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d calls in progress written, want 1", n)
	}
}

// pyLineSymbolizer names a source-file module's frame (a Python frame)
// by its file and line, and no other frame's file.
type pyLineSymbolizer struct{}

func (pyLineSymbolizer) Symbolize(module string, offset uint64) []report.Frame {
	if file, ok := strings.CutPrefix(module, traceformat.SourceModulePrefix); ok {
		return []report.Frame{{Function: "f", File: filepath.Base(file), Line: int(offset)}}
	}
	return []report.Frame{{Function: "inner"}}
}

// TestExportUnfinished: a call in progress when its process ended is an
// Enter at its entry and a Leave at the process's end (or when the job was
// interrupted, or at the Enter when nothing tells), on its thread's
// location, the Enter marked dtpa::unfinished with how the Leave was
// placed and the call's source position; it is not counted among the
// calls.
func TestExportUnfinished(t *testing.T) {
	if !otf2test.Available() {
		t.Skip("otf2-print is not installed (make deps)")
	}
	dir := t.TempDir()
	if _, err := unfinishedRun().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "otf2")
	st, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: out, Symbolizer: lineSymbolizer{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := otf2test.Print(filepath.Join(out, ArchiveName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Unfinished != 3 {
		t.Errorf("%d calls in progress written, want 3", st.Unfinished)
	}
	type span struct {
		enter, leave uint64
		attrs        string
	}
	got := map[string]*span{} // by location and region
	barrier := map[uint64]uint64{}
	for _, r := range a.Records {
		key := fmt.Sprintf("%d %s", r.Location, r.Region)
		switch {
		case r.Kind == "ENTER" && r.Region == "MPI_Barrier":
			barrier[r.Location] = r.Time
		case r.Kind == "ENTER" && strings.Contains(r.Attrs, "dtpa::unfinished"):
			got[key] = &span{enter: r.Time, attrs: r.Attrs}
		case r.Kind == "LEAVE" && got[key] != nil:
			got[key].leave = r.Time
		}
	}
	near := func(got, want uint64) bool { return got-want+2 <= 4 } // the skewed clock's rounding
	for _, w := range []struct {
		key         string
		loc         uint64
		after, dur  int64
		how, source string
	}{
		{"1 MPI_Recv", 1, 13*MS + US, 300 * MS, "1", `"app.c:77"`},
		{"4294967298 MPI_Wait", 2, 12*MS + US, 0, "3", ""},
		{"3 MPI_Send", 3, 14*MS + US, 100 * MS, "2", ""},
	} {
		s := got[w.key]
		if s == nil {
			t.Errorf("%s: not written (%v)", w.key, a.Kinds)
			continue
		}
		// The barrier entered 10 ms after MPI_Init's entry.
		if start := barrier[w.loc] - uint64(10*MS+US); !near(s.enter-start, uint64(w.after)) || !near(s.leave-s.enter, uint64(w.dur)) {
			t.Errorf("%s: [%d, %d] ns after MPI_Init, want %d for %d", w.key, s.enter-start, s.leave-start, w.after, w.dur)
		}
		if !strings.Contains(s.attrs, "UINT8; "+w.how+")") || (w.source != "") != strings.Contains(s.attrs, "app.c") ||
			(w.source != "" && !strings.Contains(s.attrs, w.source)) {
			t.Errorf("%s: attributes %s, want dtpa::unfinished %s and source %s", w.key, s.attrs, w.how, w.source)
		}
	}
	if len(got) != 3 {
		t.Errorf("calls in progress written: %v", got)
	}
}

// TestExportCrashMarks: a rank's crash is a marker of the archive (group
// "dtpa", category "Crash", severity high), at the moment on the global
// clock, on the crashed thread's location (its location group for a
// thread that never called MPI), its text the report's lines: rank 1's
// SIGSEGV on its skewed clock from the program's line 40, rank 2's
// abort() on a thread without MPI calls. otf2-marker, libotf2's own
// tool, lists them; dtpa-mpi writes the same (TestExportDist).
func TestExportCrashMarks(t *testing.T) {
	if _, err := exec.LookPath("otf2-marker"); err != nil {
		t.Skip("otf2-marker is not installed (make deps)")
	}
	dir := t.TempDir()
	if _, err := crashMarksRun().WriteDir(dir, "app"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "otf2")
	if _, err := Export(context.Background(), ExportOptions{Dir: dir, App: "app", Out: out, Symbolizer: lineSymbolizer{}}); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("otf2-marker", filepath.Join(out, ArchiveName)).CombinedOutput()
	if err != nil {
		t.Fatalf("otf2-marker: %v\n%s", err, b)
	}
	a, err := otf2test.Print(filepath.Join(out, ArchiveName))
	if err != nil {
		t.Fatal(err)
	}
	init := map[uint64]uint64{} // MPI_Init's entry by location
	for _, r := range a.Records {
		if r.Kind == "ENTER" && r.Region == "MPI_Init" {
			init[r.Location] = r.Time
		}
	}
	got := string(b)
	if !strings.Contains(got, `MARKER_DEF  Group: "dtpa", Category: "Crash", Severity: HIGH`) ||
		!strings.Contains(got, `MARKER_DEF  Group: "dtpa", Category: "End", Severity: MEDIUM`) {
		t.Errorf("no marker definitions of group dtpa, categories Crash (severity high) and End (medium):\n%s", got)
	}
	for _, w := range []struct {
		loc   uint64
		scope string
		after int64
		text  string
	}{
		{1, "LOCATION:1", 20 * MS, "rank 1 crashed: SIGSEGV (Segmentation fault), address not mapped (0x0)\nin main at app.c:40"},
		{2, "LOCATION_GROUP:2", 30 * MS, "rank 2 crashed: SIGABRT (Aborted), abort() called\nin inner"},
		{3, "LOCATION:3", 10*MS + US, "rank 3: had exited without MPI_Finalize (exit(3) from main at app.c:13)"},
		{4, "LOCATION:4", 25 * MS, "rank 4: in no MPI call (in main at app.c:50)"},
	} {
		re := regexp.MustCompile(`MARKER +Time: (\d+), Duration 0, Scope: ` + w.scope + `, Text: "` + regexp.QuoteMeta(w.text) + `"`)
		m := re.FindStringSubmatch(got)
		if m == nil {
			t.Errorf("otf2-marker lists no marker on %s with %q:\n%s", w.scope, w.text, got)
			continue
		}
		// (± the skewed clock's rounding; an exit is at the trace's end)
		if at, _ := strconv.ParseUint(m[1], 10, 64); at+2 < init[w.loc]+uint64(w.after) || at > init[w.loc]+uint64(w.after)+2 {
			t.Errorf("%s: the crash at %d, want %d (MPI_Init's entry %d + %d)", w.scope, at, init[w.loc]+uint64(w.after), init[w.loc], w.after)
		}
	}
}

// crashMarksRun: rank 1 (its clock skewed) crashes with SIGSEGV at the
// program's address 0x401000+40 on its thread 0, 20 ms after MPI_Init's
// entry; rank 2 calls abort() on a thread that never called MPI, 30 ms
// after; rank 3 calls exit(3) from the program's line 13 after its
// barrier; a signal finds rank 4 in no MPI call, at the program's line
// 50, 25 ms after; rank 0 ends normally.
func crashMarksRun() *Run {
	run := NewRun(5)
	var rs []*Rank
	for i := range 5 {
		r := run.Rank(i)
		r.Init(US).Barrier(10 * MS)
		rs = append(rs, r)
	}
	rs[1].Skew(4*MS, 30)
	rs[0].Finalize(US)
	rs[1].CrashedAt(rs[1].Now()+20*MS-10*MS-US, &tracepb.Crash{Signal: 11, Name: "SIGSEGV (Segmentation fault)", Code: 1, HasAddress: true, HasThread: true,
		Stack: []uint64{0x401000 + 40 - 1}})
	rs[2].CrashedAt(rs[2].Now()+30*MS-10*MS-US, &tracepb.Crash{Signal: 6, Name: "SIGABRT (Aborted)", Code: -6, Stack: []uint64{0x400100}})
	rs[3].Exited(&tracepb.ExitCall{Status: 3, HasStatus: true, HasThread: true, Stack: []uint64{0x401000 + 13}})
	rs[4].SignalledAt(rs[4].Now()+25*MS-10*MS-US, &tracepb.Crash{Signal: 15, Name: "SIGTERM (Terminated)", HasThread: true,
		Stack: []uint64{0x401000 + 50 - 1}})
	return run
}
