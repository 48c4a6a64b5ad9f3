// Package otf2 exchanges traces with the Score-P/Scalasca/Vampir world
// through OTF2 archives, using libotf2 (cgo) so that the rest of dtpa stays
// pure Go.
//
// Reading (Import) converts an archive into dtpa's own trace files, one per
// MPI rank, which the analyzer then analyses unchanged:
//
//   - Ranks: the MPI paradigm's communication-locations group lists one
//     location per world rank, in rank order. Other CPU threads of a process
//     are not imported (a warning says so).
//   - Calls: the outermost region of the MPI paradigm named MPI_* entered
//     and left is one MPI call; regions of other paradigms (user code, the
//     program's root region) are computation. The MPI records between a
//     call's enter and leave give its attributes: MPI_SEND/MPI_ISEND the
//     destination, tag, size and request; MPI_RECV the source, tag and size;
//     MPI_IRECV_REQUEST the request of MPI_Irecv, whose source, tag,
//     communicator and size OTF2 gives only at completion (MPI_IRECV), so
//     the Irecv is written once its completion is read; MPI_ISEND_COMPLETE,
//     MPI_IRECV and MPI_REQUEST_CANCELLED complete requests in the wait or
//     test that contains them; MPI_COLLECTIVE_END the communicator, root and
//     bytes sent and received. A nonblocking collective (MPI_Ibarrier …)
//     has NON_BLOCKING_COLLECTIVE_REQUEST at the call and
//     NON_BLOCKING_COLLECTIVE_COMPLETE, with its communicator, root and
//     sizes, in the wait or test that completes it: the starting call gets
//     its request, and its arguments once the completion is read. Score-P 8 writes MPI_Init, MPI_Finalize and
//     communicator creation as collectives of type CREATE_HANDLE and
//     DESTROY_HANDLE: these stay system calls, as our tracer records them.
//     Receives' posted source and tag are not in OTF2: the matched ones
//     stand for them.
//   - Communicators: MPI communicators with their groups (COMM_GROUP members
//     are world ranks); peers and roots in OTF2 are, as in our format, ranks
//     in the communicator.
//   - Time: ticks at the archive's timer resolution, counted from its global
//     offset, in nanoseconds. libotf2's event reader applies each location's
//     ClockOffset definitions (linear interpolation), so all ranks are on
//     one clock; the files record that as same-clock synchronization.
//   - Attributes: the ones Export writes on a call's ENTER record, found
//     by name and type in the global definitions: "dtpa::pcontrol_level"
//     and "dtpa::pcontrol_arg" give MPI_Pcontrol its arguments (so
//     intervals come back), "dtpa::calls" a folded run of polls or
//     queries, "dtpa::inner_gaps" its summed time between its calls
//     (ticks; without it, as in archives written before trace format
//     2.1, the run ends one gap, not one per call), "dtpa::flag" the flag
//     a test or probe returned, and
//     "dtpa::status_source", "dtpa::status_tag" and "dtpa::status_comm" the
//     message a blocking MPI_Probe waited for, "dtpa::bytes" the size of a
//     send or receive addressed to MPI_PROC_NULL (which has no message
//     record), "dtpa::unfinished" a call in progress when the process
//     ended, which goes back into the rank's footer (with how its LEAVE
//     was placed: at the process's end, when the job was interrupted, or
//     at the ENTER), not among its calls. Score-P writes none of them.
//     (Export also writes each crash as a marker, group "dtpa", category
//     "Crash", which Import does not read.)
//   - Call sites: a SOURCE_CODE_LOCATION attribute on a call's ENTER record
//     makes one call site per function and location, whose return address
//     lies in a module standing for the source file
//     (traceformat.SourceModulePrefix), so that SRC points read file:line.
//     Without it, one call site per MPI function (OTF2 calling contexts
//     are not imported), so SRC points are per function.
//
// What the archive lacks or the format cannot carry (Score-P's buffer
// flushes, measurement switched off, filtered MPI functions, MPI_Pcontrol
// without arguments) becomes a warning, never a wrong figure.
//
// Writing (Export, `dtpa --export otf2 -o DIR app`) is the reverse: one
// location per rank, each MPI call an ENTER/LEAVE of a region of the MPI
// paradigm named as the function with Score-P's region roles, and the
// records Score-P writes for it (MPI_SEND/MPI_ISEND at the call's entry,
// MPI_RECV/MPI_IRECV and request completions at its exit,
// MPI_COLLECTIVE_BEGIN/END, NON_BLOCKING_COLLECTIVE_REQUEST/COMPLETE,
// COMM_CREATE), so that otf2-print, Vampir and Scalasca read the archive
// as one of Score-P's. Times are the traces' aligned global nanoseconds
// (resolution 1 GHz, global offset the first timestamp). What Score-P has
// no record for goes into the attributes above, and the call site's
// innermost frame with a file into SOURCE_CODE_LOCATION; Import reads the
// attributes back, so that trace → OTF2 → dtpa gives the trace's report
// (roundtrip_test.go; the residual differences are in
// docs/characteristics.md §10).
package otf2
