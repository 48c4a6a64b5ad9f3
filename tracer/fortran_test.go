package tracer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/srcchar"
	"github.com/dtpa/dtpa/traceformat"
)

// fortranMPIs are the MPI implementations Fortran programs are traced under.
var fortranMPIs = []struct {
	name, fc string
	launch   []string
}{
	{"OpenMPI", "mpif90.openmpi", oversub},
	{"MPICH", "mpif90.mpich", []string{"-n", "4"}},
}

// buildFortran compiles tracer/testdata/fortran/<name>.f90 with fc once per
// test binary.
func buildFortran(t *testing.T, name, fc string) string {
	t.Helper()
	needMPI(t, fc)
	build(t, "pingpong", "mpicc.openmpi") // creates buildDir (and checks the C side)
	buildMu.Lock()
	defer buildMu.Unlock()
	key := name + ".f90@" + fc
	if p, ok := built[key]; ok {
		return p
	}
	dir := filepath.Join(buildDir, fc)
	os.MkdirAll(dir, 0o755)
	out := filepath.Join(dir, name)
	cmd := exec.Command(fc, "-g", "-o", out, filepath.Join(root, "tracer", "testdata", "fortran", name+".f90"))
	cmd.Dir = dir // the .mod files of use mpi_f08 programs go nowhere else
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling %s.f90: %v\n%s", name, err, b)
	}
	built[key] = out
	return out
}

// markers maps each "! @name" marker of a Fortran source to its line.
func markers(t *testing.T, name string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "tracer", "testdata", "fortran", name+".f90"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		if _, tag, ok := strings.Cut(sc.Text(), "! @"); ok {
			m[strings.TrimSpace(tag)] = n
		}
		if strings.HasPrefix(sc.Text(), "program ") {
			m["program"] = n
		}
	}
	return m
}

// siteLine symbolizes an event's call site (innermost frame) with srcchar.
func siteLine(tr *trace, sym *srcchar.Symbolizer, e traceformat.Event) (string, int) {
	pcs := tr.defs.CallSites[e.Site]
	if len(pcs) == 0 {
		return "", 0
	}
	for _, m := range tr.defs.Modules {
		if pcs[0] >= m.Start && pcs[0] < m.End {
			if fr := sym.Symbolize(m.Path, pcs[0]-m.LoadBias); len(fr) > 0 {
				return filepath.Base(fr[0].File), fr[0].Line
			}
		}
	}
	return "", 0
}

// TestFortran traces the same program written with mpif.h, use mpi and use
// mpi_f08 under Open MPI and MPICH, and checks it call by call: each call
// recorded once, with its peers, tags, bytes, requests and statuses (also
// those the program ignored), its communicator, and its call site on the
// line of the .f90 file that makes it.
func TestFortran(t *testing.T) {
	for _, m := range fortranMPIs {
		for _, name := range []string{"mpifh", "usempi", "f08"} {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				prog := buildFortran(t, name, m.fc)
				dir := t.TempDir()
				res := dtrun(t, dir, nil, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
				if res.code != 0 {
					t.Fatalf("dtrun %s: exit %d\n%s", name, res.code, res.out)
				}
				trs := readTraces(t, dir, name, 4)
				checkComplete(t, trs)
				checkFortran(t, trs, name)
			})
		}
	}
}

func checkFortran(t *testing.T, trs []*trace, name string) {
	t.Helper()
	lines := markers(t, name)
	sym := srcchar.New(srcchar.Config{})
	for r, tr := range trs {
		want := []string{"MPI_Init", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Pcontrol"}
		for i := 0; i < 5; i++ {
			switch r {
			case 0:
				want = append(want, "MPI_Send", "MPI_Recv")
			case 1:
				want = append(want, "MPI_Recv", "MPI_Send")
			}
		}
		want = append(want, "MPI_Pcontrol", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Comm_split",
			"MPI_Allreduce", "MPI_Comm_free", "MPI_Finalize")
		var got []string
		for _, e := range tr.events {
			got = append(got, tr.name(e))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("rank %d: calls\n%v\nwant\n%v", r, got, want)
		}
		ev := tr.events
		at := func(i int, tag string) {
			t.Helper()
			file, line := siteLine(tr, sym, ev[i])
			if file == name+".f90" && line == lines["program"] && (tag == "init" || tag == "finalize") {
				// gfortran's own line table puts some calls of MPI_Init and
				// MPI_Finalize of use mpi / use mpi_f08 programs on the
				// program statement (addr2line says the same of the
				// recorded return address).
				return
			}
			if file != name+".f90" || line != lines[tag] {
				t.Errorf("rank %d: %s call site %s:%d, want %s.f90:%d (pcs %x)", r, got[i], file, line, name, lines[tag], tr.defs.CallSites[ev[i].Site])
			}
		}
		at(0, "init")
		at(len(ev)-1, "finalize")
		// Interval 1 around the ping-pong (Fortran: level 100000 + n).
		pc := tr.calls("MPI_Pcontrol")
		if pc[0].Attr&traceformat.AttrPcontrol == 0 || pc[0].PcLevel != 100 || pc[0].PcArg != 1 ||
			pc[1].PcLevel != 101 || pc[1].PcArg != 1 {
			t.Errorf("rank %d: Pcontrol marks %d,%d %d,%d, want 100,1 101,1", r, pc[0].PcLevel, pc[0].PcArg, pc[1].PcLevel, pc[1].PcArg)
		}
		at(3, "enter")
		i := 4
		// Rank 0 sends tag 10 and receives tag 11 (with a status), rank 1
		// receives tag 10 (MPI_STATUS_IGNORE) and sends tag 11 back.
		type call struct {
			send   bool
			tag    int32
			marker string
		}
		seq := map[int][]call{0: {{true, 10, "send"}, {false, 11, "recv"}}, 1: {{false, 10, "recvignore"}, {true, 11, "sendback"}}}[r]
		for k := 0; k < 5 && r < 2; k++ {
			for _, c := range seq {
				e, peer := ev[i], int32(1-r)
				if c.send {
					if e.Attr&traceformat.AttrSend == 0 || e.SendPeer != peer || e.SendTag != c.tag || e.SendBytes != 32 {
						t.Errorf("rank %d: %s to %d tag %d bytes %d, want to %d tag %d bytes 32", r, got[i], e.SendPeer, e.SendTag, e.SendBytes, peer, c.tag)
					}
				} else {
					st := traceformat.Status{Source: peer, Tag: c.tag}
					if e.RecvPeer != peer || e.RecvTag != c.tag || e.RecvBytes != 32 || len(e.Status) != 1 || e.Status[0] != st {
						t.Errorf("rank %d: %s from %d tag %d bytes %d status %v, want status %v", r, got[i], e.RecvPeer, e.RecvTag, e.RecvBytes, e.Status, st)
					}
				}
				if e.Comm != traceformat.CommWorld {
					t.Errorf("rank %d: %s on communicator %d", r, got[i], e.Comm)
				}
				at(i, c.marker)
				i++
			}
		}
		at(i, "leave")
		i++
		// Ring exchange: Waitall completes both requests, and reports the
		// receive's actual source and tag although the program passed
		// MPI_STATUSES_IGNORE.
		irecv, isend, wall := ev[i], ev[i+1], ev[i+2]
		left, right := int32((r+3)%4), int32((r+1)%4)
		if irecv.RecvPeer != left || irecv.RecvTag != 20 || irecv.RecvBytes != 32 || len(irecv.Reqs) != 1 {
			t.Errorf("rank %d: MPI_Irecv from %d tag %d reqs %v", r, irecv.RecvPeer, irecv.RecvTag, irecv.Reqs)
		}
		if isend.SendPeer != right || isend.SendTag != 20 || isend.SendBytes != 32 || len(isend.Reqs) != 1 {
			t.Errorf("rank %d: MPI_Isend to %d tag %d reqs %v", r, isend.SendPeer, isend.SendTag, isend.Reqs)
		}
		if len(irecv.Reqs) == 1 && len(isend.Reqs) == 1 {
			done := map[uint64]traceformat.Status{}
			for k, id := range wall.Reqs {
				if k < len(wall.Status) {
					done[id] = wall.Status[k]
				}
			}
			if len(wall.Reqs) != 2 || done[irecv.Reqs[0]] != (traceformat.Status{Source: left, Tag: 20}) {
				t.Errorf("rank %d: MPI_Waitall completed %x statuses %v; requests %x (receive) %x", r, wall.Reqs, wall.Status, irecv.Reqs[0], isend.Reqs[0])
			}
			if _, ok := done[isend.Reqs[0]]; !ok {
				t.Errorf("rank %d: MPI_Waitall did not complete the send", r)
			}
		}
		at(i, "irecv")
		at(i+1, "isend")
		at(i+2, "waitall")
		i += 3
		// MPI_Allreduce on the communicator MPI_Comm_split created.
		split, allr := ev[i], ev[i+1]
		if split.Attr&traceformat.AttrNewComm == 0 || split.NewComm == traceformat.CommNull {
			t.Fatalf("rank %d: MPI_Comm_split defines no communicator", r)
		}
		c := tr.defs.Comm(split.NewComm)
		if wantM := []uint32{uint32(r % 2), uint32(r%2 + 2)}; c == nil || len(c.Members) != 2 || c.Members[0] != wantM[0] || c.Members[1] != wantM[1] {
			t.Errorf("rank %d: split communicator %v, want members %v", r, c, wantM)
		}
		if allr.Comm != split.NewComm || allr.SendBytes != 8 || allr.RecvBytes != 8 {
			t.Errorf("rank %d: MPI_Allreduce on %d bytes %d/%d, want on %d bytes 8/8", r, allr.Comm, allr.SendBytes, allr.RecvBytes, split.NewComm)
		}
		if c != nil && c.Id != trs[r%2].defs.Comm(trs[r%2].calls("MPI_Comm_split")[0].NewComm).GetId() {
			t.Errorf("rank %d: split communicator id differs from rank %d's", r, r%2)
		}
		at(i, "split")
		at(i+1, "allreduce")
	}
}

// TestFortranLateSender analyses a traced Fortran run: rank 0 sends 0.2 s
// late, and dtpa's Real Sync of rank 1 must be the wait the program itself
// measured with SYSTEM_CLOCK (MPI_Send entered minus MPI_Recv entered, one
// host, one clock), within 20 ms: the two clock readings are a few
// instructions from the wrappers' timestamps, and the tolerance only covers
// a preemption between them on a loaded machine. Both ranks' calls are
// attributed to the .f90 lines that make them.
func TestFortranLateSender(t *testing.T) {
	m := fortranMPIs[0]
	prog := buildFortran(t, "late", m.fc)
	dir := t.TempDir()
	res := dtrun(t, dir, nil, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
	if res.code != 0 {
		t.Fatalf("dtrun late: exit %d\n%s", res.code, res.out)
	}
	var tsend, trecv float64
	for _, l := range strings.Split(res.out, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && (f[0] == "SEND" || f[0] == "RECV") {
			c, err1 := strconv.ParseInt(f[1], 10, 64)
			rate, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || rate <= 0 {
				t.Fatalf("the program printed %q", l)
			}
			v := float64(c) / float64(rate)
			if f[0] == "SEND" {
				tsend = v
			} else {
				trecv = v
			}
		}
	}
	if tsend == 0 || trecv == 0 {
		t.Fatalf("the program printed no times:\n%s", res.out)
	}
	own := math.Max(tsend-trecv, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "dtpa"), "--json", "--dir", dir, "late")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dtpa --json late: %v\n%s", err, stderr.String())
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decoding the JSON report: %v", err)
	}
	if len(rep.Intervals) == 0 || len(rep.Intervals[0].Ranks) != 4 {
		t.Fatalf("report without the whole program on 4 ranks: %+v", rep.Intervals)
	}
	rs := rep.Intervals[0].Ranks[1].RealSync
	t.Logf("Real Sync of rank 1: %.4f s; the program measured %.4f s", rs, own)
	if math.Abs(rs-own) > 0.02 {
		t.Errorf("Real Sync of rank 1 is %.4f s, the program measured a wait of %.4f s", rs, own)
	}
	if rs0 := rep.Intervals[0].Ranks[0].RealSync; rs0 > 0.02 {
		t.Errorf("Real Sync of rank 0 (the late sender) is %.4f s, want ≈ 0", rs0)
	}
	lines := markers(t, "late")
	found := map[int]bool{}
	for _, s := range rep.Intervals[0].SRC {
		for _, f := range s.Stack {
			if filepath.Base(f.File) == "late.f90" {
				found[f.Line] = true
			}
		}
	}
	for _, tag := range []string{"latesend", "laterecv"} {
		if !found[lines[tag]] {
			t.Errorf("no SRC call site at late.f90:%d (%s); SRC %+v", lines[tag], tag, rep.Intervals[0].SRC)
		}
	}
}

// TestFortranDtf90 links the tracer in at build time (bin/dtf90, bin/dtf77)
// and runs the program with the plain launcher: the traces must be those
// dtrun gives.
func TestFortranDtf90(t *testing.T) {
	for _, c := range []struct {
		mpi, tool, env, fc, name string
		launch                   []string
	}{
		{"OpenMPI", "dtf90", "DT_MPIF90", "mpif90.openmpi", "f08", append([]string{"mpirun.openmpi"}, oversub...)},
		{"MPICH", "dtf77", "DT_MPIF77", "mpif77.mpich", "mpifh", []string{"mpiexec.mpich", "-n", "4"}},
	} {
		t.Run(c.mpi+"/"+c.tool, func(t *testing.T) {
			needMPI(t, c.fc)
			needMPI(t, c.launch[0])
			dir := t.TempDir()
			src := filepath.Join(root, "tracer", "testdata", "fortran", c.name+".f90")
			if res := run(t, dir, []string{c.env + "=" + c.fc}, filepath.Join(root, "bin", c.tool), "-g", "-o", c.name, src); res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", c.tool, res.code, res.out)
			}
			if res := run(t, dir, nil, c.launch[0], append(c.launch[1:], "./"+c.name)...); res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", c.launch[0], res.code, res.out)
			}
			trs := readTraces(t, dir, c.name, 4)
			checkComplete(t, trs)
			checkFortran(t, trs, c.name)
		})
	}
}
