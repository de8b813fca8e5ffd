#!/bin/sh
# Conformance of the C back end: reduction (see test_reduction.py).
exec "$(dirname "$0")/run.sh" test_reduction.py
