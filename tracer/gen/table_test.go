package main

import (
	"testing"

	"github.com/dtpa/dtpa/traceformat/mpifunc"
	"github.com/dtpa/dtpa/traceformat/tracepb"
)

// TestFoldable: the queries whose runs are folded are system calls with no
// special record (a special one records requests, communicators, messages
// or intervals, which a folded record would lose), and their template folds
// (dt_rec_end_query), as that of their large-count variant does.
func TestFoldable(t *testing.T) {
	sp := special()
	for name := range foldable {
		if c := mpifunc.Classify(name); c.Class != tracepb.Function_SYSTEM || c.Nonblocking {
			t.Errorf("%s: class %v, nonblocking %v; a folded call must be a system call", name, c.Class, c.Nonblocking)
		}
		if _, ok := sp[name]; ok {
			t.Errorf("%s: has a special record, must not be folded", name)
		}
		for _, n := range []string{name, name + "_c"} {
			if got := withFold(n, tmpl{post: "CM(a0) "}).recEnd(); got != "dt_rec_end_query(T, H, dt_ok);" {
				t.Errorf("%s ends its record with %q", n, got)
			}
		}
	}
	if got := withFold("MPI_Comm_dup", tmpl{}).recEnd(); got != "dt_rec_end(T);" {
		t.Errorf("MPI_Comm_dup ends its record with %q", got)
	}
}

// TestFileBytes: an MPI-IO data access records the bytes of its buffer,
// written (SB) or read (RB), wherever its count and datatype stand; its
// nonblocking form also its request; a split collective's _end and the
// other file functions none.
func TestFileBytes(t *testing.T) {
	protos := parseProtos(`
int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status);
int MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request);
int MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype);
int MPI_File_write_c(MPI_File fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status);
int MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *status);
int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh);
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep, MPI_Info info);
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
`)
	want := map[string]string{
		"MPI_File_write_at_all":       "SB(a3, a4) ",
		"MPI_File_iread":              "RB(a2, a3) REQC(*a4, 0)",
		"MPI_File_read_ordered_begin": "RB(a2, a3) ",
		"MPI_File_write_c":            "SB(a2, a3) ",
		"MPI_File_write_all_end":      "",
		"MPI_File_open":               "CM(a0) ",
		"MPI_File_set_view":           "",
		"MPI_Send":                    "CM(a5) ",
	}
	if len(protos) != len(want) {
		t.Fatalf("parsed %d prototypes, want %d", len(protos), len(want))
	}
	for _, p := range protos {
		if got := genericPost(p); got != want[p.Name] {
			t.Errorf("%s: %q, want %q", p.Name, got, want[p.Name])
		}
	}
}
