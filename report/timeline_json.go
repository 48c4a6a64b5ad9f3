package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
	err = lanes(func(ln *Lane) error {
		lb, err := json.Marshal(ln)
		if err != nil {
			return err
		}
		if !first {
			ew.write([]byte{','})
		}
		first = false
		ew.write(lb)
		return ew.err
	})
	if err != nil {
		return err
	}
	ew.write(b[i+len(lanesAt)-1 : j])
	var num []byte
	for col, name := range []string{`"messages":{"from":[`, `],"to":[`, `],"send":[`, `],"recv":[`} {
		ew.write([]byte(name))
		first := true
		err := msgs(col, func(v int64) error {
			num = num[:0]
			if !first {
				num = append(num, ',')
			}
			first = false
			ew.write(strconv.AppendInt(num, v, 10))
			return ew.err
		})
		if err != nil {
			return err
		}
	}
	ew.write([]byte("]}"))
	ew.write(b[j+len(msgsAt):])
	return ew.err
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
