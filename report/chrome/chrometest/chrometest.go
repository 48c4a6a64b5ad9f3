// Package chrometest reads back Chrome trace-event JSON as package chrome
// writes it and checks what viewers rely on, for tests (Perfetto's
// trace_processor is not at hand to load it): the object's shape, every
// event's fields, slices properly nested on each thread (Perfetto drops
// slices that overlap without nesting), and each flow's two ends bound
// to slices the way Perfetto binds them (the start to the innermost slice
// of its thread enclosing its time, the end, "bp":"e", likewise) and the
// way Chrome DevTools binds them (to a slice starting at exactly that
// time).
package chrometest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Trace is a decoded file.
type Trace struct {
	Processes map[int]string    // pid → process_name
	Threads   map[[2]int]string // {pid, tid} → thread_name
	Slices    []Slice           // complete events, in file order
	Instants  []Instant         // instant events, in file order
	Flows     []Flow            // by id
	OtherData map[string]string
}

// Slice is a complete event, or the beginning of a slice that never ends
// (Open: a "B" event without its "E", which viewers draw to the end of
// the trace; Dur is 0); times in ns.
type Slice struct {
	Pid, Tid  int
	Cat, Name string
	Ts, Dur   int64
	Open      bool
	Args      map[string]any
}

// Instant is an instant event of a thread (ph "i", scope "t"); its time
// in ns.
type Instant struct {
	Pid, Tid  int
	Cat, Name string
	Ts        int64
	Args      map[string]any
}

// Flow is a flow's two ends: the slices they bind to (indices into
// Trace.Slices).
type Flow struct {
	ID        uint64
	Cat, Name string // the same at both ends
	From, To  int
}

type event struct {
	Ph   string          `json:"ph"`
	Pid  *int            `json:"pid"`
	Tid  *int            `json:"tid"`
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	ID   json.Number     `json:"id"`
	Bp   string          `json:"bp"`
	S    string          `json:"s"`
	Args json.RawMessage `json:"args"`
}

// Micros parses a time in µs as written ("12.345") to ns, exactly.
func Micros(n json.Number) (int64, error) {
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(s, ".")
	if len(fp) > 3 {
		return 0, fmt.Errorf("time %q has more than ns precision", n)
	}
	fp += strings.Repeat("0", 3-len(fp))
	i, err1 := strconv.ParseInt(ip, 10, 64)
	f, err2 := strconv.ParseInt(fp, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad time %q", n)
	}
	v := i*1000 + f
	if neg {
		v = -v
	}
	return v, nil
}

// Read decodes and checks data.
func Read(data []byte) (*Trace, error) {
	var top struct {
		TraceEvents     []json.RawMessage `json:"traceEvents"`
		DisplayTimeUnit string            `json:"displayTimeUnit"`
		OtherData       map[string]string `json:"otherData"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("not a trace-event JSON object: %w", err)
	}
	if top.TraceEvents == nil {
		return nil, fmt.Errorf("no traceEvents")
	}
	tr := &Trace{Processes: map[int]string{}, Threads: map[[2]int]string{}, OtherData: top.OtherData}
	type end struct {
		pid, tid  int
		ts        int64
		n         int
		cat, name string
	}
	starts, ends := map[uint64]end{}, map[uint64]end{}
	for i, raw := range top.TraceEvents {
		var e event
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&e); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		if e.Pid == nil || e.Tid == nil {
			return nil, fmt.Errorf("event %d (%s): no pid or tid", i, raw)
		}
		var args map[string]any
		if len(e.Args) > 0 {
			if err := json.Unmarshal(e.Args, &args); err != nil {
				return nil, fmt.Errorf("event %d: args: %w", i, err)
			}
		}
		switch e.Ph {
		case "M":
			name, _ := args["name"].(string)
			switch e.Name {
			case "process_name":
				tr.Processes[*e.Pid] = name
			case "thread_name":
				tr.Threads[[2]int{*e.Pid, *e.Tid}] = name
			case "process_sort_index", "thread_sort_index":
				if _, ok := args["sort_index"].(float64); !ok {
					return nil, fmt.Errorf("event %d: %s without a number", i, e.Name)
				}
			default:
				return nil, fmt.Errorf("event %d: unknown metadata %q", i, e.Name)
			}
		case "X":
			ts, err := Micros(e.Ts)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
			dur, err := Micros(e.Dur)
			if err != nil || dur < 0 {
				return nil, fmt.Errorf("event %d: bad dur %q", i, e.Dur)
			}
			if e.Name == "" || e.Cat == "" {
				return nil, fmt.Errorf("event %d: slice without name or category", i)
			}
			tr.Slices = append(tr.Slices, Slice{Pid: *e.Pid, Tid: *e.Tid, Cat: e.Cat, Name: e.Name, Ts: ts, Dur: dur, Args: args})
		case "B":
			ts, err := Micros(e.Ts)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
			if e.Name == "" || e.Cat == "" || e.Dur != "" {
				return nil, fmt.Errorf("event %d: slice beginning without name or category, or with a dur", i)
			}
			tr.Slices = append(tr.Slices, Slice{Pid: *e.Pid, Tid: *e.Tid, Cat: e.Cat, Name: e.Name, Ts: ts, Open: true, Args: args})
		case "i":
			ts, err := Micros(e.Ts)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
			if e.Name == "" || e.Cat == "" || e.S != "t" || e.Dur != "" {
				return nil, fmt.Errorf("event %d: instant without name or category, not of its thread (s %q), or with a dur", i, e.S)
			}
			tr.Instants = append(tr.Instants, Instant{Pid: *e.Pid, Tid: *e.Tid, Cat: e.Cat, Name: e.Name, Ts: ts, Args: args})
		case "s", "f":
			ts, err := Micros(e.Ts)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
			id, err := strconv.ParseUint(string(e.ID), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("event %d: flow id %q", i, e.ID)
			}
			m := starts
			if e.Ph == "f" {
				m = ends
				if e.Bp != "e" {
					return nil, fmt.Errorf("event %d: flow end not bound to its enclosing slice (bp %q)", i, e.Bp)
				}
			}
			if _, dup := m[id]; dup {
				return nil, fmt.Errorf("event %d: flow id %d has two %q events", i, id, e.Ph)
			}
			if e.Cat == "" || e.Name == "" {
				return nil, fmt.Errorf("event %d: flow without category or name", i)
			}
			m[id] = end{*e.Pid, *e.Tid, ts, i, e.Cat, e.Name}
		default:
			return nil, fmt.Errorf("event %d: unexpected phase %q", i, e.Ph)
		}
	}
	// Slices nest on each thread.
	byThread := map[[2]int][]int{}
	for i, s := range tr.Slices {
		k := [2]int{s.Pid, s.Tid}
		byThread[k] = append(byThread[k], i)
	}
	for k, idx := range byThread {
		sort.SliceStable(idx, func(a, b int) bool {
			sa, sb := tr.Slices[idx[a]], tr.Slices[idx[b]]
			if sa.Ts != sb.Ts {
				return sa.Ts < sb.Ts
			}
			return sa.Dur > sb.Dur
		})
		var stack []int
		for _, i := range idx {
			s := tr.Slices[i]
			for len(stack) > 0 && end64(tr.Slices[stack[len(stack)-1]]) <= s.Ts {
				stack = stack[:len(stack)-1]
			}
			// A slice that never ends would swallow every later slice of
			// its thread: it must be the thread's last.
			if len(stack) > 0 && tr.Slices[stack[len(stack)-1]].Open {
				p := tr.Slices[stack[len(stack)-1]]
				return nil, fmt.Errorf("thread %v: slice %s at %d starts after %s at %d, which never ends", k, s.Name, s.Ts, p.Name, p.Ts)
			}
			if len(stack) > 0 && end64(s) > end64(tr.Slices[stack[len(stack)-1]]) {
				p := tr.Slices[stack[len(stack)-1]]
				return nil, fmt.Errorf("thread %v: slice %s [%d, %d] overlaps %s [%d, %d] without nesting", k, s.Name, s.Ts, end64(s), p.Name, p.Ts, end64(p))
			}
			stack = append(stack, i)
		}
		byThread[k] = idx
	}
	// Each flow has both ends, each bound to a slice.
	bind := func(e end) (int, error) {
		best := -1
		for _, i := range byThread[[2]int{e.pid, e.tid}] {
			s := tr.Slices[i]
			if s.Ts > e.ts {
				break
			}
			if e.ts <= end64(s) {
				best = i // the innermost: the latest to start
			}
		}
		if best < 0 {
			return 0, fmt.Errorf("flow event %d at %d ns on %d/%d lies in no slice", e.n, e.ts, e.pid, e.tid)
		}
		if tr.Slices[best].Ts != e.ts {
			return 0, fmt.Errorf("flow event %d at %d ns is not at the start of its slice %s (%d ns): Chrome DevTools would not bind it", e.n, e.ts, tr.Slices[best].Name, tr.Slices[best].Ts)
		}
		return best, nil
	}
	for id, s := range starts {
		f, ok := ends[id]
		if !ok {
			return nil, fmt.Errorf("flow %d has no end", id)
		}
		if s.cat != f.cat || s.name != f.name {
			return nil, fmt.Errorf("flow %d: start %s/%s, end %s/%s: viewers would not join them", id, s.cat, s.name, f.cat, f.name)
		}
		from, err := bind(s)
		if err != nil {
			return nil, err
		}
		to, err := bind(f)
		if err != nil {
			return nil, err
		}
		tr.Flows = append(tr.Flows, Flow{ID: id, Cat: s.cat, Name: s.name, From: from, To: to})
	}
	for id := range ends {
		if _, ok := starts[id]; !ok {
			return nil, fmt.Errorf("flow %d has no start", id)
		}
	}
	sort.Slice(tr.Flows, func(a, b int) bool { return tr.Flows[a].ID < tr.Flows[b].ID })
	return tr, nil
}

func end64(s Slice) int64 {
	if s.Open {
		return math.MaxInt64
	}
	return s.Ts + s.Dur
}
