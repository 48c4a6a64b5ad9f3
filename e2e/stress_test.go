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
// creates and frees 51 communicators over the 4 ranks (about 13 per rank),
// so 12 rounds make 612; MPICH, which polls, takes ~20 s of them on two
// cores with 4 ranks.
const stressRounds = 12

// TestStress traces testdata/apps/stress.c (every MPI API family mixed,
// round after round, hundreds of communicators created and freed) under
// both MPIs: every operation must be matched, with no stall and no
// warning. Then it cuts copies of the traces (one rank's file truncated at
// a third, a half and two thirds of its length, the other ranks' complete)
// and checks that the analysis gives up only what the cut lost: the
// operations left unmatched are at most the communication operations
// recorded after the cut in the cut rank's complete trace, plus the
// requests it had outstanding at the cut (stressSlack); every collective
// that is incomplete lacks only the cut rank; no request is "never
// created" and the replay never stalls.
func TestStress(t *testing.T) {
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			needMPI(t, m)
			dir := t.TempDir()
			exe := compile(t, m, dir, "stress")
			out := trace(t, m, dir, []string{"TMPDIR=" + dir}, 4, exe, strconv.Itoa(stressRounds))
			want := "stress: done, " + strconv.Itoa(stressRounds) + " rounds, " + strconv.Itoa(51*stressRounds) + " communicators freed"
			if !strings.Contains(out, want) {
				t.Fatalf("the program did not finish (want %q):\n%s", want, out)
			}
			r, stderr := analyse(t, dir, "stress")
			if r.Unmatched != nil {
				t.Errorf("unmatched operations: %+v", *r.Unmatched)
			}
			checkWarnings(t, r, stderr, false)
			checkInvariants(t, r, 4)
			if n := len(r.Intervals); n != 4 {
				t.Errorf("%d intervals, want the whole program and 3", n)
			}
			for _, cut := range []struct{ rank, num, den int }{{2, 1, 2}, {1, 1, 3}, {3, 2, 3}, {0, 1, 2}} {
				t.Run("cut"+strconv.Itoa(cut.rank)+"at"+strconv.Itoa(cut.num)+"of"+strconv.Itoa(cut.den), func(t *testing.T) {
					checkCut(t, dir, cut.rank, cut.num, cut.den)
				})
			}
		})
	}
}

// stressSlack bounds the unmatched operations a cut causes beyond the
// operations it removes: the cut rank's operations started before the
// cut and completed after it (stress.c never has more than 4 requests
// outstanding: the nonblocking collectives of colls) and, on the other
// side, the partners of those.
const stressSlack = 8

// collLacksRE matches the warning about a collective some ranks lack.
var collLacksRE = regexp.MustCompile(`^Collective \S+ \(call .*\) lacks rank\(s\) ([0-9, ]+) `)

// moreCollsRE matches the count of the incomplete collective instances
// not described one by one.
var moreCollsRE = regexp.MustCompile(`^(\d+) more collective instance\(s\) lack some`)

// checkCut copies the traces of stress in dir into a new directory, rank's
// cut inside the event batch that completes the first num/den of its
// communication operations, analyses them and checks that the unmatched
// operations stay within what the cut removed.
func checkCut(t *testing.T, dir string, rank, num, den int) {
	cutDir := t.TempDir()
	name := "stress." + strconv.Itoa(rank) + ".trc"
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	whole := countCommOps(t, b)
	total := whole.sends + whole.recvs + whole.colls
	// The shortest prefix that keeps num/den of the operations ends with
	// the event batch frame that completes them; the file is cut in the
	// middle of that frame (or of the next, if that is the first), which the
	// analysis loses whole.
	ops := func(n int) int64 {
		k := countCommOps(t, b[:n])
		return k.sends + k.recvs + k.colls
	}
	end := sort.Search(len(b)+1, func(n int) bool { return ops(n)*int64(den) >= total*int64(num) })
	before := ops(end - 1)
	start := sort.Search(end, func(n int) bool { return ops(n) >= before })
	if before == 0 {
		// That is the first batch: cut the next one, so that the
		// analysis has events of the cut rank to match.
		first := ops(end)
		start, end = end, sort.Search(len(b)+1, func(n int) bool { return ops(n) > first })
	}
	cut := (start + end) / 2
	for rk := 0; rk < 4; rk++ {
		f := "stress." + strconv.Itoa(rk) + ".trc"
		c, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if rk == rank {
			c = c[:cut]
		}
		if err := os.WriteFile(filepath.Join(cutDir, f), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept := countCommOps(t, b[:cut])
	lost := commOps{whole.sends - kept.sends, whole.recvs - kept.recvs, whole.colls - kept.colls}
	if lost.sends <= 0 || lost.recvs <= 0 || lost.colls <= 0 || kept.colls <= 0 {
		t.Fatalf("the cut at byte %d of %d keeps %+v of %+v", cut, len(b), kept, whole)
	}
	r, _ := analyse(t, cutDir, "stress")
	u := r.Unmatched
	if u == nil {
		t.Fatalf("nothing unmatched although rank %d lost %+v", rank, lost)
	}
	// A send the cut rank lost leaves its partner's receive unmatched, a
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
	t.Logf("rank %d cut at %d/%d: lost %+v of %+v; unmatched %+v, %d collective instances", rank, num, den, lost, whole, *u, inst)
	for _, c := range []struct {
		what      string
		got, lost int64
	}{{"receives", u.Receives, lost.sends}, {"sends", u.Sends, lost.recvs}, {"collective instances", inst, lost.colls}} {
		if c.got > c.lost+stressSlack {
			t.Errorf("%d %s unmatched for %d partner operations lost by the cut (bound %d): a cascade", c.got, c.what, c.lost, c.lost+stressSlack)
		}
	}
	if u.Collectives > 3*inst {
		t.Errorf("%d collective calls unmatched in %d incomplete instances of at most 4 members", u.Collectives, inst)
	}
	if u.Requests != 0 || u.Stalls != 0 {
		t.Errorf("%d requests never created, %d stalls: the cut cascaded", u.Requests, u.Stalls)
	}
	for _, w := range r.Warnings {
		if m := collLacksRE.FindStringSubmatch(w); m != nil && strings.TrimSpace(m[1]) != strconv.Itoa(rank) {
			t.Errorf("a collective lacks ranks other than the cut one: %s", w)
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
