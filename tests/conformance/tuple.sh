#!/bin/sh
# Conformance of the C back end: tuple-state reductions (see test_tuple.py).
exec "$(dirname "$0")/run.sh" test_tuple.py
