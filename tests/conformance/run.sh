#!/bin/sh
# run.sh TEST.py - runs one part of the numeric conformance suite of the C
# back end (tests/conformance/README) with the python3 that has numpy.
# `make check` exports top_srcdir, top_builddir and PYTHON_NUMPY
# (AM_TESTS_ENVIRONMENT); exit 77 (skipped) when there is no numpy.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
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
script=$1
shift
exec "$PYTHON_NUMPY" "$here/$script" "$@"
