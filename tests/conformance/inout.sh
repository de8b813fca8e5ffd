#!/bin/sh
# Conformance of the C back end: in-out parameters (see test_inout.py).
exec "$(dirname "$0")/run.sh" test_inout.py
