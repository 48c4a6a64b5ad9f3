// Package hugetext keeps a program's code and read-only data in 2 MB
// page-cache folios, which Linux maps with one page-table entry each.
//
// A short run of a Go command touches pages all over its code and tables
// (dtpa: 4.7 MB of code, 5.3 MB of read-only data), and every first touch
// of a 4 KB page of them is a page fault, then a TLB entry; on a virtual
// machine with shadowed page tables both cost microseconds. Linux (6.x, on
// file systems with large folios: ext4, XFS) maps a file's 2 MB folio with
// a single entry (FilePmdMapped in /proc/PID/smaps) where the mapping is
// 2 MB-aligned in the file and in memory, as a Go binary's segments are.
// Whether the page cache holds a binary in 2 MB folios depends on how its
// pages got there, not on the binary: of dtpa's 6 MB of such blocks, a
// copy written by cp had none, the build's output none or 4 MB, a file
// read back by cat 4 MB. A page fault in a range advised with
// MADV_HUGEPAGE reads 2 MB folios, so PageIn drops a file's cached pages
// and reads them back through such a range; make build runs it (command
// pagein) on the commands it built. The program cannot do it for itself:
// the exec's first page fault reads read_ahead_kb of the file (8 MB here)
// before any of its code runs. docs/performance.md, "The binary's pages",
// has the figures.
package hugetext
