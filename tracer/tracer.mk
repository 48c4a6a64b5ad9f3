# Builds the tracer into lib/ (invoked by `make build` from the repository root):
#   lib/libdtpa_preload.so   C-only preload stub (any MPI)
#   lib/libdtpa_openmpi.so   Go c-shared tracer for the OpenMPI ABI
#   lib/libdtpa_mpich.so     Go c-shared tracer for the MPICH ABI
#   lib/libdtpa_*_c.so       the same without Go: its writer is C (DT_CWRITER=1)
#   lib/libdtpa_enc.so       Go c-shared encoder, which the C writer loads when it needs one
# Wrappers are generated from each installed mpi.h; an MPI that is not
# installed is skipped. Generated files are rewritten only when they change,
# and Go's build cache makes a rebuild with no change take a second or two.
GO     ?= go
CC     ?= gcc
OUT    := lib
BUILD  := tracer/build
GEN    := $(BUILD)/gen

HAVE_OMPI  := $(shell command -v mpicc.openmpi 2>/dev/null)
HAVE_MPICH := $(shell command -v mpicc.mpich 2>/dev/null)
# Fortran wrappers are generated for the Fortran libraries these report
# (none when the Fortran compiler wrapper is missing).
FC_OMPI    := mpif90.openmpi
FC_MPICH   := mpif90.mpich

LIBS := $(OUT)/libdtpa_preload.so
ifneq ($(HAVE_OMPI),)
LIBS += $(OUT)/libdtpa_openmpi.so $(OUT)/libdtpa_openmpi_c.so
endif
ifneq ($(HAVE_MPICH),)
LIBS += $(OUT)/libdtpa_mpich.so $(OUT)/libdtpa_mpich_c.so
endif
ifneq ($(HAVE_OMPI)$(HAVE_MPICH),)
LIBS += $(OUT)/libdtpa_enc.so
endif

GOSRC := $(wildcard tracer/golib/*.go tracer/golib/*.c tracer/golib/*.h tracer/params/*.go) \
	$(wildcard traceformat/*.go traceformat/*/*.go)

.PHONY: all FORCE
all: $(LIBS)

$(GEN): $(wildcard tracer/gen/*.go traceformat/mpifunc/*.go)
	@mkdir -p $(BUILD)
	$(GO) build -o $@ ./tracer/gen

# Generation runs every time (cheap) but only touches files whose content
# changed, so the targets below rebuild only when needed.
$(BUILD)/stub_gen.c tracer/golib/zz_openmpi_gen.c tracer/golib/zz_mpich_gen.c \
	tracer/golib/zz_openmpi_fort_gen.c tracer/golib/zz_mpich_fort_gen.c: FORCE | $(GEN)
	@true

gen: $(GEN)
	@$(GEN) stub -cc mpicc.openmpi -fc $(FC_OMPI) -cc mpicc.mpich -fc $(FC_MPICH) -o $(BUILD)/stub_gen.c
	@if [ -n "$(HAVE_OMPI)" ]; then $(GEN) wrappers -cc mpicc.openmpi -fc $(FC_OMPI) -tag dtpa_openmpi \
		-o tracer/golib/zz_openmpi_gen.c -fo tracer/golib/zz_openmpi_fort_gen.c; fi
	@if [ -n "$(HAVE_MPICH)" ]; then $(GEN) wrappers -cc mpicc.mpich -fc $(FC_MPICH) -tag dtpa_mpich \
		-o tracer/golib/zz_mpich_gen.c -fo tracer/golib/zz_mpich_fort_gen.c; fi

$(OUT)/libdtpa_preload.so: tracer/stub/stub.c tracer/golib/dt_stamp.h | gen
	@mkdir -p $(OUT)
	@if ! cmp -s $(BUILD)/stub_gen.c $(BUILD)/stub_gen.c.built 2>/dev/null || [ ! -f $@ ] || [ tracer/stub/stub.c -nt $@ ] || [ tracer/golib/dt_stamp.h -nt $@ ]; then \
		echo "CC $@"; \
		$(CC) -O2 -shared -fPIC -Wall -I$(BUILD) -o $@ tracer/stub/stub.c -ldl && cp $(BUILD)/stub_gen.c $(BUILD)/stub_gen.c.built; \
	fi

# The Go library links with -Bsymbolic so that its wrapper table points at
# its own wrappers, not at the preload stub's trampolines of the same name,
# and with libunwind (Debian's libunwind-dev; the runtime libunwind8 must be
# installed where traced programs run), which reads the unwind tables of
# call stacks (golib/dt_site.c). The stub loads the library RTLD_LOCAL, so
# libunwind's _Unwind_* never replace the program's own (libgcc_s).
# A machine without it gets it from scripts/deps.sh, as the web target does
# npm.
UNWIND := -lunwind
HAVE_UNWIND := $(wildcard /usr/include/x86_64-linux-gnu/libunwind.h /usr/include/libunwind.h)

.PHONY: unwind
unwind:
	@$(if $(HAVE_UNWIND),true,scripts/deps.sh)
# The Go library's 25 000 relative relocations (pointers in the Go runtime's
# and packages' data, which a shared library must fix up where it is
# loaded) are packed as DT_RELR (20 KB of relocation entries, not 600 KB)
# when the linker and the C library support it (binutils 2.38, glibc
# 2.36): loading the library at a traced process's MPI_Init then takes ~50
# fewer page faults, ~1.2 ms of CPU on this VM (README, "MPI_Init and
# MPI_Finalize"). Elsewhere the flag is left out and RELA is used.
RELR := $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -o /dev/null -Wl,-z,pack-relative-relocs -Wl,--fatal-warnings 2>/dev/null && echo -Wl,-z,pack-relative-relocs)

# The Go runtime inside the traced process must send no signal to its
# threads: by default it preempts a goroutine that runs long (the
# compaction of the trace as the rank ends, a garbage collection's stack
# scan) with SIGURG, and a program that handles SIGURG itself then runs its
# handler on the tracer's threads. PETSc's PetscInitialize installs one that
# reports "Caught signal" and aborts the job. asyncpreemptoff=1, compiled in
# as the runtime's default GODEBUG, leaves preemption to the goroutines'
# own function calls (tracer/README.md, "Signals the tracer sends").
GOSHARED := -buildmode=c-shared -ldflags=-X=runtime.godebugDefault=asyncpreemptoff=1

$(OUT)/libdtpa_openmpi.so: FORCE | gen unwind
	@mkdir -p $(OUT)
	CGO_CFLAGS="$$(mpicc.openmpi -showme:compile)" CGO_LDFLAGS="$$(mpicc.openmpi -showme:link) $(UNWIND) $(RELR) -Wl,-Bsymbolic" \
		$(GO) build $(GOSHARED) -tags dtpa_openmpi -o $@ ./tracer/golib
	@rm -f $(OUT)/libdtpa_openmpi.h

$(OUT)/libdtpa_mpich.so: FORCE | gen unwind
	@mkdir -p $(OUT)
	CGO_CFLAGS="-I/usr/include/x86_64-linux-gnu/mpich $$(mpicc.mpich -show | tr ' ' '\n' | grep '^-I' | tr '\n' ' ')" \
	CGO_LDFLAGS="$$(mpicc.mpich -show | tr ' ' '\n' | grep '^-[Ll]' | tr '\n' ' ') $(UNWIND) $(RELR) -Wl,-Bsymbolic" \
		$(GO) build $(GOSHARED) -tags dtpa_mpich -o $@ ./tracer/golib
	@rm -f $(OUT)/libdtpa_mpich.h

# The C-only libraries (golib/dt_cw.c writes the trace in place of the Go
# writer; the stub loads one under dtrun with DT_CWRITER=1): the same C as
# the Go library's, compiled by the C compiler with cgo's flags, and the
# trace's protobuf messages packed by protobuf-c (Debian's
# protobuf-c-compiler generates them from traceformat/trace.proto;
# libprotobuf-c1 is needed where traced programs run, like libunwind8).
PBC     := $(BUILD)/pbc
CWSRC   := $(filter-out tracer/golib/zz_%,$(wildcard tracer/golib/dt_*.c)) $(PBC)/trace.pb-c.c
CWFLAGS := -O2 -shared -fPIC -fno-omit-frame-pointer -fno-plt -Wall -Wno-unused-variable -Wno-unused-but-set-variable \
	-Wno-deprecated-declarations -Wno-unused-function -Wno-maybe-uninitialized -Wno-format-truncation \
	-DDT_TRACER_VERSION='"$(shell sed -n 's/^const Version = "\(.*\)"/\1/p' internal/version/version.go)"' \
	-Itracer/golib -I$(PBC)
CWLIBS  := -lunwind -lprotobuf-c $(RELR) -Wl,-Bsymbolic

$(PBC)/trace.pb-c.c: traceformat/trace.proto
	@command -v protoc-c >/dev/null && [ -f /usr/include/protobuf-c/protobuf-c.h ] || scripts/deps.sh
	@mkdir -p $(PBC)
	protoc-c --c_out=$(PBC) -Itraceformat traceformat/trace.proto

$(OUT)/libdtpa_openmpi_c.so: $(CWSRC) tracer/golib/zz_openmpi_gen.c tracer/golib/zz_openmpi_fort_gen.c $(wildcard tracer/golib/*.h) | gen unwind
	@mkdir -p $(OUT)
	$(CC) $(CWFLAGS) $$(mpicc.openmpi -showme:compile) -o $@ $(CWSRC) tracer/golib/zz_openmpi_gen.c \
		tracer/golib/zz_openmpi_fort_gen.c $$(mpicc.openmpi -showme:link) $(CWLIBS)

$(OUT)/libdtpa_mpich_c.so: $(CWSRC) tracer/golib/zz_mpich_gen.c tracer/golib/zz_mpich_fort_gen.c $(wildcard tracer/golib/*.h) | gen unwind
	@mkdir -p $(OUT)
	$(CC) $(CWFLAGS) -I/usr/include/x86_64-linux-gnu/mpich $$(mpicc.mpich -show | tr ' ' '\n' | grep '^-I' | tr '\n' ' ') \
		-o $@ $(CWSRC) tracer/golib/zz_mpich_gen.c tracer/golib/zz_mpich_fort_gen.c \
		$$(mpicc.mpich -show | tr ' ' '\n' | grep '^-[Ll]' | tr '\n' ' ') $(CWLIBS)

# The C writer's encoder (tracer/enc): it loads it on its writer thread when
# it first needs one (past DT_DEFER_MB, to count dropped events, to compact
# a trace dtrun will not): a rank that never does starts no Go runtime.
$(OUT)/libdtpa_enc.so: FORCE
	@mkdir -p $(OUT)
	CGO_LDFLAGS="$(RELR)" $(GO) build $(GOSHARED) -o $@ ./tracer/enc
	@rm -f $(OUT)/libdtpa_enc.h

FORCE:
