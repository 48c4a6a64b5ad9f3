package analyzer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// The encoding of a replayResult (marshal, unmarshalResult): varints
// (encoding/binary) in a fixed order, each list preceded by its length,
// and each rank's definitions as the trace format's own
// tracepb.Definitions message. A result is mostly small integers in
// maps keyed by small structs, hung on a tree of intervals: a generic
// codec would need a mirror of every type with exported fields (gob,
// which is moreover not meant for untrusted input) or a schema and
// generated code duplicating them (protobuf), for no gain in size.
// Written by hand, an interval's unused call sites and zero figures cost
// a byte each, the maps are written in key order (equal results marshal
// to equal bytes), and decoding checks every length against the bytes
// left before allocating, so that bad input gives an error, never a
// panic or a huge allocation.
//
// Layout: resultMagic, the run's size, the process's counts
// (procResult), then each replayed rank: its number, its counters and
// warnings, its definitions, its intervals in depth-first order (each
// after its parent, with its parent's index) and its sections.

// resultMagic starts a marshalled result; its last byte is the version
// of the layout.
const resultMagic = "dtpaR\x04"

// maxResultPath bounds the interval numbers an unmarshalled result's
// paths hold in all (a path per interval, as long as its depth).
const maxResultPath = 1 << 24

// maxResultRanks bounds the ranks of the run of an unmarshalled result
// (its table by rank).
const maxResultRanks = 1 << 22

type resWriter struct {
	b []byte
	// blobs are the definitions (marshalled tracepb messages) written
	// once per result, by their bytes: the ranks of a run mostly define
	// the same functions and modules, which would otherwise be most of a
	// result.
	blobs map[string]int
	order [][]byte
}

// blob is the index of definition m in the result's table.
func (w *resWriter) blob(m proto.Message) (int, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return 0, err
	}
	i, ok := w.blobs[string(b)]
	if !ok {
		i = len(w.order)
		w.blobs[string(b)] = i
		w.order = append(w.order, b)
	}
	return i, nil
}

func (w *resWriter) u(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *resWriter) i(v int64)  { w.b = binary.AppendVarint(w.b, v) }
func (w *resWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}
func (w *resWriter) bytes(p []byte) { w.u(uint64(len(p))); w.b = append(w.b, p...) }
func (w *resWriter) str(s string)   { w.u(uint64(len(s))); w.b = append(w.b, s...) }

// marshal encodes r (see the layout above).
func (r *replayResult) marshal() ([]byte, error) {
	w := &resWriter{b: []byte(resultMagic)}
	w.u(uint64(r.size))
	p := &r.proc
	keys := slices.SortedFunc(maps.Keys(p.sections), func(a, b sectionKey) int {
		return cmp.Or(cmp.Compare(a.num, b.num), cmp.Compare(a.inst, b.inst))
	})
	w.u(uint64(len(keys)))
	for _, k := range keys {
		w.i(k.num)
		w.i(int64(k.inst))
		w.i(int64(p.sections[k]))
	}
	w.bool(p.sectionOverflow)
	w.i(int64(p.sectionRuns))
	w.i(p.stalls)
	w.i(p.unsent)
	w.u(uint64(len(p.unreceived)))
	for _, u := range p.unreceived {
		w.i(int64(u.src))
		w.i(int64(u.dst))
		w.i(int64(u.tag))
		w.i(int64(u.n))
		w.u(uint64(u.site))
	}
	w.u(uint64(len(p.unmatched.described)))
	for _, d := range p.unmatched.described {
		w.u(d.key.comm)
		w.i(int64(d.key.group))
		w.u(d.key.seq)
		w.i(int64(d.key.split))
		w.u(uint64(d.key.n))
		w.str(d.text)
	}
	w.i(int64(p.unmatched.more))
	w.i(int64(p.openFiles))
	w.i(p.reopens)
	// The ranks go after the table of the definitions they refer to.
	body := &resWriter{blobs: map[string]int{}}
	n := 0
	for _, rr := range r.ranks {
		if rr != nil {
			n++
		}
	}
	body.u(uint64(n))
	for _, rr := range r.ranks {
		if rr != nil {
			if err := body.rank(rr); err != nil {
				return nil, err
			}
		}
	}
	w.u(uint64(len(body.order)))
	for _, b := range body.order {
		w.bytes(b)
	}
	return append(w.b, body.b...), nil
}

func (w *resWriter) rank(rr *rankResult) error {
	w.u(uint64(rr.rank))
	w.bool(rr.started)
	w.bool(rr.finalized)
	for _, v := range []int64{rr.last, rr.events, rr.otherThreads, rr.parks, rr.violations, rr.worstViolation,
		rr.amortized, rr.unmatchedRecvs, rr.unmatchedColls, rr.unknownReqs, rr.noIcollReq, rr.otherWorld} {
		w.i(v)
	}
	for _, u := range rr.unrep {
		w.i(u.n)
		w.i(u.worst)
		w.u(uint64(u.rank))
	}
	w.str(rr.readErr)
	w.u(uint64(len(rr.warns)))
	for _, s := range rr.warns {
		w.str(s)
	}
	pcw := slices.Sorted(maps.Keys(rr.pcw))
	w.u(uint64(len(pcw)))
	for _, s := range pcw {
		w.str(s)
		w.u(uint64(rr.pcw[s]))
	}
	w.bool(rr.defs != nil)
	if rr.defs != nil {
		if err := w.defs(rr); err != nil {
			return fmt.Errorf("rank %d: definitions: %w", rr.rank, err)
		}
		virt := slices.Sorted(maps.Keys(rr.virt))
		w.u(uint64(len(virt)))
		for _, v := range virt {
			w.u(uint64(v))
			w.u(uint64(rr.virt[v]))
		}
		for _, fs := range [][]siteFrame{rr.unf, rr.unfPy, rr.crash, rr.abort, rr.exit, rr.where} {
			w.u(uint64(len(fs)))
			for _, f := range fs {
				w.u(uint64(f.mod + 1))
				w.u(f.off)
			}
		}
		w.bool(rr.hasLast)
		if rr.hasLast {
			w.u(uint64(rr.lastSite))
			w.u(uint64(rr.lastFn))
		}
	}
	// Intervals, parents first; idx numbers them for the sections.
	idx := map[*rnode]int{}
	var nodes []*rnode
	rr.root.Walk(func(n *rnode) {
		idx[n] = len(nodes)
		nodes = append(nodes, n)
	})
	w.u(uint64(len(nodes)))
	for i, n := range nodes {
		if i > 0 {
			w.u(uint64(idx[n.Parent]))
			w.i(int64(n.Number()))
		}
		w.i(int64(n.ExeCount))
		w.i(n.ExecNs)
		w.u(uint64(n.Site))
		w.i(n.LastExit)
		w.bool(n.OpenAtEnd)
		w.acc(n.Value)
	}
	w.u(uint64(len(rr.secRuns)))
	for _, s := range rr.secRuns {
		w.u(uint64(idx[s.node]))
		w.i(s.num)
		w.i(int64(s.inst))
		w.i(s.seqNs)
	}
	agg := slices.SortedFunc(maps.Keys(rr.secAgg), func(a, b secAggKey) int {
		return cmp.Or(cmp.Compare(idx[a.node], idx[b.node]), cmp.Compare(a.num, b.num))
	})
	w.u(uint64(len(agg)))
	for _, k := range agg {
		w.u(uint64(idx[k.node]))
		w.i(k.num)
		w.i(rr.secAgg[k])
	}
	return nil
}

// defs writes the definitions of rr: its functions, modules and
// communicators as indexes in the result's table, and its call sites as
// frames (module index, offset). (All the functions, although the report
// reads only those that call sites and communicators name: the ids then
// stay as dense as in the trace, and unmarshalResult bounds them as the
// trace reader does. The modules without their addresses, which differ
// from rank to rank and which the frames make useless: the ranks share
// them.)
func (w *resWriter) defs(rr *rankResult) error {
	d := rr.defs
	var fns, mods, comms []proto.Message
	for _, f := range d.Functions {
		if f != nil {
			fns = append(fns, f)
		}
	}
	for _, m := range d.Modules {
		mods = append(mods, &tracepb.Module{Path: m.Path, BuildId: m.BuildId})
	}
	for _, c := range d.Comms {
		if c != nil {
			comms = append(comms, c)
		}
	}
	for _, list := range [][]proto.Message{fns, mods, comms} {
		w.u(uint64(len(list)))
		for _, m := range list {
			i, err := w.blob(m)
			if err != nil {
				return err
			}
			w.u(uint64(i))
		}
	}
	frames := rr.frames
	if frames == nil {
		frames = make([][]siteFrame, len(d.CallSites))
		for id, pcs := range d.CallSites {
			if pcs != nil {
				frames[id] = make([]siteFrame, len(pcs))
				for i, pc := range pcs {
					frames[id][i] = frameOf(d.Modules, pc)
				}
			}
		}
	}
	n := 0
	for _, f := range frames {
		if f != nil {
			n++
		}
	}
	w.u(uint64(n))
	for id, fs := range frames {
		if fs != nil {
			w.u(uint64(id))
			w.u(uint64(len(fs)))
			for _, f := range fs {
				w.u(uint64(f.mod + 1))
				w.u(f.off)
			}
		}
	}
	return nil
}

func (w *resWriter) acc(a *acc) {
	for _, v := range []int64{a.p2p, a.coll, a.sys, a.realSync, a.potSync, a.timeVar, a.overlap, a.lateRecv,
		a.sends, a.recvs, a.waits, a.sysCalls, a.collCalls, a.collInst} {
		w.i(v)
	}
	w.u(math.Float64bits(a.insuf))
	// Call sites by id: the table's used entries and the map's.
	n := len(a.bigSites)
	for i := range a.sites {
		if a.sites[i].used {
			n++
		}
	}
	w.u(uint64(n))
	big := slices.Sorted(maps.Keys(a.bigSites))
	for i := range a.sites {
		if s := &a.sites[i]; s.used {
			for len(big) > 0 && big[0] < uint32(i) {
				w.site(big[0], a.bigSites[big[0]])
				big = big[1:]
			}
			w.site(uint32(i), s)
		}
	}
	for _, id := range big {
		w.site(id, a.bigSites[id])
	}
	wk := slices.SortedFunc(keys(&a.culprits), func(x, y waitKey) int {
		return cmp.Or(cmp.Compare(x.kind, y.kind), cmp.Compare(x.site, y.site), cmp.Compare(x.late.rank, y.late.rank), cmp.Compare(x.late.site, y.late.site))
	})
	w.u(uint64(len(wk)))
	for _, k := range wk {
		v := a.wait(k)
		w.u(uint64(k.kind))
		w.u(uint64(k.site))
		w.i(int64(k.late.rank))
		w.u(uint64(k.late.site))
		w.i(v.ns)
		w.i(v.n)
	}
	ck := slices.SortedFunc(keys(&a.causes), func(x, y causeKey) int {
		return cmp.Or(cmp.Compare(x.late.rank, y.late.rank), cmp.Compare(x.late.site, y.late.site), cmp.Compare(x.span, y.span))
	})
	w.u(uint64(len(ck)))
	for _, k := range ck {
		v := a.cause(k)
		w.i(int64(k.late.rank))
		w.u(uint64(k.late.site))
		w.u(uint64(k.span))
		for _, x := range []int64{v.wait, v.delay, v.lateComp, v.ownComp, v.n} {
			w.i(x)
		}
	}
	w.bool(a.prof != nil)
	if p := a.prof; p != nil {
		w.u(uint64(len(p.comms)))
		for _, c := range p.comms {
			w.u(c.id)
			type cell struct {
				d           int
				msgs, bytes int64
			}
			var cells []cell
			c.each(func(d int, msgs, bytes int64) { cells = append(cells, cell{d, msgs, bytes}) })
			slices.SortFunc(cells, func(x, y cell) int { return cmp.Compare(x.d, y.d) })
			w.u(uint64(len(cells)))
			for _, x := range cells {
				w.u(uint64(x.d))
				w.i(x.msgs)
				w.i(x.bytes)
			}
		}
		w.u(uint64(len(p.sizes)))
		for _, b := range p.sizes {
			w.i(b.n)
			w.i(b.bytes)
			w.i(b.lat)
		}
		w.i(p.gaps.sum)
		w.u(uint64(p.gaps.lo))
		w.u(uint64(len(p.gaps.c)))
		for _, c := range p.gaps.c {
			w.i(c)
		}
	}
}

func (w *resWriter) site(id uint32, s *siteAcc) {
	w.u(uint64(id))
	w.u(uint64(s.fn))
	for _, v := range []int64{s.count, s.time, s.realSync, s.pot, s.tv, s.overlap, s.lateRecv, s.minCall, s.maxCall, s.bytes} {
		w.i(v)
	}
}

// resReader decodes; the first error sticks, and every later read
// returns zero values.
type resReader struct {
	b   []byte
	err error
	// blobs is the result's table of definitions; fns, mods and comms
	// those decoded so far, by index (ranks share them).
	blobs [][]byte
	fns   map[uint64]*tracepb.Function
	mods  map[uint64]*tracepb.Module
	comms map[uint64]*tracepb.Communicator
}

func (r *resReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *resReader) u() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated or bad number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *resReader) i() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated or bad number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// below reads an unsigned number less than lim.
func (r *resReader) below(lim uint64, what string) uint64 {
	v := r.u()
	if v >= lim {
		r.fail("%s %d out of range", what, v)
		return 0
	}
	return v
}

// u32 reads a uint32.
func (r *resReader) u32(what string) uint32 { return uint32(r.below(1<<32, what)) }

// i32 reads an int32.
func (r *resReader) i32(what string) int32 {
	v := r.i()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("%s %d out of range", what, v)
		return 0
	}
	return int32(v)
}

// int reads an int that fits 32 bits (counts, instance numbers).
func (r *resReader) int(what string) int { return int(r.i32(what)) }

// worldRank reads a late partner's world rank, which is not negative
// (the aggregates' tables keep -1 for their free entries).
func (r *resReader) worldRank() int32 {
	v := r.i32("rank")
	if v < 0 {
		r.fail("negative rank %d", v)
		return 0
	}
	return v
}

// count reads a list's length: each of its entries takes at least a
// byte, so that a length beyond the bytes left is an error, not an
// allocation.
func (r *resReader) count(what string) int {
	n := r.u()
	if n > uint64(len(r.b)) {
		r.fail("%s: %d entries in %d bytes", what, n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *resReader) bool() bool {
	switch v := r.u(); v {
	case 0, 1:
		return v == 1
	default:
		r.fail("bad boolean %d", v)
		return false
	}
}

func (r *resReader) bytes(what string) []byte {
	n := r.count(what)
	if r.err != nil {
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *resReader) str(what string) string { return string(r.bytes(what)) }

// unmarshalResult decodes what marshal encoded; bad bytes give an error.
// The result does not refer to b.
func unmarshalResult(b []byte) (res *replayResult, err error) {
	if len(b) < len(resultMagic) || string(b[:len(resultMagic)-1]) != resultMagic[:len(resultMagic)-1] {
		return nil, errors.New("not a replay result")
	}
	if b[len(resultMagic)-1] != resultMagic[len(resultMagic)-1] {
		return nil, fmt.Errorf("replay result of layout version %d, this dtpa reads version %d", b[len(resultMagic)-1], resultMagic[len(resultMagic)-1])
	}
	r := &resReader{b: b[len(resultMagic):]}
	res = r.result()
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("bad replay result: %w", r.err)
	}
	return res, nil
}

func (r *resReader) result() *replayResult {
	size := r.u()
	if size > maxResultRanks {
		r.fail("run of %d ranks", size)
		return nil
	}
	res := &replayResult{size: int(size)}
	p := &res.proc
	n := r.count("sections")
	p.sections = make(map[sectionKey]int, n)
	for range n {
		k := sectionKey{num: r.i(), inst: r.int("section instance")}
		p.sections[k] = r.int("section count")
	}
	p.sectionOverflow = r.bool()
	p.sectionRuns = r.int("section runs")
	p.stalls, p.unsent = r.i(), r.i()
	n = r.count("unreceived messages")
	for range n {
		p.unreceived = append(p.unreceived, unreceived{src: r.i32("rank"), dst: r.i32("rank"), tag: r.i32("tag"),
			n: r.int("messages"), site: r.u32("call site")})
	}
	n = r.count("unmatched collectives")
	for range n {
		k := collKey{comm: r.u(), group: r.i32("group"), seq: r.u(), split: r.i32("split"), n: int64(r.u())}
		p.unmatched.described = append(p.unmatched.described, collWarning{key: k, text: r.str("warning")})
	}
	p.unmatched.more = r.int("unmatched collectives")
	p.openFiles = r.int("open files")
	p.reopens = r.i()
	n = r.count("definitions")
	for range n {
		r.blobs = append(r.blobs, r.bytes("definition"))
	}
	if r.err != nil {
		return nil
	}
	// Each rank takes more than a byte; the slice by rank is allocated
	// only for a size the bytes can back or the ranks they hold.
	n = r.count("ranks")
	if r.err != nil {
		return nil
	}
	res.ranks = make([]*rankResult, 0, min(int(size), len(r.b)))
	pathBudget := maxResultPath
	for range n {
		rr := r.rank(int(size), &pathBudget)
		if r.err != nil {
			return nil
		}
		for int(rr.rank) >= len(res.ranks) {
			res.ranks = append(res.ranks, nil)
		}
		if res.ranks[rr.rank] != nil {
			r.fail("rank %d twice", rr.rank)
			return nil
		}
		res.ranks[rr.rank] = rr
	}
	res.ranks = append(res.ranks, make([]*rankResult, int(size)-len(res.ranks))...)
	return res
}

func (r *resReader) rank(size int, pathBudget *int) *rankResult {
	rr := &rankResult{rank: int32(r.below(uint64(size), "rank"))}
	rr.started = r.bool()
	rr.finalized = r.bool()
	for _, v := range []*int64{&rr.last, &rr.events, &rr.otherThreads, &rr.parks, &rr.violations, &rr.worstViolation,
		&rr.amortized, &rr.unmatchedRecvs, &rr.unmatchedColls, &rr.unknownReqs, &rr.noIcollReq, &rr.otherWorld} {
		*v = r.i()
	}
	for c := range rr.unrep {
		u := &rr.unrep[c]
		u.n, u.worst = r.i(), r.i()
		u.rank = int32(r.below(uint64(size), "rank"))
	}
	rr.readErr = r.str("error")
	n := r.count("warnings")
	for range n {
		rr.warns = append(rr.warns, r.str("warning"))
	}
	if n = r.count("Pcontrol warnings"); n > 0 {
		rr.pcw = make(map[string]uint32, n)
		for range n {
			w := r.str("warning")
			rr.pcw[w] = r.u32("call site")
		}
	}
	if r.bool() {
		rr.defs, rr.frames = r.defs()
		if n = r.count("virtual call sites"); n > 0 {
			rr.virt = make(map[uint32]uint32, n)
			for range n {
				v := r.u32("virtual call site")
				rr.virt[v] = r.u32("call site")
			}
		}
		for _, fs := range []*[]siteFrame{&rr.unf, &rr.unfPy, &rr.crash, &rr.abort, &rr.exit, &rr.where} {
			if n = r.count("frames"); n > 0 && rr.defs != nil {
				*fs = make([]siteFrame, n)
				for i := range *fs {
					(*fs)[i] = siteFrame{mod: int32(r.below(uint64(len(rr.defs.Modules))+1, "module")) - 1, off: r.u()}
				}
			}
		}
		if rr.hasLast = r.bool(); rr.hasLast {
			rr.lastSite, rr.lastFn = r.u32("call site"), r.u32("function")
		}
	}
	n = r.count("intervals")
	if n == 0 && r.err == nil {
		r.fail("rank %d: no intervals", rr.rank)
	}
	if r.err != nil {
		return nil
	}
	nodes := make([]*rnode, 0, n)
	for i := range n {
		nd := &rnode{Path: []int{}}
		if i > 0 {
			parent := nodes[r.below(uint64(i), "parent interval")]
			num := r.i()
			if num <= 0 || num > 1<<30 {
				r.fail("interval number %d", num)
				return nil
			}
			if *pathBudget -= len(parent.Path) + 1; *pathBudget < 0 {
				r.fail("intervals nested too deep")
				return nil
			}
			nd.Path = append(append(make([]int, 0, len(parent.Path)+1), parent.Path...), int(num))
			nd.Parent = parent
			parent.Children = append(parent.Children, nd)
		}
		nd.ExeCount = r.int("execution count")
		nd.ExecNs = r.i()
		nd.Site = r.u32("call site")
		nd.LastExit = r.i()
		nd.OpenAtEnd = r.bool()
		nd.Value = r.acc(size)
		if r.err != nil {
			return nil
		}
		nodes = append(nodes, nd)
	}
	rr.root = nodes[0]
	n = r.count("section runs")
	for range n {
		rr.secRuns = append(rr.secRuns, sectionRun{node: nodes[r.below(uint64(len(nodes)), "interval")],
			num: r.i(), inst: r.int("section instance"), seqNs: r.i()})
	}
	if n = r.count("sections"); n > 0 {
		rr.secAgg = make(map[secAggKey]int64, n)
		for range n {
			k := secAggKey{node: nodes[r.below(uint64(len(nodes)), "interval")], num: r.i()}
			rr.secAgg[k] = r.i()
		}
	}
	return rr
}

// decodeBlob is definition i of the result's table as a message of
// the kind cache holds, decoded once.
func decodeBlob[M proto.Message](r *resReader, cache *map[uint64]M, i uint64, m M) M {
	if r.err != nil {
		return m // (i is not an index then)
	}
	if v, ok := (*cache)[i]; ok {
		return v
	}
	if err := proto.Unmarshal(r.blobs[i], m); err != nil {
		r.fail("definition %d: %v", i, err)
	}
	if *cache == nil {
		*cache = map[uint64]M{}
	}
	(*cache)[i] = m
	return m
}

// defs decodes a rank's definitions, indexed by id as traceformat.Reader
// indexes them (and bounded the same way).
func (r *resReader) defs() (*traceformat.Definitions, [][]siteFrame) {
	d := &traceformat.Definitions{}
	dense := func(id uint32, n int) bool { return int64(id) < 4*int64(n)+4096 }
	n := r.count("functions")
	for range n {
		f := decodeBlob(r, &r.fns, r.below(uint64(len(r.blobs)), "definition"), &tracepb.Function{})
		if r.err != nil {
			return nil, nil
		}
		if !dense(f.Id, n) {
			r.fail("function id %d out of range", f.Id)
			return nil, nil
		}
		d.Functions = growTo(d.Functions, f.Id)
		d.Functions[f.Id] = f
	}
	n = r.count("modules")
	for range n {
		d.Modules = append(d.Modules, decodeBlob(r, &r.mods, r.below(uint64(len(r.blobs)), "definition"), &tracepb.Module{}))
	}
	n = r.count("communicators")
	for range n {
		c := decodeBlob(r, &r.comms, r.below(uint64(len(r.blobs)), "definition"), &tracepb.Communicator{})
		if r.err != nil {
			return nil, nil
		}
		if !dense(c.Local, n) {
			r.fail("communicator index %d out of range", c.Local)
			return nil, nil
		}
		d.Comms = growTo(d.Comms, c.Local)
		d.Comms[c.Local] = c
	}
	var frames [][]siteFrame
	n = r.count("call sites")
	for range n {
		id := r.u32("call site")
		fs := make([]siteFrame, r.count("frames"))
		for i := range fs {
			fs[i] = siteFrame{mod: int32(r.below(uint64(len(d.Modules))+1, "module")) - 1, off: r.u()}
		}
		if r.err != nil {
			return nil, nil
		}
		if !dense(id, n) {
			r.fail("call site %d out of range", id)
			return nil, nil
		}
		frames = growTo(frames, id)
		frames[id] = fs
	}
	if frames == nil {
		frames = [][]siteFrame{}
	}
	return d, frames
}

func growTo[T any](s []T, id uint32) []T {
	if int(id) >= len(s) {
		s = append(s, make([]T, int(id)+1-len(s))...)
	}
	return s
}

func (r *resReader) acc(size int) *acc {
	a := &acc{}
	for _, v := range []*int64{&a.p2p, &a.coll, &a.sys, &a.realSync, &a.potSync, &a.timeVar, &a.overlap, &a.lateRecv,
		&a.sends, &a.recvs, &a.waits, &a.sysCalls, &a.collCalls, &a.collInst} {
		*v = r.i()
	}
	a.insuf = math.Float64frombits(r.u())
	n := r.count("call sites")
	last := int64(-1)
	for i := range n {
		id := r.u32("call site")
		if int64(id) <= last {
			r.fail("call site %d out of order", id)
		}
		last = int64(id)
		if r.err != nil {
			return nil
		}
		// The sites go to a table by id when their ids are dense enough
		// for its size to follow the bytes read, else to the map (which
		// the report reads the same way).
		var s *siteAcc
		if id < denseSites && int(id) < 4*(i+1)+64 {
			if int(id) >= len(a.sites) {
				a.sites = append(a.sites, make([]siteAcc, int(id)+1-len(a.sites))...)
			}
			s = &a.sites[id]
		} else {
			if a.bigSites == nil {
				a.bigSites = map[uint32]*siteAcc{}
			}
			s = &siteAcc{}
			a.bigSites[id] = s
		}
		s.used = true
		s.fn = r.u32("function")
		for _, v := range []*int64{&s.count, &s.time, &s.realSync, &s.pot, &s.tv, &s.overlap, &s.lateRecv, &s.minCall, &s.maxCall, &s.bytes} {
			*v = r.i()
		}
	}
	for range r.count("waits") {
		k := waitKey{kind: waitKind(r.below(uint64(numWaitKinds), "wait kind")), site: r.u32("call site"),
			late: msgFrom{rank: r.worldRank(), site: r.u32("call site")}}
		*a.wait(k) = waitVal{ns: r.i(), n: r.i()}
	}
	for range r.count("causes") {
		k := causeKey{late: msgFrom{rank: r.worldRank(), site: r.u32("call site")}, span: r.u32("call site")}
		*a.cause(k) = causeVal{wait: r.i(), delay: r.i(), lateComp: r.i(), ownComp: r.i(), n: r.i()}
	}
	if !r.bool() || r.err != nil {
		return a
	}
	p := &profAcc{}
	a.prof = p
	n = r.count("communicators")
	if n > maxComms+1 {
		r.fail("%d communicators in a profile", n)
		return nil
	}
	for range n {
		id := r.u()
		if r.err != nil {
			return nil
		}
		if slices.ContainsFunc(p.comms, func(c *commSent) bool { return c.id == id }) {
			r.fail("communicator %#x twice in a profile", id)
			return nil
		}
		// By destination in a slice as the replay counts them, unless
		// the bytes read hold too few for its size (either is read the
		// same way).
		m := r.count("destinations")
		c := &commSent{id: id, n: size}
		if size <= denseSentRanks && 8*m >= size {
			c.to = make([]sentPair, size)
		} else {
			c.sp = map[int32]sentPair{}
		}
		p.comms = append(p.comms, c)
		for range m {
			d := r.below(uint64(size), "rank")
			c.add(int32(d), r.i(), r.i())
		}
	}
	n = r.count("message sizes")
	if n > 65 {
		r.fail("%d message size classes", n)
		return nil
	}
	p.sizes = make([]sizeBin, n)
	for i := range p.sizes {
		p.sizes[i] = sizeBin{n: r.i(), bytes: r.i(), lat: r.i()}
	}
	p.gaps.sum = r.i()
	p.gaps.lo = int(r.below(gapBins, "gap bin"))
	n = r.count("gap bins")
	if p.gaps.lo+n > gapBins {
		r.fail("gap bins out of range")
		return nil
	}
	if n > 0 {
		p.gaps.c = make([]int64, n)
		for i := range p.gaps.c {
			p.gaps.c[i] = r.i()
		}
	}
	return a
}
