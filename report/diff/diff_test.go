package diff

import (
	"bytes"
	"flag"
	"os"
	"reflect"
	"testing"

	"github.com/dtpa/dtpa/report"
)

var update = flag.Bool("update", false, "rewrite testdata/diff.txt")

func site(id int, fn string, line int, comm float64) report.SRC {
	return report.SRC{ID: id, Function: fn, Comm: comm, Stack: []report.Frame{{Function: "main", File: "/src/a.c", Line: line}}}
}

// runs are two runs of one program: A at 4 processors, B at 2. Interval
// 1's MPI_Waitall (a.c:58) costs 0.8 s in A and 0.3 s in B, its
// MPI_Allreduce (a.c:61) 0.2 s in both; A alone calls MPI_Send at a.c:70
// (0.1 s), B alone MPI_Recv at a.c:80 (0.05 s) and has an interval 2.
func runs() (a, b *report.Report) {
	a = &report.Report{Task: "app", Processors: 4, Intervals: []report.Interval{
		{Path: []int{}, Main: report.Main{ExecutionTime: 2, Processors: 4, TotalTime: 8, ProductiveTime: 6, LostTime: 2, Efficiency: 0.75}},
		{Path: []int{1}, Level: 1, Number: 1, SourceFile: "/src/a.c", Line: 50,
			Main: report.Main{ExecutionTime: 1.5, Processors: 4, TotalTime: 6, LostTime: 1.1, Communications: 1.1, SendNumber: 400},
			SRC:  []report.SRC{site(1, "MPI_Waitall", 58, 0.8), site(2, "MPI_Allreduce", 61, 0.2), site(3, "MPI_Send", 70, 0.1)}},
	}}
	b = &report.Report{Task: "app", Processors: 2, Intervals: []report.Interval{
		{Path: []int{}, Main: report.Main{ExecutionTime: 3, Processors: 2, TotalTime: 6, ProductiveTime: 5.4, LostTime: 0.6, Efficiency: 0.9}},
		{Path: []int{1}, Level: 1, Number: 1, SourceFile: "/src/a.c", Line: 50,
			Main: report.Main{ExecutionTime: 2.5, Processors: 2, TotalTime: 5, LostTime: 0.55, Communications: 0.55, SendNumber: 200},
			SRC:  []report.SRC{site(4, "MPI_Recv", 80, 0.05), site(7, "MPI_Waitall", 58, 0.3), site(9, "MPI_Allreduce", 61, 0.2)}},
		{Path: []int{2}, Level: 1, Number: 2, SourceFile: "/src/a.c", Line: 90, Main: report.Main{ExecutionTime: 0.1, Processors: 2}},
	}}
	return a, b
}

func TestCompare(t *testing.T) {
	a, b := runs()
	d := Compare(a, b)
	if d.A != (Run{"app", 4}) || d.B != (Run{"app", 2}) {
		t.Errorf("runs %+v %+v", d.A, d.B)
	}
	if len(d.Intervals) != 3 {
		t.Fatalf("%d intervals, want 3 (the program, 1, and 2 of B only)", len(d.Intervals))
	}
	for i, want := range [][]int{{}, {1}, {2}} {
		if iv := d.Intervals[i]; !reflect.DeepEqual(iv.Path, want) {
			t.Errorf("interval %d: path %v, want %v", i, iv.Path, want)
		}
	}
	if iv := d.Intervals[2]; iv.A != nil || iv.B == nil || iv.B.ExecutionTime != 0.1 {
		t.Errorf("interval 2: A %v B %v", iv.A, iv.B)
	}
	if iv := d.Intervals[1]; iv.A.SendNumber != 400 || iv.B.SendNumber != 200 {
		t.Errorf("interval 1: Send number %d, %d", iv.A.SendNumber, iv.B.SendNumber)
	}
	// By decreasing |B − A|: MPI_Waitall −0.5, MPI_Send −0.1 (A only),
	// MPI_Recv +0.05 (B only); MPI_Allreduce did not change.
	want := []SRC{
		{Function: "MPI_Waitall", File: "/src/a.c", Line: 58, CommA: 0.8, CommB: 0.3, IDA: 1, IDB: 7},
		{Function: "MPI_Send", File: "/src/a.c", Line: 70, CommA: 0.1, IDA: 3},
		{Function: "MPI_Recv", File: "/src/a.c", Line: 80, CommB: 0.05, IDB: 4},
	}
	if got := d.Intervals[1].SRC; !reflect.DeepEqual(got, want) {
		t.Errorf("SRC\n%+v\nwant\n%+v", got, want)
	}
}

func TestWrite(t *testing.T) {
	a, b := runs()
	var buf bytes.Buffer
	if err := Write(&buf, Compare(a, b)); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/diff.txt"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("differs from %s (go test -update rewrites it):\n%s", golden, buf.String())
	}
}
