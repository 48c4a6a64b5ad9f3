package e2e

import (
	"math"
	"testing"

	"github.com/dtpa/dtpa/report"
)

// edgesP2P are the expected figures of testdata/apps/edges_p2p.c at 4
// ranks, derived by hand (rules in docs/characteristics.md: "Probes",
// "Nonblocking collectives", "Late receiver", "Overlap"). Time 0 is the
// interval's entry, which the ranks reach together (they leave an
// MPI_Barrier just before). Small messages are sent eagerly: such an
// MPI_Send returns at once. Identities as in groundTruth.
var edgesP2P = []expect{
	{
		// 1. MPI_Probe waiting for a late sender. Rank 0 sleeps 0.2 and
		// sends to 1, which sat in MPI_Probe(ANY_SOURCE) from 0: Real
		// Sync(1) = 0.2, at the probe; MPI_Get_count (a system call) and
		// MPI_Recv after it wait for nobody, and the message is received
		// once (no warning). Without the rule: Real Sync 0. Rank 3 sends to
		// 2 at 0; rank 2 sleeps 0.2, finds it with MPI_Iprobe and receives
		// it: no Real Sync. Execution: 0.2, 0.2, 0.2, 0; Communications:
		// 0, 0.2, 0, 0; Productive: 0.2, 0, 0.2, 0; Idle: 0, 0, 0, 0.2;
		// Load Imbalance: 0, 0.2, 0, 0.2; Lost: 0, 0.2, 0, 0.2.
		path: []int{1},
		fn:   "probe_late_sender",
		times: map[string][]float64{
			"execution_time":  {0.2, 0.2, 0.2, 0},
			"communications":  {0, 0.2, 0, 0},
			"sendrecv_time":   {0, 0.2, 0, 0},
			"real_sync":       {0, 0.2, 0, 0},
			"productive_time": {0.2, 0, 0.2, 0},
			"idle_time":       {0, 0, 0, 0.2},
			"load_imbalance":  {0, 0.2, 0, 0.2},
			"lost_time":       {0, 0.2, 0, 0.2},
		},
		counts: map[string][]int64{
			"send_number":    {1, 0, 0, 1},
			"receive_number": {0, 1, 1, 0},
			"system_number":  {0, 1, 0, 0},
		},
		main: map[string]float64{"real_sync": 0.2},
	},
	{
		// 2. Nonblocking collective. Rank r sleeps 0.1·r and starts
		// MPI_Iallreduce (rank 3 last, at 0.3); ranks 0–2 sleep 0.02 more
		// and wait from 0.02, 0.12, 0.22; rank 3 waits at 0.3. Every wait
		// returns at 0.3 (the result needs rank 3's part). The waits are
		// Collective time (0.28, 0.18, 0.08, 0) and carry the loss:
		// Potential Sync = latest start 0.3 − wait entry = the same; the
		// starts get none and Time Variation is 0 (not 0.3 − 0.1·r twice
		// at the starts, with the waits as SendRecv time). Execution 0.3;
		// Productive 0.02, 0.12, 0.22, 0.3; Load Imbalance = Lost = 0.28,
		// 0.18, 0.08, 0. One call, one wait per rank, one instance.
		path: []int{2},
		fn:   "iallreduce",
		times: map[string][]float64{
			"execution_time":  {0.3, 0.3, 0.3, 0.3},
			"communications":  {0.28, 0.18, 0.08, 0},
			"collective_time": {0.28, 0.18, 0.08, 0},
			"potential_sync":  {0.28, 0.18, 0.08, 0},
			"productive_time": {0.02, 0.12, 0.22, 0.3},
			"load_imbalance":  {0.28, 0.18, 0.08, 0},
			"lost_time":       {0.28, 0.18, 0.08, 0},
		},
		counts: map[string][]int64{
			"wait_number":       {1, 1, 1, 1},
			"collective_number": {1, 1, 1, 1},
		},
		main: map[string]float64{"potential_sync": 0.54, "collective_number": 1},
	},
	{
		// 3. Late receivers. Rank 0's MPI_Ssend to 1 (entered at 0) returns
		// when rank 1 posts its MPI_Recv at 0.2: Real Sync(0) = Late
		// receiver(0) = 0.2. Rank 2's MPI_Send of 4 MiB to 3 (rendezvous,
		// at 0) returns once rank 3 posts its MPI_Irecv at 0.1 (plus the
		// copy, ~1 ms): 0.1; rank 2 then receives rank 3's small message,
		// sent at 0 and eagerly (that send returned at once: no Late
		// receiver for rank 3 although rank 2 posted at 0.1). Execution:
		// 0.2, 0.2, 0.1, 0.1; Communications = SendRecv: 0.2, 0, 0.1, 0;
		// Productive: 0, 0.2, 0, 0.1; Idle: 0, 0, 0.1, 0.1; Load
		// Imbalance: 0.2, 0, 0.2, 0.1; Lost: 0.2, 0, 0.2, 0.1.
		path: []int{3},
		fn:   "late_receiver",
		times: map[string][]float64{
			"execution_time":  {0.2, 0.2, 0.1, 0.1},
			"communications":  {0.2, 0, 0.1, 0},
			"sendrecv_time":   {0.2, 0, 0.1, 0},
			"real_sync":       {0.2, 0, 0.1, 0},
			"late_receiver":   {0.2, 0, 0.1, 0},
			"productive_time": {0, 0.2, 0, 0.1},
			"idle_time":       {0, 0, 0.1, 0.1},
			"load_imbalance":  {0.2, 0, 0.2, 0.1},
			"lost_time":       {0.2, 0, 0.2, 0.1},
		},
		counts: map[string][]int64{
			"send_number":    {1, 0, 1, 1},
			"receive_number": {0, 1, 1, 1},
			"wait_number":    {0, 0, 0, 1},
		},
		main: map[string]float64{"real_sync": 0.3},
	},
	{
		// 4. Overlap of requests in flight together: every rank starts two
		// MPI_Irecv and two MPI_Isend at 0 (its neighbours' sends start at
		// 0 too) and completes them with MPI_Waitall at 0.2. Each window
		// is 0 … 0.2: the DVM method's sum would be 0.8 per rank in a 0.2 interval;
		// the time covered is 0.2. Execution = Productive = 0.2.
		path: []int{4},
		fn:   "overlap_together",
		times: map[string][]float64{
			"execution_time":  {0.2, 0.2, 0.2, 0.2},
			"productive_time": {0.2, 0.2, 0.2, 0.2},
			"overlap":         {0.2, 0.2, 0.2, 0.2},
		},
		counts: map[string][]int64{
			"send_number":    {2, 2, 2, 2},
			"receive_number": {2, 2, 2, 2},
			"wait_number":    {1, 1, 1, 1},
		},
		main: map[string]float64{"overlap": 0.8, "efficiency": 1},
	},
	{
		// 5. Late receiver of a synchronous nonblocking send. Rank 0
		// starts MPI_Issend to 1 at 0 and waits from 0.05; its wait
		// returns when rank 1 posts MPI_Recv at 0.2: Real Sync(0) = Late
		// receiver(0) = 0.2 − 0.05 = 0.15, at the MPI_Wait; its send's
		// window 0 … 0.05 is Overlap 0.05. Rank 2's MPI_Issend to 3 is
		// matched at once by the MPI_Irecv rank 3 posted and waits for at
		// 0: nothing (both sleep 0.1 after). Execution: 0.2, 0.2, 0.1, 0.1;
		// Communications = SendRecv: 0.15, 0, 0, 0; Productive: 0.05, 0.2,
		// 0.1, 0.1; Idle: 0, 0, 0.1, 0.1; Load Imbalance: 0.15, 0, 0.1,
		// 0.1; Lost: 0.15, 0, 0.1, 0.1.
		path: []int{5},
		fn:   "late_receiver_issend",
		times: map[string][]float64{
			"execution_time":  {0.2, 0.2, 0.1, 0.1},
			"communications":  {0.15, 0, 0, 0},
			"sendrecv_time":   {0.15, 0, 0, 0},
			"real_sync":       {0.15, 0, 0, 0},
			"late_receiver":   {0.15, 0, 0, 0},
			"productive_time": {0.05, 0.2, 0.1, 0.1},
			"idle_time":       {0, 0, 0.1, 0.1},
			"load_imbalance":  {0.15, 0, 0.1, 0.1},
			"lost_time":       {0.15, 0, 0.1, 0.1},
			"overlap":         {0.05, 0, 0, 0},
		},
		counts: map[string][]int64{
			"send_number":    {1, 0, 1, 0},
			"receive_number": {0, 1, 0, 1},
			"wait_number":    {1, 0, 1, 1},
		},
		main: map[string]float64{"real_sync": 0.15},
	},
}

// edgesLateReceiver is the Late receiver part of Real Sync of each
// interval (by path) and of the whole program (""), by rank: only the
// sends of intervals 3 and 5 waited for their receivers. checkInterval
// checks the intervals' figures too; this also covers the whole program.
var edgesLateReceiver = map[string][]float64{
	"1": {0, 0, 0, 0}, "2": {0, 0, 0, 0}, "3": {0.2, 0, 0.1, 0}, "4": {0, 0, 0, 0}, "5": {0.15, 0, 0, 0},
	"": {0.35, 0, 0.1, 0},
}

// TestEdgesP2P traces edges_p2p.c at 4 ranks with Open MPI and MPICH, with
// and without injected clock skew, and checks its intervals against
// edgesP2P, as TestGroundTruth does for groundtruth.c (same tolerances,
// noise handling and retries).
func TestEdgesP2P(t *testing.T) {
	quietRuns(t, "edges_p2p", nil, nil, edgesP2P,
		func(t *testing.T, out string, r *report.Report, stderr string, skewed bool) float64 {
			shift := checkBugs(t, out, r, stderr, skewed)
			checkEdgeBounds(t, r)
			return shift
		}, checkEdgesP2P)
}

// checkEdgeBounds checks, whatever the noise, what the rules guarantee:
// a processor's Overlap never exceeds its execution time, Late receiver
// is part of Real Sync, and Potential Sync stays within Collective time
// (every collective of edges_p2p synchronizes or is nonblocking).
func checkEdgeBounds(t *testing.T, r *report.Report) {
	t.Helper()
	const eps = 1e-6
	for _, iv := range r.Intervals {
		for _, rk := range iv.Ranks {
			if rk.Overlap > rk.ExecutionTime+eps {
				t.Errorf("interval %v rank %d: Overlap %.6f > Execution %.6f", iv.Path, rk.Rank, rk.Overlap, rk.ExecutionTime)
			}
			if rk.LateReceiver > rk.RealSync+eps || rk.LateReceiver < 0 {
				t.Errorf("interval %v rank %d: Late receiver %.6f outside Real Sync %.6f", iv.Path, rk.Rank, rk.LateReceiver, rk.RealSync)
			}
		}
		if iv.Main.PotentialSync > iv.Main.CollectiveTime+eps {
			t.Errorf("interval %v: Potential Sync %.6f > Collective time %.6f", iv.Path, iv.Main.PotentialSync, iv.Main.CollectiveTime)
		}
		for _, p := range iv.SRC {
			nb := p.Function == "MPI_Iallreduce" || p.Function == "MPI_Wait"
			if p.PotentialSync > p.Comm+eps || (nb && p.TimeVariation > p.Comm+eps) {
				t.Errorf("interval %v SRC %d %s: Potential Sync %.6f / Time Variation %.6f beyond its time %.6f",
					iv.Path, p.ID, p.Function, p.PotentialSync, p.TimeVariation, p.Comm)
			}
		}
	}
}

// checkEdgesP2P compares r with edgesP2P and edgesLateReceiver, with
// tolerances widened by each interval's noise (st).
func checkEdgesP2P(t *testing.T, r *report.Report, st selfTiming, runNoise float64) {
	t.Helper()
	byPath := map[string]*report.Interval{}
	for i := range r.Intervals {
		byPath[pathKey(r.Intervals[i].Path)] = &r.Intervals[i]
	}
	if len(byPath) != len(edgesP2P)+1 {
		t.Errorf("%d intervals, want %d and the whole program", len(byPath)-1, len(edgesP2P))
	}
	checked := 0
	for _, e := range edgesP2P {
		iv := byPath[pathKey(e.path)]
		if iv == nil {
			t.Errorf("interval %v missing", e.path)
			continue
		}
		extra, ok := widen(st.noise(e))
		if !ok {
			t.Logf("interval %v: times not checked, the run strayed %.3f s from the construction there", e.path, st.noise(e))
		}
		checkInterval(t, iv, e, true, ok, extra)
		if ok {
			checked++
			checkLateReceiver(t, iv, edgesLateReceiver[pathKey(e.path)], tol+extra)
		}
	}
	if w := byPath[""]; w == nil {
		t.Error("whole program missing")
	} else if extra, ok := widen(runNoise); ok {
		checkLateReceiver(t, w, edgesLateReceiver[""], tol+extra)
	}
	if checked == 0 {
		t.Skipf("machine too busy: every interval strayed more than %.3f s from the construction; hand-derived figures not checked", maxNoise)
	}
}

func checkLateReceiver(t *testing.T, iv *report.Interval, want []float64, tl float64) {
	t.Helper()
	got := make([]float64, len(iv.Ranks))
	for i, rk := range iv.Ranks {
		got[i] = rk.LateReceiver
		if i < len(want) && math.Abs(rk.LateReceiver-want[i]) > tl {
			t.Errorf("interval %v rank %d: late_receiver = %.4f, want %.3f ± %.3f", iv.Path, rk.Rank, rk.LateReceiver, want[i], tl)
		}
	}
	t.Logf("interval %v late_receiver (measured / expected): %.4f / %v", iv.Path, got, want)
}
