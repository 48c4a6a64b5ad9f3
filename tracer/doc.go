// Package tracer holds the dtpa tracer for MPI programs in C, C++, Fortran
// and Python (mpi4py, which loads MPI at run time) and its integration
// tests. The tracer itself is built by tracer.mk into lib/:
//
//   - stub/: libdtpa_preload.so, a C-only LD_PRELOAD stub that exports every
//     MPI function as a trampoline and, inside MPI_Init, loads the tracer
//     library matching the MPI implementation;
//   - rt/: libdtpa_openmpi.so and libdtpa_mpich.so, the tracer proper
//     (C: recording path, buffers, clock, stacks, the writer), one per MPI
//     ABI;
//   - enc/: libdtpa_enc.so, the Go encoder the writer loads when it needs
//     one;
//   - gen/: the generator of the C and Fortran wrappers from each installed
//     mpi.h;
//   - params/: the tracer parameters (tracer.par, environment);
//   - records/: the decoder of the C recording path's in-memory records into
//     traceformat batches, and the layout of the spill file (pure Go, tested
//     without MPI);
//   - dump/: a command printing a trace file event by event, for debugging.
//
// cmd/dtrun launches a traced job; cmd/dtpar writes tracer.par.
package tracer
