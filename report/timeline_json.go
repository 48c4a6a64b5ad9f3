package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"slices"
	"strconv"
)

// WriteTimelineJSON writes the JSON encoding of tl, the bytes json.Marshal
// gives, with its lanes and its messages' columns handed over one at a
// time instead of from tl.Lanes and tl.Messages (which are not written),
// so that a timeline is written without ever being whole in memory (the
// page of dtpa --html embeds it). lanes calls put for every lane in
// order; msgs calls put for every value of one column of the messages
// (col: 0 From, 1 To, 2 Send, 3 Recv), in order.
func WriteTimelineJSON(w io.Writer, tl *Timeline, lanes func(put func(*Lane) error) error, msgs func(col int, put func(int64) error) error) error {
	head := *tl
	head.Lanes = []Lane{}
	head.Messages = Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}
	b, err := json.Marshal(&head)
	if err != nil {
		return err
	}
	// The empty lists are the only places these keys appear unquoted:
	// a quote inside a JSON string is escaped.
	const lanesAt, msgsAt = `"lanes":[]`, `"messages":{"from":[],"to":[],"send":[],"recv":[]}`
	i, j := bytes.Index(b, []byte(lanesAt)), bytes.Index(b, []byte(msgsAt))
	if i < 0 || j < i {
		return errors.New("internal error: the timeline's encoding has no lanes or messages")
	}
	ew := &errWriter{w: w}
	ew.write(b[:i+len(lanesAt)-1])
	first := true
	var lb []byte
	err = lanes(func(ln *Lane) error {
		lb = lb[:0]
		if !first {
			lb = append(lb, ',')
		}
		first = false
		lb = appendLaneJSON(lb, ln)
		ew.write(lb)
		return ew.err
	})
	if err != nil {
		return err
	}
	ew.write(b[i+len(lanesAt)-1 : j])
	// The columns' numbers are written in chunks, not one write each.
	num := lb[:0]
	for col, name := range []string{`"messages":{"from":[`, `],"to":[`, `],"send":[`, `],"recv":[`} {
		num = append(num, name...)
		first := true
		err := msgs(col, func(v int64) error {
			if !first {
				num = append(num, ',')
			}
			first = false
			num = appendInt(num, v)
			if len(num) >= 1<<15 {
				ew.write(num)
				num = num[:0]
			}
			return ew.err
		})
		if err != nil {
			return err
		}
	}
	ew.write(num)
	ew.write([]byte("]}"))
	ew.write(b[j+len(msgsAt):])
	return ew.err
}

// appendLaneJSON appends ln as json.Marshal encodes it. The lanes are
// the timeline's bulk (a few numbers per call kept in detail): through
// reflection they cost more than the replay of their calls.
// TestLaneJSON compares the two.
func appendLaneJSON(b []byte, ln *Lane) []byte {
	b = append(b, `{"rank":`...)
	b = strconv.AppendInt(b, int64(ln.Rank), 10)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, ln.Host)
	b = append(b, `,"calls":`...)
	b = strconv.AppendInt(b, ln.Calls, 10)
	b = append(b, `,"detail_end":`...)
	b = strconv.AppendInt(b, ln.DetailEnd, 10)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, ln.Truncated)
	b = append(b, `,"start":`...)
	b = appendInts(b, ln.Start)
	b = append(b, `,"dur":`...)
	b = appendInts(b, ln.Dur)
	b = append(b, `,"lost":`...)
	b = appendInts(b, ln.Lost)
	b = append(b, `,"func":`...)
	b = appendInts(b, ln.Func)
	b = append(b, `,"site":`...)
	b = appendInts(b, ln.Site)
	b = append(b, `,"bytes":`...)
	b = appendInts(b, ln.Bytes)
	b = append(b, `,"peer":`...)
	b = appendInts(b, ln.Peer)
	b = append(b, `,"coll":`...)
	b = appendInts(b, ln.Coll)
	if t := ln.Ties; t != nil {
		b = append(b, `,"ties":{"call":`...)
		b = appendInts(b, t.Call)
		b = append(b, `,"coll":`...)
		b = appendInts(b, t.Coll)
		b = append(b, `,"done":`...)
		if t.Done == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, d := range t.Done {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendBool(b, d)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if len(ln.Thread) > 0 {
		b = append(b, `,"thread":`...)
		b = appendInts(b, ln.Thread)
	}
	if len(ln.Threads) > 0 {
		b = append(b, `,"threads":`...)
		b = appendInts(b, ln.Threads)
	}
	if u := ln.Unfinished; u != nil {
		b = append(b, `,"unfinished":{"start":`...)
		b = appendInts(b, u.Start)
		b = append(b, `,"dur":`...)
		b = appendInts(b, u.Dur)
		b = append(b, `,"func":`...)
		b = appendInts(b, u.Func)
		b = append(b, `,"thread":`...)
		b = appendInts(b, u.Thread)
		if len(u.AtLeast) > 0 {
			b = append(b, `,"at_least":[`...)
			for i, v := range u.AtLeast {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendBool(b, v)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if c := ln.Crash; c != nil {
		b = append(b, `,"crash":{"at":`...)
		b = strconv.AppendInt(b, c.At, 10)
		b = append(b, `,"thread":`...)
		b = strconv.AppendInt(b, int64(c.Thread), 10)
		b = append(b, '}')
	}
	if e := ln.End; e != nil {
		b = append(b, `,"end":{"at":`...)
		b = strconv.AppendInt(b, e.At, 10)
		b = append(b, `,"thread":`...)
		b = strconv.AppendInt(b, int64(e.Thread), 10)
		b = append(b, `,"exited":`...)
		b = strconv.AppendBool(b, e.Exited)
		if e.How != "" {
			b = append(b, `,"how":`...)
			b = appendJSONString(b, e.How)
		}
		b = append(b, '}')
	}
	sp := &ln.Spans
	b = append(b, `,"spans":{"start":`...)
	b = appendInts(b, sp.Start)
	b = append(b, `,"dur":`...)
	b = appendInts(b, sp.Dur)
	b = append(b, `,"interval":`...)
	b = appendInts(b, sp.Interval)
	b = append(b, `,"level":`...)
	b = appendInts(b, sp.Level)
	ov := &ln.Overview
	b = append(b, `},"overview":{"p2p":`...)
	b = appendInts(b, ov.P2P)
	b = append(b, `,"coll":`...)
	b = appendInts(b, ov.Coll)
	b = append(b, `,"wait":`...)
	b = appendInts(b, ov.Wait)
	b = append(b, `,"other":`...)
	b = appendInts(b, ov.Other)
	b = append(b, `,"lost":`...)
	b = appendInts(b, ov.Lost)
	return append(b, "}}"...)
}

// appendInts appends v as a JSON array, null when nil.
func appendInts[T int | int64](b []byte, v []T) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, int64(x))
	}
	return append(b, ']')
}

// pow10 are the powers of ten a uint64 holds.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
	1e17, 1e18, 1e19}

// digitPairs are the two digits of 0 to 99.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendInt is strconv.AppendInt(b, v, 10) with the digits written in
// place, from the last, four per division: strconv writes them to a
// buffer and copies it, which cost as much as the digits for the
// timeline's times (ten digits or so, hundreds of thousands of them).
func appendInt(b []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u
	}
	if u < 10 {
		return append(b, byte('0'+u))
	}
	n := bits.Len64(u) * 1233 >> 12 // digits − 1 or digits
	if u >= pow10[n] {
		n++
	}
	b = slices.Grow(b, n)
	d := b[len(b) : len(b)+n]
	i := n
	for u >= 10000 {
		q := u / 10000
		r := u - q*10000
		u = q
		p, s := 2*(r/100), 2*(r%100)
		d[i-4], d[i-3], d[i-2], d[i-1] = digitPairs[p], digitPairs[p+1], digitPairs[s], digitPairs[s+1]
		i -= 4
	}
	for u >= 100 {
		p := 2 * (u % 100)
		d[i-2], d[i-1] = digitPairs[p], digitPairs[p+1]
		u /= 100
		i -= 2
	}
	if u >= 10 {
		d[i-2], d[i-1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		d[i-1] = byte('0' + u)
	}
	return b[:len(b)+n]
}

// appendJSONString appends s quoted as json.Marshal quotes it: as is when
// all its bytes are plain (jsonPlain), else by json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[0][s[i]] {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// errWriter keeps the first error of its writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
