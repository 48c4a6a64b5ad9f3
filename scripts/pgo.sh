#!/bin/sh
# pgo.sh writes cmd/dtpa/default.pgo, the CPU profile that `go build`
# uses for profile-guided optimization of dtpa and dtpa-mpi (-pgo=auto:
# the compiler inlines and devirtualizes along the profile's hot calls).
# The profile is of the whole dtpa command (BenchmarkDtpaReal: `dtpa
# --json` and `dtpa` on the traces of real programs that
# scripts/realtraces.sh writes), so that the build is optimized for the
# traces users have rather than a synthetic one. Run it again when the
# analyzer's hot paths change much: a stale profile still builds (the
# compiler ignores what no longer matches) but guides less.
# docs/performance.md ("Profile-guided optimization") has the figures.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/realtraces.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The test binary is built with the current default.pgo, if any: Go's
# PGO is meant to take profiles of PGO-built code (it does not swing
# between optimizing and not from one profile to the next).
go test -run '^$' -bench 'DtpaReal' -benchtime 3x -cpuprofile "$tmp/cpu.pprof" -o "$tmp/dtpa.test" ./cmd/dtpa/
cp "$tmp/cpu.pprof" cmd/dtpa/default.pgo
echo "pgo: wrote cmd/dtpa/default.pgo ($(wc -c < cmd/dtpa/default.pgo) bytes)" >&2
