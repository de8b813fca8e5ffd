#!/bin/sh
# Conformance of the C back end: half (see test_half.py).
exec "$(dirname "$0")/run.sh" test_half.py
