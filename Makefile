# dtpa build. `make demo` traces a sample program and prints its report;
# `make test` installs what is missing, builds and runs every test.
GO      ?= go
GOBIN   := $(shell $(GO) env GOPATH)/bin
# OpenMPI refuses to run as root without these; CI and the dev machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

.PHONY: all build test bench proto deps test-deps demo clean tracer

all: build

deps:
	@scripts/deps.sh

# deps plus the third-party MPI programs the end-to-end tests trace.
test-deps:
	@scripts/deps.sh --test

# Go commands into bin/, tracer libraries into lib/.
build:
	@mkdir -p bin lib
	$(GO) build -o bin/ ./cmd/...
	@for t in dtcxx dtf90 dtf77; do ln -sf dtcc bin/$$t; done
	@if [ -f tracer/tracer.mk ]; then $(MAKE) --no-print-directory -f tracer/tracer.mk; fi

# -p 1: one package at a time. Several packages launch MPI jobs (4 ranks on
# 2 cores each); run side by side they starved each other's clock-sync
# ping-pongs and the ground truth's sleeps on CI (1.5 min either way).
test: test-deps build
	$(GO) vet ./...
	$(GO) test -p 1 -count=1 -timeout 30m ./...

bench: deps build
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 2s ./... | tee bench.txt

proto:
	@command -v protoc >/dev/null || scripts/deps.sh
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	PATH="$(GOBIN):$$PATH" protoc --proto_path=traceformat --go_out=traceformat/tracepb \
		--go_opt=paths=source_relative trace.proto

demo: deps build
	@scripts/demo.sh

clean:
	rm -rf bin lib bench.txt
