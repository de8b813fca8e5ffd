#!/bin/sh
# Conformance of the C back end: in-place calls (see test_inplace.py).
exec "$(dirname "$0")/run.sh" test_inplace.py
