package otf2

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mpiWriter writes a synthetic OTF2 archive of an MPI run as Score-P
// would: argv[2] ranks in a ring, argv[3] iterations of MPI_Send to the
// next rank, MPI_Recv from the previous one and MPI_Allreduce, 10 events
// per iteration, then PROGRAM_END; with a fourth argument, before the end,
// "split": an MPI_Comm_split and a late send on the new communicator;
// "nb": a ring of MPI_Irecv, MPI_Isend and their MPI_Wait, with rank 0's
// sender late; "nb-open": the same after a first MPI_Irecv never completed;
// "calls": a folded run of 1000 MPI_Comm_rank with the attribute
// dtpa::calls alone, as dtpa wrote it before trace format 2.1 (the
// archive defines no dtpa::inner_gaps); "calls-u32": the same with a
// dtpa::inner_gaps of another type than dtpa's; "open-end": each rank's
// location ends inside an MPI_Recv 100 ns after the ring, never left,
// without PROGRAM_END (a run killed there). Built with the system's C
// compiler against libotf2, since
// test files cannot use cgo.
const mpiWriter = `
#include <otf2/otf2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static OTF2_FlushType pre(void *u, OTF2_FileType f, OTF2_LocationRef l, void *c, bool final) { return OTF2_FLUSH; }
static OTF2_TimeStamp post(void *u, OTF2_FileType f, OTF2_LocationRef l) { return 0; }
static OTF2_FlushCallbacks flush = { .otf2_pre_flush = pre, .otf2_post_flush = post };
enum { R_SEND, R_RECV, R_ALLREDUCE, R_SPLIT, R_ISEND, R_IRECV, R_WAIT, R_RANK };
int main(int argc, char **argv) {
    int n = atoi(argv[2]);
    long iters = atol(argv[3]);
    const char *mode = argc > 4 ? argv[4] : "";
    int split = strcmp(mode, "split") == 0, nb = strncmp(mode, "nb", 2) == 0, open = strcmp(mode, "nb-open") == 0;
    int calls = strncmp(mode, "calls", 5) == 0, u32 = strcmp(mode, "calls-u32") == 0;
    int openEnd = strcmp(mode, "open-end") == 0;
    OTF2_AttributeList *al = OTF2_AttributeList_New();
    OTF2_Archive *a = OTF2_Archive_Open(argv[1], "traces", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                        OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!a) return 1;
    OTF2_Archive_SetFlushCallbacks(a, &flush, NULL);
    OTF2_Archive_SetSerialCollectiveCallbacks(a);
    OTF2_Archive_OpenEvtFiles(a);
    for (int r = 0; r < n; r++) {
        OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(a, r);
        uint64_t t = 1000;
        if (open) {
            OTF2_EvtWriter_Enter(w, NULL, t += 10, R_IRECV);
            OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t += 5, 3);
            OTF2_EvtWriter_Leave(w, NULL, t += 5, R_IRECV);
        }
        for (long i = 0; i < iters; i++) {
            OTF2_EvtWriter_Enter(w, NULL, t += 100, R_SEND);
            OTF2_EvtWriter_MpiSend(w, NULL, t += 10, (r + 1) % n, 0, 7, 64);
            OTF2_EvtWriter_Leave(w, NULL, t += 10, R_SEND);
            OTF2_EvtWriter_Enter(w, NULL, t += 100, R_RECV);
            OTF2_EvtWriter_MpiRecv(w, NULL, t += 10, (r + n - 1) % n, 0, 7, 64);
            OTF2_EvtWriter_Leave(w, NULL, t += 10, R_RECV);
            OTF2_EvtWriter_Enter(w, NULL, t += 100, R_ALLREDUCE);
            OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t += 1);
            OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t += 10, OTF2_COLLECTIVE_OP_ALLREDUCE, 0,
                                            OTF2_UNDEFINED_UINT32, 8, 8);
            OTF2_EvtWriter_Leave(w, NULL, t += 1, R_ALLREDUCE);
        }
        if (split) {
            // MPI_Comm_split of WORLD: ranks 1 and 2 form communicator 1;
            // then its rank 0 (world 1) sends, 1 ms late, to its rank 1
            // (world 2), which waits in MPI_Recv from t + 100.
            OTF2_EvtWriter_Enter(w, NULL, t += 100, R_SPLIT);
            OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t += 1);
            if (r == 1 || r == 2) OTF2_EvtWriter_CommCreate(w, NULL, t += 1, 1);
            OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t += 10, OTF2_COLLECTIVE_OP_CREATE_HANDLE, 0,
                                            OTF2_UNDEFINED_UINT32, 0, 0);
            OTF2_EvtWriter_Leave(w, NULL, t += 1, R_SPLIT);
            if (r == 1) {
                OTF2_EvtWriter_Enter(w, NULL, t + 1000000, R_SEND);
                OTF2_EvtWriter_MpiSend(w, NULL, t + 1000010, 1, 1, 9, 8);
                OTF2_EvtWriter_Leave(w, NULL, t += 1000020, R_SEND);
            } else if (r == 2) {
                OTF2_EvtWriter_Enter(w, NULL, t + 100, R_RECV);
                OTF2_EvtWriter_MpiRecv(w, NULL, t + 1000030, 0, 1, 9, 8);
                OTF2_EvtWriter_Leave(w, NULL, t += 1000040, R_RECV);
            }
        }
        if (nb) {
            // Rank r posts MPI_Irecv from r-1 at t, computes r ms, then
            // MPI_Isend to r+1 at t + 100 + r ms, MPI_Wait for it, MPI_Wait
            // for the receive from t + 300 + r ms. Rank 0 receives from
            // rank n-1, whose send is entered (n-1) ms after t + 100: it
            // waits (n-1) ms − 200 ns; the others' sends were earlier.
            uint64_t d = (uint64_t)r * 1000000, last = (uint64_t)(n - 1) * 1000000;
            OTF2_EvtWriter_Enter(w, NULL, t, R_IRECV);
            OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t + 5, 2);
            OTF2_EvtWriter_Leave(w, NULL, t + 10, R_IRECV);
            OTF2_EvtWriter_Enter(w, NULL, t + 100 + d, R_ISEND);
            OTF2_EvtWriter_MpiIsend(w, NULL, t + 105 + d, (r + 1) % n, 0, 5, 16, 1);
            OTF2_EvtWriter_Leave(w, NULL, t + 110 + d, R_ISEND);
            OTF2_EvtWriter_Enter(w, NULL, t + 200 + d, R_WAIT);
            OTF2_EvtWriter_MpiIsendComplete(w, NULL, t + 205 + d, 1);
            OTF2_EvtWriter_Leave(w, NULL, t + 210 + d, R_WAIT);
            uint64_t done = r == 0 ? t + 300 + last : t + 305 + d;
            OTF2_EvtWriter_Enter(w, NULL, t + 300 + d, R_WAIT);
            OTF2_EvtWriter_MpiIrecv(w, NULL, done, (r + n - 1) % n, 0, 5, 16, 2);
            OTF2_EvtWriter_Leave(w, NULL, done + 5, R_WAIT);
            t += last + 1000;
        }
        if (calls) {
            // 1000 calls folded: 100 us in MPI, ending 1 us after the
            // previous call's exit and 1 ms after their first entry.
            OTF2_AttributeList_AddUint32(al, 0, 1000);
            if (u32) OTF2_AttributeList_AddUint32(al, 1, 900000);
            OTF2_EvtWriter_Enter(w, al, t += 1000000, R_RANK);
            OTF2_EvtWriter_Leave(w, NULL, t += 100000, R_RANK);
        }
        if (openEnd)
            OTF2_EvtWriter_Enter(w, NULL, t += 100, R_RECV);
        else
            OTF2_EvtWriter_ProgramEnd(w, NULL, t += 10, 0);
        OTF2_Archive_CloseEvtWriter(a, w);
    }
    OTF2_Archive_CloseEvtFiles(a);
    OTF2_Archive_OpenDefFiles(a);
    for (int r = 0; r < n; r++) OTF2_Archive_CloseDefWriter(a, OTF2_Archive_GetDefWriter(a, r));
    OTF2_Archive_CloseDefFiles(a);
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(a);
    OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, 1000 + iters * 400, OTF2_UNDEFINED_TIMESTAMP);
    const char *s[] = {"", "MPI_Send", "MPI_Recv", "MPI_Allreduce", "node", "process", "thread", "MPI_COMM_WORLD",
                       "MPI_Comm_split", "MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Comm_rank", "dtpa::calls",
                       "dtpa::inner_gaps"};
    for (int i = 0; i < 15; i++) OTF2_GlobalDefWriter_WriteString(g, i, s[i]);
    OTF2_GlobalDefWriter_WriteRegion(g, R_RANK, 12, 12, 0, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    if (calls) OTF2_GlobalDefWriter_WriteAttribute(g, 0, 13, 0, OTF2_TYPE_UINT32);
    if (u32) OTF2_GlobalDefWriter_WriteAttribute(g, 1, 14, 0, OTF2_TYPE_UINT32);
    OTF2_GlobalDefWriter_WriteRegion(g, R_ISEND, 9, 9, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, R_IRECV, 10, 10, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, R_WAIT, 11, 11, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, R_SPLIT, 8, 8, 0, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, R_SEND, 1, 1, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, R_RECV, 2, 2, 0, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteRegion(g, R_ALLREDUCE, 3, 3, 0, OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_PARADIGM_MPI,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 4, 4, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    uint64_t *members = calloc(n, sizeof *members);
    for (int r = 0; r < n; r++) {
        OTF2_GlobalDefWriter_WriteLocationGroup(g, r, 5, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                OTF2_UNDEFINED_LOCATION_GROUP);
        uint64_t events = iters * 10 + 1;
        if (split) events += (r == 1 || r == 2) ? 8 : 4;
        if (nb) events += 12 + (open ? 3 : 0);
        if (calls) events += 2;
        OTF2_GlobalDefWriter_WriteLocation(g, r, 6, OTF2_LOCATION_TYPE_CPU_THREAD, events, r);
        members[r] = r;
    }
    OTF2_GlobalDefWriter_WriteGroup(g, 0, 0, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, n, members);
    OTF2_GlobalDefWriter_WriteGroup(g, 1, 0, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, n, members);
    OTF2_GlobalDefWriter_WriteComm(g, 0, 7, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
    if (split) {
        uint64_t sub[] = {1, 2};
        OTF2_GlobalDefWriter_WriteGroup(g, 2, 0, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, 2, sub);
        OTF2_GlobalDefWriter_WriteComm(g, 1, 0, 2, 0, OTF2_COMM_FLAG_NONE);
    }
    OTF2_AttributeList_Delete(al);
    return OTF2_Archive_Close(a) == OTF2_SUCCESS ? 0 : 1;
}
`

// writeMPIArchive writes mpiWriter's archive into dir and returns its
// experiment directory.
func writeMPIArchive(t testing.TB, dir string, ranks, iters int, mode ...string) string {
	t.Helper()
	src := filepath.Join(dir, "mpiwriter.c")
	if err := os.WriteFile(src, []byte(mpiWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "otf2").Output()
	if err != nil {
		t.Fatalf("pkg-config otf2 (libopen-trace-format2-dev, scripts/deps.sh): %v", err)
	}
	bin := filepath.Join(dir, "mpiwriter")
	if out, err := exec.Command("cc", append([]string{"-O2", "-o", bin, src}, strings.Fields(string(flags))...)...).CombinedOutput(); err != nil {
		t.Fatalf("building the OTF2 writer: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "synthetic")
	args := []string{archive, strconv.Itoa(ranks), strconv.Itoa(iters)}
	args = append(args, mode...)
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("writing the archive: %v\n%s", err, out)
	}
	return archive
}

// The synthetic ring: every call converted, each receive waiting 0 (the
// sends are entered 220 ns earlier on every rank).
func TestSyntheticRing(t *testing.T) {
	im := importArchive(t, writeMPIArchive(t, t.TempDir(), 3, 1000))
	if im.stats.Events != 3*(1000*10+1) {
		t.Errorf("%d events, want 30003", im.stats.Events)
	}
	want := "map[MPI_Allreduce:3000 MPI_Recv:3000 MPI_Send:3000]"
	if got := fmtCalls(im.stats.Calls); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
	rep, warns := im.analyze(t)
	if len(warns) > 0 || len(im.warns) > 0 {
		t.Errorf("warnings: %q %q", im.warns, warns)
	}
	for _, rk := range rep.Intervals[0].Ranks {
		if rk.RealSync != 0 || rk.PotentialSync != 0 {
			t.Errorf("rank %d: Real Sync %v, Potential Sync %v; want 0", rk.Rank, rk.RealSync, rk.PotentialSync)
		}
	}
}

// A communicator made by MPI_Comm_split (Score-P: COMM_CREATE inside the
// call, a CREATE_HANDLE collective on the parent): its members are world
// ranks 1 and 2, and the message on it names peers by communicator rank.
// Rank 1 sends 1 ms late: rank 2's MPI_Recv, entered at t + 100 ns, waits
// until the send's entry at t + 1,000,000 ns: Real Sync 999,900 ns.
func TestSyntheticSplitCommunicator(t *testing.T) {
	im := importArchive(t, writeMPIArchive(t, t.TempDir(), 4, 10, "split"))
	if got := fmtCalls(im.stats.Calls); got != "map[MPI_Allreduce:40 MPI_Comm_split:4 MPI_Recv:41 MPI_Send:41]" {
		t.Errorf("calls %s", got)
	}
	rep, warns := im.analyze(t)
	if len(warns) > 0 || len(im.warns) > 0 {
		t.Errorf("warnings: %q %q", im.warns, warns)
	}
	for _, rk := range rep.Intervals[0].Ranks {
		want := 0.0
		if rk.Rank == 2 {
			want = 999_900e-9
		}
		if d := rk.RealSync - want; d > 1e-12 || d < -1e-12 {
			t.Errorf("rank %d: Real Sync %.9f s, want %.9f s", rk.Rank, rk.RealSync, want)
		}
	}
	w := waitsBy(rep)
	if got := w["late_sender"][2]; got < 999_899e-9 || got > 999_901e-9 {
		t.Errorf("rank 2's late_sender wait %.9f s, want 0.000999900 s", got)
	}
}

// Nonblocking ring of 3 ranks: each MPI_Irecv's source, tag, communicator
// and size come from its completion (MPI_IRECV inside MPI_Wait); each
// MPI_Isend completes in an MPI_Wait. Rank 0 waits for the receive from
// t + 300 ns; its sender, rank 2, enters MPI_Isend at t + 100 + 2 ms: Real
// Sync 1,999,800 ns; the other ranks' senders were earlier. An MPI_Irecv
// never completed, posted first, holds every later call back until the
// end, or, past maxPending calls, is written as a receive from any source
// (here with maxPending 64): either way with a warning, and the same
// figures.
func TestSyntheticNonblocking(t *testing.T) {
	for _, c := range []struct {
		mode       string
		maxPending int
	}{{"nb", 1 << 20}, {"nb-open", 1 << 20}, {"nb-open", 64}} {
		mode := c.mode
		t.Run(fmt.Sprint(mode, c.maxPending), func(t *testing.T) {
			defer func(m int) { maxPending = m }(maxPending)
			maxPending = c.maxPending
			im := importArchive(t, writeMPIArchive(t, t.TempDir(), 3, 1500, mode))
			irecvs := 3
			if mode == "nb-open" {
				irecvs = 6
				if !hasWarning(im.warns, "1 nonblocking receives were not completed") {
					t.Errorf("no warning about the open receive: %q", im.warns)
				}
			} else if len(im.warns) > 0 {
				t.Errorf("warnings: %q", im.warns)
			}
			want := fmt.Sprintf("map[MPI_Allreduce:4500 MPI_Irecv:%d MPI_Isend:3 MPI_Recv:4500 MPI_Send:4500 MPI_Wait:6]", irecvs)
			if got := fmtCalls(im.stats.Calls); got != want {
				t.Errorf("calls %s, want %s", got, want)
			}
			rep, warns := im.analyze(t)
			t.Logf("analyzer warnings: %q", warns)
			for _, rk := range rep.Intervals[0].Ranks {
				want := 0.0
				if rk.Rank == 0 {
					want = 1_999_800e-9
				}
				if d := rk.RealSync - want; d > 1e-12 || d < -1e-12 {
					t.Errorf("rank %d: Real Sync %.9f s, want %.9f s", rk.Rank, rk.RealSync, want)
				}
			}
		})
	}
}

// A folded run in an archive without dtpa::inner_gaps (dtpa's before trace
// format 2.1), or with an attribute of that name but another type, is
// taken as before: its calls count, and it ends one gap (the 1 ms before
// its entry, which holds the time between its calls), not one per call:
// each rank has the ring's gaps and one more.
func TestSyntheticFoldedWithoutInnerGaps(t *testing.T) {
	plain, _ := importArchive(t, writeMPIArchive(t, t.TempDir(), 3, 100)).analyze(t)
	for _, mode := range []string{"calls", "calls-u32"} {
		t.Run(mode, func(t *testing.T) {
			im := importArchive(t, writeMPIArchive(t, t.TempDir(), 3, 100, mode))
			// (The import counts the events it writes.)
			if got, want := fmtCalls(im.stats.Calls), "map[MPI_Allreduce:300 MPI_Comm_rank:3 MPI_Recv:300 MPI_Send:300]"; got != want {
				t.Errorf("calls %s, want %s", got, want)
			}
			rep, warns := im.analyze(t)
			if len(warns) > 0 || len(im.warns) > 0 {
				t.Errorf("warnings: %q %q", im.warns, warns)
			}
			var ranks int64
			for _, f := range rep.Intervals[0].Functions {
				if f.Function == "MPI_Comm_rank" {
					ranks += f.Calls
				}
			}
			if ranks != 3000 {
				t.Errorf("%d MPI_Comm_rank calls, want 3000", ranks)
			}
			for i, rk := range rep.Intervals[0].Ranks {
				p, q := rk.RankProfile, plain.Intervals[0].Ranks[i].RankProfile
				if p.Gaps != q.Gaps+1 || math.Abs(p.GapMean*float64(p.Gaps)-q.GapMean*float64(q.Gaps)-1e-3) > 1e-12 {
					t.Errorf("rank %d: %d gaps, %.9f s in all; want %d, 1 ms more than the ring's %.9f s", rk.Rank,
						p.Gaps, p.GapMean*float64(p.Gaps), q.Gaps+1, q.GapMean*float64(q.Gaps))
				}
			}
		})
	}
}

// A run killed inside an MPI_Recv on every rank (mode "open-end": each
// location ends inside the call, never left, without PROGRAM_END): the
// calls are in progress when the processes ended, as dtpa's own traces of
// a hung job say (the report's unfinished, with no end known), each named
// in a warning; the ring's calls before are all there.
func TestSyntheticOpenAtEnd(t *testing.T) {
	im := importArchive(t, writeMPIArchive(t, t.TempDir(), 3, 10, "open-end"))
	if got := fmtCalls(im.stats.Calls); got != "map[MPI_Allreduce:30 MPI_Recv:30 MPI_Send:30]" {
		t.Errorf("calls %s", got)
	}
	n := 0
	for _, w := range im.warns {
		if strings.Contains(w, "'s MPI_Recv, entered at ") && strings.Contains(w, "was never left") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d warnings of a call never left, want 3: %q", n, im.warns)
	}
	rep, _ := im.analyze(t)
	if len(rep.Unfinished) != 3 {
		t.Fatalf("calls in progress %+v, want each rank's MPI_Recv", rep.Unfinished)
	}
	for i, u := range rep.Unfinished {
		if u.Rank != i || u.Function != "MPI_Recv" || u.Thread != 0 || u.Seconds != nil {
			t.Errorf("call in progress %+v, want rank %d's MPI_Recv, no end known", u, i)
		}
	}
}
