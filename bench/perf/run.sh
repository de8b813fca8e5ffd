#!/bin/sh
# run.sh [BUILDDIR] [run.py options] - the CPU performance harness
# (docs/performance.md, "CPU: nnk against the machine's limit, numpy,
# numexpr and torch"); `make bench-perf` runs it from a build directory.
#
#  1. installs the Python peers from Debian when Debian's python3 lacks them
#     (python3-numpy python3-numexpr python3-torch; needs root and apt-get;
#     BENCH_NO_INSTALL=1 skips this, and a missing peer is left out);
#  2. builds the C side, bench/perf/perf_bench.c, against BUILDDIR's libnnk
#     with $CC -O3 -march=native -ffp-contract=off -fopenmp (the OpenMP loops
#     are the limit),
#     linking perf.nnk compiled ahead of time by BUILDDIR's nnkc -c (the
#     portable flags of AOT objects);
#  3. runs run.py with Debian's python3, which writes bench/perf/results.json,
#     bench/perf/results.md and the table in docs/performance.md
#     (BENCH_DOCS=0: not the docs).
# Environment: CC (default cc), BENCH_REPS (default 7), PYTHON (default
# /usr/bin/python3), NNK_NUM_THREADS (nnk's threads; peers get the cores).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
builddir=$(cd "${1:-.}" && pwd)
[ $# -gt 0 ] && shift
CC=${CC:-cc}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
[ -x "$builddir/nnkc" ] || { echo "run.sh: no nnkc in $builddir (build first)" >&2; exit 1; }
work=$builddir/bench/perf-work
mkdir -p "$work"

missing=
"$PY" -c 'import numpy' 2>/dev/null || missing="$missing python3-numpy"
"$PY" -c 'import numexpr' 2>/dev/null || missing="$missing python3-numexpr"
"$PY" -c 'import torch' 2>/dev/null || missing="$missing python3-torch"
if [ -n "$missing" ] && [ "${BENCH_NO_INSTALL:-0}" != 1 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "run.sh: installing$missing" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2 ||
            { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2; } ||
            echo "run.sh: could not install$missing; those peers are left out" >&2
    else
        echo "run.sh: missing$missing (apt-get install them as root); those peers are left out" >&2
    fi
fi
"$PY" -c 'import numpy' 2>/dev/null || { echo "run.sh: $PY has no numpy" >&2; exit 1; }

# the kernels ahead of time, with nnkc's portable flags
"$builddir/nnkc" -c --no-cuda "$here/perf.nnk" -o "$work/perf_aot.o"
$CC -std=gnu11 -O3 -march=native -ffp-contract=off -fopenmp -DPERF_AOT -I"$top_srcdir/runtime/include" \
    "$here/perf_bench.c" "$work/perf_aot.o" -o "$work/perf_bench" \
    -L"$builddir/.libs" -Wl,-rpath,"$builddir/.libs" -lnnk -lm
# OpenMP threads (torch's, the limit loops') sleep as soon as a parallel
# region ends instead of spinning, so they take no core from whatever runs
# next in the interleaved schedule (the other process included).
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export OMP_WAIT_POLICY
docs=
[ "${BENCH_DOCS:-1}" = 1 ] && docs="--docs=$top_srcdir/docs/performance.md"
exec "$PY" "$here/run.py" --bench "$work/perf_bench" --cc "$CC" $docs "$@"
