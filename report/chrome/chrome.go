// Package chrome writes Chrome trace-event JSON (the "JSON Object Format"
// of the Trace Event Format), which Perfetto UI, chrome://tracing and the
// Chrome DevTools performance panel open: dtpa --export chrome.
//
// The Writer streams: each event is written as it is given, so a run of any
// length is exported with a buffer's worth of memory. It knows the format,
// not the run: package analyzer says which events to write.
//
// Times are given in nanoseconds and written in microseconds, the format's
// unit, with three decimals (exact, by integer arithmetic); they should be
// relative to some origin of the run, so that the values stay well within
// a double's exact integers when viewers parse them.
//
// Every string (names, file paths, host names) is escaped by
// encoding/json's rules, HTML characters included, so that a name read
// from a trace can never break out of its string, nor out of a page that
// embeds the file.
package chrome

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
)

// Writer writes one trace-event JSON object.
type Writer struct {
	w      *bufio.Writer
	b      []byte // the event being written
	n      int64  // events written
	closed bool
	part   bool              // continues another Writer's events (NewPartWriter)
	strs   map[string][]byte // encoded names, for the few that repeat
}

// NewWriter starts the JSON object on w.
func NewWriter(w io.Writer) *Writer {
	cw := &Writer{w: bufio.NewWriterSize(w, 256<<10), strs: map[string][]byte{}}
	cw.w.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`)
	return cw
}

// NewPartWriter writes events that continue, on w, the event list of
// another Writer, which has written at least one event before them and
// writes the rest of the object (dtpa-mpi: each analysis process writes
// the events of its ranks, process 0 the object around them). Its bytes
// are those the other Writer would have written for the same events.
func NewPartWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10), part: true, strs: map[string][]byte{}}
}

// Flush writes what is buffered to the underlying writer, so that
// something else may write there (another Writer's part, NewPartWriter).
func (w *Writer) Flush() error { return w.w.Flush() }

// Events is the number of events written so far.
func (w *Writer) Events() int64 { return w.n }

// AppendString appends s as a JSON string.
func AppendString(dst []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(dst, q...)
}

// AppendMicros appends ns nanoseconds as microseconds with three decimals.
func AppendMicros(dst []byte, ns int64) []byte {
	if ns < 0 {
		dst = append(dst, '-')
		if ns == -ns { // math.MinInt64
			return append(dst, "9223372036854775.808"...)
		}
		ns = -ns
	}
	dst = strconv.AppendInt(dst, ns/1000, 10)
	f := ns % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// str appends s encoded, caching the encodings of up to a few thousand
// distinct strings (function and span names).
func (w *Writer) str(s string) {
	q, ok := w.strs[s]
	if !ok {
		q = AppendString(nil, s)
		if len(w.strs) < 4096 {
			w.strs[s] = q
		}
	}
	w.b = append(w.b, q...)
}

func (w *Writer) begin(ph string, pid, tid int) {
	w.b = w.b[:0]
	if w.n > 0 || w.part {
		w.b = append(w.b, ",\n"...)
	} else {
		w.b = append(w.b, '\n')
	}
	w.b = append(w.b, `{"ph":"`...)
	w.b = append(w.b, ph...)
	w.b = append(w.b, `","pid":`...)
	w.b = strconv.AppendInt(w.b, int64(pid), 10)
	w.b = append(w.b, `,"tid":`...)
	w.b = strconv.AppendInt(w.b, int64(tid), 10)
}

func (w *Writer) end() {
	w.b = append(w.b, '}')
	w.w.Write(w.b)
	w.n++
}

// ProcessName names process pid and orders it (sort index) among the
// processes: metadata events (ph "M").
func (w *Writer) ProcessName(pid int, name string, sortIndex int) {
	w.meta("process_name", pid, pid, name)
	w.metaSort("process_sort_index", pid, pid, sortIndex)
}

// ThreadName names thread tid of process pid and orders it in the process.
func (w *Writer) ThreadName(pid, tid int, name string, sortIndex int) {
	w.meta("thread_name", pid, tid, name)
	w.metaSort("thread_sort_index", pid, tid, sortIndex)
}

func (w *Writer) meta(what string, pid, tid int, name string) {
	w.begin("M", pid, tid)
	w.b = append(w.b, `,"name":"`...)
	w.b = append(w.b, what...)
	w.b = append(w.b, `","args":{"name":`...)
	w.b = AppendString(w.b, name)
	w.b = append(w.b, '}')
	w.end()
}

func (w *Writer) metaSort(what string, pid, tid, idx int) {
	w.begin("M", pid, tid)
	w.b = append(w.b, `,"name":"`...)
	w.b = append(w.b, what...)
	w.b = append(w.b, `","args":{"sort_index":`...)
	w.b = strconv.AppendInt(w.b, int64(idx), 10)
	w.b = append(w.b, '}')
	w.end()
}

// Complete writes a complete event (ph "X"): a slice of thread tid of
// process pid from ts for dur ns. args, when not empty, are the members of
// the event's args object, already encoded (`"bytes":8,"peer":1`).
func (w *Writer) Complete(pid, tid int, cat, name string, ts, dur int64, args []byte) {
	w.slice("X", pid, tid, cat, name, ts, dur, args)
}

// Begin writes the beginning of a slice (ph "B") of thread tid of process
// pid at ts that no end event follows: viewers draw it to the end of the
// trace as a slice that did not end (Perfetto: "Did not end"). Nothing
// may start on that thread after it, or viewers nest it there.
func (w *Writer) Begin(pid, tid int, cat, name string, ts int64, args []byte) {
	w.slice("B", pid, tid, cat, name, ts, -1, args)
}

// Instant writes an instant event of thread tid of process pid at ts (ph
// "i", scope "t": viewers mark the moment on the thread's track).
func (w *Writer) Instant(pid, tid int, cat, name string, ts int64, args []byte) {
	w.begin("i", pid, tid)
	w.b = append(w.b, `,"s":"t","cat":`...)
	w.str(cat)
	w.b = append(w.b, `,"name":`...)
	w.str(name)
	w.b = append(w.b, `,"ts":`...)
	w.b = AppendMicros(w.b, ts)
	w.args(args)
	w.end()
}

// args writes an event's args object of members args, none when empty.
func (w *Writer) args(args []byte) {
	if len(args) > 0 {
		w.b = append(w.b, `,"args":{`...)
		w.b = append(w.b, args...)
		w.b = append(w.b, '}')
	}
}

// slice writes a slice's event of phase ph; dur < 0 writes none.
func (w *Writer) slice(ph string, pid, tid int, cat, name string, ts, dur int64, args []byte) {
	w.begin(ph, pid, tid)
	w.b = append(w.b, `,"cat":`...)
	w.str(cat)
	w.b = append(w.b, `,"name":`...)
	w.str(name)
	w.b = append(w.b, `,"ts":`...)
	w.b = AppendMicros(w.b, ts)
	if dur >= 0 {
		w.b = append(w.b, `,"dur":`...)
		w.b = AppendMicros(w.b, dur)
	}
	w.args(args)
	w.end()
}

// FlowStart writes the start of flow id (ph "s") at ts on thread tid of
// process pid: viewers bind it to the slice of that thread enclosing ts,
// and Chrome DevTools to the slice starting exactly at ts, so ts should
// be the start of the slice the flow leaves from.
func (w *Writer) FlowStart(pid, tid int, cat, name string, id uint64, ts int64) {
	w.flow("s", pid, tid, cat, name, id, ts)
	w.end()
}

// FlowEnd writes the end of flow id (ph "f") bound to the slice enclosing
// ts ("bp":"e"; the default would bind it to the next slice to start), on
// thread tid of process pid; ts should be that slice's start.
func (w *Writer) FlowEnd(pid, tid int, cat, name string, id uint64, ts int64) {
	w.flow("f", pid, tid, cat, name, id, ts)
	w.b = append(w.b, `,"bp":"e"`...)
	w.end()
}

func (w *Writer) flow(ph string, pid, tid int, cat, name string, id uint64, ts int64) {
	w.begin(ph, pid, tid)
	w.b = append(w.b, `,"cat":`...)
	w.str(cat)
	w.b = append(w.b, `,"name":`...)
	w.str(name)
	w.b = append(w.b, `,"id":`...)
	w.b = strconv.AppendUint(w.b, id, 10)
	w.b = append(w.b, `,"ts":`...)
	w.b = AppendMicros(w.b, ts)
}

// Close ends the event list and the object, with otherData (shown by
// viewers as the trace's metadata; nil for none), and flushes. It does not
// close the underlying writer.
func (w *Writer) Close(otherData map[string]string) error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.b = append(w.b[:0], "\n]"...)
	if len(otherData) > 0 {
		od, err := json.Marshal(otherData) // keys sorted
		if err != nil {
			return err
		}
		w.b = append(w.b, `,"otherData":`...)
		w.b = append(w.b, od...)
	}
	w.b = append(w.b, "}\n"...)
	w.w.Write(w.b)
	return w.w.Flush()
}
