package traceformat

import (
	"bufio"
	"io"
	"slices"
)

// Fork is a second reader of r's file that goes on from where r stands:
// src must read the file from r.Offset(). It starts with r's header and
// a copy of r's definitions (the definition frames it meets add to its
// copy only), so that a caller can read the batches that follow r's
// current one, ahead of r, without moving r or disturbing the batch r
// last returned: the analyzer reads ahead for the completion of a
// wildcard receive. size is its read buffer, as ReaderOptions.BufferSize.
func (r *Reader) Fork(src io.Reader, size int) *Reader {
	if size <= 0 {
		size = 64 << 10
	}
	f := &Reader{name: r.name, r: bufio.NewReaderSize(src, size), src: src, off: r.off, hdr: r.hdr,
		footer: r.footer, frames: r.frames, err: r.err, skip: r.skip, skipDefs: r.skipDefs,
		nfuncs: r.nfuncs, nsites: r.nsites, ncomms: r.ncomms, members: r.members}
	f.defs = Definitions{Functions: slices.Clone(r.defs.Functions), CallSites: slices.Clone(r.defs.CallSites),
		Modules: slices.Clone(r.defs.Modules), Comms: slices.Clone(r.defs.Comms)}
	return f
}
