package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// AppendJSON appends r's JSON as json.Marshal encodes it: compact, with
// HTML's <, > and & escaped (the page of dtpa --html embeds it in a
// script element). A float JSON cannot encode fails it with
// encoding/json's error.
func AppendJSON(dst []byte, r *Report) ([]byte, error) {
	return appendReportJSON(dst, r, false)
}

// AppendIndentedJSON appends r's JSON as a json.Encoder with
// SetEscapeHTML(false) and SetIndent("", "  ") encodes it, without the
// final newline (dtpa --json, docs/report-format.md). A float JSON cannot
// encode fails it with encoding/json's error.
func AppendIndentedJSON(dst []byte, r *Report) ([]byte, error) {
	return appendReportJSON(dst, r, true)
}

// reportJSON writes a report as encoding/json does, indented or compact
// as it goes, field by field. Reflection cost more per call site than the
// site's figures, and indenting the compact encoding walked every byte a
// second time; the few kilobytes besides the call sites (the ranks'
// figures and call mix, the profile) cost as much again through
// encoding/json as written here. Only strings with characters JSON
// escapes go through encoding/json.
// TestReportJSON compares it with encoding/json.
type reportJSON struct {
	b []byte
	// indent: two spaces per level, a space after a colon (AppendIndentedJSON);
	// else compact, and HTML's characters escaped (AppendJSON).
	indent bool
	// plain are the bytes a string holds as they are (jsonPlain).
	plain *[256]bool
	// bad is set by a float JSON cannot encode (NaN, ±Inf): the report is
	// then encoded by encoding/json, for its error.
	bad bool
	// tmp is the compact encoding of a string given to encoding/json.
	tmp bytes.Buffer
	enc *json.Encoder
	err error
	// The objects written most, by pieces.
	srcP, frameP, srcRankP, waitP, causeP pieces
}

// jsonPlain are, for a string written compact with HTML's characters
// escaped [0] and indented without [1], the bytes encoding/json writes
// as they are: printable ASCII but the quote and the backslash (and
// <, > and & for [0]).
var jsonPlain = func() (p [2][256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		p[0][c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
		p[1][c] = c != '"' && c != '\\'
	}
	return p
}()

// appendReportJSON appends r's JSON to dst, indented or compact.
func appendReportJSON(dst []byte, r *Report, indent bool) ([]byte, error) {
	w := &reportJSON{b: slices.Grow(dst, jsonSize(r)), indent: indent}
	w.enc = json.NewEncoder(&w.tmp)
	if indent {
		w.plain = &jsonPlain[1]
		w.enc.SetEscapeHTML(false)
	} else {
		w.plain = &jsonPlain[0]
	}
	w.report(r)
	if w.err == nil && w.bad {
		// encoding/json's error.
		_, w.err = json.Marshal(r)
		if w.err == nil {
			w.err = errors.New("internal error: a float encoding/json encodes was taken for one it cannot")
		}
	}
	return w.b, w.err
}

// jsonSize is about the size of r's JSON, indented: its call sites'
// records.
func jsonSize(r *Report) int {
	n := 1 << 16
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		n += 300*len(iv.Waits) + 350*len(iv.Causes)
		for j := range iv.SRC {
			s := &iv.SRC[j]
			n += 400 + 110*len(s.Stack) + 300*len(s.Ranks)
		}
	}
	return n
}

// newline is a newline and the indentation of up to 32 levels.
const newline = "\n                                                                "

// nl starts a line at depth d when indenting.
func (w *reportJSON) nl(d int) {
	if !w.indent {
		return
	}
	if n := 1 + 2*d; n <= len(newline) {
		w.b = append(w.b, newline[:n]...)
		return
	}
	w.b = append(w.b, '\n')
	for range d {
		w.b = append(w.b, "  "...)
	}
}

// key starts a member of an object at depth d−1 (its first when first):
// k is the member's quoted name, a colon and a space (written without the
// space when compact).
func (w *reportJSON) key(d int, k string, first bool) {
	if !first {
		w.b = append(w.b, ',')
	}
	if !w.indent {
		w.b = append(w.b, k[:len(k)-1]...)
		return
	}
	w.nl(d)
	w.b = append(w.b, k...)
}

func (w *reportJSON) int(v int64) {
	if uint64(v) < 10 { // ranks, counts and lines
		w.b = append(w.b, byte('0'+v))
		return
	}
	w.b = appendInt(w.b, v)
}

// float appends v as encoding/json does: %f from 1e-6 up to 1e21,
// else %e with a one-digit negative exponent not padded.
func (w *reportJSON) float(v float64) {
	if v == 0 && !math.Signbit(v) { // most of a call site's waits
		w.b = append(w.b, '0')
		return
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		w.bad = true
		w.b = append(w.b, '0')
		return
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e6 {
		// Seconds from nanoseconds (float64(ns)/1e9): when v is the double
		// nearest n/1e9 for an integer n of at most 15 digits, n's digits
		// with the point 9 from the right are the shortest decimal that
		// reads back as v (no other decimal of 15 digits or fewer is read
		// as the same double), which is what strconv would find.
		n := math.Round(a * 1e9)
		if n < 1e15 && n/1e9 == a {
			w.b = appendNanos(w.b, v < 0, uint64(n))
			return
		}
	}
	f := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	w.b = strconv.AppendFloat(w.b, v, f, -1, 64)
	if f == 'e' {
		// e-07 → e-7
		n := len(w.b)
		if n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
			w.b[n-2] = w.b[n-1]
			w.b = w.b[:n-1]
		}
	}
}

// appendNanos appends u nanoseconds as seconds, −u when neg: the integer
// part, then the point and the nine digits of the fraction without their
// trailing zeros when it has one. The digits are written in place two at
// a time: appending them from a buffer cost a copy per float.
func appendNanos(b []byte, neg bool, u uint64) []byte {
	if neg {
		b = append(b, '-')
	}
	if s := u / 1e9; s < 10 {
		b = append(b, byte('0'+s))
	} else {
		b = strconv.AppendUint(b, s, 10)
	}
	f := u % 1e9
	if f == 0 {
		return b
	}
	b = slices.Grow(b, 10)
	n := len(b)
	d := b[n : n+10]
	d[0] = '.'
	d[1] = byte('0' + f/1e8)
	r := f % 1e8
	hi, lo := r/1e4, r%1e4
	p := 2 * (hi / 100)
	d[2], d[3] = digitPairs[p], digitPairs[p+1]
	p = 2 * (hi % 100)
	d[4], d[5] = digitPairs[p], digitPairs[p+1]
	p = 2 * (lo / 100)
	d[6], d[7] = digitPairs[p], digitPairs[p+1]
	p = 2 * (lo % 100)
	d[8], d[9] = digitPairs[p], digitPairs[p+1]
	end := 10
	for d[end-1] == '0' {
		end--
	}
	return b[:n+end]
}

// str appends s quoted: as is when all its bytes are plain (function
// names, paths), else as encoding/json escapes it.
func (w *reportJSON) str(s string) {
	for i := 0; i < len(s); i++ {
		if !w.plain[s[i]] {
			w.value(0, s)
			return
		}
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

// compact sets w.tmp to v's compact encoding, without the final newline;
// false on an error (kept in w.err).
func (w *reportJSON) compact(v any) bool {
	if w.err != nil {
		return false
	}
	w.tmp.Reset()
	if err := w.enc.Encode(v); err != nil {
		w.err = err
		return false
	}
	w.tmp.Truncate(w.tmp.Len() - 1)
	return true
}

// value appends v as encoding/json encodes it, indented at depth d when
// indenting.
func (w *reportJSON) value(d int, v any) {
	if !w.compact(v) {
		return
	}
	if w.indent {
		w.b = indentJSONAt(w.b, w.tmp.Bytes(), d)
	} else {
		w.b = append(w.b, w.tmp.Bytes()...)
	}
}

func (w *reportJSON) report(r *Report) {
	// Report's fields in order, RunFacts' members where it is embedded.
	w.b = append(w.b, '{')
	w.key(1, `"schema": `, true)
	w.str(r.Schema)
	w.key(1, `"task": `, false)
	w.str(r.Task)
	w.key(1, `"processors": `, false)
	w.int(int64(r.Processors))
	if f := r.Findings; f != nil {
		w.key(1, `"findings": `, false)
		w.findings(1, f)
	}
	w.key(1, `"warnings": `, false)
	w.strs(1, r.Warnings)
	if c := r.ClockViolations; c != nil {
		w.key(1, `"clock_violations": `, false)
		w.b = append(w.b, '{')
		w.key(2, `"count": `, true)
		w.int(c.Count)
		w.key(2, `"worst": `, false)
		w.float(c.Worst)
		w.key(2, `"worst_rank": `, false)
		w.int(int64(c.WorstRank))
		w.key(2, `"repaired": `, false)
		w.bool(c.Repaired)
		w.key(2, `"amortized": `, false)
		w.int(c.Amortized)
		w.key(2, `"unrepaired": `, false)
		w.int(c.Unrepaired)
		w.key(2, `"unrepaired_worst": `, false)
		w.float(c.UnrepairedWorst)
		w.key(2, `"unrepaired_worst_rank": `, false)
		w.int(int64(c.UnrepairedWorstRank))
		w.key(2, `"unrepaired_sync_sends": `, false)
		w.int(c.UnrepairedSyncSends)
		w.key(2, `"unrepaired_nonblocking": `, false)
		w.int(c.UnrepairedNonblocking)
		w.key(2, `"unrepaired_threaded": `, false)
		w.int(c.UnrepairedThreaded)
		w.close(1, 1, '}')
	}
	if u := r.Unmatched; u != nil {
		w.key(1, `"unmatched": `, false)
		w.b = append(w.b, '{')
		w.key(2, `"receives": `, true)
		w.int(u.Receives)
		w.key(2, `"sends": `, false)
		w.int(u.Sends)
		w.key(2, `"collectives": `, false)
		w.int(u.Collectives)
		w.key(2, `"requests": `, false)
		w.int(u.Requests)
		w.key(2, `"stalls": `, false)
		w.int(u.Stalls)
		w.close(1, 1, '}')
	}
	if len(r.Unfinished) > 0 {
		w.key(1, `"unfinished": `, false)
		w.value(1, r.Unfinished)
	}
	if len(r.Elsewhere) > 0 {
		w.key(1, `"elsewhere": `, false)
		w.value(1, r.Elsewhere)
	}
	if len(r.Crashes) > 0 {
		w.key(1, `"crashes": `, false)
		w.value(1, r.Crashes)
	}
	if r.Run != nil {
		w.key(1, `"run": `, false)
		w.run(1, r.Run)
	}
	if len(r.Hosts) > 0 {
		w.key(1, `"hosts": `, false)
		w.array(1, r.Hosts == nil, len(r.Hosts), func(d, i int) {
			h := &r.Hosts[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"host": `, true)
			w.str(h.Host)
			w.key(d+1, `"ranks": `, false)
			w.ints(d+1, h.Ranks)
			w.close(d, 1, '}')
		})
	}
	if len(r.Programs) > 0 {
		w.key(1, `"programs": `, false)
		w.array(1, r.Programs == nil, len(r.Programs), func(d, i int) {
			p := &r.Programs[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"program": `, true)
			w.str(p.Program)
			w.key(d+1, `"ranks": `, false)
			w.ints(d+1, p.Ranks)
			w.close(d, 1, '}')
		})
	}
	w.key(1, `"intervals": `, false)
	w.array(1, r.Intervals == nil, len(r.Intervals), func(d, i int) { w.interval(d, &r.Intervals[i]) })
	w.nl(0)
	w.b = append(w.b, '}')
}

// array appends at depth d an array of n elements (null when isNil),
// elem appending element i at depth d+1.
func (w *reportJSON) array(d int, isNil bool, n int, elem func(d, i int)) {
	switch {
	case isNil:
		w.b = append(w.b, "null"...)
		return
	case n == 0:
		w.b = append(w.b, "[]"...)
		return
	}
	w.b = append(w.b, '[')
	for i := range n {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.nl(d + 1)
		elem(d+1, i)
	}
	w.nl(d)
	w.b = append(w.b, ']')
}

func (w *reportJSON) bool(v bool) {
	if v {
		w.b = append(w.b, "true"...)
	} else {
		w.b = append(w.b, "false"...)
	}
}

// ints appends the array v at depth d.
func (w *reportJSON) ints(d int, v []int) {
	w.array(d, v == nil, len(v), func(_, i int) { w.int(int64(v[i])) })
}

func (w *reportJSON) int64s(d int, v []int64) {
	w.array(d, v == nil, len(v), func(_, i int) { w.int(v[i]) })
}

func (w *reportJSON) strs(d int, v []string) {
	w.array(d, v == nil, len(v), func(_, i int) { w.str(v[i]) })
}

// matrix appends the rows of m at depth d.
func (w *reportJSON) matrix(d int, m [][]int64) {
	w.array(d, m == nil, len(m), func(d, i int) { w.int64s(d, m[i]) })
}

func (w *reportJSON) findings(d int, f *Findings) {
	w.b = append(w.b, '{')
	w.key(d+1, `"interval": `, true)
	w.ints(d+1, f.Interval)
	w.key(d+1, `"verdict": `, false)
	w.str(f.Verdict)
	w.key(d+1, `"losses": `, false)
	w.array(d+1, f.Losses == nil, len(f.Losses), func(d, i int) {
		l := &f.Losses[i]
		w.b = append(w.b, '{')
		w.key(d+1, `"kind": `, true)
		w.str(l.Kind)
		w.key(d+1, `"rank": `, false)
		w.int(int64(l.Rank))
		w.key(d+1, `"seconds": `, false)
		w.float(l.Seconds)
		w.key(d+1, `"share": `, false)
		w.float(l.Share)
		if l.SRC != 0 {
			w.key(d+1, `"src": `, false)
			w.int(int64(l.SRC))
		}
		if l.Function != "" {
			w.key(d+1, `"function": `, false)
			w.str(l.Function)
		}
		if l.File != "" {
			w.key(d+1, `"file": `, false)
			w.str(l.File)
		}
		if l.Line != 0 {
			w.key(d+1, `"line": `, false)
			w.int(int64(l.Line))
		}
		if l.Caller != "" {
			w.key(d+1, `"caller": `, false)
			w.str(l.Caller)
		}
		w.key(d+1, `"late_rank": `, false)
		w.int(int64(l.LateRank))
		w.close(d, 1, '}')
	})
	w.close(d, 1, '}')
}

func (w *reportJSON) run(d int, r *Run) {
	w.b = append(w.b, '{')
	w.key(d+1, `"mpi": `, true)
	w.str(r.MPI)
	w.key(d+1, `"mpi_library_version": `, false)
	w.str(r.MPILibraryVersion)
	w.key(d+1, `"command": `, false)
	w.strs(d+1, r.Command)
	w.key(d+1, `"program": `, false)
	w.str(r.Program)
	w.key(d+1, `"start": `, false)
	w.str(r.Start)
	w.key(d+1, `"clock": `, false)
	w.str(r.Clock)
	w.key(d+1, `"tracer_version": `, false)
	w.str(r.TracerVersion)
	if r.BatchJob != "" {
		w.key(d+1, `"batch_job": `, false)
		w.str(r.BatchJob)
	}
	w.key(d+1, `"sync_error": `, false)
	w.float(r.SyncError)
	w.key(d+1, `"trace_bytes": `, false)
	w.int(r.TraceBytes)
	w.key(d+1, `"events": `, false)
	w.int(r.Events)
	w.key(d+1, `"bytes_per_event": `, false)
	w.float(r.BytesPerEvent)
	w.key(d+1, `"ranks": `, false)
	w.array(d+1, r.Ranks == nil, len(r.Ranks), func(d, i int) {
		t := &r.Ranks[i]
		w.b = append(w.b, '{')
		w.key(d+1, `"rank": `, true)
		w.int(int64(t.Rank))
		w.key(d+1, `"bytes": `, false)
		w.int(t.Bytes)
		w.key(d+1, `"events": `, false)
		w.int(t.Events)
		w.close(d, 1, '}')
	})
	w.close(d, 1, '}')
}

// interval appends iv at depth d.
func (w *reportJSON) interval(d int, iv *Interval) {
	w.b = append(w.b, '{')
	w.key(d+1, `"path": `, true)
	w.ints(d+1, iv.Path)
	w.key(d+1, `"level": `, false)
	w.int(int64(iv.Level))
	w.key(d+1, `"number": `, false)
	w.int(int64(iv.Number))
	w.key(d+1, `"source_file": `, false)
	w.str(iv.SourceFile)
	w.key(d+1, `"line": `, false)
	w.int(int64(iv.Line))
	w.key(d+1, `"exe_count": `, false)
	w.int(int64(iv.ExeCount))
	if iv.Incomplete {
		w.key(d+1, `"incomplete": `, false)
		w.bool(true)
	}
	if iv.IncompleteReason != "" {
		w.key(d+1, `"incomplete_reason": `, false)
		w.str(iv.IncompleteReason)
	}
	w.key(d+1, `"main": `, false)
	w.main(d+1, &iv.Main)
	w.key(d+1, `"comparative": `, false)
	w.comparative(d+1, &iv.Comparative)
	w.key(d+1, `"ranks": `, false)
	w.array(d+1, iv.Ranks == nil, len(iv.Ranks), func(d, i int) { w.rank(d, &iv.Ranks[i]) })
	w.key(d+1, `"src": `, false)
	if iv.SRC == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		for i := range iv.SRC {
			w.src(d+2, &iv.SRC[i], i == 0)
		}
		w.close(d+1, len(iv.SRC), ']')
	}
	if len(iv.Waits) > 0 {
		w.key(d+1, `"waits": `, false)
		w.b = append(w.b, '[')
		for i := range iv.Waits {
			w.wait(d+2, &iv.Waits[i], i == 0)
		}
		w.close(d+1, 1, ']')
	}
	if len(iv.Causes) > 0 {
		w.key(d+1, `"causes": `, false)
		w.b = append(w.b, '[')
		for i := range iv.Causes {
			w.cause(d+2, &iv.Causes[i], i == 0)
		}
		w.close(d+1, 1, ']')
	}
	w.profile(d+1, &iv.Profile)
	w.nl(d)
	w.b = append(w.b, '}')
}

func (w *reportJSON) main(d int, m *Main) {
	w.b = append(w.b, '{')
	w.key(d+1, `"efficiency": `, true)
	w.float(m.Efficiency)
	w.key(d+1, `"execution_time": `, false)
	w.float(m.ExecutionTime)
	w.key(d+1, `"processors": `, false)
	w.int(int64(m.Processors))
	w.key(d+1, `"total_time": `, false)
	w.float(m.TotalTime)
	w.key(d+1, `"productive_time": `, false)
	w.float(m.ProductiveTime)
	w.key(d+1, `"lost_time": `, false)
	w.float(m.LostTime)
	w.key(d+1, `"insufficient_parallelism": `, false)
	w.float(m.InsufficientParallelism)
	w.key(d+1, `"communications": `, false)
	w.float(m.Communications)
	w.key(d+1, `"sendrecv_time": `, false)
	w.float(m.SendRecvTime)
	w.key(d+1, `"real_sync": `, false)
	w.float(m.RealSync)
	w.key(d+1, `"late_receiver": `, false)
	w.float(m.LateReceiver)
	w.key(d+1, `"send_number": `, false)
	w.int(m.SendNumber)
	w.key(d+1, `"receive_number": `, false)
	w.int(m.ReceiveNumber)
	w.key(d+1, `"wait_number": `, false)
	w.int(m.WaitNumber)
	w.key(d+1, `"collective_time": `, false)
	w.float(m.CollectiveTime)
	w.key(d+1, `"collective_number": `, false)
	w.int(m.CollectiveNumber)
	w.key(d+1, `"system_time": `, false)
	w.float(m.SystemTime)
	w.key(d+1, `"system_number": `, false)
	w.int(m.SystemNumber)
	w.key(d+1, `"idle_time": `, false)
	w.float(m.IdleTime)
	w.key(d+1, `"load_imbalance": `, false)
	w.float(m.LoadImbalance)
	w.key(d+1, `"potential_sync": `, false)
	w.float(m.PotentialSync)
	w.key(d+1, `"time_variation": `, false)
	w.float(m.TimeVariation)
	w.key(d+1, `"overlap": `, false)
	w.float(m.Overlap)
	w.close(d, 1, '}')
}

func (w *reportJSON) comparative(d int, c *Comparative) {
	stat := func(k string, first bool, s *Stat) {
		w.key(d+1, k, first)
		w.b = append(w.b, '{')
		w.key(d+2, `"min": `, true)
		w.float(s.Min)
		w.key(d+2, `"min_proc": `, false)
		w.int(int64(s.MinProc))
		w.key(d+2, `"max": `, false)
		w.float(s.Max)
		w.key(d+2, `"max_proc": `, false)
		w.int(int64(s.MaxProc))
		w.key(d+2, `"mean": `, false)
		w.float(s.Mean)
		w.close(d+1, 1, '}')
	}
	w.b = append(w.b, '{')
	stat(`"execution_time": `, true, &c.ExecutionTime)
	stat(`"productive_time": `, false, &c.ProductiveTime)
	stat(`"lost_time": `, false, &c.LostTime)
	stat(`"idle_time": `, false, &c.IdleTime)
	stat(`"communications": `, false, &c.Communications)
	stat(`"insufficient_parallelism": `, false, &c.InsufficientParallelism)
	stat(`"real_sync": `, false, &c.RealSync)
	stat(`"load_imbalance": `, false, &c.LoadImbalance)
	stat(`"potential_sync": `, false, &c.PotentialSync)
	stat(`"time_variation": `, false, &c.TimeVariation)
	stat(`"overlap": `, false, &c.Overlap)
	w.close(d, 1, '}')
}

func (w *reportJSON) rank(d int, r *Rank) {
	w.b = append(w.b, '{')
	w.key(d+1, `"rank": `, true)
	w.int(int64(r.Rank))
	w.key(d+1, `"exe_count": `, false)
	w.int(int64(r.ExeCount))
	w.key(d+1, `"execution_time": `, false)
	w.float(r.ExecutionTime)
	w.key(d+1, `"productive_time": `, false)
	w.float(r.ProductiveTime)
	w.key(d+1, `"lost_time": `, false)
	w.float(r.LostTime)
	w.key(d+1, `"insufficient_parallelism": `, false)
	w.float(r.InsufficientParallelism)
	w.key(d+1, `"idle_time": `, false)
	w.float(r.IdleTime)
	w.key(d+1, `"communications": `, false)
	w.float(r.Communications)
	w.key(d+1, `"sendrecv_time": `, false)
	w.float(r.SendRecvTime)
	w.key(d+1, `"collective_time": `, false)
	w.float(r.CollectiveTime)
	w.key(d+1, `"system_time": `, false)
	w.float(r.SystemTime)
	w.key(d+1, `"real_sync": `, false)
	w.float(r.RealSync)
	w.key(d+1, `"late_receiver": `, false)
	w.float(r.LateReceiver)
	w.key(d+1, `"load_imbalance": `, false)
	w.float(r.LoadImbalance)
	w.key(d+1, `"potential_sync": `, false)
	w.float(r.PotentialSync)
	w.key(d+1, `"time_variation": `, false)
	w.float(r.TimeVariation)
	w.key(d+1, `"overlap": `, false)
	w.float(r.Overlap)
	w.key(d+1, `"send_number": `, false)
	w.int(r.SendNumber)
	w.key(d+1, `"receive_number": `, false)
	w.int(r.ReceiveNumber)
	w.key(d+1, `"wait_number": `, false)
	w.int(r.WaitNumber)
	w.key(d+1, `"collective_number": `, false)
	w.int(r.CollectiveNumber)
	w.key(d+1, `"system_number": `, false)
	w.int(r.SystemNumber)
	if r.Incomplete {
		w.key(d+1, `"incomplete": `, false)
		w.bool(true)
	}
	if r.IncompleteReason != "" {
		w.key(d+1, `"incomplete_reason": `, false)
		w.str(r.IncompleteReason)
	}
	if len(r.CallMix) > 0 {
		w.key(d+1, `"call_mix": `, false)
		w.array(d+1, false, len(r.CallMix), func(d, i int) {
			c := &r.CallMix[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"function": `, true)
			w.str(c.Function)
			w.key(d+1, `"calls": `, false)
			w.int(c.Calls)
			w.key(d+1, `"time": `, false)
			w.float(c.Time)
			w.key(d+1, `"call_share": `, false)
			w.float(c.CallShare)
			w.key(d+1, `"time_share": `, false)
			w.float(c.TimeShare)
			w.close(d, 1, '}')
		})
	}
	w.key(d+1, `"gaps": `, false)
	w.int(r.Gaps)
	w.key(d+1, `"gap_mean": `, false)
	w.float(r.GapMean)
	w.key(d+1, `"gap_median": `, false)
	w.float(r.GapMedian)
	w.close(d, 1, '}')
}

// profile appends p's members, those of an object at depth d−1 that has
// members already.
func (w *reportJSON) profile(d int, p *Profile) {
	if len(p.Functions) > 0 {
		w.key(d, `"functions": `, false)
		w.array(d, false, len(p.Functions), func(d, i int) {
			f := &p.Functions[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"function": `, true)
			w.str(f.Function)
			w.key(d+1, `"calls": `, false)
			w.int(f.Calls)
			w.key(d+1, `"time": `, false)
			w.float(f.Time)
			w.key(d+1, `"bytes": `, false)
			w.int(f.Bytes)
			w.key(d+1, `"min": `, false)
			w.float(f.Min)
			w.key(d+1, `"max": `, false)
			w.float(f.Max)
			w.key(d+1, `"ranks": `, false)
			w.array(d+1, f.Ranks == nil, len(f.Ranks), func(d, i int) {
				r := &f.Ranks[i]
				w.b = append(w.b, '{')
				w.key(d+1, `"rank": `, true)
				w.int(int64(r.Rank))
				w.key(d+1, `"calls": `, false)
				w.int(r.Calls)
				w.key(d+1, `"time": `, false)
				w.float(r.Time)
				w.key(d+1, `"bytes": `, false)
				w.int(r.Bytes)
				w.close(d, 1, '}')
			})
			w.close(d, 1, '}')
		})
	}
	if m := p.CommMatrix; m != nil {
		w.key(d, `"comm_matrix": `, false)
		w.b = append(w.b, '{')
		w.key(d+1, `"messages": `, true)
		w.matrix(d+1, m.Messages)
		w.key(d+1, `"bytes": `, false)
		w.matrix(d+1, m.Bytes)
		w.close(d, 1, '}')
	}
	if t := p.Traffic; t != nil {
		vol := func(k string, first bool, v *Volume) {
			w.key(d+1, k, first)
			w.b = append(w.b, '{')
			w.key(d+2, `"messages": `, true)
			w.int(v.Messages)
			w.key(d+2, `"bytes": `, false)
			w.int(v.Bytes)
			w.close(d+1, 1, '}')
		}
		w.key(d, `"traffic": `, false)
		w.b = append(w.b, '{')
		vol(`"intra_node": `, true, &t.IntraNode)
		vol(`"inter_node": `, false, &t.InterNode)
		w.close(d, 1, '}')
	}
	if len(p.CommMatrices) > 0 {
		w.key(d, `"comm_matrices": `, false)
		w.array(d, false, len(p.CommMatrices), func(d, i int) {
			c := &p.CommMatrices[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"comm": `, true)
			w.str(c.Comm)
			w.key(d+1, `"size": `, false)
			w.int(int64(c.Size))
			if c.Inter {
				w.key(d+1, `"inter": `, false)
				w.bool(true)
			}
			w.key(d+1, `"ranks": `, false)
			w.ints(d+1, c.Ranks)
			w.key(d+1, `"messages": `, false)
			w.matrix(d+1, c.Messages)
			w.key(d+1, `"bytes": `, false)
			w.matrix(d+1, c.Bytes)
			w.close(d, 1, '}')
		})
	}
	if len(p.CommPairs) > 0 {
		w.key(d, `"comm_pairs": `, false)
		w.array(d, false, len(p.CommPairs), func(d, i int) {
			c := &p.CommPairs[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"sender": `, true)
			w.int(int64(c.Sender))
			w.key(d+1, `"receiver": `, false)
			w.int(int64(c.Receiver))
			w.key(d+1, `"messages": `, false)
			w.int(c.Messages)
			w.key(d+1, `"bytes": `, false)
			w.int(c.Bytes)
			w.close(d, 1, '}')
		})
	}
	if len(p.MessageSizes) > 0 {
		w.key(d, `"message_sizes": `, false)
		w.array(d, false, len(p.MessageSizes), func(d, i int) {
			s := &p.MessageSizes[i]
			w.b = append(w.b, '{')
			w.key(d+1, `"min_bytes": `, true)
			w.b = strconv.AppendUint(w.b, s.MinBytes, 10)
			w.key(d+1, `"max_bytes": `, false)
			w.b = strconv.AppendUint(w.b, s.MaxBytes, 10)
			w.key(d+1, `"messages": `, false)
			w.int(s.Messages)
			w.key(d+1, `"bytes": `, false)
			w.int(s.Bytes)
			w.key(d+1, `"latency": `, false)
			w.float(s.Latency)
			w.key(d+1, `"throughput": `, false)
			w.float(s.Throughput)
			w.close(d, 1, '}')
		})
	}
}

// close ends at depth d an array or object of n elements.
func (w *reportJSON) close(d, n int, c byte) {
	if n > 0 {
		w.nl(d)
	}
	w.b = append(w.b, c)
}

// pieceMax is the longest piece put copies by one fixed-size move: the
// pieces of the call sites', their processors', frames', waits' and
// causes' objects at their depths in a report (42 bytes at most, a
// frame's opening) fit.
const pieceMax = 48

// piece is a run of text between values, in a, padded, to be copied by
// one move of pieceMax bytes (put): appending a string of a few dozen
// bytes cost about three times as much (the append, the call of memmove,
// its dispatch on the length), once per member. s is the same text, for
// a piece longer than pieceMax or a buffer about to grow.
type piece struct {
	a [pieceMax]byte
	n int
	s string
}

func newPiece(s string) piece {
	p := piece{n: len(s), s: s}
	copy(p.a[:], s)
	return p
}

// put appends p.
func (w *reportJSON) put(p *piece) {
	n := len(w.b)
	if p.n > pieceMax || cap(w.b)-n < pieceMax {
		w.b = append(w.b, p.s...)
		return
	}
	b := w.b[:n+pieceMax]
	*(*[pieceMax]byte)(b[n:]) = p.a
	w.b = b[:n+p.n]
}

// pieces are the text around the members of one kind of object at one
// depth, the object an element of an array: its opening as the array's
// first element (first: the newline and indentation, the brace, its first
// member's) or a later one (next: the same after a comma); for each
// further member its name and what precedes it (key: the comma, the
// newline and indentation), and the same followed by a zero (zero: most
// of a call site's figures are 0, written with their name); and the
// closing (end). The objects of the call sites, their processors,
// frames, waits and causes are written with them, one put between
// values.
type pieces struct {
	d           int
	first, next piece
	key, zero   []piece
	end         piece
}

// at is the pieces of an object of members names at depth d, indented
// or compact (a writer does either).
func (c *pieces) at(d int, indent bool, names ...string) *pieces {
	if c.key != nil && c.d == d {
		return c
	}
	ind, colon := func(d int) string { return "\n" + strings.Repeat("  ", d) }, `": `
	if !indent {
		ind, colon = func(int) string { return "" }, `":`
	}
	c.d = d
	open := ind(d) + "{" + ind(d+1) + `"` + names[0] + colon
	c.first, c.next = newPiece(open), newPiece(","+open)
	c.key, c.zero = make([]piece, len(names)), make([]piece, len(names))
	for i, k := range names[1:] {
		c.key[i+1] = newPiece("," + ind(d+1) + `"` + k + colon)
		c.zero[i+1] = newPiece(c.key[i+1].s + "0")
	}
	c.end = newPiece(ind(d) + "}")
	return c
}

// open starts an object of p as an array's element, its first when first.
func (w *reportJSON) open(p *pieces, first bool) {
	o := &p.next
	if first {
		o = &p.first
	}
	w.put(o)
}

// zeroOr appends member i of p with v, its name and a zero in one put
// when v is 0.
func (w *reportJSON) zeroOr(p *pieces, i int, v float64) {
	k, zero := &p.key[i], math.Float64bits(v) == 0
	if zero {
		k = &p.zero[i]
	}
	w.put(k)
	if !zero {
		w.float(v)
	}
}

// src appends s at depth d, the first of its array when first.
func (w *reportJSON) src(d int, s *SRC, first bool) {
	p := w.srcP.at(d, w.indent, "id", "function", "comm", "real_sync", "late_receiver", "potential_sync", "time_variation",
		"overlap", "stack", "ranks")
	w.open(p, first)
	w.int(int64(s.ID))
	w.put(&p.key[1])
	w.str(s.Function)
	w.zeroOr(p, 2, s.Comm)
	w.zeroOr(p, 3, s.RealSync)
	w.zeroOr(p, 4, s.LateReceiver)
	w.zeroOr(p, 5, s.PotentialSync)
	w.zeroOr(p, 6, s.TimeVariation)
	w.zeroOr(p, 7, s.Overlap)
	w.put(&p.key[8])
	if s.Stack == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		fp := w.frameP.at(d+2, w.indent, "function", "file", "line")
		for i := range s.Stack {
			f := &s.Stack[i]
			w.open(fp, i == 0)
			w.str(f.Function)
			w.put(&fp.key[1])
			w.str(f.File)
			w.put(&fp.key[2])
			w.int(int64(f.Line))
			w.put(&fp.end)
		}
		w.close(d+1, len(s.Stack), ']')
	}
	w.put(&p.key[9])
	if s.Ranks == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		rp := w.srcRankP.at(d+2, w.indent, "rank", "exe_count", "exe_time", "real_sync", "late_receiver", "potential_sync",
			"time_variation", "overlap")
		for i := range s.Ranks {
			r := &s.Ranks[i]
			w.open(rp, i == 0)
			w.int(int64(r.Rank))
			w.put(&rp.key[1])
			w.int(r.ExeCount)
			w.zeroOr(rp, 2, r.ExeTime)
			w.zeroOr(rp, 3, r.RealSync)
			w.zeroOr(rp, 4, r.LateReceiver)
			w.zeroOr(rp, 5, r.PotentialSync)
			w.zeroOr(rp, 6, r.TimeVariation)
			w.zeroOr(rp, 7, r.Overlap)
			w.put(&rp.end)
		}
		w.close(d+1, len(s.Ranks), ']')
	}
	w.put(&p.end)
}

// wait appends x at depth d, the first of its array when first.
func (w *reportJSON) wait(d int, x *Wait, first bool) {
	p := w.waitP.at(d, w.indent, "kind", "waiting_rank", "late_rank", "seconds", "count", "waiting_src", "late_src")
	w.open(p, first)
	w.str(x.Kind)
	w.put(&p.key[1])
	w.int(int64(x.WaitingRank))
	w.put(&p.key[2])
	w.int(int64(x.LateRank))
	w.zeroOr(p, 3, x.Seconds)
	w.put(&p.key[4])
	w.int(x.Count)
	w.put(&p.key[5])
	w.int(int64(x.WaitingSRC))
	w.put(&p.key[6])
	w.int(int64(x.LateSRC))
	w.put(&p.end)
}

// cause appends c at depth d, the first of its array when first.
func (w *reportJSON) cause(d int, c *Cause, first bool) {
	p := w.causeP.at(d, w.indent, "late_rank", "from_src", "to_src", "count", "waits", "delay", "late_computation",
		"waiting_computation")
	w.open(p, first)
	w.int(int64(c.LateRank))
	w.put(&p.key[1])
	w.int(int64(c.FromSRC))
	w.put(&p.key[2])
	w.int(int64(c.ToSRC))
	w.put(&p.key[3])
	w.int(c.Count)
	w.zeroOr(p, 4, c.Waits)
	w.zeroOr(p, 5, c.Delay)
	w.zeroOr(p, 6, c.LateComputation)
	w.zeroOr(p, 7, c.WaitingComputation)
	w.put(&p.end)
}
