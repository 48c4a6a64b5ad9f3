package report

// RunFacts are the facts of the run the traces record (docs/report-format.md,
// "Run facts"): what ran, where, when, on which clock, and how large the
// traces are. They are embedded in Report so that their JSON fields sit at
// the top level.
type RunFacts struct {
	Run *Run `json:"run,omitempty"`
	// Hosts groups the ranks by the host name their trace header records,
	// in order of each host's first rank.
	Hosts []Host `json:"hosts,omitempty"`
	// Programs groups the ranks by the program they ran, in order of each
	// program's first rank, when they ran several (an MPMD job: mpirun -np
	// 2 ./ocean : -np 2 ./atmos); absent when every rank ran one.
	Programs []Program `json:"programs,omitempty"`
}

// Run describes the run as recorded by rank 0's trace header (else the
// lowest rank present), with the clock alignment's error and the trace
// sizes over every rank.
type Run struct {
	// MPI is the MPI library: implementation name and
	// MPI_Get_library_version's string, as the tracer recorded them;
	// empty when the traces do not say.
	MPI string `json:"mpi"`
	// MPILibraryVersion is MPI_Get_library_version's whole string.
	MPILibraryVersion string   `json:"mpi_library_version"`
	Command           []string `json:"command"` // argv as recorded, argv[0] first
	Program           string   `json:"program"` // absolute path of the executable
	Start             string   `json:"start"`   // wall-clock start of tracing, RFC 3339 UTC
	Clock             string   `json:"clock"`   // TSC, MONOTONIC_RAW, MONOTONIC or SYNTHETIC
	TracerVersion     string   `json:"tracer_version"`
	// BatchJob is the batch system's job the run was ("slurm 4242.0");
	// absent outside one (docs/report-format.md).
	BatchJob string `json:"batch_job,omitempty"`
	// SyncError bounds the clock-offset error after alignment, seconds:
	// the largest over ranks of the half round trip of the clock-sync
	// samples used, added along each rank's chain of references to rank 0
	// (docs/report-format.md).
	SyncError float64 `json:"sync_error"`
	// TraceBytes, Events: over every rank's file; BytesPerEvent is their
	// ratio (0 without events).
	TraceBytes    int64       `json:"trace_bytes"`
	Events        int64       `json:"events"`
	BytesPerEvent float64     `json:"bytes_per_event"`
	Ranks         []TraceSize `json:"ranks"` // by rank, present ranks only
}

// TraceSize is one rank's trace file.
type TraceSize struct {
	Rank   int   `json:"rank"`
	Bytes  int64 `json:"bytes"`
	Events int64 `json:"events"` // events read (all threads)
}

// Host is one host and the world ranks that ran on it.
type Host struct {
	Host  string `json:"host"`
	Ranks []int  `json:"ranks"`
}

// Program is one program of an MPMD job and the world ranks that ran it.
type Program struct {
	Program string `json:"program"` // absolute path of the executable
	Ranks   []int  `json:"ranks"`
}

// Profile is an interval's profile view (mpiP-style aggregates), embedded
// in Interval so that its JSON fields sit beside the characteristics.
type Profile struct {
	// Functions are the MPI functions called in the interval, by
	// decreasing time.
	Functions []Function `json:"functions,omitempty"`
	// CommMatrix counts the point-to-point messages sent in the interval.
	CommMatrix *CommMatrix `json:"comm_matrix,omitempty"`
	// Traffic splits CommMatrix by the node map (Hosts).
	Traffic *Traffic `json:"traffic,omitempty"`
	// CommMatrices splits CommMatrix by communicator: world first, then
	// by name.
	CommMatrices []CommMatrixOn `json:"comm_matrices,omitempty"`
	// CommPairs holds CommMatrix's nonzero cells, by sender then
	// receiver, in runs too large for the dense matrix (which is then
	// absent, as is CommMatrices): a rank sends to few others, and a
	// cell per pair of ranks would take gigabytes.
	CommPairs []CommPair `json:"comm_pairs,omitempty"`
	// MessageSizes are the messages received in the interval by size
	// class, increasing; counted when received, in the receiver's
	// interval (CommMatrix counts them when sent).
	MessageSizes []SizeBin `json:"message_sizes,omitempty"`
}

// Function is one MPI function's figures in an interval, summed over the
// processors (mpiP's aggregate view).
type Function struct {
	Function string `json:"function"`
	// Calls counts every call, a folded run of polls counting as the calls
	// it stands for.
	Calls int64   `json:"calls"`
	Time  float64 `json:"time"` // seconds inside the function
	// Bytes sums the send and receive buffer sizes the calls recorded
	// (count × type size; for collectives this rank's contribution and
	// what it receives).
	Bytes int64 `json:"bytes"`
	// Min and Max are the shortest and longest call, seconds; a folded
	// run of polls counts as calls of its mean duration.
	Min   float64        `json:"min"`
	Max   float64        `json:"max"`
	Ranks []FunctionRank `json:"ranks"`
}

// FunctionRank is a function's figures on one processor.
type FunctionRank struct {
	Rank  int     `json:"rank"`
	Calls int64   `json:"calls"`
	Time  float64 `json:"time"`
	Bytes int64   `json:"bytes"`
}

// CommMatrix is indexed [sender][receiver] by world rank. A message is
// counted once, in the sender's interval, when its send is posted (MPI_Send,
// the send of MPI_Sendrecv, MPI_Isend, a start of a persistent send), with
// the send's recorded bytes.
type CommMatrix struct {
	Messages [][]int64 `json:"messages"`
	Bytes    [][]int64 `json:"bytes"`
}

// CommPair is the messages one rank sent to another in an interval,
// counted as CommMatrix counts them; both ranks are world ranks.
type CommPair struct {
	Sender   int   `json:"sender"`
	Receiver int   `json:"receiver"`
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

// Traffic splits the messages of an interval by whether sender and
// receiver ran on the same host.
type Traffic struct {
	IntraNode Volume `json:"intra_node"`
	InterNode Volume `json:"inter_node"`
}

// Volume is a number of messages and their bytes.
type Volume struct {
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
}

// CommMatrixOn is the messages sent on one communicator in an interval,
// counted as CommMatrix counts them, indexed [sender][receiver] by the
// position of the world rank in Ranks.
type CommMatrixOn struct {
	// Comm names the communicator as the program made it: "world",
	// "self", or the creating function without its MPI_/MPI_Comm_
	// prefix, lower-cased, and the parent's name: "dup of world",
	// "split #2 of world" (#k: the k-th communicator that function made
	// from that parent on the communicator's lowest rank, given when it
	// made more than one), "create of dup of world".
	Comm string `json:"comm"`
	// Size is the number of its processes (both groups of an
	// intercommunicator); Ranks their world ranks, increasing.
	Size     int       `json:"size"`
	Inter    bool      `json:"inter,omitempty"`
	Ranks    []int     `json:"ranks"`
	Messages [][]int64 `json:"messages"`
	Bytes    [][]int64 `json:"bytes"`
}

// SizeBin is one power-of-two class of the messages received in an
// interval: sizes from MinBytes to MaxBytes (0 to 0 for empty messages,
// else 2^(k−1) to 2^k − 1).
type SizeBin struct {
	MinBytes uint64 `json:"min_bytes"`
	MaxBytes uint64 `json:"max_bytes"`
	Messages int64  `json:"messages"`
	Bytes    int64  `json:"bytes"`
	// Latency is the mean time from the entry of a message's send to the
	// exit of the call that received it (the receive, the Wait or Test
	// that completed it, the matched probe), seconds on the corrected
	// global clock (docs/report-format.md).
	Latency float64 `json:"latency"`
	// Throughput is Bytes over the summed latency, bytes per second; 0
	// when the summed latency is 0.
	Throughput float64 `json:"throughput"`
}

// RankProfile is a processor's call mix and grain in an interval
// (embedded in Rank).
type RankProfile struct {
	// CallMix is the MPI functions the processor called, by decreasing
	// time; absent when it called none.
	CallMix []CallMix `json:"call_mix,omitempty"`
	// Gaps is the number of gaps between consecutive MPI calls that end
	// at a call of the interval; GapMean and GapMedian are their mean
	// (exact) and median (within 1/32 relative, docs/report-format.md),
	// seconds, measured on the processor's own clock.
	Gaps      int64   `json:"gaps"`
	GapMean   float64 `json:"gap_mean"`
	GapMedian float64 `json:"gap_median"`
}

// CallMix is one MPI function's share of a processor's calls and MPI time
// in an interval.
type CallMix struct {
	Function  string  `json:"function"`
	Calls     int64   `json:"calls"`
	Time      float64 `json:"time"`
	CallShare float64 `json:"call_share"` // of the processor's calls in the interval
	TimeShare float64 `json:"time_share"` // of its time in MPI calls (0 when that is 0)
}
