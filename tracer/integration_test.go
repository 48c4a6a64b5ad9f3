package tracer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dtpa/dtpa/traceformat"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

const ompi = "mpicc.openmpi"

var oversub = []string{"--oversubscribe", "-np", "4"}

// traced builds testdata/c/<name>.c, runs it under dtrun at 4 ranks in a
// fresh directory and reads the traces back.
func traced(t *testing.T, name string, env []string, args ...string) ([]*trace, result) {
	t.Helper()
	return tracedWith(t, ompi, oversub, name, env, args...)
}

// tracedWith is traced with another MPI compiler and launcher arguments.
func tracedWith(t *testing.T, cc string, launch []string, name string, env []string, args ...string) ([]*trace, result) {
	t.Helper()
	prog := build(t, name, cc)
	dir := t.TempDir()
	res := dtrun(t, dir, env, append(append(launch[:len(launch):len(launch)], prog), args...)...)
	if res.code != 0 {
		t.Fatalf("dtrun %s: exit %d\n%s", name, res.code, res.out)
	}
	return readTraces(t, dir, name, 4), res
}

func checkPingPong(t *testing.T, trs []*trace) {
	t.Helper()
	for r := 0; r < 2; r++ {
		tr := trs[r]
		p2p := tr.calls("MPI_Send", "MPI_Recv")
		if len(p2p) != 20 {
			t.Fatalf("rank %d: %d sends and receives, want 20", r, len(p2p))
		}
		for i, e := range p2p {
			send := (r == 0) == (i%2 == 0)
			name := tr.name(e)
			tag := int32(100 + i/2)
			if i%2 == 1 {
				tag = int32(200 + i/2)
			}
			if send {
				if name != "MPI_Send" || e.Attr&traceformat.AttrSend == 0 || e.SendPeer != int32(1-r) || e.SendTag != tag || e.SendBytes != 16 {
					t.Errorf("rank %d call %d: %s to %d tag %d bytes %d, want MPI_Send to %d tag %d bytes 16", r, i, name, e.SendPeer, e.SendTag, e.SendBytes, 1-r, tag)
				}
			} else {
				want := traceformat.Status{Source: int32(1 - r), Tag: tag}
				if name != "MPI_Recv" || e.RecvPeer != int32(1-r) || e.RecvTag != tag || e.RecvBytes != 16 || len(e.Status) != 1 || e.Status[0] != want {
					t.Errorf("rank %d call %d: %s from %d tag %d status %v, want MPI_Recv status %v", r, i, name, e.RecvPeer, e.RecvTag, e.Status, want)
				}
			}
			if e.Attr&traceformat.AttrComm == 0 || e.Comm != traceformat.CommWorld || tr.commID(e.Comm) != 0 {
				t.Errorf("rank %d call %d: communicator %d, want MPI_COMM_WORLD", r, i, e.Comm)
			}
			pcs := tr.defs.CallSites[e.Site]
			if len(pcs) == 0 || !tr.inExecutable(pcs[0]) {
				t.Errorf("rank %d call %d: call site %x not in the program", r, i, pcs)
			}
		}
		// The two sends are distinct call sites, each loop iteration the same.
		if p2p[0].Site == p2p[1].Site || p2p[0].Site != p2p[2].Site {
			t.Errorf("rank %d: call sites %d %d %d", r, p2p[0].Site, p2p[1].Site, p2p[2].Site)
		}
	}
	for r, tr := range trs {
		if b := tr.calls("MPI_Barrier"); len(b) != 1 || b[0].Comm != 0 {
			t.Errorf("rank %d: barriers %v", r, b)
		}
		if r >= 2 && len(tr.calls("MPI_Send", "MPI_Recv")) != 0 {
			t.Errorf("rank %d: unexpected point-to-point calls", r)
		}
	}
}

func TestPingPong(t *testing.T) {
	trs, _ := traced(t, "pingpong", nil)
	checkComplete(t, trs)
	checkPingPong(t, trs)
	if trs[0].hdr.Params.UserStackSize != 4 {
		t.Errorf("UserStackSize %d, want the default 4", trs[0].hdr.Params.UserStackSize)
	}
	for _, e := range trs[0].calls("MPI_Send") {
		if n := len(trs[0].defs.CallSites[e.Site]); n < 2 {
			t.Errorf("call stack of %d frames, want main and its caller", n)
		}
	}
}

func TestPingPongMPICH(t *testing.T) {
	prog := build(t, "pingpong", "mpicc.mpich")
	dir := t.TempDir()
	dtrunOK(t, dir, nil, "-n", "4", prog)
	trs := readTraces(t, dir, "pingpong", 4)
	checkComplete(t, trs)
	checkPingPong(t, trs)
	if trs[0].hdr.MpiImplementation != "MPICH" {
		t.Errorf("implementation %q", trs[0].hdr.MpiImplementation)
	}
}

func TestUserStackSizeFromParFile(t *testing.T) {
	prog := build(t, "pingpong", ompi)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tracer.par"), []byte("UserStackSize = 1\n"), 0o644)
	res := dtrun(t, dir, nil, append(oversub, prog)...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.out)
	}
	tr := readTrace(t, filepath.Join(dir, "pingpong.0.trc"))
	if tr.hdr.Params.UserStackSize != 1 {
		t.Errorf("UserStackSize %d, want 1", tr.hdr.Params.UserStackSize)
	}
	for _, e := range tr.events {
		if n := len(tr.defs.CallSites[e.Site]); n > 1 {
			t.Fatalf("%s: %d frames with UserStackSize 1", tr.name(e), n)
		}
	}
}

// TestHaloRequests follows every request from creation to completion.
func TestHaloRequests(t *testing.T) {
	trs, _ := traced(t, "halo", nil)
	checkComplete(t, trs)
	checkHalo(t, trs)
}

// MPICH breadth is another issue's; these two check that its ABI's request
// and communicator handles go through the same paths.
func TestHaloRequestsMPICH(t *testing.T) {
	trs, _ := tracedWith(t, "mpicc.mpich", []string{"-n", "4"}, "halo", nil)
	checkComplete(t, trs)
	checkHalo(t, trs)
}

func TestCollectivesSplitCommunicatorsMPICH(t *testing.T) {
	trs, _ := tracedWith(t, "mpicc.mpich", []string{"-n", "4"}, "collectives", nil)
	checkComplete(t, trs)
	checkCollectives(t, trs)
}

func checkHalo(t *testing.T, trs []*trace) {
	t.Helper()
	for r, tr := range trs {
		left, right := int32((r+3)%4), int32((r+1)%4)
		type req struct {
			recv       bool
			peer, tag  int32
			persistent bool
			count      int
		}
		live := map[uint64]*req{}
		created, completed := 0, 0
		for _, e := range tr.events {
			name := tr.name(e)
			switch name {
			case "MPI_Irecv", "MPI_Isend", "MPI_Recv_init", "MPI_Send_init":
				if len(e.Reqs) != 1 {
					t.Fatalf("rank %d: %s creates %d requests", r, name, len(e.Reqs))
				}
				q := live[e.Reqs[0]]
				if q == nil {
					q = &req{}
					live[e.Reqs[0]] = q
				}
				q.count++
				q.recv = strings.Contains(name, "ecv")
				q.persistent = strings.HasSuffix(name, "_init")
				q.peer, q.tag = e.SendPeer, e.SendTag
				if q.recv {
					q.peer, q.tag = e.RecvPeer, e.RecvTag
					if want := map[int32]int32{1: left, 2: right, 7: left}[e.RecvTag]; e.RecvPeer != want {
						t.Errorf("rank %d: %s from %d tag %d, want from %d", r, name, e.RecvPeer, e.RecvTag, want)
					}
				}
				created++
			case "MPI_Startall":
				if len(e.Reqs) != 2 {
					t.Errorf("rank %d: Startall lists %d requests", r, len(e.Reqs))
				}
				for _, id := range e.Reqs {
					if q := live[id]; q == nil || !q.persistent {
						t.Errorf("rank %d: Startall of unknown request %x", r, id)
					}
				}
			case "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall":
				if len(e.Status) != len(e.Reqs) {
					t.Fatalf("rank %d: %s with %d requests and %d statuses", r, name, len(e.Reqs), len(e.Status))
				}
				for i, id := range e.Reqs {
					q := live[id]
					if q == nil || q.count == 0 {
						t.Errorf("rank %d: %s completes unknown request %x", r, name, id)
						continue
					}
					want := traceformat.Status{Source: traceformat.NoStatus, Tag: traceformat.NoStatus}
					if q.recv {
						want = traceformat.Status{Source: q.peer, Tag: q.tag}
					}
					if e.Status[i] != want {
						t.Errorf("rank %d: %s status %v for request from %d tag %d, want %v", r, name, e.Status[i], q.peer, q.tag, want)
					}
					if !q.persistent {
						q.count--
					}
					completed++
				}
			case "MPI_Request_free":
				if len(e.Reqs) != 1 || live[e.Reqs[0]] == nil || !live[e.Reqs[0]].persistent {
					t.Errorf("rank %d: Request_free of %x", r, e.Reqs)
				} else {
					live[e.Reqs[0]].count--
				}
			}
		}
		// 12 nonblocking + 2 persistent created; 12 + 2×2 completions.
		if created != 14 || completed != 16 {
			t.Errorf("rank %d: %d requests created, %d completions; want 14 and 16", r, created, completed)
		}
		for id, q := range live {
			if q.count != 0 {
				t.Errorf("rank %d: request %x left with count %d", r, id, q.count)
			}
		}
	}
}

func TestCollectivesSplitCommunicators(t *testing.T) {
	trs, _ := traced(t, "collectives", nil)
	checkComplete(t, trs)
	checkCollectives(t, trs)
}

func checkCollectives(t *testing.T, trs []*trace) {
	t.Helper()
	newcomm := func(tr *trace, fn string) *tracepb.Communicator {
		ev := tr.calls(fn)
		if len(ev) != 1 || ev[0].Attr&traceformat.AttrNewComm == 0 {
			t.Fatalf("rank %d: %d %s events without a new communicator", tr.hdr.Rank, len(ev), fn)
		}
		if ev[0].NewComm == traceformat.CommNull {
			return nil
		}
		return tr.defs.Comm(ev[0].NewComm)
	}
	ids := map[string][4]uint64{}
	for r, tr := range trs {
		for _, fn := range []string{"MPI_Comm_split", "MPI_Comm_dup", "MPI_Intercomm_create", "MPI_Comm_create"} {
			c := newcomm(tr, fn)
			if c == nil {
				if fn != "MPI_Comm_create" || r < 2 {
					t.Errorf("rank %d: %s gave MPI_COMM_NULL", r, fn)
				}
				continue
			}
			v := ids[fn]
			v[r] = c.Id
			ids[fn] = v
			var want []uint32
			switch fn {
			case "MPI_Comm_split", "MPI_Comm_dup":
				want = []uint32{uint32(r % 2), uint32(r%2 + 2)}
			case "MPI_Comm_create":
				want = []uint32{0, 1}
			case "MPI_Intercomm_create":
				want = []uint32{uint32(r % 2), uint32(r%2 + 2)}
				if !c.Inter || len(c.RemoteMembers) != 2 || c.RemoteMembers[0] != uint32(1-r%2) {
					t.Errorf("rank %d: intercommunicator %v", r, c)
				}
			}
			if len(c.Members) != len(want) || c.Members[0] != want[0] || c.Members[1] != want[1] {
				t.Errorf("rank %d: %s members %v, want %v", r, fn, c.Members, want)
			}
		}
	}
	// The communicator of MPI_Comm_idup is defined at its first use (the
	// barrier after the wait), with an id that agrees across the half.
	var idup [4]uint64
	for r, tr := range trs {
		b := tr.calls("MPI_Barrier")
		if len(b) < 2 {
			t.Fatalf("rank %d: %d barriers", r, len(b))
		}
		c := tr.defs.Comm(b[len(b)-2].Comm)
		idup[r] = c.Id
		if len(c.Members) != 2 || c.Members[0] != uint32(r%2) {
			t.Errorf("rank %d: idup communicator %v", r, c)
		}
	}
	if idup[0] != idup[2] || idup[1] != idup[3] || idup[0] == idup[1] || idup[0] == ids["MPI_Comm_dup"][0] {
		t.Errorf("idup ids %x", idup)
	}
	sp, dup := ids["MPI_Comm_split"], ids["MPI_Comm_dup"]
	if sp[0] != sp[2] || sp[1] != sp[3] || sp[0] == sp[1] || sp[0] == 0 {
		t.Errorf("split ids %x: want ranks 0,2 and 1,3 to agree and the halves to differ", sp)
	}
	if dup[0] != dup[2] || dup[1] != dup[3] || dup[0] == dup[1] || dup[0] == sp[0] || dup[1] == sp[1] {
		t.Errorf("dup ids %x (split %x)", dup, sp)
	}
	if ic := ids["MPI_Intercomm_create"]; ic[0] != ic[1] || ic[1] != ic[2] || ic[2] != ic[3] {
		t.Errorf("intercommunicator ids %x differ", ic)
	}
	if cr := ids["MPI_Comm_create"]; cr[0] != cr[1] || cr[0] == 0 {
		t.Errorf("MPI_Comm_create ids %x", cr)
	}
	for r, tr := range trs {
		half := tr.calls("MPI_Comm_split")[0].NewComm
		b := tr.calls("MPI_Bcast")
		if len(b) != 1 || b[0].Comm != half || b[0].Root != 0 {
			t.Fatalf("rank %d: Bcast %v", r, b)
		}
		if r < 2 && b[0].SendBytes != 4 || r >= 2 && b[0].RecvBytes != 4 {
			t.Errorf("rank %d: Bcast bytes sent %d received %d", r, b[0].SendBytes, b[0].RecvBytes)
		}
		g := tr.calls("MPI_Gather")
		if len(g) != 1 || g[0].Comm != 0 || g[0].SendBytes != 4 || (r == 0) != (g[0].RecvBytes == 16) {
			t.Errorf("rank %d: Gather %+v", r, g)
		}
		ib, w := tr.calls("MPI_Ibarrier"), tr.calls("MPI_Wait")
		if len(w) == 2 {
			w = w[:1] // the second completes MPI_Comm_idup
		}
		if len(ib) != 1 || len(w) != 1 || len(ib[0].Reqs) != 1 || len(w[0].Reqs) != 1 || ib[0].Reqs[0] != w[0].Reqs[0] {
			t.Errorf("rank %d: Ibarrier %v completed by %v", r, ib, w)
		} else if w[0].Status[0].Source != traceformat.NoStatus {
			t.Errorf("rank %d: Ibarrier completion has status %v", r, w[0].Status)
		}
		dupLocal := tr.calls("MPI_Comm_dup")[0].NewComm
		if a := tr.calls("MPI_Allreduce"); len(a) != 1 || a[0].Comm != dupLocal || a[0].SendBytes != 4 {
			t.Errorf("rank %d: Allreduce %+v", r, a)
		}
	}
}

func TestAnySource(t *testing.T) {
	trs, _ := traced(t, "anysource", nil)
	checkComplete(t, trs)
	tr := trs[0]
	sources := func(evs []traceformat.Event) []int {
		var s []int
		for _, e := range evs {
			if len(e.Status) != 1 || e.Status[0].Tag != 10+e.Status[0].Source {
				t.Errorf("%s: status %v, want tag 10+source", tr.name(e), e.Status)
				continue
			}
			s = append(s, int(e.Status[0].Source))
		}
		sort.Ints(s)
		return s
	}
	recvs := tr.calls("MPI_Recv")
	if len(recvs) != 6 {
		t.Fatalf("%d receives, want 6", len(recvs))
	}
	for _, e := range recvs[:3] {
		if e.RecvPeer != traceformat.AnySource || e.RecvTag != traceformat.AnyTag {
			t.Errorf("receive from %d tag %d, want ANY_SOURCE ANY_TAG", e.RecvPeer, e.RecvTag)
		}
	}
	if s := sources(recvs[:3]); len(s) != 3 || s[0] != 1 || s[2] != 3 {
		t.Errorf("blocking ANY_SOURCE receives matched %v", s)
	}
	irecv, waits := tr.calls("MPI_Irecv"), tr.calls("MPI_Wait")
	if len(irecv) != 3 || len(waits) != 3 || irecv[0].RecvPeer != traceformat.AnySource {
		t.Fatalf("Irecv %v Wait %v", irecv, waits)
	}
	// MPI_STATUS_IGNORE in the program, the actual source in the trace.
	if s := sources(waits); len(s) != 3 || s[0] != 1 || s[1] != 2 || s[2] != 3 {
		t.Errorf("Wait(MPI_STATUS_IGNORE) statuses %v", s)
	}
	if s := sources(tr.calls("MPI_Probe")); len(s) != 3 {
		t.Errorf("probes %v", s)
	}
	for _, e := range tr.calls("MPI_Iprobe") {
		if e.Attr&traceformat.AttrFlag == 0 || e.Flag != (e.Attr&traceformat.AttrStatus != 0) {
			t.Errorf("Iprobe flag %v attr %b", e.Flag, e.Attr)
		}
	}
	for r := 1; r < 4; r++ {
		s := trs[r].calls("MPI_Send")
		if len(s) != 3 || s[0].SendPeer != 0 || s[0].SendTag != int32(10+r) {
			t.Errorf("rank %d: sends %v", r, s)
		}
	}
}

func TestPcontrol(t *testing.T) {
	trs, _ := traced(t, "pcontrol", nil)
	checkComplete(t, trs)
	for r, tr := range trs {
		var got []string
		plain := 0
		for _, e := range tr.calls("MPI_Pcontrol") {
			if e.Attr&traceformat.AttrPcontrol == 0 {
				plain++
				continue
			}
			got = append(got, strings.Join([]string{itoa(int64(e.PcLevel)), itoa(e.PcArg)}, ","))
		}
		want := "100,1 100,2 101,2 101,1 102,7 103,7 100,3 101,3"
		if strings.Join(got, " ") != want || plain != 1 {
			t.Errorf("rank %d: Pcontrol %v and %d other levels, want %s and 1", r, got, plain, want)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestResultsUnchanged runs programs with and without the tracer: what they
// print (received data, the statuses they asked for) must be identical.
func TestResultsUnchanged(t *testing.T) {
	for _, name := range []string{"statusignore", "halo"} {
		prog := build(t, name, ompi)
		plain := run(t, t.TempDir(), nil, "mpirun.openmpi", append(oversub, prog)...)
		dir := t.TempDir()
		tracedRes := dtrun(t, dir, nil, append(oversub, prog)...)
		// (dtrun's own closing lines, on its stderr, are not the program's.)
		sorted := func(s string) string {
			var l []string
			for _, x := range strings.Split(strings.TrimSpace(s), "\n") {
				if !strings.HasPrefix(x, "dtrun: ") {
					l = append(l, x)
				}
			}
			sort.Strings(l)
			return strings.Join(l, "\n")
		}
		if plain.code != 0 || tracedRes.code != 0 || sorted(plain.out) != sorted(tracedRes.out) {
			t.Errorf("%s: untraced (exit %d):\n%s\ntraced (exit %d):\n%s", name, plain.code, plain.out, tracedRes.code, tracedRes.out)
		}
		if name != "statusignore" {
			continue
		}
		trs := readTraces(t, dir, name, 4)
		checkComplete(t, trs)
		tr := trs[0]
		st := func(src, tag int32) traceformat.Status { return traceformat.Status{Source: src, Tag: tag} }
		sr := tr.calls("MPI_Sendrecv", "MPI_Sendrecv_replace")
		if len(sr) != 3 || sr[0].Status[0] != st(1, 5) || sr[1].Status[0] != st(1, 6) || sr[2].Status[0] != st(1, 8) {
			t.Errorf("Sendrecv statuses %v", sr)
		}
		wa := tr.calls("MPI_Waitall")
		if len(wa) != 1 || len(wa[0].Status) != 2 || wa[0].Status[0] != st(1, 9) || wa[0].Status[1] != st(traceformat.NoStatus, traceformat.NoStatus) {
			t.Errorf("Waitall(MPI_STATUSES_IGNORE) statuses %v", wa)
		}
		tests := tr.calls("MPI_Test")
		if last := tests[len(tests)-1]; !last.Flag || len(last.Status) != 1 || last.Status[0] != st(1, 11) {
			t.Errorf("successful Test: %+v", last)
		}
		rv := tr.calls("MPI_Recv")
		if len(rv) != 1 || rv[0].RecvPeer != traceformat.ProcNull || rv[0].Status[0].Source != traceformat.ProcNull {
			t.Errorf("MPI_PROC_NULL receive %+v", rv)
		}
	}
}

func TestThreadMultiple(t *testing.T) {
	trs, res := traced(t, "threads", nil)
	if strings.Contains(res.out, "no MPI_THREAD_MULTIPLE") {
		t.Skip("MPI without MPI_THREAD_MULTIPLE")
	}
	checkComplete(t, trs)
	for r, tr := range trs {
		if tr.hdr.ThreadLevel != 3 {
			t.Errorf("rank %d: thread level %d", r, tr.hdr.ThreadLevel)
		}
		per, tags := map[uint32]int{}, map[uint32]int32{}
		for _, e := range tr.calls("MPI_Send", "MPI_Recv") {
			per[e.Thread]++
			tag := e.SendTag
			if e.Attr&traceformat.AttrRecv != 0 {
				tag = e.RecvTag
			}
			if old, ok := tags[e.Thread]; ok && old != tag {
				t.Errorf("rank %d: thread %d used tags %d and %d", r, e.Thread, old, tag)
			}
			tags[e.Thread] = tag
		}
		if len(per) != 2 || per[1] != 400 || per[2] != 400 || tags[1] == tags[2] {
			t.Errorf("rank %d: point-to-point calls per thread %v with tags %v, want 400 on threads 1 and 2", r, per, tags)
		}
	}
}

// TestManyShortThreads: buffers of threads that end are handed over, so a
// small TraceBufSize does not run out over a program's many threads.
func TestManyShortThreads(t *testing.T) {
	trs, res := traced(t, "manythreads", []string{"TraceBufSize=1M"})
	if !strings.Contains(res.out, "threads done") {
		t.Fatalf("output:\n%s", res.out)
	}
	checkComplete(t, trs)
	for r, tr := range trs {
		threads := map[uint32]int{}
		for _, e := range tr.calls("MPI_Comm_rank", "MPI_Comm_size") {
			if e.Thread != 0 {
				threads[e.Thread]++
			}
		}
		if len(threads) != 40 {
			t.Errorf("rank %d: events from %d worker threads, want 40", r, len(threads))
		}
		for th, n := range threads {
			if n != 2 {
				t.Errorf("rank %d: thread %d has %d events, want 2", r, th, n)
			}
		}
	}
}

// TestNonMPIProcessesUntouched runs the program through a shell script that
// also starts a non-MPI process: the preload must not disturb either.
func TestNonMPIProcessesUntouched(t *testing.T) {
	prog := build(t, "pingpong", ompi)
	dir := t.TempDir()
	script := filepath.Join(dir, "wrap.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nhostname >/dev/null || exit 9\nexec \"$@\"\n"), 0o755)
	res := dtrun(t, dir, nil, append(oversub, script, prog)...)
	if res.code != 0 || !strings.Contains(res.out, "pingpong done") {
		t.Fatalf("exit %d\n%s", res.code, res.out)
	}
	checkPingPong(t, readTraces(t, dir, "pingpong", 4))
	if m, _ := filepath.Glob(filepath.Join(dir, "wrap*.trc")); len(m) != 0 {
		t.Errorf("the shell wrote traces: %v", m)
	}
}

// TestMPILoadedLocally traces a program that loads MPI the way Python loads
// mpi4py: through a module opened RTLD_LOCAL, out of the preload stub's sight.
func TestMPILoadedLocally(t *testing.T) {
	prog := build(t, "localmpi", ompi)
	ext := filepath.Join(filepath.Dir(prog), "libmpiext.so")
	if out, err := exec.Command(ompi, "-shared", "-fPIC", "-o", ext, filepath.Join(root, "testdata", "c", "mpiext.c")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dir := t.TempDir()
	res := dtrun(t, dir, nil, "--oversubscribe", "-np", "2", prog, ext)
	if res.code != 0 || !strings.Contains(res.out, "ext sum 1") {
		t.Fatalf("exit %d\n%s", res.code, res.out)
	}
	for _, tr := range readTraces(t, dir, "localmpi", 2) {
		if tr.err != nil || len(tr.calls("MPI_Allreduce")) != 1 {
			t.Errorf("rank %d: %v, %d events", tr.hdr.Rank, tr.err, len(tr.events))
		}
	}
}

func TestCancelTestanyTestsome(t *testing.T) {
	trs, _ := traced(t, "cancel", nil)
	checkComplete(t, trs)
	for r, tr := range trs {
		peer := int32(r ^ 1)
		irecv, c, w := tr.calls("MPI_Irecv"), tr.calls("MPI_Cancel"), tr.calls("MPI_Wait")
		if len(irecv) != 5 || len(c) != 1 || len(w) != 1 || c[0].Reqs[0] != irecv[0].Reqs[0] || w[0].Reqs[0] != irecv[0].Reqs[0] {
			t.Fatalf("rank %d: Irecv %v Cancel %v Wait %v", r, irecv, c, w)
		}
		if w[0].Status[0].Source != traceformat.NoStatus {
			t.Errorf("rank %d: cancelled receive has status %v", r, w[0].Status)
		}
		for _, fn := range []string{"MPI_Testany", "MPI_Testsome"} {
			tags := map[int32]bool{}
			for _, e := range tr.calls(fn) {
				for _, s := range e.Status {
					if s.Source != peer {
						t.Errorf("rank %d: %s status %v", r, fn, s)
					}
					tags[s.Tag] = true
				}
			}
			if len(tags) != 2 || !tags[60] || !tags[61] {
				t.Errorf("rank %d: %s completed tags %v", r, fn, tags)
			}
		}
	}
}

func TestExitCodePassedThrough(t *testing.T) {
	prog := build(t, "exitcode", ompi)
	dir := t.TempDir()
	if res := dtrun(t, dir, nil, append(oversub, prog)...); res.code != 7 {
		t.Errorf("dtrun exit %d, want the program's 7\n%s", res.code, res.out)
	}
	// Open MPI aborts the job when a rank exits non-zero: the others may be
	// killed inside MPI_Finalize. Their traces must still be readable.
	for _, tr := range readTraces(t, dir, "exitcode", 4) {
		if tr.err != nil || len(tr.calls("MPI_Init")) != 1 {
			t.Errorf("rank %d: %v, %d events", tr.hdr.Rank, tr.err, len(tr.events))
		}
	}
}
