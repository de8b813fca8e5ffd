#!/bin/sh
# tests/python/run.sh - the nnk Python package's pytest suite (python/tests)
# and the examples of docs/python.md as doctests, against the build tree's
# package (python/stage).  Exit 77 (skip, said on stderr) when configure
# did not build the package or the interpreter lacks pytest or numpy;
# pytest's "no tests collected" (5) is a failure.
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
exit $rc
