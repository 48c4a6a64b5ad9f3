package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The timeline written piece by piece is json.Marshal's, with names that
// look like the keys the writer splits at.
func TestWriteTimelineJSON(t *testing.T) {
	for _, tl := range []*Timeline{
		{Funcs: []TimelineFunc{}, Intervals: []string{}, Lanes: []Lane{},
			Messages: Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}},
		{Origin: 5, End: 100, Funcs: []TimelineFunc{{Name: `"lanes":[]`, Kind: KindP2P}, {Name: "<b>&", Kind: KindColl}},
			Intervals: []string{"1", `"messages":{"from":[],"to":[],"send":[],"recv":[]}`},
			Lanes: []Lane{
				{Rank: 0, Host: "h", Calls: 2, DetailEnd: 100, Start: []int64{1, 2}, Dur: []int64{1, 1}, Lost: []int64{0, 0},
					Func: []int{0, 1}, Site: []int{3, 0}, Bytes: []int64{8, 0}, Peer: []int{1, -1}, Coll: []int{-1, 0},
					Overview: Overview{P2P: []int64{1}, Coll: []int64{2}, Wait: []int64{0}, Other: []int64{0}, Lost: []int64{0}}},
				{Rank: 2, Host: "g", Thread: []int{0, 1}, Threads: []int{0, 1}, Truncated: true,
					Unfinished: &LaneUnfinished{Start: []int64{90}, Dur: []int64{-1}, Func: []int{0}, Thread: []int{1}},
					Spans:      Spans{Start: []int64{1}, Dur: []int64{2}, Interval: []int{1}, Level: []int{1}}},
			},
			Messages:     Messages{From: []int{0, 2}, To: []int{2, 0}, Send: []int64{-1, 7}, Recv: []int64{9, 12}},
			MessageCount: 2, CallCount: 4, MaxCalls: 10, Truncated: true, Bins: 1000},
	} {
		want, err := json.Marshal(tl)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		err = WriteTimelineJSON(&buf, tl, func(put func(*Lane) error) error {
			for i := range tl.Lanes {
				if err := put(&tl.Lanes[i]); err != nil {
					return err
				}
			}
			return nil
		}, func(col int, put func(int64) error) error {
			m := tl.Messages
			var vs []int64
			switch col {
			case 0:
				for _, v := range m.From {
					vs = append(vs, int64(v))
				}
			case 1:
				for _, v := range m.To {
					vs = append(vs, int64(v))
				}
			case 2:
				vs = m.Send
			case 3:
				vs = m.Recv
			}
			for _, v := range vs {
				if err := put(v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("got  %s\nwant %s", buf.Bytes(), want)
		}
	}
}

// TestLaneJSON compares appendLaneJSON with json.Marshal on random lanes:
// nil, empty and filled columns, ties, threads and unfinished calls
// present or not, host
// names with what JSON or HTML escapes.
func TestLaneJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	ints := func() []int64 {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []int64{}
		}
		v := make([]int64, 1+rng.IntN(5))
		for i := range v {
			switch rng.IntN(3) {
			case 0:
				v[i] = int64(rng.IntN(3)) - 1
			case 1:
				v[i] = rng.Int64()
			default:
				v[i] = -rng.Int64()
			}
		}
		return v
	}
	small := func() []int {
		v64 := ints()
		if v64 == nil {
			return nil
		}
		v := make([]int, len(v64))
		for i, x := range v64 {
			v[i] = int(x)
		}
		return v
	}
	hosts := []string{"", "node-01", `a"b`, `c\d`, "<b>&", "a&b", "x>y", "\x00\n\t", "é\u2028\xff", "\x7f"}
	for i := range 3000 {
		ln := Lane{Rank: rng.IntN(1 << 20), Host: hosts[rng.IntN(len(hosts))], Calls: rng.Int64(), DetailEnd: -rng.Int64N(9),
			Truncated: rng.IntN(2) == 0, Start: ints(), Dur: ints(), Lost: ints(), Func: small(), Site: small(),
			Bytes: ints(), Peer: small(), Coll: small(), Thread: small(), Threads: small(),
			Spans:    Spans{Start: ints(), Dur: ints(), Interval: small(), Level: small()},
			Overview: Overview{P2P: ints(), Coll: ints(), Wait: ints(), Other: ints(), Lost: ints()}}
		if rng.IntN(3) == 0 {
			ln.Ties = &CollTies{Call: small(), Coll: small()}
			if k := rng.IntN(3); k > 0 {
				ln.Ties.Done = make([]bool, k-1)
				for j := range ln.Ties.Done {
					ln.Ties.Done[j] = rng.IntN(2) == 0
				}
			}
		}
		if rng.IntN(3) == 0 {
			ln.Unfinished = &LaneUnfinished{Start: ints(), Dur: ints(), Func: small(), Thread: small()}
			for range rng.IntN(3) {
				ln.Unfinished.AtLeast = append(ln.Unfinished.AtLeast, rng.IntN(2) == 0)
			}
		}
		want, err := json.Marshal(&ln)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLaneJSON(nil, &ln); !bytes.Equal(got, want) {
			t.Fatalf("lane %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestAppendInt compares appendInt with strconv.AppendInt at every length
// and its edges, both signs, and on random values.
func TestAppendInt(t *testing.T) {
	check := func(v int64) {
		t.Helper()
		pre := []byte("x,")
		if got, want := appendInt(pre, v), strconv.AppendInt([]byte("x,"), v, 10); !bytes.Equal(got, want) {
			t.Fatalf("%d: %s, want %s", v, got, want)
		}
	}
	for _, v := range []int64{0, 1, 9, 10, 99, 100, 9999, 10000, 99999, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		check(v)
		check(-v)
	}
	p := int64(1)
	for range 19 {
		for _, v := range []int64{p - 1, p, p + 1, 2*p - 1, 9 * p, 9*p + p - 1} {
			if v > 0 {
				check(v)
				check(-v)
			}
		}
		if p <= math.MaxInt64/10 {
			p *= 10
		}
	}
	rng := rand.New(rand.NewPCG(21, 4))
	for range 200000 {
		v := rng.Int64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			v = -v
		}
		check(v)
	}
}
