package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// stressRounds is how many rounds testdata/apps/stress.c runs: each
// creates and frees stressCommsPerRound communicators over the 4 ranks,
// so 10 rounds make at least 710, and the MPICH run (whose 4 ranks poll on two
// cores) stays within half a minute.
const stressRounds = 10

// stressCommsPerRound is the number of communicators a round of stress.c
// frees, summed over the 4 ranks, without the MPI 4 calls (which add 8).
const stressCommsPerRound = 71

// doneRE matches stress.c's last line: the communicators freed in all.
var doneRE = regexp.MustCompile(`stress: done, \d+ rounds, (\d+) communicators freed`)

// TestStress traces testdata/apps/stress.c (every MPI API family mixed,
// round after round, hundreds of communicators created and freed) under
// both MPIs: every operation must be matched, with no stall and no
// warning. Then it cuts copies of the traces (one rank's file, or two,
// truncated inside an event batch after about a third, a half, two thirds
// of its operations; the other ranks' complete) and checks that the
// analysis gives up only what the cuts lost, never cascading: the
// receives, sends and collective instances left unmatched are at most the
// partner operations recorded after the cut in the cut rank's complete
// trace, plus stressSlack per cut; every incomplete collective lacks only
// cut ranks; no request is "never created" and the replay never stalls.
func TestStress(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "stress")
			// Small buffers, each its own batch (DT_COMPACT_JOIN=0): many
			// event batches per rank, so that the cuts below fall between
			// batches whatever the run's speed.
			out := trace(t, m, dir, []string{"TMPDIR=" + dir, "DT_BUF_CHUNK=16384", "DT_COMPACT_JOIN=0"}, 4, exe, strconv.Itoa(stressRounds))
			done := doneRE.FindStringSubmatch(out)
			if done == nil {
				t.Fatalf("the program did not finish:\n%s", out)
			}
			if n, _ := strconv.Atoi(done[1]); n < stressCommsPerRound*stressRounds {
				t.Errorf("%d communicators freed, want at least %d", n, stressCommsPerRound*stressRounds)
			}
			r, stderr := analyse(t, dir, "stress")
			checkClean(t, r, stderr, false, -1)
			if n := len(r.Intervals); n != 4 {
				t.Errorf("%d intervals, want the whole program and 3", n)
			}
			for _, cuts := range [][]stressCut{{{2, 1, 2}}, {{1, 1, 3}}, {{3, 2, 3}}, {{0, 1, 2}}, {{1, 1, 2}, {3, 3, 4}}} {
				name := "cut"
				for _, c := range cuts {
					name += "_" + c.String()
				}
				t.Run(name, func(t *testing.T) { checkCut(t, dir, cuts...) })
			}
		})
	}
}

// stressSlack bounds the unmatched operations a cut causes beyond the
// partner operations it removes: the cut rank's requests started before
// the cut and completed after it, whose completion the analysis needs
// (stress.c never has more than 6 outstanding: the nonblocking
// collectives of extras), and an MPI_Mprobe kept whose MPI_Mrecv was cut.
const stressSlack = 8

// collLacksRE matches the warning about a collective some ranks lack.
var collLacksRE = regexp.MustCompile(`^Collective \S+ \(call .*\) lacks rank\(s\) ([0-9, ]+) `)

// moreCollsRE matches the count of the incomplete collective instances
// not described one by one.
var moreCollsRE = regexp.MustCompile(`^(\d+) more collective instance\(s\) lack some`)

// stressCut truncates rank's trace inside the event batch that completes
// the first num/den of its communication operations.
type stressCut struct{ rank, num, den int }

func (c stressCut) String() string {
	return "rank" + strconv.Itoa(c.rank) + "at" + strconv.Itoa(c.num) + "of" + strconv.Itoa(c.den)
}

// cutPoint is where c cuts the trace b: in the middle of the event batch
// frame that completes num/den of its operations (or of the next, if that
// is the first, so that the analysis has events of the cut rank to
// match), which the analysis loses whole.
func (c stressCut) cutPoint(t *testing.T, b []byte) int {
	ops := func(n int) int64 {
		k := countCommOps(t, b[:n])
		return k.sends + k.recvs + k.colls
	}
	total := ops(len(b))
	end := sort.Search(len(b)+1, func(n int) bool { return ops(n)*int64(c.den) >= total*int64(c.num) })
	before := ops(end - 1)
	start := sort.Search(end, func(n int) bool { return ops(n) >= before })
	if before == 0 {
		first := ops(end)
		start, end = end, sort.Search(len(b)+1, func(n int) bool { return ops(n) > first })
	}
	return (start + end) / 2
}

// checkCut copies the traces of stress in dir into a new directory, cut
// as cuts say, analyses them and checks that the unmatched operations stay
// within what the cuts removed.
func checkCut(t *testing.T, dir string, cuts ...stressCut) {
	cutDir := t.TempDir()
	var lost commOps
	isCut := map[string]bool{}
	for rk := 0; rk < 4; rk++ {
		f := "stress." + strconv.Itoa(rk) + ".trc"
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cuts {
			if c.rank != rk {
				continue
			}
			at := c.cutPoint(t, b)
			whole, kept := countCommOps(t, b), countCommOps(t, b[:at])
			l := commOps{whole.sends - kept.sends, whole.recvs - kept.recvs, whole.colls - kept.colls}
			if l.sends <= 0 || l.recvs <= 0 || l.colls <= 0 || kept.colls <= 0 {
				t.Fatalf("%v: the cut at byte %d of %d keeps %+v of %+v", c, at, len(b), kept, whole)
			}
			t.Logf("%v: cut at byte %d of %d, lost %+v of %+v", c, at, len(b), l, whole)
			lost.sends += l.sends
			lost.recvs += l.recvs
			lost.colls += l.colls
			isCut[strconv.Itoa(rk)] = true
			b = b[:at]
		}
		if err := os.WriteFile(filepath.Join(cutDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slack := int64(stressSlack * len(cuts))
	r, _ := analyse(t, cutDir, "stress")
	u := r.Unmatched
	if u == nil {
		t.Fatalf("nothing unmatched although the cuts lost %+v", lost)
	}
	// A send a cut rank lost leaves its partner's receive unmatched, a
	// lost receive its partner's send, a lost collective call the
	// instance the other members made (counted by instance in the
	// warnings; Unmatched.Collectives counts the calls of the other
	// members whose wait depended on the missing one: at most 3 per
	// instance).
	inst := int64(0)
	for _, w := range r.Warnings {
		if collLacksRE.MatchString(w) {
			inst++
		} else if m := moreCollsRE.FindStringSubmatch(w); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			inst += n
		}
	}
	t.Logf("unmatched %+v, %d collective instances", *u, inst)
	for _, c := range []struct {
		what      string
		got, lost int64
	}{{"receives", u.Receives, lost.sends}, {"sends", u.Sends, lost.recvs}, {"collective instances", inst, lost.colls}} {
		if c.got > c.lost+slack {
			t.Errorf("%d %s unmatched for %d partner operations lost by the cuts (bound %d): a cascade", c.got, c.what, c.lost, c.lost+slack)
		}
	}
	if u.Collectives > 3*inst {
		t.Errorf("%d collective calls unmatched in %d incomplete instances of at most 4 members", u.Collectives, inst)
	}
	if u.Requests != 0 || u.Stalls != 0 {
		t.Errorf("%d requests never created, %d stalls: the cut cascaded", u.Requests, u.Stalls)
	}
	for _, w := range r.Warnings {
		if m := collLacksRE.FindStringSubmatch(w); m != nil {
			for _, rk := range strings.Split(m[1], ",") {
				if !isCut[strings.TrimSpace(rk)] {
					t.Errorf("a collective lacks a rank that was not cut: %s", w)
				}
			}
		}
		if strings.Contains(w, "stall") {
			t.Errorf("warning: %s", w)
		}
	}
}

// commOps are the communication operations of one rank's trace.
type commOps struct{ sends, recvs, colls int64 }

// countCommOps counts the communication operations in the trace b, up to
// where it ends or is cut: sends and receives (a Sendrecv is one of
// each; a matched probe, MPI_Mprobe or a successful MPI_Improbe, stands for
// its MPI_Mrecv or MPI_Imrecv, which carry no peer), collective calls, and
// each start of a persistent request as an operation of the kind its
// *_init created.
func countCommOps(t *testing.T, b []byte) commOps {
	t.Helper()
	var n commOps
	rd, err := traceformat.NewReader(bytes.NewReader(b))
	if err != nil {
		return n // cut inside the header
	}
	persistent := map[uint64]*int64{}
	for {
		e, err := rd.ReadEvent()
		if err != nil {
			return n // io.EOF, or where the cut is
		}
		fn := rd.Definitions().Function(e.Func)
		if fn == nil {
			continue
		}
		base := mpifunc.Base(fn.GetName())
		var op *int64
		switch {
		case base == "Start" || base == "Startall":
			for _, q := range e.Reqs {
				if p := persistent[q]; p != nil {
					*p++
				}
			}
			continue
		case fn.GetClass() == tracepb.Function_COLLECTIVE:
			op = &n.colls
		case e.Attr&traceformat.AttrSend != 0 && e.Attr&traceformat.AttrRecv != 0:
			n.sends++
			n.recvs++
			continue
		case e.Attr&traceformat.AttrSend != 0:
			op = &n.sends
		case e.Attr&traceformat.AttrRecv != 0:
			if base == "Probe" || base == "Iprobe" || base == "Improbe" && !e.Flag {
				continue
			}
			op = &n.recvs
		default:
			continue
		}
		if strings.HasSuffix(base, "_init") {
			if len(e.Reqs) == 1 {
				persistent[e.Reqs[0]] = op
			}
			continue
		}
		*op++
	}
}
