# dtpa build. `make demo` traces a sample program and prints its report;
# `make test` installs what is missing, builds, runs `make check` and every
# test.
GO      ?= go
# OpenMPI refuses to run as root without these; CI and the dev machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

.PHONY: all build web bench-view test check check-tidy check-proto staticcheck race bench pgo fuzz proto deps test-deps demo clean tracer

all: build

deps:
	@scripts/deps.sh

# deps plus the third-party MPI programs the end-to-end tests trace.
test-deps:
	@scripts/deps.sh --test

# Go commands into bin/, tracer libraries into lib/. urfave_cli_no_docs
# leaves out urfave/cli's man-page and Markdown generation, which nothing
# here uses: its Markdown library compiles regexps and fills maps at every
# start of dtpa (~1.2 M instructions, 0.6 % of analysing hpcc's trace).
CMDTAGS = urfave_cli_no_docs
build: web
	@mkdir -p bin lib
	$(GO) build -tags $(CMDTAGS) -o bin/ ./cmd/...
	@# dtpa-view: dtpa with the web server of `dtpa view`, which dtpa runs
	@# in its place; dtpa itself starts faster without it (cmd/dtpa/view_exec.go).
	$(GO) build -tags view,$(CMDTAGS) -o bin/dtpa-view ./cmd/dtpa
	@for t in dtcxx dtf90 dtf77; do ln -sf dtcc bin/$$t; done
	@# dtpa-mpi: dtpa with the analysis as an MPI job, against Open MPI.
	@if command -v mpicc.openmpi >/dev/null; then \
		echo "CC=mpicc.openmpi $(GO) build -tags mpi,$(CMDTAGS) -o bin/dtpa-mpi ./cmd/dtpa"; \
		CC=mpicc.openmpi $(GO) build -tags mpi,$(CMDTAGS) -o bin/dtpa-mpi ./cmd/dtpa; fi
	@# The Go commands' pages read back into the page cache in 2 MB folios
	@# (internal/hugetext): as written they are cached mostly in 4 KB, and
	@# each start then maps ~10 MB of code and tables a 4 KB page at a time.
	@$(GO) run ./internal/hugetext/pagein $$(ls bin/dtpa bin/dtpa-view bin/dtpa-mpi bin/dtrun bin/dtpar bin/dtcc 2>/dev/null)
	@if [ -f tracer/tracer.mk ]; then $(MAKE) --no-print-directory -f tracer/tracer.mk; fi

# The HTML report's chart library: npm ci installs what web/package-lock.json
# pins, and its single-file build is copied where report/html embeds it;
# go generate writes its size and hash into report/html/chartsum.go (the
# same as committed unless the pinned version changed).
CHARTJS = report/html/vendor/chart.umd.min.js
web: $(CHARTJS)
$(CHARTJS): web/package.json web/package-lock.json
	@command -v npm >/dev/null || scripts/deps.sh
	cd web && npm ci --ignore-scripts --no-audit --no-fund
	cp web/node_modules/chart.js/dist/chart.umd.min.js $@
	$(GO) generate ./report/html

# -p 1: one package at a time. Several packages launch MPI jobs (4 ranks on
# 2 cores each); run side by side they starved each other's clock-sync
# ping-pongs and the ground truth's sleeps on CI (1.5 min either way).
test: test-deps build check
	$(GO) test -p 1 -count=1 -timeout 30m ./...
	$(GO) test -count=1 -tags view,$(CMDTAGS) -run View ./cmd/dtpa/

# What review would otherwise have to catch: vet and staticcheck findings,
# data races in the analyzer's lock-free replay and in the format code,
# generated code that no longer matches trace.proto, an untidy go.mod.
check: check-tidy check-proto staticcheck race
	$(GO) vet ./...

check-tidy:
	$(GO) mod tidy -diff
	$(GO) -C tools mod tidy -diff

# Regenerates into a scratch directory and compares, so that the check
# neither rewrites the tree nor depends on what is committed.
check-proto:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		$(MAKE) --no-print-directory proto PROTO_OUT="$$tmp" && \
		if ! diff -ru traceformat/tracepb "$$tmp"; then \
			echo "traceformat/tracepb is not what trace.proto generates: run make proto"; exit 1; fi

# staticcheck's version is pinned by tools/go.mod, a module of its own so
# that the linter's requirements never move the product's dependencies.
staticcheck: build
	$(GO) build -C tools -o $(CURDIR)/bin/staticcheck honnef.co/go/tools/cmd/staticcheck
	bin/staticcheck ./...
	bin/staticcheck -tags view ./cmd/dtpa
	@if command -v mpicc.openmpi >/dev/null; then \
		echo "CC=mpicc.openmpi bin/staticcheck -tags mpi ./cmd/dtpa ./internal/mpi"; \
		CC=mpicc.openmpi bin/staticcheck -tags mpi ./cmd/dtpa ./internal/mpi; fi

# The analyzer's replay (exchange, inboxes, scheduler) runs with more
# workers than CI has cores; the format packages share decoders.
race:
	$(GO) test -race -count=1 -cpu 4 ./analyzer/
	$(GO) test -race -count=1 ./traceformat/... ./tracer/records/

# The analyzer's benchmarks on real programs read traces written once per
# machine by scripts/realtraces.sh (into $$TMPDIR/dtpa-bench-traces). Timing
# runs under the machine's benchmark lock so that two benchmarks do not
# share the cores.
bench: deps build
	scripts/realtraces.sh
	flock /tmp/dtpa-bench.lock $(GO) test -p 1 -run '^$$' -bench . -benchtime 2s ./... | tee bench.txt

# cmd/dtpa/default.pgo, the profile go build optimizes dtpa with, written
# again from the real traces (scripts/pgo.sh; commit it when it changed).
pgo: deps build
	flock /tmp/dtpa-bench.lock scripts/pgo.sh

# Each fuzz target for FUZZTIME. Minimizing is capped: with the default (up
# to 60 s per new input) FuzzAnalyze, whose inputs are whole trace files,
# spends nearly all its time minimizing and executes a few inputs a minute.
FUZZTIME ?= 60s
FUZZ_TARGETS = traceformat:FuzzReader traceformat:FuzzRoundTrip traceformat:FuzzBatchDecoders \
	analyzer:FuzzAnalyze analyzer:FuzzUnmarshalResult tracer/records:FuzzCompact
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t#*:}; \
		echo "== $$pkg $$fn"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10x ./$$pkg/; \
	done

# dtpa view and the static page on a 100 M-call run of 4 ranks, then the
# static page on 10 M calls (report/view BenchmarkView; traces kept in
# /tmp/dtpa-view-bench).
bench-view: build
	DTPA_VIEW_DIR=/tmp/dtpa-view-bench DTPA_VIEW_EVENTS=100000000 DTPA_VIEW_STATIC=0 \
		$(GO) test -run '^$$' -bench BenchmarkView -benchtime 1x -timeout 60m ./report/view/ | tee bench-view.txt
	DTPA_VIEW_DIR=/tmp/dtpa-view-bench DTPA_VIEW_EVENTS=10000000 \
		$(GO) test -run '^$$' -bench BenchmarkView -benchtime 1x -timeout 60m ./report/view/ | tee -a bench-view.txt

# protoc-gen-go is built at the version go.mod requires of the protobuf
# runtime, so generator and runtime always agree.
PROTO_OUT ?= traceformat/tracepb
proto:
	@command -v protoc >/dev/null || scripts/deps.sh
	@mkdir -p bin
	$(GO) build -o bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	protoc --plugin=protoc-gen-go=bin/protoc-gen-go --proto_path=traceformat --go_out=$(PROTO_OUT) \
		--go_opt=paths=source_relative trace.proto

demo: deps build
	@scripts/demo.sh

clean:
	rm -rf bin lib bench.txt tracer/build
