package otf2

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
)

// sharedOTF2 is the directory of the real Score-P traces (README.md there):
// <repository root>/../shared/otf2. Their absence is a failure, not a skip:
// the cross-check against Scalasca is what these tests are for.
func sharedOTF2(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.mod) not found above the test's directory")
		}
		dir = parent
	}
	data := filepath.Join(filepath.Dir(dir), "shared", "otf2")
	if _, err := os.Stat(filepath.Join(data, "README.md")); err != nil {
		t.Fatalf("the Score-P test traces are missing: %s must hold README.md and the scorep_* archives (issue 18); %v", data, err)
	}
	return data
}

// archivePath is one of the shared archives' experiment directory.
func archivePath(t testing.TB, name string) string {
	return filepath.Join(sharedOTF2(t), name)
}

// copyArchive copies an archive into a writable temporary directory, for
// the tests that damage it.
func copyArchive(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-r", archivePath(t, name), dst).CombinedOutput(); err != nil {
		t.Fatalf("copying the archive: %v: %s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dst).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	return dst
}

// imported is an archive converted to our trace files.
type imported struct {
	dir   string
	stats ImportStats
	warns []string
}

func importArchive(t testing.TB, archive string) *imported {
	t.Helper()
	im := &imported{dir: t.TempDir()}
	var mu sync.Mutex
	st, err := Import(context.Background(), archive, im.dir, "app", func(s string) {
		mu.Lock()
		im.warns = append(im.warns, s)
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("importing %s: %v", archive, err)
	}
	im.stats = st
	return im
}

// analyze runs the analyzer on the imported traces.
func (im *imported) analyze(t testing.TB) (*report.Report, []string) {
	t.Helper()
	var warns []string
	rep, err := analyzer.Analyze(context.Background(), analyzer.Options{Dir: im.dir, App: "app", MaxLevel: -1,
		Warn: func(s string) { warns = append(warns, s) }})
	if err != nil {
		t.Fatalf("analysing the imported traces: %v", err)
	}
	for _, err := range report.Check(rep) {
		t.Errorf("the report is inconsistent: %v", err)
	}
	return rep, warns
}

// otf2Print runs the real otf2-print on an archive's anchor file.
func otf2Print(t testing.TB, anchor string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("otf2-print")
	if err != nil {
		t.Fatal("otf2-print is not installed (Debian otf2-tools; scripts/deps.sh installs it)")
	}
	out, err := exec.Command(bin, append(args, anchor)...).Output()
	if err != nil {
		t.Fatalf("otf2-print %s: %v", anchor, err)
	}
	return string(out)
}

// printedEvent is one event line of otf2-print.
type printedEvent struct {
	kind   string
	loc    int
	time   uint64
	region string // ENTER/LEAVE
}

var eventLine = regexp.MustCompile(`^([A-Z_]+)\s+(\d+)\s+(\d+)\s*(?:Region: "([^"]*)")?`)

func printedEvents(t testing.TB, anchor string) []printedEvent {
	t.Helper()
	var evs []printedEvent
	for _, line := range strings.Split(otf2Print(t, anchor), "\n") {
		m := eventLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		loc, _ := strconv.Atoi(m[2])
		ts, _ := strconv.ParseUint(m[3], 10, 64)
		evs = append(evs, printedEvent{kind: m[1], loc: loc, time: ts, region: m[4]})
	}
	if len(evs) == 0 {
		t.Fatalf("otf2-print listed no events of %s", anchor)
	}
	return evs
}

// within reports whether got is within 2 % of want, or 1 ms where the
// figures are tiny (issue 18).
func within(got, want float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= 0.001 || d <= 0.02*want
}

// waitsBy sums the level-0 interval's waits by kind and waiting rank.
func waitsBy(rep *report.Report) map[string]map[int]float64 {
	out := map[string]map[int]float64{}
	for _, w := range rep.Intervals[0].Waits {
		if out[w.Kind] == nil {
			out[w.Kind] = map[int]float64{}
		}
		out[w.Kind][w.WaitingRank] += w.Seconds
	}
	return out
}
