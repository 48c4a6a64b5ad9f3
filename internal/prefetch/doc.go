// Package prefetch asks the processor to bring cache lines into its
// caches ahead of their use, without waiting for them.
//
// The analyzer's replay switches between many ranks' traces every few
// calls, so that the trace bytes a rank decodes next have left the caches
// by the time it decodes them (traceformat.LazyBatch). Loading a byte of
// each such line early (the portable way) overlaps their misses with each
// other but not with the work that follows: a load that misses holds up
// the instructions behind it until its line arrives, however little they
// need it. A prefetch instruction does not: the line arrives while the
// decoding goes on. Lines is PREFETCHT0 instructions on amd64 and PRFM
// PLDL1KEEP on arm64; elsewhere it does nothing (correct, as a prefetch
// only ever changes timing).
//
// The addresses are uintptrs, not pointers: a line ahead of a position may
// lie past the end of its object, which the garbage collector must never
// see as a pointer, and a prefetch of any address is harmless (it never
// faults).
package prefetch
