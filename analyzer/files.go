package analyzer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/records"
	"google.golang.org/protobuf/proto"
)

// rankFile is what the first pass learns about one trace file.
type rankFile struct {
	path   string
	hdr    *tracepb.Header
	syncs  []*tracepb.ClockSync
	footer *tracepb.Footer
	err    error // damage found (the intact prefix is still analysed)
	off    int64 // byte offset of the damage
	// late: the footer's crash came after the trace ended, from the file
	// beside it (readLateCrash); lateErr says why that file was left
	// out, for a warning.
	late    bool
	lateErr string
}

// discover lists <app>.<n>.trc in dir.
func discover(dir, app string) ([]string, error) {
	out, err := traceFiles(dir, app)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, noTraces(dir, app)
	}
	return out, nil
}

// traceFiles lists <app>.<n>.trc in dir by rank; none is not an error.
func traceFiles(dir, app string) ([]string, error) {
	pattern := filepath.Join(dir, globEscape(app)+".*.trc")
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
	sort.Slice(out, func(i, j int) bool { return rankOf(out[i], app) < rankOf(out[j], app) })
	return out, nil
}

// withCompanions is files, the traces of app in dir of a run of size
// ranks, with the traces of the other programs of an MPMD run (mpirun -np
// 2 ./ocean : -np 2 ./atmos writes ocean.0.trc, ocean.1.trc, atmos.2.trc,
// atmos.3.trc): the files of other tasks for the ranks files lack whose
// header names the same run. Only their headers and clock samples are read
// (scan); a file that cannot be read is not known to be of the run and is
// passed over.
func withCompanions(dir, app string, files []*rankFile, size, workers int) []*rankFile {
	have := make([]bool, size)
	n := 0
	for _, f := range files {
		if !have[f.hdr.Rank] {
			have[f.hdr.Rank] = true
			n++
		}
	}
	if n == size {
		return files
	}
	ents, err := os.ReadDir(dirName(dir))
	if err != nil {
		return files
	}
	lacks := func(r int) bool { return r >= 0 && r < size && !have[r] }
	var paths []string
	for _, e := range ents {
		task, ok := taskOf(e.Name())
		if !ok || task == app || e.IsDir() {
			continue
		}
		if lacks(rankOf(e.Name(), task)) {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	found := make([]*rankFile, len(paths))
	run := files[0].hdr.RunId
	parallel(len(paths), workers, func(i int) {
		f, err := scan(paths[i])
		if err == nil && f.hdr != nil && bytes.Equal(f.hdr.RunId, run) && int(f.hdr.WorldSize) == size {
			found[i] = f
		}
	})
	for _, f := range found {
		if f != nil && lacks(int(f.hdr.Rank)) {
			have[f.hdr.Rank] = true
			files = append(files, f)
		}
	}
	return files
}

// globEscape quotes the glob metacharacters of a task name.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// noTraces is the error for a task without traces in dir: it names the
// tasks whose traces dir does hold, so that a mistyped name is seen at
// once.
func noTraces(dir, app string) error {
	d := dirName(dir)
	msg := fmt.Sprintf("no traces of %q in %s (looked for %s.<rank>.trc)", app, d, app)
	tasks := Tasks(dir)
	if len(tasks) == 0 {
		return fmt.Errorf("%s, and no traces of any task there; run the program under dtrun first, in this directory", msg)
	}
	var names []string
	for _, t := range tasks {
		names = append(names, fmt.Sprintf("%s (%s)", t.Name, plural(t.Files, "trace")))
	}
	return fmt.Errorf("%s; the traces there are of: %s", msg, strings.Join(names, ", "))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Task is one task whose traces a directory holds.
type Task struct {
	Name  string // <app> of <app>.<rank>.trc
	Files int    // trace files
}

// Tasks lists the tasks whose traces (<app>.<rank>.trc) dir holds, by name;
// none when it cannot be read.
func Tasks(dir string) []Task {
	ents, err := os.ReadDir(dirName(dir))
	if err != nil {
		return nil
	}
	count := map[string]int{}
	for _, e := range ents {
		if name, ok := taskOf(e.Name()); ok && !e.IsDir() {
			count[name]++
		}
	}
	var out []Task
	for n, c := range count {
		out = append(out, Task{n, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TraceTask is the task of a trace file name <app>.<rank>.trc, and
// whether base is one.
func TraceTask(base string) (string, bool) { return taskOf(base) }

// taskOf is the task of a trace file name <app>.<rank>.trc.
func taskOf(base string) (string, bool) {
	s, ok := strings.CutSuffix(base, ".trc")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return "", false
	}
	if n, err := strconv.Atoi(s[i+1:]); err != nil || n < 0 {
		return "", false
	}
	return s[:i], true
}

// FindTraces turns what a user names the traces by into the directory
// holding them and the task: dtpa accepts the application as run (app,
// ./app, some/dir/app), one of its trace files (app.0.trc) or a directory
// holding the traces of one task, each relative to dir ("" for the
// current directory). A name that is both a task with traces and a
// directory is the task. When nothing matches, the error lists the tasks
// whose traces the directory does hold.
func FindTraces(dir, name string) (traceDir, app string, err error) {
	if name == "" {
		return "", "", fmt.Errorf("no task named")
	}
	p := name
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	traceDir, app = filepath.Dir(p), filepath.Base(p)
	if dir == "" && !strings.ContainsRune(name, '/') {
		traceDir = ""
	}
	if t, ok := taskOf(app); ok {
		if _, err := os.Stat(p); err == nil {
			app = t
		}
	}
	files, err := traceFiles(traceDir, app)
	if err != nil {
		return "", "", err
	}
	if len(files) > 0 {
		return traceDir, app, nil
	}
	// The tracer names the traces after the program without its extension
	// (pw.x writes pw.<rank>.trc), so the program's own name finds them.
	if ext := filepath.Ext(app); ext != "" && ext != app {
		t := strings.TrimSuffix(app, ext)
		if files, err := traceFiles(traceDir, t); err == nil && len(files) > 0 {
			return traceDir, t, nil
		}
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		tasks := Tasks(p)
		switch len(tasks) {
		case 1:
			return p, tasks[0].Name, nil
		case 0:
			return "", "", fmt.Errorf("%s is a directory without traces (<app>.<rank>.trc); run the program under dtrun first", p)
		}
		if t, ok := mpmdTask(p, tasks); ok {
			return p, t, nil
		}
		var names []string
		for _, t := range tasks {
			names = append(names, t.Name)
		}
		return "", "", fmt.Errorf("%s holds the traces of several tasks; name one: %s", p, strings.Join(names, ", "))
	}
	return "", "", noTraces(traceDir, app)
}

// mpmdTask is, when dir's tasks are the programs of one MPMD run (one
// trace of each names the same run), the task to name it by: the one
// holding the lowest rank.
func mpmdTask(dir string, tasks []Task) (string, bool) {
	var run []byte
	task, low := "", -1
	for _, t := range tasks {
		files, err := traceFiles(dir, t.Name)
		if err != nil || len(files) == 0 {
			return "", false
		}
		f, err := scan(files[0])
		if err != nil || f.hdr == nil || len(f.hdr.RunId) == 0 || run != nil && !bytes.Equal(run, f.hdr.RunId) {
			return "", false
		}
		run = f.hdr.RunId
		if r := int(f.hdr.Rank); low < 0 || r < low {
			task, low = t.Name, r
		}
	}
	return task, true
}

func rankOf(p, app string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), app+"."), ".trc"))
	return n
}

// leftOut is the warning for the trace at path (rank's) that cannot be
// read: err says why. An empty trace is that of a process that ended
// inside MPI_Init, after the tracer created the file and before it wrote
// the header (traceformat.ErrEmpty).
func leftOut(path string, rank int, err error) string {
	if errors.Is(err, traceformat.ErrEmpty) {
		return fmt.Sprintf("%s is empty and is left out: rank %d ended inside MPI_Init, before its trace began (it was killed there).", path, rank)
	}
	return fmt.Sprintf("%s cannot be read and is left out: %v.", path, err)
}

// scanBuffer is the first pass's read buffer. The pass reads frame
// headers and the few small frames around the batches, seeking over each
// batch; a seek discards the buffer, so that every byte read ahead of a
// frame header is a batch's, copied and thrown away: with the replay's 64
// KB buffer the pass read most of each file (a LAMMPS trace's batches are
// about as large; docs/performance.md, "The first pass, symbols, the heap
// below the prepared range, the inbox").
const scanBuffer = 4 << 10

// scanCompacting is scan, after compacting the trace at path in place
// when the tracer left its events raw (deferred) and no process writes it
// any more (compactLeft), or into cp when its directory cannot be written.
// note says what was done, for a warning; the file scanned is rf.path.
func scanCompacting(path string, rank int, cp *copies) (rf *rankFile, note string, err error) {
	rf, err = scan(path)
	var ve *traceformat.VersionError
	if !errors.As(err, &ve) || ve.Major != traceformat.DeferredMajor {
		return rf, "", err
	}
	read, note, err := compactLeft(path, rank, cp)
	if err != nil {
		return nil, "", err
	}
	rf, err = scan(read)
	return rf, note, err
}

// compactLeft compacts in place the deferred trace at path once no
// process writes it: a dtrun that did not finish (killed) compacts none of
// its node's traces, and a rank killed on another node leaves its own
// deferred. A trace whose directory cannot be written (a read-only file
// system, another user's directory, a full disk) is compacted into cp
// instead, when cp is not nil: the analysis reads that copy and loses
// nothing. read is the file to read; note says what was done ("" when
// another process compacted it meanwhile), of rank (the file's) in words
// that report.GroupWarnings makes one line for all ranks; err, why the
// trace stays deferred.
func compactLeft(path string, rank int, cp *copies) (read, note string, err error) {
	compacted, cerr := records.CompactFinished(path, compactWait)
	if !compacted && records.CannotWrite(cerr) && cp != nil {
		return cp.compact(path, rank, cerr)
	}
	switch {
	case errors.Is(cerr, records.ErrBeingWritten):
		return "", "", fmt.Errorf("%s: its events are not compacted yet, and %v: analyse it once the job has ended", path, cerr)
	case !compacted && cerr != nil:
		return "", "", fmt.Errorf("%s: its events are not compacted yet, and compacting it in place failed: %w; "+
			"run `dtrun --compact %s` where its directory is writable", path, cerr, path)
	case compacted && cerr != nil:
		return path, fmt.Sprintf("Rank %d: %s %s in place up to damage (%v)", rank, leftRaw, compactedIt, cerr), nil
	case compacted:
		return path, fmt.Sprintf("Rank %d: %s %s in place", rank, leftRaw, compactedIt), nil
	}
	return path, "", nil
}

// The words of compactLeft's notes.
const (
	leftRaw     = "its trace's events were still raw records (dtrun did not compact the run's traces)"
	compactedIt = "and dtpa compacted it"
)

// copies is the directory, under os.TempDir, where one analysis compacts
// the deferred traces that it cannot compact in place; made on first use,
// removed with what it holds by release when the analysis ends.
type copies struct {
	mu  sync.Mutex
	dir string
	err error
}

// compact compacts the deferred trace at path into c's directory
// (compactLeft's answers); why is why it could not be compacted in place.
func (c *copies) compact(path string, rank int, why error) (read, note string, err error) {
	c.mu.Lock()
	if c.dir == "" && c.err == nil {
		c.dir, c.err = os.MkdirTemp("", "dtpa-compacted-")
	}
	dir, derr := c.dir, c.err
	c.mu.Unlock()
	if derr != nil {
		return "", "", fmt.Errorf("%s: its events are not compacted yet; compacting it in place failed (%w), and a copy could not be made: %v; "+
			"run `dtrun --compact %s` where its directory is writable", path, why, derr, path)
	}
	compacted, cerr := records.CompactFinishedCopy(path, dir, compactWait)
	if !compacted {
		if cerr == nil {
			cerr = errors.New("nothing was written")
		}
		return "", "", fmt.Errorf("%s: its events are not compacted yet; compacting it in place failed (%w), and so did compacting a copy: %v",
			path, why, cerr)
	}
	read = filepath.Join(dir, filepath.Base(path))
	note = fmt.Sprintf("Rank %d: %s, and its directory cannot be written (%v): dtpa analysed a compacted copy in %s, removed after the analysis "+
		"(`dtrun --compact` where the directory can be written compacts the trace itself)", rank, leftRaw, rootCause(why), dir)
	if cerr != nil {
		note += fmt.Sprintf(" (the copy ends at damage: %v)", cerr)
	}
	return read, note, nil
}

// release removes the copies.
func (c *copies) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != "" {
		os.RemoveAll(c.dir)
		c.dir, c.err = "", errors.New("released")
	}
}

// rootCause is the innermost error of err's chain: "read-only file
// system" rather than the whole "open dir/.trace.compact-123: …".
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// compactAllLeft compacts the traces of app in dir left deferred
// (compactLeft), on workers goroutines, and returns what it did; errors
// are left for the scan that follows, which meets them again.
func compactAllLeft(dir, app string, workers int) []string {
	paths, err := discover(dir, app)
	if err != nil {
		return nil
	}
	notes := make([]string, len(paths))
	parallel(len(paths), workers, func(i int) {
		if records.IsDeferred(paths[i]) {
			_, notes[i], _ = compactLeft(paths[i], rankOf(paths[i], app), nil)
		}
	})
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// compactWait is how long scanCompacting waits for a deferred trace that
// another process holds: another analysis process (dtpa-mpi's) compacting
// it releases it within seconds, a rank still running does not.
const compactWait = 10 * time.Second

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
	rd, err := traceformat.NewReader(f, traceformat.ReaderOptions{Name: path, SkipEvents: true, SkipDefinitions: true, BufferSize: scanBuffer})
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
	rf.readLateCrash()
	return rf, nil
}

// LateCrashSuffix makes the name of the file beside a trace that holds a
// crash after the trace ended (tracepb.LateCrash): a destructor or an exit
// handler crashed after MPI_Finalize, when the trace was complete.
const LateCrashSuffix = ".crash"

// maxLateCrash bounds that file (the tracer writes under 2 KB).
const maxLateCrash = 64 << 10

// readLateCrash takes the crash after the trace's end that the tracer
// wrote beside it into the footer, as the footer's crash (rf.late), when
// it is of this run and the trace ended normally (MPI_Finalize, the
// process's exit, a size limit): not after MPI_Abort or a fatal signal,
// which end the process themselves. A file that cannot be read sets
// lateErr; one of another run (left by an earlier one) is ignored.
func (rf *rankFile) readLateCrash() {
	f := rf.footer
	if f == nil || f.Crash != nil || rf.hdr == nil || f.StopReason == tracepb.Footer_ABORT || f.StopReason == tracepb.Footer_SIGNAL {
		return
	}
	p := rf.path + LateCrashSuffix
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var b []byte
	if err == nil {
		b, err = io.ReadAll(io.LimitReader(fh, maxLateCrash+1))
		fh.Close()
	}
	lc := &tracepb.LateCrash{}
	switch {
	case err != nil:
	case len(b) > maxLateCrash:
		err = fmt.Errorf("larger than %d bytes", maxLateCrash)
	default:
		if err = proto.Unmarshal(b, lc); err == nil && lc.Crash == nil {
			err = errors.New("it holds no crash")
		}
	}
	if err != nil {
		rf.lateErr = fmt.Sprintf("%s cannot be read (%v): the crash after the end of the trace it records is left out.", p, err)
		return
	}
	if !bytes.Equal(lc.RunId, rf.hdr.RunId) {
		return // an earlier run's
	}
	f.Crash, rf.late = lc.Crash, true
}

// after is what rank file f's crash came after (report.Crash.After), ""
// for a crash during the run.
func (rf *rankFile) after() string {
	switch {
	case !rf.late:
		return ""
	case rf.footer.StopReason == tracepb.Footer_FINALIZE:
		return "MPI_Finalize"
	}
	return "the end of its trace"
}

// checkRuns returns the traces of one run among files (app's in dir) and
// its world size. Traces of different runs cannot be analysed together.
// A directory where a run of fewer ranks overwrote the first traces of an
// earlier one (app.0.trc, app.1.trc of the new run beside app.2.trc,
// app.3.trc of the old) holds exactly one run whose traces are all there,
// with the companions of an MPMD run (withCompanions): that run is
// analysed and the other files are left out with a warning. Any other mix
// is refused, naming every file's run.
func checkRuns(dir, app string, files []*rankFile, workers int, warn func(string)) ([]*rankFile, int, error) {
	byRun := map[string][]*rankFile{}
	var order []string
	for _, f := range files {
		k := string(f.hdr.RunId)
		if _, ok := byRun[k]; !ok {
			order = append(order, k)
		}
		byRun[k] = append(byRun[k], f)
	}
	if len(byRun) > 1 {
		var whole []string
		for _, k := range order {
			if runWhole(dir, app, byRun[k], workers) {
				whole = append(whole, k)
			}
		}
		if len(whole) != 1 {
			var parts []string
			for _, k := range order {
				parts = append(parts, fmt.Sprintf("run %x: %s", []byte(k), baseNames(byRun[k])))
			}
			return nil, 0, fmt.Errorf("the directory holds traces of %d different runs, none of them whole, which cannot be analysed together (%s); move the traces of one run to a directory of their own",
				len(byRun), strings.Join(parts, "; "))
		}
		kept := byRun[whole[0]]
		for _, k := range order {
			if k != whole[0] {
				warn(otherRun(byRun[k], kept[0].hdr))
			}
		}
		files = kept
	}
	size := 0
	for _, f := range files {
		if int(f.hdr.WorldSize) > size {
			size = int(f.hdr.WorldSize)
		}
	}
	for _, f := range files {
		if int(f.hdr.WorldSize) != size {
			return nil, 0, fmt.Errorf("%s says the run had %d processes, %s says %d: the traces are inconsistent",
				filepath.Base(f.path), f.hdr.WorldSize, filepath.Base(files[0].path), files[0].hdr.WorldSize)
		}
	}
	// Tables are sized by the world: refuse a size no run has (a damaged
	// or forged header) rather than allocate for it.
	if size > maxWorld {
		return nil, 0, fmt.Errorf("%s claims %d processes, more than dtpa handles (%d)", filepath.Base(files[0].path), size, maxWorld)
	}
	return files, size, nil
}

// runWhole tells whether files, traces of one run, hold every rank of
// its world, with the other programs' traces of an MPMD run in dir.
func runWhole(dir, app string, files []*rankFile, workers int) bool {
	size := int(files[0].hdr.WorldSize)
	if size <= 0 || size > maxWorld {
		return false
	}
	for _, f := range files {
		if int(f.hdr.WorldSize) != size || int(f.hdr.Rank) >= size {
			return false
		}
	}
	have := make([]bool, size)
	n := 0
	for _, f := range withCompanions(dir, app, files, size, workers) {
		if !have[f.hdr.Rank] {
			have[f.hdr.Rank] = true
			n++
		}
	}
	return n == size
}

// otherRun is the warning for the traces files of another run than the
// one analysed, whose header is kept.
func otherRun(files []*rankFile, kept *tracepb.Header) string {
	h := files[0].hdr
	verb := "is"
	if len(files) > 1 {
		verb = "are"
	}
	of, rest := "of another run", "whose other traces are missing"
	if h.StartUnixNs != 0 && h.StartUnixNs < kept.StartUnixNs {
		of, rest = "left from an earlier run", "whose other traces the analysed run, of fewer processes, wrote over"
	}
	return fmt.Sprintf("%s %s %s (run %x, %d processes, started %s), %s: left out. The run analysed is %x (%d processes, started %s).",
		baseNames(files), verb, of, h.RunId, h.WorldSize, startTime(h), rest, kept.RunId, kept.WorldSize, startTime(kept))
}

// startTime is when the run of header h started, on the calendar.
func startTime(h *tracepb.Header) string {
	if h.StartUnixNs == 0 {
		return "at an unknown time"
	}
	return time.Unix(0, h.StartUnixNs).UTC().Format("2006-01-02 15:04:05 UTC")
}

func baseNames(files []*rankFile) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f.path)
	}
	return strings.Join(names, ", ")
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

// TraceSet is the traces of one task that a run wrote into a directory
// (dtrun's closing summary).
type TraceSet struct {
	Dir  string
	Task string
	// Tasks are the programs of an MPMD run (mpirun -np 2 ./ocean : -np 2
	// ./atmos), Task first, whose traces the set holds together; nil for
	// one program.
	Tasks []string
	Files int
	Bytes int64
	// Stopped lists the ranks whose tracing ended before the program did,
	// with why, by rank.
	Stopped []StoppedRank
	// Late are the crashes after complete traces ended (a destructor or
	// an exit handler after MPI_Finalize), without their frames, by rank.
	Late []report.Crash
	// Missing are the ranks of the run (its world size, as the headers
	// say) that have no trace in the directory: they never reached
	// MPI_Init, or wrote it elsewhere (another node's directory of that
	// name, not shared with this one).
	Missing []int
	// World is the run's number of ranks, the largest world size its
	// headers give (0: none could be read).
	World int
	ranks map[int]bool // the ranks present
}

// StoppedRank is a rank whose trace lacks the end of the run.
type StoppedRank struct {
	Rank  int
	Host  string // the node it ran on, as its header says ("" unknown)
	Why   string
	Cut   bool // the trace has no footer: the process died
	Empty bool // the trace is empty: the process died inside MPI_Init
	// Unfinished are the MPI calls in progress when the process ended
	// (without their place in the program: RunTraces does not symbolize).
	Unfinished []report.UnfinishedCall
	// Crash is where the process crashed, without its frames (nil: it
	// did not crash).
	Crash *report.Crash
}

// RunTraces lists, by task, the traces in dir that keep selects (nil:
// all; dtrun's, those its job wrote), reading each file's header and
// footer to find the ranks that stopped tracing early.
func RunTraces(dir string, keep func(fs.FileInfo) bool) []TraceSet {
	ents, err := os.ReadDir(dirName(dir))
	if err != nil {
		return nil
	}
	by := map[string]*TraceSet{}
	var out []*TraceSet
	runOf := map[*TraceSet]string{} // the run id of the set's first readable header
	for _, e := range ents {
		task, ok := taskOf(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil || keep != nil && !keep(info) {
			continue
		}
		ts := by[task]
		if ts == nil {
			ts = &TraceSet{Dir: dirName(dir), Task: task}
			by[task] = ts
			out = append(out, ts)
		}
		ts.Files++
		ts.Bytes += info.Size()
		path := filepath.Join(dir, e.Name())
		rank := rankOf(path, task)
		if ts.ranks == nil {
			ts.ranks = map[int]bool{}
		}
		ts.ranks[rank] = true
		rf, err := scan(path)
		if err == nil && rf.hdr != nil && rf.hdr.WorldSize <= maxWorld {
			ts.World = max(ts.World, int(rf.hdr.WorldSize))
		}
		if _, ok := runOf[ts]; !ok && err == nil && rf.hdr != nil && len(rf.hdr.RunId) > 0 {
			runOf[ts] = string(rf.hdr.RunId)
		}
		switch {
		case errors.Is(err, traceformat.ErrEmpty):
			ts.Stopped = append(ts.Stopped, StoppedRank{Rank: rank, Why: fmt.Sprintf("ended inside MPI_Init, before its trace began: %s is empty", e.Name()), Empty: true})
		case err != nil:
			ts.Stopped = append(ts.Stopped, StoppedRank{Rank: rank, Why: fmt.Sprintf("the trace cannot be read: %v", err)})
		case rf.err != nil:
			why := rf.err.Error()
			var ce *traceformat.CorruptError
			if errors.As(rf.err, &ce) {
				why = ce.Reason
			}
			msg := fmt.Sprintf("the trace is cut or damaged at byte %d (%s): the process died, or the file was damaged", rf.off, why)
			if why == traceformat.NoFooter {
				msg = noEnd // whole frames, then nothing: not damage
			}
			ts.Stopped = append(ts.Stopped, StoppedRank{Rank: rank, Host: rf.hdr.GetHostname(), Why: msg, Cut: true})
		case rf.footer == nil:
			ts.Stopped = append(ts.Stopped, StoppedRank{Rank: rank, Host: rf.hdr.GetHostname(), Why: noEnd, Cut: true})
		default:
			if why := stopWhy(rf.footer); why != "" {
				st := StoppedRank{Rank: rank, Why: why, Unfinished: footerCalls(rank, rf.footer)}
				if c := rf.footer.GetCrash(); c != nil {
					rc := crashOf(rank, c)
					rc.After = rf.after()
					st.Crash = &rc
				}
				ts.Stopped = append(ts.Stopped, st)
			} else if rf.late {
				rc := crashOf(rank, rf.footer.Crash)
				rc.After = rf.after()
				ts.Late = append(ts.Late, rc)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	// The programs of one MPMD run are one set: dtpa analyses them together.
	var res []TraceSet
	first := map[string]int{} // run id → index in res
	for _, ts := range out {
		if run, ok := runOf[ts]; ok {
			if i, ok := first[run]; ok {
				m := &res[i]
				if m.Tasks == nil {
					m.Tasks = []string{m.Task}
				}
				m.Tasks = append(m.Tasks, ts.Task)
				m.Files += ts.Files
				m.Bytes += ts.Bytes
				m.Stopped = append(m.Stopped, ts.Stopped...)
				m.Late = append(m.Late, ts.Late...)
				for r := range ts.ranks {
					m.ranks[r] = true
				}
				m.World = max(m.World, ts.World)
				continue
			}
			first[run] = len(res)
		}
		res = append(res, *ts)
	}
	for i := range res {
		for r := 0; r < res[i].World; r++ {
			if !res[i].ranks[r] {
				res[i].Missing = append(res[i].Missing, r)
			}
		}
		st := res[i].Stopped
		sort.Slice(st, func(a, b int) bool { return st[a].Rank < st[b].Rank })
		late := res[i].Late
		sort.Slice(late, func(a, b int) bool { return late[a].Rank < late[b].Rank })
	}
	return res
}

// noEnd is why a trace that ends after a whole frame without its footer
// stopped: its process was killed without warning (the ranks killed
// alike make one warning).
const noEnd = "the trace has no end (the process was killed before writing it)"

// stopWhy says in words why a trace's footer says tracing ended early or
// lost events; "" for a complete trace.
func stopWhy(f *tracepb.Footer) string {
	var why string
	switch f.StopReason {
	case tracepb.Footer_FINALIZE, tracepb.Footer_STOP_UNSPECIFIED:
	case tracepb.Footer_SIZE_LIMIT:
		why = "tracing stopped at MaxTraceSize"
	case tracepb.Footer_BUFFER_FULL:
		why = "tracing stopped when the trace buffer filled up (MaxTraceSize = -1)"
	case tracepb.Footer_WRITE_ERROR:
		why = "tracing stopped on a write error" + detail(f.Message)
	case tracepb.Footer_ABORT:
		why = "the program called MPI_Abort"
	case tracepb.Footer_SIGNAL:
		why = "a fatal signal ended the process" + detail(f.Message)
	case tracepb.Footer_EXIT:
		why = "the process exited without MPI_Finalize"
	default:
		why = "tracing stopped early (" + f.StopReason.String() + ")"
	}
	if f.DroppedEvents > 0 {
		if why != "" {
			why += "; "
		}
		why += fmt.Sprintf("%d events dropped", f.DroppedEvents)
	}
	return why
}
