// Package hugeheap backs the start of a Go program's heap with transparent
// huge pages where the kernel gives them only on request.
//
// A short-lived program that allocates a few tens of megabytes touches
// every page of its heap for the first time, and each first touch is a
// page fault, which on virtual machines costs microseconds of system time:
// dtpa spent up to a third of its CPU on small traces in the kernel
// (docs/performance.md, "Fresh memory and the command's start"). Linux maps a 2 MB page per fault in a range advised with
// MADV_HUGEPAGE when transparent huge pages are in "madvise" mode
// (Debian's default); the Go runtime advises none of its heap, and maps
// its heap in new ranges as it grows, which a range advised beforehand
// would not cover.
package hugeheap

// Knob is the environment variable that turns Prepare off when set to 0.
const Knob = "DTPA_HUGEPAGES"
