package main

import (
	"strings"
	"testing"
)

func TestParseProtos(t *testing.T) {
	text := `typedef struct ompi_status_public_t MPI_Status;
typedef int (MPI_Foo_fn)(int);
__attribute__((visibility("default"))) int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
    int tag, MPI_Comm comm) __attribute__((deprecated("x (y)")));
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
int MPI_Pcontrol(const int level, ...);
double MPI_Wtime(void);
int MPI_Unnamed(MPI_Comm, int *);
struct s { int MPI_Inside(int x); };
int PMPI_Send(const void *buf, int count);
`
	ps := parseProtos(text)
	byName := map[string]Proto{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	if len(ps) != 5 {
		t.Fatalf("parsed %d prototypes: %+v", len(ps), ps)
	}
	send := byName["MPI_Send"]
	if send.Ret != "int" || len(send.Params) != 6 || send.Params[5].Type != "MPI_Comm" || send.Params[0].Decl != "const void *a0" {
		t.Errorf("MPI_Send: %+v", send)
	}
	if p := byName["MPI_Group_range_incl"]; p.Params[2].Decl != "int a2[][3]" {
		t.Errorf("array parameter: %+v", p.Params[2])
	}
	if p := byName["MPI_Pcontrol"]; !p.Variadic || len(p.Params) != 1 {
		t.Errorf("variadic: %+v", p)
	}
	if p := byName["MPI_Wtime"]; p.Ret != "double" || len(p.Params) != 0 {
		t.Errorf("MPI_Wtime: %+v", p)
	}
	if p := byName["MPI_Unnamed"]; p.Params[0].Decl != "MPI_Comm a0" || p.Params[1].Type != "int *" {
		t.Errorf("unnamed parameters: %+v", p)
	}
	if p := byName["MPI_Unnamed"]; !strings.Contains(p.Params[1].Decl, "a1") {
		t.Errorf("unnamed pointer: %+v", p)
	}
}

func TestSpecialTemplatesKeepAttrOrder(t *testing.T) {
	order := []string{"CM(", "SEND(", "RECV(", "SB", "RB", "ROOT(", "REQ", "DONE", "STAT(", "NEWC(", "PC(", "FLAG("}
	rank := func(tok string) int {
		for i, o := range order {
			if strings.HasPrefix(tok, o) {
				return i
			}
		}
		return -1
	}
	for name, tm := range special() {
		last := -1
		for _, f := range strings.Fields(tm.post) {
			r := rank(f)
			if r < 0 {
				continue
			}
			// SB/RB and REQ/DONE are each one attribute; DONE writes REQS
			// and STATUS together.
			if r < last && !(order[r] == "SB" && order[last] == "RB") {
				t.Errorf("%s: %s after a later attribute in %q", name, f, tm.post)
			}
			last = r
		}
	}
}
