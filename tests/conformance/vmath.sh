#!/bin/sh
# Conformance of the C back end: vector math (see test_vmath.py).
exec "$(dirname "$0")/run.sh" test_vmath.py
