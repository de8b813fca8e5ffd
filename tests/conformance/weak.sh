#!/bin/sh
# Conformance of the C back end: weak literals that are not constants (see test_weak.py).
exec "$(dirname "$0")/run.sh" test_weak.py
