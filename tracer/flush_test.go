package tracer_test

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// flushStatsRE reads the hand-over statistics the tracer writes in the
// footer message: its own measurement of the time the program spent
// handing buffers over, largest and mean.
var flushStatsRE = regexp.MustCompile(`max flush stall (\d+) ns, mean (\d+) ns over (\d+) flushes`)

// TestFlushInsideCalls checks that buffer hand-overs are charged to the MPI
// call that triggered them, never to the program's own time after it.
//
// In the first two cases, flushgap makes 40000 cheap calls in a tight loop with TraceBufSize=256K
// and the tracer told to wait for free buffers (DT_FULL_WAIT_NS=-1):
// four 64 KB buffers, a hand-over every ~2300 calls, and with the encoder at
// the lowest priority the loop often waits for a free buffer (stalls of
// 0.1 to tens of ms; a bare call takes ~100 ns). Each handed-over buffer is
// one batch of the trace (the compaction told not to join them,
// DT_COMPACT_JOIN=0), and the call that triggered a hand-over is the
// first event of the next batch. The program times every call itself: the
// trace must show each such call at least as long as the program saw it
// (less the wrapper's ~100 ns outside its timestamps), i.e. the stall
// inside the call. Before the fix (exit timestamp taken before the
// hand-over) they showed as ~10 ns calls followed by a gap of the stall.
//
// A call can also be descheduled in the few instructions between the
// program's clock read and the wrapper's timestamp, which the trace cannot
// show: a call counts as held when the trace shows at least half of it, and
// up to half of them (at least 2) may still fail: with 4 ranks on 2 busy
// cores a quarter failed now and then (once in a full suite run, session 3).
// Before the fix every call that stalled failed, so half still tells the
// two apart.
//
// Not checked: the encoder itself preempting the program later (it runs
// on whatever core is free, or takes the rank's: ~50 ns per event, seen
// here as ~120 µs every few hundred µs of loop under MPICH); see README.
func TestFlushInsideCalls(t *testing.T) {
	mpich := []string{"-n", "4"}
	for _, c := range []struct {
		name, cc    string
		launch      []string
		calls, gap  int // gap: ns the program spins between calls
		env         []string
		minHandOver int
	}{
		// Buffers filling up, the loop waiting for free ones.
		// DT_FULL_WAIT_NS=-1 (the default, explicit here): wait for a free
		// buffer rather than drop calls (TestDropWhenEncoderBehind), so that
		// every call is in the trace and the loop waits inside the calls.
		// DT_COMPACT_JOIN=0: a batch per buffer handed over, as the test
		// reads the hand-overs.
		{"full/openmpi", ompi, oversub, 40000, 0, []string{"TraceBufSize=256K", "DT_WRITER_NICE=19", "DT_FULL_WAIT_NS=-1", "DT_COMPACT_JOIN=0"}, 10},
		{"full/mpich", "mpicc.mpich", mpich, 40000, 0, []string{"TraceBufSize=256K", "DT_WRITER_NICE=19", "DT_FULL_WAIT_NS=-1", "DT_COMPACT_JOIN=0"}, 10},
		// The periodic hand-over (every 200 ms) of partly filled buffers:
		// 1000 calls 0.6 ms apart fill no buffer.
		{"periodic/openmpi", ompi, oversub, 1000, 600000, []string{"DT_COMPACT_JOIN=0"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog := build(t, "flushgap", c.cc)
			dir := t.TempDir()
			calls := c.calls
			res := dtrun(t, dir, c.env, append(c.launch[:len(c.launch):len(c.launch)], prog, strconv.Itoa(calls), strconv.Itoa(c.gap))...)
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.out)
			}
			trs := readTraces(t, dir, "flushgap", 4)
			checkComplete(t, trs)
			for r, tr := range trs {
				m := flushStatsRE.FindStringSubmatch(tr.footer.GetMessage())
				if m == nil {
					t.Fatalf("rank %d: no flush statistics in the footer message %q", r, tr.footer.GetMessage())
				}
				maxStall, _ := strconv.ParseInt(m[1], 10, 64)
				meanStall, _ := strconv.ParseInt(m[2], 10, 64)
				flushes, _ := strconv.ParseInt(m[3], 10, 64)

				raw, err := os.ReadFile(filepath.Join(dir, "flushgap."+strconv.Itoa(r)+".times"))
				if err != nil || len(raw) != 16*calls {
					t.Fatalf("rank %d: program timing: %d bytes, %v", r, len(raw), err)
				}
				own := func(i int) int64 { return int64(binary.LittleEndian.Uint64(raw[8*i:])) }
				first := batchStarts(t, filepath.Join(dir, "flushgap."+strconv.Itoa(r)+".trc"))
				var loop []traceformat.Event
				var starts []bool
				for i, e := range tr.events {
					if tr.name(e) == "MPI_Comm_size" {
						loop = append(loop, e)
						starts = append(starts, first[i])
					}
				}
				if len(loop) != calls {
					t.Fatalf("rank %d: %d MPI_Comm_size events, want %d", r, len(loop), calls)
				}
				n, held := 0, 0
				var shown, seen int64
				for i, e := range loop {
					if !starts[i] {
						continue
					}
					n++
					mine, got := own(2*i+1)-own(2*i), e.Exit-e.Entry
					shown += got
					seen += mine
					if got >= mine-wrapperSlack || 2*got >= mine {
						held++
					} else if testing.Verbose() {
						t.Logf("rank %d call %d: %d ns by the program's clock, %d ns in the trace, gap before %d ns, after %d ns",
							r, i, mine, got, e.Entry-loop[max(i-1, 0)].Exit, loop[min(i+1, calls-1)].Entry-e.Exit)
					}
				}
				t.Logf("rank %d: %d flushes stalled %.3f ms in all (longest %.3f ms); %d calls handed a buffer over in the loop, "+
					"%.3f ms by the program's clock, %.3f ms in the trace; %d of them held",
					r, flushes, float64(meanStall*flushes)/1e6, float64(maxStall)/1e6, n, float64(seen)/1e6, float64(shown)/1e6, held)
				if n < c.minHandOver {
					t.Errorf("rank %d: %d hand-overs in the loop, want at least %d", r, n, c.minHandOver)
				}
				if held < n-max(2, n/2) {
					t.Errorf("rank %d: only %d of the %d calls that handed a buffer over last in the trace as long as the program saw them: flushes charged to the program", r, held, n)
				}
			}
		})
	}
}

// TestDropWhenEncoderBehind: with DT_FULL_WAIT_NS=0 a thread that finds no
// free buffer does not wait for the encoder but drops its calls until one is
// free (README, "When the encoder cannot keep up"; the default waits). flushgap's tight loop with
// four 64 KB buffers and the encoder at the lowest priority outruns the
// encoder: every call is either in the trace or counted in the footer's
// dropped_events (whether any is dropped depends on timing: not asserted),
// the footer says so, the trace stays readable and the program unharmed.
func TestDropWhenEncoderBehind(t *testing.T) {
	const calls = 40000
	prog := build(t, "flushgap", ompi)
	dir := t.TempDir()
	res := dtrun(t, dir, []string{"TraceBufSize=256K", "DT_WRITER_NICE=19", "DT_FULL_WAIT_NS=0"}, append(oversub, prog, strconv.Itoa(calls), "0")...)
	if res.code != 0 || !strings.Contains(res.out, "flushgap done") {
		t.Fatalf("exit %d\n%s", res.code, res.out)
	}
	trs := readTraces(t, dir, "flushgap", 4)
	checkComplete(t, trs)
	for r, tr := range trs {
		// Besides the loop: MPI_Init, MPI_Comm_rank, two MPI_Barrier, MPI_Finalize.
		got, dropped := uint64(len(tr.events)), tr.footer.GetDroppedEvents()
		if got+dropped != calls+5 {
			t.Errorf("rank %d: %d events + %d dropped, want %d calls", r, got, dropped, calls+5)
		}
		if dropped > 0 && !strings.Contains(tr.footer.GetMessage(), "calls dropped in") {
			t.Errorf("rank %d: %d calls dropped but the footer message does not say so: %q", r, dropped, tr.footer.GetMessage())
		}
		t.Logf("rank %d: %d events, %d dropped; %s", r, got, dropped, tr.footer.GetMessage())
	}
}

// slotsRE reads from a rank's footer message the aux thread's wake-ups and
// the spill slots made (all, and those a program thread made in a hand-over).
var slotsRE = regexp.MustCompile(`(\d+) wake-ups, (\d+) spill slots made \((\d+) in hand-overs\)`)

// TestSpillSlotsFollowPace: the aux thread makes spill slots ahead of need
// only as many as the program's pace of hand-overs needs (dt_spill.c). The
// program hands a 4 KB buffer over every few ms (flushgap, a call every
// 20 µs): the encoder keeps up and gives them back, so a handful of slots
// serve the whole run, where keeping 32 free made at least 32. Every call
// is in the trace.
func TestSpillSlotsFollowPace(t *testing.T) {
	const calls = 15000
	prog := build(t, "flushgap", ompi)
	dir := t.TempDir()
	res := dtrun(t, dir, []string{"DT_BUF_CHUNK=4096", "DT_COMPACT_JOIN=0"}, "-np", "2", prog, strconv.Itoa(calls), "20000")
	if res.code != 0 || !strings.Contains(res.out, "flushgap done") {
		t.Fatalf("exit %d\n%s", res.code, res.out)
	}
	trs := readTraces(t, dir, "flushgap", 2)
	checkComplete(t, trs)
	for r, tr := range trs {
		if got := len(tr.events); got != calls+5 { // and MPI_Init, MPI_Comm_rank, two MPI_Barrier, MPI_Finalize
			t.Errorf("rank %d: %d events, want %d", r, got, calls+5)
		}
		m := slotsRE.FindStringSubmatch(tr.footer.GetMessage())
		f := flushStatsRE.FindStringSubmatch(tr.footer.GetMessage())
		if m == nil || f == nil {
			t.Fatalf("rank %d: no slot or flush figures in the footer message %q", r, tr.footer.GetMessage())
		}
		made, _ := strconv.Atoi(m[2])
		flushes, _ := strconv.Atoi(f[3])
		t.Logf("rank %d: %d flushes, %d slots made (%s in hand-overs), %s aux wake-ups", r, flushes, made, m[3], m[1])
		if flushes < 40 {
			t.Errorf("rank %d: %d hand-overs, want at least 40 for the test to mean anything", r, flushes)
		}
		// A few ahead, plus what the encoder had queued at its worst: on a
		// busy machine it lags by some buffers.
		if made > 16 {
			t.Errorf("rank %d: %d spill slots made for %d hand-overs spread over the run, want at most 16", r, made, flushes)
		}
	}
}

// wrapperSlack is what the wrapper and the program's clock reads add to a
// call outside the trace's entry and exit times (~100 ns).
const wrapperSlack = 1000 // ns

// batchStarts reads the trace at path batch by batch and tells, for each
// event in file order, whether it starts a batch other than the first.
func batchStarts(t *testing.T, path string) []bool {
	t.Helper()
	r, closeFile := openTrace(t, path)
	defer closeFile()
	var starts []bool
	for nb := 0; ; nb++ {
		b, err := r.ReadBatch()
		if errors.Is(err, io.EOF) {
			return starts
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Len(); i++ {
			starts = append(starts, i == 0 && nb > 0)
		}
	}
}

// TestEncoderBatches: under dtrun (buffers are spill slots) the encoder is
// woken once per batch of buffers, not polling: a ping-pong that hands over
// ~300 buffers per rank (1 M calls) must see the encoder sleep far fewer
// times than it hands buffers over (it slept ~2.8 times per buffer when it
// polled; ~0.12 with batches of 8, and the bound leaves room for the nudges
// a loaded machine adds). The footer's message gives both counts.
func TestEncoderBatches(t *testing.T) {
	prog := build(t, "bench", ompi)
	dir := t.TempDir()
	dtrunOK(t, dir, []string{"UserStackSize=1"}, "-np", "2", "--oversubscribe", prog, "pingpong", "100000")
	trs := readTraces(t, dir, "bench", 2)
	checkComplete(t, trs)
	for r, tr := range trs {
		f, s := stallRE.FindStringSubmatch(tr.footer.Message), auxRE.FindStringSubmatch(tr.footer.Message)
		if f == nil || s == nil {
			t.Fatalf("rank %d: footer %q", r, tr.footer.Message)
		}
		flushes, _ := strconv.Atoi(f[3])
		sleeps, _ := strconv.Atoi(s[1])
		t.Logf("rank %d: %d hand-overs, encoder slept %d times", r, flushes, sleeps)
		if flushes < 100 || 2*sleeps >= flushes {
			t.Errorf("rank %d: %d hand-overs, encoder slept %d times: want batches (fewer than half as many sleeps)", r, flushes, sleeps)
		}
	}
}

// TestBenchBare: with DT_BENCH_BARE=1 (BenchmarkOverhead's floor) the
// wrappers record nothing after MPI_Init and count each call as dropped,
// and the trace still ends as usual.
func TestBenchBare(t *testing.T) {
	prog := build(t, "bench", ompi)
	dir := t.TempDir()
	dtrunOK(t, dir, []string{"DT_BENCH_BARE=1"}, "-np", "2", "--oversubscribe", prog, "cheap", "10000")
	for r, tr := range readTraces(t, dir, "bench", 2) {
		if tr.err != nil || tr.footer.GetStopReason() != tracepb.Footer_FINALIZE {
			t.Fatalf("rank %d: %v, footer %v", r, tr.err, tr.footer)
		}
		// MPI_Init alone is recorded; the loops' 5 × 10000 MPI_Comm_rank
		// are dropped, with the few calls around them.
		if n, d := len(tr.events), tr.footer.GetDroppedEvents(); n > 2 || d < 50000 || d > 50100 {
			t.Errorf("rank %d: %d events recorded, %d dropped: want MPI_Init only and ~50000 dropped", r, n, d)
		}
	}
}
