package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/dtpa/dtpa/report"
)

// reportJSON writes a report as writeJSON documents it, indented as it
// goes: the bytes json.Encoder (HTML not escaped) and indentJSON give.
// The intervals' call sites, waits and causes, the bulk of a large
// report (a record per site and processor), are written field by field;
// the rest, a few kilobytes however large the run, goes through
// encoding/json and indentJSON. Reflection cost more per call site than
// the site's figures, and indenting the compact encoding walked every
// byte a second time.
// TestReportJSON compares it with encoding/json.
type reportJSON struct {
	b []byte
	// bad is set by a float JSON cannot encode (NaN, ±Inf): the report is
	// then encoded by encoding/json, for its error.
	bad bool
	// tmp is the compact encoding of a field given to encoding/json.
	tmp bytes.Buffer
	enc *json.Encoder
	err error
}

var errBadFloat = errors.New("unsupported float")

// appendReportJSON appends r's JSON, indented, to dst.
func appendReportJSON(dst []byte, r *report.Report) ([]byte, error) {
	w := &reportJSON{b: dst}
	w.enc = json.NewEncoder(&w.tmp)
	w.enc.SetEscapeHTML(false)
	w.report(r)
	if w.err == nil && w.bad {
		w.err = errBadFloat
	}
	return w.b, w.err
}

// newline is a newline and the indentation of up to 32 levels.
const newline = "\n                                                                "

// nl starts a line at depth d.
func (w *reportJSON) nl(d int) {
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
// k is the member's quoted name, a colon and a space.
func (w *reportJSON) key(d int, k string, first bool) {
	if !first {
		w.b = append(w.b, ',')
	}
	w.nl(d)
	w.b = append(w.b, k...)
}

func (w *reportJSON) int(v int64) { w.b = strconv.AppendInt(w.b, v, 10) }

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
			if v < 0 {
				w.b = append(w.b, '-')
			}
			u := uint64(n)
			w.b = strconv.AppendUint(w.b, u/1e9, 10)
			if f := u % 1e9; f != 0 {
				var d [10]byte
				d[0] = '.'
				for i := 9; i > 0; i-- {
					d[i] = byte('0' + f%10)
					f /= 10
				}
				end := 10
				for d[end-1] == '0' {
					end--
				}
				w.b = append(w.b, d[:end]...)
			}
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

// str appends s quoted: as is when it is printable ASCII without a quote
// or backslash (function names, paths), else as encoding/json escapes it.
func (w *reportJSON) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
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

// value appends v as encoding/json encodes it, indented at depth d.
func (w *reportJSON) value(d int, v any) {
	if w.compact(v) {
		w.b = indentJSONAt(w.b, w.tmp.Bytes(), d)
	}
}

// members appends the members of struct v (encoding/json's object of
// it, an embedded struct's for instance) as those of an object at depth
// d−1 that has members already when !first; it returns whether it is
// still at the first member.
func (w *reportJSON) members(d int, v any, first bool) bool {
	if !w.compact(v) {
		return first
	}
	o := w.tmp.Bytes()
	if len(o) <= 2 { // {}
		return first
	}
	if !first {
		w.b = append(w.b, ',')
	}
	w.nl(d)
	w.b = indentJSONAt(w.b, o[1:len(o)-1], d)
	return false
}

func (w *reportJSON) report(r *report.Report) {
	// Report's fields in order, RunFacts' members where it is embedded.
	head := struct {
		Schema          string                  `json:"schema"`
		Task            string                  `json:"task"`
		Processors      int                     `json:"processors"`
		Findings        *report.Findings        `json:"findings,omitempty"`
		Warnings        []string                `json:"warnings"`
		ClockViolations *report.ClockViolations `json:"clock_violations,omitempty"`
		Unmatched       *report.Unmatched       `json:"unmatched,omitempty"`
		report.RunFacts
	}{r.Schema, r.Task, r.Processors, r.Findings, r.Warnings, r.ClockViolations, r.Unmatched, r.RunFacts}
	w.b = append(w.b, '{')
	w.members(1, &head, true)
	w.key(1, `"intervals": `, false)
	if r.Intervals == nil {
		w.b = append(w.b, "null"...)
	} else if len(r.Intervals) == 0 {
		w.b = append(w.b, "[]"...)
	} else {
		w.b = append(w.b, '[')
		for i := range r.Intervals {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.nl(2)
			w.interval(2, &r.Intervals[i])
		}
		w.nl(1)
		w.b = append(w.b, ']')
	}
	w.nl(0)
	w.b = append(w.b, '}')
}

// interval appends iv at depth d.
func (w *reportJSON) interval(d int, iv *report.Interval) {
	// Interval's fields before its SRC, in order.
	head := struct {
		Path             []int              `json:"path"`
		Level            int                `json:"level"`
		Number           int                `json:"number"`
		SourceFile       string             `json:"source_file"`
		Line             int                `json:"line"`
		ExeCount         int                `json:"exe_count"`
		Incomplete       bool               `json:"incomplete,omitempty"`
		IncompleteReason string             `json:"incomplete_reason,omitempty"`
		Main             report.Main        `json:"main"`
		Comparative      report.Comparative `json:"comparative"`
		Ranks            []report.Rank      `json:"ranks"`
	}{iv.Path, iv.Level, iv.Number, iv.SourceFile, iv.Line, iv.ExeCount, iv.Incomplete, iv.IncompleteReason,
		iv.Main, iv.Comparative, iv.Ranks}
	w.b = append(w.b, '{')
	w.members(d+1, &head, true)
	w.key(d+1, `"src": `, false)
	if iv.SRC == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		for i := range iv.SRC {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.nl(d + 2)
			w.src(d+2, &iv.SRC[i])
		}
		w.close(d+1, len(iv.SRC), ']')
	}
	if len(iv.Waits) > 0 {
		w.key(d+1, `"waits": `, false)
		w.b = append(w.b, '[')
		for i := range iv.Waits {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.nl(d + 2)
			w.wait(d+2, &iv.Waits[i])
		}
		w.close(d+1, 1, ']')
	}
	if len(iv.Causes) > 0 {
		w.key(d+1, `"causes": `, false)
		w.b = append(w.b, '[')
		for i := range iv.Causes {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.nl(d + 2)
			w.cause(d+2, &iv.Causes[i])
		}
		w.close(d+1, 1, ']')
	}
	w.members(d+1, &iv.Profile, false)
	w.nl(d)
	w.b = append(w.b, '}')
}

// close ends at depth d an array or object of n elements.
func (w *reportJSON) close(d, n int, c byte) {
	if n > 0 {
		w.nl(d)
	}
	w.b = append(w.b, c)
}

func (w *reportJSON) src(d int, s *report.SRC) {
	w.b = append(w.b, '{')
	w.key(d+1, `"id": `, true)
	w.int(int64(s.ID))
	w.key(d+1, `"function": `, false)
	w.str(s.Function)
	w.key(d+1, `"comm": `, false)
	w.float(s.Comm)
	w.key(d+1, `"real_sync": `, false)
	w.float(s.RealSync)
	w.key(d+1, `"late_receiver": `, false)
	w.float(s.LateReceiver)
	w.key(d+1, `"potential_sync": `, false)
	w.float(s.PotentialSync)
	w.key(d+1, `"time_variation": `, false)
	w.float(s.TimeVariation)
	w.key(d+1, `"overlap": `, false)
	w.float(s.Overlap)
	w.key(d+1, `"stack": `, false)
	if s.Stack == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		for i := range s.Stack {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			f := &s.Stack[i]
			w.nl(d + 2)
			w.b = append(w.b, '{')
			w.key(d+3, `"function": `, true)
			w.str(f.Function)
			w.key(d+3, `"file": `, false)
			w.str(f.File)
			w.key(d+3, `"line": `, false)
			w.int(int64(f.Line))
			w.nl(d + 2)
			w.b = append(w.b, '}')
		}
		w.close(d+1, len(s.Stack), ']')
	}
	w.key(d+1, `"ranks": `, false)
	if s.Ranks == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		for i := range s.Ranks {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			r := &s.Ranks[i]
			w.nl(d + 2)
			w.b = append(w.b, '{')
			w.key(d+3, `"rank": `, true)
			w.int(int64(r.Rank))
			w.key(d+3, `"exe_count": `, false)
			w.int(r.ExeCount)
			w.key(d+3, `"exe_time": `, false)
			w.float(r.ExeTime)
			w.key(d+3, `"real_sync": `, false)
			w.float(r.RealSync)
			w.key(d+3, `"late_receiver": `, false)
			w.float(r.LateReceiver)
			w.key(d+3, `"potential_sync": `, false)
			w.float(r.PotentialSync)
			w.key(d+3, `"time_variation": `, false)
			w.float(r.TimeVariation)
			w.key(d+3, `"overlap": `, false)
			w.float(r.Overlap)
			w.nl(d + 2)
			w.b = append(w.b, '}')
		}
		w.close(d+1, len(s.Ranks), ']')
	}
	w.nl(d)
	w.b = append(w.b, '}')
}

func (w *reportJSON) wait(d int, x *report.Wait) {
	w.b = append(w.b, '{')
	w.key(d+1, `"kind": `, true)
	w.str(x.Kind)
	w.key(d+1, `"waiting_rank": `, false)
	w.int(int64(x.WaitingRank))
	w.key(d+1, `"late_rank": `, false)
	w.int(int64(x.LateRank))
	w.key(d+1, `"seconds": `, false)
	w.float(x.Seconds)
	w.key(d+1, `"count": `, false)
	w.int(x.Count)
	w.key(d+1, `"waiting_src": `, false)
	w.int(int64(x.WaitingSRC))
	w.key(d+1, `"late_src": `, false)
	w.int(int64(x.LateSRC))
	w.nl(d)
	w.b = append(w.b, '}')
}

func (w *reportJSON) cause(d int, c *report.Cause) {
	w.b = append(w.b, '{')
	w.key(d+1, `"late_rank": `, true)
	w.int(int64(c.LateRank))
	w.key(d+1, `"from_src": `, false)
	w.int(int64(c.FromSRC))
	w.key(d+1, `"to_src": `, false)
	w.int(int64(c.ToSRC))
	w.key(d+1, `"count": `, false)
	w.int(c.Count)
	w.key(d+1, `"waits": `, false)
	w.float(c.Waits)
	w.key(d+1, `"delay": `, false)
	w.float(c.Delay)
	w.key(d+1, `"late_computation": `, false)
	w.float(c.LateComputation)
	w.key(d+1, `"waiting_computation": `, false)
	w.float(c.WaitingComputation)
	w.nl(d)
	w.b = append(w.b, '}')
}
