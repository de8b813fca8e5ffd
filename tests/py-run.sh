#!/bin/sh
# py-run.sh TEST.py [ARGS]: the log compiler of every .py file in TESTS
# (Makefile.am: TEST_EXTENSIONS, PY_LOG_COMPILER).  It runs the test with the
# python3 that has numpy (configure's PYTHON_NUMPY, exported by make check),
# or skips it (exit 77) when there is none.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$(pwd)}"
if [ -z "$PYTHON_NUMPY" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import numpy' >/dev/null 2>&1; then PYTHON_NUMPY=$p; break; fi
    done
fi
if [ -z "$PYTHON_NUMPY" ] || ! "$PYTHON_NUMPY" -c 'import numpy' >/dev/null 2>&1; then
    echo "SKIP: no python3 with numpy (configure with PYTHON_NUMPY=/path/to/python3)"
    exit 77
fi
NNKCONF_WORK=${NNKCONF_WORK:-$top_builddir/tests/conformance/work}
export top_srcdir top_builddir NNKCONF_WORK
exec "$PYTHON_NUMPY" "$@"
