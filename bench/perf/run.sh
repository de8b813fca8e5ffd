#!/bin/sh
# run.sh [BUILDDIR] [run.py options] - the CPU performance harness
# (docs/performance.md, "CPU: nnk against the machine's limit and the
# fused-kernel compilers"); `make bench-perf` runs it from a build directory.
#
#  1. makes the peers' virtualenv when it is missing (BENCH_VENV, default
#     BUILDDIR/bench/perf-venv; about 3 GB): /usr/bin/python3 -m venv, then
#     from PyPI numpy, numexpr, numba, jax, jaxlib, pytest (tests/python/run.sh
#     runs the torch interop tests with it) and torch (PyPI's Linux
#     torch is the CUDA build: installed with --no-deps, plus its pure-Python
#     dependencies and the nvidia-* packages `import torch` needs; it runs
#     on the CPU without a GPU).  BENCH_NO_INSTALL=1 skips this: the peers
#     the python lacks are left out;
#  2. builds the C side, bench/perf/perf_bench.c, against BUILDDIR's libnnk
#     with $CC -O3 -march=native -ffp-contract=off -fopenmp (the OpenMP loops
#     are the limit), linking perf.nnk compiled ahead of time by BUILDDIR's
#     nnkc -c (the portable flags of AOT objects);
#  3. runs run.py, which writes bench/perf/results.json, bench/perf/results.md
#     and the table in docs/performance.md (BENCH_DOCS=0: not the docs).
# Environment: CC (default cc), BENCH_REPS (default 7), BENCH_VENV,
# BENCH_TORCH (default 2.15.0: the torch version to install).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)
builddir=$(cd "${1:-.}" && pwd)
[ $# -gt 0 ] && shift
CC=${CC:-cc}
[ -x "$builddir/nnkc" ] || { echo "run.sh: no nnkc in $builddir (build first)" >&2; exit 1; }
work=$builddir/bench/perf-work
mkdir -p "$work"
venv=${BENCH_VENV:-$builddir/bench/perf-venv}
py=$venv/bin/python

if [ ! -x "$py" ] && [ "${BENCH_NO_INSTALL:-0}" != 1 ]; then
    echo "run.sh: making the peers' virtualenv in $venv (from PyPI; about 3 GB)" >&2
    /usr/bin/python3 -m venv "$venv"
    pip="$venv/bin/python -m pip install -q"
    $pip --upgrade pip
    $pip numpy numexpr numba jax jaxlib pytest
    $pip --no-deps "torch==${BENCH_TORCH:-2.15.0}" || $pip --no-deps 'torch<3'
    $pip filelock typing-extensions sympy networkx jinja2 fsspec 'setuptools>=77'
    # the CUDA libraries the wheel loads at import (it runs on the CPU)
    $pip nvidia-cufile nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13 ||
        echo "run.sh: some nvidia-* packages did not install; torch may be left out" >&2
fi
[ -x "$py" ] || py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "run.sh: $py has no numpy" >&2; exit 1; }

# the kernels ahead of time, with nnkc's portable flags
"$builddir/nnkc" -c --no-cuda "$here/perf.nnk" -o "$work/perf_aot.o"
$CC -std=gnu11 -O3 -march=native -ffp-contract=off -fopenmp -DPERF_AOT -I"$top_srcdir/runtime/include" \
    "$here/perf_bench.c" "$work/perf_aot.o" -o "$work/perf_bench" \
    -L"$builddir/.libs" -Wl,-rpath,"$builddir/.libs" -lnnk -lm
# OpenMP threads (torch's, Inductor's, the limit loops') sleep as soon as a
# parallel region ends instead of spinning, so they take no core from
# whatever runs next in the interleaved schedule (another process included).
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export OMP_WAIT_POLICY
docs=
[ "${BENCH_DOCS:-1}" = 1 ] && docs="--docs=$top_srcdir/docs/performance.md"
exec "$py" "$here/run.py" --bench "$work/perf_bench" --python "$py" --cc "$CC" $docs "$@"
