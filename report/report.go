// Package report is the data model of a dtpa analysis: what the analyzer
// computes and the renderers print. It holds numbers only (seconds and
// counts); formatting lives in the renderers (report/trpa for the .trpa
// text, encoding/json for --json via the struct tags below, whose names are
// the documented schema of docs/report-format.md).
package report

// Schema is the value of Report.Schema for this version of the JSON format.
const Schema = "dtpa-report/1"

// Report is the analysis of one run.
type Report struct {
	Schema     string `json:"schema"`
	Task       string `json:"task"`       // application name (<app> of <app>.<rank>.trc)
	Processors int    `json:"processors"` // MPI_COMM_WORLD size
	// Findings are what the report says first (findings.go); nil (absent
	// from JSON) when not derived.
	Findings *Findings `json:"findings,omitempty"`
	// Warnings are problems found in the traces (missing ranks, truncated
	// files, unmatched messages, clock-condition violations, unbalanced
	// Pcontrol …), one sentence each.
	Warnings []string `json:"warnings"`
	// ClockViolations summarizes the clock-condition violations found
	// after clock alignment, repaired or not; nil (absent from JSON) when
	// there were none.
	ClockViolations *ClockViolations `json:"clock_violations,omitempty"`
	// Unmatched counts the operations that found no partner; nil (absent
	// from JSON) when every operation was matched.
	Unmatched *Unmatched `json:"unmatched,omitempty"`
	// Unfinished lists the MPI calls that had not returned when their
	// process ended (a fatal signal: a job killed while its ranks
	// waited, a crash inside a call), by rank and thread; nil (absent
	// from JSON) when there were none. Their time is in no figure: a
	// rank's trace ends at its last call that returned.
	Unfinished []UnfinishedCall `json:"unfinished,omitempty"`
	// Elsewhere says, when some processes ended inside MPI calls
	// (Unfinished), where each other rank was that the calls may have
	// waited for: its trace ended with MPI_Finalize, it exited without
	// it, or it was in no MPI call; by rank. Ranks in Crashes, and ranks
	// whose end their traces do not say, are not in it. Nil (absent from
	// JSON) otherwise.
	Elsewhere []RankElsewhere `json:"elsewhere,omitempty"`
	// Crashes say where the processes that a fault signal (SIGSEGV,
	// SIGBUS, SIGFPE, SIGILL) or SIGABRT ended crashed, by rank; nil
	// (absent from JSON) when none did.
	Crashes []Crash `json:"crashes,omitempty"`
	RunFacts
	Intervals []Interval `json:"intervals"` // depth-first, the whole program first
}

// ClockViolations are the clock-condition violations (a receive ending
// before its send started, a collective left before the entries it
// depends on) that remained after clock alignment. Count of them were
// repaired with the controlled logical clock before any wait was
// computed; Unrepaired were of the kinds dtpa does not repair, and the
// figures near them are less exact (docs/report-format.md lists them).
// They are also described in Warnings.
type ClockViolations struct {
	Count     int64   `json:"count"`      // repaired ones; may be 0 when Unrepaired is not
	Worst     float64 `json:"worst"`      // the largest repair, seconds
	WorstRank int     `json:"worst_rank"` // the processor where it was
	// Repaired is true when the figures were computed from repaired times
	// (always, in this version).
	Repaired bool `json:"repaired"`
	// Amortized counts the repairs whose jump was also spread backward
	// over the events before the repaired call.
	Amortized int64 `json:"amortized"`
	// Unrepaired counts the violations not repaired; UnrepairedWorst is
	// the largest (seconds by which the order was violated) and
	// UnrepairedWorstRank the processor of the call that ended too early
	// there (0 when there were none).
	Unrepaired          int64   `json:"unrepaired"`
	UnrepairedWorst     float64 `json:"unrepaired_worst"`
	UnrepairedWorstRank int     `json:"unrepaired_worst_rank"`
	// The unrepaired ones by kind: a synchronous send (MPI_Ssend, or the
	// Wait/Test completing an MPI_Issend) that returned before its receive
	// was posted; a Wait/Test that completed a nonblocking collective
	// before a start it depends on; a multi-threaded process's blocking
	// collective left before an entry it depends on.
	UnrepairedSyncSends   int64 `json:"unrepaired_sync_sends"`
	UnrepairedNonblocking int64 `json:"unrepaired_nonblocking"`
	UnrepairedThreaded    int64 `json:"unrepaired_threaded"`
}

// UnfinishedCall is an MPI call that was in progress when its process
// ended.
type UnfinishedCall struct {
	Rank     int    `json:"rank"`
	Thread   int    `json:"thread"`
	Function string `json:"function"`
	// File and Line are where the program made the call ("" and 0 when
	// unknown).
	File string `json:"file"`
	Line int    `json:"line"`
	// Seconds is how long the call had run when the process ended;
	// absent when that end is unknown (a process killed outright, whose
	// trace dtrun completed from its buffers).
	Seconds *float64 `json:"seconds,omitempty"`
	// AtLeast says that Seconds runs only to when the job was interrupted
	// (Ctrl-C or SIGTERM reaching dtrun), which the process outlived:
	// killed before its tracer could note its end, it ran longer.
	AtLeast bool `json:"at_least,omitempty"`
}

// RankElsewhere is a rank in no MPI call when the processes ended, beside
// ranks that were (Report.Elsewhere).
type RankElsewhere struct {
	Rank int `json:"rank"`
	// State is how its trace ended: "finalized" (it called MPI_Finalize,
	// where its trace ends), "exited" (its process exited without
	// MPI_Finalize), "outside" (a signal ended its process outside every
	// MPI call: computing, or waiting for something else).
	State string `json:"state"`
	// LastCall is its last MPI call (MPI_Finalize itself for
	// "finalized") and the program's line it was made from; absent for
	// a rank of several threads, or one that made none.
	LastCall *CallPlace `json:"last_call,omitempty"`
	// ExitStatus is the status an "exited" rank's process passed to
	// exit (main's return value); absent when unknown.
	ExitStatus *int `json:"exit_status,omitempty"`
	// Exit is where an "exited" rank called exit: the program's
	// innermost function with a file on the way there and its line
	// (below it a library's exit: a Fortran STOP or runtime error);
	// absent when unknown, or when main returned (MainReturned).
	Exit         *CallPlace `json:"exit,omitempty"`
	MainReturned bool       `json:"main_returned,omitempty"`
	// Where is where an "outside" rank's thread was when the signal
	// ended its process: the program's innermost function with a file
	// on its stack and its line (computing there, or in a library it
	// called from there); absent when unknown.
	Where *CallPlace `json:"where,omitempty"`
}

// Crash is where a rank's process crashed.
type Crash struct {
	Rank int `json:"rank"`
	// Thread is the thread that took the signal (as UnfinishedCall's);
	// absent for a thread that never called MPI.
	Thread *int `json:"thread,omitempty"`
	// Signal names the signal ("SIGSEGV (Segmentation fault)"),
	// SignalNumber is its number.
	Signal       string `json:"signal"`
	SignalNumber int    `json:"signal_number"`
	// Cause is what the kernel says caused it ("address not mapped",
	// "integer divide by zero", "abort() called"); "" when it says
	// nothing more.
	Cause string `json:"cause,omitempty"`
	// Address is the faulting address of SIGSEGV and SIGBUS (the
	// faulting instruction's of SIGFPE and SIGILL); absent when the
	// signal carries none.
	Address *uint64 `json:"address,omitempty"`
	// Frames are the thread's stack, innermost first: where it crashed,
	// then its callers, as far as the binaries' unwind tables lead;
	// frames inside MPI, the tracer and the C start-up code are left out
	// but for the first; a Python program's frames (file and line) stand
	// for the interpreter's (docs/report-format.md).
	Frames []Frame `json:"frames"`
	// Exception is the type of an uncaught Python exception that ended
	// the rank ("ZeroDivisionError", "numpy.linalg.LinAlgError"; Signal
	// is "uncaught " and the type, SignalNumber 0, Cause its message):
	// Frames are its traceback, innermost first, from the line that
	// raised it. Or, beside SIGABRT, the type of the C++ exception no
	// handler caught ("std::out_of_range"), for which the C++ runtime
	// called std::terminate: Frames are the thread's stack at abort(),
	// through the throw.
	Exception string `json:"exception,omitempty"`
	// Abort says that the rank called MPI_Abort (Signal is "MPI_Abort",
	// SignalNumber 0): Frames are its call's stack, from the caller of
	// MPI_Abort.
	Abort bool `json:"abort,omitempty"`
	// At is the index in Frames of the innermost frame of the program's
	// own code (in its executable, with a file; of a Python program, its
	// innermost Python frame outside Python's library and installed
	// packages): below a crash inside a library (abort, memcpy, MPI, a C
	// extension), the line that called it; -1 when no frame is.
	At int `json:"at"`
	// After names what the crash came after when the trace was complete
	// by then: "MPI_Finalize", or "the end of its trace" (the process
	// exited without MPI_Finalize); a destructor or an exit handler
	// crashed. Absent for a crash during the run.
	After string `json:"after,omitempty"`
	// LastCall is the rank's last MPI call before a crash none of whose
	// frames is the program's own code with a file (At −1: an mpi4py
	// program crashing in a C extension, whose frames are the
	// interpreter's; a program without debug information): the function
	// and the program's line it was called from, the nearest place in
	// the program that the trace knows. Absent otherwise, and for a rank
	// of several threads.
	LastCall *CallPlace `json:"last_call,omitempty"`
}

// CallPlace is an MPI call's function and the program's line it was
// called from (File "" when unknown).
type CallPlace struct {
	Function string `json:"function"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
}

// Unmatched counts operations that could not be matched with a partner:
// the traces are incomplete (a missing or cut rank) or disagree. Their
// waits are not counted; they are also described in Warnings.
type Unmatched struct {
	Receives    int64 `json:"receives"`    // receives that found no matching send
	Sends       int64 `json:"sends"`       // messages sent but never received
	Collectives int64 `json:"collectives"` // calls of the present participants of collective instances that lack a participant (characteristics.md §8.1)
	Requests    int64 `json:"requests"`    // requests waited for, started or tested without having been created
	// Stalls is how often the replay stopped because every processor
	// waited for another; each time one operation was given up.
	Stalls int64 `json:"stalls"`
}

// Interval holds the characteristics of one interval (characteristics.md §2), summed over
// all its entries on all processors.
type Interval struct {
	// Path lists interval numbers from the whole program down: [] is the
	// level-0 interval, [1, 2] is interval 2 inside interval 1.
	Path       []int  `json:"path"`
	Level      int    `json:"level"`
	Number     int    `json:"number"`
	SourceFile string `json:"source_file"` // of the entering MPI_Pcontrol (level 0: the program)
	Line       int    `json:"line"`
	// ExeCount is the number of entries (the maximum over processors; the
	// per-processor counts are in Ranks).
	ExeCount int `json:"exe_count"`
	// Incomplete is true when the interval's figures lack events: the
	// trace of a processor that executed it (or may have executed it)
	// ended before the interval did (a cut trace, docs/characteristics.md
	// §8). IncompleteReason says which processors and why, in one
	// sentence. Both are absent from JSON when the figures are complete.
	Incomplete       bool        `json:"incomplete,omitempty"`
	IncompleteReason string      `json:"incomplete_reason,omitempty"`
	Main             Main        `json:"main"`
	Comparative      Comparative `json:"comparative"`
	Ranks            []Rank      `json:"ranks"` // processors that executed the interval, by rank
	SRC              []SRC       `json:"src"`
	// Waits are the interval's waits with the partners that caused them
	// (waits.go), the longest first; absent when there were none.
	Waits []Wait `json:"waits,omitempty"`
	// Causes are the late partners' computations that made the waits
	// (docs/characteristics.md §9), the longest delay first.
	Causes []Cause `json:"causes,omitempty"`
	Profile
}

// Main are the main characteristics (characteristics.md §5): sums over processors except
// where noted.
type Main struct {
	Efficiency              float64 `json:"efficiency"`     // ProductiveTime / TotalTime
	ExecutionTime           float64 `json:"execution_time"` // max over processors
	Processors              int     `json:"processors"`     // processors that executed the interval
	TotalTime               float64 `json:"total_time"`     // ExecutionTime × Processors
	ProductiveTime          float64 `json:"productive_time"`
	LostTime                float64 `json:"lost_time"`
	InsufficientParallelism float64 `json:"insufficient_parallelism"`
	Communications          float64 `json:"communications"`
	SendRecvTime            float64 `json:"sendrecv_time"`
	RealSync                float64 `json:"real_sync"`
	// LateReceiver is the part of RealSync lost by sends waiting for a
	// receive posted late (docs/report-format.md).
	LateReceiver     float64 `json:"late_receiver"`
	SendNumber       int64   `json:"send_number"`
	ReceiveNumber    int64   `json:"receive_number"`
	WaitNumber       int64   `json:"wait_number"`
	CollectiveTime   float64 `json:"collective_time"`
	CollectiveNumber int64   `json:"collective_number"` // instances, counted once
	SystemTime       float64 `json:"system_time"`
	SystemNumber     int64   `json:"system_number"`
	IdleTime         float64 `json:"idle_time"`
	LoadImbalance    float64 `json:"load_imbalance"`
	PotentialSync    float64 `json:"potential_sync"`
	TimeVariation    float64 `json:"time_variation"`
	Overlap          float64 `json:"overlap"`
}

// Stat is a comparative characteristic (characteristics.md §4): minimum and maximum with
// the processors where they occur, and the arithmetic mean.
type Stat struct {
	Min     float64 `json:"min"`
	MinProc int     `json:"min_proc"`
	Max     float64 `json:"max"`
	MaxProc int     `json:"max_proc"`
	Mean    float64 `json:"mean"`
}

// Comparative has one Stat per characteristic of characteristics.md §4.
type Comparative struct {
	ExecutionTime           Stat `json:"execution_time"`
	ProductiveTime          Stat `json:"productive_time"`
	LostTime                Stat `json:"lost_time"`
	IdleTime                Stat `json:"idle_time"`
	Communications          Stat `json:"communications"`
	InsufficientParallelism Stat `json:"insufficient_parallelism"`
	RealSync                Stat `json:"real_sync"`
	LoadImbalance           Stat `json:"load_imbalance"`
	PotentialSync           Stat `json:"potential_sync"`
	TimeVariation           Stat `json:"time_variation"`
	Overlap                 Stat `json:"overlap"`
}

// Rank are the execution characteristics of one processor (characteristics.md §3).
type Rank struct {
	Rank                    int     `json:"rank"`
	ExeCount                int     `json:"exe_count"`
	ExecutionTime           float64 `json:"execution_time"`
	ProductiveTime          float64 `json:"productive_time"`
	LostTime                float64 `json:"lost_time"`
	InsufficientParallelism float64 `json:"insufficient_parallelism"`
	IdleTime                float64 `json:"idle_time"`
	Communications          float64 `json:"communications"`
	SendRecvTime            float64 `json:"sendrecv_time"`
	CollectiveTime          float64 `json:"collective_time"`
	SystemTime              float64 `json:"system_time"`
	RealSync                float64 `json:"real_sync"`
	LateReceiver            float64 `json:"late_receiver"` // part of RealSync
	LoadImbalance           float64 `json:"load_imbalance"`
	PotentialSync           float64 `json:"potential_sync"`
	TimeVariation           float64 `json:"time_variation"`
	Overlap                 float64 `json:"overlap"`
	SendNumber              int64   `json:"send_number"`
	ReceiveNumber           int64   `json:"receive_number"`
	WaitNumber              int64   `json:"wait_number"`
	CollectiveNumber        int64   `json:"collective_number"`
	SystemNumber            int64   `json:"system_number"`
	// Incomplete is true when this processor's figures in the interval
	// lack events (its trace ended before the interval did, or the tracer
	// dropped events); IncompleteReason says why. Absent from JSON when
	// the figures are complete.
	Incomplete       bool   `json:"incomplete,omitempty"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	RankProfile
}

// SRC are the characteristics of one call site (characteristics.md §6) in an interval.
type SRC struct {
	ID            int       `json:"id"`
	Function      string    `json:"function"`
	Comm          float64   `json:"comm"` // total time in the MPI function
	RealSync      float64   `json:"real_sync"`
	LateReceiver  float64   `json:"late_receiver"` // part of RealSync
	PotentialSync float64   `json:"potential_sync"`
	TimeVariation float64   `json:"time_variation"`
	Overlap       float64   `json:"overlap"`
	Stack         []Frame   `json:"stack"` // innermost first
	Ranks         []SRCRank `json:"ranks"`
}

// Frame is one symbolized stack frame.
type Frame struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

// SRCRank are a call site's characteristics on one processor.
type SRCRank struct {
	Rank          int     `json:"rank"`
	ExeCount      int64   `json:"exe_count"`
	ExeTime       float64 `json:"exe_time"`
	RealSync      float64 `json:"real_sync"`
	LateReceiver  float64 `json:"late_receiver"` // part of RealSync
	PotentialSync float64 `json:"potential_sync"`
	TimeVariation float64 `json:"time_variation"`
	Overlap       float64 `json:"overlap"`
}
