package report

// Timeline is the run as the replay saw it, call by call, for drawing
// (dtpa --html): one lane per rank with its MPI calls on the global clock,
// the messages between them, and an overview of every rank aggregated to a
// fixed number of time bins. Times are nanoseconds since Origin.
//
// Detail is bounded (MaxCalls boxes over all ranks): past its share a lane
// keeps only the overview, and DetailEnd says where its detail stops. The
// overview always covers the whole run.
type Timeline struct {
	// Origin is the global clock of time 0: the earliest call's entry (or
	// interval entry, when a rank enters an interval before its first call).
	Origin int64 `json:"origin_ns"`
	End    int64 `json:"end"` // the latest exit
	// Funcs are the MPI functions the boxes name (Lane.Func indexes it).
	Funcs []TimelineFunc `json:"funcs"`
	// Intervals are the intervals the spans name (Spans.Interval indexes
	// it), by path ("1", "1/2", as Interval.Path joined by "/").
	Intervals []string `json:"intervals"`
	Lanes     []Lane   `json:"lanes"` // by rank; ranks without a trace are absent
	// Messages are the message arrows kept (both ends within detail).
	Messages Messages `json:"messages"`
	// MessageCount counts the messages matched in the whole run, kept or
	// not; CallCount the calls replayed (one folded run of polls is one).
	MessageCount int64 `json:"message_count"`
	CallCount    int64 `json:"call_count"`
	MaxCalls     int   `json:"max_calls"` // the detail budget
	Truncated    bool  `json:"truncated"` // some lane's detail stops before End
	// Bins is the number of overview bins, each (End / Bins) ns wide.
	Bins int `json:"bins"`
}

// Kinds of MPI call, as the timeline colours them.
const (
	KindP2P   = "p2p"   // point-to-point (sends, receives, probes, starts)
	KindColl  = "coll"  // collective
	KindWait  = "wait"  // Wait and Test family
	KindOther = "other" // everything else (communicator management, …)
)

// TimelineFunc is an MPI function and how it is coloured.
type TimelineFunc struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Lane is one rank's calls, column by column (the i-th call is
// Start[i], Dur[i], …), in the order the rank made them.
type Lane struct {
	Rank      int     `json:"rank"`
	Host      string  `json:"host"`       // host name the rank ran on (trace header)
	Calls     int64   `json:"calls"`      // calls replayed on the rank, kept or not
	DetailEnd int64   `json:"detail_end"` // detail is complete before this time
	Truncated bool    `json:"truncated"`  // calls after DetailEnd are left out
	Start     []int64 `json:"start"`
	Dur       []int64 `json:"dur"`
	// Lost is the part of the call, from its start, spent waiting for a
	// late partner (Real Sync of a receive or wait; for a collective the
	// wait for the latest entry it depends on).
	Lost  []int64 `json:"lost"`
	Func  []int   `json:"func"`  // index into Timeline.Funcs
	Site  []int   `json:"site"`  // SRC id of the call site (Report SRC.ID), 0 unknown
	Bytes []int64 `json:"bytes"` // sent plus received
	Peer  []int   `json:"peer"`  // partner's world rank (the sender of a receive), -1 none
	// Coll is the collective instance each call joined (the same number
	// on every member), -1 none: a blocking collective's, or the one the
	// start of a nonblocking collective (MPI_Ibarrier …) or MPI_Start of
	// a persistent one joined. The call that completes such a start's
	// request is tied to its instance in Ties.
	Coll []int `json:"coll"`
	// Ties are the calls' other ties to collective instances (absent when
	// there are none).
	Ties *CollTies `json:"ties,omitempty"`
	// Thread is the calling thread of each call (0: the thread that
	// called MPI_Init); absent when every call is thread 0's. A
	// multi-threaded rank's calls overlap in time: one sub-lane per thread.
	Thread []int `json:"thread,omitempty"`
	// Threads are the threads that made the rank's calls (kept in detail
	// or not), ascending; absent when only thread 0 did. A drawing gives
	// each one a sub-lane.
	Threads []int `json:"threads,omitempty"`
	// Unfinished are the calls in progress when the rank's process ended
	// (Report.Unfinished, in the same order); absent when there are none.
	Unfinished *LaneUnfinished `json:"unfinished,omitempty"`
	// Crash is when and on which thread the rank's process crashed
	// (Report.Crashes says where); absent when it did not.
	Crash *LaneCrash `json:"crash,omitempty"`
	// End is when a rank's process that neither crashed nor called
	// MPI_Finalize ended (Report.Elsewhere says how and where); absent
	// otherwise, and when its trace does not say when.
	End *LaneEnd `json:"end,omitempty"`
	// Spans are the interval executions (MPI_Pcontrol(100) exit to
	// MPI_Pcontrol(101) entry) that start within the detail.
	Spans Spans `json:"spans"`
	// Overview: per bin, ns spent in each kind of call and lost to late
	// partners.
	Overview Overview `json:"overview"`
}

// LaneCrash is the moment a rank's process crashed: At as the lane's
// times, on Thread (as Threads numbers them; -1 for a thread that never
// called MPI, which has no lane).
type LaneCrash struct {
	At     int64 `json:"at"`
	Thread int   `json:"thread"`
}

// LaneEnd is the moment a rank's process ended without MPI_Finalize and
// without a crash: At as the lane's times, on Thread (as Threads numbers
// them; -1 when unknown). Exited: it exited (exit(), a return from main,
// a Fortran STOP); else a fatal signal found it in no MPI call (the job
// was ended).
type LaneEnd struct {
	At     int64 `json:"at"`
	Thread int   `json:"thread"`
	Exited bool  `json:"exited"`
	// How says so as the report's other ranks do (ElsewhereLines,
	// without the last call): "rank 1: had exited without MPI_Finalize
	// (exit(3) from check at app.c:20)"; "" when unknown.
	How string `json:"how,omitempty"`
}

// LaneUnfinished are calls that never returned, column by column: call i
// of function Func[i] (an index into Timeline.Funcs) was entered at
// Start[i] by thread Thread[i] and was still in progress when the process
// ended, Dur[i] later; Dur[i] is -1 when nothing says when the process
// ended (a drawing runs it to the end of the run, open), and, where
// AtLeast[i], it runs to when the job was interrupted, which the process
// outlived (a drawing goes on past it, open). No figure holds their time
// (docs/characteristics.md §8.2): they are drawn, not counted.
type LaneUnfinished struct {
	Start   []int64 `json:"start"`
	Dur     []int64 `json:"dur"`
	Func    []int   `json:"func"`
	Thread  []int   `json:"thread"`
	AtLeast []bool  `json:"at_least,omitempty"` // absent when no call's is
}

// CollTies are ties of calls to collective instances besides Lane.Coll,
// column by column, in call order: call Call[i] (an index into the
// lane's columns) completed the request of instance Coll[i] (Done[i]:
// the MPI_Wait, MPI_Waitall … of a nonblocking or persistent collective;
// a call completing several requests has a tie for each) or joined it
// besides the instance in Lane.Coll (MPI_Startall of several persistent
// collectives). Instances are numbered as Lane.Coll numbers them.
type CollTies struct {
	Call []int  `json:"call"`
	Coll []int  `json:"coll"`
	Done []bool `json:"done"`
}

// Spans are interval executions, column by column, in the order they were left
// (an inner interval before the one it lies in).
type Spans struct {
	Start    []int64 `json:"start"`
	Dur      []int64 `json:"dur"`
	Interval []int   `json:"interval"` // index into Timeline.Intervals
	Level    []int   `json:"level"`    // nesting level, 1 for an outermost interval
}

// Overview is one rank's time per bin and kind.
type Overview struct {
	P2P   []int64 `json:"p2p"`
	Coll  []int64 `json:"coll"`
	Wait  []int64 `json:"wait"`
	Other []int64 `json:"other"`
	Lost  []int64 `json:"lost"`
}

// Messages are message arrows, column by column: from rank From[i] at its
// send's entry Send[i] to rank To[i] at the exit Recv[i] of the call that
// completed the receive.
type Messages struct {
	From []int   `json:"from"`
	To   []int   `json:"to"`
	Send []int64 `json:"send"`
	Recv []int64 `json:"recv"`
}
