#!/bin/sh
# tests/python/run.sh - the nnk Python package's pytest suite (python/tests)
# and the examples of docs/python.md as doctests, against the build tree's
# package (python/stage).  Exit 77 (skip, said on stderr) when configure
# did not build the package or the interpreter lacks pytest or numpy;
# pytest's "no tests collected" (5) is a failure.
#
# When that interpreter has no torch, the DLPack interop with torch
# (python/tests/test_torch.py) runs again with NNK_TORCH_PYTHON: by default
# the virtualenv of make bench-perf (BENCH_VENV, else
# BUILDDIR/bench/perf-venv) when it has torch, pytest and numpy and is the
# same Python version as the one the package is built for (its ABI).  It
# adds about 10 s (torch's import).  NNK_TORCH_PYTHON=none turns it off.
#
# Under AddressSanitizer (configure --enable-sanitizers) the interpreter is
# not instrumented, so libasan must be the first library loaded: the script
# preloads the compiler's libasan and turns off leak detection (CPython
# keeps its objects to the end).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
PY=${PYTHON:-}
stage=$top_builddir/python/stage
if [ -z "$PY" ] || [ "$PY" = : ] || [ ! -e "$stage/nnk/_nnk.so" ]; then
    echo "SKIP: the Python package is not built (configure found no Python.h, or --disable-python)" >&2
    exit 77
fi
if ! "$PY" -c 'import pytest, numpy' 2>/dev/null; then
    echo "SKIP: $PY has no pytest or numpy (Debian: apt-get install python3-pytest python3-numpy)" >&2
    exit 77
fi
case "${SAN_FLAGS:-}" in
*sanitize=address*)
    libasan=$(${CC:-cc} -print-file-name=libasan.so)
    case "$libasan" in
    /*) ;;
    *)  echo "SKIP: sanitizer build, but ${CC:-cc} does not know where libasan.so is" >&2; exit 77 ;;
    esac
    LD_PRELOAD=$libasan${LD_PRELOAD:+:$LD_PRELOAD}
    ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
    export LD_PRELOAD ASAN_OPTIONS
    NNK_PY_SANITIZED=1
    export NNK_PY_SANITIZED
    ;;
esac
# a cache of the build tree: the kernels of the suite compile once
NNK_CACHE_DIR=$top_builddir/python/test-cache
PYTHONPATH=$stage${PYTHONPATH:+:$PYTHONPATH}
PYTHONDONTWRITEBYTECODE=1
export NNK_CACHE_DIR PYTHONPATH PYTHONDONTWRITEBYTECODE
cd "$top_builddir" || exit 99
"$PY" -m pytest -q -rs -p no:cacheprovider --doctest-glob=python.md -o doctest_optionflags=ELLIPSIS \
    "$top_srcdir/python/tests" "$top_srcdir/docs/python.md"
rc=$?
if [ $rc = 5 ]; then
    echo "FAIL: pytest collected no tests" >&2
    exit 1
fi
if [ $rc = 0 ] && ! "$PY" -c 'import torch' 2>/dev/null; then
    venv=${BENCH_VENV:-$top_builddir/bench/perf-venv}
    TPY=${NNK_TORCH_PYTHON:-$venv/bin/python}
    ver='import sys; print(sys.version_info[:2])'
    if [ "$TPY" = none ] || [ ! -x "$TPY" ]; then
        echo "run.sh: no python with torch (NNK_TORCH_PYTHON, or make bench-perf's virtualenv): torch interop untested" >&2
    elif ! "$TPY" -c 'import torch, pytest, numpy' 2>/dev/null; then
        echo "run.sh: $TPY lacks torch, pytest or numpy: torch interop untested" >&2
    elif [ "$("$TPY" -c "$ver")" != "$("$PY" -c "$ver")" ]; then
        echo "run.sh: $TPY is another Python version than $PY: torch interop untested" >&2
    else
        echo "run.sh: the torch interop with $TPY" >&2
        "$TPY" -m pytest -q -rs -p no:cacheprovider "$top_srcdir/python/tests/test_torch.py"
        rc=$?
        [ $rc = 5 ] && { echo "FAIL: pytest collected no torch tests" >&2; rc=1; }
    fi
fi
exit $rc
