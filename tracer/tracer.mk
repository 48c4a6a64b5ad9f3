# Builds the tracer into lib/ (invoked by `make build` from the repository root):
#   lib/libdtpa_preload.so   C-only preload stub (any MPI)
#   lib/libdtpa_openmpi.so   the tracer for the Open MPI ABI (C: wrappers, buffers, the writer)
#   lib/libdtpa_mpich.so     the tracer for the MPICH ABI
#   lib/libdtpa_enc.so       Go c-shared encoder, which the writer loads when it needs one
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
LIBS += $(OUT)/libdtpa_openmpi.so
endif
ifneq ($(HAVE_MPICH),)
LIBS += $(OUT)/libdtpa_mpich.so
endif
ifneq ($(HAVE_OMPI)$(HAVE_MPICH),)
LIBS += $(OUT)/libdtpa_enc.so
endif

.PHONY: all FORCE
all: $(LIBS)

$(GEN): $(wildcard tracer/gen/*.go traceformat/mpifunc/*.go)
	@mkdir -p $(BUILD)
	$(GO) build -o $@ ./tracer/gen

# Generation runs every time (cheap) but only touches files whose content
# changed, so the targets below rebuild only when needed.
$(BUILD)/stub_gen.c tracer/rt/zz_openmpi_gen.c tracer/rt/zz_mpich_gen.c \
	tracer/rt/zz_openmpi_fort_gen.c tracer/rt/zz_mpich_fort_gen.c: FORCE | $(GEN)
	@true

gen: $(GEN)
	@$(GEN) stub -cc mpicc.openmpi -fc $(FC_OMPI) -cc mpicc.mpich -fc $(FC_MPICH) -o $(BUILD)/stub_gen.c
	@if [ -n "$(HAVE_OMPI)" ]; then $(GEN) wrappers -cc mpicc.openmpi -fc $(FC_OMPI) \
		-o tracer/rt/zz_openmpi_gen.c -fo tracer/rt/zz_openmpi_fort_gen.c; fi
	@if [ -n "$(HAVE_MPICH)" ]; then $(GEN) wrappers -cc mpicc.mpich -fc $(FC_MPICH) \
		-o tracer/rt/zz_mpich_gen.c -fo tracer/rt/zz_mpich_fort_gen.c; fi

$(OUT)/libdtpa_preload.so: tracer/stub/stub.c tracer/rt/dt_stamp.h tracer/rt/dt_initmark.h | gen
	@mkdir -p $(OUT)
	@if ! cmp -s $(BUILD)/stub_gen.c $(BUILD)/stub_gen.c.built 2>/dev/null || [ ! -f $@ ] || [ tracer/stub/stub.c -nt $@ ] || [ tracer/rt/dt_stamp.h -nt $@ ] || [ tracer/rt/dt_initmark.h -nt $@ ]; then \
		echo "CC $@"; \
		$(CC) -O2 -shared -fPIC -Wall -I$(BUILD) -o $@ tracer/stub/stub.c -ldl && cp $(BUILD)/stub_gen.c $(BUILD)/stub_gen.c.built; \
	fi

# The tracer links with -Bsymbolic so that its wrapper table points at
# its own wrappers, not at the preload stub's trampolines of the same name,
# and with libunwind (Debian's libunwind-dev; the runtime libunwind8 must be
# installed where traced programs run), which reads the unwind tables of
# call stacks (rt/dt_site.c). The stub loads the library RTLD_LOCAL, so
# libunwind's _Unwind_* never replace the program's own (libgcc_s).
# A machine without it gets it from scripts/deps.sh, as the web target does
# npm.
UNWIND := -lunwind
HAVE_UNWIND := $(wildcard /usr/include/x86_64-linux-gnu/libunwind.h /usr/include/libunwind.h)

.PHONY: unwind
unwind:
	@$(if $(HAVE_UNWIND),true,scripts/deps.sh)
# The encoder's 25 000 relative relocations (pointers in the Go runtime's
# and packages' data, which a shared library must fix up where it is
# loaded) are packed as DT_RELR (20 KB of relocation entries, not 600 KB)
# when the linker and the C library support it (binutils 2.38, glibc
# 2.36): loading it then takes ~50 fewer page faults, ~1.2 ms of CPU on
# this VM (README, "MPI_Init and MPI_Finalize"). Elsewhere the flag is
# left out and RELA is used.
RELR := $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -o /dev/null -Wl,-z,pack-relative-relocs -Wl,--fatal-warnings 2>/dev/null && echo -Wl,-z,pack-relative-relocs)

# The Go runtime inside the traced process must send no signal to its
# threads: by default it preempts a goroutine that runs long (the
# compaction of the trace as the rank ends, a garbage collection's stack
# scan) with SIGURG, and a program that handles SIGURG itself then runs its
# handler on the tracer's threads. PETSc's PetscInitialize installs one that
# reports "Caught signal" and aborts the job. asyncpreemptoff=1, compiled in
# as the runtime's default GODEBUG, leaves preemption to the goroutines'
# own function calls (tracer/README.md, "Signals the tracer sends").
GOLDFLAGS := -X=runtime.godebugDefault=asyncpreemptoff=1
GOSHARED  := -buildmode=c-shared -ldflags=$(GOLDFLAGS)

# The tracer (rt/dt_*.c and the generated wrappers: wrappers, buffers,
# spill slots, clock, stacks, signals, Fortran, Python, and the writer,
# rt/dt_cw.c) is compiled here, once per MPI, into tracer/build/<impl>/,
# and linked with the trace's protobuf messages packed by protobuf-c
# (Debian's protobuf-c-compiler generates them from traceformat/trace.proto;
# libprotobuf-c1 is needed where traced programs run, like libunwind8).
PBC     := $(BUILD)/pbc
RTSRC   := $(filter-out tracer/rt/dt_cw.c,$(wildcard tracer/rt/dt_*.c))
RTFLAGS := -O2 -fPIC -fno-omit-frame-pointer -fno-plt -Wall -Wno-unused-variable -Wno-unused-but-set-variable \
	-Wno-deprecated-declarations -Wno-unused-function -Wno-maybe-uninitialized -Wno-format-truncation \
	-DDT_TRACER_VERSION='"$(shell sed -n 's/^const Version = "\(.*\)"/\1/p' internal/version/version.go)"' \
	-Itracer/rt -I$(PBC)
OMPI_CFLAGS   = $(shell mpicc.openmpi -showme:compile)
OMPI_LDFLAGS  = $(shell mpicc.openmpi -showme:link)
MPICH_CFLAGS  = -I/usr/include/x86_64-linux-gnu/mpich $(shell mpicc.mpich -show | tr ' ' '\n' | grep '^-I' | tr '\n' ' ')
MPICH_LDFLAGS = $(shell mpicc.mpich -show | tr ' ' '\n' | grep '^-[Ll]' | tr '\n' ' ')
OMPI_RT  := $(patsubst tracer/rt/%.c,$(BUILD)/openmpi/%.o,$(RTSRC) tracer/rt/zz_openmpi_gen.c tracer/rt/zz_openmpi_fort_gen.c)
MPICH_RT := $(patsubst tracer/rt/%.c,$(BUILD)/mpich/%.o,$(RTSRC) tracer/rt/zz_mpich_gen.c tracer/rt/zz_mpich_fort_gen.c)
RTHDR    := $(wildcard tracer/rt/*.h)

$(BUILD)/openmpi/%.o: tracer/rt/%.c $(RTHDR) | gen unwind
	@mkdir -p $(@D)
	$(CC) $(RTFLAGS) $(OMPI_CFLAGS) -c -o $@ $<

$(BUILD)/mpich/%.o: tracer/rt/%.c $(RTHDR) | gen unwind
	@mkdir -p $(@D)
	$(CC) $(RTFLAGS) $(MPICH_CFLAGS) -c -o $@ $<

$(BUILD)/openmpi/dt_cw.o $(BUILD)/mpich/dt_cw.o: $(PBC)/trace.pb-c.c

$(PBC)/trace.pb-c.c: traceformat/trace.proto
	@command -v protoc-c >/dev/null && [ -f /usr/include/protobuf-c/protobuf-c.h ] || scripts/deps.sh
	@mkdir -p $(PBC)
	protoc-c --c_out=$(PBC) -Itraceformat traceformat/trace.proto

$(PBC)/trace.pb-c.o: $(PBC)/trace.pb-c.c
	$(CC) $(RTFLAGS) -c -o $@ $<

CWLIBS := $(UNWIND) -lprotobuf-c $(RELR) -Wl,-Bsymbolic

$(OUT)/libdtpa_openmpi.so: $(OMPI_RT) $(BUILD)/openmpi/dt_cw.o $(PBC)/trace.pb-c.o
	@mkdir -p $(OUT)
	$(CC) -shared -o $@ $^ $(OMPI_LDFLAGS) $(CWLIBS)

$(OUT)/libdtpa_mpich.so: $(MPICH_RT) $(BUILD)/mpich/dt_cw.o $(PBC)/trace.pb-c.o
	@mkdir -p $(OUT)
	$(CC) -shared -o $@ $^ $(MPICH_LDFLAGS) $(CWLIBS)

# The writer's encoder (tracer/enc): it loads it on its writer thread when
# it first needs one (past DT_DEFER_MB, to count dropped events, to compact
# a trace dtrun will not; in MPI_Init to read tracer.par without dtrun): a
# rank that never does starts no Go runtime.
$(OUT)/libdtpa_enc.so: FORCE
	@mkdir -p $(OUT)
	CGO_LDFLAGS="$(RELR)" $(GO) build $(GOSHARED) -o $@ ./tracer/enc
	@rm -f $(OUT)/libdtpa_enc.h

FORCE:
