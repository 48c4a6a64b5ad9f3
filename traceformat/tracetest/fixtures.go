package tracetest

// TwoMessages is a run of three ranks with two messages into rank 1 and a
// barrier, small enough to follow by hand; the timeline's tests (analyzer
// and the HTML page) draw it.
//
//	rank 0: Send to 1 at 100.001 ms (10 µs), Barrier from 100.011 ms
//	rank 1: Recv from 0 at 0.001 ms until 100.021 ms (waits 100 ms for the
//	        send), Irecv from 2 [100.021, 100.022], Wait until 100.030 ms
//	        (the message was sent at 50.001 ms: no wait), Barrier from
//	        100.030 ms
//	rank 2: Send to 1 at 50.001 ms (5 µs), Barrier from 150 ms
//
// Everybody leaves the barrier at 150.010 ms.
func TwoMessages() *Run {
	run := NewRun(3)
	r0, r1, r2 := run.Rank(0), run.Rank(1), run.Rank(2)
	for _, r := range []*Rank{r0, r1, r2} {
		r.Init(1 * US)
	}
	r0.Compute(100*MS).Send(1, 7, 8, 10*US)
	r1.Recv(0, 7, 8, 100*MS+20*US)
	q := r1.Irecv(2, 3, 16, 1*US)
	r1.Wait(q, 8*US)
	r2.Compute(50*MS).Send(1, 3, 16, 5*US)
	r2.Compute(150*MS - r2.Now())
	for _, r := range []*Rank{r0, r1, r2} {
		r.Barrier(150*MS + 10*US - r.Now())
		r.Finalize(1 * US)
	}
	return run
}
