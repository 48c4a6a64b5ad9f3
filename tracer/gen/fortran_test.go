package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestFortranSyms(t *testing.T) {
	protos := parseProtos(`int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Pcontrol(const int level, ...);
MPI_Comm MPI_Comm_f2c(MPI_Fint comm);
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);
double MPI_Wtime(void);
`)
	fsyms := map[string]bool{}
	for _, s := range []string{"mpi_send_", "mpi_send__", "mpi_send", "MPI_SEND", "mpi_send_f08ts_", "pmpi_send_",
		"mpi_pcontrol_", "mpi_comm_f2c_", "mpi_aint_add_", "mpi_wtime_", "mpi_send_f08ts_large_"} {
		fsyms[s] = true
	}
	var got []string
	for _, s := range fortranSyms(protos, fsyms) {
		got = append(got, s.Sym)
	}
	want := "MPI_SEND mpi_pcontrol_ mpi_send mpi_send_ mpi_send__ mpi_send_f08ts_ mpi_wtime_"
	if strings.Join(got, " ") != want {
		t.Errorf("Fortran symbols %v, want %s", got, want)
	}
}

func TestEmitFortran(t *testing.T) {
	protos := parseProtos(`int MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request);
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
`)
	sp := special()
	var b bytes.Buffer
	for _, p := range protos {
		t0, ok := sp[p.Name]
		if !ok {
			t0 = tmpl{post: genericPost(p)}
		}
		if err := emitFortran(&b, p, fortSym{strings.ToLower(p.Name) + "_", p.Name, fortF77}, 0, 7, t0); err != nil {
			t.Fatal(err)
		}
	}
	out := b.String()
	for _, want := range []string{
		// requests copied in their C form before the call, 1-based index
		"MPI_Request *dt_rs = dt_freqs(T, a0, (MPI_Fint *)f1);",
		"if (*a2 > 0) DONE1(dt_rs[*a2 - 1], dt_sp)",
		// the program's MPI_STATUS_IGNORE replaced by the wrapper's status
		"(f0, f1, f2, dt_fsp, ierr, x0, x1)",
		// the request Irecv creates, converted after the call
		"c6 = PMPI_Request_f2c(*(MPI_Fint *)f6);",
		"REQC(*a6, DT_RK_RECV)",
		// two character arguments: two hidden lengths, plus the two spares
		"void mpi_info_get_(void *f0, void *f1, void *f2, void *f3, void *f4, MPI_Fint *ierr, uintptr_t x0, uintptr_t x1, uintptr_t x2, uintptr_t x3)",
		"int dt_ok = ierr == NULL || *ierr == MPI_SUCCESS;",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("generated code lacks %q:\n%s", want, out)
		}
	}
}
