#!/usr/bin/env bash
# make demo: build the sample solver, trace it at 4 ranks with dtrun, print
# dtpa's report and write the HTML page next to it. Runs in a scratch
# directory under /tmp.
set -euo pipefail
# CI and the development machines run as root, which OpenMPI refuses without these.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/dtpa-demo.XXXXXX)
cd "$work"
echo "== building testdata/apps/solver.c in $work"
# Compiled from the repository root with the root mapped to ".", so that the
# report names testdata/apps/solver.c wherever the checkout is.
(cd "$root" && mpicc.openmpi -g -O2 -fdebug-prefix-map="$root"=. -o "$work/solver" testdata/apps/solver.c)
echo "== tracing: dtrun -np 4 --oversubscribe ./solver"
"$root/bin/dtrun" -np 4 --oversubscribe ./solver
ls -l solver.*.trc
echo "== analysing: dtpa solver"
"$root/bin/dtpa" solver | tee solver.trpa
echo "== report kept in $work/solver.trpa"
"$root/bin/dtpa" --html -o solver.html solver
echo "== HTML report (open it in a browser): $work/solver.html"
