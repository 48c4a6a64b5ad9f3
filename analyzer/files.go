package analyzer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// rankFile is what the first pass learns about one trace file.
type rankFile struct {
	path   string
	hdr    *tracepb.Header
	syncs  []*tracepb.ClockSync
	footer *tracepb.Footer
	err    error // damage found (the intact prefix is still analysed)
	off    int64 // byte offset of the damage
}

// discover lists <app>.<n>.trc in dir.
func discover(dir, app string) ([]string, error) {
	pattern := filepath.Join(dir, app+".*.trc")
	all, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("listing traces: %w", err)
	}
	var out []string
	for _, p := range all {
		mid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), app+"."), ".trc")
		if _, err := strconv.Atoi(mid); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		d := dir
		if d == "" {
			d = "."
		}
		return nil, fmt.Errorf("no traces of %q in %s (looked for %s.<rank>.trc); run the program under dtrun first, in this directory",
			app, d, app)
	}
	sort.Slice(out, func(i, j int) bool { return rankOf(out[i], app) < rankOf(out[j], app) })
	return out, nil
}

func rankOf(p, app string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), app+"."), ".trc"))
	return n
}

// scan is the first pass over one file: its header, clock-sync samples,
// footer and damage. The tracer writes clock syncs at both ends of the
// file, so the reader seeks over the event batches (SkipEvents) rather than
// decoding them twice; damage inside a batch is found and reported by the
// replay, which decodes everything.
func scan(path string) (*rankFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path, SkipEvents: true})
	if err != nil {
		return nil, err
	}
	rf := &rankFile{path: path, hdr: rd.Header()}
	if _, err := rd.ReadBatch(); err != nil && !errors.Is(err, io.EOF) {
		rf.err = err
		var ce *traceformat.CorruptError
		if errors.As(err, &ce) {
			rf.off = ce.Offset
		}
	}
	rf.syncs = rd.ClockSyncs()
	rf.footer = rd.Footer()
	return rf, nil
}

// checkRuns refuses traces of different runs and returns the world size.
func checkRuns(files []*rankFile) (int, error) {
	byRun := map[string][]string{}
	var order []string
	for _, f := range files {
		k := string(f.hdr.RunId)
		if _, ok := byRun[k]; !ok {
			order = append(order, k)
		}
		byRun[k] = append(byRun[k], filepath.Base(f.path))
	}
	if len(byRun) > 1 {
		var parts []string
		for _, k := range order {
			parts = append(parts, fmt.Sprintf("run %x: %s", []byte(k), strings.Join(byRun[k], ", ")))
		}
		return 0, fmt.Errorf("the directory holds traces of %d different runs, which cannot be analysed together (%s); move the traces of one run to a directory of their own",
			len(byRun), strings.Join(parts, "; "))
	}
	size := 0
	for _, f := range files {
		if int(f.hdr.WorldSize) > size {
			size = int(f.hdr.WorldSize)
		}
	}
	for _, f := range files {
		if int(f.hdr.WorldSize) != size {
			return 0, fmt.Errorf("%s says the run had %d processes, %s says %d: the traces are inconsistent",
				filepath.Base(f.path), f.hdr.WorldSize, filepath.Base(files[0].path), files[0].hdr.WorldSize)
		}
	}
	// Tables are sized by the world: refuse a size no run has (a damaged
	// or forged header) rather than allocate for it.
	if size > maxWorld {
		return 0, fmt.Errorf("%s claims %d processes, more than dtpa handles (%d)", filepath.Base(files[0].path), size, maxWorld)
	}
	return size, nil
}

// maxWorld bounds the world size dtpa accepts.
const maxWorld = 1 << 22

// missingRanks lists ranks without a file, compactly ("3, 5-7").
func missingRanks(present []bool) string {
	var parts []string
	for i := 0; i < len(present); {
		if present[i] {
			i++
			continue
		}
		j := i
		for j+1 < len(present) && !present[j+1] {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(i))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", i, j))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
