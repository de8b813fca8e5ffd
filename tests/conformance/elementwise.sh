#!/bin/sh
# Conformance of the C back end: elementwise (see test_elementwise.py).
exec "$(dirname "$0")/run.sh" test_elementwise.py
