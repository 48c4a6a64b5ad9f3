package otf2

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/internal/partstream"
)

// ExportDist is Export as one process of an MPI job (dtpa-mpi --export
// otf2, docs/distributed.md): each process converts its block of the
// ranks (those it replays in analyzer.AnalyzeDist) into records, and
// process 0, which alone writes the archive, receives them rank by rank
// in rank order (package partstream) and writes them as its own. The
// archive is Export's but for the anchor's random trace identifier.
//
// The records of a process name its own definitions (regions,
// communicators, source code locations), numbered in the order it met
// them; each new one goes to process 0 ahead of the records that name
// it, and process 0 adds it to the archive's, which it thereby builds in
// the order Export meets them, and renumbers the records. Every process
// must call it with the same options; process 0 returns the stats, the
// others none. An error of another process is returned by process 0,
// which stops the others; an error of the transport on another process
// is an analyzer.DistError (the job must end).
func ExportDist(ctx context.Context, opts ExportOptions, tr analyzer.Transport) (ExportStats, error) {
	rt, warn, err := findRun(opts)
	if err != nil {
		return ExportStats{}, err // the same in every process
	}
	defer rt.Close()
	first, end := tr.Rank()*rt.Size/tr.Size(), (tr.Rank()+1)*rt.Size/tr.Size()
	if tr.Rank() != 0 {
		if err := sendRanks(ctx, rt, opts, tr, first, end); err != nil {
			return ExportStats{}, &analyzer.DistError{Err: err}
		}
		return ExportStats{}, nil
	}
	for _, w := range rt.Warnings {
		warn(w)
	}
	rcv := partstream.NewReceiver(tr)
	stats, err := writeDist(ctx, rt, opts, warn, tr, rcv)
	if err != nil {
		rcv.Stop()
	}
	return stats, err
}

// writeDist is process 0's ExportDist: it writes its own ranks itself,
// then every other process's.
func writeDist(ctx context.Context, rt *analyzer.RunClocks, opts ExportOptions, warn func(string), tr analyzer.Transport, rcv *partstream.Receiver) (ExportStats, error) {
	return writeArchive(rt, opts, warn, func(x *exporter, ca *cArchive) error {
		return x.runDist(ctx, ca, rcv, tr.Size())
	})
}

// runDist is run over the ranks of every process of procs: process 0's,
// its own, then each other process's, received.
func (x *exporter) runDist(ctx context.Context, ca *cArchive, rcv *partstream.Receiver, procs int) error {
	if n, ok := x.sym.(analyzer.ModuleNoter); ok {
		n.NoteModules(x.modules())
	}
	var locs []uint64
	for p := 0; p < procs; p++ {
		lo, hi := p*x.rt.Size/procs, (p+1)*x.rt.Size/procs
		in := &partIn{x: x}
		for r := lo; r < hi; r++ {
			rk := x.rt.Ranks[r]
			if rk.Path == "" {
				continue
			}
			var err error
			if p == 0 {
				err = x.rank(ctx, r, rk)
			} else {
				err = in.rank(rcv, p, r)
			}
			if err != nil {
				return err
			}
			locs = x.wrote(r, locs)
		}
	}
	return x.finish(ca, locs)
}

// Items of a part: a definition (kind, then its fields), a batch of
// records (partEvents, their number, then their bytes as wev lays them
// out: the processes run the same program), or the thread whose location
// the next batches go to (partThread, then its number; the master
// thread's until the first).
const (
	partEvents = 0x10
	partThread = 0x11
)

// sendRanks is ExportDist on a process other than 0: each of its ranks
// first … end-1 with a trace is a part for process 0 (partOut).
func sendRanks(ctx context.Context, rt *analyzer.RunClocks, opts ExportOptions, tr analyzer.Transport, first, end int) error {
	s := partstream.NewSender(tr)
	out := &partOut{s: s}
	x := newExporter(rt, opts.Symbolizer, func(w string) { out.warns = append(out.warns, w) })
	out.defs = x.defs
	x.defs.added = out.def
	x.open = func(_ int, t uint32) (evtSink, error) { out.opened = true; return &partLoc{o: out, thread: t}, nil }
	if n, ok := x.sym.(analyzer.ModuleNoter); ok {
		n.NoteModules(x.modules())
	}
	for r := first; r < end; r++ {
		rk := rt.Ranks[r]
		if rk.Path == "" {
			continue
		}
		before := x.stats
		err := x.rank(ctx, r, rk)
		if err == nil {
			err = out.flush()
		}
		if err == nil {
			err = s.End(out.trailer(x, before))
			x.marks = x.marks[:0]
		} else if !errors.Is(err, partstream.ErrStopped) {
			// Process 0 reports it, and stops the others.
			return s.Fail(err)
		}
		if errors.Is(err, partstream.ErrStopped) {
			return nil
		}
		if err != nil {
			return err
		}
		out.opened, out.warns, out.thread = false, nil, 0
	}
	return nil
}

// partOut is a rank's part as its process writes it: the evtSink of the
// rank and the definitions its records name, in chunks.
type partOut struct {
	s      *partstream.Sender
	buf    []byte
	opened bool     // the rank's events were opened (its trace could be)
	warns  []string // the rank's warnings
	defs   *globalDefs
	thread uint32 // of the last batch in the part
}

// partLoc is the evtSink of one thread's location in a rank's part.
type partLoc struct {
	o      *partOut
	thread uint32
}

func (l *partLoc) write(evs []wev) error {
	if len(evs) == 0 {
		return nil
	}
	if o := l.o; o.thread != l.thread {
		o.buf = binary.AppendUvarint(append(o.buf, partThread), uint64(l.thread))
		o.thread = l.thread
	}
	return l.o.write(evs)
}

func (l *partLoc) close() error { return nil }

// chunkBytes is the size of the chunks a part is sent in.
const chunkBytes = 256 << 10

func (o *partOut) write(evs []wev) error {
	if len(evs) == 0 {
		return nil
	}
	o.buf = append(o.buf, partEvents)
	o.buf = binary.AppendUvarint(o.buf, uint64(len(evs)))
	o.buf = append(o.buf, unsafe.Slice((*byte)(unsafe.Pointer(&evs[0])), len(evs)*int(unsafe.Sizeof(evs[0])))...)
	if len(o.buf) >= chunkBytes {
		return o.flush()
	}
	return nil
}

func (o *partOut) close() error { return nil }

func (o *partOut) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.s.Write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// def adds definition id of kind to the part (globalDefs.added): its
// records name it only after this.
func (o *partOut) def(kind byte, id uint32) {
	g := o.defs
	b := append(o.buf, kind)
	b = binary.AppendUvarint(b, uint64(id))
	switch kind {
	case defRegion:
		d := g.regionList[id]
		b = appendStr(b, d.name)
		b = binary.AppendVarint(b, int64(d.role))
	case defComm:
		c := g.commList[id]
		b = binary.AppendUvarint(b, c.key)
		b = appendBool(b, c.self)
		b = appendU64s(b, c.members)
		b = binary.AppendUvarint(b, c.parent)
		b = appendBool(b, c.hasPar)
		b = appendBool(b, c.inter)
		b = appendU64s(b, c.remote)
	case defSCL:
		d := g.sclList[id]
		b = appendStr(b, d.file)
		b = binary.AppendVarint(b, int64(d.key))
	}
	o.buf = b
}

// trailer is what process 0 needs of the rank once its records are in:
// whether its trace could be opened, the times it wrote, its counts, its
// warnings (before: the counts before it) and its crash (x.marks holds
// the rank's only: sendRanks empties it after each).
func (o *partOut) trailer(x *exporter, before ExportStats) []byte {
	b := appendBool(nil, o.opened)
	b = appendBool(b, x.started)
	b = binary.AppendUvarint(b, x.first)
	b = binary.AppendUvarint(b, x.last)
	b = binary.AppendUvarint(b, x.realtimeStart)
	for _, v := range []int64{x.stats.Calls - before.Calls, x.stats.Sends - before.Sends, x.stats.Recvs - before.Recvs, x.stats.Colls - before.Colls, x.stats.Unfinished - before.Unfinished} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(o.warns)))
	for _, w := range o.warns {
		b = appendStr(b, w)
	}
	b = binary.AppendUvarint(b, uint64(len(x.marks)))
	for _, m := range x.marks {
		b = binary.AppendUvarint(b, m.time)
		b = binary.AppendUvarint(b, m.loc)
		b = appendBool(b, m.onLoc)
		b = appendStr(b, m.text)
		b = appendBool(b, m.end)
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendU64s(b []byte, v []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	for _, x := range v {
		b = binary.AppendUvarint(b, x)
	}
	return b
}

// partIn is process 0's end of one other process's parts: the archive's
// numbers of the definitions the process numbered.
type partIn struct {
	x                    *exporter
	regions, comms, scls []uint32
	evs                  []wev
}

// rank receives rank r's part from process p and writes it.
func (in *partIn) rank(rcv *partstream.Receiver, p, r int) error {
	x := in.x
	// The rank's locations, by thread, in the order of their first
	// records (the master thread's first).
	type loc struct {
		t uint32
		w evtSink
		n uint64
	}
	var locs []*loc
	var cur *loc
	open := func(t uint32) error {
		for _, l := range locs {
			if l.t == t {
				cur = l
				return nil
			}
		}
		w, err := x.open(r, t)
		if err != nil {
			return err
		}
		cur = &loc{t: t, w: w}
		locs = append(locs, cur)
		return nil
	}
	thread := uint32(0)
	trailer, err := rcv.Receive(p, func(b []byte) error {
		d := &dec{b: b}
		for len(d.b) > 0 && d.err == nil {
			kind := d.b[0]
			d.b = d.b[1:]
			if kind == partThread {
				t := d.u()
				if t > 1<<32-1 {
					d.fail("thread %d", t)
				}
				thread = uint32(t)
				continue
			}
			if kind != partEvents {
				in.def(d, kind)
				continue
			}
			n := d.count(int(unsafe.Sizeof(wev{})))
			if d.err != nil {
				break
			}
			in.evs = in.evs[:0]
			in.evs = append(in.evs, make([]wev, n)...)
			if n > 0 {
				copy(unsafe.Slice((*byte)(unsafe.Pointer(&in.evs[0])), n*int(unsafe.Sizeof(wev{}))), d.b)
			}
			d.b = d.b[n*int(unsafe.Sizeof(wev{})):]
			if err := in.remap(in.evs); err != nil {
				return err
			}
			if err := open(thread); err != nil {
				return err
			}
			cur.n += uint64(n)
			x.stats.Records += int64(n)
			if err := cur.w.write(in.evs); err != nil {
				return err
			}
		}
		if d.err != nil {
			return fmt.Errorf("otf2 export: rank %d's part: %w", r, d.err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d := &dec{b: trailer}
	opened, started := d.bool(), d.bool()
	first, last, realtime := d.u(), d.u(), d.u()
	var counts [5]int64
	for i := range counts {
		counts[i] = d.i()
	}
	n := d.count(1)
	var warns []string
	for i := 0; i < n && d.err == nil; i++ {
		warns = append(warns, d.str())
	}
	n = d.count(4)
	var marks []crashMark
	for i := 0; i < n && d.err == nil; i++ {
		marks = append(marks, crashMark{time: d.u(), rank: r, loc: d.u(), onLoc: d.bool(), text: d.str(), end: d.bool()})
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = errors.New("bytes after the end")
	}
	if d.err != nil {
		return fmt.Errorf("otf2 export: rank %d's part: %w", r, d.err)
	}
	if opened {
		// (The master thread's location is written, even empty, as by
		// exporter.rank.)
		if err := open(0); err != nil {
			return err
		}
	}
	for _, l := range locs {
		if err := l.w.close(); err != nil {
			return err
		}
		x.counted(r, l.t, l.n)
	}
	if started {
		if !x.started || first < x.first {
			x.first = first
		}
		x.started = true
		x.last = max(x.last, last)
	}
	if r == 0 && realtime > 0 {
		x.realtimeStart = realtime
	}
	x.stats.Calls += counts[0]
	x.stats.Sends += counts[1]
	x.stats.Recvs += counts[2]
	x.stats.Colls += counts[3]
	x.stats.Unfinished += counts[4]
	x.marks = append(x.marks, marks...)
	for _, s := range warns {
		x.warn(s)
	}
	return nil
}

// def adds the process's definition of kind from d to the archive's.
func (in *partIn) def(d *dec, kind byte) {
	g := in.x.defs
	id := d.u()
	var list *[]uint32
	var gid uint32
	switch kind {
	case defRegion:
		name, role := d.str(), d.i()
		list, gid = &in.regions, g.addRegion(name, int(role))
	case defComm:
		c := commDef{key: d.u(), self: d.bool(), members: d.u64s(), parent: d.u(), hasPar: d.bool(), inter: d.bool(), remote: d.u64s()}
		list, gid = &in.comms, g.addComm(c)
	case defSCL:
		file, line := d.str(), d.i()
		list, gid = &in.scls, g.addSCL(file, int(line))
	default:
		d.fail("unknown item %d", kind)
		return
	}
	if d.err != nil {
		return
	}
	if id != uint64(len(*list)) {
		d.fail("definition %d out of order", id)
		return
	}
	*list = append(*list, gid)
}

// remap renumbers the definitions the records name as the archive
// numbers them.
func (in *partIn) remap(evs []wev) error {
	look := func(list []uint32, id uint32, what string) (uint32, error) {
		if int(id) >= len(list) {
			return 0, fmt.Errorf("otf2 export: a record names %s %d, never defined", what, id)
		}
		return list[id], nil
	}
	var err error
	for i := range evs {
		v := &evs[i]
		a, b, d := uint32(v.a), uint32(v.b), uint32(v.d)
		switch v.kind {
		case wevEnter:
			if a, err = look(in.regions, a, "region"); err != nil {
				return err
			}
			if uint64(v.u1)&enterSCL != 0 {
				if b, err = look(in.scls, b, "source code location"); err != nil {
					return err
				}
			}
			if uint64(v.u1)&enterStatus != 0 {
				if d, err = look(in.comms, d, "communicator"); err != nil {
					return err
				}
			}
		case wevLeave:
			if a, err = look(in.regions, a, "region"); err != nil {
				return err
			}
		case wevSend, wevIsend, wevRecv, wevIrecv, wevCollEnd, wevNBCDone:
			if b, err = look(in.comms, b, "communicator"); err != nil {
				return err
			}
		case wevCommCreate:
			if b, err = look(in.comms, b, "communicator"); err != nil {
				return err
			}
			in.x.defs.commList[b].created = true
		}
		v.a, v.b, v.d = c32(a), c32(b), c32(d)
	}
	return nil
}

// dec decodes a part: varints with a sticky error.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *dec) u() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("truncated or bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail("bad boolean")
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// count reads the length of a list of entries of size bytes each,
// checked against the bytes left.
func (d *dec) count(size int) int {
	n := d.u()
	if n > uint64(len(d.b)/size) {
		d.fail("%d entries in %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *dec) str() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) u64s() []uint64 {
	n := d.count(1)
	var out []uint64
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.u())
	}
	return out
}
