#!/bin/sh
# realtraces.sh writes the traces of real MPI programs that the analyzer's
# BenchmarkAnalyzeReal (analyzer/bench_test.go) reads, once per machine:
# each into $DTPA_REAL_TRACES/<name> (default ${TMPDIR:-/tmp}/dtpa-bench-traces),
# skipped when that directory is already complete. Delete a directory to
# have it written again (after a change of the trace format, say).
#
#   stencil     testdata/apps/stencil.c, 4 ranks, 300 000 steps (~6 M calls)
#   stencil32   the same at 32 ranks, 20 000 steps (~3.2 M calls)
#   stencil128  the same at 128 ranks, 20 000 steps (~12.8 M calls): many
#               ranks per analysis process, where dtpa-mpi's processes
#               overlap (docs/performance.md); ~75 s to trace here
#   alltoall    testdata/apps/alltoall.c, 4 ranks, 100 000 steps (~3.2 M calls)
#   hpcc        Debian's hpcc, 4 ranks, testdata/apps/hpccinf.txt with HPL's
#               N = 1000 as e2e BenchmarkHPCC runs it
#   lammps      Debian's lmp, 4 ranks, testdata/apps/in.melt run for 5000 steps
#
# Programs run traced by bin/dtrun under Open MPI (make build first), under
# the machine's MPI lock /tmp/dtpa-mpi.lock. A program that is not installed
# is left out with a note; without mpicc.openmpi nothing is written and the
# benchmarks skip.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${DTPA_REAL_TRACES:-${TMPDIR:-/tmp}/dtpa-bench-traces}
apps=$root/testdata/apps
dtrun=$root/bin/dtrun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if ! command -v mpicc.openmpi >/dev/null || ! command -v mpirun.openmpi >/dev/null; then
	echo "realtraces: Open MPI not installed (scripts/deps.sh): no real traces written" >&2
	exit 0
fi
if [ ! -x "$dtrun" ]; then
	echo "realtraces: $dtrun missing: run make build first" >&2
	exit 1
fi
mkdir -p "$out"

# trace NAME RANKS EXE ARGS...: runs EXE traced in a fresh directory that
# becomes $out/NAME when the run succeeded. Input files are copied into the
# directory by the caller's $setup command, run there first.
trace() {
	name=$1 np=$2
	shift 2
	dir=$out/$name
	if [ -f "$dir/COMPLETE" ]; then
		return 0
	fi
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp"
	(cd "$dir.tmp" && eval "${setup:-:}")
	echo "realtraces: tracing $name ($np ranks) into $dir" >&2
	start=$(date +%s)
	if ! (cd "$dir.tmp" && flock /tmp/dtpa-mpi.lock "$dtrun" --mpirun mpirun.openmpi -np "$np" --oversubscribe "$@" >run.log 2>&1); then
		echo "realtraces: $name failed; its output:" >&2
		tail -20 "$dir.tmp/run.log" >&2
		exit 1
	fi
	echo "realtraces: $name traced in $(($(date +%s) - start)) s" >&2
	# Only the traces: hpcc and LAMMPS also leave their own outputs.
	{
		echo "program: $*"
		echo "ranks: $np"
		"$dtrun" --version 2>&1 || true
		date -u
	} >"$dir.tmp/COMPLETE"
	mv "$dir.tmp" "$dir"
}

bin=$out/bin
mkdir -p "$bin"
for p in stencil alltoall; do
	if [ ! -x "$bin/$p" ] || [ "$apps/$p.c" -nt "$bin/$p" ]; then
		mpicc.openmpi -O2 -g -o "$bin/$p" "$apps/$p.c"
	fi
done

setup= trace stencil 4 "$bin/stencil" 300000
setup= trace stencil32 32 "$bin/stencil" 20000
setup= trace stencil128 128 "$bin/stencil" 20000
setup= trace alltoall 4 "$bin/alltoall" 100000
if command -v hpcc >/dev/null; then
	setup="sed 's/^200  *Ns/1000         Ns/' '$apps/hpccinf.txt' >hpccinf.txt" trace hpcc 4 "$(command -v hpcc)"
else
	echo "realtraces: hpcc not installed (apt-get install --no-install-recommends hpcc): left out" >&2
fi
if command -v lmp >/dev/null; then
	setup="sed 's/^run .*/run             5000/' '$apps/in.melt' >in.melt" \
		trace lammps 4 "$(command -v lmp)" -in in.melt -log none -echo none
else
	echo "realtraces: lmp not installed (apt-get install --no-install-recommends lammps): left out" >&2
fi
