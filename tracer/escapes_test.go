package tracer_test

import (
	"regexp"
	"strconv"
	"testing"
)

// TestRecordEscapes runs testdata/c/escapes.c under dtrun (deferred
// records, compacted by the ranks), both MPIs: byte counts of 8 and 12 GiB
// must come back exact (the records' RawWide), and rank 0's receive,
// which waits 3 s for its partner (over 2^32 ticks of a TSC above 1.4 GHz:
// RawLong; this VM's runs at 2 GHz), must last what the program measured
// around it, not that modulo 2^32 ticks.
func TestRecordEscapes(t *testing.T) {
	for _, m := range []struct {
		name, cc string
		launch   []string
	}{{"openmpi", ompi, []string{"--oversubscribe", "-np", "2"}}, {"mpich", "mpicc.mpich", []string{"-n", "2"}}} {
		t.Run(m.name, func(t *testing.T) {
			prog := build(t, "escapes", m.cc)
			dir := t.TempDir()
			res := dtrunOK(t, dir, nil, append(m.launch[:len(m.launch):len(m.launch)], prog, "3")...)
			mm := regexp.MustCompile(`recv_ns=(\d+)`).FindStringSubmatch(res.out)
			if mm == nil {
				t.Fatalf("no recv_ns in the output:\n%s", res.out)
			}
			own, _ := strconv.ParseInt(mm[1], 10, 64)
			tr := readTraces(t, dir, "escapes", 2)[0]
			one := func(fn string) (sb, rb uint64, dur int64) {
				evs := tr.calls(fn)
				if len(evs) != 1 {
					t.Fatalf("%s: %d events", fn, len(evs))
				}
				return evs[0].SendBytes, evs[0].RecvBytes, evs[0].Exit - evs[0].Entry
			}
			if sb, rb, _ := one("MPI_Bcast"); sb != 8<<30 || rb != 0 {
				t.Errorf("MPI_Bcast: %d bytes sent, %d received; want 8 GiB, 0", sb, rb)
			}
			if sb, rb, _ := one("MPI_Reduce"); sb != 0 || rb != 12<<30 {
				t.Errorf("MPI_Reduce: %d bytes sent, %d received; want 0, 12 GiB", sb, rb)
			}
			// The program's clock reads enclose the call's timestamps.
			if _, _, dur := one("MPI_Recv"); dur > own+1e6 || dur < own-50e6 || dur < 2.9e9 {
				t.Errorf("MPI_Recv: %d ns in the trace, %d by the program", dur, own)
			}
		})
	}
}
