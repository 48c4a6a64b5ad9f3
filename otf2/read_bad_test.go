package otf2

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/otf2/otf2test"
)

func importErr(t *testing.T, archive string) ([]string, error) {
	t.Helper()
	var warns []string
	_, err := Import(context.Background(), archive, t.TempDir(), "app", func(s string) { warns = append(warns, s) })
	return warns, err
}

func hasWarning(warns []string, parts ...string) bool {
	for _, w := range warns {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// A truncated events file: that rank is imported up to the damage (its
// file left without a footer, as a killed process leaves it) with a
// warning naming the file, and the other ranks are analysed whole. Cut
// inside a chunk, libotf2 reports the damage; cut at a chunk boundary it
// reads on silently, and the event count of the global definitions tells.
func TestTruncatedEventsFile(t *testing.T) {
	for _, c := range []struct {
		trace string
		size  func(int64) int64
		// rank 1's Real Sync in the whole trace (the test reads it as
		// unaffected by rank 2's damage)
		rank1RealSync float64
	}{
		{"scorep_ls4", func(n int64) int64 { return n / 2 }, 1.00234},
		{"scorep_lammps_melt", func(int64) int64 { return 100000 }, -1},
	} {
		t.Run(c.trace, func(t *testing.T) {
			dir := copyArchive(t, c.trace)
			evt := filepath.Join(dir, "traces", "2.evt")
			st, err := os.Stat(evt)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(evt, c.size(st.Size())); err != nil {
				t.Fatal(err)
			}
			im := importArchive(t, dir)
			if !hasWarning(im.warns, evt, "rank 2", "damaged") {
				t.Fatalf("no warning naming %s: %q", evt, im.warns)
			}
			rep, warns := im.analyze(t)
			if !hasWarning(warns, "2") {
				t.Errorf("the analyzer does not say rank 2's trace is cut short: %q", warns)
			}
			if len(rep.Intervals[0].Ranks) != 4 {
				t.Errorf("%d ranks analysed, want 4", len(rep.Intervals[0].Ranks))
			}
			for _, rk := range rep.Intervals[0].Ranks {
				if rk.Rank == 1 && c.rank1RealSync >= 0 && !within(rk.RealSync, c.rank1RealSync) {
					t.Errorf("rank 1's Real Sync %.6f s, want %.6f s (Scalasca)", rk.RealSync, c.rank1RealSync)
				}
			}
		})
	}
}

// The global definitions file missing: nothing can be read; the error
// names it.
func TestMissingGlobalDefinitions(t *testing.T) {
	dir := copyArchive(t, "scorep_ls4")
	def := filepath.Join(dir, "traces.def")
	if err := os.Remove(def); err != nil {
		t.Fatal(err)
	}
	_, err := importErr(t, dir)
	if err == nil || !strings.Contains(err.Error(), def) {
		t.Fatalf("error %v; want one naming %s", err, def)
	}
}

// A location's definitions file missing: without its id mappings and
// clock offsets its events cannot be trusted, so that rank is left out
// with a warning naming the file; the others are analysed.
func TestMissingLocalDefinitions(t *testing.T) {
	dir := copyArchive(t, "scorep_ls4")
	def := filepath.Join(dir, "traces", "3.def")
	if err := os.Remove(def); err != nil {
		t.Fatal(err)
	}
	im := importArchive(t, dir)
	if !hasWarning(im.warns, def, "rank 3") {
		t.Fatalf("no warning naming %s: %q", def, im.warns)
	}
	if len(im.stats.Files) != 3 {
		t.Errorf("files %v; want ranks 0-2", im.stats.Files)
	}
	rep, warns := im.analyze(t)
	t.Logf("analyzer warnings: %q", warns)
	for _, rk := range rep.Intervals[0].Ranks {
		if rk.Rank == 1 && !within(rk.RealSync, 1.00234) {
			t.Errorf("rank 1's Real Sync %.6f s, want Scalasca's 1.00234 s", rk.RealSync)
		}
	}
}

// An archive of a version libotf2 refuses (the anchor's major version
// byte set to 99): a clear error naming the anchor file.
func TestVersionRefused(t *testing.T) {
	dir := copyArchive(t, "scorep_ls4")
	anchor := filepath.Join(dir, "traces.otf2")
	b, err := os.ReadFile(anchor)
	if err != nil {
		t.Fatal(err)
	}
	b[8] = 99 // the anchor file's major version
	if err := os.WriteFile(anchor, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = importErr(t, dir)
	if err == nil || !strings.Contains(err.Error(), anchor) || !strings.Contains(err.Error(), "version") {
		t.Fatalf("error %v; want one naming %s and the version", err, anchor)
	}
}

// Not an OTF2 file at all.
func TestGarbageAnchor(t *testing.T) {
	anchor := filepath.Join(t.TempDir(), "traces.otf2")
	if err := os.WriteFile(anchor, []byte("this is not an OTF2 anchor file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(anchor), "traces.def"), []byte("nor this"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := importErr(t, anchor)
	if err == nil || !strings.Contains(err.Error(), anchor) {
		t.Fatalf("error %v; want one naming %s", err, anchor)
	}
}

// serialWriter writes the OTF2 archive of a serial (non-MPI) run: one
// process, one thread, a user region. Built with the system's C compiler
// against libotf2, since test files cannot use cgo.
const serialWriter = `
#include <otf2/otf2.h>
#include <stdio.h>
static OTF2_FlushType pre(void *u, OTF2_FileType f, OTF2_LocationRef l, void *c, bool final) { return OTF2_FLUSH; }
static OTF2_TimeStamp post(void *u, OTF2_FileType f, OTF2_LocationRef l) { return 0; }
static OTF2_FlushCallbacks flush = { .otf2_pre_flush = pre, .otf2_post_flush = post };
int main(int argc, char **argv) {
    OTF2_Archive *a = OTF2_Archive_Open(argv[1], "traces", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                        OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!a) return 1;
    OTF2_Archive_SetFlushCallbacks(a, &flush, NULL);
    OTF2_Archive_SetSerialCollectiveCallbacks(a);
    OTF2_Archive_OpenEvtFiles(a);
    OTF2_EvtWriter *ew = OTF2_Archive_GetEvtWriter(a, 0);
    OTF2_EvtWriter_Enter(ew, NULL, 10, 0);
    OTF2_EvtWriter_Leave(ew, NULL, 20, 0);
    OTF2_Archive_CloseEvtWriter(a, ew);
    OTF2_Archive_CloseEvtFiles(a);
    OTF2_Archive_OpenDefFiles(a);
    OTF2_Archive_CloseDefWriter(a, OTF2_Archive_GetDefWriter(a, 0));
    OTF2_Archive_CloseDefFiles(a);
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(a);
    OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, 30, OTF2_UNDEFINED_TIMESTAMP);
    OTF2_GlobalDefWriter_WriteString(g, 0, "");
    OTF2_GlobalDefWriter_WriteString(g, 1, "main");
    OTF2_GlobalDefWriter_WriteString(g, 2, "node");
    OTF2_GlobalDefWriter_WriteString(g, 3, "process");
    OTF2_GlobalDefWriter_WriteString(g, 4, "thread");
    OTF2_GlobalDefWriter_WriteRegion(g, 0, 1, 1, 0, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                     OTF2_REGION_FLAG_NONE, 0, 0, 0);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 2, 2, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    OTF2_GlobalDefWriter_WriteLocationGroup(g, 0, 3, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                            OTF2_UNDEFINED_LOCATION_GROUP);
    OTF2_GlobalDefWriter_WriteLocation(g, 0, 4, OTF2_LOCATION_TYPE_CPU_THREAD, 2, 0);
    return OTF2_Archive_Close(a) == OTF2_SUCCESS ? 0 : 1;
}
`

// The archive of a serial run: no MPI processes; the error says so and
// names the definitions file.
func TestSerialRun(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "serial.c")
	if err := os.WriteFile(src, []byte(serialWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "otf2").Output()
	if err != nil {
		t.Fatalf("pkg-config otf2 (libopen-trace-format2-dev, scripts/deps.sh): %v", err)
	}
	bin := filepath.Join(tmp, "serial")
	args := append([]string{"-o", bin, src}, strings.Fields(string(flags))...)
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("building the serial OTF2 writer: %v\n%s", err, out)
	}
	archive := filepath.Join(tmp, "serial_run")
	if out, err := exec.Command(bin, archive).CombinedOutput(); err != nil {
		t.Fatalf("writing the serial archive: %v\n%s", err, out)
	}
	otf2Print(t, filepath.Join(archive, "traces.otf2")) // a valid archive
	_, err = importErr(t, archive)
	def := filepath.Join(archive, "traces.def")
	if err == nil || !strings.Contains(err.Error(), def) || !strings.Contains(err.Error(), "no MPI") {
		t.Fatalf("error %v; want one naming %s and saying it has no MPI processes", err, def)
	}
}

// One byte of the creator string changed keeps libotf2 reading the anchor
// file for ~45 s before it gives up; the import stops it and says which
// file is damaged.
func TestDamagedAnchorStopped(t *testing.T) {
	defer func(d time.Duration) { AnchorTimeout = d }(AnchorTimeout)
	AnchorTimeout = time.Second
	dir := copyArchive(t, "scorep_ls4")
	anchor := filepath.Join(dir, "traces.otf2")
	if err := otf2test.DamageAnchor(anchor); err != nil {
		t.Fatal(err)
	}
	// (libotf2's own error, had it finished, would say it cannot open it.)
	_, err := importErr(t, dir)
	if err == nil || !strings.Contains(err.Error(), anchor) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("error %v; want one saying %s is damaged", err, anchor)
	}
}

// A damaged timestamp (its high byte changed: ~2^56 ticks) would be a
// call of two years: rank 0's trace
// ends before it, with a warning, and the report stays consistent.
func TestDamagedTimestamp(t *testing.T) {
	dir := copyArchive(t, "scorep_ls4")
	evt := filepath.Join(dir, "traces", "0.evt")
	b, err := os.ReadFile(evt)
	if err != nil {
		t.Fatal(err)
	}
	b[141] = 0xff // the high byte of an event's time (found by FuzzImport)
	if err := os.WriteFile(evt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	im := importArchive(t, dir)
	if !hasWarning(im.warns, evt, "rank 0", "damaged", "after the archive's global offset") {
		t.Fatalf("no warning naming %s: %q", evt, im.warns)
	}
	rep, _ := im.analyze(t)
	for _, rk := range rep.Intervals[0].Ranks {
		if rk.ExecutionTime > 2 {
			t.Errorf("rank %d: execution time %.6f s", rk.Rank, rk.ExecutionTime)
		}
	}
}

// A truncated events file of a thread's location: that thread's calls
// end at the damage, with a warning naming the file and the thread, and
// the rank's other threads and the other ranks are imported whole (the
// rank's trace keeps its footer: the process ended).
func TestTruncatedThreadEventsFile(t *testing.T) {
	if !otf2test.Available() {
		t.Skip("otf2-print is not installed (make deps)")
	}
	out := exportThreaded(t)
	evt := filepath.Join(out, "traces", "4294967297.evt") // rank 1's thread 1
	st, err := os.Stat(evt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(evt, st.Size()-8); err != nil {
		t.Fatal(err)
	}
	back := t.TempDir()
	var warns []string
	ist, err := Import(context.Background(), filepath.Join(out, ArchiveName), back, "app", func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(warns, "4294967297.evt", "rank 1's thread 1", "damaged") {
		t.Errorf("no warning of rank 1's thread 1's damage: %q", warns)
	}
	if hasWarning(warns, "rank 0", "damaged") || len(warns) != 2 {
		// (The other: rank 0's MPI_Irecv, which its master thread
		// completed, is not completed on its thread's location.)
		t.Errorf("warnings %q", warns)
	}
	// Rank 0's 6 calls and rank 1's master thread's 3 come back; of rank
	// 1's thread 1 at least its first send.
	var n uint64
	for _, c := range ist.Calls {
		n += c
	}
	if n < 10 || n > 11 || ist.Calls["MPI_Recv"] != 2 || ist.Calls["MPI_Finalize"] != 2 {
		t.Errorf("calls imported: %v", ist.Calls)
	}
}
