package analyzer

import (
	"container/list"

	"github.com/dtpa/dtpa/traceformat"
	"io"
	"os"
	"sync"
)

// filePool bounds the trace files the replay holds open. Every rank's
// replay reads its own file from start to end, and the replays interleave
// (a replay runs until it waits for another rank), so that a run of tens
// of thousands of ranks would otherwise hold a descriptor per rank for the
// whole analysis, past the process's limit. A pooled file (lazyFile)
// remembers its path and offset; it holds a descriptor only while among
// the max most recently read, and is reopened and positioned again when
// read after being closed. Reads come in large pieces (the trace reader's
// buffer, 64 KiB), so the reopening costs little next to decoding what
// it reads, and runs with no more ranks than max never reopen.
type filePool struct {
	mu  sync.Mutex
	max int
	buf int // the read buffer of each trace reader (readBuffer)
	// members is shared by the trace readers, and worlds by the replays:
	// the communicators' member lists as the readers decode them and as
	// the replays convert them, one copy per communicator instead of one
	// per rank (which grew with the square of the ranks).
	members  traceformat.MemberTable
	wmu      sync.Mutex
	worlds   map[*uint32]worldRanks
	lru      list.List // open files, most recently read first
	reopens  int64     // opens after the first (tests, stats)
	peakOpen int       // the most descriptors held at once (tests)
}

// defaultOpenFiles is the pool's default bound: far below the usual soft
// limit of 1024 descriptors once the standard ones and dtpa's own files
// are counted, and far above the ranks of most runs.
const defaultOpenFiles = 512

// newFilePool makes the pool of a run of ranks ranks holding at most n
// files open.
func newFilePool(n, ranks int) *filePool {
	return &filePool{max: max(1, n), buf: readBuffer(ranks)}
}

// worldRanks is a member list as world ranks, traceformat.OtherWorld as
// -1, and whether it holds any such member.
type worldRanks struct {
	ranks []int32
	other bool
}

// convMembers is members as world ranks (another world's as -1) and
// whether some member is another world's, shared with the replays of the
// other ranks when the readers shared the list (traceformat.MemberTable).
func (p *filePool) convMembers(members []uint32) ([]int32, bool) {
	conv := func() worldRanks {
		w := worldRanks{ranks: make([]int32, len(members))}
		for i, m := range members {
			w.ranks[i] = int32(m)
			w.other = w.other || m == traceformat.OtherWorld
		}
		return w
	}
	if len(members) < 64 {
		w := conv()
		return w.ranks, w.other
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if w, ok := p.worlds[&members[0]]; ok && len(w.ranks) == len(members) {
		return w.ranks, w.other
	}
	if p.worlds == nil {
		p.worlds = map[*uint32]worldRanks{}
	}
	w := conv()
	p.worlds[&members[0]] = w
	return w.ranks, w.other
}

// readBuffer is the size of the read buffer of each replay's trace reader
// in a run of ranks ranks: 64 KiB while the ranks are few, less past 256
// ranks so that the buffers together stay within 16 MiB, down to 4 KiB.
// (Each replay holds its reader, and its buffer, from start to end.)
func readBuffer(ranks int) int {
	const total, most, least = 16 << 20, 64 << 10, 4 << 10
	return max(least, min(most, total/max(1, ranks)))
}

// lazyFile is a trace file read through a filePool: an io.ReadCloser.
type lazyFile struct {
	p     *filePool
	path  string
	f     *os.File      // nil while closed by the pool
	el    *list.Element // in p.lru while open
	off   int64         // offset of the next read
	first bool          // not opened yet: an open at an offset is not a reopen
	err   error         // sticky: the file cannot be reopened
}

// open opens path through the pool (the first open, which reports a
// missing or unreadable file at once).
func (p *filePool) open(path string) (*lazyFile, error) {
	return p.openAt(path, 0)
}

// openAt opens path through the pool positioned at byte offset off (a
// second reader of a file a replay is reading: replayer.farStatus).
func (p *filePool) openAt(path string, off int64) (*lazyFile, error) {
	lf := &lazyFile{p: p, path: path, off: off, first: true}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.acquireLocked(lf); err != nil {
		return nil, err
	}
	return lf, nil
}

// acquireLocked makes lf hold a descriptor at its offset, as the most
// recently used, closing the least recently used past the bound. p.mu is
// held.
func (p *filePool) acquireLocked(lf *lazyFile) error {
	if lf.f != nil {
		p.lru.MoveToFront(lf.el)
		return nil
	}
	if lf.err != nil {
		return lf.err
	}
	for p.lru.Len() >= p.max {
		old := p.lru.Remove(p.lru.Back()).(*lazyFile)
		old.f.Close()
		old.f, old.el = nil, nil
	}
	f, err := os.Open(lf.path)
	if err != nil {
		lf.err = err
		return err
	}
	if lf.off != 0 {
		if !lf.first {
			p.reopens++
		}
		if _, err := f.Seek(lf.off, io.SeekStart); err != nil {
			f.Close()
			lf.err = err
			return err
		}
	}
	lf.f, lf.first = f, false
	lf.el = p.lru.PushFront(lf)
	p.peakOpen = max(p.peakOpen, p.lru.Len())
	return nil
}

// Read reads from the file at its offset, reopening it if the pool
// closed it. The pool's lock is held across the read, so that the
// descriptor is not closed under it by another replay's open.
func (lf *lazyFile) Read(b []byte) (int, error) {
	p := lf.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.acquireLocked(lf); err != nil {
		return 0, err
	}
	n, err := lf.f.Read(b)
	lf.off += int64(n)
	return n, err
}

// Close releases the file's descriptor, if it holds one.
func (lf *lazyFile) Close() error {
	p := lf.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if lf.f == nil {
		return nil
	}
	p.lru.Remove(lf.el)
	err := lf.f.Close()
	lf.f, lf.el = nil, nil
	lf.err = os.ErrClosed
	return err
}
